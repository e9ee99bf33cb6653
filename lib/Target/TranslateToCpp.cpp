//===- TranslateToCpp.cpp - emit a C++ or CUDA training program -----------===//
//
// One statement per op: an op with a kernel binding (KernelOpInterface)
// becomes the call rtx-run's interpreter makes from the same binding, so an
// emitted C++ program computes what rtx-run computes (bit for bit on one
// rank). Collectives and send/recv, sync and started (`rtx.*_start` then
// `rtx.wait`), become StepContext calls over mesh axes; the program's
// arguments, results and mesh become a ProgramSpec for rtxrt::runProgram.
//
// One emitter, two devices: a CUDA program is the same program with every
// kernel call taken from rtxrt::gpu (rtxrt/device/Gpu.h: the same signatures on
// GPU tensors, cuBLAS and CUDA kernels) and the GPU runtime attached to its
// ProgramSpec, which keeps the arguments on the device across steps and
// gives the collectives NCCL process groups.
//
//===----------------------------------------------------------------------===//

#include "rtx/Target/Cpp.h"

#include "CppText.h"
#include "EmitProgramSpec.h"

#include "rtx/Analysis/CostModel.h"
#include "rtx/Analysis/MemoryPlan.h"
#include "rtx/Analysis/ProgramDescription.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"
#include "rtx/Target/KernelBinding.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include <algorithm>

using namespace mlir;
using namespace mlir::rtx;
using namespace mlir::rtx::cpp;

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
  /// The op and its location, as a string literal for error messages.
  static std::string where(Operation *op) {
    std::string s;
    llvm::raw_string_ostream stream(s);
    stream << op->getName() << " at " << op->getLoc();
    return quoted(s);
  }
  /// The mesh axes of a collective or mesh slice.
  static std::string axesOf(Operation *op) {
    return axes(op->getAttrOfType<ArrayAttr>("axes"));
  }
  int64_t intAttr(Operation *op, StringRef n) {
    return op->getAttrOfType<IntegerAttr>(n).getValue().getSExtValue();
  }
  void assign(Value result, const std::string &expression) {
    os << "  Tensor " << name(result) << " = " << expression << ";\n";
  }
  void assignAll(Operation *op, const std::string &expression) {
    std::string tuple = "r" + std::to_string(tuples++);
    os << "  std::vector<Tensor> " << tuple << " = " << expression << ";\n";
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      os << "  Tensor " << name(result) << " = " << tuple << "[" << i << "];\n";
    // The named results alone hold the buffers, so each can be released.
    os << "  " << tuple << ".clear();\n";
  }
  LogicalResult emitStep(func::FuncOp f, const ProgramDescription &program,
                         const std::string &stepName);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitKernelCall(Operation *op, const KernelCall &call);
  LogicalResult emitCollective(Operation *op, CollectiveOpInterface collective);
  std::string collectiveOf(Operation *op, CollectiveOpInterface collective);
  std::string pointToPoint(Operation *op);
  std::string argument(const KernelArg &arg);
  /// A tensor operand where the op that reads it runs: in a GPU program, a
  /// host value (offloaded state) is copied to the device for a device op,
  /// and a device value to the host for a host op (`onHost`).
  std::string placed(Value v) {
    bool host = hostValues.contains(v);
    if (cuda && onHost && !host)
      return "gpu::toHost(" + name(v) + ")";
    if (cuda && !onHost && host)
      return "gpu::toDevice(" + name(v) + ")";
    return name(v);
  }
  /// Whether every value `fetch` yields is read by host updates only.
  static bool readOnlyOnHost(OffloadFetchStartOp fetch) {
    for (Operation *wait : fetch.getToken().getUsers())
      for (Value result : wait->getResults())
        for (Operation *user : result.getUsers())
          if (!isa<AdamWUpdateOp, MultiAdamWUpdateOp, SGDUpdateOp>(user))
            return false;
    return true;
  }
  void useAxes(const std::string &axes) {
    if (std::find(collectiveAxes.begin(), collectiveAxes.end(), axes) ==
        collectiveAxes.end())
      collectiveAxes.push_back(axes);
  }

  ModuleOp module;
  func::FuncOp function;
  bool cuda;
  raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  int tuples = 0;
  llvm::DenseMap<Operation *, unsigned> inputIndex;
  /// GPU programs: the values that live on the host (fetched offloaded
  /// state and what host updates compute from it).
  llvm::DenseSet<Value> hostValues;
  bool onHost = false;
  std::vector<std::string> collectiveAxes;
  /// The rows of the program's op table (rtxrt::OpInfo, for its trace):
  /// name, location, FLOPs and bytes of each kernel call.
  std::vector<std::string> opInfos;
};
} // namespace

