//===- Npy.cpp - read and write .npy files --------------------------------===//
//
// The format (numpy/lib/format.py): the magic "\x93NUMPY", a version byte
// pair, a little-endian header length (2 bytes in version 1, 4 in 2 and 3),
// then a Python dict literal {'descr': ..., 'fortran_order': ...,
// 'shape': (...)} padded with spaces to a multiple of 64 bytes and ended by
// '\n', then the raw data. The reader parses just that dict literal; anything
// it does not understand is an error that names the file.
//
// dtype mapping on read: <f4 f32, <f8 f64, <f2 f16, <i4 i32, <i8 i64,
// |b1 i1, |u1 |i1 <i2 widened to i32, <u2 bf16 bit patterns (numpy has no
// bf16; rtx stores bf16 as <u2).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/core/Npy.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <sstream>
#include <unistd.h>

using namespace rtxrt;

namespace {

[[noreturn]] void npyError(const std::string &path, const std::string &what) {
  throw Error("npy file '" + path + "': " + what);
}

/// The parsed header dict.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  Shape shape;
};

/// A cursor over the header dict literal.
class HeaderParser {
public:
  HeaderParser(const std::string &path, const std::string &text)
      : path(path), text(text) {}

  NpyHeader parse() {
    NpyHeader header;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}')
        break;
      std::string key = parseString();
      expect(':');
      if (key == "descr") {
        header.descr = parseString();
        haveDescr = true;
      } else if (key == "fortran_order") {
        header.fortranOrder = parseBool();
        haveOrder = true;
      } else if (key == "shape") {
        header.shape = parseShape();
        haveShape = true;
      } else {
        npyError(path, "unknown header key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      skipSpace();
      if (peek() != '}')
        npyError(path,
                 "malformed header dict near offset " + std::to_string(pos));
    }
    if (!haveDescr || !haveOrder || !haveShape)
      npyError(path, "header lacks 'descr', 'fortran_order' or 'shape'");
    return header;
  }

private:
  const std::string &path;
  const std::string &text;
  size_t pos = 0;

  char peek() const { return pos < text.size() ? text[pos] : '\0'; }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c)
      npyError(path, std::string("malformed header: expected '") + c +
                         "' at offset " + std::to_string(pos));
    ++pos;
  }
  std::string parseString() {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"')
      npyError(path, "malformed header: expected a string at offset " +
                         std::to_string(pos));
    size_t end = text.find(quote, pos + 1);
    if (end == std::string::npos)
      npyError(path, "malformed header: unterminated string");
    std::string s = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return s;
  }
  bool parseBool() {
    skipSpace();
    if (text.compare(pos, 4, "True") == 0) {
      pos += 4;
      return true;
    }
    if (text.compare(pos, 5, "False") == 0) {
      pos += 5;
      return false;
    }
    npyError(path, "malformed header: fortran_order is not True or False");
  }
  Shape parseShape() {
    expect('(');
    Shape shape;
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos;
        return shape;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        npyError(path, "malformed header: bad shape at offset " +
                           std::to_string(pos));
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        value = value * 10 + (peek() - '0');
        if (value > (int64_t{1} << 48))
          npyError(path, "dimension too large in shape");
        ++pos;
      }
      // numpy writes Python ints; Python 2 era files may carry an 'L'.
      if (peek() == 'L')
        ++pos;
      shape.push_back(value);
      skipSpace();
      if (peek() == ',')
        ++pos;
      else if (peek() != ')')
        npyError(path, "malformed header: bad shape at offset " +
                           std::to_string(pos));
    }
  }
};

/// How a descr maps to a tensor: the dtype produced and the bytes per element
/// in the file (they differ where the reader widens).
struct DescrInfo {
  DType dtype;
  size_t fileBytes;
  enum Kind { Same, WidenU8, WidenI8, WidenI16 } kind;
};

