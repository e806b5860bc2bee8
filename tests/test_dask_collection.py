"""Dask tensors as Dask citizens: the collection protocol, chunks, persist/rechunk/map_blocks, the device
seen through the Array API standard (scikit-learn, SciPy), scalars, DLPack, copies, the chunked argmax
and matmul, and the worker's thread count.  The oracle is the NumPy backend (or NumPy itself)."""
import copy
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import runetensor as rt  # noqa: E402
import runetensor.array_api as xp  # noqa: E402


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def dt(a, chunks):
    return rt.asarray(np.asarray(a), backend="dask", chunks=chunks)


def host(t):
    assert isinstance(t, rt.Tensor)
    return rt.to_numpy(t.to_backend("numpy"))


# -- the collection protocol --------------------------------------------------------------------------------------
def test_a_dask_tensor_is_a_dask_collection_and_others_are_not():
    x = dt(np.arange(10.0), 4)
    assert dask.is_dask_collection(x)
    assert not dask.is_dask_collection(rt.asarray([1.0, 2.0]))
    assert rt.asarray([1.0]).chunks is None
    assert x.chunks == ((4, 4, 2),)
    keys = x.__dask_keys__()
    assert len(keys) == 3 and set(keys) <= set(x.__dask_graph__())


def test_dask_compute_returns_numpy_backend_tensors_with_the_values():
    a = np.arange(24.0).reshape(4, 6)
    x = dt(a, (2, 4))
    s, y, n = dask.compute(rt.sum(x), x * 2, {"k": 3})
    assert type(s) is rt.Tensor and s.backend.name == "numpy" and s.dtype is rt.float64
    assert float(s) == a.sum()
    assert y.backend.name == "numpy" and np.array_equal(rt.to_numpy(y), a * 2)
    assert n == {"k": 3}
    b = dt(np.arange(5, dtype=np.int8), 2).astype(rt.bfloat16)
    (hb,) = dask.compute(b)
    assert hb.dtype is rt.bfloat16 and rt.to_numpy(hb).astype(np.float32).tolist() == [0, 1, 2, 3, 4]


def test_persist_keeps_a_dask_tensor_whose_graph_is_its_chunks():
    calls = []

    def count(b):
        calls.append(1)
        return b + 1

    x = dt(np.arange(8.0), 2)
    y = rt.map_blocks(count, x, dtype=rt.float64)
    (p,) = rt.persist(y)
    assert len(calls) == 4  # each block once
    assert p.backend.name == "dask" and p.chunks == y.chunks
    assert len(p.__dask_graph__()) == 4
    assert np.array_equal(host(p * 2), (np.arange(8.0) + 1) * 2)
    assert len(calls) == 4  # nothing recomputed
    (q,) = dask.persist(y)
    assert q.backend.name == "dask" and np.array_equal(host(q), np.arange(8.0) + 1)
    z = (x + 1).persist()
    assert isinstance(z, rt.Tensor) and np.array_equal(host(z), np.arange(8.0) + 1)
    n = rt.asarray([1.0])
    assert rt.persist(n, 3) == (n, 3)


def test_task_names_read_as_runetensor_operations():
    x = dt(np.arange(12.0).reshape(3, 4), 2)
    for t, op in ((rt.sin(x), "sin"), (x + 1.0, "add"), (rt.sum(x), "sum"), (rt.argmax(x, axis=0), "argmax"),
                  (x @ x.T, "matmul"), (rt.rand(rt.float32, [5], seed=1, backend="dask"), "random_uniform")):
        names = {k[0] if isinstance(k, tuple) else k for k in t.__dask_graph__()}
        assert any(n.startswith(f"rt-{op}") for n in names), (op, names)
        assert not any("object" in n or "<" in n for n in names), names


def test_tokens_are_deterministic():
    x = dt(np.arange(6.0), 2)
    assert dask.base.tokenize(x) == dask.base.tokenize(x)
    assert dask.base.tokenize(x) != dask.base.tokenize(x + 1)
    a, b = rt.asarray([1.0, 2.0]), rt.asarray([1.0, 2.0])
    assert dask.base.tokenize(a) == dask.base.tokenize(b) != dask.base.tokenize(rt.asarray([1.0, 3.0]))


def test_visualize_writes_a_graph(tmp_path):
    pytest.importorskip("graphviz")
    x = dt(np.arange(6.0), 2)
    try:
        dask.visualize(rt.sum(x), filename=str(tmp_path / "g.png"))
    except RuntimeError as e:  # the graphviz package without the dot program
        pytest.skip(str(e))
    assert (tmp_path / "g.png").exists()


