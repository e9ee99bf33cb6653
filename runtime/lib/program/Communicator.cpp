//===- Communicator.cpp - process groups' collectives by exchange ---------===//

#include "rtxrt/Program.h"

#include "rtxrt/Collectives.h"

using namespace rtxrt;

namespace {
class LocalCommunicator : public Communicator {
public:
  std::vector<Tensor> exchange(const std::vector<int64_t> &, const Tensor &t,
                               const std::string &) override {
    return {t};
  }
};
} // namespace

std::unique_ptr<Communicator> rtxrt::makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

#ifndef RTXRT_HAVE_GLOO
std::unique_ptr<Communicator>
rtxrt::makeGlooCommunicator(int64_t, int64_t, const std::string &,
                            const std::vector<std::vector<int64_t>> &, double) {
  throw Error("this runtime was built without Gloo (install libgloo-dev): "
              "it runs on one rank only");
}
#endif

//===----------------------------------------------------------------------===//
// Communicator: collectives by exchange
//===----------------------------------------------------------------------===//

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
Tensor Communicator::allGather(const std::vector<int64_t> &group, int64_t,
                               int64_t dim, const Tensor &t,
                               const std::string &what) {
  return gatherGroup(exchange(group, t, what), dim);
}
Tensor Communicator::reduceScatter(const std::vector<int64_t> &group,
                                   int64_t index, ReduceKind kind, int64_t dim,
                                   const Tensor &t, const std::string &what) {
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

