"""rt.jit's program-level passes: dead writes dropped, constants folded (runetensor/_jit/_program.py).

Each pass is checked two ways: the compiled calls equal eager (the oracle), and the program's steps
show the pass happened (so that a pass that silently stops working is noticed)."""
import numpy as np

import runetensor as rt


def N(t):
    return rt.to_numpy(t)


def _steps(jf):
    return [s.name for s in next(iter(jf._jit.cache.values())).steps]


def _check(f, *args, calls=3):
    jf = rt.jit(f)
    for _ in range(calls):
        want, got = f(*args), jf(*args)
        for w, g in zip(rt.tree_leaves(want), rt.tree_leaves(got)):
            np.testing.assert_array_equal(N(g), N(w))
    return jf


def test_dead_write_into_a_made_buffer_is_dropped():
    def f(a):
        scratch = a * 2.0
        scratch[0] = 5.0        # nothing reads scratch again: the write and scratch go
        return a + 1.0
    jf = _check(f, rt.asarray(np.arange(6.0)))
    assert "assign" not in _steps(jf)


def test_writes_that_are_seen_are_kept():
    def f(a, b):
        y = a * 2.0
        v = y[1:]               # a view made before the write, read after it
        y[1] = 7.0
        b[0] = -1.0             # a write into an argument: the caller sees it
        z = a * 3.0
        z[0] = 1.0              # a write into a returned buffer
        return v + 1.0, z
    a = np.arange(6.0)
    for _ in range(3):
        b1, b2 = rt.asarray(np.ones(3)), rt.asarray(np.ones(3))
        want = f(rt.asarray(a), b1)
        jf = rt.jit(f)
        jf(rt.asarray(a), rt.asarray(np.ones(3)))
        got = jf(rt.asarray(a), b2)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(N(g), N(w))
        np.testing.assert_array_equal(N(b2), N(b1))
    assert _steps(jf).count("assign") == 3


def test_constants_folded_but_returned_or_written_ones_stay_fresh():
    def f(a):
        c = rt.full(rt.float64, [3], 2.5)             # read only: computed once
        k = rt.reshape(rt.arange(rt.float64, 0, 6, 1), [2, 3])
        r = rt.zeros(rt.float64, [3])                 # returned: a fresh buffer per call
        w = rt.ones(rt.float64, [3])
        w[1] = 4.0                                    # written: a fresh buffer per call
        return rt.sort(a * c)[0] + k[1], r, w
    jf = _check(f, rt.asarray(np.array([3.0, 1.0, 2.0])))
    st = _steps(jf)
    assert "arange" not in st and "reshape" not in st  # folded (the fills become kernel literals)
    r1 = jf(rt.asarray(np.array([3.0, 1.0, 2.0])))
    r1[1][0] = 9.0                                    # the caller owns what it got
    r1[2][0] = 9.0
    r2 = jf(rt.asarray(np.array([3.0, 1.0, 2.0])))
    np.testing.assert_array_equal(N(r2[1]), np.zeros(3))
    np.testing.assert_array_equal(N(r2[2]), [1.0, 4.0, 1.0])


def test_compiling_is_asked_of_the_backend_through_the_contract(tmp_path, monkeypatch):
    """The NumPy backend offers fusion (a capability and a Fuser); a backend that does not list the
    capability, or answers None, gets the same program replayed step by step."""
    from runetensor._backend.contract import CAPABILITIES, Fuser
    from runetensor._backend.fusion import _fuse
    from runetensor._backend.numpy_backend import NumpyBackend
    from runetensor._tensor import wrap
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path / "cache"))
    nb = rt.get_backend("numpy")
    assert "fusion" in nb.capabilities and isinstance(nb.fusion(), Fuser)

    class NotListed(NumpyBackend):  # a fuser, but the capability is not listed
        name = "numpy-fusion-not-listed"
        capabilities = CAPABILITIES - {"fusion"}

    class NoFuser(NumpyBackend):   # the capability listed, but no fuser
        name = "numpy-no-fuser"

        def fusion(self):
            return None

    xs = np.linspace(-2.0, 2.0, 64).astype(np.float32)
    want = np.sin(xs) * np.float32(2.0) + xs

    def f(a):
        return rt.sin(a) * 2.0 + a
    for be, fused in ((nb, _fuse.compiler_available()), (NotListed(), False), (NoFuser(), False)):
        jf = rt.jit(f)
        for _ in range(3):
            r = jf(wrap(xs.copy(), rt.float32, be))
            assert r.backend is be
            np.testing.assert_allclose(N(r), want, rtol=1e-6)
        assert ("fused" in _steps(jf)) == fused, (be.name, _steps(jf))
        assert (rt.jit_stats(jf)["compiles"] == 1) == fused
