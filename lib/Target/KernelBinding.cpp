//===- KernelBinding.cpp - an op's kernel call, resolved ------------------===//

#include "rtx/Target/KernelBinding.h"

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::KernelParamKind;

rtxrt::KernelParamKind mlir::rtx::getParamKind(const KernelArg &arg) {
  return std::visit(
      [](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, KernelArg::TensorOperand>)
          return KernelParamKind::Tensor;
        else if constexpr (std::is_same_v<T, KernelArg::TensorList>)
          return KernelParamKind::TensorList;
        else if constexpr (std::is_same_v<T, bool>)
          return KernelParamKind::Bool;
        else if constexpr (std::is_same_v<T, int64_t>)
          return KernelParamKind::Int;
        else if constexpr (std::is_same_v<T, double>)
          return KernelParamKind::Double;
        else if constexpr (std::is_same_v<T, SmallVector<int64_t, 4>>)
          return KernelParamKind::Ints;
        else if constexpr (std::is_same_v<T, KernelArg::ElementType>)
          return KernelParamKind::DType;
        else if constexpr (std::is_same_v<T, rtxrt::UnaryKind>)
          return KernelParamKind::UnaryKind;
        else if constexpr (std::is_same_v<T, rtxrt::BinaryKind>)
          return KernelParamKind::BinaryKind;
        else if constexpr (std::is_same_v<T, rtxrt::CompareKind>)
          return KernelParamKind::CompareKind;
        else if constexpr (std::is_same_v<T, rtxrt::ReduceKind>)
          return KernelParamKind::ReduceKind;
        else if constexpr (std::is_same_v<T, rtxrt::UnaryFn>)
          return KernelParamKind::UnaryFn;
        else if constexpr (std::is_same_v<T, rtxrt::GemmEpilogue>)
          return KernelParamKind::GemmEpilogue;
        else {
          static_assert(std::is_same_v<T, KernelArg::RankDependent>);
          return v.kind == KernelArg::RankDependent::GroupIndexTimes ||
                         v.kind == KernelArg::RankDependent::GroupSizeTimes
                     ? KernelParamKind::Int
                     : KernelParamKind::Ints;
        }
      },
      arg.value);
}

const rtxrt::KernelEntry *mlir::rtx::resolveKernel(const KernelCall &call,
                                                   unsigned numResults,
                                                   std::string &error) {
  const rtxrt::KernelEntry *kernel = rtxrt::findKernel(call.kernel);
  if (!kernel) {
    error = "binds to '" + call.kernel +
            "', which runtime/include/rtxrt/kernels/KernelApi.def does not declare";
    return nullptr;
  }
  std::string prefix = "binds to kernel '" + call.kernel + "' ";
  if (call.args.size() != kernel->params.size()) {
    error = prefix + "with " + std::to_string(call.args.size()) +
            " arguments, but it takes " + std::to_string(kernel->params.size());
    return nullptr;
  }
  for (auto [i, arg] : llvm::enumerate(call.args)) {
    KernelParamKind kind = getParamKind(arg);
    if (kind != kernel->params[i]) {
      error = prefix + "with argument " + std::to_string(i) + " of kind " +
              rtxrt::paramKindName(kind) + ", but the kernel takes " +
              rtxrt::paramKindName(kernel->params[i]);
      return nullptr;
    }
  }
  if (!kernel->returnsList && numResults != 1) {
    error = prefix + "which returns one tensor, for " +
            std::to_string(numResults) + " results";
    return nullptr;
  }
  return kernel;
}
