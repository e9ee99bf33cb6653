//===- KernelRegistry.h - the CPU kernels by name ---------------*- C++ -*-===//
//
// rtx-run's interpreter calls kernels by the names the ops' kernel bindings
// give (KernelOpInterface), with arguments as values of one variant type; the
// registry is generated from rtxrt/kernels/KernelApi.def, so a kernel declared there
// is callable here with no further code. Each entry also records the
// kernel's parameter kinds and whether it returns a list, against which
// rtx-run and the C++ emitter check the ops' bindings before calling
// (lib/Target/KernelBinding.cpp; tested by KernelBindingTest).
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELREGISTRY_H
#define RTXRT_KERNELREGISTRY_H

#include "rtxrt/core/KernelEnums.h"
#include "rtxrt/core/Tensor.h"

#include <string_view>
#include <variant>
#include <vector>

namespace rtxrt {

/// One argument of a kernel called by name. The alternatives are in the
/// order of KernelParamKind.
using KernelValue =
    std::variant<Tensor, std::vector<Tensor>, bool, int64_t, double,
                 std::vector<int64_t>, DType, UnaryKind, BinaryKind,
                 CompareKind, ReduceKind, UnaryFn, GemmEpilogue>;

/// The kind of a kernel parameter: the index of its KernelValue alternative.
enum class KernelParamKind {
  Tensor,
  TensorList,
  Bool,
  Int,
  Double,
  Ints,
  DType,
  UnaryKind,
  BinaryKind,
  CompareKind,
  ReduceKind,
  UnaryFn,
  GemmEpilogue
};
/// "tensor", "int", "UnaryKind", ... for messages.
const char *paramKindName(KernelParamKind kind);

struct KernelEntry {
  const char *name;
  std::vector<KernelParamKind> params;
  /// The kernel returns std::vector<Tensor> rather than one Tensor.
  bool returnsList;
  std::vector<Tensor> (*invoke)(const std::vector<KernelValue> &);
};

/// The CPU kernel registered as `name` in KernelApi.def; null if none is.
const KernelEntry *findKernel(std::string_view name);
/// Every registered kernel, in KernelApi.def's order.
const std::vector<KernelEntry> &kernelEntries();

} // namespace rtxrt

#endif // RTXRT_KERNELREGISTRY_H
