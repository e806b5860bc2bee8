"""Helpers shared by the rt.jit tests (test_jit_semantics.py, test_jit_dispatch.py, test_jit_fusion.py)."""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend.fusion import _fuse


def N(t):
    return rt.to_numpy(t)


def R(shape, seed=0, dtype=rt.float64):
    return rt.randn(dtype, shape, seed=seed)


def same(a, b):
    a, b = N(a), N(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def close(a, b, rtol):
    a, b = N(a), N(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=rtol, atol=0)


def check(f, *args, calls=2, rtol=None, **kw):
    """jit(f) equals f on the first (tracing) call and on replays (cache hits); with ``rtol``: within
    it (programs with fused float32 transcendentals, docs/jit.md's ulp bound)."""
    jf = rt.jit(f, **kw)
    want = f(*args)
    for _ in range(calls):
        got = jf(*args)
        for w, g in zip(rt.tree_leaves(want), rt.tree_leaves(got)):
            if not isinstance(w, rt.Tensor):
                assert w == g
            elif rtol is None:
                same(w, g)
            else:
                close(w, g, rtol)
    st = rt.jit_stats(jf)
    assert st["traces"] == 1 and st["cache_hits"] == calls - 1
    return jf


needs_cc = pytest.mark.skipif(not _fuse.compiler_available(), reason="no C compiler")


def _kernels(jf):
    prog = next(iter(jf._jit.cache.values()))
    return [s for s in prog.steps if s.name == "fused"]
