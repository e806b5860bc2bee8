"""Matrix products and the BLAS's threads: runetensor runs the BLAS single-threaded around its own products,
splits large ones in shape-only blocks, and leaves the user's BLAS thread setting as it was."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _blas

threadpoolctl = pytest.importorskip("threadpoolctl")
ROOT = Path(__file__).resolve().parents[1]
needs_openblas = pytest.mark.skipif(_blas.controller() is None, reason="NumPy's BLAS is not an OpenBLAS")


@pytest.fixture(autouse=True)
def _own_splitting_always(request, monkeypatch):
    """The tests of runetensor's own splitting see it whatever the machine's load (while the cores are free,
    products otherwise run on the BLAS's own threads: tested on its own below)."""
    if "blas_own_threads" not in request.keywords:
        monkeypatch.setattr(_blas, "_own_threads", lambda: False)


def _blas_threads() -> int:
    """NumPy's BLAS thread count as threadpoolctl reads it (its library, when several BLAS are loaded)."""
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    ctl = _blas.controller()
    mine = [i for i in info if ctl is not None and os.path.realpath(i["filepath"]) == os.path.realpath(ctl.path)]
    return (mine or info)[0]["num_threads"]


def _rt_matmul(a, b):
    return rt.to_numpy(rt.matmul(rt.asarray(a), rt.asarray(b)))


def _single_thread_blocks(a, b):
    """The documented plan computed independently: NumPy's product of each shape-only block, one BLAS thread."""
    with threadpoolctl.threadpool_limits(1, "blas"):
        if a.ndim == 2 and b.ndim == 2:
            axis, blocks = _blas.gemm_plan(a.shape[0], b.shape[1], a.shape[1])
            if axis == 0:
                return np.concatenate([np.matmul(a[lo:hi], b) for lo, hi in blocks])
            return np.concatenate([np.matmul(a, b[:, lo:hi]) for lo, hi in blocks], axis=1)
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        ab, bb = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
        mnk = a.shape[-2] * b.shape[-1] * a.shape[-1] * int(np.prod(batch[1:], dtype=np.int64))
        return np.concatenate([np.matmul(ab[lo:hi], bb[lo:hi]) for lo, hi in _blas.batch_blocks(batch[0], mnk)])


SHAPES = [((128, 784), (784, 256)), ((200, 300), (300, 1000)),
          ((8, 8), (8, 8)), ((3,), (3, 5)), ((64, 64), (64,)), ((700, 300), (300, 257)),
          ((1000, 512), (512, 512)), ((300, 77), (77, 129)), ((40, 64, 256), (40, 256, 256)),
          ((8, 300, 300), (300, 300)), ((2, 20, 128, 64), (64, 96)), ((5000,), (5000, 400))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("sa, sb", SHAPES)
def test_products_match_numpy_within_the_gemm_rounding_bound(sa, sb, dtype):
    rng = np.random.default_rng(len(sa) * 1000 + sa[-1])
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal(sa).astype(dtype)
    got, want = _rt_matmul(a, b), np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    # two GEMMs over the same k terms in any order differ by at most 2 * k * eps * (|a| @ |b|)
    k = a.shape[-1]
    bound = 2 * k * np.finfo(dtype).eps * np.matmul(np.abs(a), np.abs(b))
    assert np.all(np.abs(got - want) <= bound)


@needs_openblas
@pytest.mark.parametrize("sa, sb", [s for s in SHAPES if len(s[0]) >= 2 and len(s[1]) >= 2])
def test_products_are_the_bits_of_their_shape_only_blocks(sa, sb):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    assert np.array_equal(_rt_matmul(a, b), _single_thread_blocks(a, b))


@needs_openblas
def test_products_are_the_same_bits_with_any_thread_count():
    rng = np.random.default_rng(3)
    cases = [(rng.standard_normal((1000, 300)), rng.standard_normal((300, 257))),
             (rng.standard_normal((16, 128, 200)).astype(np.float32),
              rng.standard_normal((200, 300)).astype(np.float32))]
    old = rt.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            rt.set_num_threads(n)
            for blas_n in (1, 2):
                with threadpoolctl.threadpool_limits(blas_n, "blas"):
                    results.append([_rt_matmul(a, b) for a, b in cases])
    finally:
        rt.set_num_threads(old)
    for r in results[1:]:
        for x, y in zip(r, results[0]):
            assert np.array_equal(x, y)


@needs_openblas
@pytest.mark.parametrize("user", [1, 2, 3])
def test_the_users_blas_thread_setting_is_unchanged_after_runetensor_products(user):
    a = np.ones((600, 400), np.float32)
    before = _blas_threads()
    with threadpoolctl.threadpool_limits(user, "blas"):
        _rt_matmul(a, a.T)  # split on the pool
        _rt_matmul(a[:100], a[:100].T)  # one single-threaded BLAS call
        _rt_matmul(np.ones(20000), np.ones(20000))  # a dot
        assert _blas_threads() == user
        assert np.matmul(a, a.T)[0, 0] == 400  # the user's own call still works
    _rt_matmul(a, a.T)
    assert _blas_threads() == before


def _record_blas_threads(monkeypatch):
    """The BLAS thread count at each of runetensor's parallel_for calls, appended to the list returned."""
    seen = []
    real = _blas.parallel_for

    def spy(fn, n, busy_ok=False):
        seen.append(_blas.controller().get())
        return real(fn, n, busy_ok)

    monkeypatch.setattr(_blas, "parallel_for", spy)
    return seen


@needs_openblas
def test_the_blas_runs_single_threaded_inside_runetensor_products(monkeypatch):
    seen = _record_blas_threads(monkeypatch)
    a = np.ones((1024, 512), np.float32)
    with threadpoolctl.threadpool_limits(2, "blas"):
        _rt_matmul(a, a.T)
        assert _blas_threads() == 2
    assert seen == [1]


@needs_openblas
def test_concurrent_products_restore_the_setting_after_the_last_one():
    a = np.random.default_rng(0).standard_normal((700, 300)).astype(np.float32)
    want = _rt_matmul(a, a.T)
    errors = []

    def work():
        try:
            for _ in range(5):
                assert np.array_equal(_rt_matmul(a, a.T), want)
        except BaseException as e:  # reported below
            errors.append(e)

    with threadpoolctl.threadpool_limits(3, "blas"):
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert _blas_threads() == 3
    assert errors == []
    assert _blas._depth[0] == 0


@needs_openblas
def test_jitted_products_use_the_same_blocks_and_restore_the_setting():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((600, 300)).astype(np.float32), rng.standard_normal((300, 200)).astype(np.float32)
    f = rt.jit(lambda x, y: rt.matmul(x, y) * 2.0)
    with threadpoolctl.threadpool_limits(2, "blas"):
        for _ in range(2):  # traced, then the compiled program's matmul step
            got = rt.to_numpy(f(rt.asarray(a), rt.asarray(b)))
        assert _blas_threads() == 2
    assert np.array_equal(got, _single_thread_blocks(a, b) * np.float32(2.0))


def test_blas_threaded_follows_openblas_thresholds():
    assert not _blas.blas_threaded(64, 64, 64)  # 64**3: OpenBLAS's single-threaded GEMM
    assert _blas.blas_threaded(65, 64, 64)
    assert not _blas.blas_threaded(1, 90, 100)  # a GEMV under 9216 multiply-adds
    assert _blas.blas_threaded(96, 1, 96)
    assert _blas.blas_threaded(1, 1, 20000)  # a long dot


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (255, 4096, 4096), (256, 4096, 4096), (1000, 512, 512),
                                     (100000, 64, 64), (5000, 3, 3), (4096, 1024, 1024), (300, 300, 300)])
