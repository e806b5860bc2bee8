"""The Dask backend: handles wrap ``dask.array`` arrays; every chunk is computed by the NumPy backend.

Per-chunk work calls the NumPy backend's own primitives through ``blockwise``/``map_blocks``, so
elementwise results are bit-identical to the NumPy backend (bfloat16, float8 and int4 included:
the chunks hold the same NumPy/ml_dtypes dtypes).  Work stays lazy until a value is needed
(``to_host``, ``to_list``, ``to_bytes``, ``value_range``, ``nonzero``, ``linalg``, index tensors
of ``gather``/``scatter``); docs/dask.md lists every call that computes.  If a
``distributed.Client`` is active, Dask runs the graphs on it.

Handles (:class:`DaskHandle`) are mutable wrappers, like the tracers of ``runetensor._autodiff``:

* a *root* holds the current dask array (``arr``) and a ``version``; a write (``assign``,
  ``scatter``, ``out=``) rebinds the root to a new graph and bumps the version (value
  semantics: Dask arrays are immutable);
* a *view* (the movement primitives) holds its root and the movement steps from it
  (``recipe``); when the root was written since the view was derived, the view re-derives its
  array by replaying the recipe, and a write into a view is written through the recipe into
  the root.

Views keep a *virtual strided layout* (strides and offset in elements over the root's C-order
buffer), computed by NumPy itself on a zero-size dummy, so ``strides``, ``offset``,
``buffer_size``, ``is_c_contiguous`` and ``reshape``'s "None when the strides cannot express
it" answer exactly as the NumPy backend would, and ``as_strided`` reads (and writes) the root's
elements at those positions.  What cannot be had: a byte buffer (``from_buffer``):
:attr:`DaskBackend.capabilities` leaves out ``"buffer"``.  DLPack export computes the tensor and
exports the computed host memory; import copies into a new graph (``copy=False`` shares).
"""
from __future__ import annotations

import math
import os
import sys
import threading
import uuid
import warnings
from contextlib import contextmanager
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.base import tokenize

from .. import _dtypes as D
from .contract import Backend
from .numpy_backend import _ACCUM, NP_DTYPE, RT_DTYPE, NumpyBackend, _philox_stream, numpy_backend as NB
from . import _fast

__all__ = ["DaskBackend", "DaskHandle", "dask_backend", "read_npy", "write_c_order"]

_I64 = np.dtype(np.int64)
_BASE = np.zeros(2, np.uint8)  # the anchor of the virtual layouts (never read: zero-size dummies)
_BASE_ADDR = _BASE.__array_interface__["data"][0]
_as_strided = np.lib.stride_tricks.as_strided


def _meta(nd: int, dtype: np.dtype) -> np.ndarray:
    return np.empty((0,) * nd, dtype)


class _Config(threading.local):
    def __init__(self) -> None:
        self.chunks: list[Any] = ["auto"]


class DaskHandle:
    """A handle of the Dask backend: a root (current array + version) or a view (root + recipe).

    ``vstrides``/``voff``: the virtual strided layout over the root's C-order buffer (elements).
    """

    __slots__ = ("_arr", "root", "recipe", "version", "shape", "ndim", "size", "dtype", "vstrides", "voff",
                 "readonly")

    def __init__(self, arr: Any, root: "DaskHandle | None" = None, recipe: tuple = (),
                 vstrides: tuple | None = None, voff: int = 0, readonly: bool = False):
        self._arr = arr
        self.root = root
        self.recipe = recipe
        self.version = root.version if root is not None else 0
        self.shape = tuple(int(n) for n in arr.shape)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.dtype = arr.dtype
        if vstrides is None:
            vstrides, acc = [], 1
            for n in reversed(self.shape):
                vstrides.append(acc)
                acc *= max(n, 1)
            vstrides = tuple(reversed(vstrides))
        self.vstrides = vstrides
        self.voff = voff
        self.readonly = readonly

    @property
    def arr(self) -> Any:
        """The current dask array (a view re-derives itself after its root was written)."""
        r = self.root
        if r is not None and self.version != r.version:
            a = r._arr
            for name, params in self.recipe:
                a = _APPLY[name](a, params)
            self._arr = a
            self.version = r.version
        return self._arr

    def __repr__(self) -> str:
        return f"DaskHandle(shape={self.shape}, dtype={self.dtype}, view={self.root is not None})"


# ---------------------------------------------------------------------------------------------
# movement steps: (name, params) -> dask operation, and the virtual layout through NumPy
# ---------------------------------------------------------------------------------------------
def _dreshape(a: Any, shape: tuple) -> Any:
    """``a.reshape(shape)`` in C order for any chunking: where Dask's reshape cannot split or merge
    the chunks as they are, the array is first made whole along the trailing axes and raveled, then
    split in chunks that are multiples of the new trailing size."""
    shape = tuple(int(n) for n in shape)
    if tuple(a.shape) == shape:
        return a
    try:
        return a.reshape(shape)
    except (NotImplementedError, ValueError):
        pass
    flat = a
    if a.ndim > 1:
        flat = a.rechunk({i: -1 for i in range(1, a.ndim)}).reshape((a.size,))
    elif a.ndim == 0:
        flat = a.reshape((1,))
    if len(shape) <= 1:
        return flat.reshape(shape)
    rest = math.prod(shape[1:]) or 1
    per = max(1, max(flat.chunks[0] or (1,)) // rest) * rest
    return flat.rechunk((per,)).reshape(shape)


def _flipper(nd: int, axes: Any) -> tuple:
    return tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd))


