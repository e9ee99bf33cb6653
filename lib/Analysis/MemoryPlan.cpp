//===- MemoryPlan.cpp - a step's peak memory per rank, by kind ------------===//

#include "rtx/Analysis/MemoryPlan.h"

#include "rtx/Analysis/ActivationMemory.h"
#include "rtx/Dialect/RTX/IR/RTXDialect.h"

#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::rtx;

StepLiveness mlir::rtx::stepLiveness(Block &body) {
  StepLiveness liveness;
  for (Operation &op : body) {
    liveness.position[&op] = liveness.ops.size();
    liveness.ops.push_back(&op);
  }
  const auto &position = liveness.position;
  llvm::DenseMap<Value, Operation *> last;
  auto later = [&](Value v, Operation *op) {
    Operation *&at = last[v];
    if (!at || position.lookup(op) > position.lookup(at))
      at = op;
  };
  for (Operation &op : body) {
    for (Value operand : op.getOperands())
      later(operand, &op);
    // A started op reads its operands until its token is waited.
    for (Value token : op.getResults())
      if (isa<TokenType>(token.getType()))
        for (Operation *wait : token.getUsers())
          for (Value operand : op.getOperands())
            later(operand, body.findAncestorOpInBlock(*wait));
  }
  Operation *terminator = body.getTerminator();
  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp, InputOp>(op))
      continue;
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue;
      // A started op whose token nobody waits keeps its operands (the
      // verifier of the step's end reports it): nothing else needs care.
      Operation *at = last.lookup(result);
      if (at == terminator)
        continue; // returned: the caller holds it
      if (!at)
        at = &op; // unused: released at once
      liveness.releaseOp[result] = at;
      liveness.releasedAfter[at].push_back(result);
    }
  }
  return liveness;
}

const char *mlir::rtx::memoryKindName(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Parameters:
    return "parameters";
  case MemoryKind::Gradients:
    return "gradients";
  case MemoryKind::OptimizerState:
    return "optimizer_state";
  case MemoryKind::Activations:
    return "activations";
  case MemoryKind::Communication:
    return "communication";
  case MemoryKind::Temporaries:
    return "temporaries";
  }
  return "?";
}

int64_t mlir::rtx::allocatedBytes(int64_t bytes) {
  // runtime/lib/Tensor.cpp's allocateBuffer: kAlignment 64, and from
  // kHugeThreshold (32 MiB) whole 2 MiB pages.
  int64_t granule = bytes >= (int64_t{32} << 20) ? int64_t{2} << 20 : 64;
  return (std::max<int64_t>(bytes, 1) + granule - 1) / granule * granule;
}

namespace {
MemoryKind kindOfRole(ProgramArgument::Role role) {
  switch (role) {
  case ProgramArgument::Role::Parameter:
    return MemoryKind::Parameters;
  case ProgramArgument::Role::OptimizerState:
    return MemoryKind::OptimizerState;
  case ProgramArgument::Role::Data:
    return MemoryKind::Activations;
  }
  return MemoryKind::Temporaries;
}

bool isScalar(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return !type || type.getNumElements() <= 1;
}

/// Parameter gradients: what the updates take as `grad`, and what those are
/// made of through ops that move or sum gradients without computing them
/// from activations (flattening, reduction across ranks, clipping's scale,
/// the sum of a tied weight's two gradients).
llvm::DenseSet<Value> gradientsOf(Block &body,
                                  const llvm::DenseSet<Operation *> &forward) {
  llvm::DenseSet<Value> grads;
  SmallVector<Value> work;
  for (Operation &op : body) {
    if (auto adam = dyn_cast<AdamWUpdateOp>(op))
      work.push_back(adam.getGrad());
    else if (auto multi = dyn_cast<MultiAdamWUpdateOp>(op))
      work.append(multi.getGrads().begin(), multi.getGrads().end());
    else if (auto sgd = dyn_cast<SGDUpdateOp>(op))
      work.push_back(sgd.getGrad());
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!grads.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || forward.contains(def))
      continue;
    SmallVector<Value> sources;
    if (auto wait = dyn_cast<WaitOp>(def)) {
      if (Operation *start = wait->getOperand(0).getDefiningOp())
        llvm::append_range(sources, start->getOperands());
    } else if (isa<ReshapeOp, ConcatOp, ConvertOp, AddOp, MulOp, MeshSliceOp,
                   PadOp, SliceOp, CollectiveOpInterface>(def)) {
      llvm::append_range(sources, def->getOperands());
    }
    for (Value source : sources)
      if (!isScalar(source))
        work.push_back(source);
  }
  return grads;
}
/// The group size of a collective over its `axes` of `mesh` (1 without).
int64_t groupSizeOf(Operation *op, MeshOp mesh) {
  int64_t n = 1;
  if (auto axes = op->getAttrOfType<ArrayAttr>("axes"); axes && mesh)
    for (Attribute axis : axes)
      n *= mesh.getAxisSize(cast<StringAttr>(axis).getValue()).value_or(1);
  return n;
}

