//===- RTXEnums.td - rtx enumerations ----------------------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXENUMS_TD
#define RTX_DIALECT_RTX_IR_RTXENUMS_TD

include "rtx/Dialect/RTX/IR/RTXDialect.td"
include "mlir/IR/EnumAttr.td"

def RTX_ReductionKind : I32EnumAttr<"ReductionKind",
    "how values are combined by a reduction or a collective", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Mean", 1, "mean">,
  I32EnumAttrCase<"Max", 2, "max">,
  I32EnumAttrCase<"Min", 3, "min">
]> {
  let cppNamespace = "::mlir::rtx";
}
// The enums are stored as integer attributes (like arith's predicates): ops
// print the keyword, the generic form prints `0 : i32`, and both parse back.
defvar RTX_ReductionKindAttr = RTX_ReductionKind;

def RTX_InitKind : I32EnumAttr<"InitKind",
    "how a parameter's initial value is drawn", [
  I32EnumAttrCase<"Zeros", 0, "zeros">,
  I32EnumAttrCase<"Ones", 1, "ones">,
  I32EnumAttrCase<"Constant", 2, "constant">,
  I32EnumAttrCase<"Normal", 3, "normal">,
  I32EnumAttrCase<"Uniform", 4, "uniform">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::rtx";
}

def RTX_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "an elementwise comparison", [
  I32EnumAttrCase<"EQ", 0, "eq">,
  I32EnumAttrCase<"NE", 1, "ne">,
  I32EnumAttrCase<"LT", 2, "lt">,
  I32EnumAttrCase<"LE", 3, "le">,
  I32EnumAttrCase<"GT", 4, "gt">,
  I32EnumAttrCase<"GE", 5, "ge">
]> {
  let cppNamespace = "::mlir::rtx";
}
defvar RTX_ComparePredicateAttr = RTX_ComparePredicate;

def RTX_GemmEpilogue : I32EnumAttr<"GemmEpilogue",
    "what rtx.gemm_epilogue computes after its product", [
  I32EnumAttrCase<"BiasGelu", 0, "bias_gelu">,
  I32EnumAttrCase<"BiasGeluTanh", 1, "bias_gelu_tanh">,
  I32EnumAttrCase<"BiasGeluAux", 2, "bias_gelu_aux">,
  I32EnumAttrCase<"BiasGeluTanhAux", 3, "bias_gelu_tanh_aux">,
  I32EnumAttrCase<"BiasGrad", 4, "bias_grad">,
  I32EnumAttrCase<"DGelu", 5, "dgelu">,
  I32EnumAttrCase<"DGeluTanh", 6, "dgelu_tanh">
]> {
  let cppNamespace = "::mlir::rtx";
}
defvar RTX_GemmEpilogueAttr = RTX_GemmEpilogue;

#endif // RTX_DIALECT_RTX_IR_RTXENUMS_TD
