# The GPU runtime's sources, shared by the CUDA build (cuda/) and the host
# emulation (emulation/). Each build lives in its own directory because
# CMake's source-file properties (the language a .cu file is compiled as)
# are per directory.
set(RTXRT_GPU_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Memory.cu
  ${CMAKE_CURRENT_LIST_DIR}/Elementwise.cu
  ${CMAKE_CURRENT_LIST_DIR}/Shape.cu
  ${CMAKE_CURRENT_LIST_DIR}/Contraction.cu
  ${CMAKE_CURRENT_LIST_DIR}/Rows.cu
  ${CMAKE_CURRENT_LIST_DIR}/Attention.cu
  ${CMAKE_CURRENT_LIST_DIR}/Fused.cu
  ${CMAKE_CURRENT_LIST_DIR}/Runtime.cu
  ${CMAKE_CURRENT_LIST_DIR}/EventTimer.cu
  ${CMAKE_CURRENT_LIST_DIR}/StepRunner.cu
  ${CMAKE_CURRENT_LIST_DIR}/StepArena.cpp
)