std::string Emitter::argument(const KernelArg &arg) {
  using RankDependent = KernelArg::RankDependent;
  return std::visit(
      [&](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, KernelArg::TensorOperand>) {
          return v.value ? placed(v.value) : opt(v.value);
        } else if constexpr (std::is_same_v<T, KernelArg::TensorList>) {
          std::string list = "{";
          for (auto [i, value] : llvm::enumerate(v.values))
            list += (i ? ", " : "") + placed(value);
          return list + "}";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return number(v);
        } else if constexpr (std::is_same_v<T, SmallVector<int64_t, 4>>) {
          return ints(v);
        } else if constexpr (std::is_same_v<T, KernelArg::ElementType>) {
          return dtype(RankedTensorType::get({}, v.type));
        } else if constexpr (std::is_same_v<T, RankDependent>) {
          std::string group = strings(v.axes);
          std::string block =
              "ctx.block(" +
              sharding(dyn_cast_or_null<ShardingAttr>(v.sharding)) + ", " +
              ints(v.shape) + ")";
          switch (v.kind) {
          case RankDependent::GroupIndexTimes:
            return "ctx.indexInGroup(" + group + ") * " +
                   std::to_string(v.factor);
          case RankDependent::GroupSizeTimes:
            return "ctx.groupSize(" + group + ") * " + std::to_string(v.factor);
          case RankDependent::BlockGlobalShape:
            return block + ".globalShape";
          case RankDependent::BlockOffsets:
            return block + ".offsets";
          }
          llvm_unreachable("unknown rank-dependent argument");
        } else {
          return enumerator(v);
        }
      },
      arg.value);
}

/// One kernel call, on the target device: `matmul(...)` becomes
/// `gpu::matmul(...)` in a CUDA program (rtxrt/device/Gpu.h declares the same
/// kernels for GPU tensors).
LogicalResult Emitter::emitKernelCall(Operation *op, const KernelCall &call) {
  std::string error;
  const rtxrt::KernelEntry *kernel =
      resolveKernel(call, op->getNumResults(), error);
  if (!kernel)
    return op->emitError() << "the op " << error;
  // In a GPU program, the update of offloaded state runs on the host, where
  // the state is (ZeRO-Offload's CPU optimizer step): an op that reads a
  // fetched buffer takes the host kernel, its other operands copied to the
  // host, and its results stay there.
  onHost = cuda && isa<AdamWUpdateOp, MultiAdamWUpdateOp, SGDUpdateOp>(op) &&
           llvm::any_of(op->getOperands(),
                        [&](Value v) { return hostValues.contains(v); });
  std::string expression = (cuda && !onHost ? "gpu::" : "") + call.kernel + "(";
  for (auto [i, arg] : llvm::enumerate(call.args))
    expression += (i ? ", " : "") + argument(arg);
  expression += ")";
  if (onHost)
    for (Value result : op->getResults())
      hostValues.insert(result);
  onHost = false;
  // The op's span in a trace: its FLOPs and bytes at the local shapes, from
  // the cost interface (0 for an op without one), and its kind of work.
  double flops = 0, bytes = 0;
  if (auto cost = dyn_cast<CostOpInterface>(op)) {
    flops = static_cast<double>(cost.getFlops());
    bytes = static_cast<double>(cost.getBytesAccessed());
  }
  std::string location;
  llvm::raw_string_ostream stream(location);
  stream << op->getLoc();
  size_t index = opInfos.size();
  opInfos.push_back("{" + quoted(op->getName().getStringRef()) + ", " +
                    quoted(location) + ", " + number(flops) + ", " +
                    number(bytes) + ", " + quoted(opWorkKind(op)) + "}");
  os << "  ctx.opBegin();\n";
  if (kernel->returnsList)
    assignAll(op, expression);
  else
    assign(op->getResult(0), expression);
  os << "  ctx.opEnd(rtxOpInfo[" << index << "]);\n";
  return success();
}

