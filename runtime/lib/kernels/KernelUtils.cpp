//===- KernelUtils.cpp - helpers shared by the CPU kernels ----------------===//
//
// The shard-to-global index mapping used by dropout and initParameter, the
// argument checks and tables shared by forward and backward kernels, and the
// thread-count controls.
//
//===----------------------------------------------------------------------===//

#include "KernelUtils.h"

#include "rtxrt/kernels/Kernels.h"

#include <cmath>
#include <utility>

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

namespace {

/// Integer ids as int64, whatever their stored width.
std::vector<int64_t> widenIds(const Tensor &ids) {
  std::vector<int64_t> out(ids.numel());
  if (ids.dtype() == DType::I32) {
    const int32_t *p = ids.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = p[i];
  } else {
    const int64_t *p = ids.data<int64_t>();
    std::copy(p, p + out.size(), out.begin());
  }
  return out;
}

/// "[1, 2]": the multi-index of flat element i of `shape`.
std::string indexToString(const Shape &shape, int64_t i) {
  std::vector<int64_t> coords(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    coords[d] = i % shape[d];
    i /= shape[d];
  }
  return shapeToString(coords);
}

} // namespace

std::vector<int64_t> rtxrt::detail::loadIds(const std::string &op,
                                            const Tensor &ids, int64_t vocab) {
  checkInteger(op, ids, "ids");
  std::vector<int64_t> idv = widenIds(ids);
  for (size_t i = 0; i < idv.size(); ++i)
    if (idv[i] < 0 || idv[i] >= vocab)
      fail(op, "id " + std::to_string(idv[i]) + " at index " +
                   indexToString(ids.shape(), static_cast<int64_t>(i)) +
                   " of ids " + shapeToString(ids.shape()) +
                   " is outside [0, " + std::to_string(vocab) + ")");
  return idv;
}

std::vector<int64_t>
rtxrt::detail::loadLabels(const std::string &op, const Tensor &logits,
                          const Tensor &labels, bool hasIgnoreIndex,
                          int64_t ignoreIndex, int64_t vocab) {
  checkFloat(op, logits, "logits");
  checkInteger(op, labels, "labels");
  if (logits.rank() < 1)
    fail(op, "logits must be [..., V], got a scalar");
  Shape leading(logits.shape().begin(), logits.shape().end() - 1);
  if (labels.shape() != leading)
    fail(op, "labels " + shapeToString(labels.shape()) +
                 " must have the leading shape " + shapeToString(leading) +
                 " of logits " + shapeToString(logits.shape()));
  if (vocab < 0)
    vocab = logits.dim(logits.rank() - 1);
  std::vector<int64_t> lab = widenIds(labels);
  for (size_t t = 0; t < lab.size(); ++t) {
    if (hasIgnoreIndex && lab[t] == ignoreIndex)
      continue;
    if (lab[t] < 0 || lab[t] >= vocab)
      fail(op, "label " + std::to_string(lab[t]) + " at index " +
                   indexToString(labels.shape(), static_cast<int64_t>(t)) +
                   " of labels " + shapeToString(labels.shape()) +
                   " is outside [0, " + std::to_string(vocab) + ")" +
                   (hasIgnoreIndex ? " and is not the ignore index " +
                                         std::to_string(ignoreIndex)
                                   : std::string()));
  }
  return lab;
}

void rtxrt::detail::checkFeatureVector(const std::string &op, const Tensor &v,
                                       const char *name, const Tensor &input) {
  checkFloat(op, v, name);
  int64_t d = input.dim(input.rank() - 1);
  if (v.shape() != Shape{d})
    fail(op, std::string(name) + " " + shapeToString(v.shape()) + " must be [" +
                 std::to_string(d) + "] for input " +
                 shapeToString(input.shape()));
}

void rtxrt::detail::checkRopeInput(const std::string &op, const Tensor &input,
                                   const char *name, double theta) {
  checkFloat(op, input, name);
  if (input.rank() != 4)
    fail(op, std::string(name) + " must be [B, H, S, D], got " +
                 shapeToString(input.shape()));
  int64_t d = input.dim(3);
  if (d % 2 != 0)
    fail(op, "head size D=" + std::to_string(d) + " of " + name + " " +
                 shapeToString(input.shape()) + " must be even");
  if (!(theta > 0.0))
    fail(op, "theta " + std::to_string(theta) + " must be positive");
}

