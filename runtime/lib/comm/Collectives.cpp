//===- Collectives.cpp - what each collective computes --------------------===//

#include "rtxrt/comm/Collectives.h"

using namespace rtxrt;

Tensor rtxrt::reduceGroup(ReduceKind kind, const std::vector<Tensor> &all) {
  Tensor acc = all.front().clone();
  BinaryKind op = kind == ReduceKind::Max   ? BinaryKind::Maximum
                  : kind == ReduceKind::Min ? BinaryKind::Minimum
                                            : BinaryKind::Add;
  for (size_t i = 1; i < all.size(); ++i)
    acc = binary(op, acc, all[i]);
  if (kind == ReduceKind::Mean)
    acc = meanOfSum(acc, static_cast<int64_t>(all.size()));
  return acc;
}

Tensor rtxrt::meanOfSum(Tensor sum, int64_t n) {
  if (sum.dtype() == DType::F32) {
    // In place: a dp gradient all-reduce averages every gradient every
    // step. f32 * f32(1/n), exactly what the general path computes.
    float inverse = static_cast<float>(1.0 / static_cast<double>(n));
    float *p = sum.data<float>();
    for (int64_t i = 0, size = sum.numel(); i < size; ++i)
      p[i] *= inverse;
    return sum;
  }
  Tensor scale(sum.shape(), sum.dtype());
  for (int64_t i = 0; i < scale.numel(); ++i)
    scale.setFromDouble(i, 1.0 / static_cast<double>(n));
  return binary(BinaryKind::Mul, sum, scale);
}

Tensor rtxrt::gatherGroup(const std::vector<Tensor> &all, int64_t dim) {
  return concat(all, dim);
}

Tensor rtxrt::sliceGroup(const Tensor &input, int64_t dim, int64_t n,
                         int64_t index) {
  // Only this piece is copied (a split would make all n, most to drop).
  int64_t piece = input.dim(dim) / n;
  std::vector<int64_t> starts(input.rank(), 0);
  std::vector<int64_t> limits(input.shape().begin(), input.shape().end());
  starts[dim] = index * piece;
  limits[dim] = (index + 1) * piece;
  return slice(input, starts, limits);
}

Tensor rtxrt::reduceScatterGroup(ReduceKind kind,
                                 const std::vector<Tensor> &all, int64_t dim,
                                 int64_t index) {
  return sliceGroup(reduceGroup(kind, all), dim,
                    static_cast<int64_t>(all.size()), index);
}

Tensor rtxrt::allToAllGroup(const std::vector<Tensor> &all, int64_t splitDim,
                            int64_t concatDim, int64_t index) {
  std::vector<Tensor> received;
  for (const Tensor &source : all)
    received.push_back(
        sliceGroup(source, splitDim, static_cast<int64_t>(all.size()), index));
  return concat(received, concatDim);
}

Tensor rtxrt::permuteGroup(const std::vector<Tensor> &all,
                           const std::vector<int64_t> &pairs, int64_t index,
                           const Tensor &like) {
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    if (pairs[i + 1] == index)
      return all[pairs[i]];
  return Tensor(like.shape(), like.dtype());
}
