//===- Interpreter.cpp - one rank's interpretation of a function ----------===//
//
// Walks a function's body in order and runs each op on the runtime's CPU
// kernels, as its kernel binding (KernelOpInterface) says. Collectives,
// send/recv and offloaded buffers go through rtxrt::StepContext, as in
// emitted programs; started collectives complete eagerly and their tokens
// carry the result to rtx.wait, which preserves the program's meaning (only
// the overlap is lost).
//
//===----------------------------------------------------------------------===//

#include "Interpreter.h"
#include "Distribution.h"

#include "rtx/Target/KernelBinding.h"
#include "rtxrt/kernels/KernelRegistry.h"

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
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
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
  return {op.getName().str(),
          op.getInit(),
          op.getEffectiveSeed(),
          op.getType(),
          op->getAttrOfType<ShardingAttr>(RTXDialect::getShardingAttrName()),
          op->getAttrOfType<DictionaryAttr>(RTXDialect::getPartOfAttrName())};
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

  /// The step's context, for an op that reaches other ranks.
  rtxrt::StepContext &peers(Operation *op) {
    if (!env.hasPeers)
      throw Error("collectives need several ranks: run with --ranks N "
                  "matching the mesh");
    return *env.context;
  }

  /// What the collective `op` computes, as emitted programs pass it to
  /// StepContext (Emitter::collectiveOf).
  static rtxrt::Collective collectiveOf(Operation *op, CollectiveKind kind) {
    auto intAttr = [&](StringRef name) {
      return op->getAttrOfType<IntegerAttr>(name).getValue().getSExtValue();
    };
    auto reduceKind = [&] {
      return toRuntime(op->getAttrOfType<ReductionKindAttr>("kind").getValue());
    };
    using rtxrt::Collective;
    switch (kind) {
    case CollectiveKind::AllReduce:
      return Collective::allReduce(reduceKind());
    case CollectiveKind::AllGather:
      return Collective::allGather(intAttr("gather_dim"));
    case CollectiveKind::ReduceScatter:
      return Collective::reduceScatter(reduceKind(), intAttr("scatter_dim"));
    case CollectiveKind::AllToAll:
      return Collective::allToAll(intAttr("split_dim"), intAttr("concat_dim"));
    case CollectiveKind::BroadcastFrom:
      return Collective::broadcastFrom(intAttr("root"));
    case CollectiveKind::Permute:
      return Collective::permute(
          toVector(op->getAttrOfType<DenseI64ArrayAttr>("pairs").asArrayRef()));
    }
    llvm_unreachable("unknown collective");
  }

  /// Runs the collective `op` (sync or start form) on `input`. A start
  /// completes at once: the in-process world tells a deadlock from a busy
  /// rank only when each rank waits on one thread.
  Tensor collective(Operation *op, CollectiveKind kind, const Tensor &input) {
    std::string what = where(op);
    return peers(op).collective(what.c_str(), axesOf(op),
                                collectiveOf(op, kind), input);
  }

  int64_t peerOf(Operation *op) {
    return op->getAttrOfType<IntegerAttr>("peer").getValue().getSExtValue();
  }
  int64_t tagOf(Operation *op) {
    return op->getAttrOfType<IntegerAttr>("tag").getValue().getSExtValue();
  }
  rtxrt::StepContext::Pending sendStart(Operation *op, Value input) {
    std::string what = where(op);
    return peers(op).sendStart(what.c_str(), axesOf(op), peerOf(op), tagOf(op),
                               get(input));
  }
  /// Starts receiving a value of `type` (a tensor type).
  rtxrt::StepContext::Pending recvStart(Operation *op, Type valueType) {
    std::string what = where(op);
    auto type = cast<RankedTensorType>(valueType);
    return peers(op).recvStart(what.c_str(), axesOf(op), peerOf(op), tagOf(op),
                               shapeOf(type), toDType(type.getElementType()));
  }

  void dispatch(Operation *op) {
    if (auto kernelOp = dyn_cast<KernelOpInterface>(op))
      return runKernel(op, kernelOp.getKernelCall());
    if (auto c = dyn_cast<CollectiveOpInterface>(op)) {
      // An async start completes eagerly; its token carries the result.
      Tensor result =
          collective(op, c.getCollectiveKind(), get(op->getOperand(0)));
      if (c.isAsync())
        values[op->getResult(0)] = std::move(result);
      else
        set(op->getResult(0), std::move(result));
      return;
    }
    // The ops that are neither kernels nor collectives.
    llvm::TypeSwitch<Operation *>(op)
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
        .Case([&](MeshSliceOp m) {
          set(m, env.context->meshSlice(axesOf(m),
                                        static_cast<int64_t>(m.getDim()),
                                        get(m.getInput())));
        })
        .Case([&](SendOp s) {
          std::string what = where(s);
          peers(s).send(what.c_str(), axesOf(s), peerOf(s), tagOf(s),
                        get(s.getInput()));
        })
        .Case([&](SendStartOp s) {
          pending[s.getToken()] = sendStart(s, s.getInput());
        })
        .Case([&](RecvOp r) {
          rtxrt::StepContext::Pending received =
              recvStart(r, r.getResult().getType());
          set(r, env.context->wait(received));
        })
        .Case([&](RecvStartOp r) {
          pending[r.getToken()] = recvStart(
              r, cast<TokenType>(r.getToken().getType()).getValueType());
        })
        .Case([&](OffloadFetchStartOp f) {
          std::string what = where(f);
          pending[f.getToken()] = env.context->offloadFetch(
              what.c_str(), f.getBufferKey().str().c_str());
        })
        .Case([&](OffloadStoreOp s) {
          std::string what = where(s);
          env.context->offloadStore(
              what.c_str(), s.getBufferKey().str().c_str(), get(s.getValue()));
          values[s.getResult()] = Tensor(); // a reference: the value is there
        })
        .Case([&](WaitOp w) {
          // A started message or fetch completes here; a started
          // collective's token already holds its result.
          auto it = pending.find(w.getToken());
          Tensor value = it != pending.end() ? env.context->wait(it->second)
                                             : get(w.getToken());
          if (it != pending.end())
            pending.erase(it);
          if (Value result = w.getResult())
            set(result, value);
        })
        .Default([&](Operation *other) {
          throw Error("rtx-run does not support this op");
        });
  }

  /// Runs the op's kernel binding on the CPU kernels.
  void runKernel(Operation *op, const KernelCall &call) {
    const rtxrt::KernelEntry *&kernel = kernels[op];
    if (!kernel) {
      std::string error;
      if (!(kernel = resolveKernel(call, op->getNumResults(), error)))
        throw Error("the op " + error);
    }
    std::vector<rtxrt::KernelValue> args;
    args.reserve(call.args.size());
    for (const KernelArg &arg : call.args)
      args.push_back(evaluate(arg));
    // resolveKernel checked the arguments' kinds against the signature.
    setAll(op, kernel->invoke(args));
  }

  rtxrt::KernelValue evaluate(const KernelArg &arg) {
    using RankDependent = KernelArg::RankDependent;
    return std::visit(
        [&](const auto &v) -> rtxrt::KernelValue {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, KernelArg::TensorOperand>) {
            return optional(v.value);
          } else if constexpr (std::is_same_v<T, KernelArg::TensorList>) {
            std::vector<Tensor> tensors;
            for (Value value : v.values)
              tensors.push_back(get(value));
            return tensors;
          } else if constexpr (std::is_same_v<T, SmallVector<int64_t, 4>>) {
            return toVector(v);
          } else if constexpr (std::is_same_v<T, KernelArg::ElementType>) {
            return toDType(v.type);
          } else if constexpr (std::is_same_v<T, RankDependent>) {
            std::vector<std::string> axes(v.axes.begin(), v.axes.end());
            switch (v.kind) {
            case RankDependent::GroupIndexTimes:
              return env.mesh.indexInGroup(env.rank, axes) * v.factor;
            case RankDependent::GroupSizeTimes:
              return env.mesh.groupSize(axes) * v.factor;
            case RankDependent::BlockGlobalShape:
            case RankDependent::BlockOffsets: {
              LocalBlock block =
                  getLocalBlock(dyn_cast_or_null<ShardingAttr>(v.sharding),
                                toVector(v.shape), env.mesh, env.rank);
              return v.kind == RankDependent::BlockGlobalShape
                         ? block.globalShape
                         : block.offsets;
            }
            }
            llvm_unreachable("unknown rank-dependent argument");
          } else {
            return v;
          }
        },
        arg.value);
  }

  RankEnvironment &env;
  llvm::DenseMap<Value, Tensor> values;
  /// Started messages and fetches, by token, until their rtx.wait.
  llvm::DenseMap<Value, rtxrt::StepContext::Pending> pending;
  /// Each op's kernel, looked up once.
  llvm::DenseMap<Operation *, const rtxrt::KernelEntry *> kernels;
};
} // namespace

std::vector<Tensor> mlir::rtx::interpret(func::FuncOp function,
                                         const std::vector<Tensor> &args,
                                         RankEnvironment &env) {
  return Interpreter(env).run(function, args);
}
