//===- FusedFast.h - fast CUDA kernels of the fused ops ---------*- C++ -*-===//
//
// Private to the GPU runtime, CUDA build only (runtime/lib/gpu/Fused.cu calls
// these under gpu::useFastKernels()). Each covers the cases its *Covers
// function accepts; the others run the portable bodies of Fused.cu (f64
// tensors, rows too long for shared memory), a documented choice. Each is
// compared with its portable reference by test/Unit/Gpu/FusedKernelsTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_FUSEDFAST_H
#define RTXRT_LIB_GPU_FAST_FUSEDFAST_H

#include "rtxrt/core/Tensor.h"
#include "rtxrt/kernels/LrSchedule.h"

#include <vector>

namespace rtxrt {
namespace gpu {
namespace fast {

/// f32/bf16/f16 rows of at most kMaxAddNormWidth elements (one row is held
/// in shared memory as f32: 32 KB, under the 48 KB a block gets without
/// opting in, with room for two blocks per SM).
constexpr int64_t kMaxAddNormWidth = 8192;
bool addNormCovers(const Tensor &input, const Tensor &scale, const Tensor &bias,
                   int64_t d);
/// One block per row: the sum stored once (128-bit loads and stores where
/// the row is aligned), its statistics by warp and block reductions in f32
/// over the row kept in shared memory, then the normalised row.
std::vector<Tensor> addNorm(const Tensor &input, const Tensor &residual,
                            const Tensor &scale, const Tensor &bias,
                            double epsilon, bool layerNorm);

/// f32/bf16/f16 logits.
bool crossEntropyWithGradCovers(const Tensor &logits);
/// One block per row: an online max and sum of exponentials (one read), the
/// token's loss, then the gradient row written directly (a second read);
/// the mean loss over counted tokens in a fixed order by one block.
std::vector<Tensor> crossEntropyWithGrad(const Tensor &logits,
                                         const Tensor &labels,
                                         const Tensor &lossGrad,
                                         bool hasIgnoreIndex,
                                         int64_t ignoreIndex);

/// f32/bf16/f16 parameters with f32 gradients and moments.
bool multiAdamwCovers(const std::vector<Tensor> &params,
                      const std::vector<Tensor> &grads);
/// One launch (per 384 tensors) over a table of tensors and their chunks
/// passed as kernel parameters, as apex's multi_tensor_apply: each block
/// updates one chunk of one tensor, at the rate `schedule` gives its step.
std::vector<Tensor> multiAdamwUpdate(
    const std::vector<Tensor> &params, const std::vector<Tensor> &grads,
    const std::vector<Tensor> &expAvgs, const std::vector<Tensor> &expAvgSqs,
    const Tensor &step, const LrSchedule &schedule, double beta1, double beta2,
    double eps, double weightDecay);
/// One launch over the chunks of every input (f32 squares, a block's sum in
/// double), then one block adding each tensor's chunks in order.
Tensor sumSquares(const std::vector<Tensor> &inputs);

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_FUSEDFAST_H
