//===- Collectives.h - what each collective computes ------------*- C++ -*-===//
//
// The meaning of every collective, given the inputs of all ranks of a group
// in group order (what an all-gather of the inputs provides). rtx-run's
// in-process ranks and emitted programs exchange the inputs differently but
// compute the results here, in one place, in a fixed order.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_COLLECTIVES_H
#define RTXRT_COLLECTIVES_H

#include "rtxrt/kernels/Kernels.h"

#include <vector>

namespace rtxrt {

/// Elementwise sum, mean, max or min of the group's tensors, in group order.
Tensor reduceGroup(ReduceKind kind, const std::vector<Tensor> &all);
/// sum / n, elementwise; `sum` must be a fresh tensor (f32 is scaled in
/// place).
Tensor meanOfSum(Tensor sum, int64_t n);
/// The group's tensors concatenated along `dim`.
Tensor gatherGroup(const std::vector<Tensor> &all, int64_t dim);
/// Piece `index` of n along `dim` of the reduction.
Tensor reduceScatterGroup(ReduceKind kind, const std::vector<Tensor> &all,
                          int64_t dim, int64_t index);
/// Piece `index` of every rank's input split along `splitDim`, concatenated
/// along `concatDim`.
Tensor allToAllGroup(const std::vector<Tensor> &all, int64_t splitDim,
                     int64_t concatDim, int64_t index);
/// What group rank `index` receives from source -> target `pairs` (flat);
/// zeros of `like`'s shape when it is no target.
Tensor permuteGroup(const std::vector<Tensor> &all,
                    const std::vector<int64_t> &pairs, int64_t index,
                    const Tensor &like);
/// Piece `index` of n along `dim` of a replicated tensor.
Tensor sliceGroup(const Tensor &input, int64_t dim, int64_t n, int64_t index);

} // namespace rtxrt

#endif // RTXRT_COLLECTIVES_H
