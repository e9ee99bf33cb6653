// The MLP example, distributed by rtx-distribute on every mesh with dp, tp in
// {1, 2, 4} and at most 8 ranks: 3 AdamW steps (loss, parameters, moments)
// equal the single-device train step within fp32 tolerance.
//
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/mlp.mlir "kind=adamw lr=0.01" 3 --random \
// RUN:   dp:2 tp:2 dp:2,tp:2 dp:4 tp:4 dp:4,tp:2 dp:2,tp:4 | FileCheck %s
// CHECK-COUNT-7: {{[1-9][0-9]*}} results pass, 0 fail
