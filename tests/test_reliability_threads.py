"""Reliability under threads and processes: overlapping copies, forks holding locks, thread-count changes.

* Assignment between overlapping views (``x[1:] = x[:-1]``, ``rt.blit``, bigarray ``blit``,
  ``out=`` aliasing an input) gives NumPy's result (memmove semantics) whatever the thread
  count: the threaded chunked copy must not read what another chunk already overwrote.
* A child forked while another thread holds the buffer pool's or the thread pool's lock
  works (the locks and pools are reset in the child).
* ``rt.set_num_threads`` while other threads compute neither raises nor hangs.
* A stress test mixing all of it, run in a child process with a time limit.

Sizes are above ``_fast``'s thresholds (``PAR_MIN_CHEAP``, ``ELEM_CHUNK``) so the threaded
paths run; the thread count is set explicitly (``_parallel`` otherwise goes serial while the
machine's load average is high).
"""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _parallel
from runetensor import bigarray as ba
from runetensor._backend import _fast

from hostile import assert_survives

N = 1 << 22  # int32: 16 MB, several threaded chunks (PAR_MIN_CHEAP = 2^20, ELEM_CHUNK = 2^18)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    old = _parallel.get_num_threads()
    old_auto = _parallel._auto
    rt.set_num_threads(request.param)
    yield request.param
    rt.set_num_threads(old)
    _parallel._auto = old_auto


def _base(n=N, dtype=np.int32):
    return np.arange(n, dtype=np.int64).astype(dtype)


def test_sizes_take_the_threaded_copy():
    assert N >= _fast.PAR_MIN_CHEAP and N > 4 * _fast.ELEM_CHUNK


# ---------------------------------------------------------------------------
# 1. overlapping assignment
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shift", [1, 7, 1 << 18, (1 << 20) + 3])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_setitem_between_overlapping_views(threads, shift, direction):
    base = _base()
    x = rt.from_numpy(base.copy())
    ref = base.copy()
    if direction == "forward":   # x[k:] = x[:-k]: a copy upward (the classic memmove case)
        x[shift:] = x[:-shift]
        ref[shift:] = base[:-shift]
    else:                        # x[:-k] = x[k:]
        x[:-shift] = x[shift:]
        ref[:-shift] = base[shift:]
    got = rt.to_numpy(x)
    bad = np.flatnonzero(got != ref)
    assert bad.size == 0, f"{bad.size} wrong elements, first at {bad[:8].tolist()}"


@pytest.mark.parametrize("dtype", [np.float64, np.uint8, "bfloat16"])
def test_setitem_overlap_other_dtypes(threads, dtype):
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    base = (np.arange(N) % 251).astype(dt)
    for k in (1, 333):
        x = rt.from_numpy(base.copy())
        x[k:] = x[:-k]
        ref = base.copy()
        ref[k:] = base[:-k]
        assert np.array_equal(rt.to_numpy(x).view(np.uint8), ref.view(np.uint8))
        x = rt.from_numpy(base.copy())
        x[:-k] = x[k:]
        ref = base.copy()
        ref[:-k] = base[k:]
        assert np.array_equal(rt.to_numpy(x).view(np.uint8), ref.view(np.uint8))


def test_setitem_overlapping_rows_2d(threads):
    base = _base().reshape(1024, -1)
    x = rt.from_numpy(base.copy())
    x[1:] = x[:-1]
    ref = base.copy()
    ref[1:] = base[:-1]
    assert np.array_equal(rt.to_numpy(x), ref)
    x = rt.from_numpy(base.copy())
    x[:-3] = x[3:]
    ref = base.copy()
    ref[:-3] = base[3:]
    assert np.array_equal(rt.to_numpy(x), ref)


def test_setitem_self_is_a_no_op(threads):
    base = _base()
    x = rt.from_numpy(base.copy())
    x[...] = x
    x[:] = x[:]
    assert np.array_equal(rt.to_numpy(x), base)


