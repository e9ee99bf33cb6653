//===- RTXKernelCall.h - an op's call of its runtime kernel -----*- C++ -*-===//
//
// What KernelOpInterface returns: the runtime kernel an op runs (a name of
// runtime/include/rtxrt/kernels/KernelApi.def) and how the op's operands and
// attributes become its arguments, in order. Both rtx-run's interpreter and
// the C++/CUDA emitter work from this one description: the interpreter
// evaluates the arguments and calls the kernel through rtxrt's registry, the
// emitter prints them as a C++ call. Arguments that depend on the rank (a
// vocabulary shard's offset, a dropout mask's place in the global tensor)
// are symbolic here; each consumer resolves them its own way (the mesh of
// rtx-run's simulated rank, or the emitted program's StepContext).
//
//===----------------------------------------------------------------------===//

#ifndef RTX_DIALECT_RTX_IR_RTXKERNELCALL_H
#define RTX_DIALECT_RTX_IR_RTXKERNELCALL_H

#include "rtxrt/core/KernelEnums.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <variant>

namespace mlir {
namespace rtx {
enum class ReductionKind : uint32_t;
enum class ComparePredicate : uint32_t;
enum class UnaryFn : uint32_t;
enum class GemmEpilogue : uint32_t;
enum class InitKind : uint32_t;

/// One argument of a kernel call.
struct KernelArg {
  /// A value of the rank's mesh position, resolved by the consumer.
  struct RankDependent {
    enum Kind {
      /// indexInGroup(axes) * factor: where this rank's shard starts.
      GroupIndexTimes,
      /// groupSize(axes) * factor: the whole extent the shards make up.
      GroupSizeTimes,
      /// The global shape of the tensor of local `shape` under `sharding`.
      BlockGlobalShape,
      /// That tensor's offsets in the global one.
      BlockOffsets,
    } kind;
    llvm::SmallVector<std::string, 2> axes;
    int64_t factor = 1;
    /// For the Block* kinds: the sharding (null: replicated) and local shape.
    Attribute sharding;
    llvm::SmallVector<int64_t, 4> shape;
  };
  /// A tensor operand (a null Value is an undefined Tensor: "none").
  struct TensorOperand {
    Value value;
  };
  struct TensorList {
    llvm::SmallVector<Value, 4> values;
  };
  /// An element type, passed as a runtime DType.
  struct ElementType {
    Type type;
  };
  using Storage =
      std::variant<TensorOperand, TensorList, bool, int64_t, double,
                   llvm::SmallVector<int64_t, 4>, ElementType, rtxrt::UnaryKind,
                   rtxrt::BinaryKind, rtxrt::CompareKind, rtxrt::ReduceKind,
                   rtxrt::UnaryFn, rtxrt::GemmEpilogue, RankDependent>;
  Storage value;
};

/// A kernel call: `kernel(args...)`, whose results are the op's results in
/// order.
struct KernelCall {
  explicit KernelCall(llvm::StringRef kernel) : kernel(kernel.str()) {}

  KernelCall &tensor(Value v) { return add(KernelArg::TensorOperand{v}); }
  KernelCall &tensors(ValueRange vs) {
    return add(KernelArg::TensorList{{vs.begin(), vs.end()}});
  }
  KernelCall &flag(bool b) { return add(b); }
  KernelCall &integer(int64_t i) { return add(i); }
  KernelCall &real(double d) { return add(d); }
  KernelCall &real(const llvm::APFloat &f) { return add(f.convertToDouble()); }
  KernelCall &ints(llvm::ArrayRef<int64_t> values) {
    return add(llvm::SmallVector<int64_t, 4>(values.begin(), values.end()));
  }
  /// The element type of `type` (a tensor type or an element type).
  KernelCall &dtype(Type type);
  template <typename Enum> KernelCall &enumerator(Enum e) { return add(e); }
  /// `hasIgnoreIndex, ignoreIndex` of the loss kernels.
  KernelCall &ignoreIndex(std::optional<uint64_t> ignore) {
    flag(ignore.has_value());
    return integer(ignore ? static_cast<int64_t>(*ignore) : 0);
  }
  /// `offset, vocab` of a kernel on this rank's shard of `rows` vocabulary
  /// entries, split over `axes`.
  KernelCall &vocabShard(ArrayAttr axes, int64_t rows);
  /// `globalShape, globalOffsets` of the tensor of local `type` with the
  /// sharding `sharding` (null: the whole tensor).
  KernelCall &localBlock(Attribute sharding, Type type);

  std::string kernel;
  llvm::SmallVector<KernelArg, 6> args;

private:
  KernelCall &add(KernelArg::Storage s) {
    args.push_back(KernelArg{std::move(s)});
    return *this;
  }
};

/// The dialect's enums as the runtime's, mapped once (RTXKernels.cpp checks
/// by static_assert that every enumerator has its namesake's value).
rtxrt::ReduceKind toRuntime(ReductionKind kind);
rtxrt::CompareKind toRuntime(ComparePredicate predicate);
rtxrt::UnaryFn toRuntime(UnaryFn fn);
rtxrt::GemmEpilogue toRuntime(GemmEpilogue epilogue);
rtxrt::InitKind toRuntime(InitKind kind);

} // namespace rtx
} // namespace mlir

#endif // RTX_DIALECT_RTX_IR_RTXKERNELCALL_H
