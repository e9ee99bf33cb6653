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

#include "rtxrt/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::embeddingGrad(const Tensor &ids, const Tensor &resultGrad,
                            const Shape &tableShape) {
  const std::string op = "rtx.embedding_grad";
  checkInteger(op, ids, "ids");
  checkFloat(op, resultGrad, "result_grad");
  if (tableShape.size() != 2 || tableShape[0] < 0 || tableShape[1] < 0)
    fail(op, "table shape must be [V, D], got " + shapeToString(tableShape));
  int64_t vocab = tableShape[0], width = tableShape[1];
  Shape expected = ids.shape();
  expected.push_back(width);
  if (resultGrad.shape() != expected)
    fail(op, "result_grad " + shapeToString(resultGrad.shape()) +
                 " must be ids shape + [D] = " + shapeToString(expected) +
                 " for table " + shapeToString(tableShape));
  std::vector<int64_t> idv = loadIds(op, ids, vocab);
  int64_t positions = static_cast<int64_t>(idv.size());

  // Stable counting sort: order[start[v] .. start[v+1]) are the positions
  // with id v, increasing.
  std::vector<int64_t> start(vocab + 1, 0), order(positions);
  for (int64_t id : idv)
    ++start[id + 1];
  for (int64_t v = 0; v < vocab; ++v)
    start[v + 1] += start[v];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < positions; ++p)
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

Tensor rtxrt::crossEntropyGrad(const Tensor &logits, const Tensor &labels,
                               const Tensor &lossGrad, bool hasIgnoreIndex,
                               int64_t ignoreIndex) {
  const std::string op = "rtx.cross_entropy_grad";
  std::vector<int64_t> lab =
      loadLabels(op, logits, labels, hasIgnoreIndex, ignoreIndex);
  checkFloat(op, lossGrad, "loss_grad");
  if (lossGrad.rank() != 0)
    fail(op,
         "loss_grad must be a scalar, got " + shapeToString(lossGrad.shape()));
  int64_t vocab = logits.dim(logits.rank() - 1);
  int64_t tokens = static_cast<int64_t>(lab.size());
  int64_t count = 0;
  for (int64_t t = 0; t < tokens; ++t)
    count += hasIgnoreIndex && lab[t] == ignoreIndex ? 0 : 1;
  Tensor x = toCompute(logits);
  Tensor dx(logits.shape(), x.dtype());
  if (count == 0 || vocab == 0)
    return fromCompute(dx, logits.dtype());
  // d(mean loss)/d(logit) of one token, times the incoming gradient.
  double factor = lossGrad.getAsDouble(0) / static_cast<double>(count);
  dispatchCompute(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>();
    T *pdx = dx.data<T>();
    parallelFor(tokens, rowGrain(vocab), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        if (hasIgnoreIndex && lab[t] == ignoreIndex)
          continue; // stays zero
        const T *row = px + t * vocab;
        T *drow = pdx + t * vocab;
        // softmax in double, max-subtracted as in rtx.cross_entropy.
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < vocab; ++i)
          max = std::fmax(max, static_cast<double>(row[i]));
        double sum = 0.0;
        for (int64_t i = 0; i < vocab; ++i)
          sum += std::exp(static_cast<double>(row[i]) - max);
        double scale = factor / sum;
        for (int64_t i = 0; i < vocab; ++i)
          drow[i] = T(std::exp(static_cast<double>(row[i]) - max) * scale -
                      (i == lab[t] ? factor : 0.0));
      }
    });
    return 0;
  });
  return fromCompute(dx, logits.dtype());
}