def _positions(shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    """Flat root positions of an ``as_strided`` view (int64, the view's shape)."""
    pos = np.full(shape, offset, np.int64)
    for k, (n, s) in enumerate(zip(shape, strides)):
        ramp = np.arange(n, dtype=np.int64) * s
        pos += ramp.reshape((n,) + (1,) * (len(shape) - k - 1))
    return pos


def _ap_as_strided(a: Any, p: tuple) -> Any:
    shape, strides, offset = p
    pos = _positions(shape, strides, offset)
    if pos.size == 0:
        return da.from_array(np.empty(shape, a.dtype), name=False)
    return _dreshape(_dreshape(a, (a.size,))[pos.reshape(-1)], shape)


_APPLY = {
    "reshape": lambda a, p: _dreshape(a, p),
    "expand": lambda a, p: da.broadcast_to(a, p),
    "permute": lambda a, p: a.transpose(p),
    "view_index": lambda a, p: a[p],
    "flip": lambda a, p: a[_flipper(a.ndim, p)],
    "as_strided": _ap_as_strided,
}


def _dummy(h: DaskHandle) -> np.ndarray:
    anchor = _as_strided(_BASE, shape=(2,), strides=(h.voff,))[1:]
    return _as_strided(anchor, shape=h.shape, strides=h.vstrides)


def _layout(d: np.ndarray) -> tuple[tuple, int]:
    return tuple(int(s) for s in d.strides), d.__array_interface__["data"][0] - _BASE_ADDR


# ---------------------------------------------------------------------------------------------
# writes: functional updates of a root through a recipe
# ---------------------------------------------------------------------------------------------
def _nd_spec(spec: Any) -> int:
    """The number of axes a chunks spec names (0 for "auto", an int, a dict...)."""
    return len(spec) if isinstance(spec, (tuple, list)) else 0


def _same_chunks(new: Any, old: Any) -> Any:
    """A written root keeps its chunks: ``new`` rechunked to ``old``'s (writes through flat positions,
    ``as_strided`` views, change them)."""
    return new if new.chunks == old.chunks else new.rechunk(old.chunks)


def _copy_array(a: Any) -> Any:
    return da.Array(a.dask, a.name, a.chunks, meta=a._meta)


#: ``x - f(x)`` where ``f(x)`` is a reduction of ``x``: above this size ``x``'s chunks are computed
#: again for the elementwise side instead of being held until ``f(x)`` is known (``rt.var``/``std``,
#: centring): the two passes then hold a few chunks, not the whole array (out-of-core data)
RECOMPUTE_BYTES = 1 << 27


def _recompute_not_hold(a: Any, other: Any) -> Any:
    """``a``, or an independent copy of its graph (same values, new keys) when ``other`` is computed from
    ``a`` and is much smaller (a reduction of it) and ``a`` is large: see ``RECOMPUTE_BYTES``."""
    if a.nbytes < RECOMPUTE_BYTES or other.size * 64 > a.size:
        return a
    layers = getattr(other.dask, "layers", None)
    if layers is None or a.name not in layers:
        return a
    # deferred: a further Dask module, loaded on first use
    from dask.graph_manipulation import clone
    return clone(a)


def _setitem(a: Any, key: tuple, new: Any) -> Any:
    """``a`` with the basic-index region ``key`` (ints, normalised slices, None) replaced by ``new``."""
    if new.size == 0:
        return a
    # drop the new axes (None) of ``new`` (size 1); int entries have no axis in ``new``
    shp = [n for k, n in zip([k for k in key if not isinstance(k, (int, np.integer))], new.shape) if k is not None]
    if len(shp) != new.ndim:
        new = _dreshape(new, tuple(shp))
    r = _copy_array(a)
    r[tuple(k for k in key if k is not None)] = new
    return r


def _scatter_flat(flat: Any, pos: np.ndarray, vals: Any, mode: str) -> Any:
    """1-d ``flat`` with ``flat[pos] = vals`` (``mode="set"``, last wins) or ``+=`` (``"add"``,
    duplicates accumulate), chunk by chunk with the NumPy backend's ``scatter``.  ``pos`` is a
    host int64 array; ``vals`` a 1-d dask array of ``pos``'s length or a scalar."""
    if pos.size == 0:
        return flat
    blocks = flat.to_delayed().ravel()
    bounds = np.cumsum((0,) + flat.chunks[0])
    out = []
    for i, blk in enumerate(blocks):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        sel = np.nonzero((pos >= lo) & (pos < hi))[0]
        if sel.size == 0:
            out.append(flat[lo:hi])
            continue
        local = pos[sel] - lo
        v = vals[sel] if isinstance(vals, da.Array) else vals
        task = dask.delayed(_set_block, pure=True, name=f"rt-scatter-{tokenize(blk, local, v, mode)}")(
            blk, local, v, mode)
        out.append(da.from_delayed(task, shape=(hi - lo,), dtype=flat.dtype, meta=_meta(1, flat.dtype)))
    return da.concatenate(out) if len(out) > 1 else out[0]


def _set_block(block: np.ndarray, local: np.ndarray, v: Any, mode: str) -> np.ndarray:
    b = np.array(block, copy=True)  # (a 0-d ndarray for a scalar block)
    NB.scatter(b, (local,), v, mode)
    return b


def _write_through(a: Any, recipe: tuple, fn: Any) -> Any:
    """``a`` (a root's array) with the region ``recipe`` selects replaced by ``fn(region)``."""
    if not recipe:
        return fn(a)
    (name, p), rest = recipe[0], recipe[1:]
    if name == "permute":
        inv = tuple(int(i) for i in np.argsort(p))
        return _write_through(a.transpose(p), rest, fn).transpose(inv)
    if name == "flip":
        f = _flipper(a.ndim, p)
        return _write_through(a[f], rest, fn)[f]
    if name == "reshape":
        return _dreshape(_write_through(_dreshape(a, p), rest, fn), a.shape)
    if name == "view_index":
        return _setitem(a, p, _write_through(a[p], rest, fn))
    if name == "as_strided":
        shape = p[0]
        pos = _positions(*p).reshape(-1)
        flat = _dreshape(a, (a.size,))
        new = _write_through(_ap_as_strided(a, p), rest, fn)
        if new.size == 0:
            return a
        return _dreshape(_scatter_flat(flat, pos, _dreshape(new, (math.prod(shape),)), "set"), a.shape)
    raise ValueError(f"{name}: the view is read-only")


# ---------------------------------------------------------------------------------------------
# per-chunk functions (module level: they pickle by reference to distributed workers)
# ---------------------------------------------------------------------------------------------
def _nd(x: Any) -> np.ndarray:
    """A chunk as an ndarray: Dask hands a 0-d chunk cut out by an integer index (``t[0, 0]``) to the next
    task as a NumPy scalar, which the NumPy backend's primitives do not take."""
    return x if type(x) is np.ndarray else np.asarray(x)


def _unary_chunk(x, op):
    return NB.unary(op, _nd(x))


def _binary_chunk(*arrs, op, spec):
    it = iter(arrs)
    x, y = (_nd(next(it)) if s is None else s[0] for s in spec)
    return NB.binary(op, x, y)


def _where_chunk(c, x, y):
    return NB.where(_nd(c), _nd(x), _nd(y))


def _clip_chunk(*arrs, has_lo, has_hi):
    it = iter(_nd(a) for a in arrs)
    x = next(it)
    lo = next(it) if has_lo else None
    hi = next(it) if has_hi else None
    return NB.clip(x, lo, hi)


def _cast_chunk(x, dtype):
    return NB.cast(_nd(x), dtype)


def _full_chunk(value, dtype, block_info=None):
    return NB.full(block_info[None]["chunk-shape"], value, dtype)


def _assign_chunk(old, value, dtype):
    return NB.full(old.shape, value, dtype)


def _arange_chunk(start, step, dtype, kind, block_info=None):
    lo, hi = block_info[None]["array-location"][0]
    nd = NP_DTYPE[dtype]
    if kind == "int":
        r = np.arange(start + lo * step, start + hi * step, step, dtype=np.int64)[:hi - lo]
    else:  # NumPy's float fill: value i = start + i * delta, delta = (start + step) - start; value 1 = start + step
        delta = (start + step) - start
        r = start + np.arange(lo, hi, dtype=np.float64) * delta
        if lo <= 1 < hi:
            r[1 - lo] = start + step
        if lo == 0 and hi > 0:
            r[0] = start
    return r.astype(nd)


def _philox_range(seed: int, lo: int, hi: int) -> np.ndarray:
    """Words ``lo .. hi-1`` of the Philox4x32-10 stream for ``seed`` (word i depends only on (seed, i))."""
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    if _fast.ENABLED and _fast.KERNELS:
        out = np.empty(hi - lo, np.uint32)
        if hi > lo:
            _fast._kernels.philox_stream(k0, k1, out, lo, hi)
        return out
    b0 = lo // 4
    return _philox_stream((k0, k1), (hi + 3) // 4, b0)[lo - 4 * b0: hi - 4 * b0].copy()


def _bits_chunk(seed, block_info=None):
    lo, hi = block_info[None]["array-location"][0]
    return _philox_range(seed, lo, hi)


def _uniform_chunk(seed, f64, block_info=None):
    lo, hi = block_info[None]["array-location"][0]
    if _fast.ENABLED and _fast.KERNELS:
        out = np.empty(hi - lo, np.float64 if f64 else np.float32)
        if hi > lo:
            _fast._kernels.philox_uniform(seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, out, lo, hi, f64)
        return out
    if f64:
        w = _philox_range(seed, 2 * lo, 2 * hi).astype(np.uint64)
        return ((w[0::2] >> np.uint64(5)).astype(np.float64) * 67108864.0
                + (w[1::2] >> np.uint64(6)).astype(np.float64)) * 2.0 ** -53
    w = _philox_range(seed, lo, hi)
    return (w >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def _red_chunk(x, axis, keepdims, op, acc):
    x = _nd(x)
    src = x if acc is None else x.astype(acc)
    return NB.reduce(op, src, tuple(axis), True)


def _red_agg(x, axis, keepdims, op, out_dtype):
    r = NB.reduce(op, _nd(x), tuple(axis), keepdims)
    return r if r.dtype == out_dtype else r.astype(out_dtype)


def _red_combine(x, axis, keepdims, op):
    return NB.reduce(op, _nd(x), tuple(axis), True)


def _arg_chunk(x, op, axis, keepdims):
    return NB.arg_reduce(op, _nd(x), axis, keepdims)


def _arg_partial(x, op, axis, block_info=None):
    """The chunk's winner along ``axis``: its value and its index in the whole array."""
    x = _nd(x)
    off = block_info[0]["array-location"][axis][0]
    i = NB.arg_reduce(op, x, axis, True)
    out = np.empty(i.shape, np.dtype([("v", x.dtype), ("i", _I64)]))
    out["v"] = np.take_along_axis(x, i, axis)
    out["i"] = i + off
    return out


def _arg_partial_flat(x, op, shape, block_info=None):
    """The chunk's winner over all its elements: its value and its flat (C order) index in the whole
    array of ``shape``; one element per chunk (every axis kept, of size 1)."""
    x = _nd(x)
    lo = [b[0] for b in block_info[0]["array-location"]]
    out = np.empty((1,) * x.ndim, np.dtype([("v", x.dtype), ("i", _I64)]))
    flat = x.reshape(-1)
    w = int(NB.arg_reduce(op, flat, 0, False))
    out["v"] = flat[w]
    local = np.unravel_index(w, x.shape)
    out["i"] = np.ravel_multi_index(tuple(int(a) + int(o) for a, o in zip(local, lo)), shape)
    return out


def _arg_pick(p, op, axis):
    """The winners among partials ``p`` along the axes ``axis`` (kept, of size 1): the best value, the
    smallest index among equal values (and among NaNs, which win), whatever order the partials come in."""
    p = _nd(p)
    axis = tuple(axis)
    rest = tuple(a for a in range(p.ndim) if a not in axis)
    q = p.transpose(rest + axis).reshape(tuple(p.shape[a] for a in rest) + (-1,))
    order = np.argsort(q["i"], axis=-1, kind="stable")
    q = np.take_along_axis(q, order, axis=-1)
    w = NB.arg_reduce(op, np.ascontiguousarray(q["v"]), q.ndim - 1, True)
    r = np.take_along_axis(q, w, axis=-1)
    keep = [1 if a in axis else p.shape[a] for a in range(p.ndim)]
    # r's shape: rest axes then 1: back to p's axis order with the reduced axes of size 1
    return r.reshape(tuple(p.shape[a] for a in rest) + (1,) * len(axis)).transpose(
        np.argsort(rest + axis)).reshape(keep)


def _arg_tree_chunk(p, axis, keepdims):
    return _nd(p)  # the partials are made per chunk by ``_arg_partial`` / ``_arg_partial_flat``


def _arg_tree_combine(p, axis, keepdims, op):
    return _arg_pick(p, op, axis)


def _arg_tree_agg(p, axis, keepdims, op):
    r = np.ascontiguousarray(_arg_pick(p, op, axis)["i"])
    return r if keepdims else np.squeeze(r, tuple(axis))


def _scan_chunk(x, op, axis):
    return NB.scan(op, _nd(x), axis)


def _argsort_chunk(x, axis, descending):
    return NB.argsort(_nd(x), axis, descending)


def _take_along(x, idx, axis):
    return np.take_along_axis(_nd(x), _nd(idx), axis=axis)


def _searchsorted_chunk(v, s, side):
    return NB.searchsorted(_nd(s), _nd(v), side)


def _matmul_chunk(a, b):
    return NB.matmul(_nd(a), _nd(b))


def _matmul_partial(a, b, cd):
    """One block's share of a product whose contracted axis is chunked: ``a @ b`` in the accumulation
    dtype ``cd`` (float32 for the low-precision floats, as the NumPy backend computes), with a trailing
    axis of size 1 that the partials are then summed over."""
    a, b = _nd(a), _nd(b)
    if a.dtype != cd:
        a, b = a.astype(cd), b.astype(cd)
    return np.asarray(np.matmul(a, b))[..., None]


def _psum(x, axis, keepdims, dtype, out_dtype=None):
    """The sum of matmul partials (a list of blocks of size 1 along ``axis``, in k order; or one block):
    added elementwise in ``dtype``, without concatenating them (as dask.array's matmul)."""
    if isinstance(x, list):
        r = _nd(x[0])
        for v in x[1:]:
            r = np.add(r, _nd(v), dtype=dtype)
    else:
        r = _nd(x)
    if not keepdims:
        r = r.reshape(r.shape[:axis[0]] + r.shape[axis[0] + 1:])
    return r if out_dtype is None or r.dtype == out_dtype else r.astype(out_dtype)


def _fft_chunk(x, op, s, axes, norm):
    return NB.fft(op, _nd(x), s, axes, norm)


# ---------------------------------------------------------------------------------------------
#: ``DaskBackend.fusion`` has said, once, that ``rt.jit`` compiles nothing for Dask tensors
_JIT_NOTED: list = []


class DaskBackend(Backend):
    """The Dask backend (level 0).  See the module doc and docs/dask.md."""

    name = "dask"
    level = 0
    #: no byte buffers (``from_buffer``); DLPack computes and exports host memory: see ``Backend.capabilities``
    capabilities = frozenset({"strides", "as_strided", "inplace_views", "dlpack"})

    def __init__(self) -> None:
        self._cfg = _Config()

    def fusion(self) -> None:
        """None: ``rt.jit`` replays its programs on the Dask backend (each call builds the lazy graph the
        eager calls would) and compiles no kernels; the first time it asks, this says so once per
        process (a ``RuntimeWarning`` pointing at the caller's line: docs/jit.md, "Dask")."""
        if not _JIT_NOTED:
            _JIT_NOTED.append(True)
            f, level = sys._getframe(1), 2  # the warning points at the caller's line, outside runetensor
            while f is not None and f.f_globals.get("__name__", "").startswith("runetensor"):
                f, level = f.f_back, level + 1
            warnings.warn("rt.jit over Dask tensors: the traced program is replayed on the Dask backend (it builds "
                          "the same lazy graph as the eager calls, after one trace per signature); no kernels are "
                          "compiled for Dask tensors (docs/jit.md, 'Dask')", RuntimeWarning, stacklevel=level)
        return None

    def __reduce__(self):  # backends pickle to the registered object (tensors travel to workers and back)
        return (_registered, (self.name,))

    # -- configuration ----------------------------------------------------------
    @contextmanager
    def configure(self, chunks: Any = "auto"):
        """Inside the block, new Dask tensors (creation, ``asarray``) are chunked by ``chunks``
        (anything ``dask.array`` takes: ``"auto"``, an int, a tuple per axis, ``-1``)."""
        st = self._cfg.chunks
        st.append(chunks)
        try:
            yield self
        finally:
            st.pop()

    def _chunks(self, shape: tuple, nd: np.dtype) -> tuple:
        spec = self._cfg.chunks[-1]
        if nd.hasobject and spec == "auto":
            spec = -1
        if len(shape) == 1 and _nd_spec(spec) > 1:
            # a flat stream the frontend reshapes into the N-d result (random numbers): "auto" here,
            # the N-d chunks are applied by ``reshape`` (chunks describe the result)
            spec = "auto"
        return normalize_chunks(spec, shape, dtype=nd)

    def _result_chunks(self, arr: Any, shape: tuple) -> Any:
        """``arr`` (the reshape of a flat stream into ``shape``) rechunked to the configured N-d chunks."""
        spec = self._cfg.chunks[-1]
        if _nd_spec(spec) != len(shape) or len(shape) < 2:
            return arr
        want = normalize_chunks(spec, shape, dtype=arr.dtype)
        return arr if want == arr.chunks else arr.rechunk(want)

    # -- handles -----------------------------------------------------------------
    @staticmethod
    def _root(arr: Any) -> DaskHandle:
        return DaskHandle(arr)

    @staticmethod
    def _a(h: Any) -> Any:
        return h.arr

    def _from_numpy(self, a: np.ndarray) -> DaskHandle:
        return DaskHandle(da.from_array(a, chunks=self._chunks(a.shape, a.dtype), name="rt-asarray-" + uuid.uuid4().hex,
                                        meta=_meta(a.ndim, a.dtype)))

    def _const(self, a: np.ndarray) -> DaskHandle:
        """A NumPy handle as a Dask handle (a snapshot of writable memory, as ``asarray`` takes)."""
        return self._from_numpy(a.copy() if a.flags.writeable else a)

    def _host(self, h: DaskHandle) -> np.ndarray:
        return np.asarray(h.arr.compute())

    # -- introspection ---------------------------------------------------------------
    dtype = NumpyBackend.dtype  # handles carry the NumPy dtype of their chunks

    def strides(self, h):
        return h.vstrides

    def offset(self, h):
        return h.voff

    def buffer_size(self, h):
        return (h.root or h).size

    def is_c_contiguous(self, h):
        return bool(_dummy(h).flags.c_contiguous)

    def shares_memory(self, a, b):
        return isinstance(a, DaskHandle) and isinstance(b, DaskHandle) and (a.root or a) is (b.root or b)

    # -- creation ---------------------------------------------------------------------
    def _filled(self, shape, value, dtype):
        nd = NP_DTYPE[dtype]
        shape = tuple(shape)
        NB.full((), value, dtype)  # the NumPy backend's checks, now (TypeError, OverflowError)
        return DaskHandle(da.map_blocks(_full_chunk, value, dtype, token="rt-full", chunks=self._chunks(shape, nd),
                                        dtype=nd, meta=_meta(len(shape), nd)))

    def empty(self, shape, dtype):
        return self._filled(shape, 0 if dtype is not D.object_ else None, dtype)

    def full(self, shape, value, dtype):
        return self._filled(shape, value, dtype)

    def arange(self, start, stop, step, dtype):
        n = len(range(start, stop, step)) if all(isinstance(v, int) for v in (start, stop, step)) \
            else max(0, math.ceil((stop - start) / step))
        nd = NP_DTYPE[dtype]
        ints = all(isinstance(v, int) for v in (start, stop, step))
        if ints and not all(-(1 << 63) <= v < (1 << 63) for v in (start, stop, step, start + n * step)):
            return self._from_numpy(NB.arange(start, stop, step, dtype))  # uint64 beyond int64: on the host
        if n == 0:
            return self._from_numpy(NB.arange(start, stop, step, dtype))
        kind = "int" if ints else "float"
        if not ints:
            start, step = float(start), float(step)
        return DaskHandle(da.map_blocks(_arange_chunk, start, step, dtype, kind, token="rt-arange",
                                        chunks=self._chunks((n,), nd), dtype=nd, meta=_meta(1, nd)))

    def asarray(self, obj, dtype, copy):
        if isinstance(obj, DaskHandle):
            if dtype is None or NP_DTYPE[dtype] == obj.dtype:
                return (DaskHandle(obj.arr) if copy else obj), RT_DTYPE[obj.dtype]
            if copy is False:
                raise ValueError(f"asarray: converting {RT_DTYPE[obj.dtype]} to {dtype} needs a copy, but copy=False")
            return self.cast(obj, dtype), dtype
        if isinstance(obj, da.Array):
            if obj.dtype not in RT_DTYPE:
                raise TypeError(f"asarray: numpy dtype {obj.dtype} has no runetensor equivalent")
            h = DaskHandle(obj)
            if dtype is not None and NP_DTYPE[dtype] != obj.dtype:
                if copy is False:
                    raise ValueError(f"asarray: converting {RT_DTYPE[obj.dtype]} to {dtype} needs a copy, "
                                     "but copy=False")
                return self.cast(h, dtype), dtype
            return h, RT_DTYPE[obj.dtype]
        a, d = NB.asarray(obj, dtype, copy)  # the NumPy backend's conversions and messages
        if a.flags.writeable and (a is obj or not a.flags.owndata):
            # the graph reads its chunks when computed: a snapshot, so that later writes into the
            # caller's memory do not change this tensor (value semantics); read-only memory is shared
            a = a.copy()
        return self._from_numpy(a), d

    def random_bits(self, seed, n):
        u32 = np.dtype(np.uint32)
        return DaskHandle(da.map_blocks(_bits_chunk, seed, token="rt-random_bits", chunks=self._chunks((n,), u32),
                                        dtype=u32, meta=_meta(1, u32)))

    def random_uniform(self, seed, n, dtype):
        if dtype is not D.float32 and dtype is not D.float64:
            return super().random_uniform(seed, n, dtype)  # its TypeError
        nd = NP_DTYPE[dtype]
        return DaskHandle(da.map_blocks(_uniform_chunk, seed, dtype is D.float64, token="rt-random_uniform",
                                        chunks=self._chunks((n,), nd), dtype=nd, meta=_meta(1, nd)))

    # -- movement (views) ------------------------------------------------------------------
    def _view(self, h, name, params, np_fn, readonly=False):
        root = h.root or h
        d = np_fn(_dummy(h))
        strides, off = _layout(d)
        recipe = ((name, params),) if name == "as_strided" else h.recipe + ((name, params),)
        arr = _APPLY[name](root._arr if name == "as_strided" else h.arr, params)
        return DaskHandle(arr, root, recipe, strides, off, readonly or h.readonly)

    def reshape(self, h, shape):
        shape = tuple(shape)
        try:
            d = _dummy(h).reshape(shape, copy=False)
        except ValueError:
            return None
        root = h.root or h
        strides, off = _layout(d)
        a = _dreshape(h.arr, shape)
        if h.ndim == 1:
            a = self._result_chunks(a, shape)
        return DaskHandle(a, root, h.recipe + (("reshape", shape),), strides, off, h.readonly)

    def expand(self, h, shape):
        shape = tuple(shape)
        return self._view(h, "expand", shape, lambda d: np.broadcast_to(d, shape), readonly=True)

    def permute(self, h, axes):
        axes = tuple(int(a) for a in axes)
        return self._view(h, "permute", axes, lambda d: d.transpose(axes))

    def view_index(self, h, key):
        key = tuple(key)
        return self._view(h, "view_index", key, lambda d: d[key + (Ellipsis,)])

    def flip(self, h, axes):
        axes = tuple(int(a) for a in axes)
        return self._view(h, "flip", axes, lambda d: d[_flipper(d.ndim, axes)])

    def as_strided(self, h, shape, strides, offset):
        shape, strides = tuple(int(n) for n in shape), tuple(int(s) for s in strides)
        root = h.root or h
        if 0 not in shape:
            lo = hi = offset
            for n, s in zip(shape, strides):
                ext = (n - 1) * s
                lo, hi = (lo + ext, hi) if ext < 0 else (lo, hi + ext)
            if lo < 0 or hi >= root.size:
                raise ValueError(f"as_strided: the view (shape {shape}, strides {strides}, offset {offset}) touches "
                                 f"elements {lo}..{hi} of its buffer; expected elements within 0..{root.size - 1}")
        zero = any(s == 0 and n > 1 for n, s in zip(shape, strides))
        params = (shape, strides, int(offset))
        arr = _ap_as_strided(root._arr if root is not h else h.arr, params)
        return DaskHandle(arr, root, (("as_strided", params),), strides, int(offset), zero or h.readonly)

    # -- writes ---------------------------------------------------------------------------------
    def _write(self, dst: DaskHandle, fn: Any) -> None:
        """Rebind ``dst``'s root to a new graph: the region ``dst`` covers replaced by ``fn(region)``."""
        if dst.readonly:
            raise ValueError("assignment destination is read-only (a broadcast view)")
        root = dst.root
        if root is None:
            dst._arr = _same_chunks(fn(dst._arr), dst._arr)
            dst.version += 1
            return
        root._arr = _same_chunks(_write_through(root._arr, dst.recipe, fn), root._arr)
        root.version += 1

    def _values_for(self, src: Any, like: Any, dtype: np.dtype) -> Any:
        """``src`` (a handle, a dask array or a scalar) as a dask array of ``like``'s shape and ``dtype``."""
        if isinstance(src, DaskHandle):
            src = src.arr
        elif not isinstance(src, da.Array):
            if isinstance(src, np.ndarray):
                src = da.from_array(src, name=False)
            else:
                NB.full((), src, RT_DTYPE[dtype])  # checks now
                return da.map_blocks(_assign_chunk, like, src, RT_DTYPE[dtype], token="rt-assign", dtype=dtype,
                                     meta=_meta(like.ndim, dtype))
        if src.dtype != dtype:
            src = src.map_blocks(_cast_chunk, RT_DTYPE[dtype], token="rt-astype", dtype=dtype,
                                 meta=_meta(src.ndim, dtype))
        if src.shape != like.shape:
            src = da.broadcast_to(src, like.shape)
        return src

    def assign(self, dst, src):
        if dst.readonly:
            raise ValueError("assign: assignment destination is read-only (a broadcast view)")
        cur = src.arr if isinstance(src, DaskHandle) else src  # read before the write (value semantics)
        self._write(dst, lambda old: self._values_for(cur, old, old.dtype))

    # -- elementwise -------------------------------------------------------------------------------
    @staticmethod
    def _bshape(*shapes):
        return tuple(int(n) for n in np.broadcast_shapes(*shapes))

    def _out(self, r: Any, out: Any) -> Any:
        if out is None:
            return DaskHandle(r)
        self._write(out, lambda old: self._values_for(r, old, old.dtype))
        return out

    def unary(self, op, x, out=None):
        a = x.arr
        nd = NB.unary(op, np.zeros((1,), a.dtype)).dtype  # the result dtype; unsupported: TypeError now
        r = a.map_blocks(_unary_chunk, op, token="rt-" + op, dtype=nd, meta=_meta(a.ndim, nd))
        return self._out(r, out)

    def binary(self, op, x, y, out=None):
        xs, ys = isinstance(x, DaskHandle), isinstance(y, DaskHandle)
        xa, ya = (x.arr if xs else x), (y.arr if ys else y)
        dt = xa.dtype if xs else ya.dtype
        px = np.zeros((1,), dt) if xs else x  # probe: dtype rules, OverflowError for a scalar now
        py = np.zeros((1,), dt) if ys else y
        nd = NB.binary(op, px, py).dtype
        if xs and ys:
            xa, ya = _recompute_not_hold(xa, ya), _recompute_not_hold(ya, xa)
        arrs = [v for v, h in ((xa, xs), (ya, ys)) if h]
        shape = self._bshape(*(v.shape for v in arrs))
        n = len(shape)
        spec = tuple(None if h else (v,) for v, h in ((x, xs), (y, ys)))
        args = []
        for v in arrs:
            args += [v, tuple(range(n - v.ndim, n))]
        r = da.blockwise(_binary_chunk, tuple(range(n)), *args, op=op, spec=spec, token="rt-" + op, dtype=nd,
                         meta=_meta(n, nd))
        return self._out(r, out)

    def _elementwise(self, fn, handles, dtype, token, **kw):
        arrs = [h.arr for h in handles]
        shape = self._bshape(*(v.shape for v in arrs))
        n = len(shape)
        args = []
        for v in arrs:
            args += [v, tuple(range(n - v.ndim, n))]
        return da.blockwise(fn, tuple(range(n)), *args, token=token, dtype=dtype, meta=_meta(n, dtype), **kw)

    def where(self, cond, x, y):
        xs = [v if isinstance(v, DaskHandle) else self._from_numpy(np.asarray(v)) for v in (cond, x, y)]
        nd = np.result_type(xs[1].dtype, xs[2].dtype) if xs[1].dtype != xs[2].dtype else xs[1].dtype
        return DaskHandle(self._elementwise(_where_chunk, xs, nd, "rt-where"))

    def clip(self, x, lo, hi):
        hs = [x] + [h for h in (lo, hi) if h is not None]
        NB.clip(np.zeros((1,), x.dtype), None if lo is None else np.zeros((1,), x.dtype),
                None if hi is None else np.zeros((1,), x.dtype))
        return DaskHandle(self._elementwise(_clip_chunk, hs, x.dtype, "rt-clip", has_lo=lo is not None,
                                            has_hi=hi is not None))

    def cast(self, x, dtype):
        a = x.arr
        nd = NP_DTYPE[dtype]
        return DaskHandle(a.map_blocks(_cast_chunk, dtype, token="rt-astype", dtype=nd, meta=_meta(a.ndim, nd)))

    # -- reductions, scans, sorting -------------------------------------------------------------------
    def reduce(self, op, x, axes, keepdims):
        a = x.arr
        axes = tuple(axes)
        nd = NB.reduce(op, np.zeros((1,), a.dtype), (0,), False).dtype
        if not axes:
            return DaskHandle(a.map_blocks(_red_agg, (), keepdims, op, nd, token="rt-" + op, dtype=nd,
                                           meta=_meta(a.ndim, nd)))
        acc = _ACCUM.get(a.dtype) if op in ("sum", "prod") else None
        r = da.reduction(a, _Partial(_red_chunk, op=op, acc=acc), _Partial(_red_agg, op=op, out_dtype=nd),
                         axis=axes, keepdims=keepdims, dtype=nd, concatenate=True, name="rt-" + op,
                         combine=_Partial(_red_combine, op=op),
                         meta=_meta(a.ndim if keepdims else a.ndim - len(axes), nd))
        return DaskHandle(r)

    def _along(self, x, axis):
        a = x.arr
        return a.rechunk({axis: -1}) if len(a.chunks[axis]) > 1 else a

    def _arg_tree(self, p: Any, op: str, axes: tuple, keepdims: bool) -> Any:
        """The winners' indices from the per-chunk partials ``p`` (structured (value, index), one per chunk
        along ``axes``): a tree reduction (``dask.array.reduction``, ``split_every`` partials per task)."""
        nd = len(p.shape) if keepdims else len(p.shape) - len(axes)
        r = da.reduction(p, _Partial(_arg_tree_chunk), _Partial(_arg_tree_agg, op=op), axis=axes,
                         keepdims=keepdims, dtype=p.dtype, concatenate=True, combine=_Partial(_arg_tree_combine, op=op),
                         name="rt-" + op, meta=_meta(nd, p.dtype))
        # (declared with the partials' dtype, which dask needs for its intermediate steps; the aggregate
        # returns the int64 indices: relabelled, no task added)
        return da.Array(r.dask, r.name, r.chunks, meta=_meta(nd, _I64))

    def _flat_source(self, x: DaskHandle) -> Any:
        """The N-d array a 1-d view is the C-order reshape of (``x = root.reshape(-1)``), else None."""
        r = x.root
        if r is None or r.ndim < 2 or x.recipe != (("reshape", (r.size,)),):
            return None
        x.arr  # re-derives the view if its root was written
        return r._arr

    def arg_reduce(self, op, x, axis, keepdims):
        src = self._flat_source(x) if x.ndim == 1 and x.size > 0 else None
        if src is not None and src.npartitions > 1:
            # argmax over a flattened N-d tensor: per chunk of the N-d array its winner's value and flat
            # index, then a tree over all chunks; the N-d array is never reshaped (that would shuffle it)
            st = np.dtype([("v", src.dtype), ("i", _I64)])
            p = src.map_blocks(_arg_partial_flat, op, src.shape, chunks=tuple((1,) * len(c) for c in src.chunks),
                               token="rt-" + op + "-chunk", dtype=st, meta=_meta(src.ndim, st))
            r = self._arg_tree(p, op, tuple(range(src.ndim)), False)
            return DaskHandle(r[None] if keepdims else r)
        a = x.arr
        if len(a.chunks[axis]) > 1 and a.shape[axis] > 0:
            # chunked: per chunk (value, global index) of the winner, then a tree over the chunks'
            # winners (first occurrence and first NaN win, as on NumPy): no axis gathered whole
            st = np.dtype([("v", a.dtype), ("i", _I64)])
            pchunks = tuple((1,) * len(c) if i == axis else c for i, c in enumerate(a.chunks))
            p = a.map_blocks(_arg_partial, op, axis, chunks=pchunks, token="rt-" + op + "-chunk", dtype=st,
                             meta=_meta(a.ndim, st))
            return DaskHandle(self._arg_tree(p, op, (axis,), keepdims))
        a = self._along(x, axis)
        drop = () if keepdims else (axis,)
        chunks = tuple((1,) if (i == axis and keepdims) else c for i, c in enumerate(a.chunks) if i not in drop)
        return DaskHandle(a.map_blocks(_arg_chunk, op, axis, keepdims, chunks=chunks, drop_axis=list(drop),
                                       token="rt-" + op, dtype=_I64, meta=_meta(len(chunks), _I64)))

    def scan(self, op, x, axis):
        a = self._along(x, axis)
        nd = NB.scan(op, np.zeros((1,), a.dtype), 0).dtype
        return DaskHandle(a.map_blocks(_scan_chunk, op, axis, token="rt-" + op, dtype=nd, meta=_meta(a.ndim, nd)))

    def argsort(self, x, axis, descending):
        a = self._along(x, axis)
        return DaskHandle(a.map_blocks(_argsort_chunk, axis, descending, token="rt-argsort", dtype=_I64,
                                       meta=_meta(a.ndim, _I64)))

    def sort(self, x, axis, descending):
        a = self._along(x, axis)
        idx = a.map_blocks(_argsort_chunk, axis, descending, token="rt-argsort", dtype=_I64, meta=_meta(a.ndim, _I64))
        vals = da.map_blocks(_take_along, a, idx, axis, token="rt-sort", dtype=a.dtype, meta=_meta(a.ndim, a.dtype))
        return DaskHandle(vals), DaskHandle(idx)

    # -- gather / scatter ----------------------------------------------------------------------------------
    def _key_positions(self, shape: tuple, key: tuple) -> np.ndarray:
        """Flat positions (C order, within ``shape``) of the elements ``key`` selects, in the result's
        shape: sum over axes of the broadcast axis ramps indexed by ``key`` (NumPy's own placement
        rules).  Index handles in ``key`` are computed."""
        hk = tuple(self._host(k) if isinstance(k, DaskHandle) else k for k in key)
        pos = None
        stride = 1
        strides = []
        for n in reversed(shape):
            strides.append(stride)
            stride *= max(n, 1)
        strides.reverse()
        for k, (n, s) in enumerate(zip(shape, strides)):
            ramp = (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
            part = np.broadcast_to(ramp, shape)[hk]
            pos = part if pos is None else pos + part
        if pos is None:  # a 0-d array: the one position (with the key's new axes)
            pos = np.zeros((), np.int64)[hk]
        return np.asarray(pos, np.int64)

    def gather(self, x, key):
        a = x.arr
        pos = self._key_positions(x.shape, tuple(key))
        if pos.size == 0:
            return self._from_numpy(np.empty(pos.shape, a.dtype))
        flat = _dreshape(a, (a.size,))
        return DaskHandle(_dreshape(flat[pos.reshape(-1)], pos.shape))

    def scatter(self, x, key, values, mode="set"):
        if mode not in ("set", "add"):
            raise ValueError(f"scatter: mode must be 'set' or 'add', got {mode!r}")
        if x.readonly:
            raise ValueError("scatter: assignment destination is read-only (a broadcast view)")
        pos = self._key_positions(x.shape, tuple(key))
        if isinstance(values, DaskHandle):
            v = values.arr
            if v.dtype != x.dtype:
                v = v.map_blocks(_cast_chunk, RT_DTYPE[x.dtype], token="rt-astype", dtype=x.dtype,
                                 meta=_meta(v.ndim, x.dtype))
            v = _dreshape(da.broadcast_to(v, pos.shape), (pos.size,)) if pos.size else v
        else:
            NB.full((), values, RT_DTYPE[x.dtype])  # checks now
            v = values
        p = pos.reshape(-1)
        self._write(x, lambda old: _dreshape(_scatter_flat(_dreshape(old, (old.size,)), p, v, mode), old.shape))

    def searchsorted(self, sorted_, values, side):
        s = sorted_.arr
        s = s.rechunk(-1) if len(s.chunks[0]) > 1 else s
        v = values.arr
        n = v.ndim
        r = da.blockwise(_searchsorted_chunk, tuple(range(n)), v, tuple(range(n)), s, (n,), side=side,
                         token="rt-searchsorted", concatenate=True, dtype=_I64, meta=_meta(n, _I64))
        return DaskHandle(r)

    def nonzero(self, x):
        return tuple(self._from_numpy(i) for i in NB.nonzero(self._host(x)))

    # -- memory -----------------------------------------------------------------------------------------------
    def copy(self, x):
        return DaskHandle(x.arr)  # dask arrays are immutable: a new root sharing the graph is a copy

    def contiguous(self, x):
        return x if self.is_c_contiguous(x) else DaskHandle(x.arr)

    def concatenate(self, hs, axis):
        arrs = [h.arr for h in hs]
        return DaskHandle(da.concatenate(arrs, axis=axis) if len(arrs) > 1 else arrs[0])

    # -- products ----------------------------------------------------------------------------------------------
    def matmul(self, a, b):
        A, B = a.arr, b.arr
        NB.matmul(np.zeros((1, 1), A.dtype), np.zeros((1, 1), B.dtype))  # dtype support, now
        va, vb = A.ndim == 1, B.ndim == 1
        if va:
            A = A[None, :]
        if vb:
            B = B[:, None]
        batch = self._bshape(A.shape[:-2], B.shape[:-2])
        nb_ = len(batch)
        A = da.broadcast_to(A, batch + A.shape[-2:]) if A.shape[:-2] != batch else A
        B = da.broadcast_to(B, batch + B.shape[-2:]) if B.shape[:-2] != batch else B
        bi = tuple(range(nb_))
        i, k, j = nb_, nb_ + 1, nb_ + 2
        nd = A.dtype
        if len(A.chunks[-1]) > 1 and not nd.hasobject:
            # the contracted axis is chunked: one partial product per (i, k, j) block triple, summed over
            # k by a tree reduction (no row or column of blocks gathered in one task; as dask.array)
            cd = _ACCUM.get(nd, nd)
            p = da.blockwise(_matmul_partial, bi + (i, j, k), A, bi + (i, k), B, bi + (k, j), cd=cd,
                             adjust_chunks={k: 1}, concatenate=False, token="rt-matmul-partial", dtype=cd,
                             meta=_meta(nb_ + 3, cd))
            r = da.reduction(p, _Partial(_psum, dtype=cd), _Partial(_psum, dtype=cd, out_dtype=nd), axis=(nb_ + 2,),
                             keepdims=False, dtype=nd, concatenate=False, combine=_Partial(_psum, dtype=cd),
                             name="rt-matmul", meta=_meta(nb_ + 2, nd))
        else:
            r = da.blockwise(_matmul_chunk, bi + (i, j), A, bi + (i, k), B, bi + (k, j), concatenate=True,
                             token="rt-matmul", dtype=nd, meta=_meta(nb_ + 2, nd))
        if va and vb:
            r = r[..., 0, 0]
        elif va:
            r = r[..., 0, :]
        elif vb:
            r = r[..., 0]
        return DaskHandle(r)

    # -- host --------------------------------------------------------------------------------------------------
    def to_host(self, x):
        return self._host(x)

    def to_list(self, x):
        return NB.to_list(self._host(x))

    # -- linear algebra and FFT --------------------------------------------------------------------------------
    def linalg(self, op, *args, **params):
        # computed: the NumPy backend on the whole operands (NumericalFailure raised now, as the contract says)
        r = NB.linalg(op, *(self._host(h) if isinstance(h, DaskHandle) else h for h in args), **params)
        if isinstance(r, tuple):
            return tuple(self._from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v for v in r)
        return self._from_numpy(np.asarray(r))

    def fft(self, op, x, s, axes, norm):
        a = x.arr
        if any(len(a.chunks[ax]) > 1 for ax in axes):
            a = a.rechunk({ax: -1 for ax in axes})
        probe_shape = tuple(n if i in axes else 1 for i, n in enumerate(a.shape))
        probe = NB.fft(op, np.zeros(probe_shape, a.dtype), s, axes, norm)
        chunks = tuple((probe.shape[i],) if i in axes else c for i, c in enumerate(a.chunks))
        return DaskHandle(a.map_blocks(_fft_chunk, op, tuple(s), tuple(axes), norm, token="rt-" + op, chunks=chunks,
                                       dtype=probe.dtype, meta=_meta(a.ndim, probe.dtype)))

    # -- raw bytes and foreign buffers ---------------------------------------------------------------------------
    def to_bytes(self, x):
        return NB.to_bytes(self._host(x))

    def from_buffer(self, buf, dtype, shape, offset):
        raise TypeError("from_buffer: the dask backend has no byte buffers (capability 'buffer'); "
                        "read the data with the numpy backend and convert it with t.to_backend('dask')")

    def dlpack(self, x, stream, max_version, dl_device, copy):
        # computed, then exported from host memory: the capsule owns the computed values (there is no
        # memory to share with the lazy tensor, so copy=False cannot alias it either)
        return NB.dlpack(np.ascontiguousarray(self._host(x)), stream, max_version, dl_device, None)

    def dlpack_device(self, x):
        return NB.dlpack_device(None)  # the CPU: computed values are exported from host memory

    def from_dlpack(self, obj, copy):
        a, d = NB.from_dlpack(obj, copy)
        if copy is not False and a.flags.writeable:
            a = a.copy()  # a snapshot, as asarray takes (copy=False: the producer's memory, shared)
        return self._from_numpy(a), d


#: the positions (after ``self``) of the handle arguments of the primitives that take NumPy handles too:
#: a NumPy-backend tensor meeting Dask tensors (``x_dask + x_numpy``, ``where(numpy_mask, ...)``) reaches
#: them as an ndarray, which is taken as a constant (a snapshot, as ``asarray``); "*0": a list of handles
_NUMPY_OPERANDS = {
    "unary": (1,), "binary": (1, 2), "where": (0, 1, 2), "clip": (0, 1, 2), "cast": (0,), "reduce": (1,),
    "arg_reduce": (1,), "scan": (1,), "sort": (0,), "argsort": (0,), "matmul": (0, 1), "concatenate": ("*0",),
    "searchsorted": (0, 1), "fft": (1,), "gather": (0,), "scatter": (2,), "copy": (0,), "contiguous": (0,),
    "reshape": (0,), "expand": (0,), "permute": (0,), "view_index": (0,), "flip": (0,), "to_host": (0,),
    "to_list": (0,), "to_bytes": (0,), "value_range": (0,), "nonzero": (0,),
}


def _taking_numpy(fn: Any, pos: tuple) -> Any:
    def method(self, *args, **kw):
        args = list(args)
        for p in pos:
            if p == "*0":
                if args and any(type(h) is np.ndarray for h in args[0]):
                    args[0] = [self._const(h) if type(h) is np.ndarray else h for h in args[0]]
            elif p < len(args) and type(args[p]) is np.ndarray:
                args[p] = self._const(args[p])
        return fn(self, *args, **kw)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


for _n, _pos in _NUMPY_OPERANDS.items():
    setattr(DaskBackend, _n, _taking_numpy(getattr(DaskBackend, _n), _pos))
del _n, _pos


# ---------------------------------------------------------------------------------------------
# chunked file I/O (runetensor.io): each chunk reads / writes its own slice of the file
# ---------------------------------------------------------------------------------------------
#: save: blocks are computed in batches of about this many bytes (at least one block), in C order
WRITE_BATCH_BYTES = 1 << 26


def _file_stamp(path: str) -> tuple:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


def _npy_chunk(path, offset, nd, shape, fortran, swap, canon, stamp, fname, block_info=None):
    """One chunk of a .npy file: a copy of its slice, read through a read-only memory map."""
    if _file_stamp(path) != stamp:
        raise ValueError(f"{fname}: {path!r} changed (replaced or modified) after it was opened lazily with "
                         "backend='dask'; load it again")
    key = tuple(slice(lo, hi) for lo, hi in block_info[None]["array-location"])
    mm = np.memmap(path, dtype=nd, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")
    try:
        out = np.array(mm[key], order="C")
    finally:
        del mm
    if swap:
        out = out.byteswap()
    if canon and out.size:
        top = int(out.view(np.uint8).max())
        if top > canon:
            raise ValueError(f"{fname}: {path!r}: a byte of {top} is not a valid {RT_DTYPE[nd]} value "
                             f"(expected at most {canon}); the file is corrupt")
    return out


def read_npy(path: str, offset: int, dtype: Any, shape: tuple, fortran: bool, swap: bool, chunks: Any,
             fname: str = "load_npy") -> DaskHandle:
    """A lazy Dask handle over the data of a .npy file (``offset``: the data's start): each chunk is a
    task that memory-maps the file and copies its own slice (the file is never read whole).  The
    file's identity (inode, size, mtime) is recorded: a chunk read after it changed raises."""
    nd = NP_DTYPE[dtype]
    shape = tuple(int(n) for n in shape)
    be = dask_backend
    if math.prod(shape) == 0:
        return be._from_numpy(np.empty(shape, nd))
    path = os.path.abspath(path)
    ch = be._chunks(shape, nd) if chunks is None else normalize_chunks(chunks, shape, dtype=nd)
    canon = {D.bool: 1, D.int4: 15, D.uint4: 15}.get(dtype, 0)
    arr = da.map_blocks(_npy_chunk, path, int(offset), nd, shape, bool(fortran), bool(swap), canon,
                        _file_stamp(path), fname, chunks=ch, dtype=nd, meta=_meta(len(shape), nd),
                        name="rt-load_npy-" + uuid.uuid4().hex)
    return DaskHandle(arr)


def write_c_order(f: Any, h: DaskHandle, little: bool = True) -> None:
    """Write ``h``'s elements (C order, little-endian) to the seekable binary file ``f`` from its
    current position, block by block: the blocks are computed in batches of about
    ``WRITE_BATCH_BYTES`` and each is written at its offsets (one ``write`` per contiguous run), so
    the tensor is never held whole.  Leaves ``f`` positioned after the data."""
    a = h.arr
    base = f.tell()
    isz = a.dtype.itemsize
    shape = a.shape
    nd = len(shape)
    cstr = [1] * nd
    for j in range(nd - 2, -1, -1):
        cstr[j] = cstr[j + 1] * shape[j + 1]
    bounds = [np.cumsum((0,) + c).tolist() for c in a.chunks]
    blocks = a.to_delayed(optimize_graph=True)
    batch: list = []
    size = 0

    def flush() -> None:
        vals = dask.compute(*(d for _, d in batch))
        for (idx, _), v in zip(batch, vals):
            _write_block(f, base, np.asarray(v), idx, bounds, shape, cstr, isz, little)
        batch.clear()

    for idx in np.ndindex(*a.numblocks):
        batch.append((idx, blocks[idx]))
        size += math.prod(bounds[j][i + 1] - bounds[j][i] for j, i in enumerate(idx)) * isz
        if size >= WRITE_BATCH_BYTES:
            flush()
            size = 0
    if batch:
        flush()
    f.seek(base + math.prod(shape) * isz)


def _write_block(f, base, v, idx, bounds, shape, cstr, isz, little):
    lo = [bounds[j][i] for j, i in enumerate(idx)]
    hi = [bounds[j][i + 1] for j, i in enumerate(idx)]
    if v.size == 0:
        return
    v = np.ascontiguousarray(v)
    if not little and isz > 1:  # pragma: no cover  (big-endian hosts)
        v = v.byteswap()
    # the trailing axes the block spans whole and the last one it does not make one contiguous run
    m = len(shape) - 1
    while m > 0 and lo[m] == 0 and hi[m] == shape[m]:
        m -= 1
    run = (hi[m] - lo[m]) * cstr[m] * isz
    rows = v.view(np.uint8).reshape(-1, run)
    for r, outer in enumerate(np.ndindex(*(hi[j] - lo[j] for j in range(m)))):
        off = lo[m] * cstr[m] + sum((lo[j] + k) * cstr[j] for j, k in enumerate(outer))
        f.seek(base + off * isz)
        f.write(rows[r])


class _Partial:
    """A picklable partial for dask's reduction callbacks (keyword arguments fixed)."""

    def __init__(self, fn, **kw):
        self.fn, self.kw = fn, kw

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs, **self.kw)

    def __dask_tokenize__(self):
        return (self.fn.__module__, self.fn.__qualname__, sorted(self.kw.items(), key=lambda kv: kv[0]))


def _registered(name: str) -> Backend:
    # deferred: cycle by design: the backend registry (runetensor._backend) imports this module
    from . import get_backend
    return get_backend(name)


dask_backend = DaskBackend()


def map_blocks_handle(block_fn: Any, arrays: list, block_dtype: Any, chunks: Any, drop_axis: Any, new_axis: Any,
                      token: str, **kwargs: Any) -> "DaskHandle":
    """``rt.map_blocks``'s graph: ``block_fn(*blocks, **kwargs)`` over the matching blocks of the dask
    ``arrays``, each result block of ``block_dtype`` (a runetensor dtype), lazily."""
    nd = NP_DTYPE[block_dtype]
    r = da.map_blocks(block_fn, *arrays, chunks=chunks, drop_axis=drop_axis, new_axis=new_axis, dtype=nd,
                      token=token, meta=np.empty((0,) * max(a.ndim for a in arrays), nd), **kwargs)
    return DaskHandle(r)
