//===- ScheduleOverlap.cpp - the rtx-schedule-overlap pass ----------------===//
//
// Splits all-reduces into start/wait pairs with the wait at the first use.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "FirstUse.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXSCHEDULEOVERLAP
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXScheduleOverlapPass
    : mlir::rtx::impl::RTXScheduleOverlapBase<RTXScheduleOverlapPass> {
  using RTXScheduleOverlapBase::RTXScheduleOverlapBase;

  void runOnOperation() override {
    SmallVector<AllReduceOp> reduces;
    getOperation().walk([&](AllReduceOp op) { reduces.push_back(op); });
    for (AllReduceOp op : reduces) {
      Operation *first = firstUseInBlock(op.getResult(), *op->getBlock());
      // Nothing to overlap with: no use here, or the use comes next.
      if (!first || first == op->getNextNode())
        continue;
      OpBuilder b(op);
      auto tokenType = TokenType::get(op.getContext(), op.getType());
      auto start = AllReduceStartOp::create(b, op.getLoc(), tokenType,
                                            op.getInput(), op.getMeshAttr(),
                                            op.getAxesAttr(), op.getKindAttr());
      // The sharding describes the reduced tensor: the wait's result, not
      // the start's token.
      Attribute sharding = op->getAttr(RTXDialect::getShardingAttrName());
      for (NamedAttribute attr : op->getDiscardableAttrs())
        if (attr.getName() != RTXDialect::getShardingAttrName())
          start->setAttr(attr.getName(), attr.getValue());
      b.setInsertionPoint(first);
      auto wait = WaitOp::create(b, op.getLoc(), op.getType(), start);
      if (sharding)
        wait->setAttr(RTXDialect::getShardingAttrName(), sharding);
      op.getResult().replaceAllUsesWith(wait.getResult());
      op->erase();
    }
  }
};
} // namespace
