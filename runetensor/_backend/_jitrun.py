"""Calling the C kernels that ``rt.jit`` compiles (``runetensor._backend.fusion``) on NumPy arrays.

A kernel is ``kernel(n0, n1, x0p, x0a[, x0b], ..., y0p, ...[, red])``: a 2-d loop over the group's
shape collapsed to ``(n0, n1)`` (for a reduction: kept rows by reduced elements).  Input ``j`` is
read at ``x{j}p[r * a + c * b]`` in elements, where ``b`` is baked into the source when it is 1 (unit
stride) or 0 (broadcast along the row) and passed otherwise (:class:`Stride`); results are written C-contiguous, and a
reduction writes one double per row into ``red`` (argmax/argmin: one int64).  Large loops are split
into chunks on the thread pool (the GIL is released during the call): rows, or column ranges of a
single row (each range then gives its own partial sum/max/min, combined in a fixed order; an
arg-reduction's row is never split).

Calls go through the kernel's second entry point ``kernel_v(const int64_t *A)`` (the same arguments
in one vector).  Per layout of the operands (shapes, strides, dtypes: fixed for a program, so
computed once) a runner keeps the vector of each chunk with the operands' positions and byte
offsets; a call then only fills in data pointers, in C (``_jitcall.call``, built from
``_jitcall.c``) or, without that module, through ctypes.
"""
from __future__ import annotations

import _ctypes
import ctypes
import math
import operator
import os
import struct
import sys
import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import _blas, _fast
from ._parallel import chunk_ranges, get_num_threads, parallel_for
from .numpy_backend import NP_DTYPE

try:
    from ._jitcall import call as _xcall
except ImportError:  # not built: ctypes calls the kernels
    _xcall = None
try:  # a small step's whole call in C (layout check, buffers, kernel): _dispatch.c
    from ._dispatch import make_plan as _cplan
    from ._dispatch import run_plan as _crun
    from ._dispatch import take as _ctake
except ImportError:  # not built: the runners below do it in Python
    _cplan = _crun = _ctake = None

_PAR_MIN = 1 << 16
#: what a runner's layout cache is keyed by, per operand
_LAYOUT = operator.attrgetter("shape", "strides", "dtype")


class Stride:
    """How a kernel reads an operand along its rows (baked into its C source at trace time).

    ``UNIT``: stride 1, element ``c`` of the row; ``BROADCAST``: stride 0, one value per row;
    ``GENERAL``: a stride the kernel takes as an argument at run time.

    >>> Stride.UNIT in Stride.ALL and Stride.GENERAL != Stride.BROADCAST
    True
    """

    __slots__ = ()
    UNIT = "unit"
    BROADCAST = "broadcast"
    GENERAL = "general"
    ALL = (UNIT, BROADCAST, GENERAL)


class Reduction:
    """The reduction that ends a fused loop: what a runner needs to finish its per-row partials.

    ``op``: ``"sum"``/``"max"``/``"min"`` (per row, or of everything when ``whole``), ``"argmax"``/
    ``"argmin"`` (one int64 per row), ``"colsum"``/``"colmax"``/``"colmin"`` (over leading axes: one
    value per column); ``dtype``: the result's runetensor dtype; ``shape``: the result's shape;
    ``whole``: every axis of the loop is reduced (one value).

    >>> import runetensor as rt
    >>> Reduction("sum", rt.float32, (), True)
    Reduction('sum', float32, (), whole=True)
    """

    __slots__ = ("op", "dtype", "shape", "whole")

    def __init__(self, op: str, dtype: Any, shape: tuple, whole: bool):
        self.op = op
        self.dtype = dtype
        self.shape = tuple(shape)
        self.whole = bool(whole)

    def __repr__(self) -> str:
        return f"Reduction({self.op!r}, {self.dtype}, {self.shape}, whole={self.whole})"


def _unload(handle: int) -> None:
    if not sys.is_finalizing():
        _ctypes.dlclose(handle)