/// Bytes a host collective allocates while it runs, besides its result, as
/// the runtime computes it (runtime/lib/comm/Communicator.cpp): a sum or
/// a mean in f32 runs on Gloo's ring (an all-reduce on its result; a
/// reduce-scatter of contiguous pieces on a copy of its input); an
/// all-gather of contiguous pieces writes its result directly; anything
/// else exchanges whole inputs (Gloo gathers n of them into one block and
/// copies out n pieces: 2n inputs at once) and combines them.
int64_t workspaceBytes(CollectiveOpInterface collective, MeshOp mesh) {
  Operation *op = collective;
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t n = groupSizeOf(op, mesh);
  if (n == 1)
    return 0;
  int64_t bytes = allocatedBytes(tensorBytes(input));
  auto kindAttr = op->getAttrOfType<ReductionKindAttr>("kind");
  bool ringSum = kindAttr && input.getElementType().isF32() &&
                 (kindAttr.getValue() == ReductionKind::Sum ||
                  kindAttr.getValue() == ReductionKind::Mean);
  auto contiguous = [&](StringRef dimName) {
    int64_t dim = op->getAttrOfType<IntegerAttr>(dimName).getInt();
    return llvm::all_of(input.getShape().take_front(dim),
                        [](int64_t d) { return d == 1; });
  };
  int64_t exchange = 2 * n * bytes;
  switch (collective.getCollectiveKind()) {
  case CollectiveKind::AllReduce:
    return ringSum ? 0 : exchange;
  case CollectiveKind::ReduceScatter:
    return ringSum && contiguous("scatter_dim") ? bytes : exchange;
  case CollectiveKind::AllGather:
    return contiguous("gather_dim") ? 0 : exchange;
  default:
    return exchange;
  }
}
} // namespace