def test_rechunk_and_to_backend_with_chunks():
    a = np.arange(30.0).reshape(5, 6)
    x = dt(a, (5, 6))
    r = rt.rechunk(x, (2, 3))
    assert r.chunks == ((2, 2, 1), (3, 3)) and x.chunks == ((5,), (6,))
    assert np.array_equal(host(r), a)
    m = x.to_backend("dask", chunks=(5, 1))
    assert m.chunks == ((5,), (1,) * 6) and np.array_equal(host(m), a)
    assert x.rechunk({0: 1}).chunks[0] == (1,) * 5
    with pytest.raises(ValueError, match="rechunk: chunks"):
        rt.rechunk(x, (2, 2, 2))
    with pytest.raises(TypeError, match="rechunk: expected a tensor of the dask backend"):
        rt.rechunk(rt.asarray(a), 2)
    with pytest.raises(TypeError, match="chunks="):
        rt.asarray(a).to_backend("numpy", chunks=2)


def test_map_blocks_runs_runetensor_per_block():
    a = np.arange(12.0).reshape(3, 4)
    x = dt(a, (3, 2))
    y = rt.map_blocks(lambda b: b - rt.max(b), x)
    want = np.concatenate([a[:, :2] - a[:, :2].max(), a[:, 2:] - a[:, 2:].max()], axis=1)
    assert y.dtype is rt.float64 and np.array_equal(host(y), want)
    s = rt.map_blocks(lambda b, k: rt.sum(b, axes=[0], keepdims=True) * k, x, k=2, chunks=((1,), (2, 2)))
    assert np.array_equal(host(s), np.concatenate([a[:, :2].sum(0, keepdims=True), a[:, 2:].sum(0, keepdims=True)],
                                                  axis=1) * 2)
    i = rt.map_blocks(lambda b: b.astype(rt.int32), x, dtype=rt.int32)
    assert i.dtype is rt.int32 and host(i).tolist() == a.astype(np.int32).tolist()
    with pytest.raises(TypeError, match="map_blocks: .* returned a float64 block; expected int8"):
        host(rt.map_blocks(lambda b: b, x, dtype=rt.int8))
    with pytest.raises(TypeError, match="map_blocks: expected at least one tensor"):
        rt.map_blocks(lambda: 1)
    with pytest.raises(TypeError, match="pass dtype="):
        rt.map_blocks(lambda b: b[5, 5], x)


def test_copies_stay_dask_tensors_and_are_independent():
    x = dt(np.arange(6.0), 2)
    for c in (copy.copy(x), copy.deepcopy(x)):
        assert c.backend.name == "dask" and c.chunks == x.chunks
        assert c._data.arr.name == x._data.arr.name  # nothing computed, the graph is shared
    c = copy.deepcopy(x)
    x[0] = 100.0
    assert float(c[0]) == 0.0 and float(x[0]) == 100.0
    n = rt.asarray([1.0, 2.0])
    d = copy.deepcopy(n)
    assert d.backend.name == "numpy" and d.tolist() == [1.0, 2.0]
    n[0] = 5.0
    assert d.tolist() == [1.0, 2.0]
    inner = [1, 2]
    o = rt.asarray(np.array([inner, "a"], dtype=object), dtype=rt.object)
    od = copy.deepcopy(o)
    inner.append(3)
    assert od.tolist()[0] == [1, 2] and copy.copy(o).tolist()[0] == [1, 2, 3]  # deep vs shallow


# -- the standard's failure classes on Dask ------------------------------------------------------------------------
def test_single_elements_with_python_numbers():
    a = np.arange(6.0).reshape(2, 3)
    t = dt(a, 2)
    assert float(t[0, 0] * 2) == 0.0 and float(t[1, 2] * 2) == 10.0
    assert np.array_equal(host(t[0] + 0.1), a[0] + 0.1)
    assert host(t[0] == 0).tolist() == [True, False, False]
    assert bool(t[1, 1] == 4) and float(rt.sin(t[1, 0])) == np.sin(3.0)
    i = dt(np.arange(5, dtype=np.int64), 2)
    assert bool(i[0] == 0) and int(i[3] - 1) == 2 and int(rt.sum(i[2])) == 2


