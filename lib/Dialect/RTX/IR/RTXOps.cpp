//===- RTXOps.cpp - rtx op verifiers and custom assembly ------------------===//
//
// Verifiers of the model ops and the mesh, and the custom assembly directives
// used by the ops' declarative formats. Collectives are verified in
// RTXCollectives.cpp, sharding rules live in RTXShardingRules.cpp and costs in
// RTXCost.cpp.
//
//===----------------------------------------------------------------------===//

#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::rtx;

std::string mlir::rtx::formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << ']';
  return s;
}


static RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The number of vocabulary shards of an op split over `axes` of `mesh`
/// (1 without them or when the mesh is not found).
static int64_t getVocabShards(Operation *op, FlatSymbolRefAttr mesh,
                              ArrayAttr axes) {
  if (!mesh || !axes)
    return 1;
  auto meshOp = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, mesh);
  if (!meshOp)
    return 1;
  int64_t shards = 1;
  for (Attribute axis : axes)
    shards *= meshOp.getAxisSize(cast<StringAttr>(axis).getValue()).value_or(1);
  return shards;
}

int64_t mlir::rtx::getIntegerDataBound(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto embedding = dyn_cast<EmbeddingOp>(user))
      if (embedding.getIds() == value)
        return cast<RankedTensorType>(embedding.getTable().getType())
                   .getDimSize(0) *
               getVocabShards(user, embedding.getVocabMeshAttr(),
                              embedding.getVocabAxesAttr());
    if (auto grad = dyn_cast<EmbeddingGradOp>(user))
      if (grad.getIds() == value)
        return grad.getTableGrad().getType().getDimSize(0) *
               getVocabShards(user, grad.getVocabMeshAttr(),
                              grad.getVocabAxesAttr());
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      if (loss.getLabels() == value)
        return cast<RankedTensorType>(loss.getLogits().getType())
            .getShape()
            .back();
    if (auto grad = dyn_cast<CrossEntropyGradOp>(user))
      if (grad.getLabels() == value)
        return grad.getLogits().getType().getShape().back();
    if (auto fused = dyn_cast<CrossEntropyWithGradOp>(user))
      if (fused.getLabels() == value)
        return fused.getLogits().getType().getShape().back();
    if (auto stats = dyn_cast<VocabLogitStatsOp>(user))
      if (stats.getLabels() == value)
        return stats.getLogits().getType().getShape().back() *
               getVocabShards(user, stats.getMeshAttr(), stats.getAxes());
  }
  return 2;
}

/// Checks that `dim` indexes a tensor of rank `rank` (dimension name `what`).
static LogicalResult checkDimIndex(Operation *op, int64_t dim, int64_t rank,
                                   StringRef what) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError() << what << " " << dim
                             << " is out of range for a tensor of rank "
                             << rank;
  return success();
}

/// Checks that two tensors have one element type.
static LogicalResult checkSameElementType(Operation *op, Value a, StringRef an,
                                          Value b, StringRef bn) {
  Type ea = tensorOf(a).getElementType(), eb = tensorOf(b).getElementType();
  if (ea != eb)
    return op->emitOpError() << an << " element type " << ea
                             << " differs from " << bn << " element type "
                             << eb;
  return success();
}

static LogicalResult checkResultShape(Operation *op, ArrayRef<int64_t> expected,
                                      Value result) {
  if (tensorOf(result).getShape() != expected)
    return op->emitOpError() << "result shape "
                             << formatShape(tensorOf(result).getShape())
                             << " does not match the expected shape "
                             << formatShape(expected);
  return success();
}

