"""How runetensor decides the cores are busy (``_parallel._machine_busy``): other processes' CPU time on this
process's cores from ``/proc/stat``, re-read at most every ``LOAD_PERIOD``; the 1-minute load average where
``/proc/stat`` is missing or unreadable.  The decision changes only the speed: products and chunked operations
give the same bits whichever way it goes and whichever source it came from."""
from __future__ import annotations

import os
import types

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _blas, _parallel

CORES = (0, 1)


class FakeClock:
    """``time`` for ``_parallel``: monotonic and process CPU time moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.cpu = 5.0

    def monotonic(self) -> float:
        return self.now

    def process_time(self) -> float:
        return self.cpu


def write_stat(path, busy_ticks: dict[int, int], idle_ticks: int = 10_000) -> None:
    """A ``/proc/stat`` with one line per core: user nice system idle iowait irq softirq steal guest guest_nice."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for c, b in busy_ticks.items():
        lines.append(f"cpu{c} {b - 3} 1 2 {idle_ticks} 7 0 0 0 0 0")
    lines += ["intr 12345 0 0", "ctxt 99"]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A fresh signal reading a fake /proc/stat of two cores with a fake clock; loadavg says 'free'."""
    clock = FakeClock()
    stat = tmp_path / "stat"
    monkeypatch.setattr(_parallel, "time", types.SimpleNamespace(monotonic=clock.monotonic,
                                                                 process_time=clock.process_time))
    monkeypatch.setattr(_parallel, "_STAT_PATH", str(stat))
    monkeypatch.setattr(_parallel, "_stat_ok", [True])
    monkeypatch.setattr(_parallel, "_stat_prev", [None])
    monkeypatch.setattr(_parallel, "_load_checked", [-1.0, False])
    monkeypatch.setattr(_parallel, "_num_threads", 2)
    monkeypatch.setattr(_parallel.os, "sched_getaffinity", lambda pid: set(CORES), raising=False)
    monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    return clock, stat


def advance(clock: FakeClock, stat, seconds: float, others: float, own: float, ticks: dict[int, int]) -> None:
    """``seconds`` pass; other processes use ``others`` cores and this process ``own`` cores (split over both)."""
    clock.now += seconds
    clock.cpu += own * seconds
    per_core = (others + own) * seconds * _parallel._CLK_TCK / len(CORES)
    for c in CORES:
        ticks[c] += round(per_core)
    write_stat(stat, ticks)


def test_other_processes_cpu_time_makes_the_cores_busy_within_one_period(fresh):
    clock, stat = fresh
    ticks = {c: 1000 for c in CORES}
    write_stat(stat, ticks)
    assert _parallel._machine_busy() is False  # first reading: the load average (0.0)
    advance(clock, stat, 0.2, others=0.0, own=2.0, ticks=ticks)  # our own threads on both cores: not busy
    assert _parallel._machine_busy() is False
    advance(clock, stat, 0.2, others=1.6, own=0.4, ticks=ticks)  # a competitor starts
    assert _parallel._machine_busy() is True
    advance(clock, stat, 0.01, others=0.0, own=2.0, ticks=ticks)  # within LOAD_PERIOD: the cached answer
    assert _parallel._machine_busy() is True
    advance(clock, stat, 0.2, others=0.1, own=1.9, ticks=ticks)  # it stopped
    assert _parallel._machine_busy() is False


def test_half_a_core_of_others_is_the_threshold_on_two_threads_with_a_quarter_core_of_hysteresis(fresh):
    clock, stat = fresh
    ticks = {c: 1000 for c in CORES}
    write_stat(stat, ticks)
    _parallel._machine_busy()
    for others, busy in ((0.3, False), (0.45, False), (0.8, True), (0.4, True), (0.3, True), (0.2, False),
                         (0.45, False), (0.6, True)):
        advance(clock, stat, 1.0, others=others, own=1.0, ticks=ticks)
        assert _parallel._machine_busy() is busy, others


@pytest.mark.parametrize("how", ["missing", "a folder", "garbage", "no cores"])
@pytest.mark.parametrize("load", [0.5, 9.0])
def test_without_a_readable_proc_stat_the_load_average_decides(fresh, monkeypatch, tmp_path, how, load):
    clock, stat = fresh
    if how == "missing":
        monkeypatch.setattr(_parallel, "_STAT_PATH", str(tmp_path / "absent"))
    elif how == "a folder":
        monkeypatch.setattr(_parallel, "_STAT_PATH", str(tmp_path))
    elif how == "garbage":
        stat.write_text("cpu  1 2 3\ncpu0 x y z\n")
    else:
        stat.write_text("cpu  1 2 3 4 5 6 7 8\nintr 1\n")
    monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (load, load, load))
    for _ in range(3):
        clock.now += 0.2
        assert _parallel._machine_busy() is (load > 2.5)
    assert _parallel._stat_ok == [False]  # not read again


def test_no_load_average_either_means_free(fresh, monkeypatch, tmp_path):
    clock, _ = fresh
    monkeypatch.setattr(_parallel, "_STAT_PATH", str(tmp_path / "absent"))

    def no_loadavg():
        raise OSError("no load average here")
    monkeypatch.setattr(_parallel.os, "getloadavg", no_loadavg)
    clock.now += 0.2
    assert _parallel._machine_busy() is False


def test_the_real_proc_stat_gives_a_reading():
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here")
    import time
    _parallel._stat_prev[0] = None
    assert _parallel._others_cores(time.monotonic()) is None  # the first reading only sets the baseline
    time.sleep(0.06)
    seen = _parallel._others_cores(time.monotonic())
    assert seen is not None and seen[1] == len(os.sched_getaffinity(0))
    assert -1.0 < seen[0] <= seen[1] + 1.0


def _products_and_chunks():
    """A jitted MLP training step (mid-size products), a product split into blocks, and a chunked elementwise
    op: the results as NumPy arrays."""
    rng = np.random.default_rng(3)
    x = rt.asarray(rng.standard_normal((128, 784)).astype(np.float32))
    y = rt.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)])
    p = (rt.asarray(rng.standard_normal((784, 256)).astype(np.float32) * 0.05), rt.zeros(rt.float32, (256,)),
         rt.asarray(rng.standard_normal((256, 10)).astype(np.float32) * 0.05), rt.zeros(rt.float32, (10,)))

    def loss(p, x, y):
        z = rt.maximum(x @ p[0] + p[1], 0.0) @ p[2] + p[3]
        m = rt.max(z, axes=[1], keepdims=True)
        lse = rt.log(rt.sum(rt.exp(z - m), axes=[1], keepdims=True)) + m
        return rt.mean(lse - rt.sum(z * y, axes=[1], keepdims=True))

    step = rt.jit(lambda p, x, y: tuple(w - 0.1 * g for w, g in zip(p, rt.grad(loss)(p, x, y))))
    for _ in range(3):
        p = step(p, x, y)
    big = rt.asarray(rng.standard_normal((1000, 512)).astype(np.float32))
    wide = rt.asarray(rng.standard_normal((512, 512)).astype(np.float32))
    long = rt.asarray(rng.standard_normal(1 << 20).astype(np.float32))
    return [rt.to_numpy(t) for t in (*p, big @ wide, rt.sin(long) * 2.0 + long)]


@pytest.mark.parametrize("source", ["proc_stat", "loadavg"])
def test_results_are_the_same_bits_busy_or_free_and_with_any_thread_count(monkeypatch, tmp_path, source):
    """On the shape-only path (one BLAS thread, shape-only blocks) the bits do not depend on the decision, on
    its source, or on the thread count."""
    state = {"busy": False}
    if source == "loadavg":
        monkeypatch.setattr(_parallel, "_STAT_PATH", str(tmp_path / "absent"))
        monkeypatch.setattr(_parallel, "_stat_ok", [True])
        monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (9.0,) * 3 if state["busy"] else (0.0,) * 3)
    else:
        monkeypatch.setattr(_parallel, "_others_cores", lambda now: (1.8 if state["busy"] else 0.0, 2))
    monkeypatch.setattr(_blas, "_own_threads", lambda: False)  # the path whose bits are promised
    old = rt.get_num_threads()
    runs = []
    try:
        for threads, busy in ((1, False), (2, False), (2, True), (3, False), (3, True)):
            rt.set_num_threads(threads)
            monkeypatch.setattr(_parallel, "_auto", True)  # (set_num_threads turns the load rule off)
            monkeypatch.setattr(_parallel, "_load_checked", [-1.0, not busy])
            state["busy"] = busy
            assert _parallel._machine_busy() is busy
            runs.append(_products_and_chunks())
    finally:
        rt.set_num_threads(old)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_while_free_products_are_numpys_own(monkeypatch):
    """While the cores are free (and runetensor has threads) a product is NumPy's call: NumPy's bits."""
    monkeypatch.setattr(_blas, "_machine_busy", lambda: False)
    old = rt.get_num_threads()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((128, 784)).astype(np.float32)
    b = rng.standard_normal((784, 256)).astype(np.float32)
    try:
        rt.set_num_threads(2)
        got = rt.to_numpy(rt.asarray(a) @ rt.asarray(b))
        assert np.array_equal(got, np.matmul(a, b))
    finally:
        rt.set_num_threads(old)


def test_blocks_policy_gives_the_shape_only_bits_while_the_cores_are_free(monkeypatch):
    """``RUNETENSOR_BLAS_THREADING=blocks``: one BLAS thread and shape-only blocks even while the cores are free, so
    the bits are those of the documented block plan at one BLAS thread (where OpenBLAS's two threads split k)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if _blas.controller() is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS")
    monkeypatch.setattr(_blas, "_policy", ["blocks"])
    monkeypatch.setattr(_blas, "_machine_busy", lambda: False)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((128, 784)).astype(np.float32)
    b = rng.standard_normal((784, 256)).astype(np.float32)
    axis, blocks = _blas.gemm_plan(128, 256, 784)
    with threadpoolctl.threadpool_limits(1, "blas"):
        want = np.concatenate([a @ b[:, lo:hi] for lo, hi in blocks], axis=1) if axis else \
            np.concatenate([a[lo:hi] @ b for lo, hi in blocks])
    old = rt.get_num_threads()
    try:
        for threads in (1, 2, 3):
            rt.set_num_threads(threads)
            with threadpoolctl.threadpool_limits(2, "blas"):
                got = rt.to_numpy(rt.asarray(a) @ rt.asarray(b))
            assert np.array_equal(got, want), threads
    finally:
        rt.set_num_threads(old)


@pytest.mark.parametrize("value, want", [("", "auto"), ("numpy", "numpy"), (" Blocks ", "blocks"), ("auto", "auto")])
def test_blas_threading_policy_values(monkeypatch, value, want):
    monkeypatch.setattr(_blas, "_policy", [])
    monkeypatch.setenv("RUNETENSOR_BLAS_THREADING", value)
    assert _blas.policy() == want


def test_an_unknown_blas_threading_policy_warns_once_and_means_auto(monkeypatch):
    monkeypatch.setattr(_blas, "_policy", [])
    monkeypatch.setenv("RUNETENSOR_BLAS_THREADING", "fastest")
    with pytest.warns(RuntimeWarning, match="RUNETENSOR_BLAS_THREADING='fastest' is not one of auto, numpy, blocks"):
        assert _blas.policy() == "auto"
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _blas.policy() == "auto"
