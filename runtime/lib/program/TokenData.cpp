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

namespace {

/// The names of the token and label inputs that programs use, by origin:
/// rtx's builder, nanoGPT (a GPT imported from PyTorch), Hugging Face.
const TokenInputs kConventions[] = {
    {"tokens", "labels"}, {"idx", "targets"}, {"input_ids", "labels"}};

/// Every input of the program, each once, in order (a pipelined program's
/// stages have their own).
std::vector<const ArgSpec *> programInputs(const ProgramSpec &spec) {
  std::vector<const ArgSpec *> inputs;
  auto add = [&](const ArgSpec &arg) {
    if (arg.kind != ArgSpec::Input)
      return;
    for (const ArgSpec *seen : inputs)
      if (seen->name == arg.name)
        return;
    inputs.push_back(&arg);
  };
  for (const ArgSpec &arg : spec.args)
    add(arg);
  for (const PipelineStage &stage : spec.stages)
    for (const ArgSpec &arg : stage.args)
      add(arg);
  return inputs;
}

const ArgSpec *findInput(const std::vector<const ArgSpec *> &inputs,
                         const std::string &name) {
  for (const ArgSpec *input : inputs)
    if (input->name == name)
      return input;
  return nullptr;
}

std::string inputList(const std::vector<const ArgSpec *> &inputs) {
  if (inputs.empty())
    return "none";
  std::string list;
  for (const ArgSpec *input : inputs)
    list += (list.empty() ? "'" : ", '") + input->name + "'";
  return list;
}

} // namespace

TokenInputs rtxrt::program::findTokenInputs(const ProgramSpec &spec,
                                            const TokenInputs &named) {
  std::vector<const ArgSpec *> inputs = programInputs(spec);
  if (!named.tokens.empty()) {
    for (const std::string &name : {named.tokens, named.labels})
      if (!findInput(inputs, name))
        throw Error("--data-inputs names '" + name +
                    "', which is no input of this program; its inputs are " +
                    inputList(inputs));
    return named;
  }
  std::vector<TokenInputs> matches;
  for (const TokenInputs &convention : kConventions)
    if (findInput(inputs, convention.tokens) &&
        findInput(inputs, convention.labels))
      matches.push_back(convention);
  if (matches.size() == 1)
    return matches.front();
  std::string why =
      matches.empty()
          ? "--data feeds a token file into the program's token and label "
            "inputs, found by their names: tokens and labels, idx and "
            "targets, or input_ids and labels; this program's inputs are "
          : "--data finds more than one pair of token and label inputs ('" +
                matches[0].tokens + "' and '" + matches[0].labels + "', '" +
                matches[1].tokens + "' and '" + matches[1].labels +
                "') among this program's inputs, ";
  throw Error(why + inputList(inputs) +
              ": name them with --data-inputs TOKENS,LABELS");
}

TokenData::TokenData(const std::string &path, const std::string &flag,
                     const ProgramSpec &spec, const TokenInputs &inputs,
                     int64_t rank)
    : path_(path), flag_(flag), spec_(spec), rank_(rank),
      tokens_(readTokens(path)), inputs_(inputs) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].kind != ArgSpec::Input)
      continue;
    if (spec.args[i].name == inputs.tokens)
      tokensArg_ = i;
    if (spec.args[i].name == inputs.labels)
      labelsArg_ = i;
  }
  // A pipelined program's first stage takes the tokens and its last the
  // labels: each rank loads the ones it has. The batch's shape is the
  // program's, known on every rank (a middle stage checks it too).
  std::vector<const ArgSpec *> all = programInputs(spec);
  const ArgSpec *tokensSpec = findInput(all, inputs.tokens);
  const ArgSpec *labelsSpec = findInput(all, inputs.labels);
  if (!tokensSpec || !labelsSpec)
    throw Error(flag + " needs the inputs '" + inputs.tokens + "' and '" +
                inputs.labels + "'; this program's inputs are " +
                inputList(all));
  Shape shape =
      localBlock(tokensSpec->sharding, tokensSpec->shape, spec.mesh, 0)
          .globalShape;
  if (shape.size() != 2)
    throw Error(flag + " needs [batch, seq] tokens, got " +
                shapeToString(shape) + " for input '" + inputs.tokens + "'");
  rows_ = shape[0];
  seq_ = shape[1];
  tokensBound_ = tokensSpec->bound;
  labelsBound_ = labelsSpec->bound;
}

void TokenData::checkBatches(int64_t batches) const {
  int64_t n = static_cast<int64_t>(tokens_.size());
  int64_t batchTokens = rows_ * seq_;
  std::string windows = std::to_string(rows_) + " windows of " +
                        std::to_string(seq_ + 1) + " tokens";
  if (n < batchTokens + 1)
    throw Error(flag_ + " " + path_ + " holds " + std::to_string(n) +
                " tokens, too few for one batch of " + windows + " (" +
                std::to_string(batchTokens + 1) + " tokens)");
  if (n < batches * batchTokens + 1)
    throw Error(flag_ + " " + path_ + " holds " + std::to_string(n) +
                " tokens: " + std::to_string(batches) + " batches of " +
                windows + " need " + std::to_string(batches * batchTokens + 1) +
                "; at most " + std::to_string((n - 1) / batchTokens) + " fit");
  // Ids outside the vocabulary would stop the run at the first evaluation,
  // after the training before it; found here, before the first step. (A
  // bound of 2 is the default of an input no embedding or loss reads.)
  auto check = [&](int64_t bound, int64_t shift, const std::string &name) {
    if (bound <= 2)
      return;
    for (int64_t i = shift; i < batches * batchTokens + shift; ++i)
      if (tokens_[i] >= bound)
        throw Error(flag_ + " " + path_ + ": token " +
                    std::to_string(tokens_[i]) + " at position " +
                    std::to_string(i) +
                    " is outside the vocabulary of input '" + name + "' ([0, " +
                    std::to_string(bound) + "))");
  };
  check(tokensBound_, 0, inputs_.tokens);
  check(labelsBound_, 1, inputs_.labels);
}

void TokenData::loadBatch(int64_t batchIndex, std::vector<Tensor> &args,
                          const ProgramDevice &device) const {
  if (tokensArg_ < 0 && labelsArg_ < 0)
    return; // a middle pipeline stage
  int64_t batch = rows_, seq = seq_;
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
    LocalBlock block = localBlock(spec.sharding, spec.shape, spec_.mesh, rank_);
    if (block.globalShape != Shape{batch, seq})
      throw Error(flag_ + ": input '" + spec.name + "' is " +
                  shapeToString(block.globalShape) + ", input '" +
                  inputs_.tokens + "' " + shapeToString({batch, seq}) +
                  ": the labels need the tokens' shape");
    Tensor whole(block.globalShape, spec.dtype);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t start = ((batchIndex * batch + b) * seq) % (n - seq);
      for (int64_t t = 0; t < seq; ++t)
        whole.setFromDouble(b * seq + t, tokens_[start + t + shift]);
    }
    args[arg] = device.toDevice(sliceBlock(whole, spec.shape, block.offsets));
  };
  place(tokensArg_, 0);
  place(labelsArg_, 1);
}
