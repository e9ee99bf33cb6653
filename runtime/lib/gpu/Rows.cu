//===- Rows.cu - normalisation, softmax, rope, embedding, cross-entropy ---===//
//
// Row kernels: one body owns a whole row and accumulates its statistics in
// double, as the CPU kernels do (runtime/lib/kernels/Normalization*.cpp,
// EmbeddingLoss*.cpp); softmax, its gradient and cross-entropy run the CPU
// kernels' own row functions (runtime/lib/common/ElementMath.h). Sums
// across rows (the gradients of scale and bias, the embedding scatter-add,
// the mean loss) are one body per output element looping over the rows in
// order: deterministic, with no atomics.
//
// In the CUDA build, when gpu::useFastKernels(), layernorm, rmsnorm, their
// gradients, softmax and its gradient over the last dimension, and
// cross-entropy and its gradient run the fast kernels (fast/RowsFast.cu) for
// f32/bf16/f16 operands; the other cases (f64, a softmax over an inner
// dimension, the vocabulary-parallel pieces, rope, embedding) run the bodies
// below (docs/gpu.md lists them).
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.h"
#include "Portable.h"

#include "../kernels/KernelUtils.h"

#include <cmath>
#include <initializer_list>

#if defined(__CUDACC__)
#include "fast/MemoryBound.h"
#endif

using namespace rtxrt;
using namespace rtxrt::gpu::detail;
using rtxrt::detail::checkEmbeddingGradArguments;
using rtxrt::detail::checkFeatureVector;
using rtxrt::detail::checkFloat;
using rtxrt::detail::checkInteger;
using rtxrt::detail::checkNormArguments;
using rtxrt::detail::checkNormGradArguments;
using rtxrt::detail::checkSameDType;
using rtxrt::detail::checkSameShape;
using rtxrt::detail::fail;
using rtxrt::detail::normalizeDim;

