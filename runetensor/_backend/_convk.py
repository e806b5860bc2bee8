"""Stride-1 float32 convolutions on the compiled flat-row kernels (``_conv_kernels.c``), for ``rt.nn``.

The layout (see the C file's header): every channel is one row ``(margin | N padded samples |
margin)`` of ``lr`` float32 values, the ``margin`` being the largest tap offset ``M``; output
position ``q`` of sample ``n`` sits at ``n * sflat + flat(o)`` in the samples' padded coordinates,
and tap ``t`` reads the input row at ``q + offs[t]``.  One buffer layout serves the three
products:

* forward: ``Y (C_out, R) = conv_fwd(W, X, M + offs)``, ``R = N * sflat``; the valid columns are
  written out as ``(N, C_out, out...)`` with the bias added in the same pass;
* input gradient: the cotangent placed in the same frame (zeros elsewhere), ``conv_fwd`` with the
  weight read as ``(C_in, C_out * T)`` and the offsets mirrored (``M - offs``), then cropped;
* weight gradient: ``conv_wgrad(G, X, offs)`` over ``[M, M + R)``.

Work is cut into ranges of positions that depend on the shapes only (each weight-gradient range
writes a partial sum of its own, added in range order), run on runetensor's pool: the results are
the same bits with any thread count.  ``AVAILABLE`` is false without the compiled module; callers
then take their NumPy paths.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ._fast import buffer_pool
from ._blas import BUSY_OK_MNK
from ._parallel import parallel_for

try:
    from . import _conv_kernels as _ck
except ImportError:  # no compiler at install time: the callers' NumPy paths run
    _ck = None

AVAILABLE = _ck is not None

#: multiply-adds per range of positions (ranges are cut from the shapes only); products of at least
#: :data:`_BIG_WORK` are cut into ranges of at least ``BUSY_OK_MNK`` multiply-adds, which run on the pool even
#: while the load average is high (as the matrix products' blocks: a descheduled helper costs at most one
#: range's wait)
_RANGE_WORK = 1 << 22
_BIG_WORK = 1 << 25
_MAX_RANGES = 16


def _up4(n: int) -> int:
    return -(-n // 4) * 4


@functools.lru_cache(maxsize=256)
def geometry(n: int, sp: tuple[int, ...], ks: tuple[int, ...], dl: tuple[int, ...],
             pads: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    """``(sp_pad, sflat, R, M, lr, offs)`` of the flat-row layout (see the module docstring).

    A sample's block has ``sp_pad[i] = sp[i] + g[i]`` positions along axis ``i``, its data at
    ``[pads[i][0], pads[i][0] + sp[i])``: the ``g[i] = max(a, b, a + b - extent + 1)`` zeros after the
    data are the trailing padding of this block and the leading padding of the next one (a window of
    a valid output reads at most ``b`` past its data and ``a`` before it), and leave room for the
    output.  Sharing them wastes fewer computed positions than a full padded block per sample (4x4
    images with padding 1: 25 positions per sample against 36)."""
    sp_pad = tuple(m + max(a, b, a + b - d * (k - 1)) for m, (a, b), k, d in zip(sp, pads, ks, dl))
    cs = [1] * len(sp_pad)
    for i in range(len(sp_pad) - 2, -1, -1):
        cs[i] = cs[i + 1] * sp_pad[i + 1]
    offs = [0]
    for i, (k, d) in enumerate(zip(ks, dl)):
        offs = [o + j * d * cs[i] for o in offs for j in range(k)]
    sflat = math.prod(sp_pad)
    big = max(offs)
    r = n * sflat
    return sp_pad, sflat, r, big, r + 2 * big, np.asarray(offs, np.int64)


@functools.lru_cache(maxsize=256)
def _ranges(lo: int, hi: int, work_per_pos: int) -> tuple[tuple[int, int], ...]:
    """``[lo, hi)`` cut into at most :data:`_MAX_RANGES` ranges of whole 64-position blocks (shape-only)."""
    total = hi - lo
    work = total * work_per_pos
    k = max(1, min(_MAX_RANGES, work // (BUSY_OK_MNK if work >= _BIG_WORK else _RANGE_WORK), total // 64))
    step = -(-(-(-total // k)) // 64) * 64
    return tuple((a, min(hi, a + step)) for a in range(lo, hi, step))


@functools.lru_cache(maxsize=256)
def _sample_ranges(n: int, sflat: int, work_per_pos: int) -> tuple[tuple[int, int], ...]:
    """The samples cut into groups as :func:`_ranges` cuts the positions (shape-only): a group's outputs
    are copied out right after they are computed, while they are in cache."""
    k = len(_ranges(0, n * sflat, work_per_pos))
    step = -(-n // k)
    return tuple((a, min(n, a + step)) for a in range(0, n, step))


def _conv_crop(w2: np.ndarray, src: np.ndarray, offs: np.ndarray, rows: int, cin: int, geo: tuple, nch: int,
               starts: tuple[int, ...], sizes: tuple[int, ...], bias: np.ndarray | None, big: bool) -> np.ndarray:
    """``conv_fwd`` over every sample's block of the frame ``src``, each group of samples' valid outputs
    (``sizes`` at ``starts`` of the block, ``nch`` of the ``rows`` rows) copied into the ``(N, nch, sizes...)``
    result (+ ``bias``) right after the group is computed."""
    sp_pad, sflat, r, _, lr, _ = geo
    n = r // sflat
    wide = _empty((rows, r))
    off, chan, fs, nr, ln = _blocks(n, nch, starts, sizes, sp_pad, r, 0)
    per = len(off) // n
    y = _empty((n, nch) + sizes)
    yflat = y.reshape(-1)
    groups = _sample_ranges(n, sflat, rows * cin * len(offs))
    fk, cb = _ck.conv_fwd, _ck.copy_blocks

    def run(i: int) -> None:
        a, b = groups[i]
        fk(w2, src, offs, wide, rows, cin, lr, r, a * sflat, b * sflat)
        cb(wide, off[a * per:b * per], fs, yflat[a * per * nr * ln:], None, 0, nr, ln, bias,
           None if bias is None else chan[a * per:b * per])
    parallel_for(run, len(groups), big)
    return y


def _empty(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 buffer, recycled when large (fresh pages cost a fault each on first touch: the
    forward of the 32x32 benchmark convolution spent as long faulting in its buffers as computing)."""
    return buffer_pool.empty(shape, np.dtype(np.float32))


