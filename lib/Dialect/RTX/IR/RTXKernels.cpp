//===- RTXKernels.cpp - each op's binding to its runtime kernel ------===//
//
// KernelOpInterface for the rtx ops: which kernel of
// runtime/include/rtxrt/kernels/KernelApi.def an op runs, and how its operands and
// attributes become the kernel's arguments. rtx-run's interpreter and the
// C++/CUDA emitter both work from these bindings, so an op with a kernel
// needs no code in either. (Unary and binary elementwise ops bind in
// RTXBase.td, from their class's kind.) rtx-run and rtx-translate check
// each binding against the kernel's registered signature before using it
// (KernelBinding.cpp); KernelBindingTest checks those of the example train
// steps.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

using namespace mlir;
using namespace mlir::rtx;

//===----------------------------------------------------------------------===//
// The dialect's enums as the runtime's: one mapping, checked here
//===----------------------------------------------------------------------===//

#define RTX_COUNT(name) +1
#define RTX_CHECK_ENUM(OdsEnum, RuntimeEnum, LIST)                             \
  static_assert(getMaxEnumValFor##OdsEnum() + 1 == 0 LIST(RTX_COUNT),          \
                #OdsEnum " and rtxrt::" #RuntimeEnum                           \
                         " have different numbers of enumerators");            \
  rtxrt::RuntimeEnum mlir::rtx::toRuntime(OdsEnum value) {                     \
    return static_cast<rtxrt::RuntimeEnum>(static_cast<int>(value));           \
  }
#define RTX_CHECK_REDUCE(name)                                                 \
  static_assert(static_cast<int>(ReductionKind::name) ==                       \
                static_cast<int>(rtxrt::ReduceKind::name));
#define RTX_CHECK_COMPARE(name)                                                \
  static_assert(static_cast<int>(ComparePredicate::name) ==                    \
                static_cast<int>(rtxrt::CompareKind::name));
#define RTX_CHECK_UNARY_FN(name)                                               \
  static_assert(static_cast<int>(UnaryFn::name) ==                             \
                static_cast<int>(rtxrt::UnaryFn::name));
#define RTX_CHECK_INIT(name)                                                   \
  static_assert(static_cast<int>(InitKind::name) ==                            \
                static_cast<int>(rtxrt::InitKind::name));
RTXRT_REDUCE_KINDS(RTX_CHECK_REDUCE)
RTXRT_COMPARE_KINDS(RTX_CHECK_COMPARE)
RTXRT_UNARY_FNS(RTX_CHECK_UNARY_FN)
RTXRT_INIT_KINDS(RTX_CHECK_INIT)
#define RTX_CHECK_GEMM_EPILOGUE(name)                                          \
  static_assert(static_cast<int>(GemmEpilogue::name) ==                        \
                static_cast<int>(rtxrt::GemmEpilogue::name));
RTXRT_GEMM_EPILOGUES(RTX_CHECK_GEMM_EPILOGUE)
RTX_CHECK_ENUM(ReductionKind, ReduceKind, RTXRT_REDUCE_KINDS)
RTX_CHECK_ENUM(ComparePredicate, CompareKind, RTXRT_COMPARE_KINDS)
RTX_CHECK_ENUM(UnaryFn, UnaryFn, RTXRT_UNARY_FNS)
RTX_CHECK_ENUM(InitKind, InitKind, RTXRT_INIT_KINDS)
RTX_CHECK_ENUM(GemmEpilogue, GemmEpilogue, RTXRT_GEMM_EPILOGUES)

//===----------------------------------------------------------------------===//
// KernelCall helpers
//===----------------------------------------------------------------------===//

KernelCall &KernelCall::dtype(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return add(KernelArg::ElementType{type});
}

