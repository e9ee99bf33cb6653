//===- FlashAttention.cu - fused attention forward and backward -----------===//
//
// FlashAttention-2 (Dao, 2023) for rtx.attention and rtx.attention_grad:
// the [B, Hq, Sq, Skv] scores are never written to memory.
//
// Layout and work split. q and dout are [B, Hq, Sq, D], k and v
// [B, Hkv, Skv, D], contiguous; query head h reads key/value head
// h / group. A CTA is 4 warps; each warp owns 16 rows of the CTA's 64-row
// tile and keeps its rows' accumulators in registers, in the layout of the
// tensor cores' m16n8 accumulator (below), so the row statistics of the
// online softmax need shuffles among the 4 lanes that share a row only.
// Operands are staged in shared memory; each warp reads them there.
//
//  - forward: a CTA per (query head, 64 query rows); K/V tiles of 64 keys
//    are streamed through shared memory; running max and sum in f32, the
//    output accumulated in f32 and rounded once. Causal CTAs stop at the
//    diagonal tile. Writes the row logsumexp when asked (the backward).
//  - backward (the API gives it q, k, v and dout only, so it first runs
//    the forward into temporaries for O and the logsumexp: one extra
//    forward, 2 of the backward's 9 matrix products; a forward that
//    returned its logsumexp, with O kept by the program, would save it):
//      1. D = rowsum(dout * O), one warp per row;
//      2. dk, dv: a CTA per (key/value head, 64 keys); it loops over the
//         group's query heads and their query tiles (causal: from the
//         diagonal), recomputes P^T = exp(S^T - lse) and accumulates
//         dv += P^T dO, dS^T = P^T (dO v^T - D)^T, dk += dS^T q in
//         registers: dk and dv sum over the group without atomics;
//      3. dq: a CTA per (query head, 64 query rows), like the forward:
//         recomputes P and dS and accumulates dq += dS k in registers.
//    dq by its own pass (not FlashAttention-2's f32 atomics from step 2)
//    recomputes S and dO v^T once more, but every sum has a fixed order:
//    the gradients are deterministic, as the portable kernels' are.
//
// Matrix products. warpGemm multiplies a warp's 16 x K operand by a K x N
// one into 16 x N f32 accumulators. For bf16 and f16 it issues
// mma.sync.m16n8k16 (f32 accumulation); for f32 each lane computes its
// own accumulator elements with FMAs (strict f32, like the portable
// kernels' cuBLAS GEMMs). P and dS are rounded to the input dtype before
// they feed a product, as FlashAttention does; every sum is f32.
//
// The m16n8 accumulator layout (PTX ISA, "Matrix fragments for
// mma.m16n8k16"): lane l, g = l / 4, t = l % 4, holds for each 8-column
// tile nt the elements (g, nt*8 + 2t + j) in c[nt][j] and
// (g + 8, nt*8 + 2t + j) in c[nt][2 + j], j in {0, 1}.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"
#include "FlashAttentionKernels.h"

#include "../Portable.h"

#include <string>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using namespace rtxrt::gpu::fast::flash;
using rtxrt::detail::AttentionDims;

namespace {

// --- launches ----------------------------------------------------------------

/// Launches `kernel` on `tiles` CTAs with `bytes` of dynamic shared memory
/// (above 48 KiB needs the kernel's opt-in, given before each launch: a
/// host-side attribute, cheap next to the kernel).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), int64_t tiles, size_t bytes,
            Args... args) {
  if (tiles <= 0)
    return;
  if (tiles > 0x7fffffff)
    throw Error("rtx.attention: too many tiles for one launch (" +
                std::to_string(tiles) + ")");
  check(cudaFuncSetAttribute(kernel,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)),
        "setting a flash-attention kernel's shared memory");
  kernel<<<static_cast<unsigned>(tiles), kThreads, bytes, stream()>>>(
      Params(args)...);
  check(cudaGetLastError(), "a flash-attention kernel launch");
}

template <typename T, int D>
void forward(const AttentionDims &s, const Tensor &q, const Tensor &k,
             const Tensor &v, Tensor &out, float *lse2, bool causal,
             double scale) {
  launch(flashForwardKernel<T, D>, queryTileCtas(s), ForwardSmem<T, D>::bytes,
         flashArgs(s, causal, scale), static_cast<const T *>(q.raw()),
         static_cast<const T *>(k.raw()), static_cast<const T *>(v.raw()),
         static_cast<T *>(out.raw()), lse2);
}

