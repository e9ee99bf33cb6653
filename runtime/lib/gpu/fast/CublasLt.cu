//===- CublasLt.cu - GEMMs on cuBLASLt, with fused epilogues --------------===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so
// cuBLASLt's A is our B and its B our A (as with cuBLAS in Contraction.cu);
// its D is C^T: n rows, m columns. A bias over our columns is thus a bias
// over D's rows (CUBLASLT_EPILOGUE_BIAS), and a bias gradient over our rows
// (the sum of our A over k) is CUBLASLT_EPILOGUE_BGRADB.
//
// GEMMs run on the compute stream only, so one workspace serves them all.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"

#include "../Portable.h"

#include <cublasLt.h>

#include <array>
#include <map>
#include <mutex>
#include <string>

using namespace rtxrt;
using namespace rtxrt::gpu;
using namespace rtxrt::gpu::fast;

namespace {

void checkLt(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLASLt error ") + std::to_string(status) + " (" +
                cublasGetStatusString(status) + ") in " + what);
}

cublasLtHandle_t handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t created;
    checkLt(cublasLtCreate(&created), "cublasLtCreate");
    return created;
  }();
  return h;
}

/// What NVIDIA recommends for Hopper; allocated once, on first use.
constexpr size_t kWorkspaceBytes = 32u << 20;
void *workspace() {
  static void *w = [] {
    void *p = nullptr;
    rtxrt::gpu::detail::check(cudaMalloc(&p, kWorkspaceBytes),
                              "cudaMalloc of the cuBLASLt workspace");
    return p;
  }();
  return w;
}

cudaDataType dataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  case DType::F64:
    return CUDA_R_64F;
  default:
    throw Error("cuBLASLt GEMM: unsupported element type");
  }
}

/// bf16/f16 accumulate in f32; f32 in f32 or, when allowed, TF32.
cublasComputeType_t computeType(DType dtype) {
  if (dtype == DType::F64)
    return CUBLAS_COMPUTE_64F;
  if (dtype == DType::F32 && gpu::tf32())
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

cublasLtEpilogue_t epilogueOf(LtEpilogue e) {
  switch (e) {
  case LtEpilogue::Default:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case LtEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case LtEpilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case LtEpilogue::GeluAuxBias:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case LtEpilogue::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  case LtEpilogue::BGradB:
    return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool usesAux(LtEpilogue e) {
  return e == LtEpilogue::GeluAuxBias || e == LtEpilogue::DGelu;
}

/// The largest power of two (at most 256, cuBLASLt's default assumption)
/// dividing the address of every matrix of a batch.
int64_t alignmentOf(const void *p, int64_t strideBytes = 0) {
  uint64_t v =
      reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(strideBytes);
  int64_t a = 256;
  while (a > 1 && v % a != 0)
    a /= 2;
  return a;
}

/// Everything the descriptor, layouts and algorithm depend on.
using PlanKey = std::array<int64_t, 20>;

PlanKey keyOf(const LtGemm &g) {
  int64_t size = static_cast<int64_t>(dtypeSize(g.dtype));
  bool batched = g.batch > 1;
  return {static_cast<int64_t>(g.dtype),
          g.transA,
          g.transB,
          g.m,
          g.n,
          g.k,
          g.lda,
          g.ldb,
          g.ldc,
          batched ? g.strideA : 0,
          batched ? g.strideB : 0,
          batched ? g.strideC : 0,
          g.batch,
          static_cast<int64_t>(g.epilogue),
          static_cast<int64_t>(computeType(g.dtype)),
          alignmentOf(g.a, batched ? g.strideA * size : 0),
          alignmentOf(g.b, batched ? g.strideB * size : 0),
          alignmentOf(g.c, batched ? g.strideC * size : 0),
          alignmentOf(g.bias),
          alignmentOf(g.aux)};
}

/// A cached problem: its descriptor, layouts (cuBLASLt's A, B and C = D)
/// and the heuristic's first algorithm; `supported` false when there is
/// none. Kept for the process's life (the set of shapes of a program is
/// small), never destroyed: destruction at exit could outlive the context.
struct Plan {
  bool supported = false;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

template <typename T>
void setDesc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
             const T &value) {
  checkLt(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
          "cublasLtMatmulDescSetAttribute");
}

/// A column-major layout of `rows` x `cols`, batched when batch > 1.
cublasLtMatrixLayout_t layout(cudaDataType type, int64_t rows, int64_t cols,
                              int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  checkLt(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld),
          "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    checkLt(cublasLtMatrixLayoutSetAttribute(
                l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return l;
}

/// The epilogue's pointers: the heuristic reads their alignment, the
/// matmul their values; set before each.
void setPointers(cublasLtMatmulDesc_t desc, const LtGemm &g) {
  if (g.bias)
    setDesc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, g.bias);
  if (g.aux)
    setDesc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux);
}

Plan makePlan(const LtGemm &g) {
  Plan plan;
  cudaDataType type = dataType(g.dtype);
  cudaDataType scale = g.dtype == DType::F64 ? CUDA_R_64F : CUDA_R_32F;
  checkLt(cublasLtMatmulDescCreate(&plan.desc, computeType(g.dtype), scale),
          "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our B, its B our A (see the file comment).
  cublasOperation_t opA = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  setDesc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, opA);
  setDesc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, opB);
  setDesc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogueOf(g.epilogue));
  if (usesAux(g.epilogue)) {
    int64_t ld = g.n; // the pre-activation is row-major [m, n]: D's layout
    setDesc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld);
  }
  setPointers(plan.desc, g);
  plan.a = layout(type, g.transB ? g.k : g.n, g.transB ? g.n : g.k, g.ldb,
                  g.batch, g.strideB);
  plan.b = layout(type, g.transA ? g.m : g.k, g.transA ? g.k : g.m, g.lda,
                  g.batch, g.strideA);
  plan.c = layout(type, g.n, g.m, g.ldc, g.batch, g.strideC);

  cublasLtMatmulPreference_t preference;
  checkLt(cublasLtMatmulPreferenceCreate(&preference),
          "cublasLtMatmulPreferenceCreate");
  auto setPreference = [&](cublasLtMatmulPreferenceAttributes_t attr,
                           auto value) {
    checkLt(cublasLtMatmulPreferenceSetAttribute(preference, attr, &value,
                                                 sizeof(value)),
            "cublasLtMatmulPreferenceSetAttribute");
  };
  PlanKey key = keyOf(g);
  setPreference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                static_cast<uint64_t>(kWorkspaceBytes));
  setPreference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                static_cast<uint32_t>(key[16]));
  setPreference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                static_cast<uint32_t>(key[15]));
  setPreference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                static_cast<uint32_t>(key[17]));
  setPreference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                static_cast<uint32_t>(key[17]));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle(), plan.desc, plan.a, plan.b, plan.c, plan.c, preference, 1,
      &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  // NOT_SUPPORTED (or no result): no kernel for this problem; any other
  // status is an error.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED)
    checkLt(status, "cublasLtMatmulAlgoGetHeuristic");
  plan.supported = status == CUBLAS_STATUS_SUCCESS && found > 0;
  plan.algo = result.algo;
  return plan;
}