namespace {

/// Mean and 1/std (layernorm) or 1/rms (rmsnorm) of each row, in double,
/// by the CPU kernels' row function.
template <typename T>
void rowStatisticsT(const Tensor &x, int64_t rows, int64_t d, double epsilon,
                    bool centred, Tensor &mean, Tensor &rstd) {
  mean = empty({rows}, DType::F64);
  rstd = empty({rows}, DType::F64);
  const T *px = static_cast<const T *>(x.raw());
  double *pm = static_cast<double *>(mean.raw());
  double *pr = static_cast<double *>(rstd.raw());
  forEach(
      rows, RTX_GPU_BODY(int64_t r) {
        math::normStatistics(px + r * d, d, epsilon, centred, pm[r], pr[r]);
      });
}

void rowStatistics(const Tensor &x, int64_t rows, int64_t d, double epsilon,
                   bool centred, Tensor &mean, Tensor &rstd) {
  RTX_GPU_COMPUTE(x.dtype(), rowStatisticsT, x, rows, d, epsilon, centred, mean,
                  rstd);
}

template <typename T>
void normalizeT(const Tensor &x, const Tensor &g, const Tensor &b,
                const Tensor &mean, const Tensor &rstd, Tensor &y, int64_t d,
                bool layerNorm) {
  const T *px = static_cast<const T *>(x.raw());
  const T *pg = static_cast<const T *>(g.raw());
  const T *pb = b.defined() ? static_cast<const T *>(b.raw()) : nullptr;
  const double *pm = static_cast<const double *>(mean.raw());
  const double *pr = static_cast<const double *>(rstd.raw());
  T *py = static_cast<T *>(y.raw());
  forEach(
      x.numel(), RTX_GPU_BODY(int64_t e) {
        int64_t r = e / d, i = e % d;
        if (layerNorm)
          py[e] = pb ? math::layerNormValue(px[e], pm[r], pr[r], pg[i], pb[i])
                     : math::layerNormValue(px[e], pm[r], pr[r], pg[i]);
        else
          py[e] = math::rmsNormValue(px[e], T(pr[r]), pg[i]);
      });
}

template <typename T>
void normGradT(const Tensor &x, const Tensor &g, const Tensor &dy,
               const Tensor &mean, const Tensor &rstd, Tensor &dx,
               Tensor &dscale, Tensor &dbias, int64_t rows, int64_t d,
               bool layerNorm) {
  const T *px = static_cast<const T *>(x.raw());
  const T *pg = static_cast<const T *>(g.raw());
  const T *pdy = static_cast<const T *>(dy.raw());
  const double *pm = static_cast<const double *>(mean.raw());
  const double *pr = static_cast<const double *>(rstd.raw());
  T *pdx = static_cast<T *>(dx.raw());
  forEach(
      rows, RTX_GPU_BODY(int64_t r) {
        const T *xr = px + r * d, *dyr = pdy + r * d;
        T *dxr = pdx + r * d;
        double m = pm[r], s = pr[r];
        if (layerNorm) {
          double sumG = 0.0, sumGX = 0.0;
          for (int64_t i = 0; i < d; ++i) {
            double gi = static_cast<double>(dyr[i]) * pg[i];
            sumG += gi;
            sumGX += gi * (xr[i] - m) * s;
          }
          double meanG = sumG / static_cast<double>(d);
          double meanGX = sumGX / static_cast<double>(d);
          for (int64_t i = 0; i < d; ++i)
            dxr[i] = T(s * (static_cast<double>(dyr[i]) * pg[i] - meanG -
                            (xr[i] - m) * s * meanGX));
        } else {
          double sumGX = 0.0;
          for (int64_t i = 0; i < d; ++i)
            sumGX += static_cast<double>(dyr[i]) * pg[i] * xr[i];
          double k = s * s * s * sumGX / static_cast<double>(d);
          for (int64_t i = 0; i < d; ++i)
            dxr[i] = T(s * static_cast<double>(dyr[i]) * pg[i] - xr[i] * k);
        }
      });
  // Column sums over the rows, in row order.
  double *pds = static_cast<double *>(dscale.raw());
  double *pdb = dbias.defined() ? static_cast<double *>(dbias.raw()) : nullptr;
  forEach(
      d, RTX_GPU_BODY(int64_t i) {
        double ds = 0.0, db = 0.0;
        for (int64_t r = 0; r < rows; ++r) {
          double dyv = pdy[r * d + i];
          double xhat = layerNorm ? (px[r * d + i] - pm[r]) * pr[r]
                                  : static_cast<double>(px[r * d + i]) * pr[r];
          ds += dyv * xhat;
          db += dyv;
        }
        pds[i] = ds;
        if (pdb)
          pdb[i] = db;
      });
}

template <typename T>
void softmaxT(const Tensor &x, Tensor &y, int64_t n, int64_t inner) {
  const T *px = static_cast<const T *>(x.raw());
  T *py = static_cast<T *>(y.raw());
  int64_t lanes = n ? x.numel() / n : 0;
  forEach(
      lanes, RTX_GPU_BODY(int64_t lane) {
        int64_t base = (lane / inner) * n * inner + lane % inner;
        math::softmaxRow(px + base, py + base, n, inner);
      });
}

template <typename T>
void softmaxGradT(const Tensor &y, const Tensor &dy, Tensor &dx, int64_t n,
                  int64_t inner) {
  const T *py = static_cast<const T *>(y.raw());
  const T *pdy = static_cast<const T *>(dy.raw());
  T *pdx = static_cast<T *>(dx.raw());
  int64_t lanes = n ? y.numel() / n : 0;
  forEach(
      lanes, RTX_GPU_BODY(int64_t lane) {
        int64_t base = (lane / inner) * n * inner + lane % inner;
        math::softmaxGradRow(py + base, pdy + base, pdx + base, n, inner);
      });
}

/// Rotate-half by the angle of each position; `inverse` turns back (the
/// gradient of rope).
template <typename T>
void ropeT(const Tensor &x, Tensor &y, const Tensor &cosTable,
           const Tensor &sinTable, int64_t s, int64_t d, bool inverse) {
  const T *px = static_cast<const T *>(x.raw());
  const double *pc = static_cast<const double *>(cosTable.raw());
  const double *ps = static_cast<const double *>(sinTable.raw());
  T *py = static_cast<T *>(y.raw());
  int64_t half = d / 2;
  forEach(
      x.numel() / 2, RTX_GPU_BODY(int64_t e) {
        int64_t row = e / half, i = e % half;
        int64_t p = row % s;
        T c = T(pc[p * half + i]), sn = T(ps[p * half + i]);
        if (inverse)
          sn = -sn;
        T x1 = px[row * d + i], x2 = px[row * d + i + half];
        py[row * d + i] = x1 * c - x2 * sn;
        py[row * d + i + half] = x2 * c + x1 * sn;
      });
}


template <typename T>
void crossEntropyRowsT(const Tensor &x, const Tensor &labels, Tensor &loss,
                       int64_t tokens, int64_t vocab, bool hasIgnore,
                       int64_t ignoreIndex) {
  const T *px = static_cast<const T *>(x.raw());
  const void *pl = labels.raw();
  int ltype = static_cast<int>(labels.dtype());
  double *out = static_cast<double *>(loss.raw());
  forEach(
      tokens, RTX_GPU_BODY(int64_t t) {
        int64_t label = static_cast<int64_t>(loadElement(pl, ltype, t));
        if (hasIgnore && label == ignoreIndex) {
          out[t] = NAN; // not counted
          return;
        }
        const T *row = px + t * vocab;
        T max;
        double sum;
        math::softmaxStatistics(row, vocab, max, sum);
        out[t] = math::crossEntropyLoss(max, sum, row[label]);
      });
}

/// dx = dloss * (softmax - onehot) / n on rows of `width` classes that
/// start at class `offset`; the rows' max and sum of exp(x - max) are
/// `maxIn`/`sumIn` (the global statistics of a vocabulary shard) or, when
/// undefined, computed from the row.
template <typename T>
void crossEntropyGradT(const Tensor &x, const Tensor &labels,
                       const Tensor &lossGrad, Tensor &dx, int64_t tokens,
                       int64_t width, int64_t offset, const Tensor &maxIn,
                       const Tensor &sumIn, bool hasIgnore,
                       int64_t ignoreIndex) {
  const T *px = static_cast<const T *>(x.raw());
  const void *pmax = maxIn.defined() ? maxIn.raw() : nullptr;
  const void *psum = sumIn.defined() ? sumIn.raw() : nullptr;
  int mtype = maxIn.defined() ? static_cast<int>(maxIn.dtype()) : 0;
  int stype = sumIn.defined() ? static_cast<int>(sumIn.dtype()) : 0;
  int64_t vocab = width;
  const void *pl = labels.raw();
  int ltype = static_cast<int>(labels.dtype());
  const void *pg = lossGrad.raw();
  int gtype = static_cast<int>(lossGrad.dtype());
  T *pdx = static_cast<T *>(dx.raw());
  Tensor counted = countedLabels(labels, hasIgnore, ignoreIndex);
  const int64_t *pc = static_cast<const int64_t *>(counted.raw());
  forEach(
      tokens, RTX_GPU_BODY(int64_t t) {
        int64_t count = pc[0];
        int64_t label = static_cast<int64_t>(loadElement(pl, ltype, t));
        T *drow = pdx + t * vocab;
        if (count == 0 || (hasIgnore && label == ignoreIndex)) {
          for (int64_t i = 0; i < vocab; ++i)
            drow[i] = T(0);
          return;
        }
        double factor = loadElement(pg, gtype, 0) / static_cast<double>(count);
        const T *row = px + t * vocab;
        T max;
        double sum;
        if (pmax) {
          max = T(loadElement(pmax, mtype, t));
          sum = loadElement(psum, stype, t);
        } else {
          math::softmaxStatistics(row, vocab, max, sum);
        }
        math::crossEntropyGradRow(row, drow, vocab, max, factor / sum, factor,
                                  label - offset);
      });
}

/// Per token: the shard's maximum logit, and the label's logit when the
/// shard [offset, offset + width) owns the label (else 0).
template <typename T>
void vocabLogitStatsT(const Tensor &x, const Tensor &labels, Tensor &max,
                      Tensor &labelLogit, int64_t tokens, int64_t width,
                      int64_t offset, bool hasIgnore, int64_t ignoreIndex) {
  const T *px = static_cast<const T *>(x.raw());
  const void *pl = labels.raw();
  int ltype = static_cast<int>(labels.dtype());
  T *pmax = static_cast<T *>(max.raw());
  T *plabel = static_cast<T *>(labelLogit.raw());
  forEach(
      tokens, RTX_GPU_BODY(int64_t t) {
        const T *row = px + t * width;
        pmax[t] = math::laneMax(row, width);
        int64_t label = static_cast<int64_t>(loadElement(pl, ltype, t));
        int64_t local = label - offset;
        bool owned =
            !(hasIgnore && label == ignoreIndex) && local >= 0 && local < width;
        plabel[t] = owned ? row[local] : T(0);
      });
}

#if defined(__CUDACC__)
/// Whether the fast row kernels run for these operands: the fast path is
/// selected and every defined operand is f32, bf16 or f16.
bool fastRows(std::initializer_list<const Tensor *> operands) {
  if (!gpu::useFastKernels())
    return false;
  for (const Tensor *t : operands)
    if (t->defined() && !gpu::fast::coversFloat(t->dtype()))
      return false;
  return true;
}
#endif

Tensor toGpuF64(const std::vector<double> &values) {
  Tensor host =
      Tensor::fromVector(values, {static_cast<int64_t>(values.size())});
  return gpu::toDevice(host);
}

} // namespace

