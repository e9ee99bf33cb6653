//===- RTXInterfaces.cpp - shared pieces of the op interfaces -------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

#include <numeric>

using namespace mlir;
using namespace mlir::rtx;

#include "rtx/Dialect/RTX/IR/RTXInterfaces.cpp.inc"

int64_t OpShardingRule::addFactor(int64_t size, FactorKind kind) {
  factorSizes.push_back(size);
  factorKinds.push_back(kind);
  return factorSizes.size() - 1;
}

SmallVector<int64_t> OpShardingRule::getReductionFactors() const {
  SmallVector<int64_t> result;
  for (int64_t f = 0; f < getNumFactors(); ++f)
    if (factorKinds[f] == FactorKind::Reduction)
      result.push_back(f);
  return result;
}

/// Factor names: i, j, k, ..., z, then f26, f27, ...
static std::string factorName(int64_t factor) {
  static constexpr StringLiteral letters = "ijklmnopqrstuvwxyzabcdefgh";
  if (factor < static_cast<int64_t>(letters.size()))
    return std::string(1, letters[factor]);
  return "f" + std::to_string(factor);
}

std::string OpShardingRule::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto printValues = [&](ArrayRef<ValueFactors> values) {
    os << '(';
    llvm::interleaveComma(values, os, [&](const ValueFactors &value) {
      os << '[';
      llvm::interleaveComma(value, os, [&](const DimFactors &dim) {
        if (dim.empty())
          os << '1';
        llvm::interleave(
            dim, os, [&](int64_t f) { os << factorName(f); }, "*");
      });
      os << ']';
    });
    os << ')';
  };
  printValues(operandFactors);
  os << " -> ";
  printValues(resultFactors);
  os << " {";
  llvm::interleaveComma(llvm::seq<int64_t>(0, getNumFactors()), os,
                        [&](int64_t f) {
                          os << factorName(f) << '=' << factorSizes[f];
                        });
  os << '}';
  auto printKind = [&](StringRef label, auto predicate) {
    SmallVector<int64_t> factors;
    for (int64_t f = 0; f < getNumFactors(); ++f)
      if (predicate(f))
        factors.push_back(f);
    if (factors.empty())
      return;
    os << ' ' << label << "={";
    llvm::interleaveComma(factors, os,
                          [&](int64_t f) { os << factorName(f); });
    os << '}';
  };
  printKind("reduction", [&](int64_t f) {
    return factorKinds[f] == FactorKind::Reduction;
  });
  printKind("need_replication", [&](int64_t f) {
    return factorKinds[f] == FactorKind::NeedReplication;
  });
  return s;
}

static int64_t rankOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getRank();
  return 0;
}

OpShardingRule mlir::rtx::makeEmptyShardingRule(Operation *op) {
  OpShardingRule rule;
  for (Type type : op->getOperandTypes())
    rule.operandFactors.emplace_back(rankOf(type));
  for (Type type : op->getResultTypes())
    rule.resultFactors.emplace_back(rankOf(type));
  return rule;
}

OpShardingRule mlir::rtx::getElementwiseShardingRule(Operation *op) {
  OpShardingRule rule = makeEmptyShardingRule(op);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  // Scalars among the operands (an optimizer's step count) take no factor.
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t f = rule.addFactor(type.getDimSize(d));
    for (auto &operand : rule.operandFactors)
      if (d < static_cast<int64_t>(operand.size()))
        operand[d].push_back(f);
    for (auto &result : rule.resultFactors)
      if (d < static_cast<int64_t>(result.size()))
        result[d].push_back(f);
  }
  return rule;
}

void mlir::rtx::addReshapeFactors(OpShardingRule &rule, ArrayRef<int64_t> from,
                                  ArrayRef<int64_t> to, unsigned operandIndex,
                                  unsigned resultIndex) {
  auto &in = rule.operandFactors[operandIndex];
  auto &out = rule.resultFactors[resultIndex];
  // An empty tensor has nothing to split: every dimension stays whole.
  if (llvm::is_contained(from, 0) || llvm::is_contained(to, 0)) {
    for (size_t k = 0; k < from.size(); ++k)
      in[k].push_back(rule.addFactor(from[k], FactorKind::NeedReplication));
    for (size_t k = 0; k < to.size(); ++k)
      out[k].push_back(rule.addFactor(to[k], FactorKind::NeedReplication));
    return;
  }
  // Walk both shapes, splitting off the largest size one side's remainder
  // divides; dimensions of size 1 take no factor.
  size_t i = 0, j = 0;
  int64_t a = 0, b = 0;
  auto advanceIn = [&] {
    while (i < from.size() && from[i] == 1)
      ++i;
    a = i < from.size() ? from[i] : 1;
  };
  auto advanceOut = [&] {
    while (j < to.size() && to[j] == 1)
      ++j;
    b = j < to.size() ? to[j] : 1;
  };
  advanceIn();
  advanceOut();
  while (i < from.size() && j < to.size()) {
    int64_t f;
    if (a % b == 0)
      f = b;
    else if (b % a == 0)
      f = a;
    else
      break;
    int64_t factor = rule.addFactor(f);
    in[i].push_back(factor);
    out[j].push_back(factor);
    a /= f;
    b /= f;
    if (a == 1) {
      ++i;
      advanceIn();
    }
    if (b == 1) {
      ++j;
      advanceOut();
    }
  }
  if (i >= from.size() && j >= to.size())
    return;
  // The rest does not factor (e.g. [6, 4] -> [4, 6]): what is left of each
  // dimension becomes a factor of its own that must stay whole, so no
  // sharding flows across it.
  for (size_t k = i; k < from.size(); ++k)
    if (from[k] != 1)
      in[k].push_back(rule.addFactor(k == i ? a : from[k],
                                     FactorKind::NeedReplication));
  for (size_t k = j; k < to.size(); ++k)
    if (to[k] != 1)
      out[k].push_back(
          rule.addFactor(k == j ? b : to[k], FactorKind::NeedReplication));
}

int64_t mlir::rtx::getTensorBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  return tensor.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

FailureOr<int64_t> mlir::rtx::getCheckedNumElements(ArrayRef<int64_t> shape) {
  if (llvm::is_contained(shape, 0))
    return int64_t{0};
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(count, d, count))
      return failure();
  return count;
}

/// Checks one operand's or result's type; `what` is "operand" or "result".
static LogicalResult verifyTensorSizeFits(Operation *op, Type type,
                                          StringRef what, unsigned index) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return success();
  auto fail = [&](StringRef quantity) {
    return op->emitOpError()
           << what << " #" << index << " has type " << type << ", whose "
           << quantity << " overflows int64 (at most "
           << std::numeric_limits<int64_t>::max() << ")";
  };
  FailureOr<int64_t> count = getCheckedNumElements(tensor.getShape());
  if (failed(count))
    return fail("element count");
  Type element = tensor.getElementType();
  int64_t bytes;
  if (element.isIntOrFloat() &&
      llvm::MulOverflow(
          *count,
          std::max<int64_t>(1, (element.getIntOrFloatBitWidth() + 7) / 8),
          bytes))
    return fail("size in bytes");
  return success();
}

LogicalResult mlir::rtx::verifyTensorSizesFit(Operation *op) {
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(verifyTensorSizeFits(op, type, "operand", i)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(verifyTensorSizeFits(op, type, "result", i)))
      return failure();
  return success();
}

int64_t mlir::rtx::getDefaultBytesAccessed(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += getTensorBytes(type);
  for (Type type : op->getResultTypes())
    bytes += getTensorBytes(type);
  return bytes;
}
