//===- RTXBase.td - rtx op base classes and type constraints -*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXBASE_TD
#define RTX_DIALECT_RTX_IR_RTXBASE_TD

include "rtx/Dialect/RTX/IR/RTXDialect.td"
include "rtx/Dialect/RTX/IR/RTXEnums.td"
include "rtx/Dialect/RTX/IR/RTXAttrs.td"
include "rtx/Dialect/RTX/IR/RTXTypes.td"
include "rtx/Dialect/RTX/IR/RTXInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// f64 is accepted so gradients can be checked against finite differences in
// double precision; models use f32, bf16 and f16.
def RTX_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16, F64]>;
def RTX_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def RTX_MaskTensor : StaticShapeTensorOf<[I1]>;
def RTX_Tensor : StaticShapeTensorOf<[F32, BF16, F16, F64, I1, I32, I64]>;

// The learning-rate schedule of the AdamW updates (rtx.adamw_update,
// rtx.multi_adamw_update): warm-up steps, the step the cosine decay ends
// at, the rate after it. The defaults keep the rate constant and are not
// printed.
def RTX_WarmupStepsAttr : DefaultValuedAttr<I64Attr, "0">;
def RTX_DecayStepsAttr : DefaultValuedAttr<I64Attr, "0">;
def RTX_MinLrAttr : DefaultValuedAttr<F64Attr, "0.0">;

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

// Every rtx op refuses tensor types whose element count or byte size does
// not fit in int64 (RTX_TensorSizesFit, RTXInterfaces.td), before its own
// verifier computes with them: the kernels, rtx-run and the emitter index
// and allocate in int64, and a wrapped count would run on a wrong buffer.
class RTX_Op<string mnemonic, list<Trait> traits = []>
    : Op<RTX_Dialect, mnemonic, !listconcat([RTX_TensorSizesFit], traits)>;

// An op that runs a runtime kernel: its binding (KernelOpInterface) is in
// lib/Dialect/RTX/IR/RTXKernels.cpp.
defvar RTX_Kernel = DeclareOpInterfaceMethods<RTX_KernelOpInterface>;

// Computes on tensors and carries a sharding rule and a cost.
class RTX_ModelOpBase<string mnemonic, list<Trait> traits = []>
    : RTX_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<RTX_ShardingRuleOpInterface>,
        DeclareOpInterfaceMethods<RTX_CostOpInterface, ["getFlops"]>])>;

// A model op: computed by a runtime kernel, with a sharding rule and a cost.
class RTX_ModelOp<string mnemonic, list<Trait> traits = []>
    : RTX_ModelOpBase<mnemonic, !listconcat(traits, [RTX_Kernel])>;

// A model op of the forward pass: also has a vector-Jacobian product, which
// rtx-autodiff uses (lib/Dialect/RTX/IR/RTXVJP.cpp).
class RTX_DifferentiableOp<string mnemonic, list<Trait> traits = []>
    : RTX_ModelOp<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<RTX_VJPOpInterface>])>;

// A value that enters the model (parameter, input, constant): differentiable
// like a forward op, but produced by the executor rather than by a kernel.
class RTX_SourceOp<string mnemonic, list<Trait> traits = []>
    : RTX_ModelOpBase<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<RTX_VJPOpInterface>])>;

// An elementwise op on one tensor; `flopsPerElement` is its cost per element.
// `kind` names the op's rtxrt::UnaryKind (the kernel `unary`).
class RTX_UnaryOp<string mnemonic, int flopsPerElement, string kind,
                  list<Trait> traits = []>
    : RTX_DifferentiableOp<mnemonic, !listconcat(traits,
        [Pure, Elementwise, SameOperandsAndResultType])> {
  let arguments = (ins RTX_FloatTensor:$input);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::rtx::OpShardingRule $cppClass::getShardingRule() {
      return ::mlir::rtx::getElementwiseShardingRule(getOperation());
    }
    int64_t $cppClass::getFlops() {
      return }] # flopsPerElement # [{ * getType().getNumElements();
    }
    ::mlir::rtx::KernelCall $cppClass::getKernelCall() {
      return ::mlir::rtx::KernelCall("unary")
          .enumerator(::rtxrt::UnaryKind::}] # kind # [{)
          .tensor(getInput());
    }
  }];
}

// An elementwise op on two tensors of one type (broadcast explicitly first).
// `kind` names the op's rtxrt::BinaryKind (the kernel `binary`).
class RTX_BinaryOp<string mnemonic, string kind, list<Trait> traits = []>
    : RTX_DifferentiableOp<mnemonic, !listconcat(traits,
        [Pure, Elementwise, SameOperandsAndResultType])> {
  let arguments = (ins RTX_FloatTensor:$lhs, RTX_FloatTensor:$rhs);
  let results = (outs RTX_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::rtx::OpShardingRule $cppClass::getShardingRule() {
      return ::mlir::rtx::getElementwiseShardingRule(getOperation());
    }
    int64_t $cppClass::getFlops() { return getType().getNumElements(); }
    ::mlir::rtx::KernelCall $cppClass::getKernelCall() {
      return ::mlir::rtx::KernelCall("binary")
          .enumerator(::rtxrt::BinaryKind::}] # kind # [{)
          .tensor(getLhs())
          .tensor(getRhs());
    }
  }];
}

#endif // RTX_DIALECT_RTX_IR_RTXBASE_TD