/// Names of `OpTy` ops are unique within their block: reports the second one.
template <typename OpTy>
static LogicalResult checkUniqueName(OpTy op, StringRef kind) {
  if (op.getName().empty())
    return op.emitOpError() << kind << " name must not be empty";
  Block *block = op->getBlock();
  if (!block)
    return success();
  for (Operation &other : *block) {
    if (&other == op.getOperation())
      break;
    auto prior = dyn_cast<OpTy>(&other);
    if (prior && prior.getName() == op.getName()) {
      InFlightDiagnostic diag = op.emitOpError()
                                << kind << " \"" << op.getName()
                                << "\" is declared twice";
      diag.attachNote(prior.getLoc()) << "first declared here";
      return diag;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `normal(0.0, 0.02)`: an initializer without its `#rtx.init<>` wrapper.
static ParseResult parseInitializer(OpAsmParser &parser, InitAttr &init) {
  init = InitAttr::parseBody(parser);
  return success(static_cast<bool>(init));
}
static void printInitializer(OpAsmPrinter &printer, Operation *,
                             InitAttr init) {
  init.printBody(printer);
}

/// `0:4, 2:8`: half-open ranges per dimension.
static ParseResult parseSliceRanges(OpAsmParser &parser,
                                    DenseI64ArrayAttr &starts,
                                    DenseI64ArrayAttr &limits) {
  SmallVector<int64_t> startValues, limitValues;
  auto parseRange = [&]() -> ParseResult {
    int64_t start, limit;
    if (parser.parseInteger(start) || parser.parseColon() ||
        parser.parseInteger(limit))
      return failure();
    startValues.push_back(start);
    limitValues.push_back(limit);
    return success();
  };
  // An empty list (rank-0 slice) is written `[]`.
  int64_t first;
  OptionalParseResult firstStart = parser.parseOptionalInteger(first);
  if (firstStart.has_value()) {
    if (failed(*firstStart))
      return failure();
    int64_t limit;
    if (parser.parseColon() || parser.parseInteger(limit))
      return failure();
    startValues.push_back(first);
    limitValues.push_back(limit);
    while (succeeded(parser.parseOptionalComma()))
      if (parseRange())
        return failure();
  }
  starts = DenseI64ArrayAttr::get(parser.getContext(), startValues);
  limits = DenseI64ArrayAttr::get(parser.getContext(), limitValues);
  return success();
}
static void printSliceRanges(OpAsmPrinter &printer, Operation *,
                             DenseI64ArrayAttr starts,
                             DenseI64ArrayAttr limits) {
  llvm::interleaveComma(
      llvm::zip(starts.asArrayRef(), limits.asArrayRef()), printer,
      [&](auto range) {
        printer << std::get<0>(range) << ':' << std::get<1>(range);
      });
}

/// `"dp"=2, "tp"=4`: mesh axes with their sizes.
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &sizes) {
  SmallVector<Attribute> nameAttrs;
  SmallVector<int64_t> sizeValues;
  std::string first;
  if (succeeded(parser.parseOptionalString(&first))) {
    auto parseSize = [&](StringRef name) -> ParseResult {
      int64_t size;
      if (parser.parseEqual() || parser.parseInteger(size))
        return failure();
      nameAttrs.push_back(StringAttr::get(parser.getContext(), name));
      sizeValues.push_back(size);
      return success();
    };
    if (parseSize(first))
      return failure();
    while (succeeded(parser.parseOptionalComma())) {
      std::string name;
      if (parser.parseString(&name) || parseSize(name))
        return failure();
    }
  }
  names = ArrayAttr::get(parser.getContext(), nameAttrs);
  sizes = DenseI64ArrayAttr::get(parser.getContext(), sizeValues);
  return success();
}
static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr names,
                          DenseI64ArrayAttr sizes) {
  llvm::interleaveComma(llvm::zip(names, sizes.asArrayRef()), printer,
                        [&](auto axis) {
                          printer << '"'
                                  << cast<StringAttr>(std::get<0>(axis))
                                         .getValue()
                                  << "\"=" << std::get<1>(axis);
                        });
}

/// `0 -> 1, 1 -> 2`: source/target pairs, stored flat.
static ParseResult parseSourceTargetPairs(OpAsmParser &parser,
                                          DenseI64ArrayAttr &pairs) {
  SmallVector<int64_t> values;
  int64_t source;
  OptionalParseResult first = parser.parseOptionalInteger(source);
  if (first.has_value()) {
    if (failed(*first))
      return failure();
    while (true) {
      int64_t target;
      if (parser.parseArrow() || parser.parseInteger(target))
        return failure();
      values.push_back(source);
      values.push_back(target);
      if (failed(parser.parseOptionalComma()))
        break;
      if (parser.parseInteger(source))
        return failure();
    }
  }
  pairs = DenseI64ArrayAttr::get(parser.getContext(), values);
  return success();
}
static void printSourceTargetPairs(OpAsmPrinter &printer, Operation *,
                                   DenseI64ArrayAttr pairs) {
  ArrayRef<int64_t> values = pairs.asArrayRef();
  for (size_t i = 0; i + 1 < values.size(); i += 2) {
    if (i > 0)
      printer << ", ";
    printer << values[i] << " -> " << values[i + 1];
  }
}

#define GET_OP_CLASSES
#include "rtx/Dialect/RTX/IR/RTXOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Values that enter the model
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() { return checkUniqueName(*this, "parameter"); }

LogicalResult InputOp::verify() { return checkUniqueName(*this, "input"); }

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// Whether every value of float type `from` is a value of float type `to`
/// (bf16 and f16 in f32, all three in f64), so converting there and back
/// gives the value itself.
static bool widensExactly(Type from, Type to) {
  auto source = dyn_cast<FloatType>(from);
  auto target = dyn_cast<FloatType>(to);
  return source && target &&
         llvm::APFloatBase::isRepresentableBy(source.getFloatSemantics(),
                                              target.getFloatSemantics());
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  Value input = getInput();
  if (input.getType() == getType())
    return input;
  auto inner = input.getDefiningOp<ConvertOp>();
  if (!inner || inner.getInput().getType() != getType())
    return {};
  auto original = cast<ShapedType>(getType()).getElementType();
  auto widened = cast<ShapedType>(input.getType()).getElementType();
  return widensExactly(original, widened) ? inner.getInput() : Value();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Shared by matmul and batch_matmul: `lhs` and `rhs` are `[B..., M, K]` and
/// `[B..., K, N]` after the optional transposes of the last two dimensions.
static LogicalResult verifyContraction(Operation *op, Value lhs, Value rhs,
                                       Value result, bool transposeLhs,
                                       bool transposeRhs, bool batched) {
  ArrayRef<int64_t> a = tensorOf(lhs).getShape(), b = tensorOf(rhs).getShape();
  if (!batched && (a.size() != 2 || b.size() != 2))
    return op->emitOpError() << "operands must be matrices, got ranks "
                             << a.size() << " and " << b.size()
                             << "; use rtx.batch_matmul for batches";
  if (batched && (a.size() < 3 || a.size() != b.size()))
    return op->emitOpError()
           << "operands must have one rank of at least 3, got ranks "
           << a.size() << " and " << b.size();
  size_t r = a.size();
  if (a.drop_back(2) != b.drop_back(2))
    return op->emitOpError() << "batch dimensions differ: "
                             << formatShape(a.drop_back(2)) << " vs "
                             << formatShape(b.drop_back(2));
  int64_t m = transposeLhs ? a[r - 1] : a[r - 2];
  int64_t kl = transposeLhs ? a[r - 2] : a[r - 1];
  int64_t kr = transposeRhs ? b[r - 1] : b[r - 2];
  int64_t n = transposeRhs ? b[r - 2] : b[r - 1];
  if (kl != kr)
    return op->emitOpError() << "contracting dimensions differ: lhs has K = "
                             << kl << ", rhs has K = " << kr;
  if (failed(checkSameElementType(op, lhs, "lhs", rhs, "rhs")) ||
      failed(checkSameElementType(op, lhs, "lhs", result, "result")))
    return failure();
  SmallVector<int64_t> expected(a.drop_back(2));
  expected.push_back(m);
  expected.push_back(n);
  return checkResultShape(op, expected, result);
}

LogicalResult MatmulOp::verify() {
  return verifyContraction(*this, getLhs(), getRhs(), getResult(),
                           getTransposeLhs(), getTransposeRhs(),
                           /*batched=*/false);
}

LogicalResult BatchMatmulOp::verify() {
  return verifyContraction(*this, getLhs(), getRhs(), getResult(),
                           getTransposeLhs(), getTransposeRhs(),
                           /*batched=*/true);
}

LogicalResult LinearOp::verify() {
  ArrayRef<int64_t> x = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> w = tensorOf(getWeight()).getShape();
  if (x.empty())
    return emitOpError() << "input must have rank at least 1";
  if (w.size() != 2)
    return emitOpError() << "weight must be [out_features, in_features], got "
                         << formatShape(w);
  if (w[1] != x.back())
    return emitOpError() << "weight in_features " << w[1]
                         << " differs from the input's last dimension "
                         << x.back();
  if (failed(checkSameElementType(*this, getInput(), "input", getWeight(),
                                  "weight")) ||
      failed(checkSameElementType(*this, getInput(), "input", getResult(),
                                  "result")))
    return failure();
  if (Value bias = getBias()) {
    if (tensorOf(bias).getShape() != ArrayRef<int64_t>{w[0]})
      return emitOpError() << "bias shape "
                           << formatShape(tensorOf(bias).getShape())
                           << " must be [out_features] = [" << w[0] << "]";
    if (failed(checkSameElementType(*this, getInput(), "input", bias, "bias")))
      return failure();
  }
  SmallVector<int64_t> expected(x.drop_back());
  expected.push_back(w[0]);
  return checkResultShape(*this, expected, getResult());
}

/// The operands and results rtx.gemm_epilogue's epilogue calls for: a bias
/// for the Bias* epilogues, `pre` for the DGelu ones, a second result for
/// the *Aux ones and bias_grad.
static LogicalResult verifyEpilogueParts(GemmEpilogueOp op) {
  rtxrt::GemmEpilogue epilogue = toRuntime(op.getEpilogue());
  StringRef name = stringifyGemmEpilogue(op.getEpilogue());
  auto mismatch = [&](StringRef part, bool wanted) {
    return op.emitOpError() << "epilogue " << name
                            << (wanted ? " needs " : " takes no ") << part;
  };
  bool hasBias = static_cast<bool>(op.getBias());
  if (rtxrt::epilogueAddsBias(epilogue) != hasBias)
    return mismatch("bias operand", !hasBias);
  bool hasPre = static_cast<bool>(op.getPre());
  if (rtxrt::epilogueReadsPreActivation(epilogue) != hasPre)
    return mismatch("pre operand", !hasPre);
  bool hasAux = static_cast<bool>(op.getAux());
  if (rtxrt::epilogueReturnsAux(epilogue) != hasAux)
    return mismatch("aux result", !hasAux);
  return success();
}

LogicalResult GemmEpilogueOp::verify() {
  if (failed(verifyEpilogueParts(*this)))
    return failure();
  ArrayRef<int64_t> a = tensorOf(getLhs()).getShape();
  ArrayRef<int64_t> b = tensorOf(getRhs()).getShape();
  if (b.size() != 2)
    return emitOpError() << "rhs must be a matrix, got rank " << b.size();
  if (getTransposeLhs() ? a.size() != 2 : a.empty())
    return emitOpError() << "lhs must be "
                         << (getTransposeLhs() ? "a matrix [K, M]"
                                               : "of rank at least 1")
                         << ", got " << formatShape(a);
  int64_t kl = getTransposeLhs() ? a[0] : a.back();
  int64_t kr = getTransposeRhs() ? b[1] : b[0];
  int64_t n = getTransposeRhs() ? b[0] : b[1];
  if (kl != kr)
    return emitOpError() << "contracting dimensions differ: lhs has K = " << kl
                         << ", rhs has K = " << kr;
  for (auto [value, name] : {std::pair<Value, StringRef>{getRhs(), "rhs"},
                             {getBias(), "bias"},
                             {getPre(), "pre"},
                             {getResult(), "result"},
                             {getAux(), "aux"}})
    if (value &&
        failed(checkSameElementType(*this, getLhs(), "lhs", value, name)))
      return failure();
  SmallVector<int64_t> expected = getTransposeLhs()
                                      ? SmallVector<int64_t>{a[1]}
                                      : SmallVector<int64_t>(a.drop_back());
  expected.push_back(n);
  if (failed(checkResultShape(*this, expected, getResult())))
    return failure();
  if (Value bias = getBias())
    if (tensorOf(bias).getShape() != ArrayRef<int64_t>{n})
      return emitOpError() << "bias shape "
                           << formatShape(tensorOf(bias).getShape())
                           << " must be [N] = [" << n << "]";
  if (Value pre = getPre())
    if (tensorOf(pre).getShape() != ArrayRef<int64_t>(expected))
      return emitOpError() << "pre shape "
                           << formatShape(tensorOf(pre).getShape())
                           << " must be the result's, "
                           << formatShape(expected);
  if (Value aux = getAux()) {
    bool biasGrad = getEpilogue() == GemmEpilogue::BiasGrad;
    if (biasGrad && expected.size() != 2)
      return emitOpError() << "epilogue bias_grad needs a matrix result, got "
                           << formatShape(expected);
    SmallVector<int64_t> auxShape =
        biasGrad ? SmallVector<int64_t>{expected[0]} : expected;
    if (tensorOf(aux).getShape() != ArrayRef<int64_t>(auxShape))
      return emitOpError() << "aux shape "
                           << formatShape(tensorOf(aux).getShape())
                           << " must be " << formatShape(auxShape);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation, softmax, attention
//===----------------------------------------------------------------------===//

/// Shared by layernorm and rmsnorm: parameters of shape [last dimension].
static LogicalResult verifyNorm(Operation *op, Value input, Value scale,
                                Value bias, double epsilon) {
  ArrayRef<int64_t> x = tensorOf(input).getShape();
  if (x.empty())
    return op->emitOpError() << "input must have rank at least 1";
  if (!(epsilon >= 0.0))
    return op->emitOpError() << "epsilon must be non-negative, got "
                             << epsilon;
  for (auto [value, name] : {std::pair<Value, StringRef>{scale, "scale"},
                             std::pair<Value, StringRef>{bias, "bias"}}) {
    if (!value)
      continue;
    if (tensorOf(value).getShape() != ArrayRef<int64_t>{x.back()})
      return op->emitOpError()
             << name << " shape " << formatShape(tensorOf(value).getShape())
             << " must be [" << x.back() << "], the input's last dimension";
    if (failed(checkSameElementType(op, input, "input", value, name)))
      return failure();
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), getBias(),
                    getEpsilon().convertToDouble());
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), Value(),
                    getEpsilon().convertToDouble());
}

LogicalResult SoftmaxOp::verify() {
  return checkDimIndex(*this, static_cast<int64_t>(getDim()),
                       getType().getRank(), "dim");
}

/// Shared by rope and rope_grad.
static LogicalResult verifyRope(Operation *op, RankedTensorType type,
                                double theta, int64_t offset) {
  ArrayRef<int64_t> x = type.getShape();
  if (x.size() != 4)
    return op->emitOpError()
           << "input must be [batch, heads, seq, head_dim], got " << formatShape(x);
  if (x[3] % 2 != 0)
    return op->emitOpError() << "head_dim must be even, got " << x[3];
  if (!(theta > 0.0))
    return op->emitOpError() << "theta must be positive";
  if (offset < 0)
    return op->emitOpError() << "offset must be non-negative";
  return success();
}

LogicalResult RopeOp::verify() {
  return verifyRope(*this, getType(), getTheta().convertToDouble(),
                    static_cast<int64_t>(getOffset()));
}

LogicalResult RopeGradOp::verify() {
  return verifyRope(*this, tensorOf(getResultGrad()),
                    getTheta().convertToDouble(),
                    static_cast<int64_t>(getOffset()));
}

double AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(getType().getShape().back()));
}

