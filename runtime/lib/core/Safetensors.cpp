//===- Safetensors.cpp - read blocks of safetensors files -----------------===//
//
// The header is checked whole when a file is opened: its length against the
// file, each entry's shape against its byte range, each range against the
// data that follows the header. Reads then need no further checks than the
// block's own bounds, and a truncated or hostile file is an Error naming
// the file (and the tensor), never a read past the end.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxrt;
using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw Error("safetensors file '" + path + "': " + what);
}

/// A dtype of the format: its size, and how rtx reads it (`readable`
/// false: the format has it, rtx does not read it).
struct FileDType {
  const char *name;
  int64_t bytes;
  bool readable;
  DType dtype;
  enum Decode { Same, Bool, U8, I8, I16 } decode;
};

const FileDType kFileDTypes[] = {
    {"F32", 4, true, DType::F32, FileDType::Same},
    {"F64", 8, true, DType::F64, FileDType::Same},
    {"F16", 2, true, DType::F16, FileDType::Same},
    {"BF16", 2, true, DType::BF16, FileDType::Same},
    {"I64", 8, true, DType::I64, FileDType::Same},
    {"I32", 4, true, DType::I32, FileDType::Same},
    {"BOOL", 1, true, DType::I1, FileDType::Bool},
    {"U8", 1, true, DType::I32, FileDType::U8},
    {"I8", 1, true, DType::I32, FileDType::I8},
    {"I16", 2, true, DType::I32, FileDType::I16},
    {"U16", 2, false, DType::I32, FileDType::Same},
    {"U32", 4, false, DType::I64, FileDType::Same},
    {"U64", 8, false, DType::I64, FileDType::Same},
    {"F8_E4M3", 1, false, DType::F32, FileDType::Same},
    {"F8_E5M2", 1, false, DType::F32, FileDType::Same},
};

const FileDType *findFileDType(const std::string &name) {
  for (const FileDType &type : kFileDTypes)
    if (name == type.name)
      return &type;
  return nullptr;
}

/// The header's largest length the reference implementation accepts.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// A non-negative integer of the header, or an Error naming `what`.
int64_t headerInt(const std::string &path, const json &value,
                  const std::string &what) {
  if (!value.is_number_unsigned() || value.get<uint64_t>() > uint64_t{1} << 62)
    fail(path, what + " is not a non-negative integer: " + value.dump());
  return static_cast<int64_t>(value.get<uint64_t>());
}

/// The entry `name` of a header, checked against the `dataSize` bytes of
/// data that follow it.
SafetensorsEntry parseEntry(const std::string &path, const std::string &name,
                            const json &value, int64_t dataSize) {
  std::string what = "tensor '" + name + "'";
  if (!value.is_object() || !value.contains("dtype") ||
      !value["dtype"].is_string() || !value.contains("shape") ||
      !value["shape"].is_array() || !value.contains("data_offsets") ||
      !value["data_offsets"].is_array() || value["data_offsets"].size() != 2)
    fail(path, what +
                   " needs \"dtype\", \"shape\" and \"data_offsets\": [begin, "
                   "end]; the header has " +
                   value.dump());
  SafetensorsEntry entry;
  entry.dtype = value["dtype"].get<std::string>();
  for (const json &d : value["shape"])
    entry.shape.push_back(headerInt(path, d, what + "'s dimension"));
  entry.begin = headerInt(path, value["data_offsets"][0], what + "'s begin");
  entry.end = headerInt(path, value["data_offsets"][1], what + "'s end");
  if (entry.begin > entry.end || entry.end > dataSize)
    fail(path, what + " lies at bytes [" + std::to_string(entry.begin) + ", " +
                   std::to_string(entry.end) + ") of the data, which holds " +
                   std::to_string(dataSize) +
                   " bytes: the file is truncated or its header is wrong");
  const FileDType *type = findFileDType(entry.dtype);
  if (!type)
    fail(path, what + " has dtype '" + entry.dtype +
                   "', which the safetensors format does not define");
  int64_t elements = 1, bytes = 0;
  for (int64_t d : entry.shape)
    if (__builtin_mul_overflow(elements, d, &elements))
      fail(path, what + " has more elements than a 64-bit count holds");
  if (__builtin_mul_overflow(elements, type->bytes, &bytes) ||
      bytes != entry.end - entry.begin)
    fail(path, what + " of shape " + shapeToString(entry.shape) + " " +
                   entry.dtype + " needs " +
                   (bytes ? std::to_string(bytes) : std::string("more")) +
                   " bytes, its data_offsets give " +
                   std::to_string(entry.end - entry.begin));
  return entry;
}

