//===- RTXAttrs.td - rtx attributes ------------------------*- tablegen -*-===//

#ifndef RTX_DIALECT_RTX_IR_RTXATTRS_TD
#define RTX_DIALECT_RTX_IR_RTXATTRS_TD

include "rtx/Dialect/RTX/IR/RTXDialect.td"
include "rtx/Dialect/RTX/IR/RTXEnums.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class RTX_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<RTX_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def RTX_ShardingAttr : RTX_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor is distributed over a mesh";
  let description = [{
    For every dimension of a tensor, the ordered list of mesh axes that split
    it (major to minor; empty means the dimension is not split), and the set of
    mesh axes over which the value holds partial sums that still have to be
    added. Axes that appear nowhere replicate the value. An axis may appear at
    most once in a sharding.

    Example:

    ```mlir
    // rows split over "dp", columns replicated:
    #rtx.sharding<@mesh_dp2_tp4, [["dp"], []]>
    // dim 0 split over "dp" then "sp"; a partial sum over "tp":
    #rtx.sharding<@mesh_dp2_sp2_tp2, [["dp", "sp"], []], partial = ["tp"]>
    // a fully replicated scalar:
    #rtx.sharding<@mesh_dp2_tp4, []>
    ```

    It is attached as the discardable attribute `rtx.sharding` to ops and to
    function arguments and results; the dialect verifies it against the mesh
    (the mesh exists, every axis exists, no axis is used twice, the rank equals
    the tensor's rank).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    "::mlir::ArrayAttr":$dims,
    "::mlir::ArrayAttr":$partial
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of tensor dimensions this sharding describes.
    int64_t getRank() const { return getDims().size(); }
    /// Mesh axes that split dimension `dim`, major to minor.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(int64_t dim) const;
    /// Mesh axes over which the value holds partial sums.
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    /// True when no dimension is split and there are no partial sums.
    bool isFullyReplicated() const;
    /// Builds a sharding from plain axis names.
    static ShardingAttr get(::mlir::MLIRContext *ctx, ::llvm::StringRef mesh,
        ::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>> dims,
        ::llvm::ArrayRef<::llvm::StringRef> partial = {});
  }];
}

def RTX_InitAttr : RTX_Attr<"Init", "init"> {
  let summary = "a parameter initializer";
  let description = [{
    How a parameter's initial value is drawn: `zeros`, `ones`, `constant(v)`,
    `normal(mean, std)` or `uniform(low, high)`. Random values come from a
    counter-based generator keyed by (seed, parameter name, element index), so
    they do not depend on how the parameter is sharded.

    Example:

    ```mlir
    #rtx.init<normal(0.0, 0.02)>
    #rtx.init<zeros>
    #rtx.init<uniform(-0.1, 0.1)>
    ```
  }];
  let parameters = (ins
    "::mlir::rtx::InitKind":$kind,
    "::llvm::APFloat":$a,
    "::llvm::APFloat":$b
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    static InitAttr get(::mlir::MLIRContext *ctx, InitKind kind,
                        double a = 0.0, double b = 0.0);
    /// Number of numeric arguments the kind takes (0, 1 or 2).
    static unsigned getNumArgs(InitKind kind);
    /// Prints/parses the body `normal(0.0, 0.02)` without the `#rtx.init<>`
    /// wrapper; shared with the `rtx.param` assembly format.
    void printBody(::mlir::AsmPrinter &printer) const;
    static InitAttr parseBody(::mlir::AsmParser &parser);
  }];
}

#endif // RTX_DIALECT_RTX_IR_RTXATTRS_TD
