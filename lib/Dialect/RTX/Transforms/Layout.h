//===- Layout.h - mutable per-value distribution ----------------*- C++ -*-===//
//
// The working form of a #rtx.sharding inside the propagation and partition
// passes: per dimension the axes that split it (major to minor), and the
// axes over which the value holds partial sums.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_LIB_TRANSFORMS_LAYOUT_H
#define RTX_LIB_TRANSFORMS_LAYOUT_H

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::rtx {

struct Layout {
  llvm::SmallVector<llvm::SmallVector<std::string, 2>, 4> dims;
  llvm::SmallVector<std::string, 2> partial;

  static Layout replicated(int64_t rank) {
    Layout layout;
    layout.dims.resize(rank);
    return layout;
  }
  static Layout fromAttr(ShardingAttr attr);
  ShardingAttr toAttr(MLIRContext *ctx, llvm::StringRef mesh) const;

  bool operator==(const Layout &other) const {
    return dims == other.dims && partial == other.partial;
  }
  bool operator!=(const Layout &other) const { return !(*this == other); }
  bool isReplicated() const;
  /// True when `axis` splits a dimension or is partial.
  bool uses(llvm::StringRef axis) const;
  std::string str() const;
  /// `["dp", "tp"]`, for diagnostics.
  static std::string axesStr(llvm::ArrayRef<std::string> axes);
};

/// Sizes of a mesh's axes by name.
class MeshAxes {
public:
  MeshAxes() = default;
  explicit MeshAxes(MeshOp mesh);
  int64_t size(llvm::StringRef axis) const;
  int64_t product(llvm::ArrayRef<std::string> axes) const;
  llvm::StringRef name() const { return name_; }
  MeshOp op() const { return op_; }

private:
  MeshOp op_;
  std::string name_;
  llvm::SmallVector<std::pair<std::string, int64_t>> axes_;
};

/// The single mesh of a module, or an error on the module.
FailureOr<MeshOp> getSingleMesh(ModuleOp module, llvm::StringRef pass);

/// The local shape of `global` under `layout`.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> global,
                                      const Layout &layout,
                                      const MeshAxes &mesh);

} // namespace mlir::rtx

#endif // RTX_LIB_TRANSFORMS_LAYOUT_H
