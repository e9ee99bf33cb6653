//===- Shape.cpp - reshape, transpose, slice, split, concat, broadcast ----===//
//
// Data movement only, so every kernel works on raw elements of any dtype.
// transpose, slice and broadcast are one strided gather: the result is
// walked in row-major order and each result dimension has a stride into the
// input (0 for a broadcast dimension).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"
#include "ShapeViews.h"

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

/// The elements of `view` into a new tensor.
Tensor gather(const Tensor &input, const StridedView &view) {
  const Shape &outShape = view.shape;
  const std::vector<int64_t> &inStrides = view.strides;
  int64_t base = view.offset;
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
  checkReshape(op, input, shape);
  // Row-major reshape moves no data: the result shares the input's buffer
  // (kernels never write to their inputs).
  return input.reshaped(shape);
}

Tensor rtxrt::transpose(const Tensor &input,
                        const std::vector<int64_t> &permutation) {
  const std::string op = "rtx.transpose";
  checkDefined(op, input, "input");
  return gather(input, transposeView(op, input, permutation));
}

Tensor rtxrt::slice(const Tensor &input, const std::vector<int64_t> &starts,
                    const std::vector<int64_t> &limits) {
  const std::string op = "rtx.slice";
  checkDefined(op, input, "input");
  return gather(input, sliceView(op, input, starts, limits));
}

std::vector<Tensor> rtxrt::split(const Tensor &input, int64_t dim,
                                 const std::vector<int64_t> &sizes) {
  const std::string op = "rtx.split";
  checkDefined(op, input, "input");
  std::vector<Tensor> results;
  for (const StridedView &view : splitViews(op, input, dim, sizes))
    results.push_back(gather(input, view));
  return results;
}

Tensor rtxrt::concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const std::string op = "rtx.concat";
  for (const Tensor &t : inputs)
    checkDefined(op, t, "input");
  int64_t axis = 0;
  Shape outShape = concatShape(op, inputs, dim, axis);
  const Tensor &first = inputs.front();
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
  return gather(input, broadcastView(op, input, dims, resultShape));
}
