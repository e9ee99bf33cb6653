//===- GemmEpilogue.h - rtx.gemm_epilogue as its unfused kernels -*- C++
//-*-===//
//
// Private to the runtime. The meaning of rtx.gemm_epilogue written once, as
// the unfused kernels that rtx-fuse-epilogues replaced: the CPU kernel
// instantiates it with the CPU kernels and the GPU's portable path with the
// GPU ones, so on either device the fused op computes exactly what the
// unfused ops of the same program compute there (each intermediate rounded
// to the element type where they round it). The GPU's fast path (one
// cuBLASLt matmul with an epilogue) is compared with it by test/Unit/Gpu.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_KERNELS_GEMMEPILOGUE_H
#define RTXRT_LIB_KERNELS_GEMMEPILOGUE_H

#include "KernelUtils.h"

#include <vector>

namespace rtxrt {
namespace detail {

/// GELU's kernel and gradient function for an epilogue.
inline UnaryKind epilogueGeluKind(GemmEpilogue e) {
  return epilogueUsesGeluTanh(e) ? UnaryKind::GeluTanh : UnaryKind::Gelu;
}
inline UnaryFn epilogueGeluFn(GemmEpilogue e) {
  return epilogueUsesGeluTanh(e) ? UnaryFn::GeluTanh : UnaryFn::Gelu;
}

/// rtx.gemm_epilogue from the kernels of `K` (static functions matmul,
/// linear, unary, unaryGrad, reduce, reshape, transpose with the kernel
/// API's signatures), on arguments checkGemmEpilogueArguments accepted.
template <typename K>
std::vector<Tensor>
unfusedGemmEpilogue(GemmEpilogue epilogue, const Tensor &lhs, const Tensor &rhs,
                    bool transposeLhs, bool transposeRhs, const Tensor &bias,
                    const Tensor &preActivation, const GemmEpilogueDims &d) {
  // The lhs's leading dimensions are the product's rows.
  Tensor lhs2 = transposeLhs ? lhs : K::reshape(lhs, {d.m, d.k});
  if (epilogueAddsBias(epilogue)) {
    // rtx.linear(x [M, K], w [N, K], bias), then rtx.gelu: the forward
    // pass's unfused ops (the transposes only serve other layouts).
    Tensor x = transposeLhs ? K::transpose(lhs2, {1, 0}) : lhs2;
    Tensor w = transposeRhs ? rhs : K::transpose(rhs, {1, 0});
    Tensor pre = K::reshape(K::linear(x, w, bias), d.resultShape);
    Tensor result = K::unary(epilogueGeluKind(epilogue), pre);
    if (epilogueReturnsAux(epilogue))
      return {result, pre};
    return {result};
  }
  Tensor product = K::matmul(lhs2, rhs, transposeLhs, transposeRhs);
  if (epilogue == GemmEpilogue::BiasGrad) {
    // The sum of op(lhs) over K: of the stored lhs's rows when transposed.
    int64_t kDim = transposeLhs ? 0 : 1;
    return {product, K::reduce(ReduceKind::Sum, lhs2, {kDim}, false)};
  }
  // DGelu*: rtx.unary_grad(gelu, pre, product).
  Tensor grad = K::unaryGrad(epilogueGeluFn(epilogue),
                             K::reshape(preActivation, {d.m, d.n}), product);
  return {K::reshape(grad, d.resultShape)};
}

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_KERNELS_GEMMEPILOGUE_H
