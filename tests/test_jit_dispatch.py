"""rt.jit's dispatch: cache hits and retraces, static arguments, pytrees, the program and disk caches,
compiling without a compiler or from two processes, two threads calling one function, donate_argnums
(docs/jit.md)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend.fusion import _fuse

from jit_helpers import N, R, close, needs_cc, same


# ---------------------------------------------------------------------------
# cache hits, retraces, the log message, static arguments, pytrees
# ---------------------------------------------------------------------------
def test_retrace_on_shape_dtype_and_log(caplog):
    def scale(x, y):
        return x * y
    f = rt.jit(scale)
    with caplog.at_level(logging.INFO, logger="runetensor.jit"):
        f(R([3]), R([3]))
        f(R([3], 1), R([3], 2))
        f(R([4]), R([4]))
        f(R([4]), R([4], dtype=rt.float32))
    st = rt.jit_stats(f)
    assert st["traces"] == 3 and st["cache_hits"] == 1 and st["cache_size"] == 3
    msgs = [r.getMessage() for r in caplog.records if r.name == "runetensor.jit"]
    assert any("argument 0 (`x`): shape (3,) -> (4,)" in m for m in msgs)
    assert any("argument 1 (`y`): dtype float64 -> float32" in m for m in msgs)


def test_static_argnums_and_argnames(caplog):
    def f(x, n, mode="a"):
        return x * n if mode == "a" else x - n
    jf = rt.jit(f, static_argnums=1, static_argnames="mode")
    x = R([3])
    same(jf(x, 2), x * 2)
    same(jf(x, 2), x * 2)
    with caplog.at_level(logging.INFO, logger="runetensor.jit"):
        same(jf(x, 3), x * 3)
        same(jf(x, 3, mode="b"), x - 3)
    st = rt.jit_stats(jf)
    assert st["traces"] == 3 and st["cache_hits"] == 1
    msgs = " ".join(r.getMessage() for r in caplog.records)
    assert "static argument 1 (`n`): 2 -> 3" in msgs and "keyword argument `mode` was added" in msgs
    with pytest.raises(TypeError, match="hashable"):
        jf(x, [1, 2])


def test_pytrees_in_and_out():
    @rt.jit
    def f(params, batch):
        h = rt.tanh(batch["x"] @ params[0] + params[1])
        return {"out": h, "stats": (rt.mean(h), [rt.max(h)])}
    params = (R([4, 2], 1), R([2], 2))
    batch = {"x": R([5, 4], 3)}
    for _ in range(2):
        r = f(params, batch)
        h = rt.tanh(batch["x"] @ params[0] + params[1])
        close(r["out"], h, 1e-14)  # fused float64 tanh: ULP_BOUND64
        close(r["stats"][0], rt.mean(h), 1e-13)
        close(r["stats"][1][0], rt.max(h), 1e-14)
    assert rt.jit_stats(f)["cache_hits"] == 1


def test_decorator_with_options_and_bad_arguments():
    @rt.jit(static_argnums=(1,))
    def f(x, k):
        return x[:k]
    same(f(R([5]), 2), R([5])[:2])
    with pytest.raises(TypeError):
        rt.jit(3)
    with pytest.raises(TypeError):
        rt.jit(lambda x: x, static_argnums=-1)
    with pytest.raises(TypeError):
        rt.jit_stats(lambda x: x)


@needs_cc
def test_compiled_cache_reused_and_disable(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    _fuse.clear_memory_cache()
    f = lambda a, b: a * b + a  # noqa: E731
    x = R([100])
    rt.jit(f)(x, x)
    n = len(list(tmp_path.rglob("*.so")))
    assert n >= 1
    _fuse.clear_memory_cache()
    rt.jit(f)(x, x)
    assert len(list(tmp_path.rglob("*.so"))) == n  # loaded from disk, not compiled again
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", "0")
    jf = rt.jit(f)
    same(jf(x, x), f(x, x))
    assert rt.jit_stats(jf)["compiles"] == 0


def test_no_compiler_warns_once_and_replays(monkeypatch, tmp_path):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(_fuse, "_CC_STATE", {})
    monkeypatch.setattr(_fuse, "_WARNED", [])
    with pytest.warns(RuntimeWarning, match="not compiling"):
        jf = rt.jit(lambda a: a * 2 + a)
        x = R([50])
        same(jf(x), x * 2 + x)
    same(jf(x), x * 2 + x)
    assert rt.jit_stats(jf)["compiles"] == 0


@needs_cc
def test_two_processes_compile_at_once(tmp_path):
    code = ("import runetensor as rt\n"
            "f = rt.jit(lambda a, b: a * b - b / a)\n"
            "x = rt.arange(rt.float32, 1, 1001, 1)\n"
            "r = f(x, x); r = f(x, x)\n"
            "assert rt.jit_stats(f)['compiles'] == 1\n"
            "print(float(rt.sum(r)))\n")
    env = dict(os.environ, RUNETENSOR_JIT_CACHE=str(tmp_path))
    ps = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in ps]
    assert all(p.returncode == 0 for p in ps), outs
    assert outs[0][0] == outs[1][0]
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]


def test_dispatch_of_a_cache_hit_is_fast():
    import time
    x = R([8], 0, rt.float32)
    f = rt.jit(lambda t: t + 1)
    f(x)
    best = 1.0
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            f(x)
        best = min(best, (time.perf_counter() - t0) / 200)
    assert best < 100e-6  # ~8 us here (docs/jit.md); loose for loaded CI machines


def test_program_cache_is_bounded(monkeypatch):
    import runetensor._jit as J
    monkeypatch.setattr(J, "MAX_PROGRAMS", 3)
    f = rt.jit(lambda t: t * 2)
    xs = [rt.zeros(rt.float32, [n]) for n in range(1, 6)]
    for x in xs:
        f(x)
    st = rt.jit_stats(f)
    assert st["cache_size"] == 3 and st["evictions"] == 2
    f(xs[4])                       # most recent: still cached
    assert rt.jit_stats(f)["traces"] == 5
    same(f(xs[0]), xs[0] * 2)      # evicted: traced again, still right
    assert rt.jit_stats(f)["traces"] == 6 and rt.jit_stats(f)["cache_size"] == 3


@needs_cc
def test_disk_cache_is_bounded(tmp_path, monkeypatch):
    import time
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE_MAX_MB", "0.000001")  # keeps only the newest library
    _fuse.clear_memory_cache()
    x = R([64], 3, rt.float32)
    for c in (2.0, 3.0):
        g = rt.jit(lambda t, c=c: rt.sin(t) * c + 1)
        g(x)
        assert rt.jit_stats(g)["compiles"] == 1
        time.sleep(0.01)
    libs = [p for p in os.listdir(tmp_path) if p.endswith(".so")]
    assert len(libs) == 1
    _fuse.clear_memory_cache()


# ---------------------------------------------------------------------------- donate_argnums


def _shares(a: rt.Tensor, b: rt.Tensor) -> bool:
    return np.shares_memory(a._data, b._data)


@pytest.mark.parametrize("fused", [False, True])
def test_donate_reuses_buffer(monkeypatch, fused):
    if not fused:
        monkeypatch.setattr(_fuse, "ENABLED", False)  # replayed steps: the result goes into x's buffer
    f = rt.jit(lambda w, g: w - 0.1 * g, donate_argnums=0)
    plain = rt.jit(lambda w, g: w - 0.1 * g)
    g = rt.asarray(np.linspace(-1, 1, 7))
    for i in range(4):
        want = N(plain(rt.asarray(np.arange(7.0) + i), g))
        x = rt.asarray(np.arange(7.0) + i)
        r = f(x, g)
        np.testing.assert_array_equal(N(r), want)
        if i:  # the first call traces (fresh buffers); cache hits reuse x (a replayed step or the kernel)
            assert _shares(r, x)
            assert r._data.__array_interface__["data"][0] == x._data.__array_interface__["data"][0]
        assert not _shares(r, g)
    np.testing.assert_array_equal(N(g), np.linspace(-1, 1, 7))  # not donated: untouched


@needs_cc
def test_donate_into_fused_kernels_only_when_safe(tmp_path, monkeypatch):
    """A compiled step writes into the donated buffer only when it reads that argument (if at all) at
    the element it writes; a view of it read by the same kernel (flip, transpose, broadcast), or an
    output of another shape, keeps the result in its own buffer.  Values always equal the plain jit's."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    cases = {
        "update": (lambda w, g: (w - 0.1 * g, rt.sum(g)), True),
        "two_outputs": (lambda w, g: (w * 3.0 - g, w + g), True),
        "flipped_view": (lambda w, g: (w * 2.0 + rt.flip(w, 0), g * 2.0), False),
        "transposed_view": (lambda w, g: (w * 2.0 - rt.transpose(w), g + 1.0), False),
        "row_broadcast": (lambda w, g: (g * 2.0 + w[0], g - 1.0), False),
    }
    for name, (fn, reuse) in cases.items():
        f = rt.jit(fn, donate_argnums=0)
        plain = rt.jit(fn)
        g = rt.asarray(np.linspace(-1, 1, 36).reshape(6, 6))
        for i in range(4):
            w0 = np.arange(36.0).reshape(6, 6) * (i + 1)
            want = [N(t) for t in plain(rt.asarray(w0.copy()), g)]
            x = rt.asarray(w0.copy())
            got = f(x, g)
            for a, b in zip(want, got):
                np.testing.assert_array_equal(N(b), a, err_msg=name)
            if i:
                assert _shares(got[0], x) == reuse, name
        np.testing.assert_array_equal(N(g), np.linspace(-1, 1, 36).reshape(6, 6))


