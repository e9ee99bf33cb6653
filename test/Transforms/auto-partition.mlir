// RUN: rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=2 dp=2 zero=1 recompute=none report-file=%t.json' -mlir-print-op-on-diagnostic=false 2>%t.remarks | FileCheck %s --check-prefix=DP
// RUN: FileCheck %s --check-prefix=REPORT < %t.remarks
// RUN: %python -c "import json, sys; r = json.load(open(sys.argv[1])); p = r['plan']; assert (p['dp'], p['tp'], p['pp'], p['zero']) == (2, 1, 1, 1), p; m = p['predicted']['memory_bytes']; assert m['peak'] == sum(v for k, v in m.items() if k != 'peak') > 0, m; assert r['search']['priced'] >= 1 and r['model']['units'] > 2, r['search']; print('REPORT OK')" %t.json | FileCheck %s --check-prefix=JSON

// Two pipeline stages over four devices, four micro-batches per step: the
// plan cuts the forward ops into stages at layer boundaries
// (rtx-split-stages keeps them), and rtx-distribute builds the program from
// the plan.
// RUN: rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=4 pp=2 tp=1 global-batch=8 schedule=1f1b remarks=false' | FileCheck %s --check-prefix=PP
// RUN: rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=4 pp=2 tp=1 global-batch=8 schedule=1f1b remarks=false' '-rtx-distribute=from-plan=true optimizer=sgd lr=0.1' | FileCheck %s --check-prefix=BUILT

// The planner's path keeps the learning-rate schedule: the options the plan
// does not choose reach rtx-optimizer, so every update carries it.
// RUN: rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=2 dp=2 zero=1 recompute=none remarks=false' '-rtx-distribute=from-plan=true warmup-steps=2 decay-steps=6 min-lr=1e-4' | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: rtx.adamw_update {{.*}} warmup_steps 2 decay_steps 6 min_lr 1.000000e-04 :
// SCHEDULE-NOT: weight_decay {{[-+.e0-9]+}} :

// The whole search on four devices: whatever it picks, rtx-distribute
// builds it and the program verifies (rtx-distribute ends with
// rtx-verify-distribution).
// RUN: rtx-opt %s '-rtx-auto-partition=profile=cpu-host devices=4 remarks=false' '-rtx-distribute=from-plan=true' | FileCheck %s --check-prefix=ANY

// DP: module attributes {rtx.plan = {applicable = true, distribute = "mesh=dp:2 shard-state=1{{( overlap=true)?}}", dp = 2 : i64
// DP-SAME: pp = 1 : i64
// DP-SAME: tp = 1 : i64
// DP-SAME: zero = 1 : i64
// DP-NOT: rtx.stage

// REPORT: remark: plan for 2 device(s) of cpu-host, objective throughput, global batch 2 x 8 tokens
// REPORT-NEXT: chosen: dp=2 tp=1 pp=1 zero=1 micro-batches=1x1.00 recompute=none
// REPORT-NEXT: predicted step
// REPORT-NEXT: time: compute
// REPORT-NEXT: memory per rank:
// REPORT-NEXT: communication per rank and step: shared_memory
// REPORT-NEXT: searched {{[0-9]+}} plans

// JSON: REPORT OK

// PP: rtx.plan = {applicable = true, distribute = "mesh={{(pp:2,dp:2|dp:2,pp:2)}} pipeline-schedule=1f1b pipeline-micro-batches=4
// PP: rtx.embedding {{.*}}rtx.stage = 0
// PP: rtx.cross_entropy {{.*}}rtx.stage = 1

// BUILT: rtx.mesh @mesh_{{(pp2_dp2|dp2_pp2)}}
// BUILT: rtx.send
// BUILT: rtx.recv

// ANY: rtx.plan = {applicable = true
// ANY: rtx.mesh @mesh_

