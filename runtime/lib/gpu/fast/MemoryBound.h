//===- MemoryBound.h - fast row and elementwise kernels ---------*- C++ -*-===//
//
// Private to the GPU runtime: the entry points of the fast memory-bound
// kernels (RowsFast.cu, ElementwiseFast.cu; CUDA build only). The shared
// kernels (Rows.cu, Elementwise.cu) call them, after their own argument
// checks, when gpu::useFastKernels() and the operands are covered; anything
// else runs the portable body, as docs/gpu.md lists. Each returns what its
// portable counterpart returns (shapes, dtypes), up to summation order.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_MEMORYBOUND_H
#define RTXRT_LIB_GPU_FAST_MEMORYBOUND_H

#include "rtxrt/core/Tensor.h"
#include "rtxrt/kernels/Kernels.h"

#include <vector>

namespace rtxrt {
namespace gpu {
namespace fast {

/// The storage dtypes the fast kernels read and write: f32, bf16 and f16,
/// all computed in f32. f64 (and the integers) run the portable bodies.
inline bool coversFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
}

// --- rows (RowsFast.cu): one warp per row up to 1024 columns, else a block --

/// rtx.layernorm (bias undefined for none) and rtx.rmsnorm.
Tensor layerNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 double epsilon);
Tensor rmsNorm(const Tensor &input, const Tensor &scale, double epsilon);
/// {dx, dscale, dbias} (layerNorm) or {dx, dscale}: dx per row, the scale
/// and bias gradients as a deterministic two-stage column sum.
std::vector<Tensor> normGrad(const Tensor &input, const Tensor &scale,
                             const Tensor &resultGrad, double epsilon,
                             bool layerNorm);
/// Softmax and its gradient over the last dimension (contiguous rows).
Tensor softmaxLastDim(const Tensor &input);
Tensor softmaxGradLastDim(const Tensor &result, const Tensor &resultGrad);
/// rtx.cross_entropy and rtx.cross_entropy_grad over [..., V] logits whose
/// labels were checked (every label in [0, V) or the ignore index).
Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    bool hasIgnoreIndex, int64_t ignoreIndex);
Tensor crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                        const Tensor &lossGrad, bool hasIgnoreIndex,
                        int64_t ignoreIndex);

// --- elementwise (ElementwiseFast.cu): packs of 8, 128-bit loads -------------

/// Operands of one shape and dtype, contiguous (every GPU tensor is).
Tensor unary(UnaryKind kind, const Tensor &input);
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);
Tensor unaryGrad(UnaryFn fn, const Tensor &input, const Tensor &resultGrad);
Tensor swiglu(const Tensor &gate, const Tensor &up);
/// Between any two of f32, bf16 and f16.
Tensor convert(const Tensor &input, DType to);

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_MEMORYBOUND_H
