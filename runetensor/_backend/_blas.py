"""Threads of runetensor's matrix products: the BLAS's own when the cores are free, else one BLAS thread + blocks.

NumPy's OpenBLAS runs a GEMM above about 64**3 multiply-adds on all its threads,
and its threads spin while they wait for each other.  With other work on the
cores (a CPU-bound process, another library's threads in this process) a spinning
thread holds a core its peer needs, and a small GEMM can take 10-100x longer.

While the cores are free (other processes take at most half a core of this process's cores, read
from ``/proc/stat`` every 50 ms; elsewhere the load average at most runetensor's thread count + 0.5:
:func:`._parallel._machine_busy`) and runetensor is not single-threaded, a product is NumPy's call as is: the BLAS's own
threads are the fastest there (float32 128x784x256: 0.30 ms on OpenBLAS's two threads,
0.54 ms on one, 0.60 ms in two blocks on runetensor's pool, whose Python threads take
tens of microseconds to wake; 1024**3: 11 ms against 24 ms in blocks), and its last bits
follow the BLAS's thread count, as NumPy's do.  While the cores are busy, or with
``rt.set_num_threads(1)`` and in single-threaded Dask workers,
runetensor's own products (:func:`matmul`, :func:`matmul_into`) run the BLAS
with one thread and do their own splitting:

- below :data:`SPLIT_MNK` multiply-adds a product is one BLAS call on the calling
  thread (below OpenBLAS's own threading thresholds it is NumPy's call as is);
- from there a 2-D product is split into row blocks (column blocks when it has more
  columns than rows), and a batched product into
  blocks of its leading batch axis, run on runetensor's thread pool
  (:mod:`._parallel`: its workers block instead of spinning, and it stays serial
  while the cores are busy, unless the blocks are long:
  :data:`BUSY_OK_MNK`).  The blocks depend only on the
  shapes, never on the thread count, so the result is the same bits with any
  number of threads (NumPy's own ``np.matmul`` is not: OpenBLAS's threaded GEMM
  can round differently from its single-threaded one).

The BLAS thread count is process-wide in OpenBLAS (``openblas_set_num_threads``
and its ``_local`` variant both set one global in a pthreads build), so it is
lowered to 1 only for the duration of runetensor's calls and restored after the
last concurrent one ends (a counter under a lock).  The user's own NumPy calls
keep the user's setting, except one made in another thread during such a window,
which runs single-threaded.  Where no OpenBLAS with these entry points is found
(MKL, Accelerate, a NumPy without BLAS), or with the environment variable
``RUNETENSOR_BLAS_THREADING=numpy`` (read once, at the first large product), products are
NumPy's calls as they were and the BLAS picks its own threads.  ``RUNETENSOR_BLAS_THREADING=blocks``
takes the one-BLAS-thread, shape-only path even while the cores are free: slower there on mid-size
products, but a product's bits then never depend on the load or on any thread count (OpenBLAS's own
two-thread GEMM rounds some shapes differently from its one-thread GEMM).
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Any

import numpy as np

from ._parallel import _machine_busy, get_num_threads, parallel_for

#: each block of a split product does at least this many multiply-adds (about 0.1-0.2 ms on one core):
#: above OpenBLAS's small-matrix kernel limit (10**6, SkylakeX), so every block runs the GEMM kernel the
#: unsplit product would, and the per-call costs (B is packed again for each row block) stay small
BLOCK_MNK = 1 << 22
#: from this many multiply-adds (all matrices of the product) it is split into blocks for the thread pool
SPLIT_MNK = 2 * BLOCK_MNK
#: row (or column) blocks have at least ROW_MIN rows (fewer make repacking the other operand cost more
#: than the split gains), a multiple of ROW_ALIGN (the GEMM kernels' unroll), and at most MAX_BLOCKS of them
ROW_MIN = 128
ROW_ALIGN = 16
MAX_BLOCKS = 64
#: each block packs the whole other operand (n * k elements) again: blocks of at least n * k / REPACK_ROWS
#: rows keep that to a few percent (float32 2048**3 on one thread: 128-row blocks +14%, 256 +5%, 512 +2.5%)
REPACK_ROWS = 8192
#: blocks of at least this many multiply-adds (~0.5 ms and more on one core) are threaded even while the
#: cores are busy: a helper descheduled for a while costs the caller at most one
#: block's wait at the end, and the blocks a helper does run are saved (smaller blocks run serially then)
BUSY_OK_MNK = 1 << 24
#: OpenBLAS threads a GEMM above 65536 * 4 multiply-adds and a GEMV/dot above 9216; below both it runs
#: on the calling thread without waking its workers, so the thread count need not be touched
_GEMM_THREADED = 1 << 18
_GEMV_THREADED = 9216
# products of infinities and overflows give IEEE results silently, as the NumPy backend's other operations
# (NumPy would warn from this module's frame)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"runetensor\._backend\._blas")
_BLAS_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


class _OpenBLAS:
    """The get/set thread-count entry points of one loaded OpenBLAS (found as threadpoolctl would:
    ``[scipy_]openblas_{get,set}_num_threads[64_|_64_]``)."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        self.path = path
        self.get = self.set = None
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "_64_", ""):
                g = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                s = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
                if g is not None and s is not None:
                    g.restype, g.argtypes = ctypes.c_int, []
                    s.restype, s.argtypes = None, [ctypes.c_int]
                    self.get, self.set = g, s
                    return


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries loaded in this process, NumPy's own first."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.rsplit(None, 1)[-1] if "/" in line else ""
                if "openblas" in os.path.basename(p).lower() and ".so" in p and p not in paths:
                    paths.append(p)
    except OSError:  # not Linux: NumPy's wheel keeps its BLAS next to it
        # deferred: only the fallback for systems without /proc needs it
        import glob
        npdir = os.path.dirname(np.__file__)
        for d in (os.path.join(os.path.dirname(npdir), "numpy.libs"), os.path.join(npdir, ".dylibs"), npdir):
            paths += sorted(glob.glob(os.path.join(d, "*openblas*")))
    npdir = os.path.dirname(os.path.dirname(np.__file__))
    return sorted(paths, key=lambda p: not (p.startswith(npdir) and "numpy" in p))


