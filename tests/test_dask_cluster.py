"""The Dask backend on a real, memory-limited ``distributed.LocalCluster``.

* out-of-core: ``mean``, ``std`` and ``argmax`` of a float32 tensor from ``rt.rand``, larger than
  the workers may hold, equal the same statistics computed in pieces on NumPy;
* a worker process killed mid-computation is survived (Dask reruns its tasks elsewhere).

Sizes: ``RUNETENSOR_DASK_OOC_BYTES`` (default 256 MB of data), ``RUNETENSOR_DASK_OOC_WORKER_BYTES``
(default 192 MB per worker, of which a worker process itself takes ~100 MB) and
``RUNETENSOR_DASK_OOC_CHUNK_BYTES`` (default 8 MiB).  A larger-than-memory run (docs/dask.md)::

    RUNETENSOR_DASK_OOC_BYTES=4e9 RUNETENSOR_DASK_OOC_WORKER_BYTES=1e9 RUNETENSOR_DASK_OOC_CHUNK_BYTES=32e6 \\
        python -m pytest -q tests/test_dask_cluster.py -k out_of_core

Every wait has a timeout and the cluster is closed in the fixture's ``finally``: nothing can hang.
"""
import math
import os
import signal
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

import runetensor as rt  # noqa: E402
from runetensor._backend import _fast  # noqa: E402
from runetensor._backend.numpy_backend import philox4x32  # noqa: E402

OOC_BYTES = int(float(os.environ.get("RUNETENSOR_DASK_OOC_BYTES", 256e6)))
WORKER_BYTES = int(float(os.environ.get("RUNETENSOR_DASK_OOC_WORKER_BYTES", 192e6)))
CHUNK_BYTES = int(float(os.environ.get("RUNETENSOR_DASK_OOC_CHUNK_BYTES", 8 * 2 ** 20)))
TIMEOUT = max(120, OOC_BYTES // 10_000_000)  # seconds per computation (~10 MB/s at the very least)


@pytest.fixture(scope="module")
def client():
    try:
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           memory_limit=WORKER_BYTES, host="127.0.0.1", dashboard_address=None,
                                           silence_logs=50, death_timeout=30)
    except Exception as e:  # noqa: BLE001  (no sockets / processes here: not a runetensor failure)
        pytest.skip(f"cannot start a LocalCluster: {e}")
    try:
        c = distributed.Client(cluster, timeout=30)
        try:
            with dask.config.set(scheduler=None):  # the Client (default as created); an object in
                yield c                              # dask's config would break the nannies' restarts
        finally:
            c.close(timeout=15)
    finally:
        cluster.close(timeout=15)


def _on(client, t):
    """Compute the tensor ``t`` on the cluster, with a hard timeout."""
    return np.asarray(client.compute(t._data.arr).result(timeout=TIMEOUT))


def _uniform_piece(seed: int, lo: int, hi: int) -> np.ndarray:
    """Values ``lo .. hi-1`` of the NumPy backend's ``rand(float32, seed=seed)``: its compiled Philox
    kernel at a counter offset, or the backend's pure NumPy Philox4x32 (contract: ``(w >> 8) * 2**-24``)."""
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    if _fast.ENABLED and _fast.KERNELS:
        out = np.empty(hi - lo, np.float32)
        _fast._kernels.philox_uniform(k0, k1, out, lo, hi, False)
        return out
    b0, b1 = lo // 4, (hi + 3) // 4
    idx = np.arange(b0, b1, dtype=np.uint64)
    ctr = np.zeros((b1 - b0, 4), np.uint32)
    ctr[:, 0] = (idx & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    ctr[:, 1] = (idx >> np.uint64(32)).astype(np.uint32)
    w = philox4x32(ctr, (k0, k1)).reshape(-1)[lo - 4 * b0: hi - 4 * b0]
    return (w >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def test_out_of_core_mean_std_argmax(client):
    n = OOC_BYTES // 4
    per = max(1, CHUNK_BYTES // 4)
    seed = 20260417
    assert OOC_BYTES > WORKER_BYTES  # the tensor does not fit in a worker
    limits = client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit)
    assert sorted(limits.values()) == [WORKER_BYTES, WORKER_BYTES]
    with rt.use_backend("dask", chunks=per):
        x = rt.rand(rt.float32, [n], seed=seed)
    assert len(x._data.arr.chunks[0]) == math.ceil(n / per)
    t0 = time.perf_counter()
    mean = float(_on(client, rt.mean(x)))
    std = float(_on(client, rt.std(x)))
    arg = int(_on(client, rt.argmax(x)))
    took = time.perf_counter() - t0

    # the same statistics in pieces on NumPy (float64 accumulation; first maximum wins)
    s = s2 = 0.0
    best, best_i = -1.0, -1
    step = 1 << 22
    for lo in range(0, n, step):
        v = _uniform_piece(seed, lo, min(n, lo + step))
        s += float(v.sum(dtype=np.float64))
        s2 += float(np.square(v, dtype=np.float64).sum())
        i = int(np.argmax(v))
        if v[i] > best:
            best, best_i = float(v[i]), lo + i
    ref_mean = s / n
    ref_std = math.sqrt(max(0.0, s2 / n - ref_mean * ref_mean))
    assert abs(mean - ref_mean) <= 1e-5 * abs(ref_mean), (mean, ref_mean)
    assert abs(std - ref_std) <= 1e-4 * ref_std, (std, ref_std)
    assert arg == best_i, (arg, best_i)
    assert len(client.scheduler_info()["workers"]) == 2
    print(f"out-of-core: {OOC_BYTES / 1e6:.0f} MB, workers {WORKER_BYTES / 1e6:.0f} MB: {took:.1f} s")


def test_worker_killed_mid_computation_is_survived(client):
    """One worker process is SIGKILLed while a reduction runs; the result is still exact (same tree)."""
    with rt.use_backend("dask", chunks=1 << 18):
        x = rt.rand(rt.float32, [60 << 18], seed=5)
    y = rt.sin(x) * x + 1.0
    a = y._data.arr
    # each chunk also waits 50 ms, so that the kill lands while most of the work is still queued
    slow = a.map_blocks(lambda b: (time.sleep(0.05), b)[1], dtype=a.dtype)
    total = rt.sum(rt.asarray(slow, backend="dask"))
    with dask.config.set(scheduler="synchronous"):
        want = float(rt.sum(rt.asarray(a, backend="dask")))
    victim = sorted(client.run(os.getpid).values())[0]
    fut = client.compute(total._data.arr)
    deadline = time.monotonic() + 30
    while not client.processing() or not any(client.processing().values()):
        assert time.monotonic() < deadline, "the computation never started"
        time.sleep(0.02)
    time.sleep(0.3)
    assert not fut.done(), "finished before the kill: make the computation longer"
    os.kill(victim, signal.SIGKILL)
    got = float(fut.result(timeout=120))
    assert got == want, (got, want)
    # the nanny restarts the killed worker process (bounded wait)
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()
