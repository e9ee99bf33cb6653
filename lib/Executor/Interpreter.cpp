//===- Interpreter.cpp - one rank's interpretation of a function ----------===//
//
// Walks a function's body in order and runs each op on the runtime's CPU
// kernels. Collectives and send/recv go through the InProcessWorld; async
// starts complete eagerly and their tokens carry the result to rtx.wait,
// which preserves the program's meaning (only the overlap is lost).
//
//===----------------------------------------------------------------------===//

#include "Interpreter.h"
#include "Distribution.h"

#include "rtxrt/Collectives.h"
#include "rtxrt/Kernels.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::rtx;
using rtxrt::Error;
using rtxrt::Shape;
using rtxrt::Tensor;

rtxrt::DType mlir::rtx::toDType(Type type) {
  if (type.isF32())
    return rtxrt::DType::F32;
  if (type.isF64())
    return rtxrt::DType::F64;
  if (type.isBF16())
    return rtxrt::DType::BF16;
  if (type.isF16())
    return rtxrt::DType::F16;
  if (type.isInteger(1))
    return rtxrt::DType::I1;
  if (type.isInteger(32))
    return rtxrt::DType::I32;
  if (type.isInteger(64))
    return rtxrt::DType::I64;
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  throw Error("rtx-run does not support element type " + name);
}

std::string mlir::rtx::formatLocation(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" +
            Twine(fileLoc.getLine()) + ":" + Twine(fileLoc.getColumn()))
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return nameLoc.getName().str() + " (" +
           formatLocation(nameLoc.getChildLoc()) + ")";
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return formatLocation(fused.getLocations().front());
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

std::string mlir::rtx::describe(Operation *op) {
  return "op '" + op->getName().getStringRef().str() + "' at " +
         formatLocation(op->getLoc());
}

ParamSpec mlir::rtx::getParamSpec(ParamOp op) {
  return {op.getName().str(), op.getInit(), op.getEffectiveSeed(),
          op.getType(),
          op->getAttrOfType<ShardingAttr>(RTXDialect::getShardingAttrName())};
}

static Shape shapeOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return Shape(tensor.getShape().begin(), tensor.getShape().end());
}

static std::vector<int64_t> toVector(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

static std::vector<std::string> axesOf(Operation *op, StringRef name = "axes") {
  std::vector<std::string> axes;
  for (Attribute axis : op->getAttrOfType<ArrayAttr>(name))
    axes.push_back(cast<StringAttr>(axis).getValue().str());
  return axes;
}

/// The sharding of `op`'s single result, if annotated.
static ShardingAttr resultSharding(Operation *op) {
  Attribute attr = op->getAttr(RTXDialect::getShardingAttrName());
  if (auto sharding = dyn_cast_or_null<ShardingAttr>(attr))
    return sharding;
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    return dyn_cast<ShardingAttr>(array[0]);
  return {};
}

static rtxrt::ReduceKind toReduceKind(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return rtxrt::ReduceKind::Sum;
  case ReductionKind::Mean:
    return rtxrt::ReduceKind::Mean;
  case ReductionKind::Max:
    return rtxrt::ReduceKind::Max;
  case ReductionKind::Min:
    return rtxrt::ReduceKind::Min;
  }
  llvm_unreachable("unknown reduction kind");
}

namespace {
class Interpreter {
public:
  explicit Interpreter(RankEnvironment &env) : env(env) {}

  std::vector<Tensor> run(func::FuncOp function,
                          const std::vector<Tensor> &args) {
    Block &body = function.getBody().front();
    if (args.size() != body.getNumArguments())
      throw Error("function @" + function.getSymName().str() + " takes " +
                  std::to_string(body.getNumArguments()) + " arguments, got " +
                  std::to_string(args.size()));
    for (auto [arg, value] : llvm::zip(body.getArguments(), args))
      values[arg] = value;
    for (Operation &op : body) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        std::vector<Tensor> results;
        for (Value v : ret.getOperands())
          results.push_back(get(v));
        return results;
      }
      runOp(&op);
    }
    throw Error("function @" + function.getSymName().str() +
                " has no func.return");
  }

