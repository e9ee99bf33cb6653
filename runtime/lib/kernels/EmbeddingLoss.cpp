//===- EmbeddingLoss.cpp - embedding lookup and cross-entropy -------------===//
//
// Both index into a table with data-dependent integers, so both validate
// every index before any parallel work: a bad id is an Error that names the
// id and where it was found, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::embedding(const Tensor &table, const Tensor &ids) {
  return embedding(table, ids, 0, table.rank() == 2 ? table.dim(0) : 0);
}

Tensor rtxrt::embedding(const Tensor &table, const Tensor &ids, int64_t offset,
                        int64_t vocab) {
  const std::string op = "rtx.embedding";
  checkFloat(op, table, "table");
  checkInteger(op, ids, "ids");
  if (table.rank() != 2)
    fail(op, "table must be [V, D], got " + shapeToString(table.shape()));
  int64_t rows = table.dim(0), width = table.dim(1);
  if (offset < 0 || offset + rows > vocab)
    fail(op, "a table of " + std::to_string(rows) + " rows at offset " +
                 std::to_string(offset) +
                 " is not a shard of a vocabulary of " + std::to_string(vocab));
  std::vector<int64_t> idv = loadIds(op, ids, vocab);
  Shape resultShape = ids.shape();
  resultShape.push_back(width);
  // Ids another shard owns leave zero rows: zero-initialised unless this
  // table is the whole vocabulary (then every row is written).
  Tensor out = offset == 0 && rows == vocab
                   ? Tensor::uninitialized(resultShape, table.dtype())
                   : Tensor(resultShape, table.dtype());
  size_t rowBytes = static_cast<size_t>(width) * dtypeSize(table.dtype());
  if (rowBytes == 0)
    return out;
  const auto *src = static_cast<const unsigned char *>(table.raw());
  auto *dst = static_cast<unsigned char *>(out.raw());
  parallelFor(static_cast<int64_t>(idv.size()), rowGrain(width),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  int64_t row = idv[i] - offset;
                  if (row >= 0 && row < rows)
                    std::memcpy(dst + i * rowBytes, src + row * rowBytes,
                                rowBytes);
                }
              });
  return out;
}

Tensor rtxrt::crossEntropy(const Tensor &logits, const Tensor &labels,
                           bool hasIgnoreIndex, int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy";
  std::vector<int64_t> lab =
      loadLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = static_cast<int64_t>(lab.size());
  DType resultType = logits.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor x = toCompute(logits);
  // Per-token losses in parallel, then their mean in token order.
  std::vector<double> loss(tokens, 0.0);
  std::vector<char> counted(tokens, 0);
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    parallelFor(tokens, rowGrain(vocab), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (hasIgnoreIndex && lab[t] == ignoreIndex)
          continue;
        const T *row = px + t * vocab;
        T max;
        double sum;
        softmaxStatistics(row, vocab, max, sum);
        loss[t] = crossEntropyLoss(max, sum, row[lab[t]]);
        counted[t] = 1;
      }
    });
    return 0;
  });
  double total = 0.0;
  int64_t count = 0;
  for (int64_t t = 0; t < tokens; ++t)
    if (counted[t]) {
      total += loss[t];
      ++count;
    }
  return Tensor::scalar(count ? total / static_cast<double>(count) : 0.0,
                        resultType);
}

std::vector<Tensor> rtxrt::vocabLogitStats(const Tensor &logits,
                                           const Tensor &labels, int64_t offset,
                                           int64_t vocab, bool hasIgnoreIndex,
                                           int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_logit_stats";
  std::vector<int64_t> lab =
      loadLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex, vocab);
  int64_t shard = logits.dim(logits.rank() - 1);
  int64_t tokens = static_cast<int64_t>(lab.size());
  Tensor x = toCompute(logits);
  Shape leading(logits.shape().begin(), logits.shape().end() - 1);
  Tensor max(leading, x.dtype()), labelLogit(leading, x.dtype());
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    T *pmax = max.data<T>();
    T *plabel = labelLogit.data<T>();
    parallelFor(tokens, rowGrain(shard), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const T *row = px + t * shard;
        pmax[t] = laneMax(row, shard);
        int64_t local = lab[t] - offset;
        bool owned = !(hasIgnoreIndex && lab[t] == ignoreIndex) && local >= 0 &&
                     local < shard;
        plabel[t] = owned ? row[local] : T(0);
      }
    });
    return 0;
  });
  return {fromCompute(max, logits.dtype()),
          fromCompute(labelLogit, logits.dtype())};
}

Tensor rtxrt::vocabCrossEntropy(const Tensor &max, const Tensor &sumExp,
                                const Tensor &labelLogit, const Tensor &labels,
                                bool hasIgnoreIndex, int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_cross_entropy";
  checkFloat(op, max, "max");
  checkFloat(op, sumExp, "sum_exp");
  checkFloat(op, labelLogit, "label_logit");
  checkInteger(op, labels, "labels");
  if (max.shape() != labels.shape() || sumExp.shape() != labels.shape() ||
      labelLogit.shape() != labels.shape())
    fail(op, "max, sum_exp and label_logit must have the labels' shape " +
                 shapeToString(labels.shape()));
  DType resultType = max.dtype() == DType::F64 ? DType::F64 : DType::F32;
  // The same per-token formula and token-order mean as rtx.cross_entropy.
  double total = 0.0;
  int64_t count = 0;
  for (int64_t t = 0; t < labels.numel(); ++t) {
    if (hasIgnoreIndex &&
        static_cast<int64_t>(labels.getAsDouble(t)) == ignoreIndex)
      continue;
    total += crossEntropyLoss(max.getAsDouble(t), sumExp.getAsDouble(t),
                              labelLogit.getAsDouble(t));
    ++count;
  }
  return Tensor::scalar(count ? total / static_cast<double>(count) : 0.0,
                        resultType);
}