def test_blit_between_overlapping_views(threads):
    base = _base()
    for k in (1, 64, 12345, 1 << 20):
        x = rt.from_numpy(base.copy())
        rt.blit(x[:-k], x[k:])
        ref = base.copy()
        ref[k:] = base[:-k]
        assert np.array_equal(rt.to_numpy(x), ref), k
        x = rt.from_numpy(base.copy())
        rt.blit(x[k:], x[:-k])
        ref = base.copy()
        ref[:-k] = base[k:]
        assert np.array_equal(rt.to_numpy(x), ref), k


def test_blit_overlapping_strided_and_transposed(threads):
    base = _base(1 << 22).reshape(2048, 2048)
    x = rt.from_numpy(base.copy())
    rt.blit(x.T, x)  # in-place transpose: NumPy's answer is the transpose of the original
    assert np.array_equal(rt.to_numpy(x), base.T)
    flat = _base(1 << 22)
    x = rt.from_numpy(flat.copy())
    rt.blit(x[0:(1 << 22) - 2:2], x[2::2])  # every other element, overlapping
    ref = flat.copy()
    ref[2::2] = flat[0:(1 << 22) - 2:2]
    assert np.array_equal(rt.to_numpy(x), ref)


@pytest.mark.parametrize("layout", ["c", "fortran"])
def test_bigarray_blit_overlapping_subs(threads, layout):
    lay = ba.c_layout if layout == "c" else ba.fortran_layout
    first = 0 if layout == "c" else 1
    base = _base()
    for k in (1, 4097, 1 << 20):
        a = ba.array1_of_genarray(rt.to_bigarray(rt.from_numpy(base.copy())))
        if layout == "fortran":
            a = a.change_layout(lay) if hasattr(a, "change_layout") else ba.Array1.change_layout(a, lay)
        a.sub(first, N - k).blit(a.sub(first + k, N - k))
        ref = base.copy()
        ref[k:] = base[:-k]
        assert np.array_equal(rt.to_numpy(rt.of_bigarray(a)), ref), k
        a.sub(first + k, N - k).blit(a.sub(first, N - k))  # and back down
        ref[:-k] = ref[k:].copy()
        assert np.array_equal(rt.to_numpy(rt.of_bigarray(a)), ref), k


def test_scatter_with_overlapping_values(threads):
    base = _base()
    x = rt.from_numpy(base.copy())
    idx = rt.from_numpy(np.arange(1, N, dtype=np.int64))
    x[idx] = x[:-1]
    ref = base.copy()
    ref[1:] = base[:-1]
    assert np.array_equal(rt.to_numpy(x), ref)


def test_backend_assign_overlap_directly(threads):
    from runetensor._backend.numpy_backend import NumpyBackend
    be = NumpyBackend()
    for dt in (np.int32, np.float32, np.int64):
        base = _base(dtype=dt)
        for k in (1, 5, 1 << 19):
            a = base.copy()
            be.assign(a[k:], a[:-k])
            ref = base.copy()
            ref[k:] = base[:-k]
            assert np.array_equal(a, ref)
            a = base.copy()
            be.assign(a[:-k], a[k:])
            ref = base.copy()
            ref[:-k] = base[k:]
            assert np.array_equal(a, ref)


