//===- RTXTypes.td - rtx types -----------------------------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXTYPES_TD
#define RTX_DIALECT_RTX_IR_RTXTYPES_TD

include "rtx/Dialect/RTX/IR/RTXDialect.td"
include "mlir/IR/AttrTypeBase.td"

def RTX_TokenType : TypeDef<RTX_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "token of an async collective";
  let description = [{
    Returned by an async collective (`rtx.all_reduce_start`, ...) and consumed
    by `rtx.wait`. It carries the type of the value the wait yields; a token
    without a value type (from `rtx.send_start`) yields nothing.

    Example:

    ```mlir
    %t = rtx.all_reduce_start %x on @mesh_tp2 ["tp"] sum
        : tensor<4x8xf32> -> !rtx.token<tensor<4x8xf32>>
    %y = rtx.wait %t : !rtx.token<tensor<4x8xf32>> -> tensor<4x8xf32>
    ```
  }];
  let parameters = (ins OptionalParameter<"::mlir::Type">:$valueType);
  let assemblyFormat = "(`<` $valueType^ `>`)?";
  let genVerifyDecl = 1;
}

#endif // RTX_DIALECT_RTX_IR_RTXTYPES_TD
