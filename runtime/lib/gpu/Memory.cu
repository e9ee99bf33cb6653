//===- Memory.cu - GPU tensors: allocation, copies, device selection ------===//
//
// Device memory comes from CUDA's stream-ordered allocator
// (cudaMallocAsync), whose pool keeps freed blocks for reuse: a training
// step allocates the same sizes every step, as PyTorch's caching allocator
// also exploits. Devices without memory pools fall back to cudaMalloc. In the
// host emulation a "device" buffer is host memory.
//
// Inside a step of a program, gpu::empty and gpu::zeros take their buffers
// from the step arena (StepArena.h), which the step runner plans from the
// steps it saw: no allocation inside the later steps.
//
//===----------------------------------------------------------------------===//

#include "Portable.h"
#include "StepState.h"

#include "../kernels/KernelUtils.h"

#include "rtxrt/core/AllocatorStats.h"

#include <cstdlib>
#include <cstring>

using namespace rtxrt;
using namespace rtxrt::gpu;
using namespace rtxrt::gpu::detail;

/// Every device buffer (rtxrt/core/AllocatorStats.h).
static rtxrt::detail::AllocatorCounters &deviceCounters() {
  static auto *counters = new rtxrt::detail::AllocatorCounters();
  return *counters;
}

void gpu::beginPeakWindow() { deviceCounters().beginWindow(); }

#if defined(__CUDACC__)
void gpu::detail::check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw Error(std::string("CUDA error in ") + what + ": " +
                cudaGetErrorString(status));
}

cudaStream_t gpu::detail::computeStream() {
  static cudaStream_t s = [] {
    cudaStream_t created;
    check(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking),
          "cudaStreamCreate");
    return created;
  }();
  return s;
}

// The stream of a StreamScope on this thread; null: the compute stream.
static thread_local cudaStream_t scopedStream = nullptr;

cudaStream_t gpu::detail::stream() {
  return scopedStream ? scopedStream : computeStream();
}

gpu::detail::StreamScope::StreamScope(cudaStream_t s)
    : previous_(scopedStream) {
  scopedStream = s;
}
gpu::detail::StreamScope::~StreamScope() { scopedStream = previous_; }

const char *gpu::backendName() { return "CUDA"; }

std::string gpu::selectDevice(int64_t localRank) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw Error(
        std::string("no CUDA device is visible (") +
        (status == cudaSuccess ? "none found" : cudaGetErrorString(status)) +
        "): run the CPU program (rtx-translate --emit=cpp) instead");
  // A rank beyond the visible GPUs is refused rather than wrapped onto a
  // GPU another rank uses (two ranks on one GPU halve its memory silently).
  if (localRank < 0 || localRank >= count)
    throw Error("GPU " + std::to_string(localRank) +
                " is not visible: this machine shows " + std::to_string(count) +
                " (check --devices / RTX_DEVICES, the ranks per node, or "
                "CUDA_VISIBLE_DEVICES)");
  int device = static_cast<int>(localRank);
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp props;
  check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  return "GPU " + std::to_string(device) + " " + props.name;
}

/// Whether the current device has stream-ordered memory pools. Some
/// virtualised machines have none, and cudaMallocAsync then fails with
/// "operation not supported". Where there are pools, the default pool is
/// told to keep what is freed: its default release threshold (0) hands
/// memory back to the driver at every synchronisation, and a step
/// synchronises several times.
static bool memoryPools() {
  static const bool supported = [] {
    int device = 0, value = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(
        cudaDeviceGetAttribute(&value, cudaDevAttrMemoryPoolsSupported, device),
        "cudaDeviceGetAttribute(MemoryPoolsSupported)");
    if (value) {
      cudaMemPool_t pool;
      check(cudaDeviceGetDefaultMemPool(&pool, device),
            "cudaDeviceGetDefaultMemPool");
      uint64_t keep = UINT64_MAX;
      check(
          cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "cudaMemPoolSetAttribute(ReleaseThreshold)");
    }
    return value != 0;
  }();
  return supported;
}

std::shared_ptr<unsigned char> gpu::detail::poolAllocate(size_t bytes) {
  void *p = nullptr;
  size_t size = std::max<size_t>(bytes, 16);
  std::string what = "allocating " + std::to_string(bytes) + " bytes";
  // Errors when freeing at teardown (the context already gone) are not
  // actionable, so the deleters ignore them.
  auto counted = [&](cudaError_t status) {
    if (status != cudaSuccess)
      deviceCounters().failures.fetch_add(1, std::memory_order_relaxed);
    check(status, what.c_str());
    deviceCounters().allocated(static_cast<int64_t>(size));
  };
  if (memoryPools()) {
    counted(cudaMallocAsync(&p, size, stream()));
    return std::shared_ptr<unsigned char>(
        static_cast<unsigned char *>(p), [size](unsigned char *q) {
          deviceCounters().freed(static_cast<int64_t>(size));
          (void)cudaFreeAsync(q, stream());
        });
  }
  // No pools: plain cudaMalloc. Work queued on the stream may still use a
  // block, so freeing it waits for the stream first.
  counted(cudaMalloc(&p, size));
  return std::shared_ptr<unsigned char>(
      static_cast<unsigned char *>(p), [size](unsigned char *q) {
        deviceCounters().freed(static_cast<int64_t>(size));
        (void)cudaStreamSynchronize(stream());
        (void)cudaFree(q);
      });
}