private:
  Tensor get(Value value) {
    auto it = values.find(value);
    if (it == values.end())
      throw Error("internal error: value used before it is defined");
    return it->second;
  }
  void set(Value value, Tensor tensor) {
    if (auto type = dyn_cast<RankedTensorType>(value.getType())) {
      if (tensor.shape() != shapeOf(type))
        throw Error("kernel produced shape " +
                    rtxrt::shapeToString(tensor.shape()) + ", expected " +
                    rtxrt::shapeToString(shapeOf(type)));
    }
    values[value] = std::move(tensor);
  }
  Tensor optional(Value value) { return value ? get(value) : Tensor(); }
  void setAll(Operation *op, std::vector<Tensor> tensors) {
    if (tensors.size() != op->getNumResults())
      throw Error("kernel produced " + std::to_string(tensors.size()) +
                  " results, expected " + std::to_string(op->getNumResults()));
    for (auto [result, tensor] : llvm::zip(op->getResults(), tensors))
      set(result, std::move(tensor));
  }

  void runOp(Operation *op) {
    try {
      dispatch(op);
    } catch (const Error &error) {
      std::string message = error.what();
      // Deadlock and abort reports already say where every rank is.
      if (message.rfind("deadlock", 0) == 0 ||
          message.rfind("stopped because", 0) == 0 ||
          message.rfind("collective mismatch", 0) == 0 ||
          message.find(" timed out ") != std::string::npos)
        throw;
      throw Error("rank " + std::to_string(env.rank) + ": " + describe(op) +
                  ": " + message);
    }
  }

  std::string where(Operation *op) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << op->getName();
    if (auto axes = op->getAttrOfType<ArrayAttr>("axes"))
      os << " over " << axes;
    os << " at " << formatLocation(op->getLoc());
    return s;
  }

  std::string signature(Operation *op) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << op->getName().getStringRef().str();
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() != RTXDialect::getShardingAttrName())
        os << ' ' << attr.getName() << '=' << attr.getValue();
    if (op->getNumOperands() > 0)
      os << " : " << op->getOperand(0).getType();
    return s;
  }

  InProcessWorld &world(Operation *op) {
    if (!env.world)
      throw Error("collectives need several ranks: run with --ranks N "
                  "matching the mesh");
    return *env.world;
  }

  /// Runs the collective `op` (sync or start form) on `input`.
  Tensor collective(Operation *op, const Tensor &input) {
    std::vector<std::string> axes = axesOf(op);
    std::vector<int64_t> group = env.mesh.group(env.rank, axes);
    int64_t index = env.mesh.indexInGroup(env.rank, axes);
    std::vector<Tensor> all =
        world(op).exchange(env.rank, group, signature(op), input, where(op));
    auto intAttr = [&](StringRef name) {
      return op->getAttrOfType<IntegerAttr>(name).getValue().getSExtValue();
    };
    auto kindAttr = [&] {
      return op->getAttrOfType<ReductionKindAttr>("kind").getValue();
    };
    if (isa<AllReduceOp, AllReduceStartOp>(op))
      return rtxrt::reduceGroup(toReduceKind(kindAttr()), all);
    if (isa<AllGatherOp, AllGatherStartOp>(op))
      return rtxrt::gatherGroup(all, intAttr("gather_dim"));
    if (isa<ReduceScatterOp, ReduceScatterStartOp>(op))
      return rtxrt::reduceScatterGroup(toReduceKind(kindAttr()), all,
                                       intAttr("scatter_dim"), index);
    if (isa<AllToAllOp, AllToAllStartOp>(op))
      return rtxrt::allToAllGroup(all, intAttr("split_dim"),
                                  intAttr("concat_dim"), index);
    if (isa<BroadcastFromOp, BroadcastFromStartOp>(op))
      return all[intAttr("root")];
    if (isa<PermuteOp, PermuteStartOp>(op))
      return rtxrt::permuteGroup(
          all,
          toVector(op->getAttrOfType<DenseI64ArrayAttr>("pairs").asArrayRef()),
          index, input);
    throw Error("unknown collective");
  }

  int64_t peerRank(Operation *op) {
    std::vector<int64_t> group = env.mesh.group(env.rank, axesOf(op));
    int64_t peer =
        op->getAttrOfType<IntegerAttr>("peer").getValue().getSExtValue();
    return group.at(peer);
  }
  int64_t tagOf(Operation *op) {
    return op->getAttrOfType<IntegerAttr>("tag").getValue().getSExtValue();
  }

  void dispatch(Operation *op) {
    using namespace rtxrt;
    llvm::TypeSwitch<Operation *>(op)
        // --- values that enter the model -----------------------------------
        .Case([&](ParamOp p) { set(p, env.getParam(getParamSpec(p))); })
        .Case([&](InputOp p) { set(p, env.getInput(p)); })
        .Case([&](ConstantOp c) {
          auto attr = cast<DenseElementsAttr>(c.getValue());
          Tensor t(shapeOf(c.getType()), toDType(c.getType().getElementType()));
          int64_t i = 0;
          if (attr.getElementType().isIntOrIndex()) {
            for (const APInt &v : attr.getValues<APInt>())
              t.setFromDouble(i++, attr.getElementType().isInteger(1)
                                       ? double(v.getZExtValue())
                                       : double(v.getSExtValue()));
          } else {
            for (const APFloat &v : attr.getValues<APFloat>())
              t.setFromDouble(i++, v.convertToDouble());
          }
          set(c, t);
        })
        // --- contractions ------------------------------------------------------
        .Case([&](MatmulOp m) {
          set(m, matmul(get(m.getLhs()), get(m.getRhs()), m.getTransposeLhs(),
                        m.getTransposeRhs()));
        })
        .Case([&](BatchMatmulOp m) {
          set(m, batchMatmul(get(m.getLhs()), get(m.getRhs()),
                             m.getTransposeLhs(), m.getTransposeRhs()));
        })
        .Case([&](LinearOp l) {
          set(l, linear(get(l.getInput()), get(l.getWeight()),
                        optional(l.getBias())));
        })
        // --- elementwise -------------------------------------------------------
        .Case([&](AddOp o) { binaryOp(o, BinaryKind::Add); })
        .Case([&](SubOp o) { binaryOp(o, BinaryKind::Sub); })
        .Case([&](MulOp o) { binaryOp(o, BinaryKind::Mul); })
        .Case([&](DivOp o) { binaryOp(o, BinaryKind::Div); })
        .Case([&](MaximumOp o) { binaryOp(o, BinaryKind::Maximum); })
        .Case([&](MinimumOp o) { binaryOp(o, BinaryKind::Minimum); })
        .Case([&](NegOp o) { unaryOp(o, UnaryKind::Neg); })
        .Case([&](ExpOp o) { unaryOp(o, UnaryKind::Exp); })
        .Case([&](LogOp o) { unaryOp(o, UnaryKind::Log); })
        .Case([&](SqrtOp o) { unaryOp(o, UnaryKind::Sqrt); })
        .Case([&](RsqrtOp o) { unaryOp(o, UnaryKind::Rsqrt); })
        .Case([&](TanhOp o) { unaryOp(o, UnaryKind::Tanh); })
        .Case([&](SigmoidOp o) { unaryOp(o, UnaryKind::Sigmoid); })
        .Case([&](ReluOp o) { unaryOp(o, UnaryKind::Relu); })
        .Case([&](SiluOp o) { unaryOp(o, UnaryKind::Silu); })
        .Case([&](GeluOp o) {
          unaryOp(o, o.getApproximate() ? UnaryKind::GeluTanh : UnaryKind::Gelu);
        })
        .Case([&](ConvertOp o) {
          set(o, convert(get(o.getInput()),
                         toDType(o.getType().getElementType())));
        })
        .Case([&](CompareOp o) {
          static const CompareKind kinds[] = {CompareKind::EQ, CompareKind::NE,
                                              CompareKind::LT, CompareKind::LE,
                                              CompareKind::GT, CompareKind::GE};
          set(o, compare(kinds[static_cast<int>(o.getPredicate())],
                         get(o.getLhs()), get(o.getRhs())));
        })
        .Case([&](WhereOp o) {
          set(o, rtxrt::where(get(o.getCondition()), get(o.getOnTrue()),
                       get(o.getOnFalse())));
        })
        .Case([&](MaskedFillOp o) {
          set(o, maskedFill(get(o.getInput()), get(o.getMask()),
                            o.getValue().convertToDouble()));
        })
        .Case([&](DropoutOp o) {
          Tensor input = get(o.getInput());
          LocalBlock block = getLocalBlock(resultSharding(o), input.shape(),
                                           env.mesh, env.rank);
          set(o, dropout(input, o.getRate().convertToDouble(),
                         static_cast<int64_t>(o.getSeed()), block.globalShape,
                         block.offsets));
        })
        // --- normalisation, softmax, attention -------------------------------
        .Case([&](LayerNormOp o) {
          set(o, layerNorm(get(o.getInput()), get(o.getScale()),
                           optional(o.getBias()),
                           o.getEpsilon().convertToDouble()));
        })
        .Case([&](RMSNormOp o) {
          set(o, rmsNorm(get(o.getInput()), get(o.getScale()),
                         o.getEpsilon().convertToDouble()));
        })
        .Case([&](SoftmaxOp o) {
          set(o, softmax(get(o.getInput()), static_cast<int64_t>(o.getDim())));
        })
        .Case([&](RopeOp o) {
          set(o, rope(get(o.getInput()), o.getTheta().convertToDouble(),
                      static_cast<int64_t>(o.getOffset())));
        })
        .Case([&](AttentionOp o) {
          set(o, attention(get(o.getQuery()), get(o.getKey()),
                           get(o.getValue()), o.getCausal(),
                           o.getEffectiveScale()));
        })
        // --- embedding and loss ------------------------------------------------
        .Case([&](EmbeddingOp o) {
          Tensor table = get(o.getTable());
          if (!o.getVocabAxes()) {
            set(o, embedding(table, get(o.getIds())));
            return;
          }
          VocabShard shard = vocabShard(o, "vocab_axes", table.dim(0));
          set(o, embedding(table, get(o.getIds()), shard.offset, shard.vocab));
        })
        .Case([&](CrossEntropyOp o) {
          std::optional<uint64_t> ignore = o.getIgnoreIndex();
          set(o, crossEntropy(get(o.getLogits()), get(o.getLabels()),
                              ignore.has_value(),
                              ignore ? static_cast<int64_t>(*ignore) : 0));
        })
        .Case([&](VocabLogitStatsOp o) {
          Tensor logits = get(o.getLogits());
          VocabShard shard =
              vocabShard(o, "axes", logits.dim(logits.rank() - 1));
          std::optional<uint64_t> ignore = o.getIgnoreIndex();
          setAll(o,
                 vocabLogitStats(logits, get(o.getLabels()), shard.offset,
                                 shard.vocab, ignore.has_value(),
                                 ignore ? static_cast<int64_t>(*ignore) : 0));
        })
        .Case([&](VocabCrossEntropyOp o) {
          std::optional<uint64_t> ignore = o.getIgnoreIndex();
          set(o, vocabCrossEntropy(get(o.getMax()), get(o.getSumExp()),
                                   get(o.getLabelLogit()), get(o.getLabels()),
                                   ignore.has_value(),
                                   ignore ? static_cast<int64_t>(*ignore) : 0));
        })
        // --- shape manipulation ------------------------------------------------
        .Case([&](ReshapeOp o) {
          set(o, reshape(get(o.getInput()), shapeOf(o.getType())));
        })
        .Case([&](TransposeOp o) {
          set(o, transpose(get(o.getInput()), toVector(o.getPermutation())));
        })
        .Case([&](SliceOp o) {
          set(o, slice(get(o.getInput()), toVector(o.getStarts()),
                       toVector(o.getLimits())));
        })
        .Case([&](SplitOp o) {
          int64_t dim = static_cast<int64_t>(o.getDim());
          std::vector<int64_t> sizes;
          for (Value r : o.getResults())
            sizes.push_back(cast<RankedTensorType>(r.getType()).getDimSize(dim));
          std::vector<Tensor> pieces = split(get(o.getInput()), dim, sizes);
          for (auto [r, t] : llvm::zip(o.getResults(), pieces))
            set(r, t);
        })
        .Case([&](ConcatOp o) {
          std::vector<Tensor> inputs;
          for (Value v : o.getInputs())
            inputs.push_back(get(v));
          set(o, concat(inputs, static_cast<int64_t>(o.getDim())));
        })
        .Case([&](BroadcastOp o) {
          set(o, broadcast(get(o.getInput()), toVector(o.getDims()),
                           shapeOf(o.getType())));
        })
        .Case([&](ReduceOp o) {
          set(o, reduce(toReduceKind(o.getKind()), get(o.getInput()),
                        toVector(o.getDims()), o.getKeepdim()));
        })
        // --- backward pass and optimizer --------------------------------------
        .Case([&](UnaryGradOp o) {
          set(o, unaryGrad(static_cast<rtxrt::UnaryFn>(static_cast<int>(o.getFn())), get(o.getInput()),
                           get(o.getResultGrad())));
        })
        .Case([&](LayerNormGradOp o) {
          setAll(o, layerNormGrad(get(o.getInput()), get(o.getScale()),
                                  get(o.getResultGrad()),
                                  o.getEpsilon().convertToDouble()));
        })
        .Case([&](RMSNormGradOp o) {
          setAll(o, rmsNormGrad(get(o.getInput()), get(o.getScale()),
                                get(o.getResultGrad()),
                                o.getEpsilon().convertToDouble()));
        })
        .Case([&](SoftmaxGradOp o) {
          set(o, softmaxGrad(get(o.getResult()), get(o.getResultGrad()),
                             static_cast<int64_t>(o.getDim())));
        })
        .Case([&](RopeGradOp o) {
          set(o, ropeGrad(get(o.getResultGrad()),
                          o.getTheta().convertToDouble(),
                          static_cast<int64_t>(o.getOffset())));
        })
        .Case([&](AttentionGradOp o) {
          setAll(o, attentionGrad(get(o.getQuery()), get(o.getKey()),
                                  get(o.getValue()), get(o.getResultGrad()),
                                  o.getCausal(), o.getEffectiveScale()));
        })
        .Case([&](EmbeddingGradOp o) {
          Shape table = shapeOf(o.getType());
          if (!o.getVocabAxes()) {
            set(o,
                embeddingGrad(get(o.getIds()), get(o.getResultGrad()), table));
            return;
          }
          VocabShard shard = vocabShard(o, "vocab_axes", table[0]);
          set(o, embeddingGrad(get(o.getIds()), get(o.getResultGrad()), table,
                               shard.offset, shard.vocab));
        })
        .Case([&](VocabCrossEntropyGradOp o) {
          Tensor logits = get(o.getLogits());
          VocabShard shard =
              vocabShard(o, "axes", logits.dim(logits.rank() - 1));
          std::optional<uint64_t> ignore = o.getIgnoreIndex();
          set(o, vocabCrossEntropyGrad(
                     logits, get(o.getLabels()), get(o.getLossGrad()),
                     get(o.getMax()), get(o.getSumExp()), shard.offset,
                     shard.vocab, ignore.has_value(),
                     ignore ? static_cast<int64_t>(*ignore) : 0));
        })
        .Case([&](CrossEntropyGradOp o) {
          std::optional<uint64_t> ignore = o.getIgnoreIndex();
          set(o, crossEntropyGrad(get(o.getLogits()), get(o.getLabels()),
                                  get(o.getLossGrad()), ignore.has_value(),
                                  ignore ? static_cast<int64_t>(*ignore) : 0));
        })
        .Case([&](PadOp o) {
          set(o, pad(get(o.getInput()), toVector(o.getLow()),
                     toVector(o.getHigh())));
        })
        .Case([&](AdamWUpdateOp o) {
          setAll(o, adamwUpdate(get(o.getParam()), get(o.getGrad()),
                                get(o.getExpAvg()), get(o.getExpAvgSq()),
                                get(o.getStep()), o.getLr().convertToDouble(),
                                o.getBeta1().convertToDouble(),
                                o.getBeta2().convertToDouble(),
                                o.getEps().convertToDouble(),
                                o.getWeightDecay().convertToDouble()));
        })
        .Case([&](SGDUpdateOp o) {
          set(o, sgdUpdate(get(o.getParam()), get(o.getGrad()),
                           o.getLr().convertToDouble(),
                           o.getWeightDecay().convertToDouble()));
        })
        // --- communication -------------------------------------------------------
        .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
              BroadcastFromOp, PermuteOp>([&](Operation *c) {
          set(c->getResult(0), collective(c, get(c->getOperand(0))));
        })
        .Case<AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp,
              AllToAllStartOp, BroadcastFromStartOp, PermuteStartOp>(
            [&](Operation *c) {
              values[c->getResult(0)] = collective(c, get(c->getOperand(0)));
            })
        .Case([&](MeshSliceOp m) {
          Tensor input = get(m.getInput());
          std::vector<std::string> axes = axesOf(m);
          int64_t n = env.mesh.groupSize(axes);
          int64_t dim = static_cast<int64_t>(m.getDim());
          set(m, rtxrt::sliceGroup(input, dim, n,
                                   env.mesh.indexInGroup(env.rank, axes)));
        })
        .Case([&](SendOp s) {
          world(s).send(env.rank, peerRank(s), tagOf(s), get(s.getInput()));
        })
        .Case([&](SendStartOp s) {
          world(s).send(env.rank, peerRank(s), tagOf(s), get(s.getInput()));
          values[s.getToken()] = Tensor();
        })
        .Case([&](RecvOp r) {
          set(r, world(r).recv(env.rank, peerRank(r), tagOf(r), where(r)));
        })
        .Case([&](RecvStartOp r) {
          values[r.getToken()] =
              world(r).recv(env.rank, peerRank(r), tagOf(r), where(r));
        })
        .Case([&](WaitOp w) {
          Tensor value = get(w.getToken());
          if (Value result = w.getResult())
            set(result, value);
        })
        .Default([&](Operation *other) {
          throw Error("rtx-run does not support this op");
        });
  }

  /// Where this rank's vocabulary shard of `rows` entries starts, and the
  /// whole vocabulary's size, for an op split over its `axesName` axes.
  struct VocabShard {
    int64_t offset, vocab;
  };
  VocabShard vocabShard(Operation *op, StringRef axesName, int64_t rows) {
    std::vector<std::string> axes = axesOf(op, axesName);
    return {env.mesh.indexInGroup(env.rank, axes) * rows,
            env.mesh.groupSize(axes) * rows};
  }

  void unaryOp(Operation *op, rtxrt::UnaryKind kind) {
    set(op->getResult(0), rtxrt::unary(kind, get(op->getOperand(0))));
  }
  void binaryOp(Operation *op, rtxrt::BinaryKind kind) {
    set(op->getResult(0), rtxrt::binary(kind, get(op->getOperand(0)),
                                        get(op->getOperand(1))));
  }

  RankEnvironment &env;
  llvm::DenseMap<Value, Tensor> values;
};
} // namespace

std::vector<Tensor> mlir::rtx::interpret(func::FuncOp function,
                                         const std::vector<Tensor> &args,
                                         RankEnvironment &env) {
  return Interpreter(env).run(function, args);
}