Tensor gpu::layerNorm(const Tensor &input, const Tensor &scale,
                      const Tensor &bias, double epsilon) {
  const std::string op = "rtx.layernorm";
  int64_t d = checkNormArguments(op, input, scale, bias);
  checkOnGpu(op, input, "input");
  checkOnGpu(op, scale, "scale");
  if (bias.defined())
    checkOnGpu(op, bias, "bias");
#if defined(__CUDACC__)
  if (fastRows({&input, &scale, &bias}))
    return gpu::fast::layerNorm(input, scale, bias, epsilon);
#endif
  int64_t rows = d ? input.numel() / d : 0;
  Tensor x = toCompute(input), g = toCompute(scale);
  Tensor b = bias.defined() ? toCompute(bias) : Tensor();
  Tensor mean, rstd;
  rowStatistics(x, rows, d, epsilon, true, mean, rstd);
  Tensor y = empty(input.shape(), x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), normalizeT, x, g, b, mean, rstd, y, d, true);
  return fromCompute(y, input.dtype());
}

Tensor gpu::rmsNorm(const Tensor &input, const Tensor &scale, double epsilon) {
  const std::string op = "rtx.rmsnorm";
  int64_t d = checkNormArguments(op, input, scale, Tensor());
  checkOnGpu(op, input, "input");
  checkOnGpu(op, scale, "scale");
#if defined(__CUDACC__)
  if (fastRows({&input, &scale}))
    return gpu::fast::rmsNorm(input, scale, epsilon);
#endif
  int64_t rows = d ? input.numel() / d : 0;
  Tensor x = toCompute(input), g = toCompute(scale);
  Tensor mean, rstd;
  rowStatistics(x, rows, d, epsilon, false, mean, rstd);
  Tensor y = empty(input.shape(), x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), normalizeT, x, g, Tensor(), mean, rstd, y, d,
                  false);
  return fromCompute(y, input.dtype());
}

