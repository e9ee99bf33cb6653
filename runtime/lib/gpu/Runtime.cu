//===- Runtime.cu - what runProgram needs from the GPU runtime ------------===//

#include "Portable.h"

#include <atomic>

using namespace rtxrt;

const DeviceRuntime &gpu::deviceRuntime() {
  static const DeviceRuntime runtime = [] {
    DeviceRuntime r;
    r.name = backendName();
    r.selectDevice = [](int64_t localRank) { return selectDevice(localRank); };
    r.toDevice = [](const Tensor &t) { return toDevice(t); };
    r.toHost = [](const Tensor &t) { return toHost(t); };
    r.synchronize = [] { synchronize(); };
    r.setTf32 = [](bool allowed) { setTf32(allowed); };
    r.usePortableKernels = [] { setKernelPath(KernelPath::Portable); };
    r.allocatorStats = [] { return allocatorStats(); };
    r.beginPeakWindow = [] { beginPeakWindow(); };
    r.makeStepRunner = [](const StepRunnerOptions &options) {
      return makeStepRunner(options);
    };
    r.sliceGroup = [](const Tensor &t, int64_t dim, int64_t n, int64_t index) {
      return detail::slicePiece(t, dim, n, index);
    };
#if defined(RTXRT_HAVE_NCCL)
    r.makeCommunicator = makeNcclCommunicator;
#endif
#if defined(__CUDACC__)
    // The emulation has none: its kernels run before their calls return.
    r.makeEventTimer = detail::makeEventTimer;
#endif
    return r;
  }();
  return runtime;
}

#if !defined(RTXRT_HAVE_NCCL)
std::unique_ptr<Communicator>
gpu::makeNcclCommunicator(int64_t, int64_t, const Rendezvous &,
                          const std::vector<std::vector<int64_t>> &, double) {
  throw Error(std::string("this GPU runtime (") + backendName() +
              ") was built without NCCL: its programs use Gloo through host "
              "memory");
}
#endif

// One switch for the process: a program picks its kernels once (the default,
// or --portable-kernels), and the comparison tests flip it between calls.
static std::atomic<gpu::KernelPath> &selectedKernelPath() {
  static std::atomic<gpu::KernelPath> path{gpu::KernelPath::Fast};
  return path;
}

void gpu::setKernelPath(KernelPath path) { selectedKernelPath().store(path); }

gpu::KernelPath gpu::kernelPath() { return selectedKernelPath().load(); }

static std::atomic<bool> &tf32Allowed() {
  static std::atomic<bool> allowed{false};
  return allowed;
}

void gpu::setTf32(bool allowed) { tf32Allowed().store(allowed); }

bool gpu::tf32() { return tf32Allowed().load(); }

bool gpu::useFastKernels() {
#if defined(__CUDACC__)
  return kernelPath() == KernelPath::Fast;
#else
  return false;
#endif
}

bool gpu::deviceAvailable() {
#if defined(__CUDACC__)
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}