/// Reads `bytes` at `offset` of `fd`, or an Error naming `what`.
void preadAll(int fd, void *into, int64_t offset, int64_t bytes,
              const std::string &path, const std::string &what) {
  auto *out = static_cast<unsigned char *>(into);
  while (bytes > 0) {
    ssize_t n = pread(fd, out, static_cast<size_t>(bytes), offset);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      fail(path, "cannot read " + what + ": " + std::strerror(errno));
    if (n == 0)
      fail(path, "ends inside " + what + " (truncated since it was opened?)");
    out += n;
    offset += n;
    bytes -= n;
  }
}

/// Calls `fn(element, local, length)` for each contiguous run of the block
/// at `offsets` of shape `block` in a row-major tensor of `shape`: `length`
/// elements starting at element `element` of the tensor and at `local` of
/// the block. The trailing dimensions the block covers whole join one run.
template <typename Fn>
void forEachRun(const Shape &shape, const std::vector<int64_t> &offsets,
                const Shape &block, Fn fn) {
  size_t rank = shape.size();
  size_t whole = rank; // dimensions [whole, rank) are covered whole
  while (whole > 0 && block[whole - 1] == shape[whole - 1])
    --whole;
  size_t inner = whole > 0 ? whole - 1 : 0;
  int64_t length = 1, count = 1;
  for (size_t d = inner; d < rank; ++d)
    length *= block[d];
  for (size_t d = 0; d < inner; ++d)
    count *= block[d];
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    stride[d - 1] = stride[d] * shape[d];
  std::vector<int64_t> index(inner, 0);
  for (int64_t run = 0; length > 0 && run < count; ++run) {
    int64_t element = rank ? offsets[inner] * stride[inner] : 0;
    for (size_t d = 0; d < inner; ++d)
      element += (offsets[d] + index[d]) * stride[d];
    fn(element, run * length, length);
    for (size_t d = inner; d-- > 0;) {
      if (++index[d] < block[d])
        break;
      index[d] = 0;
    }
  }
}

/// `raw` (a block read as the file stores it) as the tensor rtx reads:
/// BOOL normalised to 0 and 1, small integers widened to i32. Same dtypes
/// were read in place and need nothing.
Tensor decode(const FileDType &type, const Tensor &raw) {
  int64_t n = raw.numel();
  const auto *bytes = static_cast<const unsigned char *>(raw.raw());
  if (type.decode == FileDType::Same)
    return raw;
  Tensor tensor = Tensor::uninitialized(raw.shape(), type.dtype);
  if (type.decode == FileDType::Bool) {
    for (int64_t i = 0; i < n; ++i)
      tensor.data<uint8_t>()[i] = bytes[i] ? 1 : 0;
    return tensor;
  }
  int32_t *out = tensor.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    int16_t i16;
    switch (type.decode) {
    case FileDType::U8:
      out[i] = bytes[i];
      break;
    case FileDType::I8:
      out[i] = static_cast<int8_t>(bytes[i]);
      break;
    default:
      std::memcpy(&i16, &bytes[2 * i], 2);
      out[i] = i16;
      break;
    }
  }
  return tensor;
}

