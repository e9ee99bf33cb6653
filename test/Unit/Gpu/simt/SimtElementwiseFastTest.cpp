//===- SimtElementwiseFastTest.cpp - ElementwiseFastTest on the CPU ------===//
//
// The comparison tests as written, with the GPU requirement lifted: the
// fast kernels run in the CPU simulation (SimtShim.h), the portable ones in
// the emulation (SimtRowsFastTest.cpp checks that the fast kernels ran).
//
//===----------------------------------------------------------------------===//

#include "FastKernelTest.h"

#undef RTX_REQUIRE_GPU
#define RTX_REQUIRE_GPU()                                                      \
  do {                                                                         \
  } while (false)

#include "../ElementwiseFastTest.cpp"