class Kernel:
    """A loaded kernel: ``fn_v`` (ctypes function of ``kernel_v``) and ``addr`` (its address).

    The library is unloaded (``dlclose``) when the kernel object is freed: every program step that
    can call it holds it (and a call in progress holds it in its frame), so nothing can still jump
    to ``addr`` then.  ``lib`` must come from its own ``dlopen`` (``ctypes.CDLL``) and have no other
    user.

    Raises:
        AttributeError: the library has no ``kernel_v`` or ``kernel`` entry point (nothing is kept
            loaded then).
    """

    __slots__ = ("fn_v", "addr", "lib", "__weakref__")

    def __init__(self, lib: Any):
        try:
            # item access: no attribute cached on ``lib`` (no reference cycle: freed by refcount)
            self.fn_v = lib["kernel_v"]
            lib["kernel"]
        except AttributeError:
            self.fn_v = None
            if hasattr(_ctypes, "dlclose"):
                _ctypes.dlclose(lib._handle)
            raise
        self.lib = lib
        self.fn_v.restype = None
        self.fn_v.argtypes = [ctypes.c_void_p]
        self.addr = ctypes.cast(self.fn_v, ctypes.c_void_p).value
        if hasattr(_ctypes, "dlclose"):
            weakref.finalize(self, _unload, lib._handle).atexit = False


class _Chunk:
    """One kernel call of a runner: the argument vector and where the operands' pointers go."""

    __slots__ = ("vals", "vec", "pos", "offs")

    def __init__(self, vals: list, pos: tuple, offs: tuple):
        self.vals = vals
        self.vec = struct.pack(f"{len(vals)}q", *vals)
        self.pos = pos
        self.offs = offs if any(offs) else None


#: results below this size are recycled by their own step (larger ones: the backend's buffer pool)
HOLD_MAX = 1 << 20
_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Outputs:
    """The result buffers of one program step, reused by the step's later calls once nothing else
    refers to them (the caller dropped the result and every view of it): a step then writes into
    memory that is already mapped (a fresh buffer costs a page fault per 4 KiB on first touch, more
    than the small kernels' own work).  Up to ``RING`` buffers per result are kept, so that a loop
    feeding each call's result to the next (``params = step(params, batch)``) finds the one of two
    calls ago free.  Results of ``HOLD_MAX`` bytes or more come from the backend's shared pool
    instead (``_fast.empty``)."""

    __slots__ = ("specs", "held", "cspec")
    RING = 2

    def __init__(self, specs: list):
        self.specs = [(tuple(shape), np.dtype(dt)) for shape, dt in specs]
        self.held: list = [[] for _ in specs]
        # the same rule for _dispatch.take: (shape, dtype, how to make one, how many to keep)
        self.cspec = tuple((shape, dt, _pool_empty, 0) if math.prod(shape) * dt.itemsize >= HOLD_MAX
                           else (shape, dt, np.empty, self.RING) for shape, dt in self.specs)

    def take(self) -> list:
        if _ctake is not None:  # in C: the reference check and the hand-out under the GIL, no lock
            return _ctake(self.held, self.cspec)
        res = []
        with _LOCK:  # two threads running the program at once never get the same buffer
            for ring, (shape, dt) in zip(self.held, self.specs):
                for h in ring:
                    # references: the ring, h, getrefcount's argument (a view or a Tensor adds one)
                    if sys.getrefcount(h) == 3:
                        res.append(h)
                        break
                else:
                    if math.prod(shape) * dt.itemsize >= HOLD_MAX:
                        res.append(_fast.empty(shape, dt))
                        continue
                    h = np.empty(shape, dt)
                    if len(ring) < self.RING:
                        ring.append(h)
                    res.append(h)
        return res


def _pool_empty(shape: tuple, dt: np.dtype) -> np.ndarray:
    return _fast.empty(shape, dt)


def _copied(xs: tuple, copies: tuple) -> tuple:
    """``xs`` with operand ``j`` replaced by a C-contiguous copy broadcast to ``shape``, for each
    ``(j, shape)`` of ``copies`` (operands whose strides do not collapse to the kernel's 2-d loop)."""
    xl = list(xs)
    for j, shape in copies:
        xl[j] = np.ascontiguousarray(np.broadcast_to(xs[j], shape))
    return tuple(xl)


def _run_chunks(k: Kernel, chunks: list, arrs: tuple) -> None:
    """Kernel ``k`` on each chunk: one in this thread, several on the thread pool."""
    if len(chunks) == 1:
        _invoke(k, chunks[0], arrs)
    else:
        parallel_for(lambda i: _invoke(k, chunks[i], arrs), len(chunks))


def make_matmul(fallback: Callable, shape: tuple, dtype: Any) -> Callable:
    """A ``matmul`` step of a float32/float64 result of ``shape`` writing into its recycled buffer
    (``np.matmul(out=)`` through :mod:`._blas`: the same calls as without ``out``); ``fallback(a, b)`` otherwise."""
    dt = np.dtype(NP_DTYPE[dtype])
    bufs = Outputs([(shape, dt)])

    def run(a: Any, b: Any) -> Any:
        if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == dt and b.dtype == dt \
                and a.ndim >= 2 and b.ndim >= 2:
            out = bufs.take()[0]
            if out.shape == shape:
                _blas.matmul_into(a, b, out)  # BLAS single-threaded, large ones split on the pool
                return out
        return fallback(a, b)

    return run


