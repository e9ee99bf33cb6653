//===- Shape.cu - shape kernels and reductions on the GPU -----------------===//
//
// Every data movement here is one strided copy: iterate over a shape, read
// at sum(coord * srcStride) and write at sum(coord * dstStride). Transpose,
// slice and broadcast choose the source strides; concat and pad choose the
// destination's. The IR verifier has checked shapes before a program runs;
// the checks here guard the kernels' memory accesses.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"
#include "../kernels/ShapeViews.h"

#include <cstring>

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkDefined;
using rtxrt::detail::checkFloat;
using rtxrt::detail::fail;
using rtxrt::detail::normalizeDim;
using rtxrt::detail::stridesOf;
// The shape ops' views and checks, shared with the CPU kernels.
using rtxrt::detail::broadcastView;
using rtxrt::detail::checkReshape;
using rtxrt::detail::concatShape;
using rtxrt::detail::padShape;
using rtxrt::detail::reducedDims;
using rtxrt::detail::sliceView;
using rtxrt::detail::splitViews;
using rtxrt::detail::StridedView;
using rtxrt::detail::transposeView;

namespace {

template <typename E>
void stridedCopyT(const void *src, void *dst, int64_t n, Dims shape,
                  Dims srcStrides, int64_t srcBase, Dims dstStrides,
                  int64_t dstBase) {
  const E *in = static_cast<const E *>(src);
  E *out = static_cast<E *>(dst);
  forEach(
      n, RTX_GPU_BODY(int64_t i) {
        int64_t rest = i, s = srcBase, d = dstBase;
        for (int k = shape.rank - 1; k >= 0; --k) {
          int64_t coord = rest % shape.v[k];
          rest /= shape.v[k];
          s += coord * srcStrides.v[k];
          d += coord * dstStrides.v[k];
        }
        out[d] = in[s];
      });
}

/// Copies every element of the iteration `shape` from src to dst (both with
/// elements of `dtype`), at the given strides and base offsets (elements).
void stridedCopy(const std::string &op, DType dtype, const void *src, void *dst,
                 const Shape &shape, const std::vector<int64_t> &srcStrides,
                 int64_t srcBase, const std::vector<int64_t> &dstStrides,
                 int64_t dstBase) {
  int64_t n = numElements(shape);
  if (n == 0)
    return;
  Dims sh = dimsOf(op, shape), ss = dimsOf(op, srcStrides),
       ds = dimsOf(op, dstStrides);
  switch (dtypeSize(dtype)) {
  case 1:
    return stridedCopyT<uint8_t>(src, dst, n, sh, ss, srcBase, ds, dstBase);
  case 2:
    return stridedCopyT<uint16_t>(src, dst, n, sh, ss, srcBase, ds, dstBase);
  case 4:
    return stridedCopyT<uint32_t>(src, dst, n, sh, ss, srcBase, ds, dstBase);
  default:
    return stridedCopyT<uint64_t>(src, dst, n, sh, ss, srcBase, ds, dstBase);
  }
}

/// out[r] = reduction over `length` elements of row r, where element j of
/// row r sits at rowOffset(r) + inner(j); rows index the kept dimensions
/// and `inner` the reduced ones (each decomposed with its own shape).
template <typename T>
void reduceT(ReduceKind kind, const Tensor &x, Tensor &y, int64_t rows,
             int64_t length, Dims keptShape, Dims keptStrides,
             Dims reducedShape, Dims reducedStrides) {
  const T *px = static_cast<const T *>(x.raw());
  T *py = static_cast<T *>(y.raw());
  int k = static_cast<int>(kind);
  forEach(
      rows, RTX_GPU_BODY(int64_t r) {
        int64_t base = 0, rest = r;
        for (int d = keptShape.rank - 1; d >= 0; --d) {
          base += (rest % keptShape.v[d]) * keptStrides.v[d];
          rest /= keptShape.v[d];
        }
        ReduceKind kindHere = static_cast<ReduceKind>(k);
        double acc = 0.0;
        T best = T(0);
        for (int64_t j = 0; j < length; ++j) {
          int64_t offset = base, rj = j;
          for (int d = reducedShape.rank - 1; d >= 0; --d) {
            offset += (rj % reducedShape.v[d]) * reducedStrides.v[d];
            rj /= reducedShape.v[d];
          }
          T v = px[offset];
          if (kindHere == ReduceKind::Sum || kindHere == ReduceKind::Mean)
            acc += static_cast<double>(v);
          else if (j == 0)
            best = v;
          else if (kindHere == ReduceKind::Max)
            best = (v > best || v != v) ? v : best;
          else
            best = (v < best || v != v) ? v : best;
        }
        if (kindHere == ReduceKind::Sum)
          py[r] = T(acc);
        else if (kindHere == ReduceKind::Mean)
          py[r] = length ? T(acc / static_cast<double>(length)) : T(0.0 / 0.0);
        else
          py[r] = best;
      });
}

} // namespace

Tensor gpu::reshape(const Tensor &input, const Shape &shape) {
  const std::string op = "rtx.reshape";
  checkOnGpu(op, input, "input");
  checkReshape(op, input, shape);
  return view(input, shape); // kernels never write to their inputs
}

