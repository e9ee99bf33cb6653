//===- ShapeViews.h - argument checks and layouts of the shape ops -*- C++
//-*-===//
//
// Private to librtxrt. transpose, slice and broadcast read their input
// through a strided view; concat, split and pad only need their result's
// shape. The CPU kernels (kernels/Shape.cpp) and the GPU kernels
// (gpu/Shape.cu) build them here, so both check their arguments in one place
// and report bad input with the same messages; each device then moves the
// data its own way.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_KERNELS_SHAPEVIEWS_H
#define RTXRT_LIB_KERNELS_SHAPEVIEWS_H

#include "rtxrt/core/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rtxrt {
namespace detail {

/// result[idx] = input[offset + sum_d idx[d] * strides[d]] for every index
/// of `shape` (a stride of 0 repeats an element).
struct StridedView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// rtx.reshape: the element counts agree and no dimension is negative.
void checkReshape(const std::string &op, const Tensor &input,
                  const Shape &shape);
/// rtx.transpose: result dimension i is input dimension permutation[i].
StridedView transposeView(const std::string &op, const Tensor &input,
                          const std::vector<int64_t> &permutation);
/// rtx.slice: input[starts[d] : limits[d]] in every dimension d.
StridedView sliceView(const std::string &op, const Tensor &input,
                      const std::vector<int64_t> &starts,
                      const std::vector<int64_t> &limits);
/// rtx.broadcast: input dimension i becomes result dimension dims[i].
StridedView broadcastView(const std::string &op, const Tensor &input,
                          const std::vector<int64_t> &dims,
                          const Shape &resultShape);
/// rtx.split: the sizes are non-negative and add up to dimension `dim`;
/// returns the views of the pieces, in order.
std::vector<StridedView> splitViews(const std::string &op, const Tensor &input,
                                    int64_t dim,
                                    const std::vector<int64_t> &sizes);
/// rtx.concat: the inputs share a dtype and every dimension but `dim`;
/// returns the result's shape and sets `axis` to `dim` normalised.
Shape concatShape(const std::string &op, const std::vector<Tensor> &inputs,
                  int64_t dim, int64_t &axis);
/// rtx.pad: the result's shape, low[d] + input.dim(d) + high[d].
Shape padShape(const std::string &op, const Tensor &input,
               const std::vector<int64_t> &low,
               const std::vector<int64_t> &high);
/// rtx.reduce: dims are strictly increasing dimensions of the input;
/// returns, per input dimension, whether it is reduced.
std::vector<bool> reducedDims(const std::string &op, const Tensor &input,
                              const std::vector<int64_t> &dims);

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_KERNELS_SHAPEVIEWS_H