MemoryPlan mlir::rtx::planMemory(const ProgramDescription &program) {
  MemoryPlan plan;
  func::FuncOp function = program.function;
  if (function.isExternal())
    return plan;
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // What the caller holds the whole step: the arguments, by role.
  std::array<int64_t, kMemoryKinds> held{};
  llvm::DenseMap<StringRef, ProgramArgument::Role> roleOfState;
  for (const ProgramArgument &argument : program.arguments) {
    // An offloaded buffer is a reference: its bytes are in the tier.
    int64_t bytes = argument.offload.empty()
                        ? allocatedBytes(tensorBytes(argument.type))
                        : 0;
    held[static_cast<int>(kindOfRole(argument.role))] += bytes;
    plan.argumentBytes += bytes;
    roleOfState[argument.stateKey] = argument.role;
    for (const ProgramArgument &member : argument.members)
      roleOfState[member.stateKey] = member.role;
  }

  llvm::DenseSet<Operation *> forward = forwardOps(program);
  llvm::DenseSet<Value> gradients = gradientsOf(body, forward);

  // Each buffer: the value that allocated it; views share their source's.
  auto rootOf = [](Value v) {
    while (auto view = dyn_cast_or_null<ViewLikeOpInterface>(v.getDefiningOp()))
      v = view.getViewSource();
    return v;
  };
  // The kind of the next step's state a returned value becomes.
  llvm::DenseMap<Value, MemoryKind> returnedKind;
  for (auto [i, result] : llvm::enumerate(program.results)) {
    StringRef key = result.members.empty() ? StringRef(result.stateKey)
                                           : result.members.front().stateKey;
    if (auto it = roleOfState.find(key);
        !key.empty() && it != roleOfState.end())
      returnedKind[rootOf(ret.getOperand(i))] = kindOfRole(it->second);
  }
  auto kindOf = [&](Value root) {
    if (auto it = returnedKind.find(root); it != returnedKind.end())
      return it->second;
    Operation *def = root.getDefiningOp();
    if (auto wait = dyn_cast<WaitOp>(def))
      if (auto fetch = wait.getToken().getDefiningOp<OffloadFetchStartOp>())
        if (const ProgramArgument *buffer = program.find(fetch.getBuffer()))
          return kindOfRole(buffer->role);
    if (isa<AdamWUpdateOp, SGDUpdateOp>(def))
      return cast<OpResult>(root).getResultNumber() == 0
                 ? MemoryKind::Parameters
                 : MemoryKind::OptimizerState;
    if (auto multi = dyn_cast<MultiAdamWUpdateOp>(def)) // rtx-fuse-adamw's
      return cast<OpResult>(root).getResultNumber() < multi.getParams().size()
                 ? MemoryKind::Parameters
                 : MemoryKind::OptimizerState;
    if (gradients.contains(root))
      return MemoryKind::Gradients;
    if (isa<CollectiveOpInterface, WaitOp, RecvOp>(def))
      return MemoryKind::Communication;
    if (forward.contains(def))
      return MemoryKind::Activations;
    return MemoryKind::Temporaries;
  };

  StepLiveness liveness = stepLiveness(body);
  const SmallVector<Operation *> &ops = liveness.ops;
  const auto &position = liveness.position;
  int64_t end = ops.size();
  // Each computed buffer: when it is allocated, when its last alias goes.
  struct Buffer {
    int64_t bytes = 0, first = 0, last = 0;
    MemoryKind kind;
  };
  llvm::MapVector<Value, Buffer> buffers;
  for (Operation *op : ops)
    for (Value result : op->getResults()) {
      if (!isa<RankedTensorType>(result.getType()) ||
          program.find(result) ||  // an rtx.input: held by the caller
          isa<OffloadStoreOp>(op)) // a reference to the tier
        continue;
      Value root = rootOf(result);
      if (root.getDefiningOp() == nullptr || program.find(root))
        continue; // a view of an argument
      Operation *release = liveness.releaseOp.lookup(result);
      int64_t last = release ? position.lookup(release) : end;
      if (root == result) {
        // A started op's result is allocated when it runs, after its
        // start: counted from the start.
        Operation *from = op;
        if (auto wait = dyn_cast<WaitOp>(op))
          if (Operation *start = wait->getOperand(0).getDefiningOp())
            from = body.findAncestorOpInBlock(*start);
        buffers[root] = {allocatedBytes(tensorBytes(root.getType())),
                         position.lookup(from), last, kindOf(root)};
      } else if (auto it = buffers.find(root); it != buffers.end()) {
        it->second.last = std::max(it->second.last, last);
      }
    }
  std::vector<std::array<int64_t, kMemoryKinds>> delta(end + 2);
  auto hold = [&](MemoryKind kind, int64_t bytes, int64_t first, int64_t last) {
    delta[first][static_cast<int>(kind)] += bytes;
    delta[last + 1][static_cast<int>(kind)] -= bytes;
  };
  for (auto &[root, buffer] : buffers)
    hold(buffer.kind, buffer.bytes, buffer.first, buffer.last);
  // A collective's workspace, while it runs: a started one's until its wait.
  for (Operation *op : ops)
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      int64_t last = position.lookup(op);
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          last = std::max(last,
                          position.lookup(body.findAncestorOpInBlock(*user)));
      hold(MemoryKind::Communication, workspaceBytes(collective, program.mesh),
           position.lookup(op),
           collective.isAsync() ? last : position.lookup(op));
    } else if (isa<SendOp, SendStartOp>(op)) {
      // A send holds a copy of its tensor until it completes: at the wait
      // of a started one, by the end of the step for an eager one.
      int64_t last = end - 1;
      if (auto start = dyn_cast<SendStartOp>(op))
        for (Operation *user : start->getResult(0).getUsers())
          last = position.lookup(body.findAncestorOpInBlock(*user));
      hold(MemoryKind::Communication,
           allocatedBytes(tensorBytes(op->getOperand(0).getType())),
           position.lookup(op), last);
    }
  std::array<int64_t, kMemoryKinds> live = held;
  auto total = [](const std::array<int64_t, kMemoryKinds> &a) {
    int64_t sum = 0;
    for (int64_t b : a)
      sum += b;
    return sum;
  };
  plan.peakBytes = total(held);
  plan.peakByKind = held;
  for (int64_t i = 0; i < end; ++i) {
    for (int64_t k = 0; k < kMemoryKinds; ++k)
      live[k] += delta[i][k];
    if (int64_t now = total(live); now > plan.peakBytes) {
      plan.peakBytes = now;
      plan.peakByKind = live;
      plan.peakOp = ops[i];
    }
  }
  return plan;
}