void rtxrt::detail::ropeAngles(int64_t seq, int64_t headDim, double theta,
                               int64_t offset, std::vector<double> &cosTable,
                               std::vector<double> &sinTable) {
  int64_t half = headDim / 2;
  cosTable.assign(seq * half, 0.0);
  sinTable.assign(seq * half, 0.0);
  for (int64_t p = 0; p < seq; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double invFreq = std::pow(theta, -2.0 * static_cast<double>(i) /
                                           static_cast<double>(headDim));
      double angle = static_cast<double>(p + offset) * invFreq;
      cosTable[p * half + i] = std::cos(angle);
      sinTable[p * half + i] = std::sin(angle);
    }
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

namespace {
/// The [rows, cols] of an operand's last two dimensions after its optional
/// transpose.
std::pair<int64_t, int64_t> matrixDims(const Tensor &t, bool transposed) {
  int64_t r = t.dim(t.rank() - 2), c = t.dim(t.rank() - 1);
  return transposed ? std::make_pair(c, r) : std::make_pair(r, c);
}

std::string describe(const char *name, const Tensor &t, bool transposed) {
  return std::string(name) + " " + shapeToString(t.shape()) +
         (transposed ? " (transposed)" : "");
}

/// The checks after the ranks: equal contracting sizes. Fills m, n, k.
void contractingDims(const std::string &op, const Tensor &lhs,
                     const Tensor &rhs, bool transposeLhs, bool transposeRhs,
                     ContractionDims &dims) {
  auto [m, k] = matrixDims(lhs, transposeLhs);
  auto [k2, n] = matrixDims(rhs, transposeRhs);
  if (k != k2)
    fail(op, "contracting sizes differ: " + describe("lhs", lhs, transposeLhs) +
                 " gives K=" + std::to_string(k) + ", " +
                 describe("rhs", rhs, transposeRhs) +
                 " gives K=" + std::to_string(k2));
  dims.m = m;
  dims.n = n;
  dims.k = k;
}

void checkFloatPair(const std::string &op, const Tensor &lhs,
                    const char *lhsName, const Tensor &rhs,
                    const char *rhsName) {
  checkFloat(op, lhs, lhsName);
  checkFloat(op, rhs, rhsName);
  checkSameDType(op, lhs, lhsName, rhs, rhsName);
}
} // namespace

ContractionDims rtxrt::detail::checkMatmulArguments(const std::string &op,
                                                    const Tensor &lhs,
                                                    const Tensor &rhs,
                                                    bool transposeLhs,
                                                    bool transposeRhs) {
  checkFloatPair(op, lhs, "lhs", rhs, "rhs");
  if (lhs.rank() != 2 || rhs.rank() != 2)
    fail(op, "operands must be matrices, got lhs " +
                 shapeToString(lhs.shape()) + " and rhs " +
                 shapeToString(rhs.shape()));
  ContractionDims dims{1, 0, 0, 0, 0, {}};
  contractingDims(op, lhs, rhs, transposeLhs, transposeRhs, dims);
  dims.resultShape = {dims.m, dims.n};
  return dims;
}

ContractionDims rtxrt::detail::checkBatchMatmulArguments(const std::string &op,
                                                         const Tensor &lhs,
                                                         const Tensor &rhs,
                                                         bool transposeLhs,
                                                         bool transposeRhs) {
  checkFloatPair(op, lhs, "lhs", rhs, "rhs");
  if (lhs.rank() < 2 || lhs.rank() != rhs.rank())
    fail(op, "operands need one rank >= 2, got lhs " +
                 shapeToString(lhs.shape()) + " and rhs " +
                 shapeToString(rhs.shape()));
  Shape batchShape(lhs.shape().begin(), lhs.shape().end() - 2);
  if (!std::equal(batchShape.begin(), batchShape.end(), rhs.shape().begin()))
    fail(op, "batch dimensions differ: lhs " + shapeToString(lhs.shape()) +
                 " and rhs " + shapeToString(rhs.shape()));
  ContractionDims dims{numElements(batchShape), 0, 0, 0, 0, batchShape};
  contractingDims(op, lhs, rhs, transposeLhs, transposeRhs, dims);
  dims.rhsBatchStride = dims.k * dims.n;
  dims.resultShape.push_back(dims.m);
  dims.resultShape.push_back(dims.n);
  return dims;
}

ContractionDims rtxrt::detail::checkLinearArguments(const std::string &op,
                                                    const Tensor &input,
                                                    const Tensor &weight,
                                                    const Tensor &bias) {
  checkFloatPair(op, input, "input", weight, "weight");
  if (input.rank() < 1 || weight.rank() != 2)
    fail(op, "expected input [..., in] and weight [out, in], got input " +
                 shapeToString(input.shape()) + " and weight " +
                 shapeToString(weight.shape()));
  int64_t in = input.dim(input.rank() - 1);
  int64_t out = weight.dim(0);
  if (weight.dim(1) != in)
    fail(op, "weight " + shapeToString(weight.shape()) +
                 " does not take input features " + std::to_string(in) +
                 " of input " + shapeToString(input.shape()));
  if (bias.defined()) {
    checkSameDType(op, input, "input", bias, "bias");
    if (bias.shape() != Shape{out})
      fail(op, "bias " + shapeToString(bias.shape()) + " must be [" +
                   std::to_string(out) + "]");
  }
  // All tokens form one [tokens, in] x [out, in]^T product.
  int64_t tokens =
      numElements(Shape(input.shape().begin(), input.shape().end() - 1));
  Shape resultShape = input.shape();
  resultShape.back() = out;
  return ContractionDims{1, tokens, out, in, 0, resultShape};
}

GemmEpilogueDims rtxrt::detail::checkGemmEpilogueArguments(
    const std::string &op, GemmEpilogue epilogue, const Tensor &lhs,
    const Tensor &rhs, bool transposeLhs, bool transposeRhs, const Tensor &bias,
    const Tensor &preActivation) {
  const std::string what = op + " " + enumeratorName(epilogue);
  checkFloatPair(what, lhs, "lhs", rhs, "rhs");
  if (rhs.rank() != 2 || (transposeLhs ? lhs.rank() != 2 : lhs.rank() < 1))
    fail(what, "expected lhs " +
                   std::string(transposeLhs ? "[K, M]" : "[..., K]") +
                   " and rhs [K, N] or [N, K], got lhs " +
                   shapeToString(lhs.shape()) + " and rhs " +
                   shapeToString(rhs.shape()));
  int64_t k = transposeLhs ? lhs.dim(0) : lhs.dim(lhs.rank() - 1);
  int64_t n = transposeRhs ? rhs.dim(0) : rhs.dim(1);
  if ((transposeRhs ? rhs.dim(1) : rhs.dim(0)) != k)
    fail(what, "contracting dimensions differ: lhs " +
                   shapeToString(lhs.shape()) + ", rhs " +
                   shapeToString(rhs.shape()));
  Shape resultShape = transposeLhs
                          ? Shape{lhs.dim(1)}
                          : Shape(lhs.shape().begin(), lhs.shape().end() - 1);
  resultShape.push_back(n);
  int64_t m =
      transposeLhs
          ? lhs.dim(1)
          : numElements(Shape(lhs.shape().begin(), lhs.shape().end() - 1));
  auto expectOperand = [&](bool wanted, const Tensor &t, const char *name,
                           const Shape &shape) {
    if (wanted != t.defined())
      fail(what, std::string(wanted ? "needs " : "takes no ") + name);
    if (!wanted)
      return;
    checkSameDType(what, lhs, "lhs", t, name);
    if (t.shape() != shape)
      fail(what, std::string(name) + " " + shapeToString(t.shape()) +
                     " must be " + shapeToString(shape));
  };
  expectOperand(epilogueAddsBias(epilogue), bias, "bias", Shape{n});
  expectOperand(epilogueReadsPreActivation(epilogue), preActivation,
                "pre-activation", resultShape);
  if (epilogue == GemmEpilogue::BiasGrad && resultShape.size() != 2)
    fail(what, "needs a matrix result, got " + shapeToString(resultShape));
  return GemmEpilogueDims{m, n, k, resultShape};
}

int64_t rtxrt::detail::checkNormArguments(const std::string &op,
                                          const Tensor &input,
                                          const Tensor &scale,
                                          const Tensor &bias) {
  checkFloat(op, input, "input");
  if (input.rank() < 1)
    fail(op, "input must have rank >= 1, got a scalar");
  checkFeatureVector(op, scale, "scale", input);
  if (bias.defined())
    checkFeatureVector(op, bias, "bias", input);
  return input.dim(input.rank() - 1);
}

int64_t rtxrt::detail::checkNormGradArguments(const std::string &op,
                                              const Tensor &input,
                                              const Tensor &scale,
                                              const Tensor &resultGrad) {
  int64_t d = checkNormArguments(op, input, scale, Tensor());
  checkFloat(op, resultGrad, "result_grad");
  checkSameDType(op, input, "input", resultGrad, "result_grad");
  checkSameShape(op, input, "input", resultGrad, "result_grad");
  return d;
}

void rtxrt::detail::checkEmbeddingGradArguments(
    const std::string &op, const Tensor &ids, const Tensor &resultGrad,
    const Shape &tableShape, int64_t offset, int64_t globalVocab) {
  checkInteger(op, ids, "ids");
  checkFloat(op, resultGrad, "result_grad");
  if (tableShape.size() != 2 || tableShape[0] < 0 || tableShape[1] < 0)
    fail(op, "table shape must be [V, D], got " + shapeToString(tableShape));
  int64_t vocab = tableShape[0], width = tableShape[1];
  if (offset < 0 || offset + vocab > globalVocab)
    fail(op, "a table of " + std::to_string(vocab) + " rows at offset " +
                 std::to_string(offset) +
                 " is not a shard of a vocabulary of " +
                 std::to_string(globalVocab));
  Shape expected = ids.shape();
  expected.push_back(width);
  if (resultGrad.shape() != expected)
    fail(op, "result_grad " + shapeToString(resultGrad.shape()) +
                 " must be ids shape + [D] = " + shapeToString(expected) +
                 " for table " + shapeToString(tableShape));
}

AttentionDims rtxrt::detail::checkAttentionArguments(
    const std::string &op, const Tensor &query, const Tensor &key,
    const Tensor &value, bool causal, double scale) {
  checkFloat(op, query, "query");
  checkFloat(op, key, "key");
  checkFloat(op, value, "value");
  checkSameDType(op, query, "query", key, "key");
  checkSameDType(op, query, "query", value, "value");
  if (query.rank() != 4 || key.rank() != 4)
    fail(op, "query and key must be [B, H, S, D], got query " +
                 shapeToString(query.shape()) + " and key " +
                 shapeToString(key.shape()));
  checkSameShape(op, key, "key", value, "value");
  AttentionDims s{query.dim(0),
                  query.dim(1),
                  query.dim(2),
                  query.dim(3),
                  key.dim(1),
                  key.dim(2),
                  1};
  if (key.dim(0) != s.b || key.dim(3) != s.d)
    fail(op, "key " + shapeToString(key.shape()) +
                 " does not match the batch and head size of query " +
                 shapeToString(query.shape()));
  if (s.hkv == 0 || s.hq % s.hkv != 0)
    fail(op, "query heads " + std::to_string(s.hq) +
                 " are not a multiple of key/value heads " +
                 std::to_string(s.hkv));
  if (causal && s.sq != s.skv)
    fail(op, "causal attention needs Sq == Skv, got Sq=" +
                 std::to_string(s.sq) + " and Skv=" + std::to_string(s.skv));
  if (s.skv == 0 && s.sq > 0)
    fail(op, "key/value sequence is empty (key " + shapeToString(key.shape()) +
                 ")");
  if (!std::isfinite(scale))
    fail(op, "scale " + std::to_string(scale) + " is not finite");
  s.group = s.hq / s.hkv;
  return s;
}