DescrInfo descrInfo(const std::string &path, std::string descr) {
  if (descr.size() == 3 && descr[0] == '>' && descr.substr(1) != "u1" &&
      descr.substr(1) != "i1" && descr.substr(1) != "b1")
    npyError(path, "big-endian dtype '" + descr + "' is not supported");
  // '=' is native order, which is little-endian on every supported host; '|'
  // means byte order does not apply.
  if (!descr.empty() && (descr[0] == '<' || descr[0] == '=' ||
                         descr[0] == '|' || descr[0] == '>'))
    descr = descr.substr(1);
  if (descr == "f4")
    return {DType::F32, 4, DescrInfo::Same};
  if (descr == "f8")
    return {DType::F64, 8, DescrInfo::Same};
  if (descr == "f2")
    return {DType::F16, 2, DescrInfo::Same};
  if (descr == "u2")
    return {DType::BF16, 2, DescrInfo::Same};
  if (descr == "i4")
    return {DType::I32, 4, DescrInfo::Same};
  if (descr == "i8")
    return {DType::I64, 8, DescrInfo::Same};
  if (descr == "b1" || descr == "?")
    return {DType::I1, 1, DescrInfo::Same};
  if (descr == "u1")
    return {DType::I32, 1, DescrInfo::WidenU8};
  if (descr == "i1")
    return {DType::I32, 1, DescrInfo::WidenI8};
  if (descr == "i2")
    return {DType::I32, 2, DescrInfo::WidenI16};
  npyError(path, "unsupported dtype '" + descr + "'");
}

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// The header text of an open .npy file, after its magic and version.
std::string readHeaderText(std::FILE *file, const std::string &path) {
  unsigned char prefix[8];
  if (std::fread(prefix, 1, 8, file) != 8)
    npyError(path, "too short for a .npy header");
  if (std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    npyError(path, "bad magic string (not a .npy file)");
  unsigned major = prefix[6];
  size_t headerLength;
  if (major == 1) {
    unsigned char len[2];
    if (std::fread(len, 1, 2, file) != 2)
      npyError(path, "truncated header length");
    headerLength = len[0] | (static_cast<size_t>(len[1]) << 8);
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    if (std::fread(len, 1, 4, file) != 4)
      npyError(path, "truncated header length");
    headerLength = len[0] | (static_cast<size_t>(len[1]) << 8) |
                   (static_cast<size_t>(len[2]) << 16) |
                   (static_cast<size_t>(len[3]) << 24);
  } else {
    npyError(path, "unsupported format version " + std::to_string(major) + "." +
                       std::to_string(prefix[7]));
  }
  if (headerLength > (size_t{1} << 24))
    npyError(path, "header length " + std::to_string(headerLength) +
                       " is implausible");
  std::string headerText(headerLength, '\0');
  if (std::fread(&headerText[0], 1, headerLength, file) != headerLength)
    npyError(path, "truncated header");
  return headerText;
}

/// The number of elements of `header`, checked against the file before
/// anything is allocated: a header may claim more elements than int64
/// counts or than the file holds.
int64_t checkedElements(std::FILE *file, const std::string &path,
                        const NpyHeader &header, const DescrInfo &info) {
  int64_t elements = 1, dataBytes = 0;
  for (int64_t d : header.shape)
    if (__builtin_mul_overflow(elements, d, &elements))
      npyError(path, "shape " + shapeToString(header.shape) +
                         " has more elements than a 64-bit count holds");
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(info.fileBytes),
                             &dataBytes))
    npyError(path, "shape " + shapeToString(header.shape) + " of '" +
                       header.descr + "' needs more bytes than a 64-bit size");
  long dataStart = std::ftell(file);
  if (dataStart < 0 || std::fseek(file, 0, SEEK_END) != 0)
    npyError(path, std::string("cannot seek: ") + std::strerror(errno));
  long fileEnd = std::ftell(file);
  if (fileEnd < 0 || std::fseek(file, dataStart, SEEK_SET) != 0)
    npyError(path, std::string("cannot seek: ") + std::strerror(errno));
  int64_t present = static_cast<int64_t>(fileEnd) - dataStart;
  if (present < dataBytes)
    npyError(path, "data is shorter than shape " + shapeToString(header.shape) +
                       " of '" + header.descr + "' needs (" +
                       std::to_string(dataBytes) + " bytes, the file holds " +
                       std::to_string(present) + ")");
  return elements;
}

/// `count` elements of the file's `bytes` into `tensor`, widened or
/// normalised as `info` says.
void decodeElements(const DescrInfo &info,
                    const std::vector<unsigned char> &bytes, size_t count,
                    Tensor &tensor) {
  switch (info.kind) {
  case DescrInfo::Same:
    if (!bytes.empty())
      std::memcpy(tensor.raw(), bytes.data(), bytes.size());
    if (info.dtype == DType::I1) {
      // numpy's bool is 0 or 1; normalise anything else so kernels can rely
      // on it.
      uint8_t *p = tensor.data<uint8_t>();
      for (size_t i = 0; i < count; ++i)
        p[i] = p[i] ? 1 : 0;
    }
    break;
  case DescrInfo::WidenU8: {
    int32_t *p = tensor.data<int32_t>();
    for (size_t i = 0; i < count; ++i)
      p[i] = bytes[i];
    break;
  }
  case DescrInfo::WidenI8: {
    int32_t *p = tensor.data<int32_t>();
    for (size_t i = 0; i < count; ++i)
      p[i] = static_cast<int8_t>(bytes[i]);
    break;
  }
  case DescrInfo::WidenI16: {
    int32_t *p = tensor.data<int32_t>();
    for (size_t i = 0; i < count; ++i) {
      int16_t v;
      std::memcpy(&v, &bytes[2 * i], 2);
      p[i] = v;
    }
    break;
  }
  }
}

} // namespace

