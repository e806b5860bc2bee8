"""Build of the optional compiled kernels (everything else is in pyproject.toml).

``runetensor._backend._kernels`` is optional: if the compiler is missing or
fails, the install still succeeds and the backend takes its NumPy paths.
No ``-march``: the wheel must run on any x86-64 / aarch64 machine; the
compiler's auto-vectorisation at the baseline instruction set is enough, and the
AVX2 / AVX-512 loops are function versions chosen at run time.
"""
import sys

from setuptools import Extension, setup

_ARGS = [] if sys.platform == "win32" else ["-O3", "-std=c99", "-fno-math-errno"]

setup(ext_modules=[Extension("runetensor._backend._kernels",
                             # the AVX-512 loops: per-function target attributes, chosen at run time
                             ["runetensor/_backend/_kernels.c", "runetensor/_backend/_kernels_avx512.c"],
                             depends=["runetensor/_backend/_kernels_avx512.h"],
                             extra_compile_args=_ARGS, optional=True),
                   # rt.nn's stride-1 float32 convolutions (without it, their NumPy paths run); GNU C for the
                   # vector types, contracted multiply-adds (FMA in the AVX2 / AVX-512 versions chosen at run time)
                   Extension("runetensor._backend._conv_kernels", ["runetensor/_backend/_conv_kernels.c"],
                             extra_compile_args=[] if sys.platform == "win32" else
                             ["-O3", "-std=gnu99", "-ffp-contract=fast", "-fno-math-errno"], optional=True),
                   # rt.jit's kernel caller (without it, ctypes calls the kernels: slower per call)
                   Extension("runetensor._backend._jitcall", ["runetensor/_backend/_jitcall.c"],
                             extra_compile_args=_ARGS, optional=True),
                   # Tensor's operators on small NumPy tensors in C (without it, the Python methods run)
                   Extension("runetensor._backend._dispatch", ["runetensor/_backend/_dispatch.c"],
                             extra_compile_args=_ARGS, optional=True)])
