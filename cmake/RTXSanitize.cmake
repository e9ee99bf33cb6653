# RTX_SANITIZE: build rtx's own code with sanitizers, e.g.
#   cmake -B build-asan -DRTX_SANITIZE=address,undefined ...
# (scripts/sanitize.sh configures, builds and runs that build).
#
# The flags apply to every target this project defines (the runtime, the
# compiler libraries, the tools, the unit tests, the fuzzer); the MLIR and LLVM
# libraries are Debian's prebuilt, uninstrumented ones, which is fine: ASan
# checks every access made by instrumented code and intercepts malloc/free
# for everyone. CUDA sources are left alone (nvcc does not take these flags).
set(RTX_SANITIZE "" CACHE STRING
  "Comma-separated sanitizers for rtx's own code (e.g. address,undefined); empty: none")

if(RTX_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang|GNU")
    message(FATAL_ERROR "RTX_SANITIZE needs clang or GCC, not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # -fno-sanitize-recover: a UBSan finding stops the program (and fails the
  # test) instead of printing a line that nobody reads.
  # -gline-tables-only: file:line in reports for little compile time.
  set(RTX_SANITIZE_FLAGS -fsanitize=${RTX_SANITIZE} -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined -gline-tables-only)
  if(RTX_SANITIZE MATCHES "address")
    # LLVM's BumpPtrAllocator (inline, in headers) poisons the unused part of
    # its slabs when compiled with ASan, and unpoisons each allocation. The
    # copies inside Debian's libMLIR.so are not instrumented: memory they hand
    # out from a slab that an instrumented copy poisoned stays poisoned, and
    # rtx's instrumented code then reads "poisoned" attribute or type storage
    # (false reports). This header turns LLVM's poisoning calls into no-ops in
    # rtx's code only; ASan still checks every heap, stack and global access.
    list(APPEND RTX_SANITIZE_FLAGS
         -include ${CMAKE_CURRENT_LIST_DIR}/LLVMNoAllocatorPoisoning.h)
  endif()
  # Programs emitted by this build's rtx-translate link its instrumented
  # librtxrt, so they are compiled with the sanitizers too (lib/Target's
  # BuildConfig.h): the sanitizer stage runs some of them (docs/testing.md).
  set(RTX_SANITIZE_PROGRAM_FLAGS "-fsanitize=${RTX_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
  message(STATUS "rtx: sanitizers ${RTX_SANITIZE} for rtx's own targets")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${RTX_SANITIZE_FLAGS}>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${RTX_SANITIZE}>")
  # The sanitizer build is for the CPU code: no CUDA parts.
  set(RTX_SKIP_CUDA ON)
endif()
