//===- FlashAttention.h - fused attention kernels (CUDA only) ---*- C++ -*-===//
//
// Private to the GPU runtime. The flash-attention forward and backward of
// rtx.attention and rtx.attention_grad (FlashAttention.cu), called from
// Attention.cu when gpu::useFastKernels(). They never materialise the
// [B, Hq, Sq, Skv] scores: memory is O(B * H * S * D).
//
// Covered: f32, bf16 and f16 tensors, head dims 64 and 128, any Sq and Skv
// (tails masked), causal or not, any group (Hq = group * Hkv). Other cases
// (f64, other head dims, buffers not 16-byte aligned) run the portable
// kernels of Attention.cu: flashAttentionCovers says which.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_FAST_FLASHATTENTION_H
#define RTXRT_LIB_GPU_FAST_FLASHATTENTION_H

#include "../../kernels/KernelUtils.h"

#include "rtxrt/core/Tensor.h"

namespace rtxrt {
namespace gpu {
namespace fast {

/// Whether the flash kernels cover attention of these dims over these
/// tensors (all of the same dtype, checked before).
bool flashAttentionCovers(const rtxrt::detail::AttentionDims &dims,
                          const std::vector<const Tensor *> &tensors);

/// out = softmax(scale q k^T [+ causal mask]) v, into `out` (the shape and
/// dtype of q, on the GPU). Arguments are checked by the caller.
void flashAttention(const rtxrt::detail::AttentionDims &dims, const Tensor &q,
                    const Tensor &k, const Tensor &v, Tensor &out, bool causal,
                    double scale);

/// The gradients of flashAttention with respect to q, k and v for the
/// result's gradient `dout`, into dq, dk and dv (the shapes and dtype of q,
/// k and v). Runs one extra forward first: the API gives the backward no O
/// and no logsumexp.
void flashAttentionGrad(const rtxrt::detail::AttentionDims &dims,
                        const Tensor &q, const Tensor &k, const Tensor &v,
                        const Tensor &dout, Tensor &dq, Tensor &dk, Tensor &dv,
                        bool causal, double scale);

} // namespace fast
} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_LIB_GPU_FAST_FLASHATTENTION_H
