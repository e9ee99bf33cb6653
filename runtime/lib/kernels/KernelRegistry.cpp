//===- KernelRegistry.cpp - the CPU kernels by name -----------------------===//
//
// The registry is KernelApi.def expanded into one entry per kernel: the
// parameter kinds come from the C++ signature (ParamTraits below), so the
// table cannot disagree with the declarations.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/kernels/KernelRegistry.h"
#include "rtxrt/kernels/Kernels.h"

#include <string>
#include <tuple>
#include <utility>

using namespace rtxrt;

namespace {

/// The KernelValue alternative a parameter type is passed as.
template <typename T> struct ParamTraits;
#define RTXRT_PARAM(Type, Stored, Kind)                                        \
  template <> struct ParamTraits<Type> {                                       \
    using stored = Stored;                                                     \
    static constexpr KernelParamKind kind = KernelParamKind::Kind;             \
  };
RTXRT_PARAM(const Tensor &, Tensor, Tensor)
RTXRT_PARAM(const std::vector<Tensor> &, std::vector<Tensor>, TensorList)
RTXRT_PARAM(bool, bool, Bool)
RTXRT_PARAM(int64_t, int64_t, Int)
RTXRT_PARAM(double, double, Double)
RTXRT_PARAM(const std::vector<int64_t> &, std::vector<int64_t>, Ints)
RTXRT_PARAM(DType, DType, DType)
RTXRT_PARAM(UnaryKind, UnaryKind, UnaryKind)
RTXRT_PARAM(BinaryKind, BinaryKind, BinaryKind)
RTXRT_PARAM(CompareKind, CompareKind, CompareKind)
RTXRT_PARAM(ReduceKind, ReduceKind, ReduceKind)
RTXRT_PARAM(UnaryFn, UnaryFn, UnaryFn)
RTXRT_PARAM(GemmEpilogue, GemmEpilogue, GemmEpilogue)
#undef RTXRT_PARAM

// The variant's alternatives and KernelParamKind agree.
template <KernelParamKind kind, typename T> constexpr bool holdsAt() {
  return std::is_same_v<
      std::variant_alternative_t<static_cast<size_t>(kind), KernelValue>, T>;
}
static_assert(holdsAt<KernelParamKind::Tensor, Tensor>() &&
              holdsAt<KernelParamKind::TensorList, std::vector<Tensor>>() &&
              holdsAt<KernelParamKind::Bool, bool>() &&
              holdsAt<KernelParamKind::Int, int64_t>() &&
              holdsAt<KernelParamKind::Double, double>() &&
              holdsAt<KernelParamKind::Ints, std::vector<int64_t>>() &&
              holdsAt<KernelParamKind::DType, DType>() &&
              holdsAt<KernelParamKind::UnaryKind, UnaryKind>() &&
              holdsAt<KernelParamKind::BinaryKind, BinaryKind>() &&
              holdsAt<KernelParamKind::CompareKind, CompareKind>() &&
              holdsAt<KernelParamKind::ReduceKind, ReduceKind>() &&
              holdsAt<KernelParamKind::UnaryFn, UnaryFn>() &&
              holdsAt<KernelParamKind::GemmEpilogue, GemmEpilogue>());

std::vector<Tensor> asList(Tensor t) { return {std::move(t)}; }
std::vector<Tensor> asList(std::vector<Tensor> ts) { return ts; }

template <typename F> struct Signature;
template <typename R, typename... A> struct Signature<R (*)(A...)> {
  static std::vector<KernelParamKind> params() {
    return {ParamTraits<A>::kind...};
  }
  static constexpr bool returnsList = std::is_same_v<R, std::vector<Tensor>>;
  template <R (*F)(A...), size_t... I>
  static std::vector<Tensor> call(const std::vector<KernelValue> &args,
                                  std::index_sequence<I...>) {
    return asList(F(std::get<typename ParamTraits<A>::stored>(args[I])...));
  }
  template <R (*F)(A...)>
  static std::vector<Tensor> invoke(const std::vector<KernelValue> &args) {
    return call<F>(args, std::index_sequence_for<A...>{});
  }
};

template <typename F, F fn> KernelEntry entry(const char *name) {
  using S = Signature<F>;
  return {name, S::params(), S::returnsList, &S::template invoke<fn>};
}

} // namespace

const char *rtxrt::paramKindName(KernelParamKind kind) {
  static const char *const names[] = {
      "tensor",     "tensor list", "bool",        "int",        "double",
      "ints",       "DType",       "UnaryKind",   "BinaryKind", "CompareKind",
      "ReduceKind", "UnaryFn",     "GemmEpilogue"};
  return names[static_cast<int>(kind)];
}

const std::vector<KernelEntry> &rtxrt::kernelEntries() {
  // The signature selects the registered overload (embedding has a helper).
#define RTX_KERNEL(Result, name, parameters)                                   \
  entry<Result(*) parameters, &rtxrt::name>(#name),
  static const std::vector<KernelEntry> entries = {
#include "rtxrt/kernels/KernelApi.def"
  };
  return entries;
}

const KernelEntry *rtxrt::findKernel(std::string_view name) {
  for (const KernelEntry &e : kernelEntries())
    if (name == e.name)
      return &e;
  return nullptr;
}
