//===- RTXInterfaces.td - rtx op interfaces ----------------*- tablegen -*-===//
//
// The interfaces that make passes table-driven: a sharding rule, a cost and a
// vector-Jacobian product per op.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXINTERFACES_TD
#define RTX_DIALECT_RTX_IR_RTXINTERFACES_TD

include "mlir/IR/OpBase.td"

def RTX_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    An einsum-like sharding rule: each operand and result dimension is the
    product of one or more factors (major to minor); a factor that appears in
    operands but in no result is a reduction factor (sharding it leaves
    partial sums); a factor that cannot be split without communication
    (the normalised dimension of a softmax, say) is marked need-replication.
    Propagation and partitioning read this instead of switching on op names.
  }];
  let methods = [
    InterfaceMethod<"Returns the op's sharding rule for its current types.",
      "::mlir::rtx::OpShardingRule", "getShardingRule">
  ];
}

def RTX_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    The cost of one execution of an op at its current (global or local)
    shapes: floating-point operations, and bytes read plus written. The
    planner's cost model builds on these.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations for one execution.",
      "int64_t", "getFlops">,
    InterfaceMethod<"Bytes read and written for one execution: by default "
      "the sizes of all tensor operands and results.",
      "int64_t", "getBytesAccessed", (ins), [{}], [{
        return ::mlir::rtx::getDefaultBytesAccessed($_op);
      }]>
  ];
}

def RTX_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    The vector-Jacobian product of an op, used by `rtx-autodiff`: given the
    gradients of the op's results (null for a result without a gradient), build
    the gradients of its operands at the builder's insertion point. Operands
    that are not differentiable (indices, masks) get a null value.
  }];
  let methods = [
    InterfaceMethod<"Builds the operand gradients from the result gradients.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // RTX_DIALECT_RTX_IR_RTXINTERFACES_TD