LogicalResult AttentionOp::verify() {
  ArrayRef<int64_t> q = tensorOf(getQuery()).getShape();
  ArrayRef<int64_t> k = tensorOf(getKey()).getShape();
  ArrayRef<int64_t> v = tensorOf(getValue()).getShape();
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return emitOpError() << "query, key and value must be [batch, heads, seq, "
                            "head_dim], got ranks "
                         << q.size() << ", " << k.size() << ", " << v.size();
  if (k != v)
    return emitOpError() << "key shape " << formatShape(k)
                         << " differs from value shape " << formatShape(v);
  if (q[0] != k[0])
    return emitOpError() << "query batch " << q[0] << " differs from key batch "
                         << k[0];
  if (q[3] != k[3])
    return emitOpError() << "query head_dim " << q[3]
                         << " differs from key head_dim " << k[3];
  if (k[1] == 0 || q[1] == 0 || q[1] % k[1] != 0)
    return emitOpError() << "query heads " << q[1]
                         << " must be a positive multiple of key/value heads "
                         << k[1];
  if (getCausal() && q[2] != k[2])
    return emitOpError() << "causal attention needs equal query and key "
                            "sequence lengths, got "
                         << q[2] << " and " << k[2];
  if (failed(checkSameElementType(*this, getQuery(), "query", getKey(),
                                  "key")) ||
      failed(checkSameElementType(*this, getQuery(), "query", getValue(),
                                  "value")) ||
      failed(checkSameElementType(*this, getQuery(), "query", getResult(),
                                  "result")))
    return failure();
  return checkResultShape(*this, q, getResult());
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

/// The vocabulary split of the embedding ops names a mesh and its axes
/// together.
static LogicalResult verifyVocabShard(Operation *op, Attribute mesh,
                                      Attribute axes) {
  if (static_cast<bool>(mesh) != static_cast<bool>(axes))
    return op->emitOpError()
           << "needs both vocab_mesh and vocab_axes, or neither";
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyVocabShard(*this, getVocabMeshAttr(), getVocabAxesAttr())))
    return failure();
  ArrayRef<int64_t> table = tensorOf(getTable()).getShape();
  if (table.size() != 2)
    return emitOpError() << "table must be [vocab, dim], got "
                         << formatShape(table);
  if (failed(checkSameElementType(*this, getTable(), "table", getResult(),
                                  "result")))
    return failure();
  SmallVector<int64_t> expected(tensorOf(getIds()).getShape());
  expected.push_back(table[1]);
  return checkResultShape(*this, expected, getResult());
}