#: frame copies and fills of at least this many values run in chunks on the pool (memory-bound: the
#: pool's usual rule, serial while the cores are busy)
_COPY_PAR = 1 << 19


def _zeros(shape: tuple[int, ...]) -> np.ndarray:
    buf = _empty(shape)
    flat = buf.reshape(-1)
    k = min(8, flat.size // _COPY_PAR) or 1
    step = -(-flat.size // k)
    parallel_for(lambda i: flat[i * step:(i + 1) * step].fill(0), k)
    return buf


def _copy(src: np.ndarray, soff: Any, ss: int, dst: np.ndarray, doff: Any, ds: int, rows: int, length: int,
          bias: Any, chan: Any) -> None:
    """``copy_blocks`` in chunks of blocks on the pool when large (the same values in any case)."""
    nb = len(soff if soff is not None else doff)
    per = rows * length
    k = min(8, (nb * per) // _COPY_PAR, nb) or 1
    step = -(-nb // k)
    sflat, dflat = src.reshape(-1), dst.reshape(-1)

    def run(i: int) -> None:
        a, b = i * step, min(nb, (i + 1) * step)
        if a >= b:
            return
        s = sflat if soff is not None else sflat[a * per:]
        d = dflat if doff is not None else dflat[a * per:]
        _ck.copy_blocks(s, None if soff is None else soff[a:b], ss, d, None if doff is None else doff[a:b], ds,
                        rows, length, bias, None if chan is None else chan[a:b])
    parallel_for(run, k)


@functools.lru_cache(maxsize=256)
def _blocks(n: int, nch: int, starts: tuple[int, ...], sizes: tuple[int, ...], sp_pad: tuple[int, ...],
            row: int, base: int) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """Where the ``(N, nch, sizes...)`` blocks of the last two axes sit in a frame of rows of ``row``
    values (channel ``c``'s row at ``c * row``, sample ``i``'s block at ``base + i * sflat``, the data at
    ``starts`` of the block), in the dense array's order: ``(offsets, channels, frame row stride, rows,
    length)``."""
    nd = len(sizes)
    cs = [1] * nd
    for i in range(nd - 2, -1, -1):
        cs[i] = cs[i + 1] * sp_pad[i + 1]
    sflat = cs[0] * sp_pad[0]
    lead = max(nd - 2, 0)                # axes enumerated as blocks (the last two are a block's rows)
    grid = (n, nch) + sizes[:lead]
    off = np.full(grid, base + sum(a * c for a, c in zip(starts[lead:], cs[lead:])), np.int64)
    off += (np.arange(n, dtype=np.int64) * sflat).reshape((n,) + (1,) * (lead + 1))
    chan = np.broadcast_to(np.arange(nch, dtype=np.int64).reshape((1, nch) + (1,) * lead), grid)
    off += chan * row
    for i in range(lead):
        shape = [1] * (lead + 2)
        shape[2 + i] = sizes[i]
        off += ((np.arange(sizes[i], dtype=np.int64) + starts[i]) * cs[i]).reshape(shape)
    rows = sizes[-2] if nd >= 2 else 1
    return off.ravel(), np.ascontiguousarray(chan).ravel(), cs[-2] if nd >= 2 else 0, rows, sizes[-1]


def _rows(x: np.ndarray, nch: int, starts: tuple[int, ...], geo: tuple, rows: int | None = None) -> np.ndarray:
    """``(N, nch, sp...)`` placed in the flat-row frame ``(rows, lr)`` at ``starts`` of each sample's block
    (zeros around; ``rows`` >= nch)."""
    sp_pad, sflat, r, big, lr, _ = geo
    n = x.shape[0]
    buf = _zeros((nch if rows is None else rows, lr))
    off, _, fs, nr, ln = _blocks(n, nch, starts, x.shape[2:], sp_pad, lr, big)
    _copy(np.ascontiguousarray(x), None, 0, buf, off, fs, nr, ln, None, None)
    return buf


def forward(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, ks: tuple[int, ...], dl: tuple[int, ...],
            pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``conv(x, w) + b`` (float32, stride 1, one group) and the input's flat rows (for the backward)."""
    n, c = x.shape[:2]
    cout = w.shape[0]
    sp = x.shape[2:]
    geo = geometry(n, sp, ks, dl, pads)
    sp_pad, sflat, r, big, lr, offs = geo
    t = len(offs)
    xr = _rows(x, c, tuple(a for a, _ in pads), geo)
    c4 = _up4(cout)
    w2 = np.zeros((c4, c * t), np.float32)
    w2[:cout] = w.reshape(cout, c * t)
    y = _conv_crop(w2, xr, offs + big, c4, c, geo, cout, (0,) * len(sp), out,
                   None if b is None else np.ascontiguousarray(b), r * c4 * c * t >= _BIG_WORK)
    return y, xr


def backward(gy: np.ndarray, xr: np.ndarray, w: np.ndarray, xshape: tuple[int, ...], ks: tuple[int, ...],
             dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...], need_x: bool,
             need_w: bool, need_b: bool) -> tuple[Any, Any, Any]:
    """``(gx, gw, gb)`` of :func:`forward` for the cotangent ``gy`` (None where not needed)."""
    n, c = xshape[:2]
    sp = xshape[2:]
    cout = w.shape[0]
    geo = geometry(n, sp, ks, dl, pads)
    sp_pad, sflat, r, big, lr, offs = geo
    t = len(offs)
    c4 = _up4(cout)
    gy = np.ascontiguousarray(gy)
    gx = gw = gb = None
    if need_x or need_w:
        gr = _rows(gy, cout, (0,) * len(sp), geo, c4)
    if need_w:
        rg = _ranges(big, big + r, c4 * c * t)
        parts = np.empty((len(rg), c4, c * t), np.float32)
        wk = _ck.conv_wgrad
        parallel_for(lambda i: wk(gr, xr, offs, parts[i], c4, c, lr, lr, rg[i][0], rg[i][1]), len(rg),
                     r * c4 * c * t >= _BIG_WORK)
        gw = np.ascontiguousarray(np.add.reduce(parts, axis=0)[:cout]).reshape(w.shape)
    if need_x:
        ci4 = _up4(c)
        wt = np.zeros((ci4, c4, t), np.float32)
        wt[:c, :cout] = np.moveaxis(w.reshape(cout, c, t), 1, 0)
        wt = wt.reshape(ci4, c4 * t)
        gx = _conv_crop(wt, gr, big - offs, ci4, c4, geo, c, tuple(a for a, _ in pads), sp, None,
                        r * ci4 * c4 * t >= _BIG_WORK)
    if need_b:
        # each channel's cotangent is one contiguous frame row (zeros around the valid positions): a row
        # sum instead of NumPy's slow reduction over the batch and spatial axes of (N, C_out, out...)
        rows = gr if need_x or need_w else _rows(gy, cout, (0,) * len(sp), geo, c4)
        gb = np.empty(cout, np.float32)
        _ck.row_sums(rows, cout, lr, gb)
    return gx, gw, gb


def max_pool_cts(t: np.ndarray, ct: np.ndarray) -> np.ndarray | None:
    """The per-tap cotangents ``(K, ...)`` of the chain of maxima over the ``K`` rows of the window copy ``t``
    (``rt.nn``'s max pooling) for the cotangent ``ct`` of its result; None for dtypes other than float32 and
    float64 (the caller's elementwise path)."""
    if t.dtype not in (np.float32, np.float64) or ct.dtype != t.dtype:
        return None
    cts = np.empty(t.shape, t.dtype)
    _ck.max_pool_bwd(np.ascontiguousarray(t), np.ascontiguousarray(ct), cts, t.shape[0])
    return cts


@functools.lru_cache(maxsize=256)
def tap_offsets(wshape: tuple[int, ...], wstrides: tuple[int, ...], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The element offsets of a window view ``(kernel..., lead..., out...)`` of a C-contiguous buffer
    (``wstrides`` in elements; the first ``k`` axes are the kernel's): per tap and per output position."""
    def offs(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
        o = np.zeros((), np.int64)
        for m, st in zip(shape, strides):
            o = (o[..., None] + np.arange(m, dtype=np.int64) * st)
        return np.ascontiguousarray(o).reshape(-1)
    return offs(wshape[:k], wstrides[:k]), offs(wshape[k:], wstrides[k:])


def take_windows(xp: np.ndarray, wshape: tuple[int, ...], wstrides: tuple[int, ...], k: int,
                 out: np.ndarray) -> bool:
    """``out`` (C-contiguous, ``(K, ...)``) = the window view of the C-contiguous ``xp`` (from its first
    element); False (nothing done) when the kernels do not apply (``xp`` not C-contiguous)."""
    if not xp.flags.c_contiguous:
        return False
    tap, pos = tap_offsets(wshape, wstrides, k)
    _ck.take_taps(xp.reshape(-1), tap, pos, out, 0)
    return True


def put_windows(cts: np.ndarray, wshape: tuple[int, ...], wstrides: tuple[int, ...], k: int, gx: np.ndarray) -> bool:
    """The windows' values ``cts`` ``(K, ...)`` added into their places in the zeros of the C-contiguous
    ``gx`` (windows that do not overlap: one value per place; ``0 + v`` as NumPy's add gives it); False
    (nothing done) for dtypes other than float32 and float64."""
    if gx.dtype not in (np.float32, np.float64) or cts.dtype != gx.dtype or not gx.flags.c_contiguous:
        return False
    tap, pos = tap_offsets(wshape, wstrides, k)
    _ck.take_taps(np.ascontiguousarray(cts), tap, pos, gx, 2)
    return True
