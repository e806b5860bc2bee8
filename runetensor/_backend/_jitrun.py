"""Calling the C kernels that ``rt.jit`` compiles (``runetensor._jit._fuse``) on NumPy arrays.

A kernel is ``kernel(n0, n1, x0p, x0a[, x0b], ..., y0p, ...[, red])``: a 2-d loop over the group's
shape collapsed to ``(n0, n1)`` (for a reduction: kept rows by reduced elements).  Input ``j`` is
read at ``x{j}p[r * a + c * b]`` in elements, where ``b`` is baked into the source when it is 1 (unit
stride) or 0 (broadcast along the row) and passed otherwise; results are written C-contiguous, and a
reduction writes one double per row into ``red``.  Large loops are split into chunks on the thread
pool (ctypes releases the GIL during the call): rows, or column ranges of a single row (each range
then gives its own partial reduction, combined in a fixed order).
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from . import _fast
from ._parallel import chunk_ranges, get_num_threads, parallel_for
from .numpy_backend import NP_DTYPE

_VP = ctypes.c_void_p
_L = ctypes.c_long
_PAR_MIN = 1 << 16


def as2d_strides(x: np.ndarray, shape: tuple, n0: int, n1: int) -> tuple | None:
    """The byte strides of ``x`` broadcast to ``shape`` and viewed as ``(n0, n1)``, or None."""
    v = np.broadcast_to(x, shape).view()
    try:
        v.shape = (n0, n1)
    except AttributeError:
        return None
    return v.strides


def c_layout_as2d_strides(ishape: tuple, isz: int, shape: tuple, n0: int, n1: int) -> tuple | None:
    """``as2d_strides`` of a C-contiguous array of ``ishape`` with items of ``isz`` bytes (no data needed)."""
    st = []
    acc = isz
    for n in reversed(ishape):
        st.append(acc)
        acc *= max(n, 1)
    fake = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), tuple(ishape), tuple(reversed(st)),
                                           writeable=False)
    return as2d_strides(fake, shape, n0, n1)


def can_donate(h: Any, others: list, consts: list) -> bool:
    """Whether the NumPy handle ``h`` may receive a result in place: a C-contiguous, writable array that
    owns its memory and shares none with the other arguments or the program's captured handles."""
    if type(h) is not np.ndarray:
        return False
    fl = h.flags
    if not (fl.c_contiguous and fl.writeable and fl.owndata):
        return False
    if any(isinstance(x, np.ndarray) and np.may_share_memory(h, x) for x in others):
        return False
    return not any(isinstance(c, np.ndarray) and np.may_share_memory(h, c) for c in consts)


def _as2d(x: Any, shape: tuple, n0: int, n1: int, dt: np.dtype, pat: str) -> np.ndarray | None:
    if not isinstance(x, np.ndarray) or x.dtype != dt:
        return None
    v = np.broadcast_to(x, shape).view()
    try:
        v.shape = (n0, n1)
    except AttributeError:  # the strides do not collapse: one contiguous copy
        v = np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(n0, n1)
    b = v.strides[1]
    if (pat == "1" and b != dt.itemsize and n1 > 1) or (pat == "0" and b != 0 and n1 > 1) or \
            b % dt.itemsize or v.strides[0] % dt.itemsize:
        return None
    return v