/// `Collective::allGather(1)`: what the op computes, for StepContext.
std::string Emitter::collectiveOf(Operation *op,
                                  CollectiveOpInterface collective) {
  auto kind = [&] {
    return enumerator(
        toRuntime(op->getAttrOfType<ReductionKindAttr>("kind").getValue()));
  };
  auto dim = [&](StringRef attr) { return std::to_string(intAttr(op, attr)); };
  switch (collective.getCollectiveKind()) {
  case CollectiveKind::AllReduce:
    return "Collective::allReduce(" + kind() + ")";
  case CollectiveKind::AllGather:
    return "Collective::allGather(" + dim("gather_dim") + ")";
  case CollectiveKind::ReduceScatter:
    return "Collective::reduceScatter(" + kind() + ", " + dim("scatter_dim") +
           ")";
  case CollectiveKind::AllToAll:
    return "Collective::allToAll(" + dim("split_dim") + ", " +
           dim("concat_dim") + ")";
  case CollectiveKind::BroadcastFrom:
    return "Collective::broadcastFrom(" + dim("root") + ")";
  case CollectiveKind::Permute:
    return "Collective::permute(" +
           ints(op->getAttrOfType<DenseI64ArrayAttr>("pairs").asArrayRef()) +
           ")";
  }
  llvm_unreachable("unknown collective");
}

LogicalResult Emitter::emitCollective(Operation *op,
                                      CollectiveOpInterface collective) {
  std::string group = axesOf(op);
  useAxes(group);
  std::string args = where(op) + ", " + group + ", " +
                     collectiveOf(op, collective) + ", " +
                     placed(op->getOperand(0)) + ")";
  if (collective.isAsync()) // the token is the pending collective
    os << "  StepContext::Pending " << name(op->getResult(0)) << " = ctx.start("
       << args << ";\n";
  else
    assign(op->getResult(0), "ctx.collective(" + args);
  return success();
}