def test_copy_into_declines_overlap_and_keeps_fast_path(threads):
    base = _base()
    a = base.copy()
    assert _fast.copy_into(a[1:], a[:-1]) is False  # overlapping: left to NumPy's memmove semantics
    assert _fast.copy_into(a[:-1], a[1:]) is False
    assert _fast.copy_into(a, a) is False
    assert np.array_equal(a, base)  # and nothing was written
    dst = np.empty_like(base)
    assert _fast.copy_into(dst, base) is (threads > 1)  # disjoint: still the threaded copy
    if threads > 1:
        assert np.array_equal(dst, base)
    halves = base.copy()
    lo, hi = halves[:N // 2], halves[N // 2:]  # adjacent, not overlapping
    assert _fast.copy_into(hi, lo) is (threads > 1)
    if threads > 1:
        assert np.array_equal(halves[N // 2:], base[:N // 2])


@pytest.mark.parametrize("dtype", [np.int32, np.float32, "bfloat16"])
def test_inplace_ops_with_overlapping_operand(threads, dtype):
    import ml_dtypes
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    base = (np.arange(N) % 97).astype(dt)
    x = rt.from_numpy(base.copy())
    x[1:] += x[:-1]
    ref = base.copy()
    ref[1:] = (base[1:].astype(np.float64) + base[:-1].astype(np.float64)).astype(dt)
    assert np.array_equal(rt.to_numpy(x).view(np.uint8), ref.view(np.uint8))
    x = rt.from_numpy(base.copy())
    x[:-5] *= x[5:]
    ref = base.copy()
    ref[:-5] = (base[:-5].astype(np.float64) * base[5:].astype(np.float64)).astype(dt)
    assert np.array_equal(rt.to_numpy(x).view(np.uint8), ref.view(np.uint8))


# ---------------------------------------------------------------------------
# 3. threads and processes
# ---------------------------------------------------------------------------
def test_fork_while_another_thread_holds_the_pool_locks():
    """A child forked while another thread holds the buffer pool's lock (and the thread pool's)
    must not hang on its first large op."""
    out = assert_survives("""
        import os, threading, numpy as np, runetensor as rt
        from runetensor._backend import _parallel
        from runetensor._backend import _fast
        rt.set_num_threads(2)
        x = rt.from_numpy(np.arange(1 << 22, dtype=np.float32))
        (x + 1).sum()  # the thread pool and buffer pool exist
        held, release = threading.Event(), threading.Event()
        def holder():
            with _fast.buffer_pool._lock, _parallel._lock:
                held.set()
                release.wait()
        t = threading.Thread(target=holder, daemon=True)
        t.start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            try:
                y = x + 2           # a fresh large result: the buffer pool, the threads
                z = rt.copy(x)
                z[1:] = z[:-1]
                ok = float(rt.to_numpy(y)[-1]) == (1 << 22) + 1 and float(rt.to_numpy(z)[1]) == 0.0
                rt.set_num_threads(3)
                total = int(rt.sum(rt.from_numpy(np.arange(1 << 22)) + 0).item())
                ok = ok and total == (1 << 22) * ((1 << 22) - 1) // 2
                os._exit(0 if ok else 3)
            except BaseException:
                import traceback; traceback.print_exc()
                os._exit(4)
        import time
        deadline = time.monotonic() + 20
        while True:
            r, status = os.waitpid(pid, os.WNOHANG)
            if r:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9); os.waitpid(pid, 0)
                release.set()
                raise SystemExit("the forked child hung")
            time.sleep(0.01)
        release.set(); t.join()
        assert os.waitstatus_to_exitcode(status) == 0, status
        print("ok")
    """, timeout=60)
    assert "ok" in out


def test_multiprocessing_fork_child_while_locks_held():
    out = assert_survives("""
        import multiprocessing as mp, threading, numpy as np, runetensor as rt
        from runetensor._backend import _fast
        rt.set_num_threads(2)
        x = rt.from_numpy(np.arange(1 << 21, dtype=np.int64))
        (x * 2).sum()
        def child(q):
            q.put(int(rt.sum(x * 3).item()))
        held, release = threading.Event(), threading.Event()
        def holder():
            with _fast.buffer_pool._lock:
                held.set(); release.wait()
        t = threading.Thread(target=holder, daemon=True); t.start(); held.wait()
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        try:
            v = q.get(timeout=20)
        finally:
            release.set()
            p.join(5)
            if p.is_alive():
                p.kill()
        t.join()
        assert p.exitcode == 0 and v == 3 * ((1 << 21) * ((1 << 21) - 1) // 2), (p.exitcode, v)
        print("ok")
    """, timeout=60)
    assert "ok" in out


def test_set_num_threads_while_other_threads_compute():
    """Changing the thread count while other threads run threaded ops: no RuntimeError, no hang."""
    out = assert_survives("""
        import threading, time, numpy as np, runetensor as rt
        rt.set_num_threads(2)
        a = np.arange(1 << 21, dtype=np.float32)
        x = rt.from_numpy(a)
        want = a + 1
        errors, stop = [], threading.Event()
        def work():
            try:
                while not stop.is_set():
                    y = x + 1
                    if not np.array_equal(rt.to_numpy(y), want):
                        errors.append("wrong values")
            except BaseException as e:
                errors.append(repr(e))
        ws = [threading.Thread(target=work) for _ in range(3)]
        for w in ws: w.start()
        end = time.monotonic() + 3
        i = 0
        while time.monotonic() < end:
            rt.set_num_threads(1 + i % 3); i += 1
            time.sleep(0.001)
        stop.set()
        for w in ws: w.join(30)
        assert not any(w.is_alive() for w in ws), "a worker hung"
        assert not errors, errors[:3]
        print("ok", i)
    """, timeout=60)
    assert out.startswith("ok")


def test_parallel_for_survives_a_shut_down_pool(monkeypatch):
    """A pool shut down between ``_pool()`` and ``submit`` (what set_num_threads does to a
    concurrent caller): the caller runs the chunks itself."""
    rt.set_num_threads(2)
    try:
        ex = _parallel._pool()
        ex.shutdown(wait=True)
        monkeypatch.setattr(_parallel, "_pool", lambda: ex)
        assert _parallel.parallel_for(lambda i: i * i, 8) == [i * i for i in range(8)]
    finally:
        monkeypatch.undo()
        with _parallel._lock:
            if _parallel._executor is ex:
                _parallel._executor = None


def test_after_fork_resets_every_lock_and_pool():
    """In a forked child every module-level lock is a fresh, unlocked one and the pools are empty."""
    out = assert_survives("""
        import os, numpy as np, runetensor as rt
        from runetensor._backend import _parallel
        from runetensor._backend import _fast
        rt.set_num_threads(2)
        (rt.from_numpy(np.ones(1 << 21, np.float32)) + 1).sum()
        assert _parallel._executor is not None
        _fast.buffer_pool._lock.acquire(); _parallel._lock.acquire()
        pid = os.fork()
        if pid == 0:
            ok = (not _fast.buffer_pool._lock.locked() and not _parallel._lock.locked()
                  and _parallel._executor is None and not getattr(_parallel._local, "inside", False))
            os._exit(0 if ok else 1)
        _, st = os.waitpid(pid, 0)
        _fast.buffer_pool._lock.release(); _parallel._lock.release()
        assert os.waitstatus_to_exitcode(st) == 0
        print("ok")
    """, timeout=60)
    assert "ok" in out


STRESS = r"""
import os, sys, threading, time, random, warnings
import multiprocessing as mp
import numpy as np
import runetensor as rt
warnings.simplefilter("ignore", DeprecationWarning)  # os.fork with threads (3.12+)

N = 1 << 21
rng = np.random.default_rng(7)
A = rng.integers(-1000, 1000, N).astype(np.int32)
F = rng.standard_normal(N).astype(np.float32)
S = rng.integers(0, 1 << 30, (64, N // 64)).astype(np.int32)

def ops():
    x, f, s = rt.from_numpy(A), rt.from_numpy(F), rt.from_numpy(S)
    r = {}
    r["add"] = rt.to_numpy(x + 3).copy()
    r["mul"] = rt.to_numpy(f * f + 1).copy()
    r["isum"] = int(rt.sum(x.astype(rt.int64)).item())
    r["fsum"] = float(rt.sum(f).item())
    r["rows"] = rt.to_numpy(rt.sum(rt.reshape(f, [64, -1]), axes=[1])).copy()
    r["sort"] = rt.to_numpy(rt.sort(s, axis=-1)[0]).copy()
    y = rt.copy(x)
    y[5:] = y[:-5]                       # overlapping assign, forward
    z = rt.copy(x)
    z[:-1000] = z[1000:]                 # and backward
    r["shift_f"] = rt.to_numpy(y).copy()
    r["shift_b"] = rt.to_numpy(z).copy()
    w = rt.copy(f)
    rt.blit(w[3:], w[:-3])
    r["blit"] = rt.to_numpy(w).copy()
    r["cast"] = rt.to_numpy(f.astype(rt.float16)).copy()
    return r

rt.set_num_threads(1)
want = ops()

def same(got):
    bad = []
    for k, v in want.items():
        g = got[k]
        if isinstance(v, np.ndarray):
            if not np.array_equal(g.view(np.uint8), v.view(np.uint8)):
                bad.append(k)
        elif g != v:
            bad.append(k)
    return bad

rt.set_num_threads(2)
errors = []
stop = threading.Event()
done = [0]

def worker():
    try:
        while not stop.is_set():
            bad = same(ops())
            if bad:
                errors.append(f"wrong results: {bad}")
            done[0] += 1
    except BaseException as e:
        import traceback
        errors.append("".join(traceback.format_exception(e)))

def fork_child_op():
    y = rt.copy(rt.from_numpy(A))
    y[5:] = y[:-5]
    return 0 if (np.array_equal(rt.to_numpy(y), want["shift_f"])
                 and int(rt.sum(rt.from_numpy(A).astype(rt.int64)).item()) == want["isum"]) else 3

def mp_child(q):
    q.put(fork_child_op())

def wait_child(pid, limit=20.0):
    end = time.monotonic() + limit
    while True:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            return os.waitstatus_to_exitcode(st)
        if time.monotonic() > end:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "hung"
        time.sleep(0.005)

ws = [threading.Thread(target=worker, daemon=True) for _ in range(3)]
for w in ws:
    w.start()
ctx = mp.get_context("fork")
t_end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 8)
forks = 0
changes = 0
i = 0
while time.monotonic() < t_end and not errors:
    rt.set_num_threads(1 + i % 3)
    changes += 1
    if i % 2 == 0:
        pid = os.fork()
        if pid == 0:
            code = 5
            try:
                code = fork_child_op()
            finally:
                os._exit(code)
        st = wait_child(pid)
        if st != 0:
            errors.append(f"os.fork child: {st}")
        forks += 1
    else:
        q = ctx.Queue()
        p = ctx.Process(target=mp_child, args=(q,))
        p.start()
        try:
            v = q.get(timeout=20)
        except Exception as e:
            v = f"no answer ({e!r})"
        p.join(20)
        if p.is_alive():
            p.kill()
            errors.append("multiprocessing child hung")
        elif v != 0 or p.exitcode != 0:
            errors.append(f"multiprocessing child: {v} {p.exitcode}")
        forks += 1
    i += 1
    time.sleep(0.02)
stop.set()
for w in ws:
    w.join(30)
if any(w.is_alive() for w in ws):
    errors.append("a worker thread hung")
if errors:
    print("\n".join(errors[:5]))
    sys.exit(1)
assert done[0] >= 3, done[0]
print(f"ok rounds={done[0]} forks={forks} changes={changes}")
"""


def test_stress_threads_forks_and_thread_count_changes():
    """Three threads run mixed large ops (fresh results, sums, sorts, overlapping assigns, casts)
    and compare with single-threaded results, while the main thread keeps changing the thread
    count and forking children (os.fork and multiprocessing's 'fork') that run a large op."""
    code = "import sys; sys.argv = ['stress', '8']\n" + STRESS
    out = assert_survives(code, timeout=90)
    assert out.startswith("ok"), out
