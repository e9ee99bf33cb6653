//===- KernelUtils.cpp - helpers shared by the CPU kernels ----------------===//
//
// The shard-to-global index mapping used by dropout and initParameter, and
// the thread-count controls.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"

#include "rtxrt/Kernels.h"

using namespace rtxrt;
using namespace rtxrt::detail;

GlobalIndexer::GlobalIndexer(const std::string &op, const Shape &localShape,
                             const Shape &globalShape,
                             const std::vector<int64_t> &globalOffsets) {
  if (globalShape.empty() && globalOffsets.empty())
    return;
  std::vector<int64_t> offs = globalOffsets;
  if (offs.empty())
    offs.assign(localShape.size(), 0);
  if (globalShape.size() != localShape.size() ||
      offs.size() != localShape.size())
    fail(op, "shard " + shapeToString(localShape) + " at offsets " +
                 shapeToString(offs) +
                 " does not match the rank of global "
                 "shape " +
                 shapeToString(globalShape));
  for (size_t d = 0; d < localShape.size(); ++d)
    if (offs[d] < 0 || offs[d] + localShape[d] > globalShape[d])
      fail(op, "shard " + shapeToString(localShape) + " at offsets " +
                   shapeToString(offs) + " does not fit in global shape " +
                   shapeToString(globalShape) + " (dimension " +
                   std::to_string(d) + ")");
  // A shard that covers the whole tensor needs no mapping.
  if (localShape == globalShape)
    return;
  identity = false;
  local = localShape;
  offsets = offs;
  globalStrides = stridesOf(globalShape);
}

void rtxrt::setNumThreads(int numThreads) {
  if (numThreads < 1)
    throw Error("setNumThreads: thread count " + std::to_string(numThreads) +
                " must be at least 1");
#ifdef _OPENMP
  omp_set_num_threads(numThreads);
#endif
  // OpenBLAS stays on one thread (Blas.h): rtxrt parallelises GEMMs itself.
}

int rtxrt::getNumThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