def test_repeat_with_a_tensor_of_counts():
    x = xp.asarray([1, 2, 3], device="dask")
    c = xp.asarray([2, 0, 3], device="dask")
    assert host(xp.repeat(x, c)).tolist() == np.repeat([1, 2, 3], [2, 0, 3]).tolist()
    m = dt(np.arange(6).reshape(3, 2), 2)
    assert host(xp.repeat(m, c, axis=0)).tolist() == np.repeat(np.arange(6).reshape(3, 2), [2, 0, 3], 0).tolist()
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative"):
        xp.repeat(x, xp.asarray([1, -1, 2], device="dask"))


def test_dlpack_computes_and_exports():
    a = np.arange(12.0).reshape(3, 4)
    t = dt(a, 2)
    assert t.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.from_dlpack(t), a)
    assert np.array_equal(np.from_dlpack(t.T), a.T)  # a view: computed compactly
    assert np.array_equal(np.from_dlpack(dt(a, 2).astype(rt.float32)), a.astype(np.float32))
    with rt.use_backend("dask"):
        src = np.arange(3.0)
        r = rt.from_dlpack(src)
        src[0] = 7.0  # a snapshot
    assert r.backend.name == "dask" and host(r).tolist() == [0.0, 1.0, 2.0]
    torch = pytest.importorskip("torch")
    assert torch.equal(torch.from_dlpack(t), torch.from_numpy(a))


# -- the device --------------------------------------------------------------------------------------------------
def test_the_dask_device_is_listed_accepted_and_reached():
    info = xp.__array_namespace_info__()
    assert info.devices() == ["cpu", "dask"]
    x = xp.asarray([1.0, 2.0, 3.0], device="dask")
    assert x.device == "dask" and x.backend.name == "dask"
    assert x.device in info.devices()
    assert set(info.dtypes(device=x.device)) == set(info.dtypes())
    assert info.default_dtypes(device="dask")["real floating"] is xp.float64
    for t in (xp.zeros(3, device="dask"), xp.ones((2, 2), device="dask"), xp.arange(4, device="dask"),
              xp.eye(2, device="dask"), xp.full(2, 1.5, device="dask"), xp.linspace(0, 1, 5, device="dask"),
              xp.empty(2, device="dask"), xp.zeros_like(rt.asarray([1.0]), device="dask")):
        assert t.device == "dask", t
    assert xp.zeros_like(x).device == "dask" and xp.zeros_like(x, device="cpu").device == "cpu"
    h = x.to_device("cpu")
    assert h.backend.name == "numpy" and h.tolist() == [1.0, 2.0, 3.0]
    assert h.to_device("dask").device == "dask"
    assert xp.asarray(x, device="cpu").device == "cpu"
    assert xp.astype(x, xp.float32, device="cpu").device == "cpu"
    assert xp.astype(h, xp.int8, device="dask").device == "dask"
    f = xp.fft.fftfreq(5, device="dask")
    assert f.device == "dask" and host(f).tolist() == np.fft.fftfreq(5).tolist()
    assert xp.fft.rfftfreq(4, device="dask").device == "dask"
    assert xp.from_dlpack(x, device="cpu").device == "cpu" and xp.from_dlpack(h, device="dask").device == "dask"
    with pytest.raises(ValueError, match="from_dlpack: moving a tensor from 'dask' to 'cpu' needs a copy"):
        xp.from_dlpack(x, device="cpu", copy=False)
    with rt.use_backend("dask"):
        assert info.default_device() == "dask"
        assert xp.zeros(2).device == "dask" and xp.zeros(2, device="cpu").device == "cpu"
    with pytest.raises(ValueError, match="zeros: unsupported device 'tpu'"):
        xp.zeros(2, device="tpu")
    with pytest.raises(ValueError, match="to_device: cannot move"):
        x.to_device("tpu")


def test_numpy_operands_join_a_dask_computation():
    d = dt(np.array([1.0, 2.0, 3.0]), 2)
    n = rt.asarray([10.0, 20.0, 30.0])
    for r, want in ((d + n, [11, 22, 33]), (n * d, [10, 40, 90]), (rt.where(n > 15, d, n), [10, 2, 3]),
                    (rt.maximum(n, d), [10, 20, 30]), (rt.concatenate([d, n]), [1, 2, 3, 10, 20, 30])):
        assert r.backend.name == "dask" and host(r).tolist() == want
    assert float(n @ d) == 140.0
    w = dt(np.arange(6.0), 2)
    w[rt.asarray([3, 4])] = rt.asarray([30.0, 40.0])  # NumPy-backend values written into a Dask tensor
    w[0:2] = rt.asarray([7.0, 8.0])
    w += rt.asarray(np.ones(6))
    assert w.backend.name == "dask" and host(w).tolist() == [8.0, 9.0, 3.0, 31.0, 41.0, 6.0]


