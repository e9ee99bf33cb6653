//===- RTXInterfaces.td - rtx op interfaces ----------------*- tablegen -*-===//
//
// The interfaces that make passes and backends table-driven: a sharding rule,
// a cost, a vector-Jacobian product and a kernel binding per op; and the
// description of a collective.
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
      }]>,
    InterfaceMethod<"For an op whose FLOPs are a matrix product (a GEMM, "
      "batched or not, or attention's two products), the product's {M, N, K} "
      "with batches folded into M (attention: the {S, S_k, D} of one batch "
      "element and head, the products its kernels run): the planner looks "
      "its throughput up by shape (rtx-calibrate measures GEMMs by shape). "
      "Empty otherwise.",
      "::llvm::SmallVector<int64_t, 3>", "getContractionShape", (ins), [{}],
      [{ return ::mlir::rtx::getDefaultContractionShape($_op); }]>,
    InterfaceMethod<"Whether that product reads its left operand transposed "
      "([K, M] stored, as a weight gradient X^T dY does): GEMM libraries "
      "pack that layout differently, and rtx-calibrate times it apart.",
      "bool", "isContractionLhsTransposed", (ins), [{}],
      [{ return ::mlir::rtx::isDefaultContractionLhsTransposed($_op); }]>
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

def RTX_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    The op's binding to its runtime kernel: the kernel's name in
    `runtime/include/rtxrt/kernels/KernelApi.def` and the op's operands and
    attributes as the kernel's arguments, in order (`KernelCall`,
    RTXKernelCall.h). rtx-run's interpreter and the C++/CUDA emitter both
    execute this one description, so an op with a kernel runs in rtx-run and
    in emitted programs without code in either. The bindings live in
    lib/Dialect/RTX/IR/RTXKernels.cpp.
  }];
  let methods = [
    InterfaceMethod<"Returns the kernel call that computes the op's results.",
      "::mlir::rtx::KernelCall", "getKernelCall">
  ];
}

def RTX_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    A collective over mesh axes (`rtx.all_reduce`, ... and their `_start`
    forms): which collective it is, and whether it is the async form whose
    token `rtx.wait` completes. Its operand is `input`, its attributes `mesh`,
    `axes` and the kind's own (`kind`, `gather_dim`, ...). Executors switch
    on the kind, not on op classes.
  }];
  let methods = [
    StaticInterfaceMethod<"Which collective this is.",
      "::mlir::rtx::CollectiveKind", "getCollectiveKind">,
    StaticInterfaceMethod<"True for the async `_start` form.",
      "bool", "isAsync">
  ];
}

def RTX_PartitionOpInterface : OpInterface<"PartitionOpInterface"> {
  let cppNamespace = "::mlir::rtx";
  let description = [{
    How `rtx-partition` turns an op of the global program into its per-rank
    form, for the ops whose sharding rule alone does not say it. An op
    without this interface takes the default rule: its factors take mesh
    axes from the shardings of its parameters, results and operands, its
    operands are resharded to the layouts those axes imply, and the op is
    cloned with local types (results lacking a split factor hold partial
    sums). The overrides (a row-parallel linear with a bias, an embedding or
    a loss over a split vocabulary, a slice of a split dimension, a mean over
    split dimensions) are external models in one rules file,
    lib/Dialect/RTX/Transforms/PartitionRules.cpp, which rtx-partition
    attaches itself; they compose the default rule's steps (`Partitioner`).
  }];
  let methods = [
    InterfaceMethod<"Partitions the op, whose rule and operands the "
      "partitioner has at hand; returns failure after a diagnostic.",
      "::llvm::LogicalResult", "partition",
      (ins "::mlir::rtx::Partitioner &":$partitioner)>
  ];
}

// An op that is linear in each operand jointly with the others (an addition,
// a subtraction, a negation, data movement): partial sums pass through it
// unreduced, when all its operands hold them over the same axes. The
// partitioner keeps them; the distribution verifier accepts them.
def RTX_PassesPartialSums : NativeOpTrait<"PassesPartialSums"> {
  let cppNamespace = "::mlir::rtx";
}

// Every ranked tensor operand and result has an element count and a byte
// size that fit in int64 (`tensor<4294967296x4294967296xf32>` does not).
// RTX_Op gives it to every rtx op; its verifier runs after the ODS type
// constraints and before the op's own verifier.
def RTX_TensorSizesFit : NativeOpTrait<"TensorSizesFit"> {
  let cppNamespace = "::mlir::rtx";
}

#endif // RTX_DIALECT_RTX_IR_RTXINTERFACES_TD