def _numpy_uses_openblas() -> bool:
    try:
        cfg = np.show_config(mode="dicts")  # type: ignore[call-arg]
        name = str(cfg["Build Dependencies"]["blas"].get("name", ""))
    except Exception:  # an old NumPy or an unusual build: trust what is loaded
        return True
    return "openblas" in name.lower()


_found: list[_OpenBLAS | None] = []
_POLICIES = ("auto", "numpy", "blocks")
_policy: list[str] = []


def policy() -> str:
    """``RUNETENSOR_BLAS_THREADING`` (read once): ``"auto"`` (the default), ``"numpy"`` or ``"blocks"``; another
    value is ignored with one ``RuntimeWarning``.

    >>> policy() in _POLICIES
    True
    """
    if not _policy:
        v = os.environ.get("RUNETENSOR_BLAS_THREADING", "").strip().lower() or "auto"
        if v not in _POLICIES:
            warnings.warn(f"RUNETENSOR_BLAS_THREADING={v!r} is not one of {', '.join(_POLICIES)}; using 'auto'",
                          RuntimeWarning, stacklevel=2)
            v = "auto"
        _policy.append(v)
    return _policy[0]


def controller() -> _OpenBLAS | None:
    """NumPy's OpenBLAS thread-count entry points (looked up once), or None where there are none."""
    if not _found:
        ctl = None
        if policy() != "numpy" and _numpy_uses_openblas():
            for p in _loaded_openblas():
                try:
                    c = _OpenBLAS(p)
                except OSError:
                    continue
                if c.get is not None:
                    ctl = c
                    break
        _found.append(ctl)
    return _found[0]


_lock = threading.Lock()
_depth = [0, 0]  # [runetensor calls inside a single-thread window, the count to restore after the last]


def _enter(ctl: _OpenBLAS) -> None:
    with _lock:
        if _depth[0] == 0:
            _depth[1] = n = ctl.get()
            if n != 1:
                ctl.set(1)
        _depth[0] += 1


def _exit(ctl: _OpenBLAS) -> None:
    with _lock:
        _depth[0] -= 1
        if _depth[0] == 0 and _depth[1] != 1:
            ctl.set(_depth[1])


