"""The thread pool behind the backends' fast paths: ``set_num_threads`` and ``get_num_threads``.

Large elementwise operations, reductions, blocked copies and the low-precision
float paths of the NumPy backend split their work into chunks and run them on
this pool (NumPy's kernels release the GIL, so the chunks run on separate
cores).  The pool is sized by the cores this process may use (or by the
``RUNETENSOR_NUM_THREADS`` environment variable) and can be set to one
thread, which runs every chunk in the calling thread.  Results do not depend
on the thread count (reductions aside, see ``docs/performance.md``).

By default (no ``set_num_threads`` call, no environment variable) the chunks
run serially while other processes keep the cores busy (their CPU time on
this process's cores, read every 50 ms: :func:`_machine_busy`): helper
threads would be descheduled in the middle of a chunk.

This module is backend-neutral: it only schedules Python callables.  Matrix
products use it too: ``_blas`` runs the BLAS single-threaded around runetensor's
own products and splits large ones into blocks on this pool, so the thread
count set here is also theirs (the user's own NumPy calls keep the BLAS's).
"""
from __future__ import annotations

import itertools
import os
import queue
import sys
import threading
import time
from typing import Any, Callable

try:  # the helpers' bounded wait between operations (without the compiled kernels they block at once)
    from ._kernels import spin_reset as _spin_reset
    from ._kernels import spin_wait as _spin_wait
    from ._kernels import spinners as _spinners
except ImportError:  # pragma: no cover - the kernels are optional
    _spin_wait = _spinners = _spin_reset = None

__all__ = ["set_num_threads", "get_num_threads"]


