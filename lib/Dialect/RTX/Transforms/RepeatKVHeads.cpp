//===- RepeatKVHeads.cpp - the rtx-repeat-kv-heads pass -------------------===//
//
// Repeats the key/value heads of grouped-query attention when tp does not
// divide them, so that tp splits the attention by query head. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXREPEATKVHEADS
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
/// `kv` ([B, Hkv, S, D]) with each head repeated `group` times in a row:
/// head h of the result is head h / group of `kv`, the head rtx.attention
/// pairs with query head h.
Value repeatHeads(OpBuilder &b, Location loc, Value kv, int64_t group) {
  auto type = cast<RankedTensorType>(kv.getType());
  ArrayRef<int64_t> s = type.getShape();
  auto single = type.clone({s[0], s[1], 1, s[2], s[3]});
  auto repeated = type.clone({s[0], s[1], group, s[2], s[3]});
  Value r = ReshapeOp::create(b, loc, single, kv);
  r = BroadcastOp::create(b, loc, repeated, r,
                          b.getDenseI64ArrayAttr({0, 1, 2, 3, 4}));
  return ReshapeOp::create(b, loc, type.clone({s[0], s[1] * group, s[2], s[3]}),
                           r);
}

void repeatKVHeads(func::FuncOp f, int64_t tp) {
  for (auto attention : llvm::to_vector(f.getOps<AttentionOp>())) {
    int64_t queryHeads = attention.getQuery().getType().getDimSize(1);
    int64_t kvHeads = attention.getKey().getType().getDimSize(1);
    if (queryHeads % tp != 0 || kvHeads % tp == 0)
      continue;
    OpBuilder b(attention);
    int64_t group = queryHeads / kvHeads;
    Location loc = attention.getLoc();
    attention.getKeyMutable().assign(
        repeatHeads(b, loc, attention.getKey(), group));
    attention.getValueMutable().assign(
        repeatHeads(b, loc, attention.getValue(), group));
  }
}

struct RTXRepeatKVHeadsPass
    : mlir::rtx::impl::RTXRepeatKVHeadsBase<RTXRepeatKVHeadsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> meshOp = getSingleMesh(module, "rtx-repeat-kv-heads");
    if (failed(meshOp))
      return signalPassFailure();
    int64_t tp = MeshAxes(*meshOp).size("tp");
    if (tp <= 1)
      return;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        repeatKVHeads(f, tp);
  }
};
} // namespace
