//===- Kernels.h - CPU kernels for the rtx ops ------------------*- C++ -*-===//
//
// One function per op of the rtx dialect (forward). Semantics are those of the
// op descriptions in include/rtx/Dialect/RTX/IR/RTXModelOps.td. Float kernels
// accept f32, f64, bf16 and f16: f64 computes in double, the others in float
// (bf16/f16 results are rounded to nearest even). Reductions run in a fixed
// order, so results do not depend on the thread count. Kernels throw
// rtxrt::Error with a message naming the op on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_KERNELS_H
#define RTXRT_KERNELS_H

#include "rtxrt/Tensor.h"

#include <string>
#include <vector>

namespace rtxrt {

enum class UnaryKind {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Silu,
  Gelu,
  GeluTanh
};
enum class BinaryKind { Add, Sub, Mul, Div, Maximum, Minimum };
enum class CompareKind { EQ, NE, LT, LE, GT, GE };
enum class ReduceKind { Sum, Mean, Max, Min };
enum class InitKind { Zeros, Ones, Constant, Normal, Uniform };

// --- contractions ------------------------------------------------------------
/// [M,K] x [K,N] (after optional transposes); OpenBLAS sgemm/dgemm.
Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);
/// [B...,M,K] x [B...,K,N].
Tensor batchMatmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
                   bool transposeRhs);
/// x [..., in], weight [out, in], optional bias [out] (pass an undefined
/// Tensor for none) -> [..., out].
Tensor linear(const Tensor &input, const Tensor &weight, const Tensor &bias);

// --- elementwise -------------------------------------------------------------
Tensor unary(UnaryKind kind, const Tensor &input);
/// Operands of one shape and dtype.
Tensor binary(BinaryKind kind, const Tensor &lhs, const Tensor &rhs);
/// -> i1 tensor.
Tensor compare(CompareKind kind, const Tensor &lhs, const Tensor &rhs);
/// condition i1; onTrue/onFalse of one shape and dtype.
Tensor where(const Tensor &condition, const Tensor &onTrue,
             const Tensor &onFalse);
Tensor maskedFill(const Tensor &input, const Tensor &mask, double value);
Tensor convert(const Tensor &input, DType to);
/// Mask bit of global element i is drawn from the counter-based generator
/// keyed by (seed, "dropout", globalIndex(i)); `globalOffsets`/`globalShape`
/// place this (possibly sharded) tensor inside the global tensor: element
/// local index -> global row-major index. Empty globalShape means the tensor
/// is the whole tensor.
Tensor dropout(const Tensor &input, double rate, int64_t seed,
               const Shape &globalShape = {},
               const std::vector<int64_t> &globalOffsets = {});

// --- normalisation, softmax, attention ---------------------------------------
/// scale [D], optional bias [D] (undefined Tensor for none).
Tensor layerNorm(const Tensor &input, const Tensor &scale, const Tensor &bias,
                 double epsilon);
Tensor rmsNorm(const Tensor &input, const Tensor &scale, double epsilon);
Tensor softmax(const Tensor &input, int64_t dim);
/// input [B,H,S,D]; rotate-half layout; position s + offset.
Tensor rope(const Tensor &input, double theta, int64_t offset);
/// q [B,Hq,Sq,D], k/v [B,Hkv,Skv,D] -> [B,Hq,Sq,D].
Tensor attention(const Tensor &query, const Tensor &key, const Tensor &value,
                 bool causal, double scale);

// --- embedding and loss ------------------------------------------------------
/// table [V,D], integer ids -> ids.shape + [D]. An id outside [0, V) throws.
Tensor embedding(const Tensor &table, const Tensor &ids);
/// logits [..., V], integer labels [...] -> f32 scalar (f64 for f64 logits):
/// mean over non-ignored tokens; 0 when all are ignored.
Tensor crossEntropy(const Tensor &logits, const Tensor &labels,
                    bool hasIgnoreIndex, int64_t ignoreIndex);

// --- shape manipulation ------------------------------------------------------
Tensor reshape(const Tensor &input, const Shape &shape);
Tensor transpose(const Tensor &input, const std::vector<int64_t> &permutation);
Tensor slice(const Tensor &input, const std::vector<int64_t> &starts,
             const std::vector<int64_t> &limits);
std::vector<Tensor> split(const Tensor &input, int64_t dim,
                          const std::vector<int64_t> &sizes);
Tensor concat(const std::vector<Tensor> &inputs, int64_t dim);
/// Operand dim i -> result dim dims[i] (size equal or 1).
Tensor broadcast(const Tensor &input, const std::vector<int64_t> &dims,
                 const Shape &resultShape);
Tensor reduce(ReduceKind kind, const Tensor &input,
              const std::vector<int64_t> &dims, bool keepdim);

// --- initialisation ----------------------------------------------------------
/// A parameter's initial value: element i (row-major over globalShape) is
/// drawn from the counter-based generator keyed by (seed, name, i), so any
/// shard of it can be produced alone: `globalOffsets` gives the shard's
/// origin in the global tensor (empty: the whole tensor).
Tensor initParameter(const std::string &name, InitKind kind, double a, double b,
                     int64_t seed, const Shape &shape, DType dtype,
                     const Shape &globalShape = {},
                     const std::vector<int64_t> &globalOffsets = {});

// --- threads -----------------------------------------------------------------
/// Threads the CPU kernels may use (OpenMP; OpenBLAS itself is kept on one
/// thread and GEMMs are split over a shape-fixed tile grid). Results do not
/// depend on it: every reduction has a fixed order.
void setNumThreads(int numThreads);
int getNumThreads();

} // namespace rtxrt

#endif // RTXRT_KERNELS_H