def _machine_threads() -> int:
    env = os.environ.get("RUNETENSOR_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n >= 1:
            return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_lock = threading.Lock()
_num_threads = _machine_threads()
#: True until set_num_threads is called (or RUNETENSOR_NUM_THREADS is set): the pool then
#: stays serial while other processes keep the cores busy (_machine_busy)
_auto = not os.environ.get("RUNETENSOR_NUM_THREADS", "").strip()
_load_checked = [-1.0, False]  # [time of the last check, busy?]
#: the load is looked at again at most this often (seconds): a competitor that starts is seen within about
#: this time, and reading /proc/stat (~40 us) costs under 0.1% of the time between readings
LOAD_PERIOD = 0.05
#: per-core CPU times of the whole machine (Linux); where it cannot be read, the 1-minute load average
_STAT_PATH = "/proc/stat"
_stat_prev: list[Any] = [None]  # (monotonic time, process CPU time, ticks busy on our cores, our cores)
_stat_ok = [True]
_sample_lock = threading.Lock()
_executor: _Pool | None = None
_local = threading.local()  # .inside: True in a pool worker (nested calls run serially)


def set_num_threads(n: int) -> None:
    """Set how many threads runetensor's fast paths may use (1: everything in the calling thread).

    Once set, the count is used as is (the default count instead falls back to
    serial work while other processes keep the machine's cores busy).

    Args:
        n: a positive integer.

    Raises:
        TypeError: if ``n`` is not an integer.
        ValueError: if ``n`` < 1.

    >>> import runetensor as rt
    >>> old = rt.get_num_threads()
    >>> rt.set_num_threads(1)
    >>> rt.get_num_threads()
    1
    >>> rt.set_num_threads(old)
    """
    global _num_threads, _executor
    if isinstance(n, bool):
        raise TypeError("set_num_threads: expected a positive int, got bool")
    if not isinstance(n, int):
        try:
            n = n.__index__()  # type: ignore[union-attr]
        except (AttributeError, TypeError):
            raise TypeError(f"set_num_threads: expected a positive int, got {type(n).__name__}") from None
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    global _auto
    _auto = False
    with _lock:
        if n != _num_threads:
            old, _executor = _executor, None
            _num_threads = n
            if old is not None:
                # without waiting or cancelling: chunks other threads already queued on the old
                # pool still run there, and a submit that loses the race to this shutdown makes
                # parallel_for run the chunks in its own thread (see there); nothing fails or hangs
                old.shutdown(wait=False)


def get_num_threads() -> int:
    """How many threads runetensor's fast paths use (by default, the cores available to this process).

    Inside a task of a Dask distributed worker, at most the worker's own thread count (``nthreads``:
    a single-threaded worker runs everything in its task's thread).

    Returns:
        The current thread count (at least 1).

    >>> import runetensor as rt
    >>> rt.get_num_threads() >= 1
    True
    """
    cap = _task_threads()
    return min(_num_threads, cap) if cap else _num_threads


def _task_threads() -> int:
    """Inside a task of a Dask distributed worker: the worker's thread count; 0 elsewhere.  (Read from
    ``distributed`` only when it is imported: a worker process has it; nothing is imported here.)"""
    mod = sys.modules.get("distributed.worker")
    if mod is None:
        return 0
    cv = getattr(mod, "_worker_cvar", None)  # (get_worker() without its exception outside workers: cheap)
    if cv is not None:
        w = cv.get(None)
    else:
        try:
            w = mod.get_worker()
        except (ValueError, AttributeError):
            w = None
    if w is None:
        return 0
    n = getattr(getattr(w, "state", None), "nthreads", None) or getattr(w, "nthreads", None) or 1
    return max(1, int(n))


def _machine_busy() -> bool:
    """Whether other processes keep the cores busy (looked at again at most every :data:`LOAD_PERIOD`).

    Helpers would then be descheduled in the middle of their chunks and the
    caller would wait for them; serial work is faster.  Results do not depend
    on the thread count, so this only changes speed.

    The measure is the CPU time other processes took on this process's cores since the previous
    reading (``/proc/stat``'s per-core busy time less this process's own CPU time): busy when it is
    more than the cores runetensor's threads leave free plus half a core, and from then on until it is
    below that less a quarter of a core.  A competitor that has just
    started is seen at the next reading, where the 1-minute load average takes a minute to rise; this
    process's own threads (the pool's, the BLAS's, spinning or not) never count.  Where ``/proc/stat``
    cannot be read (not Linux) and at the first reading: the 1-minute load average above the thread
    count + 0.5.
    """
    now = time.monotonic()
    if now - _load_checked[0] < LOAD_PERIOD or not _sample_lock.acquire(blocking=False):
        return _load_checked[1]
    try:
        if now - _load_checked[0] >= LOAD_PERIOD:
            seen = _others_cores(now) if _stat_ok[0] else None
            if seen is not None:
                others, cores = seen
                # a quarter of a core of hysteresis: a competitor hovering at the threshold does not switch the
                # products' mode (and their last bits, see _blas) every reading
                limit = max(0.5, cores - _num_threads + 0.5) - (0.25 if _load_checked[1] else 0.0)
                _load_checked[1] = others > limit
            else:
                try:
                    _load_checked[1] = os.getloadavg()[0] > _num_threads + 0.5
                except (AttributeError, OSError):
                    _load_checked[1] = False
            _load_checked[0] = now
    finally:
        _sample_lock.release()
    return _load_checked[1]


def _others_cores(now: float) -> tuple[float, int] | None:
    """``(cores' worth of CPU time other processes used on this process's cores since the previous call, the
    number of those cores)``; ``None`` at the first call, after the cores changed, or where ``/proc/stat``
    cannot be read (then it is not read again)."""
    try:
        cores = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        cores = None
    cpu = time.process_time()
    try:
        with open(_STAT_PATH, "rb") as f:
            f.readline()  # the total line
            busy = 0
            seen = 0
            for line in f:
                if not line.startswith(b"cpu"):
                    break
                v = line.split()
                if cores is not None and int(v[0][3:]) not in cores:
                    continue
                # user nice system idle iowait irq softirq steal: all but idle and iowait are taken
                busy += sum(int(x) for x in v[1:9]) - int(v[4]) - int(v[5])
                seen += 1
    except (OSError, ValueError, IndexError):
        _stat_ok[0] = False
        return None
    if seen == 0:
        _stat_ok[0] = False
        return None
    prev, _stat_prev[0] = _stat_prev[0], (now, cpu, busy, seen)
    if prev is None or prev[3] != seen or now <= prev[0]:
        return None
    return ((busy - prev[2]) / _CLK_TCK - (cpu - prev[1])) / (now - prev[0]), seen


try:
    _CLK_TCK = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):
    _CLK_TCK = 100.0


