//===- FactorAssignment.cpp - which mesh axes split each factor -----------===//

#include "FactorAssignment.h"

using namespace mlir;
using namespace mlir::rtx;

SmallVector<SmallVector<std::string, 2>> mlir::rtx::assignFactorAxes(
    const OpShardingRule &rule, ArrayRef<FactorCandidate> candidates,
    const llvm::StringSet<> &reserved,
    llvm::function_ref<int64_t(ArrayRef<std::string>)> product,
    llvm::StringSet<> &used) {
  SmallVector<SmallVector<std::string, 2>> factorAxes(rule.getNumFactors());
  llvm::StringSet<> taken;
  for (const auto &axis : reserved)
    taken.insert(axis.getKey());
  for (const FactorCandidate &candidate : candidates) {
    const Layout &layout = candidate.layout;
    for (size_t d = 0; d < candidate.dims.size() && d < layout.dims.size();
         ++d) {
      if (candidate.dims[d].empty() || layout.dims[d].empty())
        continue;
      int64_t f = candidate.dims[d].front();
      const auto &axes = layout.dims[d];
      if (!factorAxes[f].empty() ||
          rule.factorKinds[f] == FactorKind::NeedReplication ||
          rule.factorSizes[f] % product(axes) != 0 ||
          llvm::any_of(axes,
                       [&](const std::string &a) { return taken.contains(a); }))
        continue;
      factorAxes[f].assign(axes.begin(), axes.end());
      for (const std::string &a : axes)
        taken.insert(a);
    }
  }
  auto dropMinorSplits = [&](ArrayRef<OpShardingRule::ValueFactors> values) {
    for (const auto &dims : values)
      for (const auto &dim : dims)
        for (size_t k = 1; k < dim.size(); ++k)
          factorAxes[dim[k]].clear();
  };
  dropMinorSplits(rule.operandFactors);
  dropMinorSplits(rule.resultFactors);
  for (auto &axes : factorAxes) {
    if (llvm::any_of(axes,
                     [&](const std::string &a) { return used.contains(a); }))
      axes.clear();
    for (const std::string &a : axes)
      used.insert(a);
  }
  return factorAxes;
}