static std::vector<Tensor> normGrad(const std::string &op, const Tensor &input,
                                    const Tensor &scale,
                                    const Tensor &resultGrad, double epsilon,
                                    bool layerNorm) {
  int64_t d = checkNormGradArguments(op, input, scale, resultGrad);
  checkOnGpu(op, input, "input");
  checkOnGpu(op, scale, "scale");
  checkOnGpu(op, resultGrad, "result_grad");
#if defined(__CUDACC__)
  if (fastRows({&input, &scale}))
    return gpu::fast::normGrad(input, scale, resultGrad, epsilon, layerNorm);
#endif
  int64_t rows = d ? input.numel() / d : 0;
  Tensor x = toCompute(input), dy = toCompute(resultGrad);
  Tensor g =
      scale.dtype() == x.dtype() ? scale : gpu::convert(scale, x.dtype());
  Tensor mean, rstd;
  rowStatistics(x, rows, d, epsilon, layerNorm, mean, rstd);
  Tensor dx = gpu::empty(input.shape(), x.dtype());
  Tensor dscale = gpu::empty({d}, DType::F64);
  Tensor dbias = layerNorm ? gpu::empty({d}, DType::F64) : Tensor();
  RTX_GPU_COMPUTE(x.dtype(), normGradT, x, g, dy, mean, rstd, dx, dscale, dbias,
                  rows, d, layerNorm);
  std::vector<Tensor> results = {fromCompute(dx, input.dtype()),
                                 fromCompute(dscale, scale.dtype())};
  if (layerNorm)
    results.push_back(fromCompute(dbias, scale.dtype()));
  return results;
}

