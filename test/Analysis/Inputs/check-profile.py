"""Checks a hardware profile written by rtx-topology and prints a summary.

    check-profile.py PROFILE.json [--host] [--cpu-ranks N]

Checks what rtx's planner requires of an "rtx-hardware-profile/1" profile
(lib/Analysis/HardwareProfile.cpp: positive figures, a square intra_node
matrix of devices_per_node rows with "self" on the diagonal and classes of
link_classes elsewhere, inter_node naming a class) plus rtx-topology's own
sections (network_interfaces, cpu), exits 1 with the first problem, and
prints one line per fact for FileCheck. --host: the profile is of this
machine, so its kind is "gpu" exactly when `nvidia-smi -L` lists GPUs, and a
CPU profile has one rank per physical core unless --cpu-ranks N says N.


    kind gpu
    model NVIDIA A100-SXM4-80GB
    ...
    row 0: self nvswitch ...
"""

import argparse
import json
import shutil
import subprocess
import sys


def fail(message: str) -> None:
    print(f"check-profile: {message}", file=sys.stderr)
    sys.exit(1)


def positive(value, where: str) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        fail(f"{where}: expected a positive number, got {value!r}")


def host_has_gpus() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return listed.returncode == 0 and "GPU" in listed.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--host", action="store_true")
    parser.add_argument("--cpu-ranks", type=int)
    args = parser.parse_args()
    with open(args.profile) as f:
        p = json.load(f)
    if p.get("schema") != "rtx-hardware-profile/1":
        fail(f"schema: {p.get('schema')!r}")
    for key in ("name", "description"):
        if not isinstance(p.get(key), str) or not p[key]:
            fail(f"{key}: expected a non-empty string")
    if not p.get("sources") or not all(isinstance(s, str) for s in p["sources"]):
        fail("sources: expected a list of strings")

    d = p["device"]
    if d["kind"] not in ("cpu", "gpu"):
        fail(f"device.kind: {d['kind']!r}")
    if not isinstance(d["memory_bytes"], int):
        fail("device.memory_bytes: expected an integer")
    positive(d["memory_bytes"], "device.memory_bytes")
    for dtype in ("f32", "bf16", "f16"):
        positive(d["peak_flops"][dtype], f"device.peak_flops.{dtype}")
    positive(d["memory_bandwidth"], "device.memory_bandwidth")
    if not 0 < d["matmul_efficiency"] <= 1:
        fail("device.matmul_efficiency: expected a share in (0, 1]")
    positive(d["op_overhead_s"], "device.op_overhead_s")

    n = p["devices_per_node"]
    if not isinstance(n, int) or n < 1:
        fail("devices_per_node: expected a positive integer")
    classes = p["link_classes"]
    for name, link in classes.items():
        positive(link["alpha_s"], f"link_classes.{name}.alpha_s")
        positive(link["beta_bytes_per_s"], f"link_classes.{name}.beta_bytes_per_s")
    rows = p["intra_node"]
    if len(rows) != n or any(len(row) != n for row in rows):
        fail(f"intra_node: expected {n} x {n}")
    for i, row in enumerate(rows):
        for j, name in enumerate(row):
            if (i == j) != (name == "self"):
                fail(f"intra_node[{i}][{j}]: {name!r}")
            if i != j and name not in classes:
                fail(f"intra_node[{i}][{j}]: {name!r} is not in link_classes")
            if name != rows[j][i]:
                fail(f"intra_node is not symmetric at [{i}][{j}]")
    if p["inter_node"] not in classes:
        fail(f"inter_node: {p['inter_node']!r} is not in link_classes")
    used = {name for row in rows for name in row} | {p["inter_node"]}
    if set(classes) - used:
        fail(f"link_classes: unused {sorted(set(classes) - used)}")

    for nic in p["network_interfaces"]:
        if nic["kind"] not in ("ethernet", "infiniband") or nic["speed_bits_per_s"] < 0:
            fail(f"network_interfaces: {nic!r}")
    cpu = p["cpu"]
    for key in ("sockets", "numa_nodes", "physical_cores", "logical_cpus"):
        positive(cpu[key], f"cpu.{key}")
    if cpu["physical_cores"] > cpu["logical_cpus"]:
        fail("cpu: more physical cores than logical CPUs")

    if args.host:
        expected = "gpu" if host_has_gpus() else "cpu"
        if d["kind"] != expected:
            fail(f"device.kind: {d['kind']!r} on a host whose kind is {expected!r}")
        if d["kind"] == "cpu":
            ranks = args.cpu_ranks or cpu["physical_cores"]
            if n != ranks:
                fail(f"devices_per_node: {n}, expected {ranks}")
            if set(classes) - {"shared_memory", "ethernet", "infiniband"}:
                fail(f"link_classes of a CPU profile: {sorted(classes)}")
        if not any("hwloc" in s for s in p["sources"]):
            fail("sources: hwloc is not named")

    print("kind", d["kind"])
    print("model", d["model"])
    print("memory_bytes", d["memory_bytes"])
    print("peak_flops", " ".join(f"{k}={v:g}" for k, v in d["peak_flops"].items()))
    print("memory_bandwidth", f"{d['memory_bandwidth']:g}")
    print("matmul_efficiency", d["matmul_efficiency"], "op_overhead_s", f"{d['op_overhead_s']:g}")
    print("devices_per_node", n)
    for name, link in classes.items():
        print(f"class {name}: alpha {link['alpha_s']:g} beta {link['beta_bytes_per_s']:g}")
    for i, row in enumerate(rows):
        print(f"row {i}: " + " ".join(row))
    print("inter_node", p["inter_node"])
    print("cpu", " ".join(f"{k}={cpu[k]}" for k in ("sockets", "numa_nodes", "physical_cores", "logical_cpus")))


if __name__ == "__main__":
    main()