KernelCall &KernelCall::vocabShard(ArrayAttr axes, int64_t rows) {
  if (!axes)
    return integer(0).integer(rows);
  KernelArg::RankDependent offset{KernelArg::RankDependent::GroupIndexTimes};
  for (Attribute axis : axes)
    offset.axes.push_back(cast<StringAttr>(axis).getValue().str());
  offset.factor = rows;
  KernelArg::RankDependent vocab = offset;
  vocab.kind = KernelArg::RankDependent::GroupSizeTimes;
  add(std::move(offset));
  return add(std::move(vocab));
}

KernelCall &KernelCall::localBlock(Attribute sharding, Type type) {
  KernelArg::RankDependent shape{KernelArg::RankDependent::BlockGlobalShape};
  // An op with several results annotates one sharding per result.
  if (auto perResult = dyn_cast_or_null<ArrayAttr>(sharding))
    sharding = perResult.empty() ? Attribute() : perResult[0];
  shape.sharding = sharding;
  ArrayRef<int64_t> local = cast<RankedTensorType>(type).getShape();
  shape.shape.assign(local.begin(), local.end());
  KernelArg::RankDependent offsets = shape;
  offsets.kind = KernelArg::RankDependent::BlockOffsets;
  add(std::move(shape));
  return add(std::move(offsets));
}

static int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

KernelCall MatmulOp::getKernelCall() {
  return KernelCall("matmul")
      .tensor(getLhs())
      .tensor(getRhs())
      .flag(getTransposeLhs())
      .flag(getTransposeRhs());
}

KernelCall BatchMatmulOp::getKernelCall() {
  return KernelCall("batchMatmul")
      .tensor(getLhs())
      .tensor(getRhs())
      .flag(getTransposeLhs())
      .flag(getTransposeRhs());
}

KernelCall LinearOp::getKernelCall() {
  return KernelCall("linear")
      .tensor(getInput())
      .tensor(getWeight())
      .tensor(getBias());
}