int64_t mlir::rtx::offloadSlots(Block &body) {
  StepLiveness liveness = stepLiveness(body);
  int64_t end = liveness.ops.size();
  std::vector<int64_t> delta(end + 2, 0);
  bool any = false;
  for (Operation *op : liveness.ops) {
    auto fetch = dyn_cast<OffloadFetchStartOp>(op);
    if (!fetch)
      continue;
    any = true;
    // From the start of the read to the release of the value it yields.
    int64_t first = liveness.position.lookup(op), last = first;
    for (Operation *user : fetch.getToken().getUsers()) {
      Operation *wait = body.findAncestorOpInBlock(*user);
      last = std::max(last, liveness.position.lookup(wait));
      for (Value value : wait->getResults()) {
        Operation *release = liveness.releaseOp.lookup(value);
        last =
            std::max(last, release ? liveness.position.lookup(release) : end);
      }
    }
    ++delta[first];
    --delta[last + 1];
  }
  if (!any)
    return 0;
  int64_t live = 0, most = 0;
  for (int64_t i = 0; i <= end; ++i)
    most = std::max(most, live += delta[i]);
  // Two writes in flight besides: one finishing while the next is copied.
  return most + 2;
}

std::string mlir::rtx::formatMemoryPlan(const MemoryPlan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto mib = [](int64_t bytes) { return double(bytes) / (1 << 20); };
  os << llvm::format("%-16s %14s %10s %7s\n", "kind", "bytes", "MiB", "share");
  for (int64_t k = 0; k < kMemoryKinds; ++k) {
    int64_t bytes = plan.peakByKind[k];
    os << llvm::format("%-16s %14lld %10.2f %6.1f%%\n",
                       memoryKindName(static_cast<MemoryKind>(k)),
                       static_cast<long long>(bytes), mib(bytes),
                       plan.peakBytes ? 100.0 * bytes / plan.peakBytes : 0.0);
  }
  os << llvm::format("%-16s %14lld %10.2f\n", "peak",
                     static_cast<long long>(plan.peakBytes),
                     mib(plan.peakBytes));
  return text;
}
