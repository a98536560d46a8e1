"""Build the combined attention extension with PyTorch's own tooling (torch.utils.cpp_extension).

    python3 setup.py build_ext --inplace      # after: tuner export ... -o gen/attention.h

gen_builds.py writes one translation unit per family build the header lists (gen/F_i.cu); each
is compiled here with nvcc at the architecture its run was tuned for (flash_attn at sm_90,
flash_fwd_sm90 with -gencode arch=compute_90a,code=sm_90a: wgmma exists only there), in
parallel, and only when stale. CUDAExtension then builds ext.cpp and links those objects into
one module: its nvcc flags are one list for every source, which cannot say two architectures.
"""

import concurrent.futures
import os
import shutil
import subprocess
import sys

from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.environ.get("ATTENTION_HEADER_DIR", os.path.join(HERE, "gen"))
HEADER = os.path.join(GEN, "attention.h")
INCLUDES = [GEN, HERE, os.path.join(ROOT, "kernels", "templates"),
            os.path.join(ROOT, "kernels", "include")]
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo", "-Xcompiler", "-fPIC"]

sys.path.insert(0, HERE)
import gen_builds  # noqa: E402

if not os.path.exists(HEADER):
    raise SystemExit("no %s: run 'tuner export --per-shape --run A --run B --prefix attention -o'"
                     " first (see README.md)" % HEADER)


def newest_input(cu):
    """The newest of what a build includes: its .cu, the header, the launchers, the templates."""
    deps = [cu, HEADER] + [os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".cuh")]
    for d in INCLUDES[2:]:
        deps += [os.path.join(d, f) for f in os.listdir(d) if f.endswith((".cu", ".cuh", ".h"))]
    return max(os.path.getmtime(p) for p in deps)


def compile_build(build):
    cu, arch = build
    obj = cu[:-3] + ".o"
    if os.path.exists(obj) and os.path.getmtime(obj) >= newest_input(cu):
        return obj, "up to date"
    cmd = [os.path.join(CUDA_HOME, "bin", "nvcc")] + NVCC_FLAGS + arch + \
        ["-I" + d for d in INCLUDES] + ["-c", "-o", obj, cu]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("%s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return obj, " ".join(arch)


builds = gen_builds.generate(HEADER, GEN)
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    objects = []
    for obj, how in pool.map(compile_build, builds):
        print("nvcc %s: %s" % (os.path.relpath(obj, HERE), how))
        objects.append(obj)

setup(
    name="tuned_attention",
    ext_modules=[CUDAExtension(
        name="tuned_attention",
        sources=["ext.cpp"],
        include_dirs=INCLUDES,
        extra_objects=objects,
        extra_compile_args={"cxx": ["-O2"]},
        depends=objects,
    )],
    cmdclass={"build_ext": BuildExtension.with_options(
        use_ninja=shutil.which("ninja") is not None)},
)
