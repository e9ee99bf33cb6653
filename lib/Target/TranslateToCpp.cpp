//===- TranslateToCpp.cpp - emit a C++ or CUDA training program -----------===//
//
// One statement per op, calling the same runtime kernels rtx-run calls, so an
// emitted C++ program computes what rtx-run computes (bit for bit on one
// rank). Collectives become StepContext calls over mesh axes; the program's
// arguments, results and mesh become a ProgramSpec for rtxrt::runProgram.
//
// One emitter, two devices: a CUDA program is the same program with every
// kernel call taken from rtxrt::gpu (rtxrt/Gpu.h: the same signatures on
// GPU tensors, cuBLAS and CUDA kernels) and the GPU runtime attached to its
// ProgramSpec, which keeps the arguments on the device across steps and
// gives the collectives NCCL process groups.
//
//===----------------------------------------------------------------------===//

#include "rtx/Target/Cpp.h"

#include "EmitProgramSpec.h"

#include "rtx/Analysis/ProgramDescription.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "llvm/ADT/DenseMap.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rtx;

namespace {
class Emitter {
public:
  Emitter(ModuleOp module, func::FuncOp function, ProgramTarget target,
          raw_ostream &os)
      : module(module), function(function), cuda(target == ProgramTarget::Cuda),
        os(os) {}
  LogicalResult emit();

private:
  std::string name(Value v) {
    auto it = names.find(v);
    if (it != names.end())
      return it->second;
    std::string n = "v" + std::to_string(names.size());
    names[v] = n;
    return n;
  }
  std::string opt(Value v) { return v ? name(v) : std::string("Tensor()"); }
  static std::string shape(Type type) {
    std::string s = "{";
    auto t = cast<RankedTensorType>(type);
    for (int64_t i = 0; i < t.getRank(); ++i)
      s += (i ? ", " : "") + std::to_string(t.getDimSize(i));
    return s + "}";
  }
  static std::string ints(ArrayRef<int64_t> values) {
    std::string s = "{";
    for (size_t i = 0; i < values.size(); ++i)
      s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "}";
  }
  static std::string number(double v) {
    if (std::isinf(v))
      return v < 0 ? "-INFINITY" : "INFINITY";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
  }
  static std::string dtype(Type type) {
    Type e = cast<RankedTensorType>(type).getElementType();
    if (e.isF32()) return "DType::F32";
    if (e.isF64()) return "DType::F64";
    if (e.isBF16()) return "DType::BF16";
    if (e.isF16()) return "DType::F16";
    if (e.isInteger(1)) return "DType::I1";
    if (e.isInteger(32)) return "DType::I32";
    return "DType::I64";
  }
  static std::string sharding(ShardingAttr attr) {
    if (!attr)
      return "Sharding{}";
    std::string s = "Sharding{{";
    for (int64_t d = 0; d < attr.getRank(); ++d) {
      s += (d ? ", {" : "{");
      auto axes = attr.getDimAxes(d);
      for (size_t i = 0; i < axes.size(); ++i)
        s += (i ? ", \"" : "\"") + axes[i].str() + "\"";
      s += "}";
    }
    s += "}, {";
    auto partial = attr.getPartialAxes();
    for (size_t i = 0; i < partial.size(); ++i)
      s += (i ? ", \"" : "\"") + partial[i].str() + "\"";
    return s + "}}";
  }
  static std::string axes(Operation *op, StringRef attrName = "axes") {
    std::string s = "{";
    auto attr = op->getAttrOfType<ArrayAttr>(attrName);
    for (size_t i = 0; i < attr.size(); ++i)
      s += (i ? ", \"" : "\"") + cast<StringAttr>(attr[i]).getValue().str() +
           "\"";
    return s + "}";
  }
  static std::string reduceKind(ReductionKind kind) {
    switch (kind) {
    case ReductionKind::Sum: return "ReduceKind::Sum";
    case ReductionKind::Mean: return "ReduceKind::Mean";
    case ReductionKind::Max: return "ReduceKind::Max";
    case ReductionKind::Min: return "ReduceKind::Min";
    }
    return "";
  }
  std::string where(Operation *op) {
    std::string s;
    llvm::raw_string_ostream stream(s);
    stream << op->getName() << " at " << op->getLoc();
    std::string escaped;
    for (char c : s)
      escaped += (c == '"' || c == '\\') ? std::string("\\") + c
                                         : std::string(1, c);
    return "\"" + escaped + "\"";
  }
  int64_t intAttr(Operation *op, StringRef n) {
    return op->getAttrOfType<IntegerAttr>(n).getValue().getSExtValue();
  }
  /// A kernel call of the target device: `matmul(...)` becomes
  /// `gpu::matmul(...)` in a CUDA program. Collectives (ctx.), arguments and
  /// constants are the same on both.
  std::string onDevice(const std::string &expression) const {
    if (!cuda || expression.rfind("ctx.", 0) == 0 ||
        expression.rfind("args[", 0) == 0 ||
        expression.rfind("constantTensor(", 0) == 0)
      return expression;
    return "gpu::" + expression;
  }
  /// `offset, vocab` arguments of a kernel on this rank's vocabulary shard
  /// of `rows` entries, split over the op's `attrName` axes.
  static std::string vocabShard(Operation *op, StringRef attrName,
                                int64_t rows) {
    std::string group = axes(op, attrName), n = std::to_string(rows);
    return "ctx.indexInGroup(" + group + ") * " + n + ", ctx.groupSize(" +
           group + ") * " + n;
  }
  /// `hasIgnoreIndex, ignoreIndex` arguments of the loss kernels.
  static std::string ignoreIndexArgs(std::optional<uint64_t> ignore) {
    return std::string(ignore ? "true" : "false") + ", " +
           std::to_string(ignore ? static_cast<int64_t>(*ignore) : 0);
  }
  void assign(Value result, const std::string &expression) {
    os << "  Tensor " << name(result) << " = " << onDevice(expression) << ";\n";
  }
  void assignAll(Operation *op, const std::string &expression) {
    std::string tuple = "r" + std::to_string(tuples++);
    os << "  std::vector<Tensor> " << tuple << " = " << onDevice(expression)
       << ";\n";
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      os << "  Tensor " << name(result) << " = " << tuple << "[" << i
         << "];\n";
  }
  LogicalResult emitOp(Operation *op);

