//===- EmbeddingLossGrad.cpp - embedding_grad, cross_entropy_grad ---------===//
//
// embedding_grad is a scatter-add, the one backward kernel where many
// positions write one row. To keep it deterministic and still parallel, the
// positions are first bucketed by id with a stable counting sort; then each
// table row is owned by one thread, which adds its positions' rows in
// increasing position order. The sum order is thus fixed by the ids alone.
//
// Both kernels validate every index before any parallel work, like their
// forward kernels (and with the same messages).
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                            const Shape &tableShape) {
  return embeddingGrad(ids, resultGrad, tableShape, 0,
                       tableShape.size() == 2 ? tableShape[0] : 0);
}

Tensor rtxrt::embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                            const Shape &tableShape, int64_t offset,
                            int64_t globalVocab) {
  const std::string op = "rtx.embedding_grad";
  checkEmbeddingGradArguments(op, ids, resultGrad, tableShape, offset,
                              globalVocab);
  int64_t vocab = tableShape[0], width = tableShape[1];
  std::vector<int64_t> idv = loadIds(op, ids, globalVocab);
  // Ids are relative to the shard from here on; ids it does not own drop out.
  for (int64_t &id : idv)
    id = id >= offset && id < offset + vocab ? id - offset : -1;
  int64_t positions = static_cast<int64_t>(idv.size());

  // Stable counting sort: order[start[v] .. start[v+1]) are the positions
  // with id v, increasing.
  std::vector<int64_t> start(vocab + 1, 0), order(positions);
  for (int64_t id : idv)
    if (id >= 0)
      ++start[id + 1];
  for (int64_t v = 0; v < vocab; ++v)
    start[v + 1] += start[v];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < positions; ++p)
      if (idv[p] >= 0)
        order[next[idv[p]]++] = p;
  }

  Tensor dy = toCompute(resultGrad);
  Tensor table(tableShape, dy.dtype());
  if (table.numel() == 0)
    return fromCompute(table, resultGrad.dtype());
  dispatchCompute(resultGrad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pdy = dy.data<T>();
    T *pt = table.data<T>();
    parallelFor(vocab, rowGrain(width), [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        T *row = pt + v * width;
        for (int64_t at = start[v]; at < start[v + 1]; ++at) {
          const T *src = pdy + order[at] * width;
          for (int64_t j = 0; j < width; ++j)
            row[j] += src[j];
        }
      }
    });
    return 0;
  });
  return fromCompute(table, resultGrad.dtype());
}

namespace {
/// The per-token pieces both cross-entropy gradients share: the labels, the
/// incoming gradient over the token count, and the logits in compute type.
struct LossGradInputs {
  std::vector<int64_t> labels;
  int64_t count = 0;   // n, the tokens whose label is not ignored
  double factor = 0.0; // dloss / n
  Tensor x;
};

LossGradInputs loadLossGrad(const std::string &op, const Tensor &logits,
                            const Tensor &labels, const Tensor &lossGrad,
                            bool hasIgnoreIndex, int64_t ignoreIndex,
                            int64_t vocab) {
  LossGradInputs in;
  in.labels =
      loadLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex, vocab);
  checkFloat(op, lossGrad, "loss_grad");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  for (int64_t label : in.labels)
    in.count += hasIgnoreIndex && label == ignoreIndex ? 0 : 1;
  if (in.count > 0)
    in.factor = lossGrad.getAsDouble(0) / static_cast<double>(in.count);
  in.x = toCompute(logits);
  return in;
}

/// dx[t, i] = factor * (exp(x[t, i] - max(t)) / sum(t) - [offset + i ==
/// label t]) for the non-ignored tokens t of rows [.., width]; `stats(row, t,
/// max, sum)` gives the row's softmax statistics. Ignored rows stay zero.
template <typename T, typename Stats>
void softmaxMinusOneHot(const LossGradInputs &in, T *pdx, int64_t width,
                        int64_t offset, bool hasIgnoreIndex,
                        int64_t ignoreIndex, Stats stats) {
  const T *px = in.x.data<T>();
  int64_t tokens = static_cast<int64_t>(in.labels.size());
  parallelFor(tokens, rowGrain(width), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (hasIgnoreIndex && in.labels[t] == ignoreIndex)
        continue; // stays zero
      const T *row = px + t * width;
      T *drow = pdx + t * width;
      T max = 0;
      double sum = 1.0;
      stats(row, t, max, sum);
      crossEntropyGradRow(row, drow, width, max, in.factor / sum, in.factor,
                          in.labels[t] - offset);
    }
  });
}
} // namespace

Tensor rtxrt::crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                               const Tensor &lossGrad, bool hasIgnoreIndex,
                               int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy_grad";
  LossGradInputs in = loadLossGrad(op, logits, labels, lossGrad, hasIgnoreIndex,
                                   ignoreIndex, -1);
  int64_t vocab = logits.dim(logits.rank() - 1);
  Tensor dx(logits.shape(), in.x.dtype());
  if (in.count == 0 || vocab == 0)
    return fromCompute(dx, logits.dtype());
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    // The softmax's statistics exactly as rtx.cross_entropy computes them.
    softmaxMinusOneHot<T>(in, dx.data<T>(), vocab, 0, hasIgnoreIndex,
                          ignoreIndex,
                          [&](const T *row, int64_t, T &max, double &sum) {
                            softmaxStatistics(row, vocab, max, sum);
                          });
    return 0;
  });
  return fromCompute(dx, logits.dtype());
}

Tensor rtxrt::vocabCrossEntropyGrad(const Tensor &logits, const Tensor &labels,
                                    const Tensor &lossGrad, const Tensor &max,
                                    const Tensor &sumExp, int64_t offset,
                                    int64_t vocab, bool hasIgnoreIndex,
                                    int64_t ignoreIndex) {
  const std::string op = "rtx.vocab_cross_entropy_grad";
  LossGradInputs in = loadLossGrad(op, logits, labels, lossGrad, hasIgnoreIndex,
                                   ignoreIndex, vocab);
  checkFloat(op, max, "max");
  checkFloat(op, sumExp, "sum_exp");
  if (max.shape() != labels.shape() || sumExp.shape() != labels.shape())
    fail(op, "max and sum_exp must have the labels' shape " +
                 shapeToString(labels.shape()));
  int64_t shard = logits.dim(logits.rank() - 1);
  if (offset < 0 || offset + shard > vocab)
    fail(op, "logits of " + std::to_string(shard) + " classes at offset " +
                 std::to_string(offset) +
                 " are not a shard of a vocabulary of " +
                 std::to_string(vocab));
  Tensor dx(logits.shape(), in.x.dtype());
  if (in.count == 0 || shard == 0)
    return fromCompute(dx, logits.dtype());
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    softmaxMinusOneHot<T>(in, dx.data<T>(), shard, offset, hasIgnoreIndex,
                          ignoreIndex,
                          [&](const T *, int64_t t, T &m, double &sum) {
                            m = T(max.getAsDouble(t));
                            sum = sumExp.getAsDouble(t);
                          });
    return 0;
  });
  return fromCompute(dx, logits.dtype());
}
