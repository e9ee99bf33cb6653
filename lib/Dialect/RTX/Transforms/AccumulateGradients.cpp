//===- AccumulateGradients.cpp - the rtx-accumulate-gradients pass --------===//
//
// Replicates a per-micro-batch forward + backward function over k slices of
// a k-times larger batch and averages the results. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/Transforms/Passes.h"

#include "MicroBatch.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::rtx {
#define GEN_PASS_DEF_RTXACCUMULATEGRADIENTS
#include "rtx/Dialect/RTX/Transforms/Passes.h.inc"
} // namespace mlir::rtx

using namespace mlir;
using namespace mlir::rtx;

namespace {
struct RTXAccumulateGradientsPass
    : mlir::rtx::impl::RTXAccumulateGradientsBase<RTXAccumulateGradientsPass> {
  using RTXAccumulateGradientsBase::RTXAccumulateGradientsBase;

  void runOnOperation() override {
    // The value, not the Option: streaming the cl::opt itself printed a
    // raw byte for micro-batches=-2.
    int64_t k = microBatches;
    if (k < 1) {
      getOperation().emitError()
          << "rtx-accumulate-gradients: micro-batches=" << k
          << " must be at least 1 (1: no gradient accumulation)";
      return signalPassFailure();
    }
    if (microBatches == 1 || getOperation().isExternal())
      return;
    if (failed(accumulate(getOperation())))
      signalPassFailure();
  }

  LogicalResult accumulate(func::FuncOp function);
};
} // namespace

LogicalResult RTXAccumulateGradientsPass::accumulate(func::FuncOp function) {
  int64_t k = microBatches;
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (BlockArgument arg : body.getArguments())
    if (cast<RankedTensorType>(arg.getType()).getRank() == 0)
      return function.emitError()
             << "argument " << arg.getArgNumber()
             << " is a scalar: there is no batch dimension to split into "
             << k << " micro-batches";

  SmallVector<Operation *> original;
  for (Operation &op : body.without_terminator())
    original.push_back(&op);

  OpBuilder b(ret);
  Location loc = function.getLoc();
  // Batch inputs grow k times (MicroBatch.h says which rows micro-batch j
  // takes).
  auto sliceOf = [&](Value whole, int64_t index, RankedTensorType micro) {
    return sliceMicroBatch(b, loc, whole, index, k, micro);
  };

  SmallVector<InputOp> inputs(body.getOps<InputOp>());
  for (InputOp input : inputs)
    if (input.getType().getRank() == 0)
      return input.emitError() << "input \"" << input.getName()
                               << "\" is a scalar: there is no batch "
                                  "dimension to split";

  SmallVector<SmallVector<Value>> perMicroBatch;
  for (int64_t index = 0; index < k; ++index) {
    IRMapping mapping;
    b.setInsertionPoint(ret);
    for (BlockArgument arg : body.getArguments())
      mapping.map(arg, sliceOf(arg, index,
                               cast<RankedTensorType>(arg.getType())));
    for (InputOp input : inputs)
      mapping.map(input.getResult(),
                  sliceOf(input.getResult(), index, input.getType()));
    for (Operation *op : original) {
      // Parameters and inputs are declared once and shared.
      if (isa<ParamOp, InputOp>(op))
        continue;
      b.clone(*op, mapping);
    }
    SmallVector<Value> results;
    for (Value v : ret.getOperands())
      results.push_back(mapping.lookupOrDefault(v));
    perMicroBatch.push_back(results);
  }

  // Average every result over the micro-batches (gradients: the sum
  // divided by k, which for a mean loss is the gradient of the mean).
  SmallVector<Value> averaged;
  for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
    Value sum = perMicroBatch[0][r];
    for (int64_t index = 1; index < k; ++index)
      sum = AddOp::create(b, loc, sum, perMicroBatch[index][r]);
    auto type = cast<RankedTensorType>(sum.getType());
    Value scale = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, b.getFloatAttr(type.getElementType(), 1.0 / double(k))));
    averaged.push_back(MulOp::create(b, loc, sum, scale));
  }
  func::ReturnOp::create(b, ret.getLoc(), averaged);
  ret.erase();

  // The original single-micro-batch computation is now dead; the inputs'
  // and arguments' types grow.
  for (Operation *op : llvm::reverse(original))
    if (!isa<ParamOp, InputOp>(op))
      op->erase();
  for (BlockArgument arg : body.getArguments())
    arg.setType(growBatch(arg.getType(), k));
  for (InputOp input : inputs)
    input.getResult().setType(growBatch(input.getType(), k));
  function.setFunctionType(b.getFunctionType(
      body.getArgumentTypes(), function.getResultTypes()));
  return success();
}
