//===- Partitioner.h - rtx-partition's machinery, for the rules -*- C++ -*-===//
//
// The state of rtx-partition while it rewrites one function, and the steps
// of its default rule, which the per-op overrides (PartitionOpInterface's
// external models in PartitionRules.cpp) compose:
//
//   1. assignFactors: each factor of the op's sharding rule takes mesh axes
//      from the shardings around the op (FactorAssignment.h);
//   2. localOperands: the operands, resharded to the layouts those axes
//      imply, with the collectives that takes (reshard);
//   3. cloneWithLocalTypes: the op with local result types; a result that
//      lacks a split factor holds partial sums over its axes.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_DIALECT_RTX_TRANSFORMS_PARTITIONER_H
#define RTX_LIB_DIALECT_RTX_TRANSFORMS_PARTITIONER_H

#include "Layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace mlir::rtx {

class Partitioner {
public:
  Partitioner(func::FuncOp function, const MeshAxes &mesh)
      : function(function), mesh(mesh), ctx(function.getContext()),
        builder(function.getContext()) {}

  LogicalResult run();

  //===--------------------------------------------------------------------===//
  // The op being partitioned, for the rules
  //===--------------------------------------------------------------------===//

  /// Its sharding rule at global shapes.
  const OpShardingRule &getRule() const { return *rule; }
  /// Step 1. `reserved` axes are taken by no factor (a rule keeps them for
  /// a rewrite of its own).
  void assignFactors(const llvm::StringSet<> &reserved = {});
  /// The axes of each factor after step 1.
  SmallVector<SmallVector<std::string, 2>> &getFactorAxes() {
    return factorAxes;
  }
  /// The axes some factor took in step 1.
  const llvm::StringSet<> &getUsedAxes() const { return usedAxes; }
  /// The layout of a value whose dimensions have `dims` factors.
  Layout project(const OpShardingRule::ValueFactors &dims) const;
  /// Step 2.
  FailureOr<SmallVector<Value>> localOperands(Operation *op);
  /// Step 3: records the clone's results as the op's local values; with
  /// `meanShards` > 1 the first result is scaled (see setResult).
  Operation *cloneWithLocalTypes(Operation *op, ArrayRef<Value> operands,
                                 int64_t meanShards = 1);
  /// The default rule: steps 1 to 3.
  LogicalResult partitionByDefault(Operation *op);

  //===--------------------------------------------------------------------===//
  // Building blocks
  //===--------------------------------------------------------------------===//

  OpBuilder &getBuilder() { return builder; }
  const MeshAxes &getMesh() const { return mesh; }
  /// The sharding a global value is declared with (replicated if none).
  Layout declared(Value global);
  /// The local value of a global one partitioned earlier.
  Value getLocal(Value global) const { return localOf.lookup(global); }
  /// The layout a local value has.
  Layout getLayout(Value local) const { return actual.lookup(local); }
  /// Records the layout of a local value the rule created.
  Value track(Value local, const Layout &layout) {
    actual[local] = layout;
    return local;
  }
  /// Annotates `op`'s results with their layouts and records them.
  Value track(Operation *op, const Layout &layout);
  void annotate(Operation *op, ArrayRef<Layout> layouts);
  RankedTensorType localType(RankedTensorType global, const Layout &layout);
  /// Moves `local` to layout `to` with the cheapest collectives.
  Value reshard(Value local, const Layout &to, Location loc);
  /// Records `result` as the local value of `op`'s first result. Means over
  /// split dimensions count only each rank's share: with `meanShards` > 1
  /// the result is scaled by 1/meanShards so partial sums add up to the
  /// global mean.
  void setResult(Operation *op, Value result, const Layout &layout,
                 int64_t meanShards);
  /// Whether a global value is a parameter (a deliberate Megatron layout).
  bool isParameter(Value global);
  ArrayAttr axesAttr(ArrayRef<std::string> axes);

  /// Values a rule computes once per function and reuses (the global
  /// softmax statistics of split logits, by their logits and labels).
  std::map<std::pair<void *, void *>, SmallVector<Value, 4>> ruleCache;

private:
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionSource(Operation *op);
  LogicalResult checkDivisible(Value global, Location loc, StringRef what);

  func::FuncOp function;
  const MeshAxes &mesh;
  MLIRContext *ctx;
  OpBuilder builder;
  llvm::DenseMap<Value, Value> localOf;
  llvm::DenseMap<Value, Layout> actual;
  std::map<std::pair<void *, std::string>, Value> reshardCache;
  /// Every op's rule at global shapes, taken before arguments change type.
  std::map<Operation *, OpShardingRule> rules;

  // The op being partitioned.
  Operation *current = nullptr;
  const OpShardingRule *rule = nullptr;
  SmallVector<SmallVector<std::string, 2>> factorAxes;
  llvm::StringSet<> usedAxes;
};

/// Attaches the partition rules (PartitionOpInterface external models of
/// PartitionRules.cpp) when the rtx dialect is loaded.
void registerPartitionRules(DialectRegistry &registry);

} // namespace mlir::rtx

#endif // RTX_LIB_DIALECT_RTX_TRANSFORMS_PARTITIONER_H
