# -*- Python -*-
# lit configuration for rtx's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "RTX"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rtx_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "lib", "Unit", "Inputs"]

# Variables bound in a CHECK line do not leak into the next CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

config.substitutions.append(("%rtx_src_root", config.rtx_src_root))
config.substitutions.append(("%rtx_obj_root", config.rtx_obj_root))
# LSAN_OPTIONS: the sanitizer stage's leak suppressions (lit passes ASAN_ and
# UBSAN_OPTIONS itself).
# HWLOC_COMPONENTS: the sanitizer stage runs rtx-topology without hwloc's PCI
# plugin (scripts/sanitize.sh says why).
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "LSAN_OPTIONS",
                                     "HWLOC_COMPONENTS"])
llvm_config.use_default_substitutions()

tool_dirs = [config.rtx_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["rtx-opt", "rtx-run", "rtx-launch", "rtx-translate", "rtx-parse-fuzzer"], tool_dirs)

# Debian's python3 has numpy (and later torch); a pyenv python on PATH may not.
config.substitutions.append(("%python", "/usr/bin/python3"))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.rtx_tools_dir, append_path=True)

if config.rtx_have_fuzzer:
    config.available_features.add("fuzzer")

# The sanitizer build (scripts/sanitize.sh, -DRTX_SANITIZE=address,...): ASan
# reserves terabytes of address space for its shadow memory, so a test that
# limits virtual memory cannot run under it.
if "address" in config.rtx_sanitize.split(","):
    config.available_features.add("asan")

# nvcc and the CUDA runtime (librtxrt_cuda) were found at configure time.
if config.rtx_have_cuda:
    config.available_features.add("cuda")

import shutil
if shutil.which("redis-server") and shutil.which("redis-cli"):
    config.available_features.add("redis")
# A real Prometheus server (Debian's prometheus) scrapes a running program.
if shutil.which("prometheus"):
    config.available_features.add("prometheus")

# Open MPI's launcher (openmpi-bin) and torchrun (python3-torch): the
# launcher-environment tests.
if shutil.which("mpirun"):
    config.available_features.add("mpirun")
if os.path.isfile("/usr/lib/python3/dist-packages/torch/distributed/run.py"):
    config.available_features.add("torchrun")

# Network namespaces (root with CAP_NET_ADMIN and iproute2's `ip`): the
# multi-node tests run two "machines" joined by a veth pair.
def _can_make_network_namespaces():
    import subprocess
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    probe = f"rtx-lit-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return made

if _can_make_network_namespaces():
    config.available_features.add("netns")
else:
    lit_config.note("network namespaces cannot be made here (needs root and iproute2): "
                    "the multi-node tests are UNSUPPORTED")
