//===- BucketCollectives.cpp - the rtx-bucket-collectives pass ------------===//
//
// Fuses runs of rtx.all_reduce ops into one all-reduce of their
// concatenation. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "FirstUse.h"

#include "mlir/IR/Builders.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXBUCKETCOLLECTIVES
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {

/// What makes two all-reduces fusable: one group and one reduction of one
/// element type.
bool sameCollective(AllReduceOp a, AllReduceOp b) {
  return a.getMesh() == b.getMesh() && a.getAxes() == b.getAxes() &&
         a.getKind() == b.getKind() &&
         a.getInput().getType().getElementType() ==
             b.getInput().getType().getElementType();
}

int64_t bytesOf(AllReduceOp op) {
  auto type = op.getInput().getType();
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The op of `block` defining `v`, or null when `v` is a block argument.
Operation *definer(Value v, Block &block) {
  Operation *def = v.getDefiningOp();
  return def ? block.findAncestorOpInBlock(*def) : nullptr;
}

/// Replaces the bucket's all-reduces by one, placed right after `after`
/// (the last definition of an input; null: the block's start); its result
/// is split back right before `firstUse` (the earliest use of a member;
/// null: at the block's end), so that rtx-schedule-overlap can let the
/// compute in between run while the collective is in flight.
void fuse(ArrayRef<AllReduceOp> bucket, Operation *after, Operation *firstUse) {
  AllReduceOp last = bucket.back();
  OpBuilder b(last);
  if (after)
    b.setInsertionPointAfter(after);
  else
    b.setInsertionPointToStart(last->getBlock());
  Location loc = b.getFusedLoc(llvm::to_vector(
      llvm::map_range(bucket, [](AllReduceOp op) { return op.getLoc(); })));
  Type element = last.getInput().getType().getElementType();
  SmallVector<Value> flat;
  SmallVector<Type> pieceTypes;
  int64_t total = 0;
  for (AllReduceOp op : bucket) {
    int64_t n = op.getInput().getType().getNumElements();
    auto flatType = RankedTensorType::get({n}, element);
    flat.push_back(ReshapeOp::create(b, loc, flatType, op.getInput()));
    pieceTypes.push_back(flatType);
    total += n;
  }
  auto bucketType = RankedTensorType::get({total}, element);
  Value joined = ConcatOp::create(b, loc, bucketType, flat, 0);
  Value reduced =
      AllReduceOp::create(b, loc, bucketType, joined, last.getMeshAttr(),
                          last.getAxesAttr(), last.getKindAttr());
  if (firstUse)
    b.setInsertionPoint(firstUse);
  else
    b.setInsertionPoint(last->getBlock()->getTerminator());
  auto pieces = SplitOp::create(b, loc, pieceTypes, reduced, 0);
  for (auto [i, piece] : llvm::enumerate(pieces.getResults())) {
    AllReduceOp op = bucket[i];
    Value result = ReshapeOp::create(b, loc, op.getResult().getType(), piece);
    op.getResult().replaceAllUsesWith(result);
  }
  for (AllReduceOp op : bucket)
    op->erase();
}

struct RTXBucketCollectivesPass
    : mlir::rtx::impl::RTXBucketCollectivesBase<RTXBucketCollectivesPass> {
  using RTXBucketCollectivesBase::RTXBucketCollectivesBase;

  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError() << "bucket-bytes must be at least 0, got "
                                 << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    for (Block &block : getOperation().getBody())
      bucketBlock(block);
  }

  void bucketBlock(Block &block) {
    struct Bucket {
      SmallVector<AllReduceOp> ops;
      Operation *lastDef = nullptr;  // the latest input definition
      Operation *firstUse = nullptr; // the earliest use of a result
      int64_t bytes = 0;
    };
    auto before = [](Operation *a, Operation *b) {
      // Null a: the block's start; null b: no use at all.
      return !b || (!a ? true : a->isBeforeInBlock(b));
    };
    auto later = [](Operation *a, Operation *b) {
      return !a ? b : (!b ? a : (a->isBeforeInBlock(b) ? b : a));
    };
    auto earlier = [](Operation *a, Operation *b) {
      return !a ? b : (!b ? a : (a->isBeforeInBlock(b) ? a : b));
    };
    SmallVector<Bucket> done;
    Bucket open;
    for (Operation &op : block) {
      auto reduce = dyn_cast<AllReduceOp>(&op);
      if (!reduce)
        continue;
      Operation *def = definer(reduce.getInput(), block);
      Operation *use = firstUseInBlock(reduce.getResult(), block);
      // The fused collective goes after every input and before every use.
      bool fits =
          !open.ops.empty() && sameCollective(open.ops.front(), reduce) &&
          before(later(open.lastDef, def), earlier(open.firstUse, use)) &&
          !llvm::is_contained(open.ops, dyn_cast_or_null<AllReduceOp>(def)) &&
          (bucketBytes == 0 || open.bytes + bytesOf(reduce) <= bucketBytes);
      if (!fits) {
        if (open.ops.size() > 1)
          done.push_back(open);
        open = Bucket();
      }
      open.ops.push_back(reduce);
      open.lastDef = later(open.lastDef, def);
      open.firstUse = earlier(open.firstUse, use);
      open.bytes += bytesOf(reduce);
    }
    if (open.ops.size() > 1)
      done.push_back(open);
    for (Bucket &bucket : done)
      fuse(bucket.ops, bucket.lastDef, bucket.firstUse);
  }
};
} // namespace
