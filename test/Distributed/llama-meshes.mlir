// The Llama-style block (grouped key/value heads: 4 query, 2 key/value) on
// every mesh its 2 key/value heads allow: 3 AdamW steps equal the
// single-device train step. Heads split over tp (Megatron attention).
//
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/llama-block.mlir "kind=adamw lr=0.01" 3 --random \
// RUN:   dp:2 tp:2 dp:2,tp:2 tp:4 dp:2,tp:4 | FileCheck %s
// CHECK-COUNT-5: {{[1-9][0-9]*}} results pass, 0 fail
