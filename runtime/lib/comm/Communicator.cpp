//===- Communicator.cpp - process groups' collectives by exchange ---------===//

#include "rtxrt/comm/Communicator.h"

#include "rtxrt/comm/Collectives.h"

#include "core/Faults.h"

#include <future>
#include <map>

using namespace rtxrt;

namespace {
/// One rank: exchanges return the input.
class LocalCommunicator : public Communicator {
public:
  std::vector<Tensor> exchange(const std::vector<int64_t> &, const Tensor &t,
                               const std::string &) override {
    return {t};
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Collective
//===----------------------------------------------------------------------===//

Collective Collective::allReduce(ReduceKind reduce) {
  Collective c;
  c.kind = Kind::AllReduce;
  c.reduce = reduce;
  return c;
}
Collective Collective::allGather(int64_t dim) {
  Collective c;
  c.kind = Kind::AllGather;
  c.dim = dim;
  return c;
}
Collective Collective::reduceScatter(ReduceKind reduce, int64_t dim) {
  Collective c;
  c.kind = Kind::ReduceScatter;
  c.reduce = reduce;
  c.dim = dim;
  return c;
}
Collective Collective::allToAll(int64_t splitDim, int64_t concatDim) {
  Collective c;
  c.kind = Kind::AllToAll;
  c.dim = splitDim;
  c.concatDim = concatDim;
  return c;
}
Collective Collective::broadcastFrom(int64_t root) {
  Collective c;
  c.kind = Kind::BroadcastFrom;
  c.root = root;
  return c;
}
Collective Collective::permute(std::vector<int64_t> pairs) {
  Collective c;
  c.kind = Kind::Permute;
  c.pairs = std::move(pairs);
  return c;
}
const char *Collective::name() const {
  switch (kind) {
  case Kind::AllReduce:
    return "all_reduce";
  case Kind::AllGather:
    return "all_gather";
  case Kind::ReduceScatter:
    return "reduce_scatter";
  case Kind::AllToAll:
    return "all_to_all";
  case Kind::BroadcastFrom:
    return "broadcast_from";
  case Kind::Permute:
    return "permute";
  }
  return "collective";
}

Completion rtxrt::completed(Tensor value) {
  std::promise<Tensor> promise;
  promise.set_value(std::move(value));
  return promise.get_future().share();
}

std::unique_ptr<Communicator> rtxrt::makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

#ifndef RTXRT_HAVE_GLOO
std::unique_ptr<Communicator>
rtxrt::makeGlooCommunicator(int64_t, int64_t, const Rendezvous &,
                            const std::vector<std::vector<int64_t>> &, double) {
  throw Error("this runtime was built without Gloo (install libgloo-dev): "
              "it runs on one rank only");
}
#endif

//===----------------------------------------------------------------------===//
// Communicator: collectives by exchange
//===----------------------------------------------------------------------===//

Tensor Communicator::run(const Collective &c, const std::vector<int64_t> &group,
                         int64_t index, const Tensor &t,
                         const std::string &what) {
  sleepMs(Faults::get().commDelayMs); // a test's slow link
  switch (c.kind) {
  case Collective::Kind::AllReduce:
    return allReduce(group, index, c.reduce, t, what);
  case Collective::Kind::AllGather:
    return allGather(group, index, c.dim, t, what);
  case Collective::Kind::ReduceScatter:
    return reduceScatter(group, index, c.reduce, c.dim, t, what);
  case Collective::Kind::AllToAll:
    return allToAll(group, index, c.dim, c.concatDim, t, what);
  case Collective::Kind::BroadcastFrom:
    return broadcastFrom(group, index, c.root, t, what);
  case Collective::Kind::Permute:
    return permute(group, index, c.pairs, t, what);
  }
  throw Error(what + ": unknown collective");
}

Completion Communicator::send(const std::vector<int64_t> &, int64_t, int64_t,
                              int64_t, const Tensor &,
                              const std::string &what) {
  throw Error(what + ": this process group backend has no point-to-point "
                     "messages");
}
Completion Communicator::recv(const std::vector<int64_t> &, int64_t, int64_t,
                              int64_t, const Shape &, DType,
                              const std::string &what) {
  throw Error(what + ": this process group backend has no point-to-point "
                     "messages");
}

Tensor Communicator::allReduce(const std::vector<int64_t> &group, int64_t,
                               ReduceKind kind, const Tensor &t,
                               const std::string &what) {
  if (kind == ReduceKind::Sum || kind == ReduceKind::Mean) {
    if (Tensor total = sum(group, t, what); total.defined()) {
      if (kind == ReduceKind::Sum)
        return total;
      return meanOfSum(total, static_cast<int64_t>(group.size()));
    }
  }
  return reduceGroup(kind, exchange(group, t, what));
}
/// Are the pieces along `dim` of `shape` contiguous (every dimension before
/// it 1)? Then concatenating or splitting along it is back to back.
static bool leadingDimsAreOne(const Shape &shape, int64_t dim) {
  for (int64_t d = 0; d < dim; ++d)
    if (shape[d] != 1)
      return false;
  return true;
}

Tensor Communicator::allGather(const std::vector<int64_t> &group, int64_t,
                               int64_t dim, const Tensor &t,
                               const std::string &what) {
  // Gathered straight into the result (a flat buffer's gather: ZeRO-3).
  if (group.size() > 1 && leadingDimsAreOne(t.shape(), dim))
    if (Tensor all = gather(group, t, what); all.defined()) {
      Shape shape = t.shape();
      shape[dim] *= static_cast<int64_t>(group.size());
      return all.reshaped(shape);
    }
  return gatherGroup(exchange(group, t, what), dim);
}
Tensor Communicator::reduceScatter(const std::vector<int64_t> &group,
                                   int64_t index, ReduceKind kind, int64_t dim,
                                   const Tensor &t, const std::string &what) {
  // A sum by the backend's ring, then this rank's piece: one copy of the
  // input in flight instead of n (a flat gradient buffer: ZeRO-2 and 3).
  // rtx-plan-memory counts that copy (rtx/Analysis/MemoryPlan.h).
  if ((kind == ReduceKind::Sum || kind == ReduceKind::Mean) &&
      leadingDimsAreOne(t.shape(), dim))
    if (Tensor total = sum(group, t, what); total.defined()) {
      int64_t n = static_cast<int64_t>(group.size());
      Tensor piece = sliceGroup(total, dim, n, index);
      total = Tensor();
      return kind == ReduceKind::Sum ? piece : meanOfSum(piece, n);
    }
  return reduceScatterGroup(kind, exchange(group, t, what), dim, index);
}
Tensor Communicator::allToAll(const std::vector<int64_t> &group, int64_t index,
                              int64_t splitDim, int64_t concatDim,
                              const Tensor &t, const std::string &what) {
  return allToAllGroup(exchange(group, t, what), splitDim, concatDim, index);
}
Tensor Communicator::broadcastFrom(const std::vector<int64_t> &group, int64_t,
                                   int64_t root, const Tensor &t,
                                   const std::string &what) {
  return exchange(group, t, what).at(root);
}
Tensor Communicator::permute(const std::vector<int64_t> &group, int64_t index,
                             const std::vector<int64_t> &pairs, const Tensor &t,
                             const std::string &what) {
  return permuteGroup(exchange(group, t, what), pairs, index, t);
}