/// Shared by cross_entropy and its gradient: the labels index the logits'
/// last (class) dimension, so they carry exactly the logits' leading shape.
static LogicalResult verifyLogitsAndLabels(Operation *op, Value logitsValue,
                                           Value labelsValue) {
  ArrayRef<int64_t> logits = tensorOf(logitsValue).getShape();
  ArrayRef<int64_t> labels = tensorOf(labelsValue).getShape();
  if (logits.empty())
    return op->emitOpError() << "logits must have rank at least 1";
  if (labels != logits.drop_back())
    return op->emitOpError() << "labels shape " << formatShape(labels)
                             << " must equal the logits' leading shape "
                             << formatShape(logits.drop_back());
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyLogitsAndLabels(*this, getLogits(), getLabels());
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// The kernel returns a view of the input (runtime/lib/kernels/Shape.cpp).
Value ReshapeOp::getViewSource() { return getInput(); }

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorOf(getInput()), out = getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << formatShape(in.getShape())
                         << " (" << in.getNumElements() << " elements) into "
                         << formatShape(out.getShape()) << " ("
                         << out.getNumElements() << " elements)";
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "element type " << in.getElementType()
                         << " must not change, got " << out.getElementType();
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> perm = getPermutation();
  if (perm.size() != in.size())
    return emitOpError() << "permutation " << formatShape(perm) << " has "
                         << perm.size() << " entries for an input of rank "
                         << in.size();
  SmallVector<bool> seen(in.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      return emitOpError() << "permutation " << formatShape(perm)
                           << " is not a permutation of 0.." << in.size() - 1;
    seen[p] = true;
    expected.push_back(in[p]);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getResult(),
                                  "result")))
    return failure();
  return checkResultShape(*this, expected, getResult());
}

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits();
  if (starts.size() != in.size() || limits.size() != in.size())
    return emitOpError() << "has " << starts.size() << " starts and "
                         << limits.size() << " limits for an input of rank "
                         << in.size();
  SmallVector<int64_t> expected;
  for (size_t d = 0; d < in.size(); ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > in[d])
      return emitOpError() << "range " << starts[d] << ":" << limits[d]
                           << " of dimension " << d
                           << " is not within [0, " << in[d] << "]";
    expected.push_back(limits[d] - starts[d]);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getResult(),
                                  "result")))
    return failure();
  return checkResultShape(*this, expected, getResult());
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  int64_t dim = static_cast<int64_t>(getDim());
  if (failed(checkDimIndex(*this, dim, in.size(), "dim")))
    return failure();
  if (getResults().empty())
    return emitOpError() << "needs at least one result";
  int64_t total = 0;
  for (auto [index, result] : llvm::enumerate(getResults())) {
    ArrayRef<int64_t> piece = tensorOf(result).getShape();
    if (piece.size() != in.size())
      return emitOpError() << "result " << index << " has rank "
                           << piece.size() << ", the input has rank "
                           << in.size();
    for (size_t d = 0; d < in.size(); ++d)
      if (static_cast<int64_t>(d) != dim && piece[d] != in[d])
        return emitOpError() << "result " << index << " dimension " << d
                             << " is " << piece[d] << ", expected " << in[d];
    if (failed(checkSameElementType(*this, getInput(), "input", result,
                                    "result")))
      return failure();
    total += piece[dim];
  }
  if (total != in[dim])
    return emitOpError() << "result sizes along dim " << dim << " add up to "
                         << total << ", the input has " << in[dim];
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  ArrayRef<int64_t> out = getType().getShape();
  int64_t dim = static_cast<int64_t>(getDim());
  if (failed(checkDimIndex(*this, dim, out.size(), "dim")))
    return failure();
  int64_t total = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> piece = tensorOf(input).getShape();
    if (piece.size() != out.size())
      return emitOpError() << "input " << index << " has rank " << piece.size()
                           << ", the result has rank " << out.size();
    for (size_t d = 0; d < out.size(); ++d)
      if (static_cast<int64_t>(d) != dim && piece[d] != out[d])
        return emitOpError() << "input " << index << " dimension " << d
                             << " is " << piece[d] << ", expected " << out[d];
    if (failed(checkSameElementType(*this, input, "input", getResult(),
                                    "result")))
      return failure();
    total += piece[dim];
  }
  if (total != out[dim])
    return emitOpError() << "input sizes along dim " << dim << " add up to "
                         << total << ", the result has " << out[dim];
  return success();
}

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> out = getType().getShape();
  ArrayRef<int64_t> dims = getDims();
  if (dims.size() != in.size())
    return emitOpError() << "dims " << formatShape(dims) << " has " << dims.size()
                         << " entries for an input of rank " << in.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(out.size()))
      return emitOpError() << "dims entry " << dims[i]
                           << " is out of range for a result of rank "
                           << out.size();
    if (i > 0 && dims[i] <= dims[i - 1])
      return emitOpError() << "dims " << formatShape(dims)
                           << " must be strictly increasing";
    if (in[i] != 1 && in[i] != out[dims[i]])
      return emitOpError() << "input dimension " << i << " of size " << in[i]
                           << " cannot broadcast to result dimension "
                           << dims[i] << " of size " << out[dims[i]];
  }
  return checkSameElementType(*this, getInput(), "input", getResult(),
                              "result");
}