template <typename T, int D>
void backward(const AttentionDims &s, const Tensor &q, const Tensor &k,
              const Tensor &v, const Tensor &dout, Tensor &dq, Tensor &dk,
              Tensor &dv, bool causal, double scale) {
  // The extra forward: O and the row logsumexp, which the API does not
  // pass to the backward.
  int64_t rows = s.b * s.hq * s.sq;
  Tensor out = gpu::empty(q.shape(), q.dtype());
  Tensor lse2 = gpu::empty({rows}, DType::F32);
  Tensor delta = gpu::empty({rows}, DType::F32);
  forward<T, D>(s, q, k, v, out, static_cast<float *>(lse2.raw()), causal,
                scale);
  launch(rowDotKernel<T>, rowDotCtas(rows), 0, rows, D,
         static_cast<const T *>(dout.raw()), static_cast<const T *>(out.raw()),
         static_cast<float *>(delta.raw()));
  GradPointers<T> p{static_cast<const T *>(q.raw()),
                    static_cast<const T *>(k.raw()),
                    static_cast<const T *>(v.raw()),
                    static_cast<const T *>(dout.raw()),
                    static_cast<const float *>(lse2.raw()),
                    static_cast<const float *>(delta.raw()),
                    static_cast<T *>(dq.raw()),
                    static_cast<T *>(dk.raw()),
                    static_cast<T *>(dv.raw())};
  FlashArgs args = flashArgs(s, causal, scale);
  launch(flashGradKeyKernel<T, D>, keyTileCtas(s), GradSmem<T, D>::bytes, args,
         p, float(scale));
  launch(flashGradQueryKernel<T, D>, queryTileCtas(s), GradSmem<T, D>::bytes,
         args, p, float(scale));
}

/// Calls fn<T, D>(...) for the element type of `dtype` and head dim D.
#define RTX_FLASH_DISPATCH(dtype, d, fn, ...)                                  \
  do {                                                                         \
    bool wide = (d) == 128;                                                    \
    switch (dtype) {                                                           \
    case DType::F32:                                                           \
      wide ? fn<float, 128>(__VA_ARGS__) : fn<float, 64>(__VA_ARGS__);         \
      break;                                                                   \
    case DType::BF16:                                                          \
      wide ? fn<__nv_bfloat16, 128>(__VA_ARGS__)                               \
           : fn<__nv_bfloat16, 64>(__VA_ARGS__);                               \
      break;                                                                   \
    case DType::F16:                                                           \
      wide ? fn<__half, 128>(__VA_ARGS__) : fn<__half, 64>(__VA_ARGS__);       \
      break;                                                                   \
    default:                                                                   \
      throw Error("rtx.attention: no flash kernel for " +                      \
                  std::string(dtypeName(dtype)));                              \
    }                                                                          \
  } while (false)

} // namespace

bool gpu::fast::flashAttentionCovers(
    const AttentionDims &dims, const std::vector<const Tensor *> &tensors) {
  if (dims.d != 64 && dims.d != 128)
    return false;
  for (const Tensor *t : tensors) {
    DType dtype = t->dtype();
    if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
      return false;
    if (reinterpret_cast<uintptr_t>(t->raw()) % 16 != 0)
      return false; // the kernels load 16-byte vectors
  }
  return true;
}

void gpu::fast::flashAttention(const AttentionDims &dims, const Tensor &q,
                               const Tensor &k, const Tensor &v, Tensor &out,
                               bool causal, double scale) {
  RTX_FLASH_DISPATCH(q.dtype(), dims.d, forward, dims, q, k, v, out, nullptr,
                     causal, scale);
}

void gpu::fast::flashAttentionGrad(const AttentionDims &dims, const Tensor &q,
                                   const Tensor &k, const Tensor &v,
                                   const Tensor &dout, Tensor &dq, Tensor &dk,
                                   Tensor &dv, bool causal, double scale) {
  RTX_FLASH_DISPATCH(q.dtype(), dims.d, backward, dims, q, k, v, dout, dq, dk,
                     dv, causal, scale);
}
