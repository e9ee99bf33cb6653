//===- ShapeViews.cpp - argument checks and layouts of the shape ops ------===//

#include "ShapeViews.h"

#include "KernelUtils.h"

using namespace rtxrt;
using namespace rtxrt::detail;

void rtxrt::detail::checkReshape(const std::string &op, const Tensor &input,
                                 const Shape &shape) {
  for (int64_t d : shape)
    if (d < 0)
      fail(op, "negative dimension in target shape " + shapeToString(shape));
  if (numElements(shape) != input.numel())
    fail(op, "cannot reshape " + shapeToString(input.shape()) + " (" +
                 std::to_string(input.numel()) + " elements) to " +
                 shapeToString(shape) + " (" +
                 std::to_string(numElements(shape)) + " elements)");
}

StridedView
rtxrt::detail::transposeView(const std::string &op, const Tensor &input,
                             const std::vector<int64_t> &permutation) {
  int64_t rank = input.rank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    fail(op, "permutation " + shapeToString(permutation) +
                 " does not have the rank of input " +
                 shapeToString(input.shape()));
  std::vector<bool> seen(rank, false);
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      fail(op, shapeToString(permutation) + " is not a permutation of the " +
                   std::to_string(rank) + " dimensions of input " +
                   shapeToString(input.shape()));
    seen[p] = true;
  }
  std::vector<int64_t> inStrides = stridesOf(input.shape());
  StridedView view{Shape(rank), std::vector<int64_t>(rank), 0};
  for (int64_t i = 0; i < rank; ++i) {
    view.shape[i] = input.dim(permutation[i]);
    view.strides[i] = inStrides[permutation[i]];
  }
  return view;
}

StridedView rtxrt::detail::sliceView(const std::string &op, const Tensor &input,
                                     const std::vector<int64_t> &starts,
                                     const std::vector<int64_t> &limits) {
  int64_t rank = input.rank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank)
    fail(op, "starts " + shapeToString(starts) + " and limits " +
                 shapeToString(limits) + " must have the rank of input " +
                 shapeToString(input.shape()));
  StridedView view{Shape(rank), stridesOf(input.shape()), 0};
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > input.dim(d))
      fail(op, "range [" + std::to_string(starts[d]) + ", " +
                   std::to_string(limits[d]) + ") of dimension " +
                   std::to_string(d) + " is outside input " +
                   shapeToString(input.shape()));
    view.shape[d] = limits[d] - starts[d];
    view.offset += starts[d] * view.strides[d];
  }
  return view;
}

StridedView rtxrt::detail::broadcastView(const std::string &op,
                                         const Tensor &input,
                                         const std::vector<int64_t> &dims,
                                         const Shape &resultShape) {
  int64_t rank = static_cast<int64_t>(resultShape.size());
  if (static_cast<int64_t>(dims.size()) != input.rank())
    fail(op, "dims " + shapeToString(dims) +
                 " must name one result "
                 "dimension per dimension of input " +
                 shapeToString(input.shape()));
  std::vector<int64_t> inStrides = stridesOf(input.shape());
  // New dimensions repeat: stride 0.
  StridedView view{resultShape, std::vector<int64_t>(rank, 0), 0};
  for (int64_t i = 0; i < input.rank(); ++i) {
    int64_t r = dims[i];
    if (r < 0 || r >= rank || (i > 0 && r <= dims[i - 1]))
      fail(op, "dims " + shapeToString(dims) +
                   " must be strictly increasing "
                   "and inside result " +
                   shapeToString(resultShape));
    if (input.dim(i) != resultShape[r] && input.dim(i) != 1)
      fail(op, "input dimension " + std::to_string(i) + " of " +
                   shapeToString(input.shape()) + " has size " +
                   std::to_string(input.dim(i)) + ", neither 1 nor result " +
                   "dimension " + std::to_string(r) + " of " +
                   shapeToString(resultShape));
    view.strides[r] = input.dim(i) == 1 ? 0 : inStrides[i];
  }
  for (int64_t d : resultShape)
    if (d < 0)
      fail(op, "negative dimension in result " + shapeToString(resultShape));
  return view;
}

std::vector<StridedView>
rtxrt::detail::splitViews(const std::string &op, const Tensor &input,
                          int64_t dim, const std::vector<int64_t> &sizes) {
  int64_t axis = normalizeDim(op, dim, input.rank());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      fail(op, "negative size in " + shapeToString(sizes));
    total += s;
  }
  if (total != input.dim(axis))
    fail(op, "sizes " + shapeToString(sizes) + " add up to " +
                 std::to_string(total) + ", not to dimension " +
                 std::to_string(axis) + " of input " +
                 shapeToString(input.shape()));
  std::vector<StridedView> views;
  std::vector<int64_t> starts(input.rank(), 0);
  std::vector<int64_t> limits = input.shape();
  for (int64_t s : sizes) {
    limits[axis] = starts[axis] + s;
    views.push_back(sliceView(op, input, starts, limits));
    starts[axis] = limits[axis];
  }
  return views;
}

Shape rtxrt::detail::concatShape(const std::string &op,
                                 const std::vector<Tensor> &inputs, int64_t dim,
                                 int64_t &axis) {
  if (inputs.empty())
    fail(op, "needs at least one input");
  const Tensor &first = inputs.front();
  axis = normalizeDim(op, dim, first.rank());
  Shape outShape = first.shape();
  outShape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &t = inputs[i];
    if (t.dtype() != first.dtype())
      fail(op, "input " + std::to_string(i) + " is " + dtypeName(t.dtype()) +
                   " but input 0 is " + dtypeName(first.dtype()));
    bool compatible = t.rank() == first.rank();
    for (int64_t d = 0; compatible && d < t.rank(); ++d)
      compatible = d == axis || t.dim(d) == first.dim(d);
    if (!compatible)
      fail(op, "input " + std::to_string(i) + " " + shapeToString(t.shape()) +
                   " differs from input 0 " + shapeToString(first.shape()) +
                   " outside dimension " + std::to_string(axis));
    outShape[axis] += t.dim(axis);
  }
  return outShape;
}

Shape rtxrt::detail::padShape(const std::string &op, const Tensor &input,
                              const std::vector<int64_t> &low,
                              const std::vector<int64_t> &high) {
  int64_t rank = input.rank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    fail(op, "low " + shapeToString(low) + " and high " + shapeToString(high) +
                 " must have the rank of input " +
                 shapeToString(input.shape()));
  Shape outShape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0)
      fail(op, "padding (" + std::to_string(low[d]) + ", " +
                   std::to_string(high[d]) + ") of dimension " +
                   std::to_string(d) + " must be non-negative");
    if (__builtin_add_overflow(low[d], input.dim(d), &outShape[d]) ||
        __builtin_add_overflow(outShape[d], high[d], &outShape[d]))
      fail(op, "padded size of dimension " + std::to_string(d) + " of input " +
                   shapeToString(input.shape()) + " overflows");
  }
  return outShape;
}

std::vector<bool> rtxrt::detail::reducedDims(const std::string &op,
                                             const Tensor &input,
                                             const std::vector<int64_t> &dims) {
  int64_t rank = input.rank();
  std::vector<bool> reduced(rank, false);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank || (i > 0 && dims[i] <= dims[i - 1]))
      fail(op, "dims " + shapeToString(dims) +
                   " must be strictly increasing dimensions of input " +
                   shapeToString(input.shape()));
    reduced[dims[i]] = true;
  }
  return reduced;
}
