//===- Communicator.h - exchanging tensors between ranks --------*- C++ -*-===//
//
// The interface every backend implements (Gloo on the host, NCCL on the GPU,
// threads in one process for rtx-run) and the collectives as the dialect
// describes them. Nothing here knows of programs or steps.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_COMM_COMMUNICATOR_H
#define RTXRT_COMM_COMMUNICATOR_H

#include "rtxrt/core/Tensor.h"
#include "rtxrt/kernels/Kernels.h"

#include <future>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {

/// A collective as the dialect's op describes it: rtx-translate writes one
/// per op (`Collective::allGather(1)`), rtx-run reads the same attributes.
struct Collective {
  enum class Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    BroadcastFrom,
    Permute
  };
  Kind kind = Kind::AllReduce;
  ReduceKind reduce = ReduceKind::Sum;
  /// The gathered, scattered or (all-to-all) split dimension.
  int64_t dim = 0;
  /// All-to-all's concatenated dimension.
  int64_t concatDim = 0;
  /// Broadcast's root, a group rank.
  int64_t root = 0;
  /// Permute's source -> target group ranks, flat.
  std::vector<int64_t> pairs;

  static Collective allReduce(ReduceKind reduce);
  static Collective allGather(int64_t dim);
  static Collective reduceScatter(ReduceKind reduce, int64_t dim);
  static Collective allToAll(int64_t splitDim, int64_t concatDim);
  static Collective broadcastFrom(int64_t root);
  static Collective permute(std::vector<int64_t> pairs);
  /// "all_gather", as in the dialect's op names.
  const char *name() const;
};

/// The completion of a started operation: get() waits and returns its
/// result (an undefined Tensor for a send), or rethrows its error.
using Completion = std::shared_future<Tensor>;
/// A completion that is already there.
Completion completed(Tensor value);

/// A collective or message that failed because a peer died, hung or was cut
/// off (its connection closed, or the timeout passed), as opposed to a bad
/// call. In-job recovery (rtxrt/elastic/EpochBoard.h) catches exactly this.
class CommunicationError : public Error {
public:
  using Error::Error;
};

/// Exchanges tensors between the ranks of groups. Collectives are computed
/// from the exchanged inputs (rtxrt/comm/Collectives.h) unless a backend
/// computes them itself (a ring all-reduce, NCCL on the GPU).
///
/// In every call `group` lists global ranks in group order, including this
/// one, `index` is this rank's position in it, and `what` names the op for
/// error messages. Every rank of the group makes the same call.
class Communicator {
public:
  virtual ~Communicator() = default;
  /// Each rank of `group` passes a tensor of the same shape and receives all
  /// of them in group order. Host tensors only.
  virtual std::vector<Tensor> exchange(const std::vector<int64_t> &group,
                                       const Tensor &input,
                                       const std::string &what) = 0;
  /// The elementwise sum over `group` with a bandwidth-optimal algorithm
  /// (a ring), when the backend has one for this dtype; an undefined Tensor
  /// otherwise (the caller then exchanges and adds). Every rank gets the
  /// same result.
  virtual Tensor sum(const std::vector<int64_t> & /*group*/,
                     const Tensor & /*input*/, const std::string & /*what*/) {
    return Tensor();
  }
  /// Every rank's `input` back to back in group order, as one tensor of
  /// shape [n, input's shape...] written straight by the backend, when it
  /// can (Gloo's all-gather); an undefined Tensor otherwise (the caller
  /// then exchanges and concatenates, which holds n copies more).
  virtual Tensor gather(const std::vector<int64_t> & /*group*/,
                        const Tensor & /*input*/,
                        const std::string & /*what*/) {
    return Tensor();
  }
  /// True when the collectives below take GPU tensors (NCCL); otherwise the
  /// caller stages GPU tensors through host memory.
  virtual bool takesGpuTensors() const { return false; }
  /// How long a collective from now on may wait for its peers, in seconds.
  /// The communicator is created with the rendezvous timeout (ranks may
  /// start seconds apart on a loaded machine); the steps then run under
  /// --timeout, which --timeout auto sizes to the step time.
  virtual void setTimeout(double /*seconds*/) {}
  /// How this backend computes `collective` on `dtype`, for traces
  /// ("gloo ring", "exchange").
  virtual const char *algorithm(const Collective & /*collective*/,
                                DType /*dtype*/) const {
    return "exchange";
  }