def blas_threaded(m: int, n: int, k: int) -> bool:
    """Whether OpenBLAS would run an ``(m, k) @ (k, n)`` product on more than one thread (then runetensor
    lowers its count to 1 around the call).  A vector operand is ``m == 1`` or ``n == 1``.

    >>> blas_threaded(8, 8, 8), blas_threaded(256, 256, 256), blas_threaded(1000, 1, 1000)
    (False, True, True)
    """
    mnk = m * n * k
    return mnk >= _GEMV_THREADED if (m == 1 or n == 1) else mnk > _GEMM_THREADED


def gemm_plan(m: int, n: int, k: int) -> tuple[int, list[tuple[int, int]]]:
    """How an ``(m, k) @ (k, n)`` product is split: ``(axis, blocks)``, blocks of rows of the result
    (``axis`` 0, when ``m >= n``) or of its columns (``axis`` 1); see :func:`row_blocks`.

    >>> gemm_plan(1000, 512, 512)[0], gemm_plan(128, 784, 256)
    (0, (1, [(0, 128), (128, 256), (256, 384), (384, 512), (512, 640), (640, 784)]))
    """
    return (0, row_blocks(m, n, k)) if m >= n else (1, row_blocks(n, m, k))


def row_blocks(m: int, n: int, k: int) -> list[tuple[int, int]]:
    """The ``(lo, hi)`` row blocks an ``(m, k) @ (k, n)`` product is split into (one block below
    :data:`SPLIT_MNK`).  They depend on the shape only, never on the thread count; each does at least
    :data:`BLOCK_MNK` multiply-adds (the last absorbs the remainder).  (Column blocks: ``row_blocks(n, m, k)``.)

    >>> row_blocks(100, 100, 100)
    [(0, 100)]
    >>> row_blocks(1000, 512, 512)
    [(0, 128), (128, 256), (256, 384), (384, 512), (512, 640), (640, 768), (768, 1000)]
    >>> row_blocks(2048, 2048, 2048)
    [(0, 512), (512, 1024), (1024, 1536), (1536, 2048)]
    """
    if m * n * k < SPLIT_MNK or m < 2 * ROW_MIN:
        return [(0, m)]
    per_row = max(1, n * k)
    rows = max(ROW_MIN, -(-BLOCK_MNK // per_row), -(-m // MAX_BLOCKS), per_row // REPACK_ROWS)
    rows = -(-rows // ROW_ALIGN) * ROW_ALIGN
    nb = max(1, m // rows)
    return [(i * rows, (i + 1) * rows if i < nb - 1 else m) for i in range(nb)]


def batch_blocks(b: int, mnk: int) -> list[tuple[int, int]]:
    """``(lo, hi)`` blocks of a batched product's leading axis of length ``b`` (``mnk`` multiply-adds
    per matrix): shape-only, each block at least :data:`BLOCK_MNK` multiply-adds, at most :data:`MAX_BLOCKS`.

    >>> batch_blocks(8, 64 * 64 * 64)
    [(0, 8)]
    >>> batch_blocks(10, 1 << 21)
    [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    """
    if b * mnk < SPLIT_MNK or b < 2:
        return [(0, b)]
    per = max(2, -(-BLOCK_MNK // max(1, mnk)), -(-b // MAX_BLOCKS))
    nb = max(1, b // per)
    return [(i * per, (i + 1) * per if i < nb - 1 else b) for i in range(nb)]


def _split_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``np.matmul(a, b, out=out)`` in shape-only blocks on the pool (BLAS already single-threaded)."""
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        np.matmul(a, b, out=out)  # NumPy buffers an overlapping output; blocks would read rows already written
        return
    if a.ndim == 2 and b.ndim == 2:
        axis, blocks = gemm_plan(a.shape[0], b.shape[1], a.shape[1])
        if len(blocks) == 1:
            np.matmul(a, b, out=out)
        elif axis == 0:
            busy_ok = (blocks[0][1] - blocks[0][0]) * b.shape[1] * a.shape[1] >= BUSY_OK_MNK
            parallel_for(lambda i: np.matmul(a[blocks[i][0]:blocks[i][1]], b,
                                             out=out[blocks[i][0]:blocks[i][1]]), len(blocks), busy_ok)
        else:  # column blocks: strided views, which the BLAS reads and writes in place (ldb, ldc)
            busy_ok = (blocks[0][1] - blocks[0][0]) * a.shape[0] * a.shape[1] >= BUSY_OK_MNK
            parallel_for(lambda i: np.matmul(a, b[:, blocks[i][0]:blocks[i][1]],
                                             out=out[:, blocks[i][0]:blocks[i][1]]), len(blocks), busy_ok)
        return
    batch = out.shape[:-2]
    m, n = out.shape[-2:]
    kk = a.shape[-1]
    blocks = batch_blocks(batch[0], m * n * kk * int(np.prod(batch[1:], dtype=np.int64))) if batch else [(0, 0)]
    if len(blocks) == 1:
        np.matmul(a, b, out=out)
        return
    ab = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    per = (blocks[0][1] - blocks[0][0]) * m * n * kk * int(np.prod(batch[1:], dtype=np.int64))
    parallel_for(lambda i: np.matmul(ab[blocks[i][0]:blocks[i][1]], bb[blocks[i][0]:blocks[i][1]],
                                     out=out[blocks[i][0]:blocks[i][1]]), len(blocks), per >= BUSY_OK_MNK)


def _dims(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """``(m, n, k)`` of one matrix of ``a @ b`` (a vector operand gives 1)."""
    m = a.shape[-2] if a.ndim >= 2 else 1
    n = b.shape[-1] if b.ndim >= 2 else 1
    return m, n, a.shape[-1] if a.ndim else 1


def matmul(a: Any, b: Any) -> Any:
    """``np.matmul(a, b)`` with runetensor's thread decisions (see the module's docstring).

    Equal to ``np.matmul`` up to rounding (the BLAS's own results differ between its thread counts);
    the same bits with any runetensor or BLAS thread count.

    >>> import numpy as np
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> matmul(a, a.T)
    array([[ 5., 14.],
           [14., 50.]])
    """
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype \
            or a.dtype not in _BLAS_DTYPES or a.ndim == 0 or b.ndim == 0:
        return np.matmul(a, b)
    m, n, k = _dims(a, b)
    if not blas_threaded(m, n, k) or _own_threads():
        return np.matmul(a, b)
    ctl = controller()
    if ctl is None:
        return np.matmul(a, b)
    _enter(ctl)
    try:
        if a.ndim < 2 or b.ndim < 2 or m * n * k * _batch(a, b) < SPLIT_MNK:
            return np.matmul(a, b)
        out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n), a.dtype)
        _split_into(a, b, out)
        return out
    finally:
        _exit(ctl)


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``np.matmul(a, b, out=out)`` for same-dtype float operands of 2 or more dimensions, with
    runetensor's thread decisions (``out`` the exact result shape).

    >>> import numpy as np
    >>> a, out = np.ones((2, 3)), np.empty((2, 2))
    >>> matmul_into(a, a.T, out); out
    array([[3., 3.],
           [3., 3.]])
    """
    m, n, k = _dims(a, b)
    ctl = controller() if blas_threaded(m, n, k) and a.dtype in _BLAS_DTYPES \
        and not _own_threads() else None
    if ctl is None:
        np.matmul(a, b, out=out)
        return
    _enter(ctl)
    try:
        _split_into(a, b, out)
    finally:
        _exit(ctl)


def _own_threads() -> bool:
    """Whether products are left to the BLAS's own threads: while the cores are free, and never where
    runetensor runs single-threaded (``rt.set_num_threads(1)``, a single-threaded Dask worker: there every
    product takes the shape-only path, so a data-parallel run gives the same bits on any number of
    workers, busy or not), nor with ``RUNETENSOR_BLAS_THREADING=blocks``."""
    return not _machine_busy() and get_num_threads() > 1 and policy() != "blocks"


def _batch(a: np.ndarray, b: np.ndarray) -> int:
    s = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    r = 1
    for d in s:
        r *= d
    return r


def _after_fork() -> None:
    """In a forked child: a fresh lock; a window the parent's other threads held open is closed."""
    global _lock
    _lock = threading.Lock()
    if _depth[0] and _found and _found[0] is not None and _depth[1] != 1:
        _found[0].set(_depth[1])
    _depth[0] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

__all__: list[str] = []
