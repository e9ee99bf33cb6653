//===- Version.h - librtxrt version ------------------------------*- C++ -*-===//
//
// librtxrt is the runtime that programs emitted by rtx link. It is plain C++17
// and does not depend on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_VERSION_H
#define RTXRT_VERSION_H

namespace rtxrt {
/// The runtime's version string, "major.minor.patch".
const char *version();
} // namespace rtxrt

#endif // RTXRT_VERSION_H
