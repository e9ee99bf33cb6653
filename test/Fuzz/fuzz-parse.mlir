// Runs the libFuzzer target over parse + verify for a bounded time, seeded
// with the dialect's own tests and the examples. A crash, an abort or a
// timeout fails the test; diagnostics for bad input are expected and silent.
//
// REQUIRES: fuzzer
// RUN: rm -rf %t && mkdir -p %t/corpus
// RUN: cp %rtx_src_root/test/Dialect/RTX/*.mlir %rtx_src_root/examples/*.mlir %t/corpus/
// RUN: rtx-parse-fuzzer %t/corpus -max_total_time=20 -timeout=10 -rss_limit_mb=4096 \
// RUN:   -seed=1 -print_final_stats=1 2>&1 | FileCheck %s
// CHECK: Done {{[0-9]+}} runs in {{[0-9]+}} second(s)
