# The software bill of materials: ${CMAKE_BINARY_DIR}/sbom.spdx.json, an SPDX
# 2.3 JSON document of the Debian packages rtx is built with and the libraries
# this configuration found and used (docs/supply-chain.md). Part of the
# default build; regenerated when the generator, the package lists, the
# installed packages (/var/lib/dpkg/status) or these components change.
#
# Included at the end of the top-level CMakeLists.txt, after every
# find_package, so the values below are the ones the build used.

find_package(Python3 REQUIRED COMPONENTS Interpreter)

# Found in test/ and bench/ scopes; looked up again here (cached, same result).
find_package(GTest QUIET)
find_package(benchmark QUIET)
# Found (REQUIRED) in tools/rtx-topology's scope; looked up again here.
find_package(nlohmann_json CONFIG QUIET)

# Each component: name, version, then the paths it was found at.
set(RTX_SBOM_COMPONENTS "")
function(rtx_sbom_component name version)
  set(paths "")
  foreach(p IN LISTS ARGN)
    if(p)
      string(APPEND paths "\"${p}\",")
    endif()
  endforeach()
  string(REGEX REPLACE ",$" "" paths "${paths}")
  set(RTX_SBOM_COMPONENTS
      "${RTX_SBOM_COMPONENTS}  {\"name\": \"${name}\", \"version\": \"${version}\", \"paths\": [${paths}]},\n"
      PARENT_SCOPE)
endfunction()

rtx_sbom_component(LLVM "${LLVM_PACKAGE_VERSION}" "${LLVM_DIR}"
                   "${LLVM_LIBRARY_DIR}/libLLVM.so")
rtx_sbom_component(MLIR "${LLVM_PACKAGE_VERSION}" "${MLIR_DIR}"
                   "${LLVM_LIBRARY_DIR}/libMLIR.so")
if(RTXRT_OPENBLAS_LIBRARY)
  rtx_sbom_component(OpenBLAS "" "${RTXRT_OPENBLAS_LIBRARY}"
                     "${RTXRT_CBLAS_INCLUDE_DIR}/cblas.h")
elseif(BLAS_LIBRARIES)
  rtx_sbom_component(BLAS "" ${BLAS_LIBRARIES})
endif()
if(TARGET gloo)
  rtx_sbom_component(Gloo "${Gloo_VERSION}" "${Gloo_DIR}" "$<TARGET_FILE:gloo>"
                     "${RTXRT_HIREDIS_INCLUDE_DIR}/hiredis.h")
endif()
if(RTXRT_HTTPLIB_LIBRARY)
  # The Prometheus endpoint (runtime/lib/program/Prometheus.cpp).
  rtx_sbom_component(cpp-httplib "" "${RTXRT_HTTPLIB_LIBRARY}"
                     "${RTXRT_HTTPLIB_INCLUDE_DIR}/httplib.h")
endif()
if(RTXRT_URING_LIBRARY)
  # The offload file tier's io_uring (runtime/lib/offload/UringQueue.cpp).
  rtx_sbom_component(liburing "" "${RTXRT_URING_LIBRARY}")
endif()
if(RTXRT_ISAL_LIBRARY)
  # CRC32C of checkpoint chunks and log records (runtime/lib/checkpoint).
  rtx_sbom_component(isa-l "" "${RTXRT_ISAL_LIBRARY}")
endif()
if(RTX_HWLOC_LIBRARY)
  # rtx-topology's view of sockets, NUMA nodes, cores and PCI devices.
  rtx_sbom_component(hwloc "" "${RTX_HWLOC_LIBRARY}"
                     "${RTX_HWLOC_INCLUDE_DIR}/hwloc.h")
endif()
if(OpenMP_CXX_FOUND)
  rtx_sbom_component(OpenMP "${OpenMP_CXX_VERSION}" ${OpenMP_CXX_LIBRARIES})
endif()
# The CUDA parts (runtime/lib/gpu/cuda) are built only with nvcc; their
# find_package results live in that folder's scope, so ask again here.
if(TARGET rtxrt_cuda)
  find_package(CUDAToolkit QUIET)
  rtx_sbom_component(CUDA "${CUDAToolkit_VERSION}" "${CUDAToolkit_NVCC_EXECUTABLE}"
                     "${CUDAToolkit_LIBRARY_DIR}")
  if(RTXRT_NCCL_LIBRARY AND RTXRT_NCCL_INCLUDE_DIR)
    # NCCL has no CMake package (design.md §7): its version is in nccl.h.
    file(STRINGS "${RTXRT_NCCL_INCLUDE_DIR}/nccl.h" nccl_defs
         REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
    set(nccl_version "")
    foreach(part MAJOR MINOR PATCH)
      string(REGEX MATCH "NCCL_${part} +([0-9]+)" _ "${nccl_defs}")
      list(APPEND nccl_version "${CMAKE_MATCH_1}")
    endforeach()
    string(REPLACE ";" "." nccl_version "${nccl_version}")
    rtx_sbom_component(NCCL "${nccl_version}" "${RTXRT_NCCL_LIBRARY}"
                       "${RTXRT_NCCL_INCLUDE_DIR}/nccl.h")
  endif()
endif()
if(nlohmann_json_FOUND)
  rtx_sbom_component(nlohmann_json "${nlohmann_json_VERSION}" "${nlohmann_json_DIR}")
endif()
if(GTest_FOUND)
  rtx_sbom_component(GTest "${GTest_VERSION}" "${GTest_DIR}")
endif()
if(benchmark_FOUND)
  rtx_sbom_component(benchmark "${benchmark_VERSION}" "${benchmark_DIR}")
endif()
rtx_sbom_component(C++-compiler
                   "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
                   "${CMAKE_CXX_COMPILER}")
rtx_sbom_component(CMake "${CMAKE_VERSION}" "${CMAKE_COMMAND}")

string(REGEX REPLACE ",\n$" "\n" RTX_SBOM_COMPONENTS "${RTX_SBOM_COMPONENTS}")
set(RTX_SBOM_INPUT ${CMAKE_BINARY_DIR}/sbom-components.json)
# file(GENERATE) rewrites it only when its content changes (it resolves
# $<TARGET_FILE:gloo> at generate time).
file(GENERATE OUTPUT ${RTX_SBOM_INPUT}
     CONTENT "{\"project\": \"rtx\", \"components\": [\n${RTX_SBOM_COMPONENTS}]}\n")

set(RTX_SBOM ${CMAKE_BINARY_DIR}/sbom.spdx.json)
set(RTX_SBOM_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/sbom.py
    ${PROJECT_SOURCE_DIR}/scripts/setup.sh
    ${PROJECT_SOURCE_DIR}/scripts/debian-packages.lock ${RTX_SBOM_INPUT})
if(EXISTS /var/lib/dpkg/status)
  list(APPEND RTX_SBOM_DEPENDS /var/lib/dpkg/status)
endif()
add_custom_command(
  OUTPUT ${RTX_SBOM}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/sbom.py
          --components ${RTX_SBOM_INPUT} --source ${PROJECT_SOURCE_DIR}
          -o ${RTX_SBOM}
  DEPENDS ${RTX_SBOM_DEPENDS}
  COMMENT "Writing the SBOM (SPDX 2.3): sbom.spdx.json")
add_custom_target(rtx-sbom ALL DEPENDS ${RTX_SBOM})