std::vector<Tensor> gpu::layerNormGrad(const Tensor &input, const Tensor &scale,
                                       const Tensor &resultGrad,
                                       double epsilon) {
  return normGrad("rtx.layernorm_grad", input, scale, resultGrad, epsilon,
                  true);
}

std::vector<Tensor> gpu::rmsNormGrad(const Tensor &input, const Tensor &scale,
                                     const Tensor &resultGrad, double epsilon) {
  return normGrad("rtx.rmsnorm_grad", input, scale, resultGrad, epsilon, false);
}

Tensor gpu::softmax(const Tensor &input, int64_t dim) {
  const std::string op = "rtx.softmax";
  checkFloat(op, input, "input");
  checkOnGpu(op, input, "input");
  if (input.rank() < 1)
    fail(op, "input must have rank >= 1, got a scalar");
  int64_t axis = normalizeDim(op, dim, input.rank());
  int64_t n = input.dim(axis), inner = 1;
  for (int64_t i = axis + 1; i < input.rank(); ++i)
    inner *= input.dim(i);
#if defined(__CUDACC__)
  // A softmax over an inner dimension (strided rows) runs the portable body.
  if (inner == 1 && fastRows({&input}))
    return gpu::fast::softmaxLastDim(input);
#endif
  Tensor x = toCompute(input);
  Tensor y = empty(input.shape(), x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), softmaxT, x, y, n, inner);
  return fromCompute(y, input.dtype());
}

Tensor gpu::softmaxGrad(const Tensor &result, const Tensor &resultGrad,
                        int64_t dim) {
  const std::string op = "rtx.softmax_grad";
  checkFloat(op, result, "result");
  checkFloat(op, resultGrad, "result_grad");
  checkSameShape(op, result, "result", resultGrad, "result_grad");
  checkSameDType(op, result, "result", resultGrad, "result_grad");
  checkOnGpu(op, result, "result");
  checkOnGpu(op, resultGrad, "result_grad");
  int64_t axis = normalizeDim(op, dim, result.rank());
  int64_t n = result.dim(axis), inner = 1;
  for (int64_t i = axis + 1; i < result.rank(); ++i)
    inner *= result.dim(i);
#if defined(__CUDACC__)
  if (inner == 1 && fastRows({&result}))
    return gpu::fast::softmaxGradLastDim(result, resultGrad);
#endif
  Tensor y = toCompute(result), dy = toCompute(resultGrad);
  Tensor dx = empty(result.shape(), y.dtype());
  RTX_GPU_COMPUTE(y.dtype(), softmaxGradT, y, dy, dx, n, inner);
  return fromCompute(dx, result.dtype());
}

static Tensor ropeCommon(const std::string &op, const Tensor &input,
                         double theta, int64_t offset, bool inverse) {
  rtxrt::detail::checkRopeInput(op, input, "input", theta);
  checkOnGpu(op, input, "input");
  int64_t s = input.dim(2), d = input.dim(3);
  std::vector<double> cosTable, sinTable;
  rtxrt::detail::ropeAngles(s, d, theta, offset, cosTable, sinTable);
  Tensor c = toGpuF64(cosTable), sn = toGpuF64(sinTable);
  Tensor x = toCompute(input);
  Tensor y = gpu::empty(input.shape(), x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), ropeT, x, y, c, sn, s, d, inverse);
  return fromCompute(y, input.dtype());
}

Tensor gpu::rope(const Tensor &input, double theta, int64_t offset) {
  return ropeCommon("rtx.rope", input, theta, offset, false);
}

Tensor gpu::ropeGrad(const Tensor &resultGrad, double theta, int64_t offset) {
  return ropeCommon("rtx.rope_grad", resultGrad, theta, offset, true);
}

Tensor gpu::embedding(const Tensor &table, const Tensor &ids) {
  return gpu::embedding(table, ids, 0, table.rank() == 2 ? table.dim(0) : 0);
}