def test_row_blocks_cover_the_rows_and_depend_on_the_shape_only(m, n, k):
    blocks = _blas.row_blocks(m, n, k)
    assert blocks[0][0] == 0 and blocks[-1][1] == m
    assert all(hi == lo2 for (_, hi), (lo2, _) in zip(blocks, blocks[1:]))
    assert len(blocks) <= _blas.MAX_BLOCKS
    if len(blocks) > 1:
        assert m * n * k >= _blas.SPLIT_MNK
        for lo, hi in blocks:
            assert (hi - lo) >= _blas.ROW_MIN and (hi - lo) * n * k >= _blas.BLOCK_MNK
            assert (hi - lo) >= n * k // _blas.REPACK_ROWS
        for lo, _ in blocks:
            assert lo % _blas.ROW_ALIGN == 0
    else:
        assert m * n * k < _blas.SPLIT_MNK or m < 2 * max(_blas.ROW_MIN, n * k // _blas.REPACK_ROWS)
    old = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        assert _blas.row_blocks(m, n, k) == blocks
    finally:
        rt.set_num_threads(old)


@pytest.mark.parametrize("b, mnk", [(1, 1 << 30), (2, 1 << 22), (1000, 64 ** 3), (7, 10), (640, 1 << 23)])
def test_batch_blocks_cover_the_batch(b, mnk):
    blocks = _blas.batch_blocks(b, mnk)
    assert blocks[0][0] == 0 and blocks[-1][1] == b
    assert all(hi == lo2 for (_, hi), (lo2, _) in zip(blocks, blocks[1:]))
    assert len(blocks) <= _blas.MAX_BLOCKS
    if len(blocks) > 1:
        assert all((hi - lo) * mnk >= _blas.BLOCK_MNK for lo, hi in blocks)


def test_small_products_do_not_touch_the_blas_thread_count(monkeypatch):
    calls = []
    monkeypatch.setattr(_blas, "_enter", lambda ctl: calls.append("enter"))
    a = np.ones((32, 32))
    _rt_matmul(a, a)
    _rt_matmul(np.ones(50), np.ones(50))
    assert calls == []


def test_integer_and_low_precision_products_still_match_numpy():
    a = np.arange(600 * 300, dtype=np.int64).reshape(600, 300) % 7
    assert np.array_equal(_rt_matmul(a, a.T), np.matmul(a, a.T))
    x = rt.asarray(np.ones((300, 300), np.float32)).astype(rt.bfloat16)
    assert np.all(rt.to_numpy(rt.matmul(x, x).astype(rt.float32)) == 300)


def test_the_environment_variable_hands_threading_back_to_the_blas():
    code = ("import numpy as np, runetensor as rt\nfrom runetensor._backend import _blas\n"
            "a = np.ones((600, 600))\nrt.matmul(rt.asarray(a), rt.asarray(a))\nprint(_blas.controller())")
    env = dict(os.environ, RUNETENSOR_BLAS_THREADING="numpy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"


def test_an_output_overlapping_an_operand_gets_numpys_result():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((600, 600)).astype(np.float32)
    b = rng.standard_normal((600, 600)).astype(np.float32)
    with threadpoolctl.threadpool_limits(1, "blas"):
        want = np.matmul(a, b)
    _blas.matmul_into(a, b, a)  # writes over its own left operand
    assert np.array_equal(a, want)


def test_long_blocks_are_threaded_even_on_a_busy_machine(monkeypatch):
    calls = []
    real = _blas.parallel_for
    monkeypatch.setattr(_blas, "parallel_for", lambda fn, n, busy_ok=False: (calls.append(busy_ok), real(fn, n))[1])
    a = np.ones((2048, 1024), np.float32)
    _rt_matmul(a, a.T)  # blocks of 128 rows x 2048 x 1024: 2**28 multiply-adds
    _rt_matmul(a[:1024, :256], a[:256, :256])  # blocks of 2**24 / 2**20 ... a short product
    assert calls[0] is True
    assert calls[1] is (_blas.gemm_plan(1024, 256, 256)[1][0][1] * 256 * 256 >= _blas.BUSY_OK_MNK)


@needs_openblas
@pytest.mark.blas_own_threads
@pytest.mark.parametrize("busy", [False, True])
def test_products_use_the_blas_threads_only_while_the_cores_are_free(monkeypatch, busy):
    seen = _record_blas_threads(monkeypatch)
    monkeypatch.setattr(_blas, "_machine_busy", lambda: busy)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 784)).astype(np.float32)
    b = rng.standard_normal((784, 256)).astype(np.float32)
    old = rt.get_num_threads()
    try:
        rt.set_num_threads(2)
        with threadpoolctl.threadpool_limits(2, "blas"):
            got = _rt_matmul(a, b)
            want = np.matmul(a, b) if not busy else _single_thread_blocks(a, b)
            assert _blas_threads() == 2
        assert np.array_equal(got, want)
        assert seen == ([] if not busy else [1])
        rt.set_num_threads(1)   # single-threaded runetensor: always the shape-only path
        with threadpoolctl.threadpool_limits(2, "blas"):
            assert np.array_equal(_rt_matmul(a, b), _single_thread_blocks(a, b))
    finally:
        rt.set_num_threads(old)