def _invoke(k: Kernel, ch: _Chunk, arrs: tuple) -> None:
    if _xcall is not None and len(ch.vals) <= 512:
        _xcall(k.addr, ch.vec, ch.pos, arrs, ch.offs)
        return
    vals = list(ch.vals)
    offs = ch.offs or (0,) * len(arrs)
    for p, x, o in zip(ch.pos, arrs, offs):
        vals[p] = x.ctypes.data + o
    k.fn_v((ctypes.c_int64 * len(vals))(*vals))


def as2d_strides(x: np.ndarray, shape: tuple, n0: int, n1: int) -> tuple | None:
    """The byte strides of ``x`` broadcast to ``shape`` and viewed as ``(n0, n1)``, or None."""
    v = np.broadcast_to(x, shape).view()
    try:
        v.shape = (n0, n1)
    except AttributeError:
        return None
    return v.strides


def c_layout_as2d_strides(ishape: tuple, isz: int, shape: tuple, n0: int, n1: int,
                          strides: tuple | None = None) -> tuple | None:
    """``as2d_strides`` of an array of ``ishape`` with items of ``isz`` bytes, C-contiguous or with
    element ``strides`` (no data needed: a view that is never read)."""
    if strides is None:
        st = []
        acc = isz
        for n in reversed(ishape):
            st.append(acc)
            acc *= max(n, 1)
        bst = tuple(reversed(st))
    else:
        bst = tuple(x * isz for x in strides)
    fake = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), tuple(ishape), bst, writeable=False)
    return as2d_strides(fake, shape, n0, n1)


def round_to(f: float, dtype: Any) -> float:
    """Python float ``f`` rounded to ``dtype`` as NumPy converts it (nearest even; NaN keeps its sign),
    back as a Python float: the value a fused kernel's literal must have."""
    with np.errstate(all="ignore"):
        return float(np.asarray(f, np.float64).astype(NP_DTYPE[dtype]))


def can_donate(h: Any, others: list, consts: list) -> bool:
    """Whether the NumPy handle ``h`` may receive a result in place: a C-contiguous, writable array that
    owns its memory (or is a whole buffer of the backend's pool) and shares none with the other
    arguments or the program's captured handles."""
    if type(h) is not np.ndarray:
        return False
    fl = h.flags
    if not (fl.c_contiguous and fl.writeable and (fl.owndata or _fast.buffer_pool.owns(h))):
        return False
    if any(isinstance(x, np.ndarray) and np.may_share_memory(h, x) for x in others):
        return False
    return not any(isinstance(c, np.ndarray) and np.may_share_memory(h, c) for c in consts)


def _as2d(x: Any, shape: tuple, n0: int, n1: int, dt: np.dtype, pat: str) -> tuple | None:
    """``(view, copied)``: ``x`` broadcast to ``shape`` as an ``(n0, n1)`` view, or as a C-contiguous
    copy when its strides do not collapse; None when the kernel cannot read it (type, dtype, pattern)."""
    if type(x) is not np.ndarray or x.dtype != dt:
        return None
    v = np.broadcast_to(x, shape).view()
    copied = False
    try:
        v.shape = (n0, n1)
    except AttributeError:  # the strides do not collapse: one contiguous copy
        v = np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(n0, n1)
        copied = True
    b = v.strides[1]
    if (pat == Stride.UNIT and b != dt.itemsize and n1 > 1) or (pat == Stride.BROADCAST and b != 0 and n1 > 1) or \
            b % dt.itemsize or v.strides[0] % dt.itemsize:
        return None
    return v, copied


