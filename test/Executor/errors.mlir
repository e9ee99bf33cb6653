// Bad input to rtx-run gives a clear error naming the op or tensor, and a
// non-zero exit; never a crash.
//
// RUN: not rtx-run %s 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: rtx-run: error: missing input 'tokens': expected --inputs DIR/tokens.npy of shape [2, 3] i32 (or pass --random)
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.zeros((3, 2), np.int32))"
// RUN: not rtx-run %s --inputs %t 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: rtx-run: error: input 'tokens' from {{.*}}tokens.npy has shape [3, 2], the program expects [2, 3]
//
// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.zeros((2, 3), np.float32))"
// RUN: not rtx-run %s --inputs %t 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: rtx-run: error: input 'tokens' from {{.*}}tokens.npy has dtype f32, the program expects i32
//
// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.full((2, 3), 7, np.int32))"
// RUN: not rtx-run %s --inputs %t 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: rtx-run: error: rank 0: op 'rtx.embedding' at {{.*}}errors.mlir:{{[0-9]+}}:8: rtx.embedding: id 7 at index [0, 0] of ids [2, 3] is outside [0, 5)
//
// RUN: not rtx-run %s --random --ranks 3 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: rtx-run: error: --ranks 3 needs exactly one rtx.mesh with 3 ranks; the module has none
//
// RUN: not rtx-run %s --random --entry nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: rtx-run: error: no function @nope in the module (functions: @main)
//
// RUN: not rtx-run %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: Unknown command line argument '--no-such-flag'
//
// More ranks than one process simulates is refused before any thread starts
// (it used to abort in std::thread when threads ran out).
// RUN: not rtx-run %s --random --ranks 100000 2>&1 | FileCheck %s --check-prefix=TOO-MANY
// TOO-MANY: rtx-run: error: --ranks 100000 is more than one process simulates (at most 1024 ranks, one thread each); run the emitted program under rtx-launch instead
//
// RUN: not rtx-run %s --random --timeout -1 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// RUN: not rtx-run %s --random --timeout nan 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// RUN: not rtx-run %s --random --timeout 0 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// TIMEOUT: rtx-run: error: --timeout needs a number of seconds in (0, 86400], got

func.func @main() -> tensor<2x3x4xf32> {
  %ids = rtx.input "tokens" : tensor<2x3xi32>
  %table = rtx.param "wte" normal(0.0, 1.0) : tensor<5x4xf32>
  %x = rtx.embedding %table, %ids : tensor<5x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  return %x : tensor<2x3x4xf32>
}