KernelCall GemmEpilogueOp::getKernelCall() {
  return KernelCall("gemmEpilogue")
      .enumerator(toRuntime(getEpilogue()))
      .tensor(getLhs())
      .tensor(getRhs())
      .flag(getTransposeLhs())
      .flag(getTransposeRhs())
      .tensor(getBias())
      .tensor(getPre());
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

KernelCall GeluOp::getKernelCall() {
  return KernelCall("unary")
      .enumerator(getApproximate() ? rtxrt::UnaryKind::GeluTanh
                                   : rtxrt::UnaryKind::Gelu)
      .tensor(getInput());
}

KernelCall SwiGLUOp::getKernelCall() {
  return KernelCall("swiglu").tensor(getGate()).tensor(getUp());
}

KernelCall ConvertOp::getKernelCall() {
  return KernelCall("convert").tensor(getInput()).dtype(getType());
}

KernelCall CompareOp::getKernelCall() {
  return KernelCall("compare")
      .enumerator(toRuntime(getPredicate()))
      .tensor(getLhs())
      .tensor(getRhs());
}

KernelCall WhereOp::getKernelCall() {
  return KernelCall("where")
      .tensor(getCondition())
      .tensor(getOnTrue())
      .tensor(getOnFalse());
}

KernelCall MaskedFillOp::getKernelCall() {
  return KernelCall("maskedFill")
      .tensor(getInput())
      .tensor(getMask())
      .real(getValue());
}

KernelCall DropoutOp::getKernelCall() {
  // The mask is drawn per global element, so a shard needs its place.
  return KernelCall("dropout")
      .tensor(getInput())
      .real(getRate())
      .integer(static_cast<int64_t>(getSeed()))
      .localBlock((*this)->getAttr(RTXDialect::getShardingAttrName()),
                  getType());
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, attention
//===----------------------------------------------------------------------===//

KernelCall LayerNormOp::getKernelCall() {
  return KernelCall("layerNorm")
      .tensor(getInput())
      .tensor(getScale())
      .tensor(getBias())
      .real(getEpsilon());
}

KernelCall RMSNormOp::getKernelCall() {
  return KernelCall("rmsNorm")
      .tensor(getInput())
      .tensor(getScale())
      .real(getEpsilon());
}

KernelCall SoftmaxOp::getKernelCall() {
  return KernelCall("softmax")
      .tensor(getInput())
      .integer(static_cast<int64_t>(getDim()));
}

KernelCall RopeOp::getKernelCall() {
  return KernelCall("rope")
      .tensor(getInput())
      .real(getTheta())
      .integer(static_cast<int64_t>(getOffset()));
}

KernelCall AttentionOp::getKernelCall() {
  return KernelCall("attention")
      .tensor(getQuery())
      .tensor(getKey())
      .tensor(getValue())
      .flag(getCausal())
      .real(getEffectiveScale());
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

KernelCall EmbeddingOp::getKernelCall() {
  return KernelCall("embedding")
      .tensor(getTable())
      .tensor(getIds())
      .vocabShard(getVocabAxesAttr(), getTable().getType().getDimSize(0));
}

KernelCall CrossEntropyOp::getKernelCall() {
  return KernelCall("crossEntropy")
      .tensor(getLogits())
      .tensor(getLabels())
      .ignoreIndex(getIgnoreIndex());
}

KernelCall VocabLogitStatsOp::getKernelCall() {
  return KernelCall("vocabLogitStats")
      .tensor(getLogits())
      .tensor(getLabels())
      .vocabShard(getAxesAttr(), lastDim(getLogits()))
      .ignoreIndex(getIgnoreIndex());
}

KernelCall VocabCrossEntropyOp::getKernelCall() {
  return KernelCall("vocabCrossEntropy")
      .tensor(getMax())
      .tensor(getSumExp())
      .tensor(getLabelLogit())
      .tensor(getLabels())
      .ignoreIndex(getIgnoreIndex());
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

KernelCall ReshapeOp::getKernelCall() {
  return KernelCall("reshape").tensor(getInput()).ints(getType().getShape());
}

KernelCall TransposeOp::getKernelCall() {
  return KernelCall("transpose").tensor(getInput()).ints(getPermutation());
}

KernelCall SliceOp::getKernelCall() {
  return KernelCall("slice")
      .tensor(getInput())
      .ints(getStarts())
      .ints(getLimits());
}

KernelCall SplitOp::getKernelCall() {
  int64_t dim = static_cast<int64_t>(getDim());
  SmallVector<int64_t> sizes;
  for (Value r : getResults())
    sizes.push_back(cast<RankedTensorType>(r.getType()).getDimSize(dim));
  return KernelCall("split").tensor(getInput()).integer(dim).ints(sizes);
}

KernelCall ConcatOp::getKernelCall() {
  return KernelCall("concat")
      .tensors(getInputs())
      .integer(static_cast<int64_t>(getDim()));
}

KernelCall BroadcastOp::getKernelCall() {
  return KernelCall("broadcast")
      .tensor(getInput())
      .ints(getDims())
      .ints(getType().getShape());
}

KernelCall ReduceOp::getKernelCall() {
  return KernelCall("reduce")
      .enumerator(toRuntime(getKind()))
      .tensor(getInput())
      .ints(getDims())
      .flag(getKeepdim());
}

KernelCall PadOp::getKernelCall() {
  return KernelCall("pad").tensor(getInput()).ints(getLow()).ints(getHigh());
}

//===----------------------------------------------------------------------===//
// Backward pass
//===----------------------------------------------------------------------===//

KernelCall UnaryGradOp::getKernelCall() {
  return KernelCall("unaryGrad")
      .enumerator(toRuntime(getFn()))
      .tensor(getInput())
      .tensor(getResultGrad());
}

KernelCall LayerNormGradOp::getKernelCall() {
  return KernelCall("layerNormGrad")
      .tensor(getInput())
      .tensor(getScale())
      .tensor(getResultGrad())
      .real(getEpsilon());
}

KernelCall RMSNormGradOp::getKernelCall() {
  return KernelCall("rmsNormGrad")
      .tensor(getInput())
      .tensor(getScale())
      .tensor(getResultGrad())
      .real(getEpsilon());
}

KernelCall SoftmaxGradOp::getKernelCall() {
  return KernelCall("softmaxGrad")
      .tensor(getResult())
      .tensor(getResultGrad())
      .integer(static_cast<int64_t>(getDim()));
}

KernelCall RopeGradOp::getKernelCall() {
  return KernelCall("ropeGrad")
      .tensor(getResultGrad())
      .real(getTheta())
      .integer(static_cast<int64_t>(getOffset()));
}

KernelCall AttentionGradOp::getKernelCall() {
  return KernelCall("attentionGrad")
      .tensor(getQuery())
      .tensor(getKey())
      .tensor(getValue())
      .tensor(getResultGrad())
      .flag(getCausal())
      .real(getEffectiveScale());
}

KernelCall EmbeddingGradOp::getKernelCall() {
  return KernelCall("embeddingGrad")
      .tensor(getIds())
      .tensor(getResultGrad())
      .ints(getType().getShape())
      .vocabShard(getVocabAxesAttr(), getType().getDimSize(0));
}

KernelCall CrossEntropyGradOp::getKernelCall() {
  return KernelCall("crossEntropyGrad")
      .tensor(getLogits())
      .tensor(getLabels())
      .tensor(getLossGrad())
      .ignoreIndex(getIgnoreIndex());
}

KernelCall VocabCrossEntropyGradOp::getKernelCall() {
  return KernelCall("vocabCrossEntropyGrad")
      .tensor(getLogits())
      .tensor(getLabels())
      .tensor(getLossGrad())
      .tensor(getMax())
      .tensor(getSumExp())
      .vocabShard(getAxesAttr(), lastDim(getLogits()))
      .ignoreIndex(getIgnoreIndex());
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

KernelCall AdamWUpdateOp::getKernelCall() {
  return KernelCall("adamwUpdate")
      .tensor(getParam())
      .tensor(getGrad())
      .tensor(getExpAvg())
      .tensor(getExpAvgSq())
      .tensor(getStep())
      .real(getLr())
      .real(getBeta1())
      .real(getBeta2())
      .real(getEps())
      .real(getWeightDecay())
      .integer(getWarmupSteps())
      .integer(getDecaySteps())
      .real(getMinLr());
}

KernelCall SGDUpdateOp::getKernelCall() {
  return KernelCall("sgdUpdate")
      .tensor(getParam())
      .tensor(getGrad())
      .real(getLr())
      .real(getWeightDecay());
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

KernelCall AddLayerNormOp::getKernelCall() {
  return KernelCall("addLayerNorm")
      .tensor(getInput())
      .tensor(getResidual())
      .tensor(getScale())
      .tensor(getBias())
      .real(getEpsilon());
}

KernelCall AddRMSNormOp::getKernelCall() {
  return KernelCall("addRmsNorm")
      .tensor(getInput())
      .tensor(getResidual())
      .tensor(getScale())
      .real(getEpsilon());
}

KernelCall CrossEntropyWithGradOp::getKernelCall() {
  return KernelCall("crossEntropyWithGrad")
      .tensor(getLogits())
      .tensor(getLabels())
      .tensor(getLossGrad())
      .ignoreIndex(getIgnoreIndex());
}

KernelCall MultiAdamWUpdateOp::getKernelCall() {
  return KernelCall("multiAdamwUpdate")
      .tensors(getParams())
      .tensors(getGrads())
      .tensors(getExpAvgs())
      .tensors(getExpAvgSqs())
      .tensor(getStep())
      .real(getLr())
      .real(getBeta1())
      .real(getBeta2())
      .real(getEps())
      .real(getWeightDecay())
      .integer(getWarmupSteps())
      .integer(getDecaySteps())
      .real(getMinLr());
}

KernelCall SumSquaresOp::getKernelCall() {
  return KernelCall("sumSquares").tensors(getInputs());
}