def _layouts(xs: tuple, specs: list) -> tuple | None:
    """Per operand ``(item size, row stride, column stride)`` (strides in items) as the kernel reads
    it, given ``specs[j] = (loop shape, n0, n1, dtype, Stride pattern)``, and the ``(j, shape)`` of the
    operands to copy first (see ``_copied``); None when an operand cannot be read (the fallback)."""
    lay = []
    copies = []
    for j, (x, (shape, n0, n1, dt, p)) in enumerate(zip(xs, specs)):
        r = _as2d(x, shape, n0, n1, dt, p)
        if r is None:
            return None
        v, copied = r
        if copied:
            copies.append((j, shape))
        isz = dt.itemsize
        lay.append((isz, v.strides[0] // isz, v.strides[1] // isz))
    return lay, tuple(copies)


def _plans(xs: tuple, plans: dict, make: Callable) -> Any:
    """The cached plan of operands ``xs`` (made by ``make(xs)`` on a new layout), or False."""
    try:
        key = tuple(map(_LAYOUT, xs))
    except AttributeError:
        return False
    ent = plans.get(key)
    if ent is None or ent is not False and ent[0] != get_num_threads():
        ent = plans[key] = make(xs)
    return ent


def make_runner(kern: Kernel, shape: tuple, in_dts: list, pats: list, out_dts: list, loop: tuple,
                red: Reduction | None, fallback: Callable, rows_only: bool = False) -> Callable:
    """A program step running ``kern`` on its operands; returns its results (the stored
    intermediates, then the reduction's result if ``red`` is a :class:`Reduction`).  ``pats``: per
    operand, its :class:`Stride` pattern.
    ``fallback(*operands)`` runs the original steps (operands of an unexpected layout).
    ``rows_only``: a row is never split over threads (a scan runs along it)."""
    dts = [np.dtype(NP_DTYPE[d]) for d in in_dts]
    odts = [np.dtype(NP_DTYPE[d]) for d in out_dts]
    n0, n1 = loop
    total = n0 * n1
    gen = [p == Stride.GENERAL for p in pats]
    plans: dict = {}
    bufs = Outputs([(shape, dt) for dt in odts])
    # the reduction's fields, read once here rather than at each call
    rop, rshape, all_axes = (red.op, red.shape, red.whole) if red is not None else ("", (), False)
    rnp = None if red is None else np.dtype(NP_DTYPE[red.dtype])  # the result's NumPy dtype
    arg = rop.startswith("arg")  # argmax/argmin: one int64 per row, rows not split
    # a reduction over leading axes: each chunk of rows fills its own row of n1 partials
    col = rop.startswith("col")
    rows_only = rows_only or arg or col
    pdt = np.dtype(np.int64) if arg else np.dtype(np.float64) if not col or rop == "colsum" else rnp

    specs = [(shape, n0, n1, dt, p) for dt, p in zip(dts, pats)]
    cplan: list = [None]  # the C plan of the last small layout (one chunk whatever the thread count)

    def make(xs: tuple) -> Any:
        r = _layouts(xs, specs)
        if r is None:
            return False
        lay, copies = r
        nthr = get_num_threads()
        split_cols = n0 == 1 and not rows_only
        if total < _PAR_MIN or nthr <= 1 or (rows_only and n0 == 1):
            rngs = [(0, n0, 0, n1)]
        elif split_cols:
            rngs = [(0, 1, a, b) for a, b in chunk_ranges(n1, max(_PAR_MIN, -(-n1 // (4 * nthr))))]
        else:
            rows = max(1, _PAR_MIN // max(n1, 1))
            rngs = [(a, b, 0, n1) for a, b in chunk_ranges(n0, rows)]
        chunks = []
        for i, (r0, r1, c0, c1) in enumerate(rngs):
            vals: list = [r1 - r0, c1 - c0]
            pos: list = []
            offs: list = []
            for (isz, a, b), g in zip(lay, gen):
                pos.append(len(vals))
                offs.append((r0 * a + c0 * b) * isz)
                vals += [0, a] + ([b] if g else [])
            # outputs are written at [r * (c1 - c0) + c]: only valid as one block per row range
            for dt in odts:
                pos.append(len(vals))
                offs.append((r0 * n1 + c0) * dt.itemsize)
                vals.append(0)
            if red is not None:
                pos.append(len(vals))
                offs.append(i * n1 * pdt.itemsize if col else 8 * (i if split_cols else r0))
                vals.append(0)
            chunks.append(_Chunk(vals, tuple(pos), tuple(offs)))
        nparts = 0 if red is None else len(rngs) * n1 if col else len(rngs) if split_cols else n0
        if _cplan is not None and red is None and not copies and total < _PAR_MIN:
            ch = chunks[0]
            cplan[0] = _cplan(kern, kern.addr, ch.vec, ch.pos, ch.offs, tuple(map(_LAYOUT, xs)), bufs.held,
                              bufs.cspec)
        return nthr, tuple(copies), chunks, nparts, split_cols

    def go(xs: tuple, k: Kernel, into: tuple | None) -> tuple:
        ent = _plans(xs, plans, make)
        if ent is False:
            return fallback(*xs)
        _, copies, chunks, nparts, split_cols = ent
        if copies:
            xs = _copied(xs, copies)
        outs = bufs.take()
        if into is not None:
            outs[into[0]] = into[1]
        outs = tuple(outs)
        if red is not None:
            parts = np.empty(nparts, pdt)
            arrs = (*xs, *outs, parts)
        else:
            arrs = (*xs, *outs)
        _run_chunks(k, chunks, arrs)
        if red is None:
            return outs
        if arg:
            return (*outs, parts.reshape(rshape))
        if col:  # the chunks' partials combined in chunk order (sum: pairwise, in double)
            p2 = parts.reshape(-1, n1)
            r = np.add.reduce(p2, axis=0) if rop == "colsum" else p2.max(axis=0) if rop == "colmax" \
                else p2.min(axis=0)  # (max/min: NaN propagates)
            return (*outs, np.asarray(r.astype(rnp).reshape(rshape)))
        if all_axes or split_cols:
            if rop == "sum":
                r = np.add.reduce(parts)  # pairwise over rows / column ranges, in double
            else:
                r = parts.max() if rop == "max" else parts.min()  # NaN propagates
            r = np.asarray(r)
        else:
            r = parts
        r = np.asarray(r.astype(rnp).reshape(rshape))
        return (*outs, r)

    def run(*xs: Any) -> tuple:
        p = cplan[0]
        if p is not None:
            r = _crun(p, xs)  # same buffers and kernel call as go(); None: another layout
            if r is not None:
                return r
        return go(xs, kern, None)

    def into(j: int, h: np.ndarray, k2: Kernel | None) -> Callable:
        """This step writing its result ``j`` into ``h`` (a donated argument, C-contiguous, of the
        result's shape and dtype), with kernel ``k2`` (compiled without ``restrict``: ``h`` may be
        one of its operands, read at the element it writes) or this step's own."""
        return lambda *xs: go(xs, k2 or kern, (j, h))

    run.into = into  # type: ignore[attr-defined]
    return run


def make_row_runner(kern: Kernel, n_rows: int, ext: list, bufs: list, out_bufs: list,
                    fallback: Callable) -> Callable:
    """A program step running a row-chain kernel ``kernel(n0, e0p, e0a, e0b, ..., b0, b1, ...)``:
    several fused loops over the same ``n_rows`` rows, all run for one row before the next.  ``ext``:
    per external operand ``(group shape, (n0, n1) loop, dtype, Stride pattern)``; ``bufs``: ``(shape, dtype)``
    of the buffers it fills (C-contiguous, ``n_rows`` rows each); returns ``bufs[i]`` for ``i`` in
    ``out_bufs``.  Rows are split over the thread pool; ``fallback(*operands)`` runs the steps one by
    one (operands of an unexpected layout)."""
    info = [(shape, n0, n1, np.dtype(NP_DTYPE[d]), p) for shape, (n0, n1), d, p in ext]
    bd = [(shape, np.dtype(NP_DTYPE[d])) for shape, d in bufs]
    row_elems = [max(1, int(np.prod(shape)) // n_rows) for shape, _ in bd]
    work = sum(n0 * n1 for _, n0, n1, _, _ in info)
    plans: dict = {}
    obufs = Outputs(bd)

    def make(xs: tuple) -> Any:
        r = _layouts(xs, info)
        if r is None:
            return False
        lay, copies = r
        nthr = get_num_threads()
        if work < _PAR_MIN or nthr <= 1:
            rngs = [(0, n_rows)]
        else:
            rngs = chunk_ranges(n_rows, max(1, -(-n_rows // (4 * nthr))))
        chunks = []
        for r0, r1 in rngs:
            vals: list = [r1 - r0]
            pos: list = []
            offs: list = []
            for isz, a, b in lay:
                pos.append(len(vals))
                offs.append(r0 * a * isz)
                vals += [0, a, b]
            for (_, dt), m in zip(bd, row_elems):
                pos.append(len(vals))
                offs.append(r0 * m * dt.itemsize)
                vals.append(0)
            chunks.append(_Chunk(vals, tuple(pos), tuple(offs)))
        return nthr, tuple(copies), chunks

    def run(*xs: Any) -> tuple:
        ent = _plans(xs, plans, make)
        if ent is False:
            return fallback(*xs)
        _, copies, chunks = ent
        if copies:
            xs = _copied(xs, copies)
        outs = obufs.take()
        arrs = (*xs, *outs)
        _run_chunks(kern, chunks, arrs)
        return tuple(outs[i] for i in out_bufs)

    return run
