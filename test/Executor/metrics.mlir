// rtx-run --metrics FILE writes one JSON object per step in the format of
// the emitted programs' --metrics (rtxrt::MetricsFile, test/Target/
// metrics.test): step, loss, step_time_ms (rank 0's time in the
// interpreter), tokens_per_s (null without an input named 'tokens'). It
// leaves out collective_ms and collective_pct, which simulated ranks cannot
// measure (docs/rtx-run.md).
//
// A training step on one rank: the losses are the progress lines' losses.
// RUN: rm -rf %t && mkdir -p %t
// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir -rtx-autodiff '-rtx-optimizer=lr=0.01' -o %t/ref.mlir
// RUN: rtx-run %t/ref.mlir --random --steps 3 --metrics %t/ref.jsonl > %t/ref.log
// RUN: %python %S/Inputs/check_metrics.py %t/ref.jsonl --steps 3 --log %t/ref.log | FileCheck %s --check-prefix=ONE
// ONE: keys ['global_step', 'loss', 'step', 'step_time_ms', 'tokens_per_s']
// ONE: losses {{[0-9.]+ [0-9.]+ [0-9.]+$}}
//
// The same step on dp=2 simulated ranks gives the same losses.
// RUN: rtx-opt %rtx_src_root/examples/gpt2-tiny.mlir '-rtx-distribute=mesh=dp:2 lr=0.01' -o %t/dp2.mlir
// RUN: rtx-run %t/dp2.mlir --ranks 2 --random --steps 3 --metrics %t/dp2.jsonl > /dev/null
// RUN: %python %S/Inputs/check_metrics.py %t/dp2.jsonl --steps 3 --like %t/ref.jsonl | FileCheck %s --check-prefix=ONE
//
// A loss that holds partial sums (@partial_loss below) is assembled from
// every rank after the run; its lines are written then, with each step's
// time: w starts at zero and grows by one per step, the loss is sum(w + 1)
// over 4 elements.
// RUN: rtx-run %s --entry partial_loss --ranks 2 --steps 3 --metrics %t/partial.jsonl > %t/partial.log
// RUN: %python %S/Inputs/check_metrics.py %t/partial.jsonl --steps 3 --log %t/partial.log | FileCheck %s --check-prefix=PARTIAL
// PARTIAL: keys ['global_step', 'loss', 'step', 'step_time_ms', 'tokens_per_s']
// PARTIAL: losses 4 8 12
//
// A function without a loss: one line per step, its loss null.
// RUN: rtx-run %s --entry no_loss --random --steps 2 --metrics %t/no-loss.jsonl > /dev/null
// RUN: %python %S/Inputs/check_metrics.py %t/no-loss.jsonl --steps 2 | FileCheck %s --check-prefix=NOLOSS
// NOLOSS: losses null null
//
// A file that cannot be written fails before the first step; --compare
// runs no steps to report.
// RUN: not rtx-run %t/ref.mlir --random --metrics %t/no/such/dir/m.jsonl 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: rtx-run: error: cannot write the metrics file {{.*}}no/such/dir/m.jsonl: No such file or directory
// RUN: not rtx-run --compare %t/ref.mlir %t/dp2.mlir --ranks 2 --random --metrics %t/c.jsonl 2>&1 | FileCheck %s --check-prefix=COMPARE
// COMPARE: rtx-run: error: --metrics is for a run, not for --compare

rtx.mesh @mesh_dp2 ["dp"=2]

func.func @partial_loss(%w: tensor<2xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2, [["dp"]]>, rtx.state = "w"})
    -> (tensor<f32> {rtx.sharding = #rtx.sharding<@mesh_dp2, [], partial = ["dp"]>},
        tensor<2xf32> {rtx.sharding = #rtx.sharding<@mesh_dp2, [["dp"]]>, rtx.state = "w"}) {
  %one = rtx.constant dense<1.0> : tensor<2xf32>
  %next = rtx.add %w, %one : tensor<2xf32>
  %loss = rtx.reduce sum %next dims [0] : tensor<2xf32> -> tensor<f32>
  return %loss, %next : tensor<f32>, tensor<2xf32>
}

func.func @no_loss(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = rtx.add %x, %x : tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