func.func @gpt2() -> tensor<f32> {
  %v1 = rtx.input "tokens" : tensor<2x8xi32>
  %v2 = rtx.input "labels" : tensor<2x8xi32>
  %v3 = rtx.param "transformer.wte.weight" normal(0.0, 0.02) seed 0 : tensor<37x32xf32>
  %v4 = rtx.param "transformer.wpe.weight" normal(0.0, 0.02) seed 0 : tensor<8x32xf32>
  %v5 = rtx.embedding %v3, %v1 : tensor<37x32xf32>, tensor<2x8xi32> -> tensor<2x8x32xf32>
  %v6 = rtx.broadcast %v4 dims [1, 2] : tensor<8x32xf32> -> tensor<2x8x32xf32>
  %v7 = rtx.add %v5, %v6 : tensor<2x8x32xf32>
  %v8 = rtx.param "transformer.h.0.ln_1.weight" ones seed 0 : tensor<32xf32>
  %v9 = rtx.param "transformer.h.0.ln_1.bias" zeros seed 0 : tensor<32xf32>
  %v10 = rtx.layernorm %v7, %v8, %v9 eps 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %v11 = rtx.param "transformer.h.0.attn.c_attn.weight" normal(0.0, 0.02) seed 0 : tensor<96x32xf32>
  %v12 = rtx.param "transformer.h.0.attn.c_attn.bias" zeros seed 0 : tensor<96xf32>
  %v13 = rtx.linear %v10, %v11, %v12 : tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32> -> tensor<2x8x96xf32>
  %v14, %v15, %v16 = rtx.split %v13 dim 2 : tensor<2x8x96xf32> -> tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>
  %v17 = rtx.reshape %v14 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v18 = rtx.transpose %v17 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v19 = rtx.reshape %v15 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v20 = rtx.transpose %v19 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v21 = rtx.reshape %v16 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v22 = rtx.transpose %v21 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v23 = rtx.attention %v18, %v20, %v22 causal : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>
  %v24 = rtx.transpose %v23 [0, 2, 1, 3] : tensor<2x2x8x16xf32> -> tensor<2x8x2x16xf32>
  %v25 = rtx.reshape %v24 : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %v26 = rtx.param "transformer.h.0.attn.c_proj.weight" normal(0.0, 0.02) seed 0 : tensor<32x32xf32>
  %v27 = rtx.param "transformer.h.0.attn.c_proj.bias" zeros seed 0 : tensor<32xf32>
  %v28 = rtx.linear %v25, %v26, %v27 : tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  %v29 = rtx.add %v7, %v28 : tensor<2x8x32xf32>
  %v30 = rtx.param "transformer.h.0.ln_2.weight" ones seed 0 : tensor<32xf32>
  %v31 = rtx.param "transformer.h.0.ln_2.bias" zeros seed 0 : tensor<32xf32>
  %v32 = rtx.layernorm %v29, %v30, %v31 eps 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %v33 = rtx.param "transformer.h.0.mlp.c_fc.weight" normal(0.0, 0.02) seed 0 : tensor<128x32xf32>
  %v34 = rtx.param "transformer.h.0.mlp.c_fc.bias" zeros seed 0 : tensor<128xf32>
  %v35 = rtx.linear %v32, %v33, %v34 : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32> -> tensor<2x8x128xf32>
  %v36 = rtx.gelu %v35 approximate : tensor<2x8x128xf32>
  %v37 = rtx.param "transformer.h.0.mlp.c_proj.weight" normal(0.0, 0.02) seed 0 : tensor<32x128xf32>
  %v38 = rtx.param "transformer.h.0.mlp.c_proj.bias" zeros seed 0 : tensor<32xf32>
  %v39 = rtx.linear %v36, %v37, %v38 : tensor<2x8x128xf32>, tensor<32x128xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  %v40 = rtx.add %v29, %v39 : tensor<2x8x32xf32>
  %v41 = rtx.param "transformer.h.1.ln_1.weight" ones seed 0 : tensor<32xf32>
  %v42 = rtx.param "transformer.h.1.ln_1.bias" zeros seed 0 : tensor<32xf32>
  %v43 = rtx.layernorm %v40, %v41, %v42 eps 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %v44 = rtx.param "transformer.h.1.attn.c_attn.weight" normal(0.0, 0.02) seed 0 : tensor<96x32xf32>
  %v45 = rtx.param "transformer.h.1.attn.c_attn.bias" zeros seed 0 : tensor<96xf32>
  %v46 = rtx.linear %v43, %v44, %v45 : tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32> -> tensor<2x8x96xf32>
  %v47, %v48, %v49 = rtx.split %v46 dim 2 : tensor<2x8x96xf32> -> tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>
  %v50 = rtx.reshape %v47 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v51 = rtx.transpose %v50 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v52 = rtx.reshape %v48 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v53 = rtx.transpose %v52 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v54 = rtx.reshape %v49 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v55 = rtx.transpose %v54 [0, 2, 1, 3] : tensor<2x8x2x16xf32> -> tensor<2x2x8x16xf32>
  %v56 = rtx.attention %v51, %v53, %v55 causal : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>
  %v57 = rtx.transpose %v56 [0, 2, 1, 3] : tensor<2x2x8x16xf32> -> tensor<2x8x2x16xf32>
  %v58 = rtx.reshape %v57 : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %v59 = rtx.param "transformer.h.1.attn.c_proj.weight" normal(0.0, 0.02) seed 0 : tensor<32x32xf32>
  %v60 = rtx.param "transformer.h.1.attn.c_proj.bias" zeros seed 0 : tensor<32xf32>
  %v61 = rtx.linear %v58, %v59, %v60 : tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  %v62 = rtx.add %v40, %v61 : tensor<2x8x32xf32>
  %v63 = rtx.param "transformer.h.1.ln_2.weight" ones seed 0 : tensor<32xf32>
  %v64 = rtx.param "transformer.h.1.ln_2.bias" zeros seed 0 : tensor<32xf32>
  %v65 = rtx.layernorm %v62, %v63, %v64 eps 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %v66 = rtx.param "transformer.h.1.mlp.c_fc.weight" normal(0.0, 0.02) seed 0 : tensor<128x32xf32>
  %v67 = rtx.param "transformer.h.1.mlp.c_fc.bias" zeros seed 0 : tensor<128xf32>
  %v68 = rtx.linear %v65, %v66, %v67 : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32> -> tensor<2x8x128xf32>
  %v69 = rtx.gelu %v68 approximate : tensor<2x8x128xf32>
  %v70 = rtx.param "transformer.h.1.mlp.c_proj.weight" normal(0.0, 0.02) seed 0 : tensor<32x128xf32>
  %v71 = rtx.param "transformer.h.1.mlp.c_proj.bias" zeros seed 0 : tensor<32xf32>
  %v72 = rtx.linear %v69, %v70, %v71 : tensor<2x8x128xf32>, tensor<32x128xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  %v73 = rtx.add %v62, %v72 : tensor<2x8x32xf32>
  %v74 = rtx.param "transformer.ln_f.weight" ones : tensor<32xf32>
  %v75 = rtx.param "transformer.ln_f.bias" zeros : tensor<32xf32>
  %v76 = rtx.layernorm %v73, %v74, %v75 eps 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>
  %v77 = rtx.linear %v76, %v3 : tensor<2x8x32xf32>, tensor<37x32xf32> -> tensor<2x8x37xf32>
  %v78 = rtx.cross_entropy %v77, %v2 : tensor<2x8x37xf32>, tensor<2x8xi32> -> tensor<f32>
  return %v78 : tensor<f32>
}