LogicalResult ReduceOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> dims = getDims();
  SmallVector<int64_t> expected;
  size_t next = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (failed(checkDimIndex(*this, dims[i], in.size(), "reduced dim")))
      return failure();
    if (i > 0 && dims[i] <= dims[i - 1])
      return emitOpError() << "dims " << formatShape(dims)
                           << " must be strictly increasing";
  }
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = next < dims.size() && dims[next] == static_cast<int64_t>(d);
    if (reduced)
      ++next;
    if (!reduced)
      expected.push_back(in[d]);
    else if (getKeepdim())
      expected.push_back(1);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getResult(),
                                  "result")))
    return failure();
  return checkResultShape(*this, expected, getResult());
}

//===----------------------------------------------------------------------===//
// Mesh and wait
//===----------------------------------------------------------------------===//

std::optional<int64_t> MeshOp::getAxisSize(StringRef name) {
  for (auto [axis, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (cast<StringAttr>(axis).getValue() == name)
      return size;
  return std::nullopt;
}

int64_t MeshOp::getNumRanks() {
  int64_t ranks = 1;
  for (int64_t size : getAxisSizes())
    ranks *= size;
  return ranks;
}

LogicalResult MeshOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError() << "has " << getAxisNames().size() << " axis names but "
                         << getAxisSizes().size() << " sizes";
  llvm::StringSet<> seen;
  int64_t ranks = 1;
  for (auto [axis, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef name = cast<StringAttr>(axis).getValue();
    if (name.empty())
      return emitOpError() << "axis names must not be empty";
    if (!seen.insert(name).second)
      return emitOpError() << "axis \"" << name << "\" is declared twice";
    if (size < 1)
      return emitOpError() << "axis \"" << name << "\" has size " << size
                           << "; sizes must be at least 1";
    // Group sizes and rank indices are int64 products of axis sizes.
    if (llvm::MulOverflow(ranks, size, ranks))
      return emitOpError() << "has more ranks than int64 can count: the "
                              "product of its axis sizes overflows at axis \""
                           << name << "\"";
  }
  return success();
}

LogicalResult WaitOp::verify() {
  Type valueType = cast<TokenType>(getToken().getType()).getValueType();
  Value result = getResult();
  if (!valueType && result)
    return emitOpError() << "token carries no value, so the wait has no result";
  if (valueType && !result)
    return emitOpError() << "token carries " << valueType
                         << ", so the wait must yield it";
  if (valueType && result.getType() != valueType)
    return emitOpError() << "yields " << result.getType()
                         << " but the token carries " << valueType;
  return success();
}

//===----------------------------------------------------------------------===//
// Backward-pass and optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult LayerNormGradOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), Value(),
                    getEpsilon().convertToDouble());
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), Value(),
                    getEpsilon().convertToDouble());
}

