//===- Manifest.cpp - the checkpoint's JSON files -------------------------===//

#include "Manifest.h"

#include <cstdio>
#include <nlohmann/json.hpp>

using namespace rtxrt;
using namespace rtxrt::checkpoint;
using nlohmann::json;

namespace {
constexpr int kFormatVersion = 1;
constexpr const char *kFormat = "rtx-checkpoint";

std::string numbered(const char *prefix, int64_t rank, const char *suffix) {
  char name[64];
  std::snprintf(name, sizeof name, "%s%05lld%s", prefix,
                static_cast<long long>(rank), suffix);
  return name;
}

uint32_t bodyCrc(const json &body) {
  std::string text = body.dump();
  return crc32c(text.data(), text.size());
}
} // namespace

std::string checkpoint::dataFileName(int64_t rank) {
  return numbered("rank-", rank, ".data");
}
std::string checkpoint::indexFileName(int64_t rank) {
  return numbered("rank-", rank, ".index.json");
}

std::string checkpoint::checkpointDirName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

DType checkpoint::parseDType(const std::string &name, const std::string &what) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16,
                      DType::I1, DType::I32, DType::I64})
    if (name == dtypeName(dtype))
      return dtype;
  throw Error(what + ": unknown element type '" + name + "'");
}

const TensorInfo *Manifest::find(const std::string &tensor) const {
  for (const TensorInfo &info : tensors)
    if (info.name == tensor)
      return &info;
  return nullptr;
}

std::string checkpoint::encodeManifest(const Manifest &manifest,
                                       const std::string &kind) {
  json body;
  body["format"] = kFormat;
  body["version"] = kFormatVersion;
  body["kind"] = kind;
  body["step"] = manifest.step;
  body["writers"] = manifest.writers;
  body["tensors"] = json::array();
  for (const TensorInfo &t : manifest.tensors)
    body["tensors"].push_back(
        {{"name", t.name}, {"dtype", dtypeName(t.dtype)}, {"shape", t.shape}});
  body["chunks"] = json::array();
  for (const Chunk &c : manifest.chunks)
    body["chunks"].push_back({{"tensor", c.tensor},
                              {"offsets", c.offsets},
                              {"shape", c.shape},
                              {"file", c.file},
                              {"byte_offset", c.byteOffset},
                              {"byte_size", c.byteSize},
                              {"crc32c", c.crc},
                              {"placement", c.placement}});
  body["metadata"] = manifest.metadata;
  json file = body;
  file["body_crc32c"] = bodyCrc(body);
  return file.dump(1) + "\n";
}

Manifest checkpoint::decodeManifest(const std::string &text,
                                    const std::string &kind,
                                    const std::string &path) {
  json file = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object())
    throw Error(path + ": not a JSON object (a torn or overwritten file)");
  std::string field;
  try {
    field = "body_crc32c";
    uint32_t stored = file.at(field).get<uint32_t>();
    json body = file;
    body.erase(field);
    if (bodyCrc(body) != stored)
      throw Error(path + ": its CRC32C does not match its contents (corrupt)");
    field = "format";
    if (body.at(field).get<std::string>() != kFormat)
      throw Error(path + ": not an rtx checkpoint file");
    field = "version";
    if (body.at(field).get<int>() != kFormatVersion)
      throw Error(path + ": format version " +
                  std::to_string(body.at(field).get<int>()) +
                  ", this runtime reads version " +
                  std::to_string(kFormatVersion));
    field = "kind";
    if (body.at(field).get<std::string>() != kind)
      throw Error(path + ": a '" + body.at(field).get<std::string>() +
                  "' file where a '" + kind + "' was expected");
    Manifest manifest;
    field = "step";
    manifest.step = body.at(field).get<int64_t>();
    field = "writers";
    manifest.writers = body.at(field).get<int64_t>();
    field = "tensors";
    for (const json &t : body.at(field)) {
      TensorInfo info;
      info.name = t.at("name").get<std::string>();
      info.dtype = parseDType(t.at("dtype").get<std::string>(),
                              path + ": tensor " + info.name);
      info.shape = t.at("shape").get<Shape>();
      manifest.tensors.push_back(std::move(info));
    }
    field = "chunks";
    for (const json &c : body.at(field)) {
      Chunk chunk;
      chunk.tensor = c.at("tensor").get<std::string>();
      chunk.offsets = c.at("offsets").get<std::vector<int64_t>>();
      chunk.shape = c.at("shape").get<Shape>();
      chunk.file = c.at("file").get<std::string>();
      chunk.byteOffset = c.at("byte_offset").get<int64_t>();
      chunk.byteSize = c.at("byte_size").get<int64_t>();
      chunk.crc = c.at("crc32c").get<uint32_t>();
      chunk.placement = c.at("placement").get<std::string>();
      if (chunk.file.find('/') != std::string::npos || chunk.file.empty() ||
          chunk.file[0] == '.')
        throw Error(path + ": chunk of " + chunk.tensor + " names the file '" +
                    chunk.file + "' outside its checkpoint");
      manifest.chunks.push_back(std::move(chunk));
    }
    field = "metadata";
    manifest.metadata =
        body.at(field).get<std::map<std::string, std::string>>();
    return manifest;
  } catch (const json::exception &e) {
    throw Error(path + ": field '" + field + "' is missing or malformed (" +
                e.what() + ")");
  }
}