  ModuleOp module;
  func::FuncOp function;
  bool cuda;
  raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  int tuples = 0;
  llvm::DenseMap<Operation *, unsigned> inputIndex;
  std::vector<std::string> collectiveAxes;
};
} // namespace

LogicalResult Emitter::emitOp(Operation *op) {
  auto unary = [&](const char *kind) {
    assign(op->getResult(0), std::string("unary(UnaryKind::") + kind + ", " +
                                 name(op->getOperand(0)) + ")");
  };
  auto binaryOp = [&](const char *kind) {
    assign(op->getResult(0), std::string("binary(BinaryKind::") + kind +
                                 ", " + name(op->getOperand(0)) + ", " +
                                 name(op->getOperand(1)) + ")");
  };
  auto collective = [&](const std::string &call) {
    std::string a = axes(op);
    if (std::find(collectiveAxes.begin(), collectiveAxes.end(), a) ==
        collectiveAxes.end())
      collectiveAxes.push_back(a);
    assign(op->getResult(0), call);
  };
  bool ok = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](ParamOp p) {
        op->emitError("rtx-translate needs a training step whose parameters "
                      "are arguments: run rtx-optimizer first");
        ok = false;
      })
      .Case([&](InputOp p) {
        // Named inputs follow the function's arguments in `args`.
        assign(p, "args[" + std::to_string(inputIndex.lookup(p)) + "]");
      })
      .Case([&](ConstantOp c) {
        auto attr = cast<DenseElementsAttr>(c.getValue());
        std::string values = "{";
        int64_t i = 0;
        // A splat is one value (constantTensor repeats it), not a literal
        // list of every element: a [4, 128, 1024] splat was half a million.
        int64_t count = attr.isSplat() ? 1 : attr.getNumElements();
        if (attr.getElementType().isIntOrIndex()) {
          for (const APInt &v : attr.getValues<APInt>()) {
            if (i == count)
              break;
            values += (i++ ? ", " : "") +
                      std::to_string(attr.getElementType().isInteger(1)
                                         ? (int64_t)v.getZExtValue()
                                         : v.getSExtValue());
          }
        } else {
          for (const APFloat &v : attr.getValues<APFloat>()) {
            if (i == count)
              break;
            values += (i++ ? ", " : "") + number(v.convertToDouble());
          }
        }
        values += "}";
        // Built once, at the first step: kernels never write their inputs.
        os << "  static const Tensor " << name(c) << " = constantTensor("
           << shape(c.getType()) << ", " << dtype(c.getType()) << ", "
           << values << ");\n";
      })
      .Case([&](MatmulOp m) {
        assign(m, "matmul(" + name(m.getLhs()) + ", " + name(m.getRhs()) +
                      ", " + (m.getTransposeLhs() ? "true" : "false") + ", " +
                      (m.getTransposeRhs() ? "true" : "false") + ")");
      })
      .Case([&](BatchMatmulOp m) {
        assign(m, "batchMatmul(" + name(m.getLhs()) + ", " +
                      name(m.getRhs()) + ", " +
                      (m.getTransposeLhs() ? "true" : "false") + ", " +
                      (m.getTransposeRhs() ? "true" : "false") + ")");
      })
      .Case([&](LinearOp l) {
        assign(l, "linear(" + name(l.getInput()) + ", " + name(l.getWeight()) +
                      ", " + opt(l.getBias()) + ")");
      })
      .Case([&](AddOp) { binaryOp("Add"); })
      .Case([&](SubOp) { binaryOp("Sub"); })
      .Case([&](MulOp) { binaryOp("Mul"); })
      .Case([&](DivOp) { binaryOp("Div"); })
      .Case([&](MaximumOp) { binaryOp("Maximum"); })
      .Case([&](MinimumOp) { binaryOp("Minimum"); })
      .Case([&](NegOp) { unary("Neg"); })
      .Case([&](ExpOp) { unary("Exp"); })
      .Case([&](LogOp) { unary("Log"); })
      .Case([&](SqrtOp) { unary("Sqrt"); })
      .Case([&](RsqrtOp) { unary("Rsqrt"); })
      .Case([&](TanhOp) { unary("Tanh"); })
      .Case([&](SigmoidOp) { unary("Sigmoid"); })
      .Case([&](ReluOp) { unary("Relu"); })
      .Case([&](SiluOp) { unary("Silu"); })
      .Case([&](GeluOp g) { unary(g.getApproximate() ? "GeluTanh" : "Gelu"); })
      .Case([&](ConvertOp c) {
        assign(c, "convert(" + name(c.getInput()) + ", " + dtype(c.getType()) +
                      ")");
      })
      .Case([&](CompareOp c) {
        static const char *kinds[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
        assign(c, std::string("compare(CompareKind::") +
                      kinds[static_cast<int>(c.getPredicate())] + ", " +
                      name(c.getLhs()) + ", " + name(c.getRhs()) + ")");
      })
      .Case([&](WhereOp w) {
        assign(w, "where(" + name(w.getCondition()) + ", " +
                      name(w.getOnTrue()) + ", " + name(w.getOnFalse()) + ")");
      })
      .Case([&](MaskedFillOp m) {
        assign(m, "maskedFill(" + name(m.getInput()) + ", " +
                      name(m.getMask()) + ", " +
                      number(m.getValue().convertToDouble()) + ")");
      })
      .Case([&](DropoutOp d) {
        auto s = d->getAttrOfType<ShardingAttr>(
            RTXDialect::getShardingAttrName());
        std::string block = "ctx.block(" + sharding(s) + ", " +
                            shape(d.getType()) + ")";
        os << "  LocalBlock b" << tuples << " = " << block << ";\n";
        assign(d, "dropout(" + name(d.getInput()) + ", " +
                      number(d.getRate().convertToDouble()) + ", " +
                      std::to_string(d.getSeed()) + ", b" +
                      std::to_string(tuples) + ".globalShape, b" +
                      std::to_string(tuples) + ".offsets)");
        ++tuples;
      })
      .Case([&](LayerNormOp l) {
        assign(l, "layerNorm(" + name(l.getInput()) + ", " +
                      name(l.getScale()) + ", " + opt(l.getBias()) + ", " +
                      number(l.getEpsilon().convertToDouble()) + ")");
      })
      .Case([&](RMSNormOp l) {
        assign(l, "rmsNorm(" + name(l.getInput()) + ", " + name(l.getScale()) +
                      ", " + number(l.getEpsilon().convertToDouble()) + ")");
      })
      .Case([&](SoftmaxOp s) {
        assign(s, "softmax(" + name(s.getInput()) + ", " +
                      std::to_string(s.getDim()) + ")");
      })
      .Case([&](RopeOp r) {
        assign(r, "rope(" + name(r.getInput()) + ", " +
                      number(r.getTheta().convertToDouble()) + ", " +
                      std::to_string(r.getOffset()) + ")");
      })
      .Case([&](AttentionOp a) {
        assign(a, "attention(" + name(a.getQuery()) + ", " + name(a.getKey()) +
                      ", " + name(a.getValue()) + ", " +
                      (a.getCausal() ? "true" : "false") + ", " +
                      number(a.getEffectiveScale()) + ")");
      })
      .Case([&](EmbeddingOp e) {
        std::string shard;
        if (e.getVocabAxes())
          shard = ", " + vocabShard(e, "vocab_axes",
                                    e.getTable().getType().getDimSize(0));
        assign(e, "embedding(" + name(e.getTable()) + ", " + name(e.getIds()) +
                      shard + ")");
      })
      .Case([&](VocabLogitStatsOp v) {
        assignAll(v, "vocabLogitStats(" + name(v.getLogits()) + ", " +
                         name(v.getLabels()) + ", " +
                         vocabShard(v, "axes",
                                    v.getLogits().getType().getShape().back()) +
                         ", " + ignoreIndexArgs(v.getIgnoreIndex()) + ")");
      })
      .Case([&](VocabCrossEntropyOp v) {
        assign(v, "vocabCrossEntropy(" + name(v.getMax()) + ", " +
                      name(v.getSumExp()) + ", " + name(v.getLabelLogit()) +
                      ", " + name(v.getLabels()) + ", " +
                      ignoreIndexArgs(v.getIgnoreIndex()) + ")");
      })
      .Case([&](CrossEntropyOp c) {
        std::optional<uint64_t> ignore = c.getIgnoreIndex();
        assign(c, "crossEntropy(" + name(c.getLogits()) + ", " +
                      name(c.getLabels()) + ", " +
                      (ignore ? "true" : "false") + ", " +
                      std::to_string(ignore ? (int64_t)*ignore : 0) + ")");
      })
      .Case([&](ReshapeOp r) {
        assign(r, "reshape(" + name(r.getInput()) + ", " + shape(r.getType()) +
                      ")");
      })
      .Case([&](TransposeOp t) {
        assign(t, "transpose(" + name(t.getInput()) + ", " +
                      ints(t.getPermutation()) + ")");
      })
      .Case([&](SliceOp s) {
        assign(s, "slice(" + name(s.getInput()) + ", " + ints(s.getStarts()) +
                      ", " + ints(s.getLimits()) + ")");
      })
      .Case([&](SplitOp s) {
        SmallVector<int64_t> sizes;
        for (Value r : s.getResults())
          sizes.push_back(cast<RankedTensorType>(r.getType())
                              .getDimSize(static_cast<int64_t>(s.getDim())));
        assignAll(s, "split(" + name(s.getInput()) + ", " +
                         std::to_string(s.getDim()) + ", " + ints(sizes) +
                         ")");
      })
      .Case([&](ConcatOp c) {
        std::string list = "{";
        for (auto [i, v] : llvm::enumerate(c.getInputs()))
          list += (i ? ", " : "") + name(v);
        assign(c, "concat(" + list + "}, " + std::to_string(c.getDim()) + ")");
      })
      .Case([&](BroadcastOp b) {
        assign(b, "broadcast(" + name(b.getInput()) + ", " +
                      ints(b.getDims()) + ", " + shape(b.getType()) + ")");
      })
      .Case([&](ReduceOp r) {
        assign(r, "reduce(" + reduceKind(r.getKind()) + ", " +
                      name(r.getInput()) + ", " + ints(r.getDims()) + ", " +
                      (r.getKeepdim() ? "true" : "false") + ")");
      })
      .Case([&](UnaryGradOp u) {
        assign(u, "unaryGrad(static_cast<UnaryFn>(" +
                      std::to_string(static_cast<int>(u.getFn())) + "), " +
                      name(u.getInput()) + ", " + name(u.getResultGrad()) +
                      ")");
      })
      .Case([&](LayerNormGradOp l) {
        assignAll(l, "layerNormGrad(" + name(l.getInput()) + ", " +
                         name(l.getScale()) + ", " + name(l.getResultGrad()) +
                         ", " + number(l.getEpsilon().convertToDouble()) +
                         ")");
      })
      .Case([&](RMSNormGradOp l) {
        assignAll(l, "rmsNormGrad(" + name(l.getInput()) + ", " +
                         name(l.getScale()) + ", " + name(l.getResultGrad()) +
                         ", " + number(l.getEpsilon().convertToDouble()) +
                         ")");
      })
      .Case([&](SoftmaxGradOp s) {
        assign(s, "softmaxGrad(" + name(s.getResult()) + ", " +
                      name(s.getResultGrad()) + ", " +
                      std::to_string(s.getDim()) + ")");
      })
      .Case([&](RopeGradOp r) {
        assign(r, "ropeGrad(" + name(r.getResultGrad()) + ", " +
                      number(r.getTheta().convertToDouble()) + ", " +
                      std::to_string(r.getOffset()) + ")");
      })
      .Case([&](AttentionGradOp a) {
        assignAll(a, "attentionGrad(" + name(a.getQuery()) + ", " +
                         name(a.getKey()) + ", " + name(a.getValue()) + ", " +
                         name(a.getResultGrad()) + ", " +
                         (a.getCausal() ? "true" : "false") + ", " +
                         number(a.getEffectiveScale()) + ")");
      })
      .Case([&](EmbeddingGradOp e) {
        std::string shard;
        if (e.getVocabAxes())
          shard = ", " + vocabShard(e, "vocab_axes", e.getType().getDimSize(0));
        assign(e, "embeddingGrad(" + name(e.getIds()) + ", " +
                      name(e.getResultGrad()) + ", " + shape(e.getType()) +
                      shard + ")");
      })
      .Case([&](VocabCrossEntropyGradOp v) {
        assign(v, "vocabCrossEntropyGrad(" + name(v.getLogits()) + ", " +
                      name(v.getLabels()) + ", " + name(v.getLossGrad()) +
                      ", " + name(v.getMax()) + ", " + name(v.getSumExp()) +
                      ", " +
                      vocabShard(v, "axes",
                                 v.getLogits().getType().getShape().back()) +
                      ", " + ignoreIndexArgs(v.getIgnoreIndex()) + ")");
      })
      .Case([&](CrossEntropyGradOp c) {
        std::optional<uint64_t> ignore = c.getIgnoreIndex();
        assign(c, "crossEntropyGrad(" + name(c.getLogits()) + ", " +
                      name(c.getLabels()) + ", " + name(c.getLossGrad()) +
                      ", " + (ignore ? "true" : "false") + ", " +
                      std::to_string(ignore ? (int64_t)*ignore : 0) + ")");
      })
      .Case([&](PadOp p) {
        assign(p, "pad(" + name(p.getInput()) + ", " + ints(p.getLow()) +
                      ", " + ints(p.getHigh()) + ")");
      })
      .Case([&](AdamWUpdateOp a) {
        assignAll(a, "adamwUpdate(" + name(a.getParam()) + ", " +
                         name(a.getGrad()) + ", " + name(a.getExpAvg()) +
                         ", " + name(a.getExpAvgSq()) + ", " +
                         name(a.getStep()) + ", " +
                         number(a.getLr().convertToDouble()) + ", " +
                         number(a.getBeta1().convertToDouble()) + ", " +
                         number(a.getBeta2().convertToDouble()) + ", " +
                         number(a.getEps().convertToDouble()) + ", " +
                         number(a.getWeightDecay().convertToDouble()) + ")");
      })
      .Case([&](SGDUpdateOp s) {
        assign(s, "sgdUpdate(" + name(s.getParam()) + ", " + name(s.getGrad()) +
                      ", " + number(s.getLr().convertToDouble()) + ", " +
                      number(s.getWeightDecay().convertToDouble()) + ")");
      })
      .Case([&](AllReduceOp c) {
        collective("ctx.allReduce(" + where(c) + ", " + axes(c) + ", " +
                   reduceKind(c.getKind()) + ", " + name(c.getInput()) + ")");
      })
      .Case([&](AllReduceStartOp c) {
        // The token is the pending collective; rtx.wait takes its result.
        std::string a = axes(c);
        if (std::find(collectiveAxes.begin(), collectiveAxes.end(), a) ==
            collectiveAxes.end())
          collectiveAxes.push_back(a);
        os << "  StepContext::Pending " << name(c.getToken())
           << " = ctx.allReduceStart(" << where(c) << ", " << a << ", "
           << reduceKind(c.getKind()) << ", " << name(c.getInput()) << ");\n";
      })
      .Case([&](WaitOp w) {
        if (!w.getResult()) {
          w.emitError("rtx-translate emits rtx.wait only for rtx.all_reduce_start");
          ok = false;
          return;
        }
        os << "  Tensor " << name(w.getResult()) << " = ctx.wait("
           << name(w.getToken()) << ");\n";
      })
      .Case([&](AllGatherOp c) {
        collective("ctx.allGather(" + where(c) + ", " + axes(c) + ", " +
                   std::to_string(c.getGatherDim()) + ", " +
                   name(c.getInput()) + ")");
      })
      .Case([&](ReduceScatterOp c) {
        collective("ctx.reduceScatter(" + where(c) + ", " + axes(c) + ", " +
                   reduceKind(c.getKind()) + ", " +
                   std::to_string(c.getScatterDim()) + ", " +
                   name(c.getInput()) + ")");
      })
      .Case([&](AllToAllOp c) {
        collective("ctx.allToAll(" + where(c) + ", " + axes(c) + ", " +
                   std::to_string(c.getSplitDim()) + ", " +
                   std::to_string(c.getConcatDim()) + ", " +
                   name(c.getInput()) + ")");
      })
      .Case([&](BroadcastFromOp c) {
        collective("ctx.broadcastFrom(" + where(c) + ", " + axes(c) + ", " +
                   std::to_string(c.getRoot()) + ", " + name(c.getInput()) +
                   ")");
      })
      .Case([&](PermuteOp c) {
        collective("ctx.permute(" + where(c) + ", " + axes(c) + ", " +
                   ints(c.getPairs()) + ", " + name(c.getInput()) + ")");
      })
      .Case([&](MeshSliceOp m) {
        assign(m, "ctx.meshSlice(" + axes(m) + ", " +
                      std::to_string(m.getDim()) + ", " + name(m.getInput()) +
                      ")");
      })
      .Default([&](Operation *other) {
        other->emitError() << "rtx-translate cannot emit '" << other->getName()
                           << "' yet";
        ok = false;
      });
  return success(ok);
}