def make_runner(fn: Any, shape: tuple, in_dts: list, pats: list, out_dts: list, loop: tuple,
                red: tuple | None, fallback: Callable) -> Callable:
    """A program step running kernel ``fn`` on its operands; returns its results (the stored
    intermediates, then the reduction's result if ``red = (op, dtype, result shape, all_axes)``).
    ``fallback(*operands)`` runs the original steps (operands of an unexpected layout)."""
    dts = [np.dtype(NP_DTYPE[d]) for d in in_dts]
    odts = [np.dtype(NP_DTYPE[d]) for d in out_dts]
    n0, n1 = loop
    total = n0 * n1
    gen = [p == "g" for p in pats]

    def run(*xs: Any) -> tuple:
        ins = []
        for x, dt, p in zip(xs, dts, pats):
            v = _as2d(x, shape, n0, n1, dt, p)
            if v is None:
                return fallback(*xs)
            ins.append(v)
        outs = [_fast.empty(shape, dt) for dt in odts]  # recycled buffers when free
        ip = [(x.ctypes.data, x.dtype.itemsize, x.strides[0] // x.dtype.itemsize,
               x.strides[1] // x.dtype.itemsize, g) for x, g in zip(ins, gen)]
        op = [(o.ctypes.data, o.dtype.itemsize) for o in outs]
        nthr = get_num_threads()
        split_cols = red is not None and n0 == 1 or n0 == 1
        if total < _PAR_MIN or nthr <= 1:
            rngs = [(0, n0, 0, n1)]
        elif split_cols:
            rngs = [(0, 1, a, b) for a, b in chunk_ranges(n1, max(_PAR_MIN, -(-n1 // (4 * nthr))))]
        else:
            rows = max(1, _PAR_MIN // max(n1, 1))
            rngs = [(a, b, 0, n1) for a, b in chunk_ranges(n0, rows)]
        parts = np.empty(n0 if not split_cols else len(rngs), np.float64) if red is not None else None

        def call(i: int) -> None:
            r0, r1, c0, c1 = rngs[i]
            args: list = [_L(r1 - r0), _L(c1 - c0)]
            for p, isz, a, b, g in ip:
                args.append(_VP(p + (r0 * a + c0 * b) * isz))
                args.append(_L(a))
                if g:
                    args.append(_L(b))
            # outputs are written at [r * (c1 - c0) + c]: only valid as one block per row range
            args += [_VP(p + (r0 * n1 + c0) * isz) for p, isz in op]
            if parts is not None:
                args.append(_VP(parts.ctypes.data + 8 * (i if split_cols else r0)))
            fn(*args)

        if len(rngs) == 1:
            call(0)
        else:
            parallel_for(call, len(rngs))
        if red is None:
            return tuple(outs)
        rop, rdt, rshape, all_axes = red
        if all_axes or split_cols:
            if rop == "sum":
                r = np.add.reduce(parts)  # pairwise over rows / column ranges, in double
            else:
                r = parts.max() if rop == "max" else parts.min()  # NaN propagates
            r = np.asarray(r)
        else:
            r = parts
        r = np.asarray(r.astype(np.dtype(NP_DTYPE[rdt])).reshape(rshape))
        return (*outs, r)

    return run


def make_row_runner(fn: Any, n_rows: int, ext: list, bufs: list, out_bufs: list, fallback: Callable) -> Callable:
    """A program step running a row-chain kernel ``kernel(n0, e0p, e0a, e0b, ..., b0, b1, ...)``:
    several fused loops over the same ``n_rows`` rows, all run for one row before the next.  ``ext``:
    per external operand ``(group shape, (n0, n1) loop, dtype, pattern)``; ``bufs``: ``(shape, dtype)``
    of the buffers it fills (C-contiguous, ``n_rows`` rows each); returns ``bufs[i]`` for ``i`` in
    ``out_bufs``.  Rows are split over the thread pool; ``fallback(*operands)`` runs the steps one by
    one (operands of an unexpected layout)."""
    info = [(shape, n0, n1, np.dtype(NP_DTYPE[d]), p) for shape, (n0, n1), d, p in ext]
    bd = [(shape, np.dtype(NP_DTYPE[d])) for shape, d in bufs]
    row_elems = [max(1, int(np.prod(shape)) // n_rows) for shape, _ in bd]
    work = sum(n0 * n1 for _, n0, n1, _, _ in info)

    def run(*xs: Any) -> tuple:
        ins = []
        for x, (shape, n0, n1, dt, p) in zip(xs, info):
            v = _as2d(x, shape, n0, n1, dt, p)
            if v is None:
                return fallback(*xs)
            ins.append(v)
        outs = [_fast.empty(shape, dt) for shape, dt in bd]
        ip = [(x.ctypes.data, x.dtype.itemsize, x.strides[0] // x.dtype.itemsize,
               x.strides[1] // x.dtype.itemsize) for x in ins]
        op = [(o.ctypes.data, o.dtype.itemsize, m) for o, m in zip(outs, row_elems)]
        nthr = get_num_threads()
        if work < _PAR_MIN or nthr <= 1:
            rngs = [(0, n_rows)]
        else:
            rngs = chunk_ranges(n_rows, max(1, -(-n_rows // (4 * nthr))))

        def call(i: int) -> None:
            r0, r1 = rngs[i]
            args: list = [_L(r1 - r0)]
            for p, isz, a, b in ip:
                args += [_VP(p + r0 * a * isz), _L(a), _L(b)]
            args += [_VP(p + r0 * m * isz) for p, isz, m in op]
            fn(*args)

        if len(rngs) == 1:
            call(0)
        else:
            parallel_for(call, len(rngs))
        return tuple(outs[i] for i in out_bufs)

    return run
