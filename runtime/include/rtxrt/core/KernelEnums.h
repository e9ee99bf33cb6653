//===- KernelEnums.h - the enums of the kernel API --------------*- C++ -*-===//
//
// The enum parameters of the kernels (rtxrt/kernels/KernelApi.def), with their
// enumerator names. Header-only and free of other runtime headers, so the
// compiler's side (the ops' kernel bindings) can name them: the ODS enums of
// the rtx dialect are mapped to these in one place,
// lib/Dialect/RTX/IR/RTXKernels.cpp, checked there by static_asserts.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELENUMS_H
#define RTXRT_KERNELENUMS_H

namespace rtxrt {

#define RTXRT_UNARY_KINDS(X)                                                   \
  X(Neg) X(Exp) X(Log) X(Sqrt) X(Rsqrt) X(Tanh) X(Sigmoid) X(Relu) X(Silu)     \
      X(Gelu) X(GeluTanh)
#define RTXRT_BINARY_KINDS(X) X(Add) X(Sub) X(Mul) X(Div) X(Maximum) X(Minimum)
#define RTXRT_COMPARE_KINDS(X) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE)
#define RTXRT_REDUCE_KINDS(X) X(Sum) X(Mean) X(Max) X(Min)
#define RTXRT_INIT_KINDS(X) X(Zeros) X(Ones) X(Constant) X(Normal) X(Uniform)
/// The functions of rtx.unary_grad, in the order of the ODS enum RTX_UnaryFn.
#define RTXRT_UNARY_FNS(X)                                                     \
  X(Exp) X(Log) X(Sqrt) X(Rsqrt) X(Tanh) X(Sigmoid) X(Relu) X(Silu) X(Gelu)    \
      X(GeluTanh)
/// The epilogues of rtx.gemm_epilogue, in the order of the ODS enum
/// RTX_GemmEpilogue (see the op for their meaning).
#define RTXRT_GEMM_EPILOGUES(X)                                                \
  X(BiasGelu)                                                                  \
  X(BiasGeluTanh) X(BiasGeluAux) X(BiasGeluTanhAux) X(BiasGrad) X(DGelu)       \
      X(DGeluTanh)

#define RTXRT_ENUMERATOR(name) name,
#define RTXRT_ENUMERATOR_NAME(name) #name,
#define RTXRT_DEFINE_ENUM(Enum, LIST)                                          \
  enum class Enum { LIST(RTXRT_ENUMERATOR) };                                  \
  /** The enumerator's name, as C++ spells it (`UnaryKind::Gelu`: "Gelu"). */ \
  inline const char *enumeratorName(Enum value) {                              \
    static const char *const names[] = {LIST(RTXRT_ENUMERATOR_NAME)};          \
    return names[static_cast<int>(value)];                                     \
  }                                                                            \
  inline constexpr const char *enumName(Enum) { return #Enum; }

RTXRT_DEFINE_ENUM(UnaryKind, RTXRT_UNARY_KINDS)
RTXRT_DEFINE_ENUM(BinaryKind, RTXRT_BINARY_KINDS)
RTXRT_DEFINE_ENUM(CompareKind, RTXRT_COMPARE_KINDS)
RTXRT_DEFINE_ENUM(ReduceKind, RTXRT_REDUCE_KINDS)
RTXRT_DEFINE_ENUM(InitKind, RTXRT_INIT_KINDS)
RTXRT_DEFINE_ENUM(UnaryFn, RTXRT_UNARY_FNS)
RTXRT_DEFINE_ENUM(GemmEpilogue, RTXRT_GEMM_EPILOGUES)

/// The properties of an epilogue, shared by the op's verifier and the
/// kernels. Bias* epilogues take a bias [N] and apply a GELU after it.
inline bool epilogueAddsBias(GemmEpilogue e) {
  return e == GemmEpilogue::BiasGelu || e == GemmEpilogue::BiasGeluTanh ||
         e == GemmEpilogue::BiasGeluAux || e == GemmEpilogue::BiasGeluTanhAux;
}
/// The tanh approximation of GELU (the form cuBLASLt's epilogues compute).
inline bool epilogueUsesGeluTanh(GemmEpilogue e) {
  return e == GemmEpilogue::BiasGeluTanh ||
         e == GemmEpilogue::BiasGeluTanhAux || e == GemmEpilogue::DGeluTanh;
}
/// DGelu*: the product times GELU's derivative at a pre-activation operand.
inline bool epilogueReadsPreActivation(GemmEpilogue e) {
  return e == GemmEpilogue::DGelu || e == GemmEpilogue::DGeluTanh;
}
/// A second result: the pre-activation (Bias*Aux) or the bias gradient.
inline bool epilogueReturnsAux(GemmEpilogue e) {
  return e == GemmEpilogue::BiasGeluAux || e == GemmEpilogue::BiasGeluTanhAux ||
         e == GemmEpilogue::BiasGrad;
}

#undef RTXRT_DEFINE_ENUM
#undef RTXRT_ENUMERATOR_NAME
#undef RTXRT_ENUMERATOR

} // namespace rtxrt

#endif // RTXRT_KERNELENUMS_H
