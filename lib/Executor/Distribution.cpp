//===- Distribution.cpp - shardings of rtx values as runtime blocks -------===//

#include "Distribution.h"

using namespace mlir;
using namespace mlir::rtx;

rtxrt::Sharding mlir::rtx::toRuntimeSharding(ShardingAttr attr) {
  rtxrt::Sharding sharding;
  if (!attr)
    return sharding;
  for (int64_t d = 0; d < attr.getRank(); ++d) {
    sharding.dims.emplace_back();
    for (StringRef axis : attr.getDimAxes(d))
      sharding.dims.back().push_back(axis.str());
  }
  for (StringRef axis : attr.getPartialAxes())
    sharding.partial.push_back(axis.str());
  return sharding;
}
