//===- Store.h - rendezvous stores for the process groups -------*- C++ -*-===//
//
// Private to librtxrt: Gloo's FileStore or rtx's RedisStore (with timeouts)
// from a `file:DIR` or `redis://HOST:PORT` spec, with keys prefixed by the
// rendezvous' run id so a store reused by an earlier run never pairs ranks
// of different runs. Both the Gloo and the NCCL process groups rendezvous through
// it.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMM_STORE_H
#define RTXRT_LIB_COMM_STORE_H

#include "rtxrt/comm/Communicator.h"

#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rtxrt {
namespace detail {

/// The store and its per-run view.
struct RunStore {
  std::unique_ptr<gloo::rendezvous::Store> store;
  std::unique_ptr<gloo::rendezvous::PrefixStore> run;
};

/// Opens `spec`; throws rtxrt::Error naming the spec when it is malformed
/// or unreachable. A Redis store's connection and commands time out after
/// `timeoutSeconds` (RedisStore.h).
RunStore openRunStore(const Rendezvous &rendezvous,
                      double timeoutSeconds = 60);

/// "[0,2,4]": a group of global ranks, for store keys and messages.
std::string groupName(const std::vector<int64_t> &group);

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_COMM_STORE_H
