//===- RTXInterfaces.h - rtx op interfaces ----------------------*- C++ -*-===//
//
// The data behind the op interfaces: an einsum-like sharding rule, and
// helpers shared by the implementations.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXINTERFACES_H
#define RTX_DIALECT_RTX_IR_RTXINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "rtx/Dialect/RTX/IR/RTXKernelCall.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir {
namespace rtx {

/// The collectives of the dialect (CollectiveOpInterface).
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  BroadcastFrom,
  Permute
};

/// How a factor of a sharding rule behaves when a mesh axis splits it.
enum class FactorKind {
  /// Every operand and result that has the factor is split the same way;
  /// no communication.
  Parallel,
  /// The factor appears in operands only: splitting it leaves partial sums
  /// in the results.
  Reduction,
  /// Splitting the factor changes the result (a softmax's or a norm's
  /// normalised dimension, a cumulative position): it must be replicated
  /// before the op, or the op rewritten by a dedicated pattern.
  NeedReplication,
};

/// An einsum-like sharding rule. Every dimension of every operand and result
/// is the product of an ordered list of factors (major to minor); factors
/// with the same index are the same loop of the computation. A dimension of
/// size 1 that does not take part has an empty factor list.
///
/// A factor split over a mesh axis leaves partial sums in every result that
/// lacks it (a matmul's contracted dimension; the leading dimensions in a
/// layernorm's scale gradient).
///
/// Printed as, for a matmul: `([i, k], [k, j]) -> ([i, j]) {i=4, j=16, k=8}
/// reduction={k}`, and for a head split reshape `([i, j, k*l]) -> ([i, j, k,
/// l])`.
struct OpShardingRule {
  using DimFactors = llvm::SmallVector<int64_t, 1>;
  using ValueFactors = llvm::SmallVector<DimFactors, 4>;

  llvm::SmallVector<int64_t> factorSizes;
  llvm::SmallVector<FactorKind> factorKinds;
  /// operandFactors[i][d]: factors of dimension d of operand i.
  llvm::SmallVector<ValueFactors> operandFactors;
  /// resultFactors[i][d]: factors of dimension d of result i.
  llvm::SmallVector<ValueFactors> resultFactors;

  int64_t getNumFactors() const { return factorSizes.size(); }
  /// Adds a factor and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind = FactorKind::Parallel);
  /// Factors of kind Reduction: contracted or summed by the op.
  llvm::SmallVector<int64_t> getReductionFactors() const;
  /// The rule in the printed form documented above (factors named i, j, ...).
  std::string str() const;
};

/// Starts a rule for `op` with one empty factor list per dimension of every
/// ranked tensor operand and result.
OpShardingRule makeEmptyShardingRule(Operation *op);

/// A rule where every operand and result shares one factor per dimension.
OpShardingRule getElementwiseShardingRule(Operation *op);

/// The factor lists that make `from` into `to` by a row-major reshape: a
/// common refinement of the two shapes. Dimensions whose sizes do not factor
/// into each other end up sharing one need-replication factor.
void addReshapeFactors(OpShardingRule &rule, llvm::ArrayRef<int64_t> from,
                       llvm::ArrayRef<int64_t> to, unsigned operandIndex,
                       unsigned resultIndex);

/// Bytes of a ranked tensor type (bf16/f16: 2, f32/i32: 4, f64/i64: 8, i1: 1).
int64_t getTensorBytes(Type type);
/// The sum of the sizes of all tensor operands and results of `op`.
int64_t getDefaultBytesAccessed(Operation *op);
/// CostOpInterface::getContractionShape: {M, N, K} of the matrix products
/// (matmul, batch_matmul, linear, attention and its gradient; defined in
/// RTXCost.cpp next to their FLOP counts), empty for other ops.
SmallVector<int64_t, 3> getDefaultContractionShape(Operation *op);
/// CostOpInterface::isContractionLhsTransposed: rtx.matmul's and
/// rtx.batch_matmul's `transpose_lhs`; false for every other op.
bool isDefaultContractionLhsTransposed(Operation *op);

} // namespace rtx
} // namespace mlir

namespace mlir::rtx {
class Partitioner;

/// The element count of a static `shape`, or failure when it does not fit
/// in int64 (a zero dimension makes it 0, whatever the others are).
FailureOr<int64_t> getCheckedNumElements(llvm::ArrayRef<int64_t> shape);

/// Verifies that each ranked tensor operand and result of `op` has an
/// element count and a byte size that fit in int64; the diagnostic names
/// the operand or result and its type.
LogicalResult verifyTensorSizesFit(Operation *op);

/// RTX_TensorSizesFit (RTXInterfaces.td): see verifyTensorSizesFit.
template <typename ConcreteType>
class TensorSizesFit : public OpTrait::TraitBase<ConcreteType, TensorSizesFit> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyTensorSizesFit(op);
  }
};

/// RTX_PassesPartialSums (RTXInterfaces.td): partial sums pass through the op.
template <typename ConcreteType>
class PassesPartialSums
    : public OpTrait::TraitBase<ConcreteType, PassesPartialSums> {};
} // namespace mlir::rtx

#include "rtx/Dialect/RTX/IR/RTXInterfaces.h.inc"

#endif // RTX_DIALECT_RTX_IR_RTXINTERFACES_H