/// Fails (naming `op`) unless a [rows, D] table at `offset` is a shard of a
/// vocabulary of `vocab` entries, or unless every id is in [0, vocab) (the
/// CPU kernels' check throws their message).
static void checkShardIds(const std::string &op, const Tensor &ids,
                          int64_t rows, int64_t offset, int64_t vocab) {
  if (offset < 0 || offset + rows > vocab)
    fail(op, "a table of " + std::to_string(rows) + " rows at offset " +
                 std::to_string(offset) +
                 " is not a shard of a vocabulary of " + std::to_string(vocab));
  Tensor flag = makeFlag();
  checkIdsOnDevice(ids, vocab, false, 0, flag);
  checkFlag(flag, [op, ids, vocab] {
    rtxrt::detail::loadIds(op, gpu::toHost(ids), vocab);
  });
}

Tensor gpu::embedding(const Tensor &table, const Tensor &ids, int64_t offset,
                      int64_t vocab) {
  const std::string op = "rtx.embedding";
  checkFloat(op, table, "table");
  checkInteger(op, ids, "ids");
  checkOnGpu(op, table, "table");
  checkOnGpu(op, ids, "ids");
  if (table.rank() != 2)
    fail(op, "table must be [V, D], got " + shapeToString(table.shape()));
  int64_t rows = table.dim(0), width = table.dim(1);
  checkShardIds(op, ids, rows, offset, vocab);
  Shape resultShape = ids.shape();
  resultShape.push_back(width);
  Tensor out = empty(resultShape, table.dtype());
  const unsigned char *src = static_cast<const unsigned char *>(table.raw());
  unsigned char *dst = static_cast<unsigned char *>(out.raw());
  const void *pi = ids.raw();
  int itype = static_cast<int>(ids.dtype());
  int64_t esize = static_cast<int64_t>(dtypeSize(table.dtype()));
  // Ids another shard owns give zero rows, so the shards add up.
  forEach(
      out.numel(), RTX_GPU_BODY(int64_t e) {
        int64_t p = e / width, j = e % width;
        int64_t row = static_cast<int64_t>(loadElement(pi, itype, p)) - offset;
        bool owned = row >= 0 && row < rows;
        for (int64_t b = 0; b < esize; ++b)
          dst[e * esize + b] = owned ? src[(row * width + j) * esize + b] : 0;
      });
  return out;
}

Tensor gpu::embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                          const Shape &tableShape) {
  return gpu::embeddingGrad(ids, resultGrad, tableShape, 0,
                            tableShape.size() == 2 ? tableShape[0] : 0);
}

Tensor gpu::embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                          const Shape &tableShape, int64_t offset,
                          int64_t globalVocab) {
  const std::string op = "rtx.embedding_grad";
  checkEmbeddingGradArguments(op, ids, resultGrad, tableShape, offset,
                              globalVocab);
  checkOnGpu(op, ids, "ids");
  checkOnGpu(op, resultGrad, "result_grad");
  int64_t vocab = tableShape[0], width = tableShape[1];
  checkShardIds(op, ids, vocab, offset, globalVocab);
  Tensor dy = toCompute(resultGrad);
  Tensor table = zeros(tableShape, dy.dtype());
  // One body per column j: adds every position's dy[p, j] into row ids[p]
  // in increasing p, the CPU kernel's order, without atomics.
  int64_t positions = ids.numel();
  const void *pi = ids.raw();
  int itype = static_cast<int>(ids.dtype());
  const void *pdy = dy.raw();
  void *pt = table.raw();
  int ctype = static_cast<int>(dy.dtype());
  forEach(
      width, RTX_GPU_BODY(int64_t j) {
        for (int64_t p = 0; p < positions; ++p) {
          int64_t row =
              static_cast<int64_t>(loadElement(pi, itype, p)) - offset;
          if (row < 0 || row >= vocab)
            continue; // another shard's id
          int64_t at = row * width + j;
          storeElement(pt, ctype, at,
                       loadElement(pt, ctype, at) +
                           loadElement(pdy, ctype, p * width + j));
        }
      });
  return fromCompute(table, resultGrad.dtype());
}