  /// Runs `collective` (dispatches to the methods below).
  Tensor run(const Collective &collective, const std::vector<int64_t> &group,
             int64_t index, const Tensor &input, const std::string &what);
  /// Starts `collective` so that it overlaps the caller's work, when the
  /// backend can do so itself (NCCL: on its communication stream, ordered
  /// by CUDA events); an invalid Completion otherwise, and the caller runs
  /// it on a communication thread.
  virtual Completion start(const Collective & /*collective*/,
                           const std::vector<int64_t> & /*group*/,
                           int64_t /*index*/, const Tensor & /*input*/,
                           const std::string & /*what*/) {
    return Completion();
  }

  // The collectives of rtx's distribution ops. The defaults exchange and
  // combine on the host.
  virtual Tensor allReduce(const std::vector<int64_t> &group, int64_t index,
                           ReduceKind kind, const Tensor &input,
                           const std::string &what);
  virtual Tensor allGather(const std::vector<int64_t> &group, int64_t index,
                           int64_t dim, const Tensor &input,
                           const std::string &what);
  virtual Tensor reduceScatter(const std::vector<int64_t> &group, int64_t index,
                               ReduceKind kind, int64_t dim,
                               const Tensor &input, const std::string &what);
  virtual Tensor allToAll(const std::vector<int64_t> &group, int64_t index,
                          int64_t splitDim, int64_t concatDim,
                          const Tensor &input, const std::string &what);
  virtual Tensor broadcastFrom(const std::vector<int64_t> &group, int64_t index,
                               int64_t root, const Tensor &input,
                               const std::string &what);
  virtual Tensor permute(const std::vector<int64_t> &group, int64_t index,
                         const std::vector<int64_t> &pairs, const Tensor &input,
                         const std::string &what);

  /// Point to point (rtx.send / rtx.recv): posts a send of `input` to group
  /// rank `peer` under `tag` and returns at once; the completion is there
  /// when `input` may be reused. Sends are eager, as in rtx-run: a send
  /// never waits for its receive to be posted before the caller goes on.
  /// Messages between two ranks with the same tag arrive in the order they
  /// were sent.
  virtual Completion send(const std::vector<int64_t> &group, int64_t index,
                          int64_t peer, int64_t tag, const Tensor &input,
                          const std::string &what);
  /// Posts the receive of a tensor of `shape` and `dtype` from group rank
  /// `peer` under `tag`; the completion yields it.
  virtual Completion recv(const std::vector<int64_t> &group, int64_t index,
                          int64_t peer, int64_t tag, const Shape &shape,
                          DType dtype, const std::string &what);
  /// True when send() and recv() carry a rank's messages to itself (the
  /// in-process world's mailboxes, whose waits its deadlock detection
  /// sees); otherwise StepContext queues them itself.
  virtual bool messagesToSelf() const { return false; }
};

/// Where the ranks of one rendezvous meet: the store (`file:DIR` or
/// `redis://HOST:PORT`) and the run id that prefixes every key they write
/// there, so that a store reused by an earlier run, or by an earlier epoch
/// of in-job recovery (rtxrt/elastic/EpochBoard.h), never pairs ranks of two
/// meetings. The launcher hands the run id to the program
/// (rtxrt/elastic/LaunchEnvironment.h); an epoch's is derived from it.
struct Rendezvous {
  std::string store;
  std::string run;
};

/// One process, one rank: exchanges return the input.
std::unique_ptr<Communicator> makeLocalCommunicator();
/// Gloo over TCP, rendezvous through the store of `rendezvous`. Contexts for
/// `groups` (each a list of global ranks) are created eagerly, in order.
/// Throws Error when Gloo support was not built.
std::unique_ptr<Communicator>
makeGlooCommunicator(int64_t rank, int64_t size, const Rendezvous &rendezvous,
                     const std::vector<std::vector<int64_t>> &groups,
                     double timeoutSeconds);

} // namespace rtxrt

#endif // RTXRT_COMM_COMMUNICATOR_H
