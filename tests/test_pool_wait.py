"""The pool helpers' wait between operations: a bounded poll while the cores are free, blocking while busy."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _parallel

kernels = pytest.importorskip("runetensor._backend._kernels")


@pytest.fixture
def two_threads():
    old = rt.get_num_threads()
    rt.set_num_threads(2)
    yield
    rt.set_num_threads(old)


def _count_polls(monkeypatch):
    calls = []
    real = kernels.spin_wait

    def counted(flag, seen, ns):
        calls.append((threading.current_thread().name, ns))
        return real(flag, seen, ns)

    monkeypatch.setattr(_parallel, "_spin_wait", counted)
    return calls


def _ops(k=6):
    x = np.arange(4_000_000, dtype=np.float32)
    for _ in range(k):
        # chunks that take a while, so the caller waits for the helper's last one
        assert _parallel.parallel_for(lambda i: float(np.sqrt(x[i::4]).sum()), 4) is not None
        time.sleep(0.002)


def test_helpers_poll_for_work_while_the_cores_are_free(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    rt.set_num_threads(3)
    rt.set_num_threads(2)  # a fresh pool, made under the patched wait
    calls = _count_polls(monkeypatch)
    _ops()
    helper_polls = [ns for name, ns in calls if name.startswith("runetensor")]
    assert helper_polls, "a helper never polled for work with the cores free"
    assert all(0 < ns <= int(_parallel.SPIN_S * 1e9) for _, ns in calls)


def test_helpers_block_without_polling_while_the_cores_are_busy(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: True)
    monkeypatch.setattr(_parallel, "_auto", False)  # threaded anyway (an explicit thread count)
    rt.set_num_threads(3)
    rt.set_num_threads(2)
    calls = _count_polls(monkeypatch)
    _ops()
    assert calls == []


def test_zero_poll_time_means_blocking_at_once(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.0)
    calls = _count_polls(monkeypatch)
    _ops(3)
    assert calls == []


def test_idle_helpers_stop_polling_after_the_bound(two_threads, monkeypatch):
    """After the poll bound the helpers sleep: an idle process takes (almost) no CPU time."""
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    _ops(2)
    time.sleep(0.05)
    c0, t0 = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    used = time.process_time() - c0
    assert used < 0.1 * (time.perf_counter() - t0), f"idle helpers took {used:.3f} s of CPU in 0.5 s"


def test_spin_wait_returns_on_a_change_or_after_the_bound():
    flag = memoryview(bytearray(8)).cast("q")
    t0 = time.perf_counter()
    assert kernels.spin_wait(flag, 0, 2_000_000) == 0  # no change: back after ~2 ms
    assert 0.0015 < time.perf_counter() - t0 < 1.0
    flag[0] = 5
    t0 = time.perf_counter()
    assert kernels.spin_wait(flag, 0, 500_000_000) == 5  # changed: back at once
    assert time.perf_counter() - t0 < 0.25

    def bump():
        time.sleep(0.01)
        flag[0] = 6

    t = threading.Thread(target=bump)
    t.start()
    t0 = time.perf_counter()
    assert kernels.spin_wait(flag, 5, 900_000_000) == 6  # the GIL is released while it polls
    assert time.perf_counter() - t0 < 0.5
    t.join()


@pytest.mark.parametrize("bad", [-1, 1_000_000_001])
def test_spin_wait_rejects_a_bad_bound(bad):
    with pytest.raises(ValueError, match=r"spin_wait: ns must be in \[0, 1e9\]; got"):
        kernels.spin_wait(memoryview(bytearray(8)).cast("q"), 0, bad)


def test_spin_wait_rejects_a_flag_that_is_not_an_int64_cell():
    with pytest.raises(ValueError, match="spin_wait: flag must hold at least 1 8-byte items"):
        kernels.spin_wait(bytearray(8), 0, 10)


@pytest.mark.parametrize("free", [True, False])
def test_results_are_the_same_bits_with_one_two_or_three_threads(monkeypatch, free):
    import ml_dtypes

    monkeypatch.setattr(_parallel, "_machine_busy", lambda: not free)
    rng = np.random.default_rng(7)
    v = rng.standard_normal(3_000_001).astype(np.float32)
    m = rng.standard_normal((1500, 1201)).astype(np.float32)
    h = rng.standard_normal(3_000_001).astype(np.float16)
    b = v.astype(ml_dtypes.bfloat16)
    ops = [lambda: rt.sum(rt.asarray(v)), lambda: rt.sum(rt.asarray(m), axes=[1]),
           lambda: rt.sum(rt.asarray(m), axes=[0]), lambda: rt.asarray(h) + rt.asarray(h),
           lambda: rt.asarray(b) + rt.asarray(b), lambda: rt.exp(rt.asarray(b))]
    old = rt.get_num_threads()
    got = {}
    try:
        for nt in (1, 2, 3):
            rt.set_num_threads(nt)
            got[nt] = [np.asarray(op()) for op in ops for _ in range(2)]
    finally:
        rt.set_num_threads(old)
    for nt in (2, 3):
        for a, c in zip(got[1], got[nt]):
            assert a.dtype == c.dtype and a.tobytes() == c.tobytes()
    # and the values are right (NumPy's sums, float64, within the documented bound)
    np.testing.assert_allclose(np.asarray(got[1][0], np.float64), v.astype(np.float64).sum(),
                               atol=2 * 40 * np.finfo(np.float32).eps * np.abs(v).sum())
    np.testing.assert_array_equal(got[1][6], h + h)


def _wait_for_polling_helper(timeout=2.0):
    """Run a small parallel op until a helper is seen polling (its poll lasts SPIN_S after each task)."""
    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        _parallel.parallel_for(lambda i: None, 2)
        if kernels.spinners() > 0:
            return True
    return False


def test_claim_kernels_shared_with_polling_helpers_give_the_unshared_bits(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.05)  # long polls: a helper is there to take the job
    rng = np.random.default_rng(3)
    v = rng.standard_normal(5_000_003).astype(np.float32)
    m = rng.standard_normal((3001, 777)).astype(np.float32)
    chunk = 1 << 14
    nparts = -(-v.size // chunk)

    def sums(share):
        parts = np.zeros(nparts, np.float64)
        kernels.sum_f32_claim(v, chunk, np.zeros(1, np.int64), parts, share)
        out = np.zeros(m.shape[0], np.float32)
        kernels.sum_rows_f32_claim(m, m.shape[0], m.shape[1], out, 16, np.zeros(1, np.int64), share)
        return parts, out

    want = sums(False)
    assert _wait_for_polling_helper()
    for _ in range(20):
        assert _parallel.share_claims(2)
        got = sums(True)
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    # independent oracle: NumPy's float64 sums of each chunk and each row
    np.testing.assert_allclose(want[0], [v[k * chunk:(k + 1) * chunk].astype(np.float64).sum() for k in range(nparts)],
                               rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(want[1], m.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-3)


def test_a_polling_helper_takes_chunks_of_a_shared_claim(two_threads, monkeypatch):
    """The helper really runs chunks: the caller's own CPU time falls below the job's wall time."""
    busy = _parallel._machine_busy  # the real reading: another process on the second core starves the helper
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.2)
    v = np.ones(1 << 22, np.float32)
    end = time.perf_counter() + 5.0
    while time.perf_counter() < end:
        if kernels.spinners() == 0:
            assert _wait_for_polling_helper()
        before = time.thread_time()
        t0 = time.perf_counter()
        kernels.sum_f32_claim(v, 1 << 12, np.zeros(1, np.int64), np.zeros(1024, np.float64), True)
        wall, mine = time.perf_counter() - t0, time.thread_time() - before
        if mine < 0.8 * wall:  # someone else summed part of it
            return
    if busy():
        pytest.skip("other processes kept the second core busy: the helper could not run")
    pytest.fail("a polling helper never took a chunk of a shared claim in 5 s")


def test_no_sharing_for_one_thread_inside_a_worker_or_while_busy(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    assert not _parallel.share_claims(1)
    seen = []

    def chunk(i):
        seen.append((bool(getattr(_parallel._local, "inside", False)), _parallel.share_claims(2)))
        time.sleep(0.01)  # both threads take a chunk

    _parallel.parallel_for(chunk, 4)
    assert all(not share for inside, share in seen if inside)  # a pool worker never shares
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: True)
    assert not _parallel.share_claims(2)
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.0)
    assert not _parallel.share_claims(2)


def test_concurrent_shared_sums_from_many_threads_stay_exact(two_threads, monkeypatch):
    """Several Python threads summing at once while helpers poll: one job is shared at a time, the others run
    alone; every result has the one-thread bits (no chunk lost or read after its buffers were released)."""
    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.01)
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal(2_100_000 + 7 * k).astype(np.float32) for k in range(4)]
    ms = [rng.standard_normal((1200 + k, 1100)).astype(np.float32) for k in range(4)]
    rt.set_num_threads(1)
    want = [(np.asarray(rt.sum(rt.asarray(x))).tobytes(), np.asarray(rt.sum(rt.asarray(m), axes=[1])).tobytes())
            for x, m in zip(xs, ms)]
    rt.set_num_threads(2)
    bad = []

    def work(k):
        for _ in range(15):
            got = (np.asarray(rt.sum(rt.asarray(xs[k]))).tobytes(),
                   np.asarray(rt.sum(rt.asarray(ms[k]), axes=[1])).tobytes())
            if got != want[k]:
                bad.append(k)
            del got

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not any(t.is_alive() for t in ts)
    assert bad == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_sees_no_polling_helper_and_sums_right(two_threads, monkeypatch):
    import os

    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.2)
    v = np.arange(3_000_000, dtype=np.float32) % 7
    want = np.asarray(rt.sum(rt.asarray(v))).tobytes()
    assert _wait_for_polling_helper()
    pid = os.fork()
    if pid == 0:  # the child: the parent's helper does not exist here
        ok = kernels.spinners() == 0 and np.asarray(rt.sum(rt.asarray(v))).tobytes() == want
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("share", [False, True])
def test_binary_kernels_claiming_chunks_give_the_one_call_bits(two_threads, monkeypatch, share):
    import ml_dtypes

    monkeypatch.setattr(_parallel, "_machine_busy", lambda: False)
    monkeypatch.setattr(_parallel, "SPIN_S", 0.05)
    rng = np.random.default_rng(5)
    n = 1_000_003
    x = rng.standard_normal(n).astype(np.float32) * 3
    y = rng.standard_normal(n).astype(np.float32)
    bf = [v.astype(ml_dtypes.bfloat16).view(np.uint16) for v in (x, y)]
    hf = [v.astype(np.float16).view(np.uint16) for v in (x, y)]
    if share:
        assert _wait_for_polling_helper()
    for kern, (a, b) in ((kernels.bf16_binary, bf), (kernels.f16_binary, hf)):
        whole = np.empty(n, np.uint16)
        kern(0, a, b, whole, 0, n, 0)  # op 0: add
        for chunk in (1, 4096, 1 << 16, n + 5):
            out = np.empty(n, np.uint16)
            kern(0, a, b, out, 0, n, 0, chunk, np.zeros(1, np.int64), share)
            assert out.tobytes() == whole.tobytes()
    # and the bits are right: float16 add of float16 values, computed by NumPy
    np.testing.assert_array_equal(whole.view(np.float16), hf[0].view(np.float16) + hf[1].view(np.float16))


def test_binary_kernel_rejects_a_bad_chunk():
    a = np.zeros(8, np.uint16)
    with pytest.raises(ValueError, match="f16_binary: chunk 0 is invalid; expected >= 1 with a counter"):
        kernels.f16_binary(0, a, a, np.empty(8, np.uint16), 0, 8, 0, 0, np.zeros(1, np.int64))
