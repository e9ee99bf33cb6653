//===- Gpu.h - the GPU half of the runtime ----------------------*- C++ -*-===//
//
// librtxrt_cuda: the kernels of rtxrt/Kernels.h for tensors in GPU memory,
// with the same signatures and semantics, so that `rtx-translate
// --emit=cuda` writes the same program as --emit=cpp with `gpu::` in front
// of each kernel. Matmuls go to cuBLAS; every other op is a CUDA kernel in
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

#include "rtxrt/Kernels.h"
#include "rtxrt/Program.h"

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

// --- the kernels of rtxrt/Kernels.h, for GPU tensors ----------------------
Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);
Tensor batchMatmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs);
Tensor linear(const Tensor &input, const Tensor &weight, const Tensor &bias);

Tensor unary(UnaryKind kind, const Tensor &input);
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);
Tensor compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs);
Tensor where(const Tensor &condition, const Tensor &onTrue,
             const Tensor &onFalse);
Tensor maskedFill(const Tensor &input, const Tensor &mask, double value);
Tensor convert(const Tensor &input, DType to);
Tensor dropout(const Tensor &input, double rate, int64_t seed,
               const Shape &globalShape = {},
               const std::vector<int64_t> &globalOffsets = {});

Tensor layerNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 double epsilon);
Tensor rmsNorm(const Tensor &input, const Tensor &scale, double epsilon);
Tensor softmax(const Tensor &input, int64_t dim);
Tensor rope(const Tensor &input, double theta, int64_t offset);
Tensor attention(const Tensor &query, const Tensor &key, const Tensor &value,
                 bool causal, double scale);

Tensor embedding(const Tensor &table, const Tensor &ids);
Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    bool hasIgnoreIndex, int64_t ignoreIndex);
Tensor embedding(const Tensor &table, const Tensor &ids, int64_t offset,
                 int64_t vocab);
std::vector<Tensor> vocabLogitStats(const Tensor &logits, const Tensor &labels,
                                    int64_t offset, int64_t vocab,
                                    bool hasIgnoreIndex, int64_t ignoreIndex);
Tensor vocabCrossEntropy(const Tensor &max, const Tensor &sumExp,
                         const Tensor &labelLogit, const Tensor &labels,
                         bool hasIgnoreIndex, int64_t ignoreIndex);

Tensor reshape(const Tensor &input, const Shape &shape);
Tensor transpose(const Tensor &input, const std::vector<int64_t> &permutation);
Tensor slice(const Tensor &input, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits);
std::vector<Tensor> split(const Tensor &input, int64_t dim,
                          const std::vector<int64_t> &sizes);
Tensor concat(const std::vector<Tensor> &inputs, int64_t dim);
Tensor broadcast(const Tensor &input, const std::vector<int64_t> &dims,
                 const Shape &resultShape);
Tensor reduce(ReduceKind kind, const Tensor &input,
              const std::vector<int64_t> &dims, bool keepdim);

Tensor unaryGrad(UnaryFn fn, const Tensor &input, const Tensor &resultGrad);
std::vector<Tensor> layerNormGrad(const Tensor &input, const Tensor &scale,
                                  const Tensor &resultGrad, double epsilon);
std::vector<Tensor> rmsNormGrad(const Tensor &input, const Tensor &scale,
                                const Tensor &resultGrad, double epsilon);
Tensor softmaxGrad(const Tensor &result, const Tensor &resultGrad, int64_t dim);
Tensor ropeGrad(const Tensor &resultGrad, double theta, int64_t offset);
std::vector<Tensor> attentionGrad(const Tensor &query, const Tensor &key,
                                  const Tensor &value, const Tensor &resultGrad,
                                  bool causal, double scale);
Tensor embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                     const Shape &tableShape);
Tensor crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                        const Tensor &lossGrad, bool hasIgnoreIndex,
                        int64_t ignoreIndex);
Tensor embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                     const Shape &tableShape, int64_t offset, int64_t vocab);
Tensor vocabCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                             const Tensor &lossGrad, const Tensor &max,
                             const Tensor &sumExp, int64_t offset,
                             int64_t vocab, bool hasIgnoreIndex,
                             int64_t ignoreIndex);
Tensor pad(const Tensor &input, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high);

std::vector<Tensor> adamwUpdate(const Tensor &param, const Tensor &grad,
                                const Tensor &expAvg, const Tensor &expAvgSq,
                                const Tensor &step, double lr, double beta1,
                                double beta2, double eps, double weightDecay);
Tensor sgdUpdate(const Tensor &param, const Tensor &grad, double lr,
                 double weightDecay);

// --- programs ----------------------------------------------------------------
/// What runProgram needs to run an emitted CUDA program: copies between
/// host and device, the mesh slice on the device, and NCCL process groups
/// (or Gloo through host memory when this build has no NCCL).
const DeviceRuntime &deviceRuntime();

/// NCCL communicators for `groups` (lists of global ranks), created eagerly
/// in order; each group's ncclUniqueId travels through the rendezvous store
/// (`file:DIR` or `redis://HOST:PORT`). Collectives of GPU tensors run on
/// the device; every collective has a timeout after which the communicator
/// is aborted and an Error names the rank, the op and the group. Throws when
/// this build has no NCCL.
std::unique_ptr<Communicator>
makeNcclCommunicator(int64_t rank, int64_t size, const std::string &store,
                     const std::vector<std::vector<int64_t>> &groups,
                     double timeoutSeconds);

} // namespace gpu
} // namespace rtxrt

#endif // RTXRT_GPU_H
