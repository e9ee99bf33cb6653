//===- AddMesh.cpp - the rtx-add-mesh pass --------------------------------===//
//
// Adds the module's rtx.mesh from `mesh=dp:2,tp:2`. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXADDMESH
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXAddMeshPass : mlir::rtx::impl::RTXAddMeshBase<RTXAddMeshPass> {
  using RTXAddMeshBase::RTXAddMeshBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<StringRef> names;
    SmallVector<int64_t> sizes;
    SmallVector<StringRef> parts;
    StringRef(mesh).split(parts, ',', -1, false);
    // An empty `mesh=` (a shell variable that was not set, say) would give
    // a mesh without axes: a single-device program where N were meant.
    if (parts.empty()) {
      mlir::emitError(module.getLoc())
          << "rtx-add-mesh: mesh='" << mesh
          << "' names no axis; expected name:size, e.g. mesh=dp:2,tp:2";
      return signalPassFailure();
    }
    int64_t ranks = 1;
    for (StringRef part : parts) {
      auto [name, size] = part.trim().split(':');
      int64_t value;
      if (name.empty() || size.getAsInteger(10, value) || value < 1) {
        mlir::emitError(module.getLoc())
            << "rtx-add-mesh: bad mesh axis '" << part
            << "'; expected name:size, e.g. mesh=dp:2,tp:2";
        return signalPassFailure();
      }
      if (llvm::is_contained(names, name)) {
        mlir::emitError(module.getLoc())
            << "rtx-add-mesh: mesh axis '" << name << "' given twice";
        return signalPassFailure();
      }
      if (llvm::MulOverflow(ranks, value, ranks)) {
        mlir::emitError(module.getLoc())
            << "rtx-add-mesh: mesh=" << mesh
            << " has more ranks than int64 can count (the product of the "
               "axis sizes overflows)";
        return signalPassFailure();
      }
      names.push_back(name);
      sizes.push_back(value);
    }
    if (!module.getOps<MeshOp>().empty()) {
      mlir::emitError(module.getLoc())
          << "rtx-add-mesh: the module already has a mesh";
      return signalPassFailure();
    }
    // Named by its shape (Shardy's convention): @mesh_dp2_tp2.
    std::string meshName = "mesh";
    for (auto [name, size] : llvm::zip(names, sizes))
      meshName += ("_" + name + Twine(size)).str();
    OpBuilder b(module.getBodyRegion());
    MeshOp::create(b, module.getLoc(), meshName, b.getStrArrayAttr(names),
                   b.getDenseI64ArrayAttr(sizes));
  }
};
} // namespace