ECOSYSTEM = textwrap.dedent("""
    import numpy as np, runetensor as rt, sklearn, dask
    from scipy import stats
    sklearn.set_config(array_api_dispatch=True)
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.decomposition import PCA
    from sklearn.metrics import accuracy_score, r2_score
    dask.config.set(scheduler="synchronous")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(np.int64)
    def run(A, b):
        return [LinearDiscriminantAnalysis().fit(A, b).predict(A),
                PCA(n_components=2, svd_solver="full").fit_transform(A),
                r2_score(A[:, 0], A[:, 1]), accuracy_score(b, b[::-1]),
                *stats.describe(A[:, 0])[2:], *stats.ttest_ind(A[:, 0], A[:, 1]), *stats.pearsonr(A[:, 0], A[:, 1])]
    want = run(rt.asarray(X), rt.asarray(y))
    got = run(rt.asarray(X, backend="dask", chunks=(20, 4)), rt.asarray(y, backend="dask", chunks=20))
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(g, rt.Tensor):
            assert g.device == "dask" or i > 1, (i, g.device)  # (SciPy's p-values are computed on the host)
            g = rt.to_numpy(g.to_device("cpu"))
        w = rt.to_numpy(w) if isinstance(w, rt.Tensor) else w
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(w, float), rtol=1e-9, atol=1e-12, err_msg=str(i))
    # and NumPy itself as the oracle of three of them
    r2 = 1 - ((X[:, 0] - X[:, 1]) ** 2).sum() / ((X[:, 0] - X[:, 0].mean()) ** 2).sum()
    np.testing.assert_allclose([float(got[2]), float(got[3]), float(got[10])],
                               [r2, np.mean(y == y[::-1]), np.corrcoef(X[:, 0], X[:, 1])[0, 1]], rtol=1e-9)
    print("OK", len(got))
""")


def test_scikit_learn_and_scipy_through_the_standard_on_dask_tensors():
    pytest.importorskip("sklearn")
    pytest.importorskip("scipy")
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", ECOSYSTEM], env=env, capture_output=True, text=True, timeout=300,
                       cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "OK 12"


# -- chunks describe the result ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda **k: rt.rand(rt.float32, [12, 10], seed=1, **k),
    lambda **k: rt.randn(rt.float64, [12, 10], seed=2, **k),
    lambda **k: rt.randint(rt.int32, [12, 10], 0, seed=3, high=100, **k),
    lambda **k: rt.rand(rt.bfloat16, [12, 10], seed=4, **k),
])
def test_random_creation_takes_nd_chunks_and_keeps_the_numbers(make):
    want = rt.to_numpy(make(backend="numpy"))
    with rt.use_backend("dask", chunks=(5, 4)):
        t = make()
    assert t.chunks == ((5, 5, 2), (4, 4, 2))
    got = host(t)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_eye_with_chunks_gives_those_blocks():
    with rt.use_backend("dask", chunks=(2, 2)):
        e = rt.eye(rt.float32, 4)
        f = xp.eye(3, 5, k=1)
    assert e.chunks == ((2, 2), (2, 2)) and np.array_equal(host(e), np.eye(4, dtype=np.float32))
    assert f.chunks == ((2, 1), (2, 2, 1)) and np.array_equal(host(f), np.eye(3, 5, k=1))


