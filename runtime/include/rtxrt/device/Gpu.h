//===- Gpu.h - the GPU half of the runtime ----------------------*- C++ -*-===//
//
// librtxrt_cuda: the kernels of rtxrt/kernels/Kernels.h for tensors in GPU
// memory, with the same signatures and semantics, so that `rtx-translate
// --emit=cuda` writes the same program as --emit=cpp with `gpu::` in front
// of each kernel. Matmuls go to cuBLASLt; every other op is a CUDA kernel in
// runtime/lib/gpu. Collectives go to NCCL (makeNcclCommunicator) or, on a
// build without NCCL, through host memory to Gloo.
//
// The same sources also build as plain C++ into librtxrt_gpu_emulation,
// where "device memory" is host memory and a kernel launch is a loop over
// its indices. The emulation is how CI, which has no GPU, runs every GPU
// kernel and the emitted CUDA programs end to end against rtx-run; only the
// CUDA API calls themselves (allocation, copies, cuBLAS, NCCL) differ.
//
// Arguments are checked on the host with the CPU kernels' messages. Data-
// dependent checks (an embedding id or a label outside the vocabulary) are
// made on the device and reported after the kernel, with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_GPU_H
#define RTXRT_GPU_H

#include "rtxrt/core/AllocatorStats.h"
#include "rtxrt/kernels/Kernels.h"
#include "rtxrt/device/DeviceRuntime.h"

#include <memory>
#include <string>
#include <vector>

namespace rtxrt {
namespace gpu {

/// "CUDA" or "CUDA emulation on the host".
const char *backendName();
/// Selects the GPU of this process (LOCAL_RANK modulo the GPUs present) and
/// returns its name; throws Error when there is none.
std::string selectDevice(int64_t localRank);

// --- memory ------------------------------------------------------------------
/// An uninitialised GPU tensor.
Tensor empty(const Shape &shape, DType dtype);
/// A zero-filled GPU tensor.
Tensor zeros(const Shape &shape, DType dtype);
/// Copies a host tensor to the GPU (a GPU tensor is returned as is).
Tensor toDevice(const Tensor &host);
/// Copies a GPU tensor to the host (a host tensor is returned as is); waits
/// for the kernels that produce it.
Tensor toHost(const Tensor &device);
/// Waits for every kernel launched so far.
void synchronize();
/// Whether a real GPU is visible to this process (false in the emulation).
bool deviceAvailable();

// --- which kernels run -------------------------------------------------------
/// The two implementations of the GPU kernels. Fast: what the chip is built
/// for (shared memory, warp reductions, tensor cores, cuBLASLt; the default
/// on a GPU). Portable: the one-index bodies of runtime/lib/gpu/Portable.h,
/// which the host emulation runs and which the fast kernels are compared
/// with (test/Unit/Gpu). The emulation has only the portable kernels.
enum class KernelPath { Fast, Portable };
/// Selects the kernels of this process's following calls.
void setKernelPath(KernelPath path);
KernelPath kernelPath();
/// Whether fast kernels run: the fast path is selected and this is a CUDA
/// build (the emulation always runs the portable bodies).
bool useFastKernels();

/// TF32 for f32 GEMMs: an option of f32 programs (an emitted program's
/// `--tf32` flag), off by default. When on, f32 matmuls, linears and
/// attention's products run on the tensor cores in TF32
/// (CUBLAS_COMPUTE_32F_FAST_TF32: 10-bit mantissas in, f32 accumulation;
/// about 1e-3 relative error, so losses no longer match the CPU program to
/// fp32 tolerance). bf16/f16 GEMMs always use the tensor cores with f32
/// accumulation; f64 is unaffected; the host emulation computes in f32.
void setTf32(bool allowed);
bool tf32();

// --- the kernels of rtxrt/kernels/KernelApi.def, for GPU tensors -----------------
#define RTX_KERNEL(Result, name, parameters) Result name parameters;
#define RTX_KERNEL_HELPER(Result, name, parameters) Result name parameters;
#define RTX_KERNEL_FORWARD(Result, name, parameters, arguments)                \
  inline Result name parameters { return gpu::name arguments; }
#include "rtxrt/kernels/KernelApi.def"

// --- programs ----------------------------------------------------------------
/// What runProgram needs to run an emitted CUDA program: copies between
/// host and device, the mesh slice on the device, and NCCL process groups
/// (or Gloo through host memory when this build has no NCCL).
const DeviceRuntime &deviceRuntime();

/// The runner of a program's steps: their allocations served by one
/// planned arena, their checks read after them, and on CUDA each step
/// captured once as a graph and replayed (docs/gpu.md "One arena, one
/// graph per step").
std::unique_ptr<StepRunner> makeStepRunner(const StepRunnerOptions &options);

/// The device allocator's counters (the stream-ordered pool's reserved
/// bytes where there is one).
AllocatorStats allocatorStats();
/// Starts the device allocator's peak window (windowPeakBytes: a step's).
void beginPeakWindow();

/// NCCL communicators for `groups` (lists of global ranks), created eagerly
/// in order; each group's ncclUniqueId travels through the rendezvous store
/// (`file:DIR` or `redis://HOST:PORT`). Collectives of GPU tensors run on
/// the device; every collective has a timeout after which the communicator
/// is aborted and an Error names the rank, the op and the group. Throws when
/// this build has no NCCL.
std::unique_ptr<Communicator>
makeNcclCommunicator(int64_t rank, int64_t size, const Rendezvous &rendezvous,
                     const std::vector<std::vector<int64_t>> &groups,
                     double timeoutSeconds);

} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_GPU_H