void gpu::detail::checkLogitsLabels(const std::string &op, const Tensor &logits,
                                    const Tensor &labels, bool hasIgnoreIndex,
                                    int64_t ignoreIndex, int64_t vocab) {
  checkFloat(op, logits, "logits");
  checkInteger(op, labels, "labels");
  checkOnGpu(op, logits, "logits");
  checkOnGpu(op, labels, "labels");
  Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  if (logits.rank() < 1 || labels.shape() != expected)
    fail(op, "labels " + shapeToString(labels.shape()) +
                 " must be the logits' shape " + shapeToString(logits.shape()) +
                 " without its last dimension");
  if (vocab < 0)
    vocab = logits.dim(logits.rank() - 1);
  Tensor flag = makeFlag();
  checkIdsOnDevice(labels, vocab, hasIgnoreIndex, ignoreIndex, flag);
  // The CPU check throws its message; of the logits it reads the shape.
  Shape logitsShape = logits.shape();
  DType logitsType = logits.dtype();
  checkFlag(flag, [=] {
    rtxrt::detail::loadLabels(op, Tensor(logitsShape, logitsType),
                              gpu::toHost(labels), hasIgnoreIndex, ignoreIndex,
                              vocab);
  });
}

Tensor gpu::crossEntropy(const Tensor &logits, const Tensor &labels,
                         bool hasIgnoreIndex, int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy";
  checkLogitsLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
#if defined(__CUDACC__)
  if (vocab > 0 && fastRows({&logits}))
    return gpu::fast::crossEntropy(logits, labels, hasIgnoreIndex, ignoreIndex);
#endif
  Tensor x = toCompute(logits);
  Tensor loss = empty({tokens}, DType::F64);
  RTX_GPU_COMPUTE(x.dtype(), crossEntropyRowsT, x, labels, loss, tokens, vocab,
                  hasIgnoreIndex, ignoreIndex);
  // The mean over counted tokens, in token order, by one body.
  Tensor mean = empty({}, DType::F64);
  const double *pl = static_cast<const double *>(loss.raw());
  double *pm = static_cast<double *>(mean.raw());
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        double total = 0.0;
        int64_t count = 0;
        for (int64_t t = 0; t < tokens; ++t)
          if (pl[t] == pl[t]) { // NaN marks an ignored token
            total += pl[t];
            ++count;
          }
        pm[0] = count ? total / static_cast<double>(count) : 0.0;
      });
  return fromCompute(mean,
                     logits.dtype() == DType::F64 ? DType::F64 : DType::F32);
}

Tensor gpu::crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                             const Tensor &lossGrad, bool hasIgnoreIndex,
                             int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy_grad";
  checkLogitsLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  checkFloat(op, lossGrad, "loss_grad");
  checkOnGpu(op, lossGrad, "loss_grad");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = labels.numel();
#if defined(__CUDACC__)
  if (vocab > 0 && fastRows({&logits}))
    return gpu::fast::crossEntropyGrad(logits, labels, lossGrad, hasIgnoreIndex,
                                       ignoreIndex);
#endif
  Tensor x = toCompute(logits);
  Tensor dx = empty(logits.shape(), x.dtype());
  if (vocab > 0)
    RTX_GPU_COMPUTE(x.dtype(), crossEntropyGradT, x, labels, lossGrad, dx,
                    tokens, vocab, 0, Tensor(), Tensor(), hasIgnoreIndex,
                    ignoreIndex);
  return fromCompute(dx, logits.dtype());
}

std::vector<Tensor> gpu::vocabLogitStats(const Tensor &logits,
                                         const Tensor &labels, int64_t offset,
                                         int64_t vocab, bool hasIgnoreIndex,
                                         int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_logit_stats";
  checkLogitsLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex, vocab);
  int64_t width = logits.dim(logits.rank() - 1);
  Tensor x = toCompute(logits);
  Shape leading(logits.shape().begin(), logits.shape().end() - 1);
  Tensor max = empty(leading, x.dtype()),
         labelLogit = empty(leading, x.dtype());
  RTX_GPU_COMPUTE(x.dtype(), vocabLogitStatsT, x, labels, max, labelLogit,
                  labels.numel(), width, offset, hasIgnoreIndex, ignoreIndex);
  return {fromCompute(max, logits.dtype()),
          fromCompute(labelLogit, logits.dtype())};
}

