//===- Npy.h - read and write .npy files ------------------------*- C++ -*-===//
//
// NumPy's .npy format, version 1.0/2.0, little-endian, C order: the exchange
// format of rtx-run and of emitted programs. No library fits (cnpy is not
// packaged in Debian and writes only some dtypes), hence this small reader.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_NPY_H
#define RTXRT_NPY_H

#include "rtxrt/core/Tensor.h"

#include <string>

namespace rtxrt {

/// Reads a .npy file (f4, f8, i4, i8, b1/?, u1, u2 as bf16 is not a numpy
/// type: bf16 is stored as <u2 and converted by the caller). Throws Error
/// naming the file on a bad header, Fortran order or unsupported dtype.
Tensor readNpy(const std::string &path);
/// The dtype (as readNpy gives it) and the shape of a .npy file, from its
/// header alone; the same errors as readNpy about the header.
struct NpyInfo {
  DType dtype;
  Shape shape;
};
NpyInfo readNpyInfo(const std::string &path);
/// Writes a .npy file (bf16/f16 are written as f4, i1 as |b1). Throws
/// Error naming the file and the reason (strerror) when it cannot.
void writeNpy(const std::string &path, const Tensor &tensor);
/// The bytes writeNpy writes; `path` names the file in errors.
std::string encodeNpy(const Tensor &tensor, const std::string &path);

/// The path of state `key` (param:NAME, exp_avg:NAME, step, ...) in a
/// directory written by an emitted program's --save-state: DIR/KEY.npy.
/// Throws Error naming the key when the file is not there.
std::string stateFilePath(const std::string &dir, const std::string &key);

} // namespace rtxrt

#endif // RTXRT_NPY_H
