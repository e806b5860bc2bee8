"""Calling the C kernels that ``rt.jit`` compiles (``runetensor._jit._fuse``) on NumPy arrays.

A kernel is ``kernel(n0, n1, x0p, x0a, x0b, ..., y0p, ...)``: a 2-d loop over the result's shape
collapsed to ``(n0, n1)``; input ``j`` is read at ``x{j}p[r * a + c * b]`` (element strides, 0 for
a broadcast axis) and results are written C-contiguous.  Large loops are split into chunks on
the thread pool (ctypes releases the GIL during the call).
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import numpy as np

from . import _fast
from ._parallel import chunk_ranges, get_num_threads, parallel_for
from .numpy_backend import NP_DTYPE

_VP = ctypes.c_void_p
_L = ctypes.c_long
_PAR_MIN = 1 << 16


def _as2d(x: Any, shape: tuple, n0: int, n1: int, dt: Any) -> np.ndarray:
    if x.dtype != dt:
        x = x.astype(dt)
    b = np.broadcast_to(x, shape)
    v = b.view()
    try:
        v.shape = (n0, n1)
    except AttributeError:  # the strides do not collapse: one contiguous copy
        v = np.ascontiguousarray(b).reshape(n0, n1)
    return v


def make_runner(fn: Any, shape: tuple, dtype: Any, n_out: int) -> Callable:
    """A program step running kernel ``fn`` on its operands; returns the ``n_out`` results."""
    dt = np.dtype(NP_DTYPE[dtype])
    isz = dt.itemsize
    n1 = shape[-1] if shape else 1
    n0 = math.prod(shape[:-1]) if shape else 1
    total = n0 * n1

    def run(*xs: Any) -> tuple:
        ins = [_as2d(x, shape, n0, n1, dt) for x in xs]
        outs = [_fast.empty(shape, dt) for _ in range(n_out)]  # recycled buffers when free
        ip = [(x.ctypes.data, x.strides[0] // isz, x.strides[1] // isz) for x in ins]
        op = [o.ctypes.data for o in outs]

        def call(r0: int, r1: int, c0: int, c1: int) -> None:
            args: list = [_L(r1 - r0), _L(c1 - c0)]
            for p, a, b in ip:
                args += [_VP(p + (r0 * a + c0 * b) * isz), _L(a), _L(b)]
            # outputs are written at [r * (c1 - c0) + c]: only valid as one block per row range
            args += [_VP(p + (r0 * n1 + c0) * isz) for p in op]
            fn(*args)

        if total < _PAR_MIN or get_num_threads() <= 1:
            call(0, n0, 0, n1)
        elif n0 == 1:
            rngs = chunk_ranges(n1, max(_PAR_MIN, -(-n1 // (4 * get_num_threads()))))
            parallel_for(lambda i: call(0, 1, rngs[i][0], rngs[i][1]), len(rngs))
        else:
            rows = max(1, _PAR_MIN // max(n1, 1))
            rngs = chunk_ranges(n0, rows)
            parallel_for(lambda i: call(rngs[i][0], rngs[i][1], 0, n1), len(rngs))
        return tuple(outs)

    return run
