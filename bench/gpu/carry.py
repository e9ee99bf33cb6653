"""What a program built here needs on the GPU machine, and finding it there.

The GPU machines lent to this project have CUDA, cuBLAS and NCCL (the
toolkit's and pip's nvidia-* packages) but neither LLVM/MLIR nor Gloo,
hiredis or OpenBLAS, and nothing can be installed there. So programs are
built here, and the shared libraries they load beyond libc, libstdc++,
CUDA and NCCL travel with them in a tarball (pack_libraries); on the GPU
machine, library_environment unpacks it and points LD_LIBRARY_PATH at it
and at CUDA's and NCCL's folders. Standard library only.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

# Libraries the GPU machine has itself (the system's, or CUDA's and NCCL's,
# found by library_environment): everything else travels.
PROVIDED = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|"
                      r"libcuda|libcudart|libcublas|libcublasLt|libnccl)\.")


def run(cmd, **kwargs):
    """Runs `cmd` after printing it; a failure raises."""
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def needed_libraries(program, env=None):
    """(path of each library `program` loads that the GPU machine lacks,
    names ldd could not find)."""
    if shutil.which("ldd") is None:
        print("no ldd here: the libraries are not checked before the run", flush=True)
        return [], []
    out = subprocess.run(["ldd", program], capture_output=True, text=True, env=env).stdout
    paths, missing = [], []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+))", line)
        if not m:
            continue
        if m.group(2) == "not found":
            missing.append(m.group(1))
        elif not PROVIDED.match(m.group(1)):
            paths.append(m.group(3))
    return paths, missing


def pack_libraries(programs, tarball):
    """Packs what `programs` load beyond the GPU machine's own libraries into
    `tarball`; returns how many. Exits when a program lacks one here."""
    libraries = {}  # by the name the programs load
    for program in programs:
        paths, missing = needed_libraries(program)
        if missing:
            sys.exit(f"{program} needs libraries this machine lacks: {', '.join(missing)}")
        libraries.update((os.path.basename(p), os.path.realpath(p)) for p in paths)
    with tarfile.open(tarball, "w:xz") as tar:
        for name, path in sorted(libraries.items()):
            tar.add(path, arcname=name)
    return len(libraries)


def gpu_library_dirs():
    """Where CUDA's and NCCL's libraries may be: the toolkit and pip's
    nvidia-* packages (on sys.path of this Python)."""
    dirs = []
    for pattern in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib",
                    "/usr/local/cuda-*/lib64", "/usr/local/cuda-*/lib"):
        dirs += glob.glob(pattern)
    for entry in sys.path:
        dirs += glob.glob(os.path.join(entry, "nvidia", "*", "lib"))
        dirs += glob.glob(os.path.join(entry, "nvidia", "cu*", "lib"))
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def library_environment(tarball, programs):
    """Unpacks `tarball` beside it and returns os.environ with LD_LIBRARY_PATH
    naming it and CUDA's and NCCL's folders. Exits naming a library that
    `programs` still cannot find."""
    libs = os.path.join(os.path.dirname(tarball), "libs")
    shutil.rmtree(libs, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        try:
            tar.extractall(libs, filter="data")
        except TypeError:  # Pythons before 3.11.4 have no extraction filters
            tar.extractall(libs)
    path = [libs] + gpu_library_dirs() + os.environ.get("LD_LIBRARY_PATH", "").split(":")
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(p for p in path if p))
    for program in programs:
        _, missing = needed_libraries(program, env)
        if missing:
            sys.exit(f"{program}: cannot find {', '.join(missing)} (looked in {env['LD_LIBRARY_PATH']})")
    return env


def add_prepared_args(parser, root, default_out):
    """--out (the prepared folder, which travels) and --emulate, the flags
    every bench/gpu script's two phases share."""
    parser.add_argument("--out", default=os.path.join(root, default_out),
                        help=f"the prepared programs and libraries (default {default_out}, which git ignores: "
                             "name it in the device tool's carry)")
    parser.add_argument("--emulate", action="store_true",
                        help="prepare: build the CUDA program for the host emulation of the GPU runtime")
