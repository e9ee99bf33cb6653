//===- Portable.h - one source for CUDA and its host emulation --*- C++ -*-===//
//
// Private to the GPU runtime. Every GPU kernel here is written as a body
// over one index, launched with forEach(n, body): under nvcc that is a grid-
// stride CUDA kernel on the runtime's stream; compiled as plain C++ (the
// emulation library, RTXRT_GPU_EMULATION) it is a loop on the host. The
// bodies never synchronise with each other (no shared memory, no
// __syncthreads), which is what makes the emulation faithful: a body sees
// exactly what it would see on the device. A body owns its outputs (an
// element, or a whole row whose reduction it runs in order), so results are
// deterministic on the GPU too.
//
// Why our own shim rather than a library: CI has no GPU and no CUDA
// emulator is packaged; this lets every kernel and the emitted CUDA
// programs run there against the CPU kernels.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_GPU_PORTABLE_H
#define RTXRT_LIB_GPU_PORTABLE_H

#include "rtxrt/device/Gpu.h"
#include "rtxrt/core/Tensor.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define RTX_GPU_FN __host__ __device__
#define RTX_GPU_BODY [=] __host__ __device__
#else
#define RTX_GPU_FN
#define RTX_GPU_BODY [=]
#endif

namespace rtxrt {
namespace gpu {
namespace detail {

// Kernel helpers in anonymous namespaces reach these unqualified.
using gpu::empty;
using gpu::toDevice;
using gpu::toHost;
using gpu::zeros;

#if defined(__CUDACC__)
/// The stream the calling thread queues work on: the compute stream, on
/// which every kernel, copy, cuBLAS call and synchronous NCCL collective of
/// this process runs in program order without extra events, or, inside a
/// StreamScope, another stream (started collectives' communication stream).
/// Allocations and frees are ordered on it too (cudaMallocAsync).
cudaStream_t stream();
/// The compute stream.
cudaStream_t computeStream();
/// While alive, the calling thread's work goes to `s` instead.
class StreamScope {
public:
  explicit StreamScope(cudaStream_t s);
  ~StreamScope();
  StreamScope(const StreamScope &) = delete;
  StreamScope &operator=(const StreamScope &) = delete;

private:
  cudaStream_t previous_;
};
/// Throws an Error naming `what` when `status` is not cudaSuccess.
void check(cudaError_t status, const char *what);
/// A timer of the compute stream's work by CUDA events (EventTimer.cu).
std::unique_ptr<DeviceEventTimer> makeEventTimer();

template <typename Body> __global__ void forEachKernel(int64_t n, Body body) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    body(i);
}

/// Runs body(i) for i in [0, n) on the device.
template <typename Body> void forEach(int64_t n, Body body) {
  if (n <= 0)
    return;
  constexpr int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65536)
    blocks = 65536; // the grid stride covers the rest
  forEachKernel<<<static_cast<unsigned>(blocks), threads, 0, stream()>>>(n,
                                                                         body);
  check(cudaGetLastError(), "a kernel launch");
}
#else
/// Runs body(i) for i in [0, n), in order (the host emulation).
template <typename Body> void forEach(int64_t n, Body body) {
  for (int64_t i = 0; i < n; ++i)
    body(i);
}
#endif

/// Allocation: kernels take every buffer, result or temporary, from
/// gpu::empty or gpu::zeros (never cudaMalloc/cudaMallocAsync directly):
/// inside a program's step these are served by the step arena, which is
/// what keeps allocation out of the step and lets it be captured as a CUDA
/// graph (StepArena.h, StepRunner.cu). poolAllocate is the device
/// allocator under them (the stream-ordered pool, or host memory in the
/// emulation), and the arena's own allocation.
std::shared_ptr<unsigned char> poolAllocate(size_t bytes);

/// Copies `bytes` between buffers; `toDevice`/`toHost` say which side each
/// is on (both false: device to device).
void copyBytes(void *dst, const void *src, size_t bytes, bool toDevice,
               bool toHost);
/// Reads one value from device memory (waits for the kernels writing it).
template <typename T> T readScalar(const void *devicePointer) {
  T value;
  copyBytes(&value, devicePointer, sizeof(T), false, true);
  return value;
}

/// A fresh GPU copy of a GPU tensor.
Tensor copy(const Tensor &t);

/// A GPU tensor viewing another's buffer with another shape.
inline Tensor view(const Tensor &t, const Shape &shape) {
  return Tensor::wrap(shape, t.dtype(), t.buffer(), Device::Gpu);
}

/// Piece `index` of n equal pieces along `dim` (rtx.mesh_slice).
Tensor slicePiece(const Tensor &input, int64_t dim, int64_t n, int64_t index);

/// Up to 8 dimensions passed by value into kernel bodies.
constexpr int kMaxRank = 8;
struct Dims {
  int64_t v[kMaxRank];
  int rank;
};
Dims dimsOf(const std::string &op, const std::vector<int64_t> &values);

/// Throws (naming `op`) unless the tensor is a defined GPU tensor.
void checkOnGpu(const std::string &op, const Tensor &t, const char *name);

/// f32 for f32/bf16/f16, f64 for f64 (as on the CPU), on the device.
Tensor toCompute(const Tensor &t);
Tensor fromCompute(const Tensor &t, DType dtype);

/// Data-dependent checks: a kernel stores into a device flag (makeFlag(),
/// -1) the index of an element it refused; flagged() reads it back (and
/// waits for the device). Callers then rerun the CPU kernels' host check,
/// which throws their exact message.
Tensor makeFlag();
bool flagged(const Tensor &flag);
/// Runs `hostCheck` (which throws the op's message) when `flag` is set.
/// Outside a program's step the flag is read now; inside one it is read
/// after the step, since reading it would wait for the device in the
/// middle of the step (and cannot be captured in a CUDA graph). `hostCheck`
/// should hold only what the message needs (not a large tensor's buffer:
/// it is kept alive until the check).
void checkFlag(const Tensor &flag, std::function<void()> hostCheck);

/// The number of labels that count towards a cross-entropy's mean (those
/// not equal to `ignoreIndex` when `hasIgnore`), as a device I64 scalar
/// written by one body (a fixed order).
Tensor countedLabels(const Tensor &labels, bool hasIgnore, int64_t ignoreIndex);

/// Writes into `flag` the index of the first id (embedding id or label)
/// outside [0, vocab), an allowed `ignoreIndex` excepted.
void checkIdsOnDevice(const Tensor &ids, int64_t vocab, bool hasIgnore,
                      int64_t ignoreIndex, Tensor &flag);

/// The checks of a loss over `logits` [..., vocab] and `labels` [...]: float
/// logits and integer labels on the GPU, the labels' shape, and each label in
/// [0, vocab) (an allowed `ignoreIndex` excepted), the last on the device
/// and reported after the step (checkFlag) with the CPU kernel's message.
/// `vocab` < 0: the logits hold the whole vocabulary.
void checkLogitsLabels(const std::string &op, const Tensor &logits,
                       const Tensor &labels, bool hasIgnoreIndex,
                       int64_t ignoreIndex, int64_t vocab = -1);

} // namespace detail
} // namespace gpu
} // namespace rtxrt

/// Calls fn<double>(...) for f64 and fn<float>(...) for the other float
/// dtypes (the compute type rule of the CPU kernels).
#define RTX_GPU_COMPUTE(dtype, fn, ...)                                        \
  ((dtype) == ::rtxrt::DType::F64 ? fn<double>(__VA_ARGS__)                    \
                                  : fn<float>(__VA_ARGS__))

#endif // RTXRT_LIB_GPU_PORTABLE_H