/// The elements of `view` into a new GPU tensor.
static Tensor gather(const std::string &op, const Tensor &input,
                     const StridedView &view) {
  Tensor out = empty(view.shape, input.dtype());
  stridedCopy(op, input.dtype(), input.raw(), out.raw(), view.shape,
              view.strides, view.offset, stridesOf(view.shape), 0);
  return out;
}

Tensor gpu::transpose(const Tensor &input,
                      const std::vector<int64_t> &permutation) {
  const std::string op = "rtx.transpose";
  checkOnGpu(op, input, "input");
  return gather(op, input, transposeView(op, input, permutation));
}

Tensor gpu::slice(const Tensor &input, const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &limits) {
  const std::string op = "rtx.slice";
  checkOnGpu(op, input, "input");
  return gather(op, input, sliceView(op, input, starts, limits));
}

std::vector<Tensor> gpu::split(const Tensor &input, int64_t dim,
                               const std::vector<int64_t> &sizes) {
  const std::string op = "rtx.split";
  checkOnGpu(op, input, "input");
  std::vector<Tensor> results;
  for (const StridedView &view : splitViews(op, input, dim, sizes))
    results.push_back(gather(op, input, view));
  return results;
}

Tensor gpu::concat(const std::vector<Tensor> &inputs, int64_t dim) {
  const std::string op = "rtx.concat";
  for (const Tensor &t : inputs)
    checkOnGpu(op, t, "input");
  int64_t axis = 0;
  Shape outShape = concatShape(op, inputs, dim, axis);
  const Tensor &first = inputs.front();
  Tensor out = empty(outShape, first.dtype());
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t at = 0;
  for (const Tensor &t : inputs) {
    stridedCopy(op, t.dtype(), t.raw(), out.raw(), t.shape(),
                stridesOf(t.shape()), 0, outStrides, at * outStrides[axis]);
    at += t.dim(axis);
  }
  return out;
}

Tensor gpu::broadcast(const Tensor &input, const std::vector<int64_t> &dims,
                      const Shape &resultShape) {
  const std::string op = "rtx.broadcast";
  checkOnGpu(op, input, "input");
  return gather(op, input, broadcastView(op, input, dims, resultShape));
}

Tensor gpu::pad(const Tensor &input, const std::vector<int64_t> &low,
                const std::vector<int64_t> &high) {
  const std::string op = "rtx.pad";
  checkOnGpu(op, input, "input");
  int64_t rank = input.rank();
  Shape outShape = padShape(op, input, low, high);
  Tensor out = zeros(outShape, input.dtype());
  std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d)
    base += low[d] * outStrides[d];
  stridedCopy(op, input.dtype(), input.raw(), out.raw(), input.shape(),
              stridesOf(input.shape()), 0, outStrides, base);
  return out;
}

Tensor gpu::reduce(ReduceKind kind, const Tensor &input,
                   const std::vector<int64_t> &dims, bool keepdim) {
  const std::string op = "rtx.reduce";
  checkFloat(op, input, "input");
  checkOnGpu(op, input, "input");
  int64_t rank = input.rank();
  std::vector<bool> reduced = reducedDims(op, input, dims);
  std::vector<int64_t> strides = stridesOf(input.shape());
  std::vector<int64_t> keptShape, keptStrides, reducedShape, reducedStrides;
  Shape resultShape;
  int64_t rows = 1, length = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      reducedShape.push_back(input.dim(d));
      reducedStrides.push_back(strides[d]);
      length *= input.dim(d);
      if (keepdim)
        resultShape.push_back(1);
    } else {
      keptShape.push_back(input.dim(d));
      keptStrides.push_back(strides[d]);
      resultShape.push_back(input.dim(d));
      rows *= input.dim(d);
    }
  }
  if (length == 0 && rows > 0 &&
      (kind == ReduceKind::Max || kind == ReduceKind::Min))
    fail(op, "cannot reduce an empty range: dims " + shapeToString(dims) +
                 " of input " + shapeToString(input.shape()));
  Tensor x = toCompute(input);
  Tensor y = empty(resultShape, x.dtype());
  Dims ks = dimsOf(op, keptShape), kst = dimsOf(op, keptStrides),
       rs = dimsOf(op, reducedShape), rst = dimsOf(op, reducedStrides);
  if (x.dtype() == DType::F64)
    reduceT<double>(kind, x, y, rows, length, ks, kst, rs, rst);
  else
    reduceT<float>(kind, x, y, rows, length, ks, kst, rs, rst);
  return fromCompute(y, input.dtype());
}

/// Piece `index` of n along `dim` (rtx.mesh_slice and reduce-scatter).
Tensor gpu::detail::slicePiece(const Tensor &input, int64_t dim, int64_t n,
                               int64_t index) {
  const std::string op = "rtx.mesh_slice";
  int64_t axis = normalizeDim(op, dim, input.rank());
  if (n <= 0 || input.dim(axis) % n != 0)
    fail(op, "dimension " + std::to_string(axis) + " of " +
                 shapeToString(input.shape()) + " does not split into " +
                 std::to_string(n) + " equal pieces");
  std::vector<int64_t> starts(input.rank(), 0);
  std::vector<int64_t> limits = input.shape();
  int64_t piece = input.dim(axis) / n;
  starts[axis] = index * piece;
  limits[axis] = (index + 1) * piece;
  return gpu::slice(input, starts, limits);
}
