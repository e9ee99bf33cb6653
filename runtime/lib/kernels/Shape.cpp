//===- Shape.cpp - reshape, transpose, slice, split, concat, broadcast ----===//
//
// Data movement only, so every kernel works on raw elements of any dtype.
// transpose, slice and broadcast are one strided gather: the result is
// walked in row-major order and each result dimension has a stride into the
// input (0 for a broadcast dimension).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/Kernels.h"

#include "KernelUtils.h"

#include <cstring>

using namespace rtxrt;
using namespace rtxrt::detail;

namespace {

template <typename E>
void gatherTyped(const E *in, E *out, const Shape &outShape,
                 const std::vector<int64_t> &inStrides, int64_t base) {
  int64_t rank = static_cast<int64_t>(outShape.size());
  if (rank == 0) {
    out[0] = in[base];
    return;
  }
  int64_t last = outShape.back();
  int64_t lastStride = inStrides.back();
  int64_t rows = last ? numElements(outShape) / last : 0;
  parallelFor(rows, rowGrain(last), [&](int64_t begin, int64_t end) {
    // The multi-index of the chunk's first row, by division once; then it
    // is stepped like an odometer rather than divided out again per row.
    std::vector<int64_t> index(rank - 1, 0);
    int64_t offset = base, rem = begin;
    for (int64_t d = rank - 2; d >= 0; --d) {
      index[d] = rem % outShape[d];
      rem /= outShape[d];
      offset += index[d] * inStrides[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      E *dst = out + r * last;
      const E *src = in + offset;
      if (lastStride == 1)
        std::memcpy(dst, src, last * sizeof(E));
      else
        for (int64_t j = 0; j < last; ++j)
          dst[j] = src[j * lastStride];
      for (int64_t d = rank - 2; d >= 0; --d) {
        offset += inStrides[d];
        if (++index[d] < outShape[d])
          break;
        offset -= index[d] * inStrides[d];
        index[d] = 0;
      }
    }
  });
}

/// result[idx] = input[base + sum_d idx[d] * inStrides[d]].
Tensor gather(const Tensor &input, const Shape &outShape,
              const std::vector<int64_t> &inStrides, int64_t base) {
  Tensor out = Tensor::uninitialized(outShape, input.dtype());
  if (out.numel() == 0)
    return out;
  switch (dtypeSize(input.dtype())) {
  case 1:
    gatherTyped(static_cast<const uint8_t *>(input.raw()),
                static_cast<uint8_t *>(out.raw()), outShape, inStrides, base);
    break;
  case 2:
    gatherTyped(static_cast<const uint16_t *>(input.raw()),
                static_cast<uint16_t *>(out.raw()), outShape, inStrides, base);
    break;
  case 4:
    gatherTyped(static_cast<const uint32_t *>(input.raw()),
                static_cast<uint32_t *>(out.raw()), outShape, inStrides, base);
    break;
  default:
    gatherTyped(static_cast<const uint64_t *>(input.raw()),
                static_cast<uint64_t *>(out.raw()), outShape, inStrides, base);
    break;
  }
  return out;
}

} // namespace

Tensor rtxrt::reshape(const Tensor &input, const Shape &shape) {
  const std::string op = "rtx.reshape";
  checkDefined(op, input, "input");
  for (int64_t d : shape)
    if (d < 0)
      fail(op, "negative dimension in target shape " + shapeToString(shape));
  if (numElements(shape) != input.numel())
    fail(op, "cannot reshape " + shapeToString(input.shape()) + " (" +
                 std::to_string(input.numel()) + " elements) to " +
                 shapeToString(shape) + " (" +
                 std::to_string(numElements(shape)) + " elements)");
  // Row-major reshape moves no data: the result shares the input's buffer
  // (kernels never write to their inputs).
  return input.reshaped(shape);
}

Tensor rtxrt::transpose(const Tensor &input,
                        const std::vector<int64_t> &permutation) {
  const std::string op = "rtx.transpose";
  checkDefined(op, input, "input");
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
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = input.dim(permutation[i]);
    strides[i] = inStrides[permutation[i]];
  }
  return gather(input, outShape, strides, 0);
}