/// rtx.send / rtx.recv and their start forms: `where, axes, peer, tag`.
std::string Emitter::pointToPoint(Operation *op) {
  std::string group = axesOf(op);
  useAxes(group);
  return where(op) + ", " + group + ", " + std::to_string(intAttr(op, "peer")) +
         ", " + std::to_string(intAttr(op, "tag"));
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (auto kernelOp = dyn_cast<KernelOpInterface>(op))
    return emitKernelCall(op, kernelOp.getKernelCall());
  if (auto collective = dyn_cast<CollectiveOpInterface>(op))
    return emitCollective(op, collective);
  // The ops that are neither kernels nor collectives.
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
           << shape(c.getType()) << ", " << dtype(c.getType()) << ", " << values
           << ");\n";
      })
      .Case([&](MeshSliceOp m) {
        assign(m, "ctx.meshSlice(" + axesOf(m) + ", " +
                      std::to_string(m.getDim()) + ", " + name(m.getInput()) +
                      ")");
      })
      .Case([&](SendOp s) {
        os << "  ctx.send(" << pointToPoint(s) << ", " << name(s.getInput())
           << ");\n";
      })
      .Case([&](SendStartOp s) {
        os << "  StepContext::Pending " << name(s.getToken())
           << " = ctx.sendStart(" << pointToPoint(s) << ", "
           << name(s.getInput()) << ");\n";
      })
      .Case([&](RecvOp r) {
        assign(r, "ctx.recv(" + pointToPoint(r) + ", " + shape(r.getType()) +
                      ", " + dtype(r.getType()) + ")");
      })
      .Case([&](RecvStartOp r) {
        Type value = cast<TokenType>(r.getToken().getType()).getValueType();
        os << "  StepContext::Pending " << name(r.getToken())
           << " = ctx.recvStart(" << pointToPoint(r) << ", " << shape(value)
           << ", " << dtype(value) << ");\n";
      })
      .Case([&](OffloadFetchStartOp f) {
        // A GPU program keeps the fetched buffer on the host when only
        // host updates read it; otherwise the wait copies it to the device.
        bool host = cuda && readOnlyOnHost(f);
        os << "  StepContext::Pending " << name(f.getToken())
           << " = ctx.offloadFetch(" << where(f) << ", "
           << quoted(f.getBufferKey())
           << (cuda ? (host ? ", true" : ", false") : "") << ");\n";
        if (host)
          for (Operation *user : f.getToken().getUsers())
            for (Value result : user->getResults())
              hostValues.insert(result);
      })
      .Case([&](OffloadStoreOp s) {
        // The step returns a reference; the value is in the tier.
        os << "  ctx.offloadStore(" << where(s) << ", "
           << quoted(s.getBufferKey()) << ", " << name(s.getValue()) << ");\n";
        assign(s.getResult(), "Tensor()");
      })
      .Case([&](WaitOp w) {
        if (w.getResult())
          os << "  Tensor " << name(w.getResult()) << " = ";
        else
          os << "  ";
        os << "ctx.wait(" << name(w.getToken()) << ");\n";
        // The pending operation holds its result too: let it go, so that
        // the result dies with its last use (rtx-plan-memory's liveness).
        os << "  " << name(w.getToken()) << " = StepContext::Pending();\n";
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
  SmallVector<func::FuncOp> functions = getStepFunctions(module, function);
  FailureOr<std::vector<ProgramDescription>> described =
      describeStepStages(module, functions, *mesh);
  if (failed(described))
    return failure();
  std::vector<ProgramDescription> programs = std::move(*described);
  bool pipelined = functions.size() > 1 ||
                   function->hasAttr(RTXDialect::getPipelineRankAttrName());

  os << "// Generated by rtx-translate --emit=" << (cuda ? "cuda" : "cpp")
     << " from @" << function.getSymName()
     << (pipelined ? " and the other pipeline stages" : "")
     << "; do not edit.\n"
     << (cuda ? "#include \"rtxrt/device/Gpu.h\"\n" : "")
     << "#include \"rtxrt/program/Program.h\"\n\n#include <cmath>\n\n"
     << "using namespace rtxrt;\n\n"
     << "static Tensor constantTensor(Shape shape, DType dtype,\n"
     << "                             std::vector<double> values) {\n"
     << "  Tensor t(shape, dtype);\n"
     << "  for (int64_t i = 0; i < t.numel(); ++i)\n"
     << "    t.setFromDouble(i, values.size() == 1 ? values[0] : values[i]);\n"
     << (cuda ? "  return gpu::toDevice(t);\n}\n\n" : "  return t;\n}\n\n")
     << "// Each kernel call's op, for traces (defined after the step).\n"
     << "extern const OpInfo rtxOpInfo[];\n\n";
  std::vector<std::string> stepNames;
  for (auto [rank, f] : llvm::enumerate(functions)) {
    stepNames.push_back(
        pipelined ? "step_" + (f->getAttrOfType<StringAttr>(
                                    RTXDialect::getPipelineAxisAttrName())
                                   .getValue()
                                   .str() +
                               std::to_string(rank))
                  : std::string("step"));
    if (failed(emitStep(f, programs[rank], stepNames.back())))
      return failure();
  }
  os << "const OpInfo rtxOpInfo[] = {\n";
  for (const std::string &row : opInfos)
    os << "    " << row << ",\n";
  if (opInfos.empty()) // an array needs one element
    os << "    {\"\", \"\", 0, 0, \"\"},\n";
  os << "};\n\n";
  if (pipelined)
    emitPipelinedMain(programs, stepNames, collectiveAxes, cuda, os);
  else
    emitProgramMain(programs.front(), collectiveAxes, cuda, os);
  return success();
}

LogicalResult Emitter::emitStep(func::FuncOp f,
                                const ProgramDescription &program,
                                const std::string &stepName) {
  names.clear();
  inputIndex.clear();
  hostValues.clear();
  tuples = 0;
  Block &body = f.getBody().front();
  os << "static std::vector<Tensor> " << stepName << "(StepContext &ctx,\n"
     << "    const std::vector<Tensor> &args) {\n";
  for (BlockArgument arg : body.getArguments())
    os << "  const Tensor &" << name(arg) << " = args[" << arg.getArgNumber()
       << "];\n";
  // Named inputs follow the function's arguments in `args`, in the
  // description's order.
  for (auto [i, argument] : llvm::enumerate(program.arguments))
    if (!argument.argNumber)
      inputIndex[argument.value.getDefiningOp()] = i;
  // Each computed tensor is released after its last use, as PyTorch frees
  // a tensor when its last reference goes: the step's peak memory is then
  // what is live at once (what rtx-plan-memory counts, from the same
  // stepLiveness), not everything it ever computed.
  StepLiveness liveness = stepLiveness(body);
  // A pipeline's actions (rtx-pipeline's rtx.action): each a trace span.
  StringAttr action;
  for (Operation &op : body.without_terminator()) {
    auto name = op.getAttrOfType<StringAttr>(RTXDialect::getActionAttrName());
    if (name && name != action)
      os << "  ctx.action(" << quoted(name.getValue()) << ");\n";
    action = name ? name : action;
    if (failed(emitOp(&op)))
      return failure();
    if (auto it = liveness.releasedAfter.find(&op);
        it != liveness.releasedAfter.end())
      for (Value released : it->second)
        os << "  " << this->name(released) << " = Tensor();\n";
  }
  if (action)
    os << "  ctx.action(nullptr);\n";
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  os << "  return {";
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    os << (i ? ", " : "") << name(v);
  os << "};\n}\n\n";
  return success();
}

LogicalResult mlir::rtx::translateToProgram(ModuleOp module,
                                            func::FuncOp function,
                                            ProgramTarget target,
                                            raw_ostream &os) {
  return Emitter(module, function, target, os).emit();
}