def test_donate_not_after_a_later_read(monkeypatch):
    monkeypatch.setattr(_fuse, "ENABLED", False)
    f = rt.jit(lambda x: (x * 2, x + 1), donate_argnums=0)
    for _ in range(3):
        x = rt.asarray(np.arange(5.0))
        a, b = f(x)
        np.testing.assert_array_equal(N(a), np.arange(5.0) * 2)
        np.testing.assert_array_equal(N(b), np.arange(5.0) + 1)
        assert not _shares(a, x)  # x is read (x + 1) after x * 2 is made
    # x read after the only candidate output: no reuse, right results
    h = rt.jit(lambda x: (x + 1, rt.sum(x)), donate_argnums=0)
    for _ in range(3):
        x = rt.asarray(np.arange(5.0))
        a, s = h(x)
        np.testing.assert_array_equal(N(a), np.arange(5.0) + 1)
        assert float(s) == 10.0
        assert not _shares(a, x)


def test_donate_ignored_when_unsafe(monkeypatch):
    monkeypatch.setattr(_fuse, "ENABLED", False)
    f = rt.jit(lambda x, y: x * y, donate_argnums=0)
    base = rt.asarray(np.arange(8.0))
    f(rt.asarray(np.ones(4)), rt.asarray(np.ones(4)))  # traced: the calls below are cache hits
    x = rt.asarray(np.ones(4))
    assert _shares(f(x, rt.asarray(np.ones(4))), x)  # the safe case reuses
    for _ in range(3):
        # a view (of a tensor the caller still holds)
        v = base[2:6]
        r = f(v, rt.asarray(np.full(4, 3.0)))
        np.testing.assert_array_equal(N(r), np.arange(2.0, 6.0) * 3)
        assert not _shares(r, base)
        np.testing.assert_array_equal(N(base), np.arange(8.0))
        # the same tensor passed twice
        x = rt.asarray(np.arange(4.0))
        r = f(x, x)
        np.testing.assert_array_equal(N(r), np.arange(4.0) ** 2)
        assert not _shares(r, x)
    # a captured tensor sharing the donated buffer
    c = rt.asarray(np.arange(4.0))
    g = rt.jit(lambda x: x + c, donate_argnums=0)
    for _ in range(3):
        r = g(c)
        np.testing.assert_array_equal(N(r), np.arange(4.0) * 2)
        assert not _shares(r, c)
    # an output that is the donated argument (or a view of it), or of another shape/dtype
    k = rt.jit(lambda x: (x, x * 2), donate_argnums=0)
    for _ in range(3):
        x = rt.asarray(np.arange(4.0))
        a, b = k(x)
        np.testing.assert_array_equal(N(a), np.arange(4.0))
        np.testing.assert_array_equal(N(b), np.arange(4.0) * 2)
    k2 = rt.jit(lambda x: (x.reshape((2, 2)), x * 2), donate_argnums=0)
    for _ in range(3):
        x = rt.asarray(np.arange(4.0))
        a, b = k2(x)
        np.testing.assert_array_equal(N(a), np.arange(4.0).reshape(2, 2))
        np.testing.assert_array_equal(N(b), np.arange(4.0) * 2)
    m = rt.jit(lambda x: rt.astype(x, rt.float32) + 1, donate_argnums=0)
    for _ in range(3):
        x = rt.asarray(np.arange(4.0))
        r = m(x)
        np.testing.assert_array_equal(N(r), np.arange(4.0, dtype=np.float32) + 1)
        assert not _shares(r, x)


@needs_cc
def test_two_threads_calling_one_jitted_function(tmp_path, monkeypatch):
    """Threads calling one compiled program at once (kernels run without the GIL) never share a
    result buffer: each gets its own inputs' results."""
    import threading
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b):
        h = rt.maximum(a @ b + 1.0, 0.0)
        return rt.sum(h * h, [-1]), h * 2.0 - a[:, :1]
    jf = rt.jit(f)
    inputs = [(rt.astype(R([64, 48], 100 + i), rt.float32), rt.astype(R([48, 300], 200 + i), rt.float32))
              for i in range(4)]
    want = [f(*x) for x in inputs]
    jf(*inputs[0])
    errors: list = []

    def worker(k: int) -> None:
        try:
            for it in range(40):
                i = (k + it) % 4
                got = jf(*inputs[i])
                for w, g in zip(want[i], got):
                    np.testing.assert_allclose(N(g), N(w), rtol=1e-5, atol=1e-5)
        except Exception as e:  # reported in the main thread
            errors.append(e)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