/// The epilogues whose aux matrix cuBLASLt can address: its leading
/// dimension (n) must be a multiple of 8.
bool auxLayoutAllowed(const LtGemm &g) {
  return !usesAux(g.epilogue) || g.n % 8 == 0;
}

} // namespace

bool fast::gemm(const LtGemm &g) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
    throw Error("cuBLASLt GEMM: empty problems are the caller's to handle");
  if (g.epilogue != LtEpilogue::Default && g.batch != 1)
    throw Error("cuBLASLt GEMM: epilogues take one matrix, not a batch");
  if (!auxLayoutAllowed(g))
    return false;
  // A shared operand (stride 0) is not a strided batch cuBLASLt documents:
  // run such batches one matrix at a time.
  if (g.batch > 1 && (g.strideA == 0 || g.strideB == 0)) {
    size_t size = dtypeSize(g.dtype);
    for (int64_t i = 0; i < g.batch; ++i) {
      LtGemm one = g;
      one.batch = 1;
      one.a = static_cast<const char *>(g.a) + i * g.strideA * size;
      one.b = static_cast<const char *>(g.b) + i * g.strideB * size;
      one.c = static_cast<char *>(g.c) + i * g.strideC * size;
      if (!gemm(one))
        return false;
    }
    return true;
  }
  static std::mutex mutex;
  static std::map<PlanKey, Plan> plans;
  std::lock_guard<std::mutex> lock(mutex);
  PlanKey key = keyOf(g);
  auto it = plans.find(key);
  if (it == plans.end())
    it = plans.emplace(key, makePlan(g)).first;
  const Plan &plan = it->second;
  if (!plan.supported)
    return false;
  setPointers(plan.desc, g);
  float alphaF = static_cast<float>(g.alpha),
        betaF = static_cast<float>(g.beta);
  double alphaD = g.alpha, betaD = g.beta;
  bool f64 = g.dtype == DType::F64;
  const void *alpha = f64 ? static_cast<const void *>(&alphaD) : &alphaF;
  const void *beta = f64 ? static_cast<const void *>(&betaD) : &betaF;
  checkLt(cublasLtMatmul(handle(), plan.desc, alpha, g.b, plan.a, g.a, plan.b,
                         beta, g.c, plan.c, g.c, plan.c, &plan.algo,
                         workspace(), kWorkspaceBytes,
                         rtxrt::gpu::detail::stream()),
          "cublasLtMatmul");
  return true;
}
