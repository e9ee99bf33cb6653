# The fast GPU kernels (shared memory, warp reductions, tensor cores,
# cuBLASLt): built into librtxrt_cuda only. The host emulation runs the
# portable bodies instead, and test/Unit/Gpu compares each fast kernel with
# its portable reference wherever a GPU is present (design.md §4).
set(RTXRT_GPU_FAST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/FlashAttention.cu
  ${CMAKE_CURRENT_LIST_DIR}/FusedNorm.cu
  ${CMAKE_CURRENT_LIST_DIR}/FusedLoss.cu
  ${CMAKE_CURRENT_LIST_DIR}/FusedOptimizer.cu
  ${CMAKE_CURRENT_LIST_DIR}/ElementwiseFast.cu
  ${CMAKE_CURRENT_LIST_DIR}/RowsFast.cu
  ${CMAKE_CURRENT_LIST_DIR}/CublasLt.cu
)
