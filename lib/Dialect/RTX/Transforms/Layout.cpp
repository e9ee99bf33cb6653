//===- Layout.cpp - mutable per-value distribution ------------------------===//

#include "Layout.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::rtx;

Layout Layout::fromAttr(ShardingAttr attr) {
  Layout layout;
  for (int64_t d = 0; d < attr.getRank(); ++d) {
    layout.dims.emplace_back();
    for (StringRef axis : attr.getDimAxes(d))
      layout.dims.back().push_back(axis.str());
  }
  for (StringRef axis : attr.getPartialAxes())
    layout.partial.push_back(axis.str());
  return layout;
}

ShardingAttr Layout::toAttr(MLIRContext *ctx, StringRef mesh) const {
  SmallVector<SmallVector<StringRef>> dimAxes;
  for (const auto &axes : dims) {
    dimAxes.emplace_back();
    for (const std::string &axis : axes)
      dimAxes.back().push_back(axis);
  }
  SmallVector<StringRef> partialAxes;
  for (const std::string &axis : partial)
    partialAxes.push_back(axis);
  return ShardingAttr::get(ctx, mesh, dimAxes, partialAxes);
}

bool Layout::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const auto &axes) { return axes.empty(); });
}

bool Layout::uses(StringRef axis) const {
  if (llvm::is_contained(partial, axis))
    return true;
  return llvm::any_of(dims, [&](const auto &axes) {
    return llvm::is_contained(axes, axis);
  });
}

std::string Layout::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(dims, os, [&](const auto &axes) {
    os << '[';
    llvm::interleaveComma(axes, os,
                          [&](const std::string &a) { os << '"' << a << '"'; });
    os << ']';
  });
  os << ']';
  if (!partial.empty()) {
    os << " partial [";
    llvm::interleaveComma(partial, os,
                          [&](const std::string &a) { os << '"' << a << '"'; });
    os << ']';
  }
  return s;
}

MeshAxes::MeshAxes(MeshOp mesh) : op_(mesh), name_(mesh.getSymName().str()) {
  for (auto [name, size] :
       llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
    axes_.push_back({cast<StringAttr>(name).getValue().str(), size});
}

int64_t MeshAxes::size(StringRef axis) const {
  for (const auto &[name, size] : axes_)
    if (name == axis)
      return size;
  return 1;
}

int64_t MeshAxes::product(ArrayRef<std::string> axes) const {
  int64_t n = 1;
  for (const std::string &axis : axes)
    n *= size(axis);
  return n;
}

FailureOr<MeshOp> mlir::rtx::getSingleMesh(ModuleOp module, StringRef pass) {
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return module.emitError()
           << pass << " needs exactly one rtx.mesh in the module, found "
           << meshes.size();
  return meshes.front();
}

SmallVector<int64_t> mlir::rtx::localShape(ArrayRef<int64_t> global,
                                           const Layout &layout,
                                           const MeshAxes &mesh) {
  SmallVector<int64_t> local(global);
  for (size_t d = 0; d < local.size() && d < layout.dims.size(); ++d)
    local[d] /= mesh.product(layout.dims[d]);
  return local;
}

std::string Layout::axesStr(ArrayRef<std::string> axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", \"" : "\"") + axes[i] + "\"";
  return s + "]";
}
