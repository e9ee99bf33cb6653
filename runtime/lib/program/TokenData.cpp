//===- TokenData.cpp - batches of a token file ----------------------------===//

#include "TokenData.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sys/stat.h>

using namespace rtxrt;
using namespace rtxrt::program;

namespace {

constexpr int32_t kLlmcMagic = 20240520;

/// The bytes of the token file `path`; throws naming it.
std::vector<char> readBytes(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    throw Error("token file " + path +
                " is a directory (--data takes a file of tokens)");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error("cannot open the token file " + path);
  try {
    return std::vector<char>((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  } catch (const std::exception &e) {
    throw Error("cannot read the token file " + path + ": " + e.what());
  }
}

/// Whether `header`, whose magic is not llm.c's, is otherwise an llm.c
/// header of a file of `size` bytes: a version llm.c writes, and the count
/// of tokens that follow. Raw tokens making both by chance are implausible;
/// a damaged magic read as raw tokens would feed the header to the model.
bool looksLikeLlmcHeader(const int32_t *header, size_t size) {
  if (header[1] != 1 && header[1] != 2)
    return false;
  size_t width = header[1] == 1 ? 2 : 4;
  size_t body = size - 256 * sizeof(int32_t);
  return header[2] > 0 && body % width == 0 &&
         static_cast<size_t>(header[2]) == body / width;
}

} // namespace

std::vector<int64_t> rtxrt::program::readTokens(const std::string &path) {
  std::vector<char> bytes = readBytes(path);
  std::vector<int64_t> tokens;
  int32_t header[256] = {};
  size_t offset = 0, width = 2;
  if (bytes.size() >= sizeof header) {
    std::memcpy(header, bytes.data(), sizeof header);
    if (header[0] != kLlmcMagic && looksLikeLlmcHeader(header, bytes.size()))
      throw Error("token file " + path + ": an llm.c header (version " +
                  std::to_string(header[1]) + ", " + std::to_string(header[2]) +
                  " tokens) with the magic " + std::to_string(header[0]) +
                  " instead of " + std::to_string(kLlmcMagic) +
                  ": a damaged file");
    if (header[0] == kLlmcMagic) {
      if (header[1] != 1 && header[1] != 2)
        throw Error("token file " + path + ": unknown llm.c version " +
                    std::to_string(header[1]));
      offset = sizeof header;
      width = header[1] == 1 ? 2 : 4;
    }
  }
  if ((bytes.size() - offset) % width != 0)
    throw Error("token file " + path + ": its size is not a whole number of " +
                std::to_string(width) + "-byte tokens");
  for (size_t i = offset; i + width <= bytes.size(); i += width) {
    uint32_t token = 0;
    std::memcpy(&token, bytes.data() + i, width);
    tokens.push_back(token);
  }
  // llm.c's header says how many tokens follow: a file cut short (or padded)
  // is damaged, not a shorter text.
  if (offset && header[2] != static_cast<int64_t>(tokens.size()))
    throw Error("token file " + path + ": its llm.c header says " +
                std::to_string(header[2]) + " tokens, the file holds " +
                std::to_string(tokens.size()));
  // An empty file is a failed download or preprocessing step; training on
  // it must not start.
  if (tokens.empty())
    throw Error("token file " + path + " holds no tokens");
  return tokens;
}

TokenData::TokenData(const std::string &path, const ProgramSpec &spec,
                     int64_t rank)
    : path_(path), spec_(spec), rank_(rank), tokens_(readTokens(path)) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].kind != ArgSpec::Input)
      continue;
    if (spec.args[i].name == "tokens")
      tokensArg_ = i;
    if (spec.args[i].name == "labels")
      labelsArg_ = i;
  }
  // A pipelined program's first stage takes the tokens and its last the
  // labels: each rank loads the ones it has, the whole program needs both.
  bool tokens = tokensArg_ >= 0, labels = labelsArg_ >= 0;
  for (const PipelineStage &stage : spec.stages)
    for (const ArgSpec &arg : stage.args)
      if (arg.kind == ArgSpec::Input) {
        tokens = tokens || arg.name == "tokens";
        labels = labels || arg.name == "labels";
      }
  if (!tokens || !labels)
    throw Error("--data needs inputs named 'tokens' and 'labels'; this "
                "program has other inputs");
}

void TokenData::loadBatch(int64_t step, std::vector<Tensor> &args,
                          const ProgramDevice &device) const {
  if (tokensArg_ < 0 && labelsArg_ < 0)
    return; // a middle pipeline stage
  const ArgSpec &shapeSpec =
      spec_.args[tokensArg_ >= 0 ? tokensArg_ : labelsArg_];
  LocalBlock block =
      localBlock(shapeSpec.sharding, shapeSpec.shape, spec_.mesh, rank_);
  if (block.globalShape.size() != 2)
    throw Error("--data needs [batch, seq] tokens, got " +
                shapeToString(block.globalShape));
  int64_t batch = block.globalShape[0], seq = block.globalShape[1];
  int64_t n = static_cast<int64_t>(tokens_.size());
  if (n < seq + 1)
    throw Error("token file " + path_ + " holds " + std::to_string(n) +
                " tokens; a window needs " + std::to_string(seq + 1));
  // Labels are the tokens shifted by one; each input is filled once, in
  // its own dtype, and this rank keeps its block.
  auto place = [&](int64_t arg, int64_t shift) {
    if (arg < 0)
      return;
    const ArgSpec &spec = spec_.args[arg];
    Tensor whole(block.globalShape, spec.dtype);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t start = ((step * batch + b) * seq) % (n - seq);
      for (int64_t t = 0; t < seq; ++t)
        whole.setFromDouble(b * seq + t, tokens_[start + t + shift]);
    }
    args[arg] = device.toDevice(sliceBlock(
        whole, spec.shape,
        localBlock(spec.sharding, spec.shape, spec_.mesh, rank_).offsets));
  };
  place(tokensArg_, 0);
  place(labelsArg_, 1);
}
