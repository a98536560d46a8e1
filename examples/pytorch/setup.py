"""Build the tuned flash_fwd extension with PyTorch's own tooling (torch.utils.cpp_extension).

    python3 setup.py build_ext --inplace      # after: tuner export -o gen/flash_fwd_config.h

Ninja is used when it is installed, else setuptools compiles the sources one by one
(BuildExtension.with_options(use_ninja=False)). TORCH_CUDA_ARCH_LIST picks the GPU
architectures (9.0 for an H100); the template is compiled unchanged from kernels/templates.
"""

import os
import shutil

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GEN = os.environ.get("FLASH_FWD_HEADER_DIR", os.path.join(HERE, "gen"))

if not os.path.exists(os.path.join(GEN, "flash_fwd_config.h")):
    raise SystemExit("no %s/flash_fwd_config.h: run 'tuner export -o' first (see README.md)" % GEN)

# torch compiles CUDA with __CUDA_NO_HALF_OPERATORS__ and friends; the template uses the
# operators of cuda_fp16.h, as NVRTC compiles it in the tuner.
UNDEF = ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
         "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__"]

setup(
    name="tuned_flash_fwd",
    ext_modules=[CUDAExtension(
        name="tuned_flash_fwd",
        sources=["ext.cpp", "flash_fwd_d64.cu", "flash_fwd_d128.cu"],
        include_dirs=[GEN, os.path.join(ROOT, "kernels", "templates"),
                      os.path.join(ROOT, "kernels", "include")],
        extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O3", "-std=c++17", "-lineinfo"] + UNDEF},
    )],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=shutil.which("ninja") is not None)},
)