LogicalResult SoftmaxGradOp::verify() {
  return checkDimIndex(*this, static_cast<int64_t>(getDim()),
                       tensorOf(getResult()).getRank(), "dim");
}

double AttentionGradOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 /
         std::sqrt(static_cast<double>(tensorOf(getQuery()).getShape().back()));
}

LogicalResult AttentionGradOp::verify() {
  ArrayRef<int64_t> q = tensorOf(getQuery()).getShape();
  ArrayRef<int64_t> k = tensorOf(getKey()).getShape();
  if (q.size() != 4 || k.size() != 4)
    return emitOpError() << "query and key must be [batch, heads, seq, "
                            "head_dim], got ranks "
                         << q.size() << " and " << k.size();
  if (q[0] != k[0] || q[3] != k[3] || k[1] == 0 || q[1] == 0 ||
      q[1] % k[1] != 0)
    return emitOpError() << "query " << formatShape(q) << " and key "
                         << formatShape(k)
                         << " do not match as in rtx.attention";
  if (getCausal() && q[2] != k[2])
    return emitOpError() << "causal attention needs equal query and key "
                            "sequence lengths, got "
                         << q[2] << " and " << k[2];
  return checkSameElementType(*this, getQuery(), "query", getKey(), "key");
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyVocabShard(*this, getVocabMeshAttr(), getVocabAxesAttr())))
    return failure();
  ArrayRef<int64_t> table = tensorOf(getTableGrad()).getShape();
  if (table.size() != 2)
    return emitOpError() << "table gradient must be [vocab, dim], got "
                         << formatShape(table);
  SmallVector<int64_t> expected(tensorOf(getIds()).getShape());
  expected.push_back(table[1]);
  if (tensorOf(getResultGrad()).getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result gradient shape "
                         << formatShape(tensorOf(getResultGrad()).getShape())
                         << " must be ids shape + [dim] = "
                         << formatShape(expected);
  return checkSameElementType(*this, getResultGrad(), "result gradient",
                              getTableGrad(), "table gradient");
}