Tensor rtxrt::slice(const Tensor &input, const std::vector<int64_t> &starts,
                    const std::vector<int64_t> &limits) {
  const std::string op = "rtx.slice";
  checkDefined(op, input, "input");
  int64_t rank = input.rank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank)
    fail(op, "starts " + shapeToString(starts) + " and limits " +
                 shapeToString(limits) + " must have the rank of input " +
                 shapeToString(input.shape()));
  std::vector<int64_t> strides = stridesOf(input.shape());
  Shape outShape(rank);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > input.dim(d))
      fail(op, "range [" + std::to_string(starts[d]) + ", " +
                   std::to_string(limits[d]) + ") of dimension " +
                   std::to_string(d) + " is outside input " +
                   shapeToString(input.shape()));
    outShape[d] = limits[d] - starts[d];
    base += starts[d] * strides[d];
  }
  if (numElements(outShape) == 0)
    return Tensor(outShape, input.dtype());
  return gather(input, outShape, strides, base);
}

std::vector<Tensor> rtxrt::split(const Tensor &input, int64_t dim,
                                 const std::vector<int64_t> &sizes) {
  const std::string op = "rtx.split";
  checkDefined(op, input, "input");
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
  std::vector<Tensor> results;
  std::vector<int64_t> starts(input.rank(), 0);
  std::vector<int64_t> limits = input.shape();
  int64_t offset = 0;
  for (int64_t s : sizes) {
    starts[axis] = offset;
    limits[axis] = offset + s;
    results.push_back(slice(input, starts, limits));
    offset += s;
  }
  return results;
}

Tensor rtxrt::concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const std::string op = "rtx.concat";
  if (inputs.empty())
    fail(op, "needs at least one input");
  for (const Tensor &t : inputs)
    checkDefined(op, t, "input");
  const Tensor &first = inputs.front();
  int64_t axis = normalizeDim(op, dim, first.rank());
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
  Tensor out = Tensor::uninitialized(outShape, first.dtype());
  size_t esize = dtypeSize(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= outShape[d];
  for (int64_t d = axis + 1; d < first.rank(); ++d)
    inner *= outShape[d];
  // Each output row (one outer index) is the inputs' rows side by side.
  size_t outRowBytes = static_cast<size_t>(outShape[axis] * inner) * esize;
  auto *dst = static_cast<unsigned char *>(out.raw());
  parallelFor(
      outer, rowGrain(outShape[axis] * inner), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          size_t at = o * outRowBytes;
          for (const Tensor &t : inputs) {
            size_t rowBytes = static_cast<size_t>(t.dim(axis) * inner) * esize;
            if (rowBytes)
              std::memcpy(dst + at,
                          static_cast<const unsigned char *>(t.raw()) +
                              o * rowBytes,
                          rowBytes);
            at += rowBytes;
          }
        }
      });
  return out;
}

Tensor rtxrt::broadcast(const Tensor &input, const std::vector<int64_t> &dims,
                        const Shape &resultShape) {
  const std::string op = "rtx.broadcast";
  checkDefined(op, input, "input");
  int64_t rank = static_cast<int64_t>(resultShape.size());
  if (static_cast<int64_t>(dims.size()) != input.rank())
    fail(op, "dims " + shapeToString(dims) +
                 " must name one result "
                 "dimension per dimension of input " +
                 shapeToString(input.shape()));
  std::vector<int64_t> inStrides = stridesOf(input.shape());
  std::vector<int64_t> strides(rank, 0); // new dimensions repeat: stride 0
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
    strides[r] = input.dim(i) == 1 ? 0 : inStrides[i];
  }
  for (int64_t d : resultShape)
    if (d < 0)
      fail(op, "negative dimension in result " + shapeToString(resultShape));
  return gather(input, resultShape, strides, 0);
}