namespace {
/// An open .npy file with its header read: the file is at the data.
struct OpenNpy {
  File file;
  NpyHeader header;
};

OpenNpy openNpy(const std::string &path) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file)
    npyError(path, std::string("cannot open: ") + std::strerror(errno));
  NpyHeader header =
      HeaderParser(path, readHeaderText(file.get(), path)).parse();
  if (header.fortranOrder)
    npyError(path, "Fortran-order arrays are not supported (save with "
                   "numpy.ascontiguousarray)");
  return {std::move(file), std::move(header)};
}
} // namespace

NpyInfo rtxrt::readNpyInfo(const std::string &path) {
  NpyHeader header = openNpy(path).header;
  return {descrInfo(path, header.descr).dtype, header.shape};
}

Tensor rtxrt::readNpy(const std::string &path) {
  auto [file, header] = openNpy(path);
  DescrInfo info = descrInfo(path, header.descr);
  size_t count =
      static_cast<size_t>(checkedElements(file.get(), path, header, info));

  Tensor tensor(header.shape, info.dtype);
  std::vector<unsigned char> bytes(count * info.fileBytes);
  if (!bytes.empty() &&
      std::fread(bytes.data(), 1, bytes.size(), file.get()) != bytes.size())
    npyError(path, "data is shorter than shape " + shapeToString(header.shape) +
                       " of '" + header.descr + "' needs (" +
                       std::to_string(bytes.size()) + " bytes)");
  if (std::fgetc(file.get()) != EOF)
    npyError(path, "trailing bytes after the data of shape " +
                       shapeToString(header.shape));
  decodeElements(info, bytes, count, tensor);
  return tensor;
}

std::string rtxrt::encodeNpy(const Tensor &tensor, const std::string &path) {
  if (!tensor.defined())
    npyError(path, "cannot write an undefined tensor");
  // bf16 and f16 widen to f4 so that any numpy reads them without a custom
  // dtype; the values are exact in f32.
  Tensor data = tensor;
  const char *descr;
  switch (tensor.dtype()) {
  case DType::F32:
    descr = "<f4";
    break;
  case DType::F64:
    descr = "<f8";
    break;
  case DType::BF16:
  case DType::F16:
    data = tensor.to(DType::F32);
    descr = "<f4";
    break;
  case DType::I1:
    descr = "|b1";
    break;
  case DType::I32:
    descr = "<i4";
    break;
  case DType::I64:
    descr = "<i8";
    break;
  default:
    npyError(path, "unsupported dtype");
  }

  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    dict << tensor.shape()[i] << (tensor.shape().size() == 1 ? "," : "")
         << (i + 1 < tensor.shape().size() ? ", " : "");
  dict << "), }";
  std::string header = dict.str();
  // Pad so that the data starts at a multiple of 64 bytes (numpy >= 1.14
  // does the same, which keeps memory-mapped reads aligned).
  size_t prefixLength = 10; // magic + version + 2-byte length
  size_t total = prefixLength + header.size() + 1;
  bool version2 = false;
  if (((total + 63) / 64) * 64 - prefixLength > 0xffff) {
    version2 = true;
    prefixLength = 12;
    total = prefixLength + header.size() + 1;
  }
  size_t padded = ((total + 63) / 64) * 64;
  header.append(padded - total, ' ');
  header.push_back('\n');

  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(version2 ? 2 : 1);
  bytes += '\0';
  size_t len = header.size();
  for (int b = 0; b < (version2 ? 4 : 2); ++b)
    bytes += static_cast<char>((len >> (8 * b)) & 0xff);
  bytes += header;
  if (data.nbytes())
    bytes.append(static_cast<const char *>(data.raw()), data.nbytes());
  return bytes;
}

void rtxrt::writeNpy(const std::string &path, const Tensor &tensor) {
  std::string bytes = encodeNpy(tensor, path);
  // POSIX calls rather than a stream, so that the error says why (a full
  // disk is ENOSPC, not "write failed").
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    npyError(path,
             std::string("cannot open for writing: ") + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n == 0 ? EIO : errno;
      close(fd);
      npyError(path, std::string("write failed: ") + std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0)
    npyError(path, std::string("write failed: ") + std::strerror(errno));
}

std::string rtxrt::stateFilePath(const std::string &dir,
                                 const std::string &key) {
  std::string path = dir + "/" + key + ".npy";
  if (!std::ifstream(path).good())
    throw Error("--state " + dir + " lacks '" + key + "' (expected " + path +
                ", written by --save-state)");
  return path;
}
