"""For every objective, the pruned search must choose a plan whose
objective value is the exhaustive optimum's (and, where the objective ties,
whose predicted step time is within 2% of it), under the same cost model.

usage: planner_optimality.py RTX_OPT MODEL.mlir WORKDIR DEVICES...
"""
import json
import subprocess
import sys
from pathlib import Path

OBJECTIVES = ["throughput", "memory", "compute-balanced", "communication", "hybrid", "tp-first", "pp-first"]


def plan(rtx_opt, model, report, devices, objective, exhaustive):
    options = (f"profile=dgx-a100 devices={devices} objective={objective} global-batch={4 * devices} "
               f"vary-micro-batch=true remarks=false report-file={report}"
               + (" exhaustive=true" if exhaustive else ""))
    subprocess.run([rtx_opt, model, f"-rtx-auto-partition={options}", "-o", "/dev/null"], check=True)
    return json.loads(Path(report).read_text())


def main():
    rtx_opt, model, work = sys.argv[1:4]
    failures = 0
    for devices in map(int, sys.argv[4:]):
        for objective in OBJECTIVES:
            fast = plan(rtx_opt, model, f"{work}/fast.json", devices, objective, False)
            full = plan(rtx_opt, model, f"{work}/full.json", devices, objective, True)
            (p1, s1), (p2, s2) = fast["plan"]["objective_value"], full["plan"]["objective_value"]
            t1 = fast["plan"]["predicted"]["step_time_s"]
            t2 = full["plan"]["predicted"]["step_time_s"]
            ok = p1 <= p2 + 1e-9 * abs(p2) and (p1 < p2 or t1 <= 1.02 * t2 or s1 <= s2 * 1.02)
            pruned = fast["search"]["priced"] < full["search"]["priced"]
            print(f"devices={devices} {objective}: chosen {p1:.6g} (step {t1:.6g} s) vs exhaustive {p2:.6g} "
                  f"(step {t2:.6g} s); priced {fast['search']['priced']} of {full['search']['priced']} "
                  f"{'OK' if ok else 'WORSE'}")
            failures += not ok
            if objective == "throughput" and not pruned:
                print(f"devices={devices}: the throughput search pruned nothing")
                failures += 1
    print("ALL OPTIMAL" if failures == 0 else f"{failures} FAILURE(S)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