Tensor gpu::vocabCrossEntropy(const Tensor &max, const Tensor &sumExp,
                              const Tensor &labelLogit, const Tensor &labels,
                              bool hasIgnoreIndex, int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_cross_entropy";
  for (const Tensor *t : {&max, &sumExp, &labelLogit})
    checkFloat(op, *t, "statistic");
  checkInteger(op, labels, "labels");
  for (const Tensor *t : {&max, &sumExp, &labelLogit, &labels})
    checkOnGpu(op, *t, "every operand");
  if (max.shape() != labels.shape() || sumExp.shape() != labels.shape() ||
      labelLogit.shape() != labels.shape())
    fail(op, "max, sum_exp and label_logit must have the labels' shape " +
                 shapeToString(labels.shape()));
  // The same per-token formula and token-order mean as rtx.cross_entropy,
  // by one body.
  Tensor mean = empty({}, DType::F64);
  double *pm = static_cast<double *>(mean.raw());
  const void *pmax = max.raw(), *psum = sumExp.raw(), *plab = labelLogit.raw();
  const void *pl = labels.raw();
  int mtype = static_cast<int>(max.dtype()),
      stype = static_cast<int>(sumExp.dtype()),
      ltype = static_cast<int>(labelLogit.dtype()),
      itype = static_cast<int>(labels.dtype());
  int64_t tokens = labels.numel();
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        double total = 0.0;
        int64_t count = 0;
        for (int64_t t = 0; t < tokens; ++t) {
          if (hasIgnoreIndex &&
              static_cast<int64_t>(loadElement(pl, itype, t)) == ignoreIndex)
            continue;
          total += math::crossEntropyLoss(loadElement(pmax, mtype, t),
                                          loadElement(psum, stype, t),
                                          loadElement(plab, ltype, t));
          ++count;
        }
        pm[0] = count ? total / static_cast<double>(count) : 0.0;
      });
  return fromCompute(mean, max.dtype() == DType::F64 ? DType::F64 : DType::F32);
}

Tensor gpu::vocabCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                                  const Tensor &lossGrad, const Tensor &max,
                                  const Tensor &sumExp, int64_t offset,
                                  int64_t vocab, bool hasIgnoreIndex,
                                  int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_cross_entropy_grad";
  checkLogitsLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex, vocab);
  checkFloat(op, lossGrad, "loss_grad");
  checkFloat(op, max, "max");
  checkFloat(op, sumExp, "sum_exp");
  for (const Tensor *t : {&lossGrad, &max, &sumExp})
    checkOnGpu(op, *t, "every operand");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  if (max.shape() != labels.shape() || sumExp.shape() != labels.shape())
    fail(op, "max and sum_exp must have the labels' shape " +
                 shapeToString(labels.shape()));
  int64_t width = logits.dim(logits.rank() - 1);
  if (offset < 0 || offset + width > vocab)
    fail(op, "logits of " + std::to_string(width) + " classes at offset " +
                 std::to_string(offset) +
                 " are not a shard of a vocabulary of " +
                 std::to_string(vocab));
  Tensor x = toCompute(logits);
  Tensor dx = empty(logits.shape(), x.dtype());
  if (width > 0)
    RTX_GPU_COMPUTE(x.dtype(), crossEntropyGradT, x, labels, lossGrad, dx,
                    labels.numel(), width, offset, max, sumExp, hasIgnoreIndex,
                    ignoreIndex);
  return fromCompute(dx, logits.dtype());
}

Tensor gpu::detail::countedLabels(const Tensor &labels, bool hasIgnore,
                                  int64_t ignoreIndex) {
  Tensor counted = empty({}, DType::I64);
  int64_t *pc = static_cast<int64_t *>(counted.raw());
  const void *pl = labels.raw();
  int ltype = static_cast<int>(labels.dtype());
  int64_t tokens = labels.numel();
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        int64_t n = 0;
        for (int64_t k = 0; k < tokens; ++k)
          n += hasIgnore && static_cast<int64_t>(loadElement(pl, ltype, k)) ==
                                ignoreIndex
                   ? 0
                   : 1;
        pc[0] = n;
      });
  return counted;
}

void gpu::detail::checkIdsOnDevice(const Tensor &ids, int64_t vocab, bool hasIgnore,
                      int64_t ignoreIndex, Tensor &flag) {
  const void *pi = ids.raw();
  int dtype = static_cast<int>(ids.dtype());
  int64_t *pf = static_cast<int64_t *>(flag.raw());
  int64_t n = ids.numel();
  forEach(
      1, RTX_GPU_BODY(int64_t) {
        for (int64_t k = 0; k < n; ++k) {
          int64_t id = static_cast<int64_t>(loadElement(pi, dtype, k));
          if ((id < 0 || id >= vocab) && !(hasIgnore && id == ignoreIndex)) {
            pf[0] = k;
            return;
          }
        }
      });
}