LogicalResult CrossEntropyGradOp::verify() {
  return verifyLogitsAndLabels(*this, getLogits(), getLabels());
}

/// The per-token statistics of the vocab-parallel cross-entropy have the
/// labels' shape.
static LogicalResult verifyTokenStatistic(Operation *op, Value statistic,
                                          StringRef name, Value labels) {
  ArrayRef<int64_t> shape = tensorOf(statistic).getShape();
  if (shape != tensorOf(labels).getShape())
    return op->emitOpError() << name << " shape " << formatShape(shape)
                             << " must equal the labels' shape "
                             << formatShape(tensorOf(labels).getShape());
  return success();
}

/// Logits shard, labels and per-token maximum of the vocab-parallel ops.
static LogicalResult verifyLogitsShardAndMax(Operation *op, Value logits,
                                             Value labels, Value max) {
  if (failed(verifyLogitsAndLabels(op, logits, labels)) ||
      failed(checkSameElementType(op, logits, "logits", max, "max")))
    return failure();
  return verifyTokenStatistic(op, max, "max", labels);
}

LogicalResult VocabLogitStatsOp::verify() {
  return verifyLogitsShardAndMax(*this, getLogits(), getLabels(), getMax());
}

LogicalResult VocabCrossEntropyOp::verify() {
  return verifyTokenStatistic(*this, getMax(), "max", getLabels());
}

LogicalResult VocabCrossEntropyGradOp::verify() {
  return verifyLogitsShardAndMax(*this, getLogits(), getLabels(), getMax());
}