# -- chunked argmax and matmul ----------------------------------------------------------------------------------------
def test_argmax_of_a_flattened_chunked_tensor_is_a_tree_over_its_chunks():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, size=(23, 17)).astype(np.float32)  # many ties: the first in C order must win
    x = dt(a, (5, 4))
    for op in ("argmax", "argmin"):
        f = getattr(rt, op)
        r = f(x)
        names = {k[0] for k in r.__dask_graph__() if isinstance(k, tuple)}
        assert not any("rechunk" in n or "reshape" in n for n in names), names  # x is not reshaped
        assert int(r) == getattr(np, op)(a)
        assert host(f(x, axis=0)).tolist() == getattr(np, op)(a, axis=0).tolist()
        assert host(f(x, axis=1, keepdims=True)).tolist() == getattr(np, op)(a, axis=1, keepdims=True).tolist()
    a[7, 3] = a[2, 16] = np.nan  # the first NaN wins
    x = dt(a, (5, 4))
    assert int(rt.argmax(x)) == np.argmax(a) == 2 * 17 + 16 and int(rt.argmin(x)) == np.argmin(a)
    assert host(rt.argmax(x, axis=0)).tolist() == np.argmax(a, axis=0).tolist()
    big = rng.standard_normal(4000)
    y = dt(big, 100)
    assert int(rt.argmax(y)) == np.argmax(big)  # 40 chunks: several levels of the tree


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "bool", "bfloat16", "complex128"])
def test_matmul_with_a_chunked_contracted_axis(dtype):
    rng = np.random.default_rng(1)
    a = rt.asarray(rng.standard_normal((7, 11)) * 3).astype(getattr(rt, dtype))
    b = rt.asarray(rng.standard_normal((11, 5)) * 3).astype(getattr(rt, dtype))
    want = rt.to_numpy(a @ b)
    r = a.to_backend("dask", chunks=(3, 4)) @ b.to_backend("dask", chunks=(4, 2))
    got = host(r)
    assert got.dtype == want.dtype and got.shape == (7, 5)
    if dtype in ("int8", "int64", "bool"):
        assert np.array_equal(got, want)  # wrap-around sums are exact in any order
    else:
        tol = {"bfloat16": 2e-2, "float32": 1e-5}.get(dtype, 1e-12)
        np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128), rtol=tol, atol=tol * 10)
    v = rt.asarray(rng.standard_normal(11)).to_backend("dask", chunks=4)
    m = rt.asarray(rng.standard_normal((3, 11, 11))).to_backend("dask", chunks=(1, 4, 4))
    np.testing.assert_allclose(host(m @ v), rt.to_numpy(m.to_backend("numpy")) @ rt.to_numpy(v.to_backend("numpy")),
                               rtol=1e-12)


# -- rt.jit over Dask tensors ------------------------------------------------------------------------------------------
def test_jit_over_dask_tensors_says_what_it_does_once():
    from runetensor._backend import dask_backend
    dask_backend._JIT_NOTED.clear()
    f = rt.jit(lambda x: rt.sin(x) * 2.0 + 1.0)
    g = rt.jit(lambda x: x - 1.0)
    x = dt(np.arange(6.0), 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = f(x)
        g(x)
        f(x)
    notes = [m for m in w if "rt.jit over Dask tensors" in str(m.message)]
    assert len(notes) == 1 and notes[0].filename == __file__
    assert r.backend.name == "dask" and np.array_equal(host(r), np.sin(np.arange(6.0)) * 2.0 + 1.0)


# -- a distributed client ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                                       silence_logs=50)
    c = distributed.Client(cluster, timeout=60)
    try:
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def test_client_compute_persist_and_progress(client):
    from distributed import progress, wait
    a = np.arange(40.0).reshape(8, 5)
    with dask.config.set(scheduler=client):
        x = dt(a, (3, 5))
        fut = client.compute(rt.sum(x * 2))
        s = fut.result(timeout=60)
        assert type(s) is rt.Tensor and s.backend.name == "numpy" and float(s) == a.sum() * 2
        p = client.persist(x + 1)
        wait(p, timeout=60)
        progress(p, notebook=False)  # the futures of a persisted tensor
        assert p.backend.name == "dask" and np.array_equal(host(p), a + 1)
        (q,) = rt.persist(rt.sin(x))
        assert np.array_equal(host(q), np.sin(a))


def test_workers_compute_with_their_own_threads(client):
    def inside():
        from runetensor._backend import _parallel
        return _parallel.get_num_threads()

    assert client.submit(inside, pure=False).result(timeout=60) == 1  # the worker was given one thread
    assert rt.get_num_threads() >= 1  # (outside a worker: unchanged)


@pytest.mark.parametrize("transform", ["grad", "vmap", "jit"])
def test_rechunk_inside_a_transformation_says_why_it_cannot(transform):
    x = rt.asarray(np.arange(8.0), backend="dask", chunks=4)
    f = lambda t: rt.sum(rt.rechunk(t, 2) * t)  # noqa: E731
    run = {"grad": lambda: rt.grad(f)(x), "jit": lambda: rt.jit(f)(x),
           "vmap": lambda: rt.vmap(f)(rt.reshape(x, [2, 4]))}[transform]
    with pytest.raises(TypeError, match="rechunk: inside rt.grad, rt.vmap or rt.jit"):
        run()
