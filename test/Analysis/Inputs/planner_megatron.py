"""Megatron-LM's published configurations (Narayanan et al., "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
SC 2021, Table 1) priced by rtx's cost model on the dgx-a100 profile:
the predicted throughput of Megatron's own plan (tensor 8, its pipeline
degree, data the rest, micro-batch 1, full recompute, 1F1B, no ZeRO, no
sequence parallelism) must be within 15% of the achieved TFLOP/s per GPU
the paper reports, and the planner's own choice on the same model, GPUs
and batch must be at least as fast under the model.

usage: planner_megatron.py RTX_OPT WORKDIR NAME MODEL GPUS BATCH TP PP TFLOPS
"""
import json
import subprocess
import sys


def run(rtx_opt, model, report, options):
    subprocess.run([rtx_opt, model, f"-rtx-auto-partition=profile=dgx-a100 mixed-precision=true "
                    f"vary-micro-batch=true remarks=false report-file={report} {options}", "-o", "/dev/null"],
                   check=True)
    with open(report) as f:
        return json.load(f)


def main():
    rtx_opt, work, name, model = sys.argv[1:5]
    gpus, batch, tp, pp = (int(a) for a in sys.argv[5:9])
    published = float(sys.argv[9])
    base = f"devices={gpus} global-batch={batch}"
    megatron = run(rtx_opt, model, f"{work}/{name}-megatron.json",
                   f"{base} tp={tp} pp={pp} zero=0 recompute=full sequence-parallel=false "
                   "micro-batch-size=1 schedule=1f1b")
    chosen = run(rtx_opt, model, f"{work}/{name}-search.json", base)
    m, c = megatron["plan"]["predicted"], chosen["plan"]["predicted"]
    tflops = m["hardware_flops_per_device"] / 1e12
    error = tflops / published - 1
    print(f"{name}: Megatron's plan predicted {tflops:.1f} TFLOP/s per GPU, published {published:.0f} "
          f"({100 * error:+.1f}%) {'WITHIN 15%' if abs(error) <= 0.15 else 'OFF'}")
    faster = c["step_time_s"] <= m["step_time_s"] * (1 + 1e-9)
    print(f"{name}: search chose {chosen['plan']['distribute']} at {c['step_time_s']:.3f} s per step vs "
          f"Megatron's {m['step_time_s']:.3f} s {'AT LEAST AS FAST' if faster else 'SLOWER'}")
    print(f"{name}: search took {chosen['search']['probe_seconds'] + chosen['search']['search_seconds']:.2f} s")


if __name__ == "__main__":
    main()
