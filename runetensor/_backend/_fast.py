"""Fast paths of the NumPy backend (where plain NumPy leaves speed on the table).

Every function here returns exactly what the plain path of
:mod:`.numpy_backend` returns (bit for bit), except the floating-point sums,
whose summation order differs (see ``docs/performance.md`` for the error
bound).  Each returns ``None`` when it does not apply and the caller then takes
the plain path.  ``ENABLED = False`` switches every fast path off (the tests
compare both paths).

What they do:

* **Buffer reuse** (:class:`BufferPool`): large results go into buffers of
  the same byte size that the pool handed out before and that nothing refers
  to any more (checked by reference count), instead of fresh memory whose
  pages the kernel must fault in and zero on first touch.
* **Threads**: large elementwise ufuncs, sums and axis reductions are split
  into chunks run on :mod:`runetensor._backend._parallel`'s pool (NumPy releases the
  GIL inside ufunc loops).  Chunk boundaries are multiples of 64 elements, so
  every element goes through the same SIMD lane grouping and alignment as in
  one whole call.
* **Low-precision floats** (bfloat16, float8): converted to float32, computed
  and rounded back chunk by chunk in cache-sized scratch buffers, on threads.
  bfloat16 and float8 ``add sub mul div maximum minimum neg abs square
  sqrt`` (and float16 ``add sub mul maximum minimum``) run fused (widen,
  compute, round in one pass) in the optional compiled kernels.
* **Compiled kernels** (optional, ``runetensor._backend._kernels``, built from
  ``_kernels.c`` when a C compiler is available): fused bfloat16 / float16 /
  float8 ops and
  float32 sums, GIL released so the chunks run in parallel.  ``KERNELS =
  False`` (or a failed import) gives the NumPy-only paths.
* **Blocked transpose copy** for ``copy``/``contiguous`` of 2-d transposed views.
* **Stable argsort / sort** of <= 32-bit keys: the stable order is the order of
  the unique 64-bit keys ``(order-preserving bits of the value) << 32 | index``,
  which NumPy's (SIMD) unstable sort of ``uint64`` sorts much faster than its
  stable merge sort of the values.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import warnings

import numpy as np

from ._parallel import chunk_ranges, get_num_threads, parallel_for, share_claims

warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"runetensor\._backend\._fast")
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=r"runetensor\._backend\._fast")

#: master switch (tests turn it off to get the plain path)
ENABLED = True
#: element count from which elementwise work is split across threads
PAR_MIN = 1 << 19
#: the same for memory-bound work (copies, fills, additions, comparisons, bit operations): waking a
#: helper thread and handing the GIL over costs ~50-70 us on this VM, which such an op on fewer
#: elements does not earn back (isnan of 5e5 float32: 56 us alone, 125 us on two threads)
PAR_MIN_CHEAP = 1 << 20
#: elements per chunk of threaded elementwise work (chunks are claimed dynamically by the threads)
ELEM_CHUNK = 1 << 18
#: elementwise work is split into about this many chunks per thread (claimed dynamically); every
#: chunk costs a GIL hand-off (a futex wake-up, ~10-20 us on a VM), so fewer, larger chunks win
ELEM_SPLIT = 4


def elem_chunk(n: int) -> int:
    """Elements per chunk of threaded elementwise work over ``n`` elements (at least ``ELEM_CHUNK``).

    Elementwise results do not depend on the chunking, so it may follow the thread count."""
    return max(ELEM_CHUNK, -(-n // (get_num_threads() * ELEM_SPLIT)))


#: elements per chunk when an elementwise kernel claims its chunks in C (:func:`elem_claim`)
CLAIM_CHUNK = 1 << 16


def elem_claim(n: int, call) -> bool:
    """Run ``call(chunk, counter, True)`` once: a compiled elementwise kernel over ``[0, n)`` in chunks it claims
    in C and shares with the pool's polling helpers (no wake-up, no GIL hand-off: ``share_claims``).  ``False``
    (nothing run) where that does not apply: :func:`elem_for` then runs the work.  Elementwise only."""
    if n <= elem_chunk(n) or not share_claims(get_num_threads()):
        return False
    call(CLAIM_CHUNK, np.zeros(1, _I64), True)
    return True


def elem_for(n: int, fn, serial_below: int = 0) -> None:
    """Run ``fn(lo, hi)`` over ``[0, n)``: in elementwise chunks (``elem_chunk``, boundaries multiples of
    ``ALIGN``) on the threads, or once on the calling thread when ``n < serial_below`` or the pool
    has one thread.  For elementwise work only: the result must not depend on the chunking."""
    if n < serial_below or get_num_threads() <= 1:
        fn(0, n)
        return
    ranges = chunk_ranges(n, elem_chunk(n), ALIGN)
    parallel_for(lambda i: fn(*ranges[i]), len(ranges))


#: element count from which sums are split across threads / lanes
RED_MIN = 1 << 17
#: elements per chunk of a threaded sum (fixed: the result does not depend on the thread count)
RED_CHUNK = 1 << 20
#: chunk boundaries (in elements) are multiples of this
ALIGN = 64
#: elements per chunk of the low-precision pipeline (scratch stays in L2), chunks per work item
LOWP_CHUNK = 1 << 17
LOWP_GROUP = 2
#: element count from which the low-precision pipeline is used
LOWP_MIN = 1 << 13
#: element count from which a 2-d transposed copy is blocked
TCOPY_MIN = 1 << 14
TCOPY_BLOCK = 64
#: axis length from which stable argsort uses 64-bit keys
SORT_MIN = 256

_F32 = np.dtype(np.float32)
_U16 = np.dtype(np.uint16)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_F16 = np.dtype(np.float16)
#: bfloat16 and the two float8 dtypes, set by :func:`set_lowp` when the NumPy backend loads ml_dtypes (at the
#: first use of a low-precision dtype: its import takes ~0.5 s); until then no array has them, and these
#: stand-ins (a structured dtype no operand has; no float8) make every test on them false
_BF16 = np.dtype([("bfloat16 (ml_dtypes not loaded)", np.uint16)])
_F8: tuple[np.dtype, ...] = ()


try:  # optional compiled kernels; without them every path below is NumPy's
    from . import _kernels
except ImportError:  # pragma: no cover  (no C compiler at install time)
    _kernels = None

#: use the compiled kernels (False, or a failed import: the NumPy-only fast paths)
KERNELS = _kernels is not None


def _quiet():
    """IEEE results without warnings (the plain path's warnings are filtered too), in any thread."""
    return np.errstate(all="ignore")


# ---------------------------------------------------------------------------
# Buffer reuse
# ---------------------------------------------------------------------------
def _phys_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


class BufferPool:
    """Recycles large result buffers of equal byte size.

    The pool keeps each buffer it hands out (a 1-d ``uint8`` array; results are
    views of it).  Every view of a NumPy array holds a reference to the array
    that owns the memory, so a buffer whose reference count is back to the
    pool's own references is referred to by nothing else and can be handed out
    again.  At most ``per_size`` buffers per size and ``max_bytes`` in all are
    kept; beyond that, results are ordinary fresh arrays.
    """

    def __init__(self, max_bytes: int, min_bytes: int = 1 << 20, per_size: int = 4):
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.per_size = per_size
        self._bufs: dict[int, list[np.ndarray]] = {}
        self._held = 0
        self._lock = threading.Lock()
        probe = [np.empty(8, np.uint8)]
        self._free_refs = self._refs(probe, 0)  # count when only the pool refers to it

    @staticmethod
    def _refs(lst: list, i: int) -> int:
        return sys.getrefcount(lst[i])

    def empty(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """An uninitialised C-contiguous array, in a recycled buffer when one is free."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.min_bytes or dtype.hasobject or not ENABLED:
            return np.empty(shape, dtype)
        with self._lock:
            lst = self._bufs.get(nbytes)
            if lst is None:
                lst = self._bufs[nbytes] = []
            for i in range(len(lst)):
                if self._refs(lst, i) == self._free_refs:
                    lst.append(lst.pop(i))  # most recently used last
                    return lst[-1].view(dtype).reshape(shape)
            try:
                buf = np.empty(nbytes, np.uint8)
            except MemoryError:  # name the caller's shape and dtype, not the pool's uint8 buffer
                err = MemoryError(f"cannot allocate {nbytes} bytes for an array of shape {tuple(shape)} "
                                  f"and dtype {dtype}")
                err.shape, err.dtype = tuple(shape), dtype  # as NumPy's own (the backend rewords it)
                raise err from None
            if len(lst) < self.per_size and self._make_room(nbytes):
                lst.append(buf)
                self._held += nbytes
            return buf.view(dtype).reshape(shape)

    def _make_room(self, nbytes: int) -> bool:
        if nbytes > self.max_bytes:
            return False
        for size in list(self._bufs):
            if self._held + nbytes <= self.max_bytes:
                break
            lst = self._bufs[size]
            for i in range(len(lst) - 1, -1, -1):
                if self._refs(lst, i) == self._free_refs:
                    del lst[i]
                    self._held -= size
                    if self._held + nbytes <= self.max_bytes:
                        break
        return self._held + nbytes <= self.max_bytes

    def owns(self, x: np.ndarray) -> bool:
        """Whether ``x`` is a whole buffer of this pool (a result it handed out, not a part of one)."""
        b = x.base
        if type(b) is not np.ndarray or b.base is not None or b.nbytes != x.nbytes:
            return False
        with self._lock:
            return any(y is b for y in self._bufs.get(b.nbytes, ()))

    def clear(self) -> None:
        """Forget every buffer (those still in use stay alive through their views)."""
        with self._lock:
            self._bufs.clear()
            self._held = 0

    def _reset_after_fork(self) -> None:
        """In a forked child: a fresh lock and no buffers.  Another thread of the parent may have
        held the lock (or been between two updates of the lists) at the fork; that thread does
        not exist in the child, so the old lock would never be released.  The old lock is not
        touched; buffers still in use stay alive through their views."""
        self._lock = threading.Lock()
        self._bufs = {}
        self._held = 0


buffer_pool = BufferPool(max_bytes=min(1 << 30, _phys_bytes() // 8))
empty = buffer_pool.empty


def _after_fork_in_child() -> None:
    buffer_pool._reset_after_fork()
    global _tls
    _tls = threading.local()  # the forking thread's scratch buffers: harmless, but start clean


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------
def _probe(a):
    """A one-element view of operand ``a`` (scalars pass through), for result-dtype probing."""
    if type(a) is np.ndarray and a.ndim:
        return a[(slice(0, 1),) * a.ndim]
    return a


def _operands_ok(ops) -> bool:
    for a in ops:
        if type(a) is np.ndarray:
            if not a.flags.c_contiguous or a.dtype.hasobject:
                return False
        elif not isinstance(a, (bool, int, float, complex, np.generic)):
            return False
    return True


#: memory-bound ufuncs (a few operations per element): threaded from PAR_MIN_CHEAP elements
_CHEAP = frozenset({np.add, np.subtract, np.multiply, np.negative, np.absolute, np.positive, np.square,
                    np.maximum, np.minimum, np.fmax, np.fmin, np.copysign, np.conjugate,
                    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
                    np.isnan, np.isinf, np.isfinite, np.signbit, np.logical_and, np.logical_or,
                    np.logical_xor, np.logical_not, np.bitwise_and, np.bitwise_or, np.bitwise_xor,
                    np.invert, np.left_shift, np.right_shift, np.floor, np.ceil, np.trunc, np.rint,
                    np._core.umath.clip})


def _run_ufunc(fn, ops, out, shape):
    """``fn(*ops, out=out)`` split across threads; ``out`` is fresh and C-contiguous."""
    n = out.size
    if get_num_threads() <= 1 or n < (PAR_MIN_CHEAP if fn in _CHEAP else PAR_MIN) or n <= ELEM_CHUNK:
        with _quiet():
            fn(*ops, out=out)
        return out
    if all(type(a) is not np.ndarray or a.shape == shape or a.ndim == 0 for a in ops):
        flat = [a.reshape(-1) if type(a) is np.ndarray and a.ndim else a for a in ops]
        of = out.reshape(-1)
        ranges = chunk_ranges(n, elem_chunk(n), ALIGN)

        def work(i):
            lo, hi = ranges[i]
            with _quiet():
                fn(*[a[lo:hi] if type(a) is np.ndarray and a.ndim else a for a in flat], out=of[lo:hi])
    else:
        rows = shape[0]
        if rows < 2:
            with _quiet():
                fn(*ops, out=out)
            return out
        nd = len(shape)
        ranges = chunk_ranges(rows, max(1, elem_chunk(n) // max(1, n // rows)))

        def work(i):
            lo, hi = ranges[i]
            with _quiet():
                fn(*[a[lo:hi] if type(a) is np.ndarray and a.ndim == nd and a.shape[0] == rows else a
                     for a in ops], out=out[lo:hi])
    parallel_for(work, len(ranges))
    return out


def ufunc_call(fn, *ops):
    """``fn(*ops)`` for a NumPy ufunc, into a recycled buffer and split across threads.

    ``None`` when not applicable (object dtype, non-contiguous operands, not a ufunc).
    """
    if not ENABLED or not isinstance(fn, np.ufunc) or not _operands_ok(ops):
        return None
    arrs = [a for a in ops if type(a) is np.ndarray]
    shape = arrs[0].shape if all(a.shape == arrs[0].shape for a in arrs) else \
        np.broadcast_shapes(*[a.shape for a in arrs])
    n = math.prod(shape)
    small = get_num_threads() <= 1 or n < (PAR_MIN_CHEAP if fn in _CHEAP else PAR_MIN)
    if small and n * max(a.itemsize for a in arrs) < buffer_pool.min_bytes and not (KERNELS and _F16 in
                                                                                   [a.dtype for a in arrs]):
        return None  # neither threads nor a recycled buffer (float16 still goes to its kernels)
    with _quiet():
        rd = fn(*[_probe(a) for a in ops]).dtype  # the loop NumPy picks (raises as the plain call would)
    if rd.hasobject:
        return None
    if KERNELS and rd == _F16 and len(ops) == 2:
        r = _f16_kernel(fn, ops, shape)
        if r is not None:
            return r
    if small and n * rd.itemsize < buffer_pool.min_bytes:
        return None  # neither a recycled buffer nor threads: NumPy's own call is cheaper
    return _run_ufunc(fn, ops, empty(shape, rd), shape)


def _f16_kernel(fn, ops, shape):
    """float16 ``add subtract multiply true_divide maximum minimum`` of float16 arrays (0-d ones
    broadcast) in the compiled kernels, on threads; ``None`` when not applicable."""
    code = _KF16.get(fn)
    if code is None:
        return None
    name = _F16_NAMES[fn]
    rule = _NAN_RULES.get(("f16", name, _layout(ops)), -1) if name in _NAN_OPS else 0
    if rule < 0:
        return None
    flat = []
    for a in ops:
        if type(a) is not np.ndarray or a.dtype != _F16 or (a.ndim and a.shape != shape):
            return None
        flat.append(a.reshape(-1).view(_U16))
    out = empty(shape, _F16)
    o = out.reshape(-1).view(_U16)
    n = out.size
    if n == 0:
        return out
    kern = _kernels.f16_binary
    if not elem_claim(n, lambda *c: kern(code, flat[0], flat[1], o, 0, n, rule, *c)):
        elem_for(n, lambda lo, hi: kern(code, flat[0], flat[1], o, lo, hi, rule))
    return out


#: the 2- and 1-byte float formats: their unsigned view and sign bit (neg/abs are sign-bit operations)
_SIGN = {_F16: (_U16, 0x8000)}  # (bfloat16, float8: set_lowp)


def sign_op(op, x):
    """``neg`` or ``abs`` of a float16 / bfloat16 / float8 array as a sign-bit operation (flip or clear).

    IEEE 754's negate and abs only touch the sign bit (NaN payloads kept), which
    is what NumPy's float16 loops and ml_dtypes' own ufuncs do; one integer pass
    over the bits (threaded when large) instead of a widen-compute-narrow trip.
    ``None`` for other dtypes or ops.
    """
    um = _SIGN.get(x.dtype)
    if um is None or op not in ("neg", "abs"):
        return None
    u, m = um
    fn, k = (np.bitwise_xor, u.type(m)) if op == "neg" else (np.bitwise_and, u.type(m - 1))
    out = empty(x.shape, x.dtype)
    xv = x.view(u) if x.ndim else x.reshape(1).view(u).reshape(())
    ov = out.view(u) if out.ndim else out.reshape(1).view(u).reshape(())
    if ENABLED and x.flags.c_contiguous:
        _run_ufunc(fn, (xv, k), ov, x.shape)
    else:
        fn(xv, k, out=ov)
    return out


#: per format: (mask of the magnitude bits, largest finite magnitude pattern, infinity's pattern or None)
_CLASS = {_F16: (0x7FFF, 0x7BFF, 0x7C00)}  # (bfloat16, float8: set_lowp)
_BIT_TESTS = ("isnan", "isinf", "isfinite", "signbit")


def bit_test(op, x):
    """``isnan isinf isfinite signbit`` of a float16 / bfloat16 / float8 array, read off the bits.

    Two integer passes (mask, compare) instead of a widen-and-test trip or
    ml_dtypes' per-element loops; threaded when large.  The same answers as the
    float tests (every value is checked in tests/test_fast_paths.py).  ``None``
    for other dtypes or ops.
    """
    cls = _CLASS.get(x.dtype)
    if cls is None or op not in _BIT_TESTS:
        return None
    u = _SIGN[x.dtype][0]
    mag, fin, inf = cls
    xv = x.view(u) if x.ndim else x.reshape(1).view(u).reshape(())
    out = empty(x.shape, np.dtype(np.bool_))
    if op == "isinf" and inf is None:
        out[...] = False
        return out
    if op == "signbit":
        test, k, m = np.greater, u.type(mag), None
    else:
        test, k = {"isnan": (np.greater, inf if inf is not None else fin), "isinf": (np.equal, inf),
                   "isfinite": (np.less_equal, fin)}[op]
        k, m = u.type(k), u.type(mag)

    def run(src, dst):
        if m is None:
            test(src, k, out=dst)
        else:
            test(np.bitwise_and(src, m), k, out=dst)

    if not ENABLED or not x.flags.c_contiguous:
        run(xv, out)
        return out
    xf, of = xv.reshape(-1), out.reshape(-1)
    elem_for(x.size, lambda lo, hi: run(xf[lo:hi], of[lo:hi]), PAR_MIN_CHEAP)
    return out


def take_rows(x, key):
    """``x[key]`` when ``key`` is one int64 index array on axis 0 and full slices elsewhere: the
    index array split across threads, each chunk gathered by ``np.take`` straight into its part
    of the result (the indices are in range and non-negative: the contract's guarantee, so no
    per-element bounds check).  The same values as ``x[key]``; ``None`` when not applicable."""
    if not ENABLED or get_num_threads() <= 1 or not key or x.dtype.hasobject:
        return None
    idx = key[0]
    if type(idx) is not np.ndarray or idx.dtype != _I64 or idx.size < PAR_MIN or x.ndim == 0:
        return None
    for k, dim in zip(key[1:], x.shape[1:]):
        if type(k) is not slice or k.start not in (0, None) or k.step not in (1, None) \
                or k.stop not in (dim, None):
            return None
    if len(key) > x.ndim:
        return None
    flat = idx.reshape(-1)
    out = empty(idx.shape + x.shape[1:], x.dtype)
    of = out.reshape((flat.size,) + x.shape[1:])
    elem_for(flat.size, lambda lo, hi: np.take(x, flat[lo:hi], axis=0, out=of[lo:hi], mode="clip"))
    return out


def philox_words(k0: int, k1: int, n: int):
    """Words ``0 .. n-1`` of the Philox4x32-10 stream under the key ``(k0, k1)`` (uint32), from the
    compiled kernel in threaded chunks (word ``i`` depends only on the key and ``i``, so the chunking
    changes nothing); ``None`` without the kernels."""
    if not (ENABLED and KERNELS):
        return None
    out = empty((n,), np.dtype(np.uint32))
    if n == 0:
        return out
    kern = _kernels.philox_stream
    elem_for(n, lambda lo, hi: kern(k0, k1, out[lo:hi], lo, hi))
    return out


def philox_uniform(k0: int, k1: int, n: int, f64: bool):
    """The contract's ``random_uniform`` values ``0 .. n-1`` (float32, or float64 from word pairs),
    fused in the compiled kernel (stream words straight to floats), threaded chunks; ``None``
    without the kernels."""
    if not (ENABLED and KERNELS):
        return None
    out = empty((n,), np.dtype(np.float64 if f64 else np.float32))
    if n == 0:
        return out
    kern = _kernels.philox_uniform
    elem_for(n, lambda lo, hi: kern(k0, k1, out[lo:hi], lo, hi, f64))
    return out


def fill(shape, value, nd):
    """``np.full(shape, value, nd)`` into a recycled buffer, filled in threaded chunks; ``None`` when
    small, for zeros (NumPy's ``calloc`` maps zero pages lazily: nothing to win) or object dtype."""
    n = math.prod(shape)
    if not ENABLED or n < PAR_MIN_CHEAP or nd.hasobject or (type(value) in (int, float, bool) and value == 0
                                                      and not (type(value) is float and math.copysign(1.0, value) < 0)):
        return None
    v = np.asarray(value, dtype=nd)  # raises as np.full would for a value the dtype cannot hold
    out = empty(shape, nd)
    of = out.reshape(-1)
    elem_for(n, lambda lo, hi: np.copyto(of[lo:hi], v))
    return out


def chunked(fn, ops, nd):
    """``fn(*ops)`` for an elementwise composite ``fn(*ops, out=...)`` (several NumPy passes, e.g. the
    seed's round half away from zero, integer division truncating toward zero): run chunk by
    chunk, each chunk's passes on cache-resident data, chunks over the threads, into a recycled
    buffer of dtype ``nd``.  Operands: C-contiguous arrays of one shape, or scalars / 0-d arrays.
    Elementwise, so the same values as one whole call; ``None`` when not applicable."""
    arrs = [a for a in ops if type(a) is np.ndarray and a.ndim]
    if not ENABLED or not arrs or nd.hasobject:
        return None
    shape = arrs[0].shape
    n = arrs[0].size
    if n < PAR_MIN or any(a.shape != shape or not a.flags.c_contiguous or a.dtype.hasobject for a in arrs):
        return None
    out = empty(shape, nd)
    of = out.reshape(-1)
    flat = [a.reshape(-1) if type(a) is np.ndarray and a.ndim else a for a in ops]

    def work(lo, hi):
        with _quiet():
            fn(*[a[lo:hi] if type(a) is np.ndarray and a.ndim else a for a in flat], out=of[lo:hi])
    elem_for(n, work)
    return out


#: elements from which ``where`` takes the compiled select
WHERE_MIN = 1 << 12


def where(cond, x, y):
    """``np.where(cond, x, y)`` by the compiled branch-free select (NumPy branches on every element:
    ~5 ns each with a random condition), threaded when large.  ``cond``: a C-contiguous bool array
    of the result's shape; ``x``/``y``: arrays of one dtype (1, 2, 4 or 8-byte items), each
    C-contiguous of that shape or holding one element.  Pure selection: the same bits as
    ``np.where``.  ``None`` when not applicable."""
    if not (ENABLED and KERNELS) or type(cond) is not np.ndarray or cond.dtype != np.bool_ \
            or cond.size < WHERE_MIN or not cond.flags.c_contiguous:
        return None
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype or x.dtype.hasobject \
            or x.itemsize not in (1, 2, 4, 8):
        return None
    shape = cond.shape
    ops = []
    for a in (x, y):
        if a.size == 1:
            ops.append(a.reshape(1))
        elif a.shape == shape and a.flags.c_contiguous:
            ops.append(a.reshape(-1))
        else:
            return None
    if any(a.ndim > len(shape) for a in (x, y)):
        return None
    out = empty(shape, x.dtype)
    u = np.dtype(f"u{x.itemsize}")
    c, xa, ya, o = cond.reshape(-1).view(np.uint8), ops[0].view(u), ops[1].view(u), out.reshape(-1).view(u)
    n = cond.size
    kern = _kernels.where_select
    elem_for(n, lambda lo, hi: kern(c, xa, ya, o, lo, hi), PAR_MIN_CHEAP)
    return out


def arange(start, stop, step, nd):
    """The backend's ``arange`` (int64 values for int arguments, else NumPy's float64 ``arange``),
    cast to ``nd``, filled chunk by chunk on the threads into a recycled buffer.  Float values as
    NumPy's float64 ``arange`` fills them: ``start``, ``start + step``, then ``start + i * delta``
    with ``delta = (start + step) - start``.  ``None`` when small or not applicable."""
    if not ENABLED or get_num_threads() <= 1:
        return None
    ints = all(type(v) is int for v in (start, stop, step))
    if ints:
        if not all(-(1 << 62) <= v < (1 << 62) for v in (start, stop, step)):
            return None
        n = len(range(start, stop, step))
    else:
        try:
            # the length as NumPy computes it, on the arguments as given (int - int stays exact)
            n = max(0, math.ceil((stop - start) / step))
            start, stop, step = float(start), float(stop), float(step)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return None
        if not all(math.isfinite(v) for v in (start, stop, step)):
            return None
    if n < PAR_MIN_CHEAP:
        return None
    out = empty((n,), nd)
    delta = (start + step) - start if not ints else step

    def work(lo, hi):
        if ints:
            if nd == _I64:
                np.copyto(out[lo:hi], np.arange(start + lo * step, start + hi * step, step, dtype=_I64))
                return
            v = np.arange(start + lo * step, start + hi * step, step, dtype=_I64)
        else:
            v = np.arange(lo, hi, dtype=np.float64)
            np.multiply(v, delta, out=v)
            np.add(v, start, out=v)
            if lo == 0:
                v[0] = start
                if hi > 1:
                    v[1] = start + step
        with _quiet():
            np.copyto(out[lo:hi], v, casting="unsafe")
    elem_for(n, work)
    return out


def round_half_away(x):
    """The seed's ``round`` (half away from zero) of a C-contiguous float32/float64 array in one
    compiled pass (the plain path's three NumPy passes, same bits), threaded when large; ``None``
    when not applicable."""
    if not (ENABLED and KERNELS) or x.dtype not in (_F32, _F64) or not x.flags.c_contiguous or x.size < WHERE_MIN:
        return None
    out = empty(x.shape, x.dtype)
    xf, of = x.reshape(-1), out.reshape(-1)
    n = x.size
    kern = _kernels.round_half_away
    elem_for(n, lambda lo, hi: kern(xf, of, lo, hi), PAR_MIN_CHEAP)
    return out


def copy_into(dst, src) -> bool:
    """``dst[...] = src`` in chunks on the threads when both are large C-contiguous arrays of one
    shape and dtype (a concatenation's parts, a ``full`` result); ``False`` when not applicable.

    Also ``False`` when ``dst`` and ``src`` overlap in memory (``x[1:] = x[:-1]``, ``blit`` between
    overlapping views): chunks running at once would read elements another chunk has already
    overwritten.  NumPy's own assignment then gives memmove semantics (the result of copying
    through a temporary).  Both are contiguous, so overlapping extents mean overlapping memory;
    ``np.may_share_memory`` compares only the extents (~0.4 us)."""
    if not ENABLED or type(src) is not np.ndarray or src.dtype != dst.dtype or src.shape != dst.shape \
            or dst.size < PAR_MIN_CHEAP or get_num_threads() <= 1 or src.dtype.hasobject \
            or not (dst.flags.c_contiguous and src.flags.c_contiguous) or np.may_share_memory(dst, src):
        return False
    df, sf = dst.reshape(-1), src.reshape(-1)
    elem_for(df.size, lambda lo, hi: np.copyto(df[lo:hi], sf[lo:hi]))
    return True


_tls = threading.local()


def _scratch(k: int, n: int):
    """Thread-local float32 scratch buffer number ``k`` of at least ``n`` elements (first ``n`` returned)."""
    bufs = getattr(_tls, "bufs", None)
    if bufs is None:
        bufs = _tls.bufs = {}
    b = bufs.get(k)
    if b is None or b.size < n:
        b = bufs[k] = np.empty(max(n, LOWP_CHUNK), _F32)
    return b[:n]


def _to_f32(src, dst):
    """Exact widening of a bfloat16/float8/float32 chunk into float32 ``dst``."""
    np.copyto(dst, src, casting="unsafe")


def _narrow_np(src, dst):
    np.copyto(dst, src, casting="unsafe")


def _converters(nd):
    """``(widen(src, dst), narrow(src, dst))``: chunk conversions between ``nd`` and float32.

    The compiled kernels when built (the same bits as NumPy's and ml_dtypes' casts,
    tested on every value; 2-10x faster than those casts), else the casts."""
    if KERNELS:
        if nd == _BF16:
            w, k, u, fmt = _kernels.bf16_to_float32, _kernels.float32_to_bf16, _U16, None
        elif nd == _F16:
            w, k, u, fmt = _kernels.f16_to_float32, _kernels.float32_to_f16, _U16, None
        else:
            w, k, u, fmt = _kernels.f8_to_float32, _kernels.float32_to_f8, _KVIEW[nd], _F8FMT[nd]
        if fmt is None:
            return (lambda s, d: w(s.view(u), d, 0, d.size)), (lambda s, d: k(s, d.view(u), 0, s.size))
        return (lambda s, d: w(fmt, s.view(u), d, 0, d.size)), (lambda s, d: k(fmt, s, d.view(u), 0, s.size))
    return _to_f32, _narrow_np


def lowp_call(fn, ops, nd, boolres: bool, op: str | None = None):
    """``fn`` over operands stored as bfloat16/float8/float16 ``nd`` (computed in float32, rounded once).

    Same result as ``fn(*[a.astype(float32)...]).astype(nd)``, chunk by chunk
    in scratch buffers, on threads (or fused in the compiled kernels for the
    bfloat16 / float8 ops they have; ``op`` is the backend's op name).  ``None`` when
    not applicable.
    """
    if not ENABLED or not (nd == _BF16 or nd in _F8 or nd == _F16):
        return None
    arrs = [a for a in ops if type(a) is np.ndarray]
    shape = arrs[0].shape
    if any(a.shape != shape and a.ndim for a in arrs) or not all(a.flags.c_contiguous for a in arrs):
        return None
    n = arrs[0].size
    if n < LOWP_MIN:
        return None
    if KERNELS and not boolres and op is not None:
        r = _lowp_kernel(op, ops, shape, n, nd)
        if r is None and nd == _BF16 and len(ops) == 1:
            r = _bf16_lut(fn, ops[0], shape, n)
        if r is not None:
            return r
    ops = [a.reshape(-1) if type(a) is np.ndarray and a.ndim else
           a if type(a) is np.ndarray and a.dtype == _F32 else
           np.asarray(a, dtype=_F32) if type(a) is not np.ndarray else a.astype(_F32)
           for a in ops]
    odt = np.dtype(np.bool_) if boolres else nd
    out = empty(shape, odt)
    of = out.reshape(-1)
    chunks = chunk_ranges(n, LOWP_CHUNK, ALIGN)
    groups = chunk_ranges(len(chunks), LOWP_GROUP)

    def work(g):
        with _quiet():
            _lowp_chunks(g)

    widen_nd, narrow = _converters(nd)
    widen = [widen_nd if type(a) is np.ndarray and a.dtype == nd else _to_f32 for a in ops]

    def _lowp_chunks(g):
        c0, c1 = groups[g]
        big = max(hi - lo for lo, hi in chunks[c0:c1])
        scratch = [_scratch(k, big) if (type(a) is np.ndarray and a.ndim) else None for k, a in enumerate(ops)]
        res = None if boolres else _scratch(len(ops), big)
        for lo, hi in chunks[c0:c1]:
            m = hi - lo
            args = []
            for a, s, w in zip(ops, scratch, widen):
                if s is None:
                    args.append(a)
                else:
                    w(a[lo:hi], s[:m])
                    args.append(s[:m])
            if boolres:
                fn(*args, out=of[lo:hi])
            else:
                dst = res[:m]  # not in place: NumPy's in-place sign loop is ~10x slower
                fn(*args, out=dst)
                narrow(dst, of[lo:hi])
    parallel_for(work, len(groups))
    return out


def _probe_ties() -> dict:
    """For NumPy's float32 maximum/minimum loops here: does a tie (+0 vs -0) give the second operand?

    Probed per operand layout (array-array, scalar-array, array-scalar): the
    loops differ between SIMD and scalar code, and the plain path runs NumPy's.
    """
    z = np.zeros(256, _F32)
    nz = -z
    s0, sn = np.asarray(0.0, _F32), np.asarray(-0.0, _F32)
    out = {}
    for name, f in (("maximum", np.maximum), ("minimum", np.minimum)):
        for lay, (a, b) in (("aa", (z, nz)), ("sa", (s0, nz)), ("as", (z, sn))):
            r = np.signbit(f(a, b))
            out[name, lay] = int(bool(np.all(r)))
            if bool(np.any(r)) != bool(np.all(r)):
                out[name, lay] = -1  # mixed: not reproducible, take the NumPy path
    return out


_TIES = _probe_ties()

_NAN_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def _probe_nan_rules() -> dict:
    """For NumPy's float16 / float32 arithmetic loops here: which NaN comes out when both operands are NaNs.

    Bit ``2 * quiet(a) + quiet(b)`` of a rule is set when the first operand's
    NaN (quieted) is returned; -1: neither operand's (not reproducible, the
    kernels are not used).  Per dtype, op and operand layout, like the ties.
    """
    pats = {"f16": (np.float16, np.uint16, (0x7C05, 0x7E05), (0xFC03, 0xFE03), 0x0200),
            "f32": (np.float32, np.uint32, (0x7F850000, 0x7FC50000), (0xFF830000, 0xFFC30000), 0x00400000)}
    out = {}
    for kind, (ft, ut, pa, pb, qbit) in pats.items():
        for op, f in _NAN_OPS.items():
            for lay in ("aa", "sa", "as"):
                rule = 0
                for qa in (0, 1):
                    for qb in (0, 1):
                        a = np.full(256, pa[qa], ut).view(ft)
                        b = np.full(256, pb[qb], ut).view(ft)
                        if lay == "sa":
                            a = a[:1].reshape(())
                        elif lay == "as":
                            b = b[:1].reshape(())
                        with _quiet():
                            r = np.asarray(f(a, b)).reshape(-1).view(ut) | ut(qbit)
                        if np.all(r == ut(pa[qa] | qbit)):
                            rule |= 1 << (2 * qa + qb)
                        elif not np.all(r == ut(pb[qb] | qbit)):
                            rule = -1
                            break
                    if rule < 0:
                        break
                out[kind, op, lay] = rule
    return out


_NAN_RULES = _probe_nan_rules()


def _layout(ops) -> str:
    """'sa' / 'as' when the first / second operand is a scalar or 0-d array, else 'aa'."""
    if type(ops[0]) is not np.ndarray or not ops[0].ndim:
        return "sa"
    return "as" if type(ops[1]) is not np.ndarray or not ops[1].ndim else "aa"
_KBIN = {"add": 0, "sub": 1, "mul": 2, "div": 3, "maximum": 4, "minimum": 5}
_KUN = {"square": 0, "sqrt": 1}
_KF16: dict = {}
_F16_NAMES = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
              np.maximum: "maximum", np.minimum: "minimum"}
if _kernels is not None:  # the module's own numbering
    _KBIN = {"add": _kernels.OP_ADD, "sub": _kernels.OP_SUB, "mul": _kernels.OP_MUL, "div": _kernels.OP_DIV,
             "maximum": _kernels.OP_MAX, "minimum": _kernels.OP_MIN}
    _KF16 = {np.add: _kernels.OP_ADD, np.subtract: _kernels.OP_SUB, np.multiply: _kernels.OP_MUL,
             np.true_divide: _kernels.OP_DIV, np.maximum: _kernels.OP_MAX, np.minimum: _kernels.OP_MIN}
    _KUN = {"square": _kernels.UOP_SQUARE, "sqrt": _kernels.UOP_SQRT}


def _k_operand(a, nd=None):
    """A bfloat16 / float8 (``nd``, default bfloat16) array as a flat uint16 / uint8 view, or a scalar / 0-d
    operand as its float32 value (a float)."""
    if nd is None:
        nd = _BF16
    if type(a) is np.ndarray:
        if a.ndim:
            return a.reshape(-1).view(_KVIEW[nd]) if a.dtype == nd else None
        if a.dtype == nd:
            return a.reshape(1).view(_KVIEW[nd])
        if a.dtype.kind not in "fiub":
            return None
        with _quiet():
            return float(a.astype(_F32))
    if type(a) not in (float, int, bool):
        return None
    try:
        with _quiet():
            return float(np.asarray(a, dtype=_F32))  # as the plain path converts it
    except (OverflowError, ValueError, TypeError):
        return None


_F8FMT: dict[np.dtype, int] = {}  # the kernels' float8 format numbers (e4m3fn 0, e5m2 1; set_lowp)
_KVIEW: dict[np.dtype, np.dtype] = {}  # bfloat16 / float8 -> the unsigned type of their bits (set_lowp)


def set_lowp(bf16: np.dtype, f8_e4m3fn: np.dtype, f8_e5m2: np.dtype) -> None:
    """Add ml_dtypes' bfloat16 and float8 dtypes to this module's tables (called by the NumPy backend when it
    loads ml_dtypes, before any array of these dtypes exists)."""
    global _BF16, _F8
    u8 = np.dtype(np.uint8)
    _SIGN.update({bf16: (_U16, 0x8000), f8_e4m3fn: (u8, 0x80), f8_e5m2: (u8, 0x80)})
    _CLASS.update({bf16: (0x7FFF, 0x7F7F, 0x7F80), f8_e4m3fn: (0x7F, 0x7E, None), f8_e5m2: (0x7F, 0x7B, 0x7C)})
    _F8FMT.update({f8_e4m3fn: 0, f8_e5m2: 1})
    _KVIEW.update({bf16: _U16, f8_e4m3fn: u8, f8_e5m2: u8})
    _BF16, _F8 = bf16, (f8_e4m3fn, f8_e5m2)


def _lowp_kernel(op, ops, shape, n, nd):
    """Fused bfloat16 / float8 ``op`` in the compiled kernels, on threads; ``None`` when they do not have it."""
    if nd == _BF16:
        return _bf16_kernel(op, ops, shape, n)
    fmt = _F8FMT.get(nd)
    if fmt is None:
        return None
    u8 = _KVIEW[nd]
    if len(ops) == 2:
        code = _KBIN.get(op)
        if code is None:
            return None
        lay = _layout(ops)
        rule = _TIES.get((op, lay), 0) if op in ("maximum", "minimum") else _NAN_RULES.get(("f32", op, lay), -1)
        if rule < 0:
            return None
        a, b = _k_operand(ops[0], nd), _k_operand(ops[1], nd)
        if a is None or b is None:
            return None
        out = empty(shape, nd)
        o = out.reshape(-1).view(u8)
        kern = _kernels.f8_binary
        if not elem_claim(n, lambda *c: kern(fmt, code, a, b, o, 0, n, rule, *c)):
            elem_for(n, lambda lo, hi: kern(fmt, code, a, b, o, lo, hi, rule))
        return out
    code = _KUN.get(op)
    if code is None:
        return None
    a = _k_operand(ops[0], nd)
    if a is None or type(a) is float or a.size != n:
        return None
    out = empty(shape, nd)
    o = out.reshape(-1).view(u8)
    kern = _kernels.f8_unary
    elem_for(n, lambda lo, hi: kern(fmt, code, a, o, lo, hi))
    return out


def _bf16_kernel(op, ops, shape, n):
    """Fused bfloat16 ``op`` in the compiled kernels, on threads; ``None`` when they do not have it."""
    if len(ops) == 2:
        code = _KBIN.get(op)
        if code is None:
            return None
        lay = _layout(ops)
        tie = _TIES.get((op, lay), 0) if op in ("maximum", "minimum") else _NAN_RULES.get(("f32", op, lay), -1)
        if tie < 0:
            return None
        a, b = _k_operand(ops[0]), _k_operand(ops[1])
        if a is None or b is None:
            return None
        out = empty(shape, _BF16)
        o = out.reshape(-1).view(_U16)
        kern = _kernels.bf16_binary
        if not elem_claim(n, lambda *c: kern(code, a, b, o, 0, n, tie, *c)):
            elem_for(n, lambda lo, hi: kern(code, a, b, o, lo, hi, tie))
        return out
    code = _KUN.get(op)
    if code is None:
        return None
    a = _k_operand(ops[0])
    if a is None or type(a) is float:
        return None
    out = empty(shape, _BF16)
    o = out.reshape(-1).view(_U16)
    kern = _kernels.bf16_unary
    elem_for(n, lambda lo, hi: kern(code, a, o, lo, hi))
    return out


#: bfloat16 elements from which a one-argument float32 ufunc goes through its table (``_bf16_lut``)
LUT_MIN = 1 << 17
#: ufunc -> its bfloat16 table (``_lut_for``), built at first use
_LUTS: dict = {}


def _lut_for(fn):
    """``fn``'s bfloat16 table: ``fn(x.astype(float32)).astype(bfloat16)`` for each of the 65536 bit patterns
    ``x``, the plain path's expression, so that looking a value up gives the plain path's bits."""
    table = _LUTS.get(fn)
    if table is None:
        every = np.arange(1 << 16, dtype=_U16).view(_BF16)
        with _quiet():
            table = np.ascontiguousarray(np.asarray(fn(every.astype(_F32))).astype(_BF16).view(_U16))
        _LUTS[fn] = table
    return table


def _bf16_lut(fn, a, shape, n):
    """A one-argument float32 ufunc (exp, sin, log, tanh, ...) of a bfloat16 array as a lookup in its
    65536-entry table, on threads; ``None`` when not applicable."""
    if n < LUT_MIN or not isinstance(fn, np.ufunc) or fn.nin != 1 or fn.nout != 1 \
            or type(a) is not np.ndarray or a.dtype != _BF16 or a.size != n:
        return None
    table = _lut_for(fn)
    src = a.reshape(-1).view(_U16)
    out = empty(shape, _BF16)
    o = out.reshape(-1).view(_U16)
    kern = _kernels.lut16
    elem_for(n, lambda lo, hi: kern(src, table, o, lo, hi))
    return out


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------
_LANES = 4096
_BLOCK_ROWS = 16


def _quiet_call(fn, *args):
    with _quiet():
        return fn(*args)


def _flat_sum(v, dt):
    """Sum of a 1-d contiguous array: lanes of 4096, blocks of 16 rows, then pairwise trees."""
    n = v.size
    if v.dtype.kind in "iub" or n < 4 * _LANES * _BLOCK_ROWS:
        return np.add.reduce(v, dtype=dt)
    rows = n // _LANES
    blocks = rows // _BLOCK_ROWS
    body = blocks * _BLOCK_ROWS * _LANES
    part = np.add.reduce(v[:body].reshape(blocks, _BLOCK_ROWS, _LANES), axis=1, dtype=dt)
    while part.shape[0] > 1:  # pairwise over the blocks
        h = part.shape[0] // 2
        top = np.add(part[:h], part[h:2 * h], dtype=dt)
        part = np.concatenate([top, part[2 * h:]]) if part.shape[0] % 2 else top
    total = np.add.reduce(part[0], dtype=dt)
    if body < n:
        total = np.add(total, np.add.reduce(v[body:], dtype=dt), dtype=dt)
    return total


def _rows(x, k: int):
    """``x`` (C-contiguous) as ``(outer, inner)`` rows, its last ``k`` axes viewed as one, with fixed
    row chunks of about ``RED_CHUNK`` elements; ``None`` for fewer than 2 rows or empty rows."""
    outer = math.prod(x.shape[:x.ndim - k])
    inner = x.size // outer if outer else 0
    if outer < 2 or inner == 0:
        return None
    return x.reshape(outer, inner), chunk_ranges(outer, max(1, RED_CHUNK // inner))


def reduce_sum(x, axes: tuple, keepdims: bool):
    """``np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)`` split across threads; or ``None``.

    Integer sums are bit-identical (wrap-around addition is associative); float
    sums add in a different order (error bound in docs/performance.md).  Sums
    along trailing axes split the kept rows over threads and are bit-identical
    (except float32 with the compiled kernels: each row in ``sum_f32``'s lanes).
    """
    if not ENABLED or x.size < RED_MIN or x.dtype.kind not in "iufc" or not x.flags.c_contiguous:
        return None
    nd = x.ndim
    axes = tuple(sorted(a % nd for a in axes)) if nd else ()
    if not axes:
        return None
    dt = x.dtype
    k = len(axes)
    if KERNELS and dt == _F32:
        r = _sum_f32_kernel(x, axes, nd, k)
        if r is not None:
            return _keep(r, x.shape, axes, keepdims)
    if axes == tuple(range(nd)):
        v = x.reshape(-1)
        ranges = chunk_ranges(v.size, RED_CHUNK, ALIGN)
        parts = parallel_for(lambda i: _quiet_call(_flat_sum, v[ranges[i][0]:ranges[i][1]], dt), len(ranges))
        r = np.asarray(np.add.reduce(np.asarray(parts, dtype=dt), dtype=dt))  # pairwise over chunks
    elif axes == tuple(range(nd - k, nd)):  # trailing axes: rows over threads (bit-identical per row)
        rows = _rows(x, k)
        if rows is None:
            return None
        m, ranges = rows
        r = np.empty(m.shape[0], dt)
        parallel_for(lambda i: np.add.reduce(m[ranges[i][0]:ranges[i][1]], axis=1, dtype=dt,
                                             out=r[ranges[i][0]:ranges[i][1]]), len(ranges))
    elif axes == tuple(range(k)):  # leading axes: reduced rows over threads, partials added
        red = math.prod(x.shape[:k])
        if red == 0 or x.size == 0:
            return None
        m = x.reshape(red, x.size // red)
        ranges = chunk_ranges(red, max(1, RED_CHUNK // m.shape[1]))
        parts = parallel_for(lambda i: np.add.reduce(m[ranges[i][0]:ranges[i][1]], axis=0, dtype=dt),
                             len(ranges))
        r = parts[0]
        for p in parts[1:]:
            np.add(r, p, out=r, dtype=dt)
    else:
        return None
    return _keep(r, x.shape, axes, keepdims)


def reduce_minmax(op, x, axes: tuple, keepdims: bool):
    """``np.max`` / ``np.min`` (``op``) of a C-contiguous real array split across threads; or ``None``.

    Chunk results combined by ``np.maximum`` / ``np.minimum``: the same value as one call, except
    possibly which of ``+0``/``-0`` or which NaN comes out; a float result holding a zero or a NaN
    is therefore left to the plain path (``None``).  Along trailing axes each row is reduced by
    NumPy on its own (no such question)."""
    if not ENABLED or x.size < PAR_MIN_CHEAP or x.dtype.kind not in "iuf" or not x.flags.c_contiguous \
            or get_num_threads() <= 1:
        return None
    fn = np.maximum if op == "max" else np.minimum
    nd = x.ndim
    axes = tuple(sorted(a % nd for a in axes)) if nd else ()
    if not axes:
        return None
    k = len(axes)
    if axes == tuple(range(nd)):
        v = x.reshape(-1)
        ranges = chunk_ranges(v.size, RED_CHUNK, ALIGN)
        parts = parallel_for(lambda i: fn.reduce(v[ranges[i][0]:ranges[i][1]]), len(ranges))
        r = np.asarray(fn.reduce(np.asarray(parts, dtype=x.dtype)))
    elif axes == tuple(range(nd - k, nd)):  # trailing: rows over threads, each row as NumPy reduces it
        rows = _rows(x, k)
        if rows is None:
            return None
        m, ranges = rows
        r = np.empty(m.shape[0], x.dtype)
        parallel_for(lambda i: fn.reduce(m[ranges[i][0]:ranges[i][1]], axis=1, out=r[ranges[i][0]:ranges[i][1]]),
                     len(ranges))
        return _keep(r, x.shape, axes, keepdims)
    elif axes == tuple(range(k)):  # leading: reduced rows over threads, partials combined
        red = math.prod(x.shape[:k])
        if red == 0:
            return None
        m = x.reshape(red, x.size // red)
        ranges = chunk_ranges(red, max(1, RED_CHUNK // max(1, m.shape[1])))
        parts = parallel_for(lambda i: fn.reduce(m[ranges[i][0]:ranges[i][1]], axis=0), len(ranges))
        r = parts[0]
        for p in parts[1:]:
            fn(r, p, out=r)
    else:
        return None
    if x.dtype.kind == "f" and (np.any(r == 0) or np.any(np.isnan(r))):
        return None  # +0/-0 or NaN payloads: which one comes out depends on the order
    return _keep(r, x.shape, axes, keepdims)


def arg_reduce(op, x, axis: int):
    """``np.argmax`` / ``np.argmin`` of a C-contiguous real array along ``axis`` (the only axis, or
    the last), split across threads; int64 indices, or ``None``.  The first occurrence wins as in
    NumPy: per chunk NumPy's own answer, then the chunks in order (a NaN, NumPy's maximum and
    minimum, in the earliest chunk holding one; else the best value, ties to the earlier chunk)."""
    if not ENABLED or x.size < PAR_MIN_CHEAP or x.dtype.kind not in "iuf" or not x.flags.c_contiguous \
            or get_num_threads() <= 1 or x.ndim == 0 or axis != x.ndim - 1:
        return None
    fn = np.argmax if op == "argmax" else np.argmin
    if x.ndim > 1:  # rows over threads, each row as NumPy does it
        rows = _rows(x, 1)
        if rows is None:
            return None
        m, ranges = rows
        r = np.empty(m.shape[0], _I64)
        parallel_for(lambda i: np.copyto(r[ranges[i][0]:ranges[i][1]], fn(m[ranges[i][0]:ranges[i][1]], axis=1)),
                     len(ranges))
        return r.reshape(x.shape[:-1])
    ranges = chunk_ranges(x.size, RED_CHUNK, ALIGN)
    idx = parallel_for(lambda i: int(fn(x[ranges[i][0]:ranges[i][1]])) + ranges[i][0], len(ranges))
    vals = x[np.asarray(idx, dtype=_I64)]
    if x.dtype.kind == "f":
        nan = np.isnan(vals)
        if nan.any():
            return np.asarray(idx[int(np.argmax(nan))], dtype=_I64)
    return np.asarray(idx[int(fn(vals))], dtype=_I64)  # ties: NumPy's first occurrence = earliest chunk


def _keep(r, shape, axes, keepdims):
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape)) if keepdims else \
        tuple(s for i, s in enumerate(shape) if i not in axes)
    return r.reshape(kept)


#: columns per chunk of a compiled leading-axis float32 sum (at least)
KCOL_MIN = 256
#: elements per chunk of a compiled float32 sum of everything or along trailing axes (fixed: the
#: chunks, claimed by the threads in C, do not depend on the thread count)
KSUM_CHUNK = 1 << 18


def _sum_f32_kernel(x, axes, nd, k):
    """float32 sums in the compiled kernels: everything (float32 lanes in blocks of 16, float64
    across blocks and chunks, rounded once), leading axes (each column in NumPy's row order:
    bit-identical), or trailing axes (each row in the same lanes as everything, rounded once;
    same error bound).  ``None`` when not applicable."""
    if axes == tuple(range(nd)):
        v = x.reshape(-1)
        parts = np.empty(-(-v.size // KSUM_CHUNK), _F64)
        counter = np.zeros(1, _I64)
        kern = _kernels.sum_f32_claim
        # one call per thread, each claiming chunks until none is left (in C, no GIL hand-off per chunk);
        # one thread below PAR_MIN_CHEAP elements (waking a helper costs more than it saves there)
        nt = min(get_num_threads(), parts.size) if v.size >= PAR_MIN_CHEAP else 1
        if share_claims(nt):  # pool helpers polling in C take chunks at once, without the GIL
            kern(v, KSUM_CHUNK, counter, parts, True)
        else:
            parallel_for(lambda i: kern(v, KSUM_CHUNK, counter, parts), nt)
        total = 0.0
        for p in parts.tolist():  # fixed order: the chunks do not depend on the thread count
            total += p
        with _quiet():
            return np.asarray(total, dtype=_F32)
    if axes == tuple(range(k)) and k < nd:
        red = math.prod(x.shape[:k])
        cols = x.size // red if red else 0
        if red == 0 or cols < KCOL_MIN:
            return None
        m = x.reshape(red, cols)
        r = np.empty(cols, _F32)
        # one column range per thread, each streaming all rows (more, narrower ranges re-walk the
        # rows and lose the prefetcher); the result does not depend on the chunking (each column
        # is summed in row order).  The width is rounded UP to a multiple of 16: rounded down
        # (as chunk_ranges does), 2500 columns on 2 threads gave 1248 + 1248 + a third range of
        # 4 columns that walked all the rows again on its own (~0.1 ms of 0.9)
        per = -(-cols // max(1, get_num_threads()))
        ranges = chunk_ranges(cols, max(KCOL_MIN, -(-per // 16) * 16), 16)
        kern = _kernels.sum_cols_f32
        parallel_for(lambda i: kern(m, red, cols, r, ranges[i][0], ranges[i][1]), len(ranges))
        return r
    if axes == tuple(range(nd - k, nd)) and k < nd:  # trailing axes, viewed as one
        outer = math.prod(x.shape[:nd - k])
        inner = x.size // outer if outer else 0
        if outer == 0 or inner == 0:
            return None
        m = x.reshape(outer, inner)
        r = np.empty(outer, _F32)
        # row chunks claimed in C (each row is summed on its own: the result depends on neither the
        # chunking nor the thread count)
        rows = max(1, KSUM_CHUNK // inner)
        counter = np.zeros(1, _I64)
        kern = _kernels.sum_rows_f32_claim
        nt = min(get_num_threads(), -(-outer // rows)) if x.size >= PAR_MIN_CHEAP else 1
        if share_claims(nt):
            kern(m, outer, inner, r, rows, counter, True)
        else:
            parallel_for(lambda i: kern(m, outer, inner, r, rows, counter), nt)
        return r
    return None


# ---------------------------------------------------------------------------
# Copies
# ---------------------------------------------------------------------------
def transposed_copy(x):
    """A C-contiguous copy of a 2-d array whose rows are strided (e.g. a transpose), in 64x64 blocks.

    Copying block by block keeps the strided reads within a few pages and
    cache lines; the plain copy walks a whole column per output row.  ``None``
    when not applicable.
    """
    if (not ENABLED or x.ndim != 2 or x.size < TCOPY_MIN or x.dtype.hasobject
            or abs(x.strides[1]) <= abs(x.strides[0]) or x.flags.c_contiguous):
        return None
    r, c = x.shape
    out = empty(x.shape, x.dtype)
    if KERNELS and x.itemsize in (1, 2, 4, 8):
        # the compiled tile copy, row ranges (multiples of its 64-row tiles) over the threads
        kern = _kernels.strided_copy
        ranges = chunk_ranges(r, max(64, -(-r // (4 * get_num_threads()))), 64)
        parallel_for(lambda i: kern(x, out, ranges[i][0], ranges[i][1]), len(ranges))
        return out
    b = TCOPY_BLOCK
    for i in range(0, r, b):
        oi = out[i:i + b]
        xi = x[i:i + b]
        for j in range(0, c, b):
            oi[:, j:j + b] = xi[:, j:j + b]
    return out


def copy(x):
    """``x.copy()`` (C order) through the fast paths, or ``None``."""
    if not ENABLED or x.size < PAR_MIN or x.dtype.hasobject:
        return None
    r = transposed_copy(x)
    if r is not None:
        return r
    if x.flags.c_contiguous:
        out = empty(x.shape, x.dtype)  # a recycled buffer
        of, xf = out.reshape(-1), x.reshape(-1)
        elem_for(x.size, lambda lo, hi: np.copyto(of[lo:hi], xf[lo:hi]), PAR_MIN_CHEAP)
        return out
    return None


def astype(x, nd):
    """``x.astype(nd)`` for a C-contiguous ``x``, into a recycled buffer, split across threads; or ``None``.

    Between float32 and float16 / bfloat16 / float8 the compiled conversions run (the same bits as
    NumPy's and ml_dtypes' casts, 3-10x faster)."""
    if not ENABLED or x.size < PAR_MIN or not x.flags.c_contiguous or x.dtype.hasobject or nd.hasobject:
        return None
    out = empty(x.shape, nd)
    of, xf = out.reshape(-1), x.reshape(-1)
    if KERNELS and ((x.dtype in _SIGN and nd == _F32) or (x.dtype == _F32 and nd in _SIGN)):
        widen, narrow = _converters(x.dtype if nd == _F32 else nd)
        conv = widen if nd == _F32 else narrow
        elem_for(x.size, lambda lo, hi: conv(xf[lo:hi], of[lo:hi]), PAR_MIN_CHEAP)
        return out

    def work(lo, hi):
        with _quiet():
            np.copyto(of[lo:hi], xf[lo:hi], casting="unsafe")
    elem_for(x.size, work, PAR_MIN_CHEAP)
    return out


# ---------------------------------------------------------------------------
# Sorting
# ---------------------------------------------------------------------------
def _order_keys(v):
    """uint64 ``key << 32`` with ``key`` an order-preserving uint32 image of ``v`` (NumPy's order)."""
    k = v.dtype.kind
    if k == "f":
        f = v if v.dtype == _F32 else v.astype(_F32)  # float16 widens exactly
        u = f.view(np.uint32).copy() if f is v else f.view(np.uint32)
        u[f == 0] = 0  # -0.0 ties with +0.0
        nan = f != f
        if nan.any():
            u[nan] = 0x7FC00000  # every NaN ties, after +inf
        neg = (u >> 31).astype(bool)
        np.invert(u, out=u, where=neg)
        np.bitwise_or(u, np.uint32(0x80000000), out=u, where=~neg)
    elif k == "b" or (k in "iu" and v.dtype.itemsize <= 4):
        if k == "u" or k == "b":
            u = v.astype(np.uint32)
        else:
            u = v.astype(np.int32).view(np.uint32) ^ np.uint32(0x80000000)
    else:
        return None
    return u.astype(np.uint64) << np.uint64(32)


def argsort(src, axis: int, descending: bool):
    """Stable argsort (int64 indices) of ``src`` along ``axis`` via unique 64-bit keys, or ``None``."""
    if not ENABLED or src.ndim == 0:
        return None
    n = src.shape[axis]
    if n < SORT_MIN or n >= 1 << 32 or src.size == 0 or src.dtype.itemsize > 4 or src.dtype.kind not in "fiub":
        return None
    moved = np.moveaxis(src, axis, -1)
    keys = _order_keys(np.ascontiguousarray(moved))
    if keys is None:
        return None
    if descending:
        np.invert(keys, out=keys)
        keys &= np.uint64(0xFFFFFFFF00000000)
    keys |= np.arange(n, dtype=np.uint64)
    rows = keys.reshape(-1, n)
    if rows.shape[0] >= 2 and get_num_threads() > 1:
        ranges = chunk_ranges(rows.shape[0], max(1, ELEM_CHUNK // n))
        parallel_for(lambda i: rows[ranges[i][0]:ranges[i][1]].sort(axis=-1), len(ranges))
    else:
        rows.sort(axis=-1)
    idx = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return np.ascontiguousarray(np.moveaxis(idx, -1, axis))