AllocatorStats gpu::allocatorStats() {
  // The pool's own figure of what it keeps; without pools nothing is kept.
  int64_t reserved = -1;
  if (memoryPools()) {
    int device = 0;
    cudaMemPool_t pool;
    unsigned long long bytes = 0; // the attribute is a cuuint64_t
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent,
                                &bytes) == cudaSuccess)
      reserved = static_cast<int64_t>(bytes);
  }
  return deviceCounters().snapshot(reserved);
}

void gpu::detail::copyBytes(void *dst, const void *src, size_t bytes,
                            bool toDevice, bool toHost) {
  if (bytes == 0)
    return;
  cudaMemcpyKind kind = toDevice ? cudaMemcpyHostToDevice
                        : toHost ? cudaMemcpyDeviceToHost
                                 : cudaMemcpyDeviceToDevice;
  check(cudaMemcpyAsync(dst, src, bytes, kind, stream()), "cudaMemcpyAsync");
  if (toHost || toDevice) // the host buffer must stay valid until done
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void gpu::synchronize() {
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

static void fillBytes(void *p, int value, size_t bytes) {
  check(cudaMemsetAsync(p, value, bytes, stream()), "cudaMemsetAsync");
}
#else
const char *gpu::backendName() { return "CUDA emulation on the host"; }

std::string gpu::selectDevice(int64_t localRank) {
  return "emulated GPU " + std::to_string(localRank);
}

std::shared_ptr<unsigned char> gpu::detail::poolAllocate(size_t bytes) {
  size_t size = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, size);
  if (!p) {
    deviceCounters().failures.fetch_add(1, std::memory_order_relaxed);
    throw Error("cannot allocate " + std::to_string(bytes) +
                " bytes of (emulated) GPU memory");
  }
  deviceCounters().allocated(static_cast<int64_t>(size));
  return std::shared_ptr<unsigned char>(
      static_cast<unsigned char *>(p), [size](unsigned char *q) {
        deviceCounters().freed(static_cast<int64_t>(size));
        std::free(q);
      });
}

AllocatorStats gpu::allocatorStats() { return deviceCounters().snapshot(); }

void gpu::detail::copyBytes(void *dst, const void *src, size_t bytes, bool,
                            bool) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

void gpu::synchronize() {}

static void fillBytes(void *p, int value, size_t bytes) {
  std::memset(p, value, bytes);
}
#endif

Tensor gpu::empty(const Shape &shape, DType dtype) {
  size_t bytes = tensorBytes(shape, dtype);
  StepArena &arena = stepState().arena;
  std::shared_ptr<unsigned char> buffer =
      arena.enabled() ? arena.allocate(bytes) : poolAllocate(bytes);
#if !defined(__CUDACC__)
  // Poison fresh memory so a kernel that forgets to write an element shows
  // (an arena's buffer holds what its last user wrote).
  std::memset(buffer.get(), 0xff, std::max<size_t>(bytes, 1));
#endif
  return Tensor::wrap(shape, dtype, std::move(buffer), Device::Gpu);
}

Tensor gpu::zeros(const Shape &shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  fillBytes(t.raw(), 0, t.nbytes());
  return t;
}

Tensor gpu::detail::copy(const Tensor &t) {
  Tensor out = empty(t.shape(), t.dtype());
  copyBytes(out.raw(), t.raw(), t.nbytes(), false, false);
  return out;
}

Tensor gpu::toDevice(const Tensor &host) {
  if (!host.defined() || host.onGpu())
    return host;
  Tensor t = empty(host.shape(), host.dtype());
  copyBytes(t.raw(), host.raw(), host.nbytes(), true, false);
  return t;
}

Tensor gpu::toHost(const Tensor &device) {
  if (!device.defined() || !device.onGpu())
    return device;
  Tensor t = Tensor::uninitialized(device.shape(), device.dtype());
  copyBytes(t.raw(), device.raw(), device.nbytes(), false, true);
  return t;
}

Dims gpu::detail::dimsOf(const std::string &op,
                         const std::vector<int64_t> &values) {
  if (values.size() > static_cast<size_t>(kMaxRank))
    throw Error(
        op + ": the GPU kernels support rank <= " + std::to_string(kMaxRank) +
        ", got rank " + std::to_string(values.size()));
  Dims d{};
  d.rank = static_cast<int>(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    d.v[i] = values[i];
  return d;
}

void gpu::detail::checkOnGpu(const std::string &op, const Tensor &t,
                             const char *name) {
  if (!t.defined())
    throw Error(op + ": " + name + " is undefined");
  if (!t.onGpu())
    throw Error(op + ": " + name +
                " is in host memory; the GPU kernels take GPU tensors "
                "(rtxrt::gpu::toDevice)");
}

Tensor gpu::detail::toCompute(const Tensor &t) {
  DType c = t.dtype() == DType::F64 ? DType::F64 : DType::F32;
  return t.dtype() == c ? t : gpu::convert(t, c);
}

Tensor gpu::detail::fromCompute(const Tensor &t, DType dtype) {
  return t.dtype() == dtype ? t : gpu::convert(t, dtype);
}

Tensor gpu::detail::makeFlag() {
  Tensor flag = empty({}, DType::I64);
  // -1 (every bit set) by a memset on the stream: no copy from the host,
  // so a captured step sets it again at each launch.
  fillBytes(flag.raw(), 0xff, sizeof(int64_t));
  return flag;
}

bool gpu::detail::flagged(const Tensor &flag) {
  return readScalar<int64_t>(flag.raw()) >= 0;
}
