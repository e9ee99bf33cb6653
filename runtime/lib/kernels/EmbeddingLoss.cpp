//===- EmbeddingLoss.cpp - embedding lookup and cross-entropy -------------===//
//
// Both index into a table with data-dependent integers, so both validate
// every index before any parallel work: a bad id is an Error that names the
// id and where it was found, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/Kernels.h"

#include "KernelUtils.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace rtxrt;
using namespace rtxrt::detail;

Tensor rtxrt::embedding(const Tensor &table, const Tensor &ids) {
  const std::string op = "rtx.embedding";
  checkFloat(op, table, "table");
  checkInteger(op, ids, "ids");
  if (table.rank() != 2)
    fail(op, "table must be [V, D], got " + shapeToString(table.shape()));
  int64_t vocab = table.dim(0), width = table.dim(1);
  std::vector<int64_t> idv = loadIds(op, ids, vocab);
  Shape resultShape = ids.shape();
  resultShape.push_back(width);
  Tensor out = Tensor::uninitialized(resultShape, table.dtype());
  size_t rowBytes = static_cast<size_t>(width) * dtypeSize(table.dtype());
  if (rowBytes == 0)
    return out;
  const auto *src = static_cast<const unsigned char *>(table.raw());
  auto *dst = static_cast<unsigned char *>(out.raw());
  parallelFor(static_cast<int64_t>(idv.size()), rowGrain(width),
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  std::memcpy(dst + i * rowBytes, src + idv[i] * rowBytes,
                              rowBytes);
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
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < vocab; ++i)
          max = std::fmax(max, static_cast<double>(row[i]));
        double sum = 0.0;
        for (int64_t i = 0; i < vocab; ++i)
          sum += std::exp(static_cast<double>(row[i]) - max);
        loss[t] = max + std::log(sum) - static_cast<double>(row[lab[t]]);
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