LogicalResult PadOp::verify() {
  ArrayRef<int64_t> in = tensorOf(getInput()).getShape();
  ArrayRef<int64_t> low = getLow(), high = getHigh();
  if (low.size() != in.size() || high.size() != in.size())
    return emitOpError() << "low and high need one entry per dimension ("
                         << in.size() << ")";
  SmallVector<int64_t> expected;
  for (size_t d = 0; d < in.size(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      return emitOpError() << "padding of dimension " << d
                           << " must be non-negative";
    int64_t size;
    if (__builtin_add_overflow(low[d], in[d], &size) ||
        __builtin_add_overflow(size, high[d], &size))
      return emitOpError() << "padded size of dimension " << d
                           << " overflows";
    expected.push_back(size);
  }
  if (failed(checkSameElementType(*this, getInput(), "input", getResult(),
                                  "result")))
    return failure();
  return checkResultShape(*this, expected, getResult());
}

/// Hyper-parameters of an optimizer update must be finite and in range.
static LogicalResult verifyHyperParameter(Operation *op, StringRef name,
                                          double value, double low,
                                          double high) {
  if (!(value >= low && value <= high))
    return op->emitOpError() << name << " must be in [" << low << ", " << high
                             << "], got " << value;
  return success();
}

/// The learning-rate schedule of an AdamW update: a warm-up of >= 0 steps,
/// a decay that ends after it (or none), and a final rate in [0, lr] that
/// only a decay reaches.
static LogicalResult verifyLrSchedule(Operation *op, double lr, int64_t warmup,
                                      int64_t decay, double minLr) {
  if (warmup < 0)
    return op->emitOpError() << "warmup_steps must be >= 0, got " << warmup;
  if (decay != 0 && decay <= warmup)
    return op->emitOpError()
           << "decay_steps must be 0 (no decay) or greater than warmup_steps ("
           << warmup << "), got " << decay;
  if (!(minLr >= 0 && minLr <= lr))
    return op->emitOpError()
           << "min_lr must be in [0, lr] = [0, " << lr << "], got " << minLr;
  if (minLr != 0 && decay == 0)
    return op->emitOpError()
           << "min_lr " << minLr
           << " needs decay_steps (the step it is reached at)";
  return success();
}

/// The hyper-parameters that rtx.adamw_update and rtx.multi_adamw_update
/// share.
template <typename AdamWOp>
static LogicalResult verifyAdamWHyperParameters(AdamWOp op) {
  double lr = op.getLr().convertToDouble();
  if (failed(verifyHyperParameter(op, "lr", lr, 0, 1e9)) ||
      failed(verifyHyperParameter(op, "beta1", op.getBeta1().convertToDouble(),
                                  0, 0.999999999)) ||
      failed(verifyHyperParameter(op, "beta2", op.getBeta2().convertToDouble(),
                                  0, 0.999999999)) ||
      failed(verifyHyperParameter(op, "eps", op.getEps().convertToDouble(), 0,
                                  1)) ||
      failed(verifyHyperParameter(
          op, "weight_decay", op.getWeightDecay().convertToDouble(), 0, 1e9)))
    return failure();
  return verifyLrSchedule(op, lr, op.getWarmupSteps(), op.getDecaySteps(),
                          op.getMinLr().convertToDouble());
}

LogicalResult AdamWUpdateOp::verify() {
  if (tensorOf(getParam()).getShape() != tensorOf(getGrad()).getShape())
    return emitOpError() << "parameter and gradient shapes differ";
  return verifyAdamWHyperParameters(*this);
}

LogicalResult SGDUpdateOp::verify() {
  if (tensorOf(getParam()).getShape() != tensorOf(getGrad()).getShape())
    return emitOpError() << "parameter and gradient shapes differ";
  if (failed(verifyHyperParameter(*this, "lr", getLr().convertToDouble(), 0,
                                  1e9)) ||
      failed(verifyHyperParameter(*this, "weight_decay",
                                  getWeightDecay().convertToDouble(), 0, 1e9)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Fused ops (RTXFusedOps.td)
//===----------------------------------------------------------------------===//

LogicalResult AddLayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), getBias(),
                    getEpsilon().convertToDouble());
}

LogicalResult AddRMSNormOp::verify() {
  return verifyNorm(*this, getInput(), getScale(), Value(),
                    getEpsilon().convertToDouble());
}

LogicalResult CrossEntropyWithGradOp::verify() {
  return verifyLogitsAndLabels(*this, getLogits(), getLabels());
}

/// The operand groups of rtx.multi_adamw_update: the i-th of each is one
/// rtx.adamw_update, all parameters of one element type and all gradients
/// and moments of another.
static LogicalResult verifyAdamWGroups(MultiAdamWUpdateOp op) {
  size_t n = op.getParams().size();
  if (n == 0)
    return op.emitOpError() << "needs at least one parameter";
  if (op.getGrads().size() != n || op.getExpAvgs().size() != n ||
      op.getExpAvgSqs().size() != n || op.getNewParams().size() != n ||
      op.getNewExpAvgs().size() != n || op.getNewExpAvgSqs().size() != n)
    return op.emitOpError()
           << "needs as many gradients, moments and results as parameters ("
           << n << ")";
  Type paramElement = tensorOf(op.getParams()[0]).getElementType();
  Type momentElement = tensorOf(op.getGrads()[0]).getElementType();
  for (size_t i = 0; i < n; ++i) {
    RankedTensorType param = tensorOf(op.getParams()[i]);
    if (param.getElementType() != paramElement)
      return op.emitOpError()
             << "parameter " << i << " has element type "
             << param.getElementType() << ", parameter 0 " << paramElement;
    for (Value moment :
         {Value(op.getGrads()[i]), Value(op.getExpAvgs()[i]),
          Value(op.getExpAvgSqs()[i]), Value(op.getNewExpAvgs()[i]),
          Value(op.getNewExpAvgSqs()[i])})
      if (tensorOf(moment) !=
          RankedTensorType::get(param.getShape(), momentElement))
        return op.emitOpError()
               << "gradient and moments " << i << " must be "
               << RankedTensorType::get(param.getShape(), momentElement)
               << " (parameter " << i << "'s shape, gradient 0's element type)";
    if (op.getNewParams()[i].getType() != param)
      return op.emitOpError()
             << "new parameter " << i << " must have type " << param;
  }
  return success();
}

LogicalResult MultiAdamWUpdateOp::verify() {
  if (failed(verifyAdamWGroups(*this)))
    return failure();
  return verifyAdamWHyperParameters(*this);
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  for (Value input : getInputs())
    if (tensorOf(input).getElementType().isF64())
      return emitOpError() << "inputs must be f32, bf16 or f16 (the sum is "
                              "f32), got "
                           << input.getType();
  return success();
}