/// A tensor whose buffer holds `shape` elements of `bytes` each, as read:
/// the block itself for dtypes read as they are (no second copy of a large
/// block), else a staging buffer for decode.
Tensor rawBlock(const FileDType &type, const Shape &shape) {
  if (type.decode == FileDType::Same)
    return Tensor::uninitialized(shape, type.dtype);
  DType staging = type.bytes == 1 ? DType::I1 : DType::BF16; // 1 or 2 bytes
  return Tensor::uninitialized(shape, staging);
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::string &path) : path_(path) {
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd_);
    fail(path, "is not a regular file");
  }
  fileSize_ = info.st_size;
  try {
    readHeader();
  } catch (...) {
    close(fd_);
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() { close(fd_); }

void SafetensorsFile::readHeader() {
  if (fileSize_ < 8)
    fail(path_, "has " + std::to_string(fileSize_) +
                    " bytes, fewer than the 8 of a safetensors header's "
                    "length");
  unsigned char prefix[8];
  preadAll(fd_, prefix, 0, 8, path_, "the header's length");
  uint64_t length = 0;
  for (int b = 7; b >= 0; --b)
    length = (length << 8) | prefix[b];
  if (length > static_cast<uint64_t>(fileSize_ - 8) || length > kMaxHeaderBytes)
    fail(path_, "its header length " + std::to_string(length) +
                    " runs past the end of the file (" +
                    std::to_string(fileSize_) +
                    " bytes): the file is truncated or not safetensors");
  std::string text(length, '\0');
  preadAll(fd_, text.data(), 8, static_cast<int64_t>(length), path_,
           "the header");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception &e) {
    fail(path_, std::string("its header is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    fail(path_, "its header is not a JSON object");
  dataStart_ = 8 + static_cast<int64_t>(length);
  for (auto &[name, value] : header.items()) {
    if (name != "__metadata__") {
      tensors_[name] = parseEntry(path_, name, value, fileSize_ - dataStart_);
      continue;
    }
    if (!value.is_object())
      fail(path_, "its \"__metadata__\" is not a JSON object");
    for (auto &[key, item] : value.items())
      metadata_[key] = item.is_string() ? item.get<std::string>() : item.dump();
  }
}

const SafetensorsEntry *SafetensorsFile::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

DType SafetensorsFile::dtypeOf(const std::string &dtype,
                               const std::string &what) const {
  const FileDType *type = findFileDType(dtype);
  if (!type || !type->readable)
    fail(path_, what + " has dtype " + dtype +
                    ", which rtx does not read (it reads F32, F64, F16, "
                    "BF16, I64, I32, I16, I8, U8 and BOOL)");
  return type->dtype;
}

void SafetensorsFile::readRun(void *into, int64_t fileOffset, int64_t bytes,
                              const std::string &name) const {
  preadAll(fd_, into, fileOffset, bytes, path_, "tensor '" + name + "'");
  bytesRead_ += bytes;
}

Tensor SafetensorsFile::readBlock(const std::string &name,
                                  const std::vector<int64_t> &offsets,
                                  const Shape &blockShape) const {
  const SafetensorsEntry *entry = find(name);
  if (!entry)
    fail(path_, "holds no tensor '" + name + "'");
  const Shape &shape = entry->shape;
  bool fits =
      offsets.size() == shape.size() && blockShape.size() == shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d)
    fits = offsets[d] >= 0 && blockShape[d] >= 0 &&
           offsets[d] + blockShape[d] <= shape[d];
  if (!fits)
    fail(path_, "a block " + shapeToString(blockShape) + " at " +
                    shapeToString(offsets) + " does not fit in tensor '" +
                    name + "' of shape " + shapeToString(shape));
  const FileDType &type =
      *findFileDType(entry->dtype); // known: parseEntry checked it
  dtypeOf(entry->dtype, "tensor '" + name + "'");
  int64_t width = type.bytes;
  Tensor raw = rawBlock(type, blockShape);
  auto *bytes = static_cast<unsigned char *>(raw.raw());
  int64_t start = dataStart_ + entry->begin;
  forEachRun(shape, offsets, blockShape,
             [&](int64_t element, int64_t local, int64_t length) {
               readRun(bytes + local * width, start + element * width,
                       length * width, name);
             });
  return decode(type, raw);
}

Tensor SafetensorsFile::read(const std::string &name) const {
  const SafetensorsEntry *entry = find(name);
  if (!entry)
    fail(path_, "holds no tensor '" + name + "'");
  return readBlock(name, std::vector<int64_t>(entry->shape.size(), 0),
                   entry->shape);
}

//===----------------------------------------------------------------------===//
// SafetensorsSet
//===----------------------------------------------------------------------===//

static const char kIndexName[] = "model.safetensors.index.json";

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The names of `dir`'s entries, sorted.
static std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool SafetensorsSet::holdsSafetensors(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return false;
  if (S_ISREG(info.st_mode))
    return true;
  if (!S_ISDIR(info.st_mode))
    return false;
  if (std::ifstream(path + "/" + kIndexName).good())
    return true;
  bool shards = false;
  for (const std::string &name : listDirectory(path)) {
    if (endsWith(name, ".npy"))
      return false;
    shards = shards || endsWith(name, ".safetensors");
  }
  return shards;
}

SafetensorsSet::SafetensorsSet(const std::string &path) : path_(path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    throw Error(path + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) {
    add(path);
    return;
  }
  if (std::ifstream(path + "/" + kIndexName).good()) {
    openIndex(path + "/" + kIndexName);
    return;
  }
  for (const std::string &name : listDirectory(path))
    if (endsWith(name, ".safetensors"))
      add(path + "/" + name);
  if (files_.empty())
    throw Error(path + " holds no .safetensors file");
}

void SafetensorsSet::add(const std::string &file) {
  files_.push_back(std::make_unique<SafetensorsFile>(file));
  for (const auto &entry : files_.back()->tensors()) {
    auto [it, added] = byName_.emplace(entry.first, files_.back().get());
    if (!added)
      throw Error("tensor '" + entry.first + "' is in both " +
                  it->second->path() + " and " + file);
  }
}

void SafetensorsSet::openIndex(const std::string &indexPath) {
  json index;
  try {
    index = json::parse(std::ifstream(indexPath));
  } catch (const json::exception &e) {
    throw Error(indexPath + " is not valid JSON: " + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") ||
      !index["weight_map"].is_object())
    throw Error(indexPath + " has no \"weight_map\" object");
  std::map<std::string, const SafetensorsFile *> opened;
  for (auto &[name, value] : index["weight_map"].items()) {
    if (!value.is_string() ||
        value.get<std::string>().find('/') != std::string::npos)
      throw Error(
          indexPath + " maps '" + name +
          "' to something other than a file name beside it: " + value.dump());
    std::string file = path_ + "/" + value.get<std::string>();
    if (!opened.count(file)) {
      files_.push_back(std::make_unique<SafetensorsFile>(file));
      opened[file] = files_.back().get();
    }
    if (!opened[file]->find(name))
      throw Error(indexPath + " says " + file + " holds tensor '" + name +
                  "', but it does not");
    byName_[name] = opened[file];
  }
}

const SafetensorsFile *SafetensorsSet::fileOf(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static const char *fileDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::I1:
    return "BOOL";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  return "F32";
}

std::string rtxrt::encodeSafetensors(
    const std::vector<std::pair<std::string, Tensor>> &tensors,
    const std::map<std::string, std::string> &metadata,
    const std::string &path) {
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string data;
  for (const auto &[name, tensor] : tensors) {
    if (!tensor.defined())
      fail(path, "cannot write undefined tensor '" + name + "'");
    int64_t begin = static_cast<int64_t>(data.size());
    data.append(static_cast<const char *>(tensor.raw()), tensor.nbytes());
    header[name] = {
        {"dtype", fileDTypeName(tensor.dtype())},
        {"shape", tensor.shape()},
        {"data_offsets", {begin, begin + int64_t(tensor.nbytes())}}};
  }
  std::string text = header.dump();
  // The reference writer pads the header with spaces to 8 bytes, so that
  // the data of every tensor is aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int b = 0; b < 8; ++b)
    bytes[b] = static_cast<char>((uint64_t(text.size()) >> (8 * b)) & 0xff);
  return bytes + text + data;
}
