// The ViT block example (examples/vit-block.mlir: linear patch embedding, a
// class token, bidirectional attention with 2 heads, GELU MLP, layernorm, a
// classifier; batch 2, 5 tokens) distributed on data, tensor and sequence
// (Ulysses, on sp) parallel meshes of up to 8 ranks: 3 training steps equal
// the single-device train step, every loss, parameter and optimizer moment.
//
// SGD agrees to fp32 rounding (tolerance 1e-5).
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/vit-block.mlir "kind=sgd lr=0.01 tolerance=1e-5" 3 --random \
// RUN:   dp:2 tp:2 dp:2,tp:2 sp:2 tp:2,sp:2 dp:2,tp:2,sp:2 2>/dev/null | FileCheck %s --check-prefix=SGD
// SGD-COUNT-6: {{[1-9][0-9]*}} results pass, 0 fail
//
// AdamW, handled as for GPT-2 (gpt2-meshes.mlir): the gradient of the
// attention's key bias (the middle third of the qkv bias) is zero up to
// rounding, since softmax ignores a shift that is the same for every key.
// AdamW turns such noise g into updates of lr * g / (|g| + eps), up to lr,
// so with the default eps = 1e-8 the two programs' different (correct)
// summation orders differ by lr-sized amounts there (result 8, the qkv
// bias):
// RUN: rtx-opt %rtx_src_root/examples/vit-block.mlir -rtx-autodiff '-rtx-optimizer=kind=adamw lr=0.01' -o %t.ref.mlir
// RUN: rtx-opt %rtx_src_root/examples/vit-block.mlir '-rtx-distribute=mesh=dp:2 optimizer=adamw lr=0.01' -o %t.dp2.mlir
// RUN: not rtx-run --compare %t.ref.mlir %t.dp2.mlir --ranks 2 --random --steps 3 2>&1 | FileCheck %s --check-prefix=KEYBIAS
// KEYBIAS: result 8: tensor<96xf32> {{.*}} FAIL
// With eps = 1e-5, noise of ~1e-9 moves them by ~lr * 1e-4, and design.md's
// tolerance for values after optimizer steps (1e-4) holds on every mesh.
// RUN: %S/compare-meshes.sh %rtx_src_root/examples/vit-block.mlir "kind=adamw lr=0.01 eps=1e-5 tolerance=1e-4" 3 --random \
// RUN:   dp:2 tp:2 dp:2,tp:2 sp:2 tp:2,sp:2 dp:2,tp:2,sp:2 2>/dev/null | FileCheck %s --check-prefix=ADAMW
// ADAMW-COUNT-6: {{[1-9][0-9]*}} results pass, 0 fail
//
// The distributed program is distributed: local shapes are split (the qkv
// weight's output features over tp, the batch over dp) and gradients are
// all-reduced over dp.
// RUN: rtx-opt %rtx_src_root/examples/vit-block.mlir '-rtx-distribute=mesh=dp:2,tp:2 optimizer=adamw' -o %t.dp2tp2.mlir
// RUN: FileCheck %s --check-prefix=SPLIT < %t.dp2tp2.mlir
// SPLIT-DAG: rtx.input "images" {{.*}}: tensor<1x3x8x8xf32>
// SPLIT-DAG: rtx.all_reduce {{.*}} ["dp"] {{(sum|mean)}}