LogicalResult Emitter::emit() {
  // What the arguments and results are (main() writes it as the program's
  // ProgramSpec); decoded first, so that a bad module fails before any text.
  FailureOr<MeshOp> mesh = getProgramMesh(module);
  if (failed(mesh))
    return failure();
  FailureOr<ProgramDescription> program = describeProgram(function, *mesh);
  if (failed(program))
    return failure();

  Block &body = function.getBody().front();
  os << "// Generated by rtx-translate --emit=" << (cuda ? "cuda" : "cpp")
     << " from @" << function.getSymName() << "; do not edit.\n"
     << (cuda ? "#include \"rtxrt/Gpu.h\"\n" : "")
     << "#include \"rtxrt/Program.h\"\n\n#include <cmath>\n\n"
     << "using namespace rtxrt;\n\n"
     << "static Tensor constantTensor(Shape shape, DType dtype,\n"
     << "                             std::vector<double> values) {\n"
     << "  Tensor t(shape, dtype);\n"
     << "  for (int64_t i = 0; i < t.numel(); ++i)\n"
     << "    t.setFromDouble(i, values.size() == 1 ? values[0] : values[i]);\n"
     << (cuda ? "  return gpu::toDevice(t);\n}\n\n" : "  return t;\n}\n\n")
     << "static std::vector<Tensor> step(StepContext &ctx,\n"
     << "                                const std::vector<Tensor> &args) {\n";
  for (BlockArgument arg : body.getArguments())
    os << "  const Tensor &" << name(arg) << " = args[" << arg.getArgNumber()
       << "];\n";
  // Named inputs follow the function's arguments in `args`, in the
  // description's order.
  for (auto [i, argument] : llvm::enumerate(program->arguments))
    if (!argument.argNumber)
      inputIndex[argument.value.getDefiningOp()] = i;
  for (Operation &op : body.without_terminator())
    if (failed(emitOp(&op)))
      return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  os << "  return {";
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    os << (i ? ", " : "") << name(v);
  os << "};\n}\n\n";
  emitProgramMain(*program, collectiveAxes, cuda, os);
  return success();
}

LogicalResult mlir::rtx::translateToProgram(ModuleOp module,
                                            func::FuncOp function,
                                            ProgramTarget target,
                                            raw_ostream &os) {
  return Emitter(module, function, target, os).emit();
}

LogicalResult mlir::rtx::translateToCpp(ModuleOp module, func::FuncOp function,
                                        raw_ostream &os) {
  return translateToProgram(module, function, ProgramTarget::Cpu, os);
}