#: how long (seconds) a helper keeps polling for the next operation after its last one, while the cores are
#: free (:func:`_machine_busy`), before it blocks: an operation that comes within this time starts on a
#: running helper instead of one the scheduler must wake (25-33 us on an idle core of the 2-core VM,
#: milliseconds on a busy one).  0: block at once, as while the cores are busy.  The environment variable
#: ``RUNETENSOR_POOL_SPIN_US`` (microseconds, 0-10000) sets it at import.
SPIN_S = 100e-6
try:
    SPIN_S = min(max(float(os.environ.get("RUNETENSOR_POOL_SPIN_US", "")), 0.0), 1e4) * 1e-6
except ValueError:
    pass


def _new_flag() -> Any:
    """An 8-byte aligned int64 cell (``flag[0]``) that ``_kernels.spin_wait`` polls."""
    return memoryview(bytearray(8)).cast("q")


class _Pool:
    """The helper threads: tasks through a queue, ``submit`` / ``shutdown`` as an executor's.

    Between tasks a helper polls ``_flag`` (bumped by every ``submit``) for up to :data:`SPIN_S` in C with
    the GIL released, and only while the cores are free (:func:`_machine_busy`); then, or at once while they
    are busy, it blocks on the queue.  Which thread runs a task never changes a result (chunks are fixed by
    the shapes), so the wait only changes when a helper starts."""

    def __init__(self, n: int) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._flag = _new_flag()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"runetensor_{k}", daemon=True) for k in range(n)]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[[], Any]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("runetensor's thread pool was shut down")
            self._q.put(fn)
            self._flag[0] += 1

    def shutdown(self, wait: bool = True) -> None:
        """No new tasks; the helpers finish the queued ones and end (joined if ``wait``)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                for _ in self._threads:
                    self._q.put(None)
        if wait:
            me = threading.current_thread()
            for t in self._threads:
                if t is not me:
                    t.join()

    def _next(self) -> Any:
        """The next task: polled for while the cores are free, then waited for."""
        q, flag = self._q, self._flag
        end = time.perf_counter() + SPIN_S
        while True:
            seen = flag[0]  # read before looking: a task put after the look bumps the flag after this read
            try:
                return q.get_nowait()
            except queue.Empty:
                pass
            left = end - time.perf_counter()
            if _spin_wait is None or left <= 0 or _machine_busy():
                return q.get()
            _spin_wait(flag, seen, int(left * 1e9))

    def _work(self) -> None:
        _local.inside = True
        while True:
            fn = self._next()
            if fn is None:
                return
            try:
                fn()
            except BaseException:  # noqa: S110 - parallel_for's runner reports its own errors
                pass
            del fn


def share_claims(nt: int) -> bool:
    """Whether a compiled claim kernel should run with ``share`` set (else through :func:`parallel_for`).

    With ``share`` the kernel posts its chunks where the pool's helpers look while they poll (in C, the GIL
    released: ``_kernels.spin_wait``), so a polling helper starts on them at once, with no wake-up and no GIL
    hand-off.  Only while the cores are free and the helpers poll at all (:data:`SPIN_S`); where no helper
    polls now, one is sent a no-op task, after which it polls (and finds the chunks, or the next operation's).
    ``nt``: the threads the caller would use (1, or called from a pool worker: never shared)."""
    if (nt <= 1 or _spinners is None or SPIN_S <= 0 or _num_threads <= 1 or getattr(_local, "inside", False)
            or _machine_busy()):
        return False
    if _spinners() == 0:
        try:
            _pool().submit(_no_op)
        except RuntimeError:  # shut down under us (set_num_threads in another thread)
            return False
    return True


def _no_op() -> None:
    """A task that only makes a sleeping helper run, and then poll (see :func:`share_claims`)."""


def _pool() -> _Pool:
    global _executor
    ex = _executor
    if ex is None:
        with _lock:
            if _executor is None:
                _executor = _Pool(max(1, _num_threads - 1))
            ex = _executor
    return ex


def parallel_for(fn: Callable[[int], Any], n: int, busy_ok: bool = False) -> list[Any]:
    """Run ``fn(0) ... fn(n - 1)`` on the pool and the calling thread; return the results in order.

    Chunks are taken dynamically: the caller and each helper thread repeatedly
    claim the next unclaimed index.  The caller never waits for a helper that
    has not started (on a busy machine it simply runs every chunk itself), only
    for chunks a helper is already running, so a loaded machine costs at most
    the serial time plus a few microseconds.  Exceptions propagate (the first
    one raised, after every claimed chunk has finished).  Serial when ``n`` is 1,
    the pool has one thread, or when called from a pool worker (no nested
    parallelism, so no deadlock).  By default also serial while other processes keep the cores busy
    (see :func:`_machine_busy`); ``busy_ok``: not for that reason, for chunks long enough (milliseconds,
    as a large matrix product's blocks) that a helper descheduled for a while still pays off.
    """
    if n <= 1 or _num_threads <= 1 or getattr(_local, "inside", False) or (_auto and not busy_ok
                                                                          and _machine_busy()):
        return [fn(i) for i in range(n)]
    nt = get_num_threads()  # (a Dask worker's task: at most the worker's threads)
    if nt <= 1:
        return [fn(i) for i in range(n)]
    results: list[Any] = [None] * n
    errors: list[BaseException] = []
    claim = itertools.count()  # next() on a count is atomic under the GIL
    lock = threading.Lock()
    done = threading.Event()
    finished = [0]
    fin = _new_flag()  # 1 once every chunk has finished (polled by the caller, as done is waited for)

    def runner() -> None:
        while True:
            i = next(claim)
            if i >= n:
                return
            try:
                results[i] = fn(i)
            except BaseException as e:  # reported by the caller
                errors.append(e)
            with lock:
                finished[0] += 1
                if finished[0] == n:
                    fin[0] = 1
                    done.set()

    try:
        ex = _pool()
        for _ in range(min(nt - 1, n - 1)):
            ex.submit(runner)
    except RuntimeError:
        # the pool was shut down under us (set_num_threads in another thread replaced it, or
        # the interpreter is exiting) or no thread could be started: the helpers already
        # submitted still run, and this thread claims whatever they leave
        pass
    runner()
    if not done.is_set() and _spin_wait is not None and SPIN_S > 0 and not _machine_busy():
        # a helper is finishing a chunk: poll (GIL released) for a while before sleeping on the event
        _spin_wait(fin, 0, int(SPIN_S * 1e9))
    done.wait()
    if errors:
        raise errors[0]
    return results


def chunk_ranges(n: int, chunk: int, align: int = 1) -> list[tuple[int, int]]:
    """``(lo, hi)`` ranges of about ``chunk`` items covering ``range(n)``, boundaries multiples of ``align``.

    The ranges depend only on ``n`` and ``chunk``, never on the thread count,
    so results assembled from chunks are the same with any number of threads.
    """
    chunk = max(align, chunk // max(align, 1) * max(align, 1), 1)
    return [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)] or [(0, n)]


#: pools inherited by a forked child: kept referenced, never used nor shut down there (their
#: worker threads do not exist in the child, and their internal locks may have been held at the
#: fork; tearing them down could block on those locks)
_forked_away: list = []


def _after_fork() -> None:
    """In a forked child: a fresh lock, no pool (a new one is made on the first threaded op)
    and fresh thread-local state.  The parent's threads do not exist in the child; a lock one of
    them held at the fork would never be released."""
    global _executor, _lock, _local, _sample_lock
    if _executor is not None:
        _forked_away.append(_executor)
    _executor = None
    _lock = threading.Lock()
    _sample_lock = threading.Lock()
    _stat_prev[0] = None  # the parent's CPU time is not the child's
    _local = threading.local()  # forked from a pool worker: the child's thread is no worker
    if _spin_reset is not None:
        _spin_reset()  # the parent's polling helpers do not exist here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
