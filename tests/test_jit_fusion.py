"""rt.jit's compiled elementwise path: fused kernels bit-identical to eager (or within the ulp bound of
the transcendentals), grouped fusion, casts/ints/NaN, reductions and scans at a chain's end, random
chains, rematerialisation, float16/bfloat16 kernels, fallbacks (docs/jit.md)."""
from __future__ import annotations


import numpy as np
import pytest

import runetensor as rt
from runetensor._backend.fusion import _fuse

from jit_helpers import N, R, _kernels, check, needs_cc, same


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_compiled_bit_identical(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b, c, d):
        return rt.maximum(a * b + c / d, -rt.abs(a)) - rt.sqrt(rt.abs(d)) + rt.minimum(-c, b)
    args = [rt.randn(dtype, s, seed=i) for i, s in enumerate([[64, 33], [64, 33], [33], [64, 1]])]
    args[3][0, 0] = float("nan")
    jf = rt.jit(f)
    jf(*args)
    same(jf(*args), f(*args))
    st = rt.jit_stats(jf)
    assert st["compiles"] == 1
    assert any(p.suffix == ".so" for p in tmp_path.rglob("*"))


@needs_cc
@pytest.mark.parametrize("shape", [[300001], [700, 301], [3, 5, 20000]])
def test_compiled_large_chunks_bit_identical(shape, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    f = lambda a, b, c: a * b + c / a - rt.sqrt(rt.abs(b))  # noqa: E731
    args = [rt.randn(rt.float32, shape, seed=i) for i in range(2)] + [rt.randn(rt.float32, shape[-1:], seed=9)]
    jf = rt.jit(f)
    jf(*args)
    same(jf(*args), f(*args))
    assert rt.jit_stats(jf)["compiles"] == 1


# ---------------------------------------------------------------------------
# part 2: grouped fusion, transcendentals' ulp bound, casts/ints/NaN, reductions, random chains
# ---------------------------------------------------------------------------
#: max ulp distance from eager (NumPy's float32 loops) over the float32 range (docs/jit.md): exp's
#: is eager's error (<= 2 ulp from the correctly rounded value) plus libmvec expf's (<= 3)
ULP_BOUND = {"sin": 2, "cos": 2, "tanh": 2, "exp": 4, "expm1": 3, "log1p": 2, "log": 3}
#: where each function's results are neither 0, 1, inf nor NaN: sampled densely (random bit patterns
#: put few values there)
DENSE = {"exp": (-104.0, 89.0), "expm1": (-20.0, 89.0), "log": (-87.0, 88.0), "sin": (-1e4, 1e4),
         "cos": (-1e4, 1e4), "tanh": (-10.0, 10.0), "log1p": (-1.0, 1e4)}


@needs_cc
@pytest.mark.parametrize("op", sorted(ULP_BOUND))
def test_transcendental_ulp_bound_over_float32_range(op, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    bits = np.random.default_rng(0).integers(0, 2**32, 10**6, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).copy()  # every exponent: subnormals, inf, nan included
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4028235e38]
    d = np.random.default_rng(1).uniform(*DENSE[op], 10**6)
    x = np.concatenate([x, (np.exp(d) if op == "log" else d).astype(np.float32)])
    _check_ulp(op, x, ULP_BOUND[op])


#: float64: glibc's vector math (libmvec, <= 4 ulp per its manual) vs NumPy's loops (docs/jit.md)
ULP_BOUND64 = 4


@needs_cc
@pytest.mark.parametrize("op", sorted(ULP_BOUND))
def test_transcendental_ulp_bound_float64(op, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**64 - 1, 2 * 10**5, dtype=np.uint64).view(np.float64).copy()  # every exponent
    y = rng.standard_normal(2 * 10**5) * np.exp(rng.uniform(-40, 40, 2 * 10**5))         # ordinary values
    x = np.concatenate([x, y])
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7976931348623157e308]
    _check_ulp(op, x, ULP_BOUND64)


def _check_ulp(op, x, bound):
    """One kernel computes rt.<op>; NaN positions as eager's, others within ``bound`` ulp of eager."""
    g = getattr(rt, op)
    jf = rt.jit(lambda t: g(t))
    X = rt.asarray(x)
    with np.errstate(all="ignore"):
        want = N(g(X))
        jf(X)
        got = N(jf(X))
    assert len(_kernels(jf)) == 1
    assert np.array_equal(np.isnan(want), np.isnan(got))
    m = ~np.isnan(want)
    it = np.int32 if x.dtype == np.float32 else np.int64
    sign = np.iinfo(it).max

    def ordered(a):  # the float's position on the number line, as an int64
        i = a.view(it).astype(np.int64)
        return np.where(i < 0, -(i & sign), i)
    w, gg = ordered(want[m]), ordered(got[m])
    # (far-apart values would overflow the int64 difference: compare in float first)
    assert not (np.abs(w.astype(np.float64) - gg.astype(np.float64)) > 1e6).any()
    assert np.abs(w - gg).max() <= bound


@needs_cc
def test_grouped_fusion_non_consecutive_and_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b, m):
        u = a * b                 # used by the group and by the matmul: written out
        v = m @ m                 # a library call between group members
        w = rt.where(u > 0, u, -a) + rt.sqrt(rt.abs(b))
        return w * 2, v, u @ m
    args = (R([8, 8], 1, rt.float32), R([8, 8], 2, rt.float32), R([8, 8], 3, rt.float32))
    jf = check(f, *args)
    assert 1 <= len(_kernels(jf)) <= 2


@needs_cc
def test_casts_ints_and_nan_follow_the_contract(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    f32 = rt.asarray(np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, -2147483648.0, 1e30, 0.5],
                              np.float32))
    f64 = rt.astype(f32, rt.float64)
    i32 = rt.asarray(np.array([2**31 - 1, -2**31, 5, -7, 0, 1, 2, 3, 4, 9], np.int32))
    u16 = rt.asarray(np.array([65535, 0, 1, 300, 2, 3, 4, 5, 6, 7], np.uint16))
    fns = [
        lambda x: rt.astype(x * 1.0, rt.int32) + 0,             # float -> int: NaN/inf -> 0, out of range
        lambda x: rt.astype(x * 1.0, rt.int64) - 0,
        lambda x: rt.astype(x + 1, rt.int8) * 3,                # narrow: replayed, still equal
        lambda x: rt.astype(rt.astype(x, rt.float64) * 2, rt.float32) - x,
        lambda x: rt.maximum(x, x * 0 + 1) - rt.minimum(x, -x),  # NaN propagates
    ]
    for fn in fns:
        for x in (f32, f64):
            with np.errstate(all="ignore"):
                check(fn, x)
    ints = [
        lambda i: i * i + i - (-i),                             # wraps, no signed overflow UB
        lambda i: rt.maximum(i, i * 3) + rt.astype(i > 2, rt.int32),
        lambda i: (i // (i - i)) + i % (i * 0) + (i << 3) + (i >> 40),  # division by zero, shifts: replayed
    ]
    for fn in ints[:2]:
        check(fn, i32)
        check(fn, u16)
    with np.errstate(all="ignore"):
        try:
            want = ints[2](i32)
        except Exception as e:  # noqa: BLE001 - whatever eager does, jit does too
            with pytest.raises(type(e)):
                rt.jit(ints[2])(i32)
        else:
            same(rt.jit(ints[2])(i32), want)


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_reductions_at_chain_end(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    x = rt.randn(dtype, [37, 301], seed=4)
    y = rt.randn(dtype, [301], seed=5)
    fm = lambda a, b: (rt.max(a * b + 1, [1]), rt.min(rt.abs(a) - b, None), rt.max(a * b, [0, 1], keepdims=True))  # noqa: E731
    jf = check(fm, x, y)  # max/min: exact
    assert len(_kernels(jf)) == 3
    fs = lambda a, b: (rt.sum(a * b - a, [1]), rt.sum(rt.sqrt(rt.abs(a)) * b))  # noqa: E731
    jf = rt.jit(fs)
    jf(x, y)
    for w, g in zip(fs(x, y), jf(x, y)):
        w, g = N(w), N(g)
        bound = 64 * np.finfo(N(x).dtype).eps * np.abs(N(x)).sum()
        assert w.shape == g.shape and np.abs(w - g).max() <= bound
    z = N(x).copy()
    z[3, 7] = np.nan
    nz = rt.asarray(z)
    got = rt.jit(lambda a: rt.max(a * 2, [1]))(nz)
    assert np.isnan(N(got)[3]) and not np.isnan(N(got)[2])


@needs_cc
def test_large_sum_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    x = rt.randn(rt.float32, [1 << 20], seed=6)
    f = lambda a: rt.sum(a * a + 1)  # noqa: E731
    jf = rt.jit(f)
    jf(x)
    want = float(np.sum(N(x).astype(np.float64) ** 2 + 1))
    assert abs(float(jf(x)) - want) <= 2 * np.spacing(np.float32(want))


hyp = pytest.importorskip("hypothesis")
st = hyp.strategies
_UNARIES = [rt.sin, rt.cos, rt.exp, rt.tanh, rt.abs, lambda t: -t, lambda t: rt.sqrt(rt.abs(t))]
_BINARIES = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (rt.abs(b) + 1),
             rt.maximum, rt.minimum, lambda a, b: rt.where(a > b, a, b * 2)]
_INT_UNARIES = [lambda t: -t, lambda t: t * 3, lambda t: rt.astype(t > 1, t.dtype), lambda t: t - 7]
_INT_BINARIES = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, rt.maximum, rt.minimum,
                 lambda a, b: rt.where(a < b, a, b)]
_DTYPES = ["float32", "float64", "int32", "int8", "uint16", "float16", "bfloat16"]


def _arg(shape, seed, dtype, view):
    dt = getattr(rt, dtype)
    if dtype.startswith(("int", "uint")):
        t = rt.astype(R(shape, seed) * 50, dt)
    else:
        t = R(shape, seed, rt.float32 if dtype in ("float16", "bfloat16") else dt)
        t = rt.astype(t, dt)
    if view and len(shape) == 2:  # a strided view with the same shape: a non-contiguous argument
        big = rt.concatenate([t, t], axis=1)
        t = big[:, ::2]
    return t


@needs_cc
@hyp.settings(max_examples=40, deadline=None, derandomize=True)
@hyp.given(ops=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 6), st.integers(0, 3), st.integers(0, 3)),
                        min_size=1, max_size=8),
           dtype=st.sampled_from(_DTYPES), bshape=st.sampled_from([[5, 7], [7], [5, 1], []]),
           view=st.booleans(), reduce=st.booleans(), seed=st.integers(0, 100))
def test_random_elementwise_chains(ops, dtype, bshape, view, reduce, seed):
    ints = dtype.startswith(("int", "uint"))
    xs = [_arg([5, 7], seed, dtype, view), _arg(bshape, seed + 1, dtype, False), _arg([5, 7], seed + 2, dtype, False)]
    un, bi = (_INT_UNARIES, _INT_BINARIES) if ints else (_UNARIES, _BINARIES)

    def f(a, b, c):
        vals = [a, b, c]
        for kind, k, i, j in ops:
            if kind == 0:
                vals.append(un[k % len(un)](vals[i % len(vals)]))
            else:
                vals.append(bi[k % len(bi)](vals[i % len(vals)], vals[j % len(vals)]))
        last = vals[-1]
        if reduce and not ints:
            last = rt.sum(last * 1, [len(last.shape) - 1]) if last.shape else last
        return last, vals[len(vals) // 2]
    transc = any(kind == 0 and k < 4 for kind, k, _, _ in ops)
    rtol = None
    if dtype == "float32" and (transc or reduce):
        rtol = 1e-4
    elif dtype == "float64" and reduce:
        rtol = 1e-12
    with np.errstate(all="ignore"):
        if rtol is None:
            check(f, *xs)
        else:  # sums: near-cancellation makes a relative bound meaningless; compare to the summands' scale
            jf = rt.jit(f)
            want = f(*xs)
            jf(*xs)
            got = jf(*xs)
            for w, g in zip(want, got):
                w, g = N(w), N(g)
                assert w.shape == g.shape and w.dtype == g.dtype
                assert np.array_equal(np.isnan(w), np.isnan(g))
                ok = ~np.isnan(w)
                scale = np.maximum(np.abs(w[ok]), 1.0) * 8
                assert np.all((w[ok] == g[ok]) | (np.abs(w[ok] - g[ok]) <= rtol * scale))


@needs_cc
def test_rematerialisation_and_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setattr(_fuse, "ROW_CHAINS", False)  # separate kernels (row chains: the next test)
    x = R([16, 40], 7)

    def softmax(t):
        e = rt.exp(t - rt.max(t, [-1], keepdims=True))
        return e / rt.sum(e, [-1], keepdims=True)
    jf = check(softmax, rt.astype(x, rt.float32), rtol=1e-5)
    srcs = [s.params["source"] for s in _kernels(jf)]
    assert len(srcs) == 3 and sum("y0p" in s for s in srcs) == 1  # only the result is stored

    def written(t, inplace_input):
        y = t * 1.0
        u = rt.maximum(y * 2, y - 1) + y
        r = rt.sum(u, [1])
        if inplace_input:
            t[0] = 5.0           # the operand of u's chain changes: u must not be recomputed from it
        else:
            y[0] = 5.0
            y[:, 1] = 3.0        # through a view of y too
        return u * 3 + 1, r
    for inplace in (False, True):
        a, b = x * 1.0, x * 1.0
        want = written(a, inplace)
        jf = rt.jit(written, static_argnums=1)
        jf(x * 1.0, inplace)
        got = jf(b, inplace)
        for w, g in zip(want, got):
            same(w, g)
        same(a, b)


@needs_cc
def test_no_recompute_of_a_result_written_since(tmp_path, monkeypatch):
    """A result stored by one kernel and written into afterwards is read back, never recomputed from
    its operands in a later kernel (the compiled second call gave w = y + 1 without the write)."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b):
        y = a + b
        z = y * 2.0
        y[0] = 100.0
        return z, y + 1.0
    a, b = R([4], 1), R([4], 2)
    jf = rt.jit(f)
    for _ in range(3):
        for w, g in zip(f(a, b), jf(a, b)):
            same(w, g)


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_exact_unary_ops_tests_and_fills_fused(dtype, tmp_path, monkeypatch):
    """recip/square/trunc/ceil/floor/round, isnan/isinf/isfinite/logical_not and scalar
    fills compile into the kernel and give eager's bits on special values (NaN, +-inf, +-0, halves,
    values next to 0.5, huge values)."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    nd = np.float32 if dtype is rt.float32 else np.float64
    bh = np.nextafter(nd(0.5), nd(0))
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, bh, -bh, 1e30, -3e38,
                        2.0 ** 22 + 0.5, 2.0 ** 23 + 1, 2.0 ** 52 + 1, 1e-45, 7.25, -7.75], nd)
    x = rt.asarray(np.concatenate([special, np.random.default_rng(0).standard_normal(44).astype(nd) * 9]))

    def f(t):
        ones = rt.ones_like(t)
        half = rt.full_like(t, 0.5)
        r = rt.where(rt.isnan(t) | rt.isinf(t), half, rt.round(t) * 2 - rt.trunc(t))
        k = rt.floor(t) - rt.ceil(t) + rt.square(t) * rt.recip(t + ones)
        m = rt.logical_not(rt.isfinite(t)) | (t < 0)
        return r, k, rt.where(m, ones, -half)
    jf = rt.jit(f)
    jf(x)
    for w, g in zip(f(x), jf(x)):
        same(w, g)
    srcs = " ".join(s.params["source"] for s in _kernels(jf))
    for frag in ("trunc", "floor", "ceil", "isinf", "isfinite"):
        assert frag in srcs, frag
    # the small fills are folded into constants; a fill too big to fold is a literal in the kernel
    assert "full" not in [s.name for s in next(iter(jf._jit.cache.values())).steps]
    big = rt.jit(lambda t: rt.where(t > 0, rt.full_like(t, 0.5), t))
    xb = rt.asarray(np.linspace(-1, 1, 40000).astype(nd))
    big(xb)
    same(big(xb), rt.where(xb > 0, rt.full_like(xb, 0.5), xb))
    assert "0x1.0000000000000p-1" in _kernels(big)[0].params["source"]


@needs_cc
def test_recycled_step_buffers_never_overwrite_live_results(tmp_path, monkeypatch):
    """Fused kernels and float matmuls reuse their result buffers between calls only once nothing
    refers to the previous result: results the caller keeps (or views of them) stay intact, and the
    products are bit-identical to eager."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b):
        h = rt.maximum(a @ b + 1.0, 0.0)
        return h @ rt.matrix_transpose(b) * 2.0, (h * 3.0)[1:]
    jf = rt.jit(f)
    kept = []
    for i in range(4):
        a = rt.astype(R([6, 5], 10 + i), rt.float32)
        b = rt.astype(R([5, 7], 20 + i), rt.float32)
        want = f(a, b)
        got = jf(a, b)
        for w, g in zip(want, got):
            same(w, g)
        kept.append((want, got))
    for want, got in kept:  # later calls did not write into what the earlier ones returned
        for w, g in zip(want, got):
            same(w, g)
    prog = next(iter(jf._jit.cache.values()))
    assert any(s.params.get("recycled") for s in prog.steps)
    a1, b1 = rt.astype(R([6, 5], 1), rt.float32), rt.astype(R([5, 7], 2), rt.float32)
    first = jf(a1, b1)[0]
    ptr = first.__array_interface__["data"][0] if hasattr(first, "__array_interface__") else None
    del first
    again = jf(a1, b1)[0]  # the dropped result's buffer is used again
    if ptr is not None:
        assert again.__array_interface__["data"][0] == ptr


@needs_cc
def test_kernels_called_through_ctypes_without_the_helper(tmp_path, monkeypatch):
    """Without the optional C helper (_jitcall), kernels run through ctypes with the same results,
    row chains and threaded chunks included."""
    from runetensor._backend import _jitrun
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b, c):
        e = rt.exp(a - rt.max(a, [-1], keepdims=True))
        return e / rt.sum(e, [-1], keepdims=True), rt.sum(a * b + c, [-1]), a * b - c
    args = [R([300, 257], 1), R([300, 257], 2), R([257], 3)]
    args = [rt.astype(x, rt.float32) for x in args]
    want = rt.jit(f)
    want(*args)
    expect = want(*args)
    monkeypatch.setattr(_jitrun, "_xcall", None)
    jf = rt.jit(f)
    jf(*args)
    for w, g in zip(expect, jf(*args)):
        same(w, g)


@needs_cc
def test_row_chains_softmax_layernorm(tmp_path, monkeypatch):
    """Softmax / layer norm run as one kernel looping over rows (max, exp-sum, normalise per row), with
    the same per-row arithmetic as the separate kernels: bit-identical to them, within the bound of eager."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    x = rt.astype(R([300, 257], 11) * 4, rt.float32)
    xs = N(x).copy()
    xs[3, 5], xs[7, :] = np.nan, -np.inf
    xs[9, 100] = np.inf
    xn = rt.asarray(xs)

    def softmax(t):
        e = rt.exp(t - rt.max(t, [-1], keepdims=True))
        return e / rt.sum(e, [-1], keepdims=True)

    def softmax_and_e(t):  # e is an output too: the normalisation must not write over it
        e = rt.exp(t - rt.max(t, [-1], keepdims=True))
        return e / rt.sum(e, [-1], keepdims=True), e

    def layernorm(t):
        mu = rt.mean(t, [-1], keepdims=True)
        xc = t - mu
        return xc / rt.sqrt(rt.mean(xc * xc, [-1], keepdims=True) + 1e-5)
    for f in (softmax, softmax_and_e, layernorm):
        for arg in (x, xn):
            jf = rt.jit(f)
            jf(arg)
            got = jf(arg)
            ks = _kernels(jf)
            assert len(ks) == 1 and ks[0].params.get("rows", 0) >= 3, f.__name__
            monkeypatch.setattr(_fuse, "ROW_CHAINS", False)
            sep = rt.jit(f)
            sep(arg)
            ref = sep(arg)
            assert len(_kernels(sep)) >= 3
            monkeypatch.setattr(_fuse, "ROW_CHAINS", True)
            for g, w in zip(rt.tree_leaves(got), rt.tree_leaves(ref)):
                if f is layernorm:
                    same(g, w)  # correctly rounded arithmetic, the same per-row sum order
                else:  # exp may take libmvec's vector or the scalar expf in either: a few ulp
                    g, w = N(g), N(w)
                    assert np.array_equal(np.isnan(g), np.isnan(w))
                    np.testing.assert_allclose(g[~np.isnan(g)], w[~np.isnan(w)], rtol=1e-6, atol=1e-30)
            # vs eager: the sum order differs (docs/jit.md's bound; layer norm cancels near 0)
            want = f(arg)
            for g, w in zip(rt.tree_leaves(got), rt.tree_leaves(want)):
                g, w = N(g), N(w)
                assert np.array_equal(np.isnan(g), np.isnan(w))
                ok = ~np.isnan(w)
                assert np.allclose(g[ok], w[ok], rtol=1e-5, atol=1e-5)


@needs_cc
def test_reduction_of_an_input_keeps_the_open_group(tmp_path, monkeypatch):
    """A reduction starting its own group (its operand is not a member of the open group of that
    shape) left the open elementwise group unclosed, so it never compiled."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    jf = check(lambda w, g: (w - 0.1 * g, rt.sum(g)), R([8, 9], 1), R([8, 9], 2))
    assert len(_kernels(jf)) == 2
    prog = next(iter(jf._jit.cache.values()))
    assert [s.name for s in prog.steps] == ["fused", "fused"]


# ---------------------------------------------------------------------------
# float16 / bfloat16 kernels: bit-identical to eager (docs/jit.md, "Fusable steps")
# ---------------------------------------------------------------------------
def _half_np(dtype):
    import ml_dtypes
    return np.float16 if dtype is rt.float16 else ml_dtypes.bfloat16


#: bit patterns: +-0, +-inf, NaNs (quiet, with payload, signalling, negative), subnormals (smallest,
#: largest), smallest normal, largest finite, 1 and its neighbours, halves, the half-ulp of 1 (1 + it
#: is a tie), large and small values
_HALF_SPECIAL = {
    rt.bfloat16: [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7FC1, 0x7F81, 0x0001, 0x8001, 0x007F,
                  0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x3F81, 0x3F7F, 0x4000, 0x3F00, 0x3FC0, 0x4020,
                  0xC020, 0x3B80, 0x3C00, 0x7F00, 0x0100, 0x4B00, 0x4B01, 0x3EFF, 0xC0A0],
    rt.float16: [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7E05, 0x7C01, 0x0001, 0x8001, 0x03FF,
                 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3C01, 0x3BFF, 0x4000, 0x3800, 0x3E00, 0x4100,
                 0xC100, 0x1000, 0x1400, 0x7800, 0x0200, 0x6400, 0x6401, 0x37FF, 0xC500],
}


def _half_operands(dtype, n):
    """Two operands of ``n`` 16-bit values: every pair of special values, every bit pattern (as the
    first operand) against random ones, then random pairs."""
    nd = _half_np(dtype)
    s = np.array(_HALF_SPECIAL[dtype], np.uint16)
    rng = np.random.default_rng(7)
    a = np.concatenate([np.repeat(s, len(s)), np.arange(65536, dtype=np.uint16)])
    b = np.concatenate([np.tile(s, len(s)), rng.integers(0, 65536, 65536, dtype=np.uint16)])
    k = max(0, n - len(a))
    a = np.concatenate([a, rng.integers(0, 65536, k, dtype=np.uint16)])[:n]
    b = np.concatenate([b, rng.integers(0, 65536, k, dtype=np.uint16)])[:n]
    return rt.asarray(a.view(nd)), rt.asarray(b.view(nd))


def _bits_of(t):
    x = N(t)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.itemsize])


def _same_bits(want, got, name):
    for i, (w, g) in enumerate(zip(rt.tree_leaves(want), rt.tree_leaves(got))):
        assert N(w).dtype == N(g).dtype and N(w).shape == N(g).shape, (name, i)
        bw, bg = _bits_of(w), _bits_of(g)
        bad = np.flatnonzero(bw != bg)
        assert bad.size == 0, (name, i, bad.size, [(hex(int(bw[j])), hex(int(bg[j]))) for j in bad[:5]])


def _half_programs(dtype):
    f32 = rt.float32

    def binop(op):
        def f(a, b):
            t = op(a, b)
            return t, op(t, b), op(b, t)
        return f
    return {
        "add": binop(lambda a, b: a + b), "sub": binop(lambda a, b: a - b), "mul": binop(lambda a, b: a * b),
        "div": binop(lambda a, b: a / b), "maximum": binop(rt.maximum), "minimum": binop(rt.minimum),
        "compare": lambda a, b: (a < b, a <= b, a == b, a != b, a > b, (a + b) >= b),
        "unary": lambda a, b: (rt.sqrt(a), -a, rt.abs(a), rt.recip(a), rt.square(a), rt.trunc(a), rt.ceil(a),
                               rt.floor(a), rt.round(a), rt.sqrt(rt.abs(-a)) * b),
        "tests": lambda a, b: (rt.isnan(a), rt.isinf(a), rt.isfinite(a * b), rt.logical_not(a), -b),
        "where": lambda a, b: (rt.where(a < b, a, b), rt.where(a > b, -a, 0.1), rt.where(rt.isnan(b), 2.5, b * a)),
        "scalars": lambda a, b: (a * 0.1 + 3, rt.maximum(a, 0.5) - 1e-3, 2 - a, b / 3.0, rt.minimum(b, -0.0) * 7),
        "fill": lambda a, b: (a + rt.full_like(a, 0.1), b * rt.full_like(b, -1.7)),
        "chain": lambda a, b: (a * b + a, (a - b) * (a + b) / b, -rt.abs(a * b) - b),
        # mixed with float32 / float64 / bool: exact casts fuse
        "casts": lambda a, b: (rt.astype(rt.astype(a, f32) * 3.0 + rt.astype(b, f32), dtype),
                               rt.astype(a * b, rt.float64) + 1.0, rt.astype(a + b, rt.bool),
                               rt.astype(rt.astype(a, f32) / 7.0, dtype) + b),
    }


@needs_cc
@pytest.mark.parametrize("dtype", [rt.bfloat16, rt.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("n", [1500, 66500, (1 << 17) + 5], ids=["small", "mid", "large"])
def test_half_kernels_bit_identical_to_eager(dtype, n, tmp_path, monkeypatch):
    """float16/bfloat16 chains compile (the 16-bit patterns widened to float, each op's result rounded
    back as eager rounds it, NaN picked by eager's rule) and give eager's bits on the 2nd and 3rd calls
    over special values (NaN payloads and signs, +-inf, +-0, subnormals, max finite, ties, overflow
    after an op), every bit pattern and random pairs; eager's small (NumPy loops) and large (the
    low-precision fast paths) sizes."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setattr(_fuse, "FUSE_FLOAT16", True)  # (auto: off on F16C CPUs, see the last test)
    a, b = _half_operands(dtype, n)
    for name, f in _half_programs(dtype).items():
        jf = rt.jit(f)
        with np.errstate(all="ignore"):
            want = f(a, b)
            jf(a, b)
            for _ in range(2):
                _same_bits(want, jf(a, b), name)
        assert _kernels(jf), name
        prog = next(iter(jf._jit.cache.values()))
        # (where's Python numbers are 0-d fills made by eager, read by the kernel)
        assert all(s.name in ("fused", "full") for s in prog.steps), (name, [s.name for s in prog.steps])


@needs_cc
@pytest.mark.parametrize("dtype", [rt.bfloat16, rt.float16], ids=["bfloat16", "float16"])
def test_half_kernel_source_and_what_replays(dtype, tmp_path, monkeypatch):
    """The kernel reads and writes the 16-bit patterns (uint16_t) through the emitted conversions;
    transcendentals, float64 -> 16-bit casts and 16-bit -> int casts stay replayed."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setattr(_fuse, "FUSE_FLOAT16", True)  # (auto: off on F16C CPUs, see the last test)
    a, b = _half_operands(dtype, 3000)
    jf = rt.jit(lambda a, b: a * b + a)
    with np.errstate(all="ignore"):
        want = a * b + a
        jf(a, b)
        _same_bits(want, jf(a, b), "fma")
    (k,) = _kernels(jf)
    src = k.params["source"]
    conv = "rt_h2f" if dtype is rt.float16 else "rt_bf2f"
    rnd = "rt_rh2(" if dtype is rt.float16 else "rt_rbf2("
    for frag in ("const uint16_t* restrict x0p", "uint16_t* restrict y0p", conv + "(x0p[", rnd):
        assert frag in src, frag
    assert k.params["n_ops"] == 2
    for f in (lambda a, b: rt.exp(a) * b, lambda a, b: rt.astype(rt.astype(a, rt.float64) * 3.0, dtype),
              lambda a, b: rt.astype(a * b, rt.int32)):
        jf = rt.jit(f)
        with np.errstate(all="ignore"):
            want = f(a, b)
            jf(a, b)
            _same_bits(want, jf(a, b), "replayed")
        prog = next(iter(jf._jit.cache.values()))
        assert any(s.name != "fused" for s in prog.steps)


@needs_cc
@pytest.mark.parametrize("dtype", [rt.bfloat16, rt.float16], ids=["bfloat16", "float16"])
def test_half_mixed_with_float32_and_int_casts(dtype, tmp_path, monkeypatch):
    """Mixed programs: float32 inputs cast to the 16-bit format and back, small integers and bool
    cast in (exact in float, rounded once), all in one kernel, bit-identical to eager."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setattr(_fuse, "FUSE_FLOAT16", True)  # (auto: off on F16C CPUs, see the last test)
    rng = np.random.default_rng(3)
    n = 70000
    x32 = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32).copy()
    x32[:12] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, 65519.0, 65520.0, 1e-8, 6e-8, 1 + 2**-8]
    i16 = rt.asarray(rng.integers(-32768, 32768, n).astype(np.int16))
    u16 = rt.asarray(rng.integers(0, 65536, n).astype(np.uint16))
    i8 = rt.asarray(rng.integers(-128, 128, n).astype(np.int8))
    u8 = rt.asarray(rng.integers(0, 256, n).astype(np.uint8))
    bl = rt.asarray(rng.integers(0, 2, n).astype(bool))
    X = rt.asarray(x32)

    def f(x, i16, u16, i8, u8, bl):
        h = rt.astype(x, dtype)
        y = h * rt.astype(i16, dtype) + rt.astype(u16, dtype)
        z = rt.astype(i8, dtype) - rt.astype(u8, dtype) * rt.astype(bl, dtype)
        # (float32 ops with one NaN operand at most: plain float32 kernels may pick the other NaN
        # of a NaN-NaN pair than eager)
        return (y, rt.astype(rt.astype(y, rt.float32) * 0.75, dtype), rt.astype(z + h, rt.float32),
                rt.astype(h, rt.float64) * 2.0)
    jf = rt.jit(f)
    with np.errstate(all="ignore"):
        want = f(X, i16, u16, i8, u8, bl)
        jf(X, i16, u16, i8, u8, bl)
        for _ in range(2):
            _same_bits(want, jf(X, i16, u16, i8, u8, bl), "mixed")
    prog = next(iter(jf._jit.cache.values()))
    assert [s.name for s in prog.steps] == ["fused"]


@needs_cc
def test_float16_fusion_auto_off_with_f16c(tmp_path, monkeypatch):
    """By default float16 steps fuse only on CPUs without F16C (there eager's F16C loops are faster
    than the kernels' bit-manipulation conversions); bfloat16 always fuses.  Values equal either way."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    monkeypatch.setattr(_fuse, "FUSE_FLOAT16", None)
    with open("/proc/cpuinfo") as fh:
        f16c = " f16c" in fh.read(200000)
    for dtype, fuses in ((rt.float16, not f16c), (rt.bfloat16, True)):
        a, b = _half_operands(dtype, 3000)
        jf = rt.jit(lambda a, b: a * b + a)
        with np.errstate(all="ignore"):
            want = a * b + a
            jf(a, b)
            _same_bits(want, jf(a, b), "auto")
        assert bool(_kernels(jf)) == fuses, dtype


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_square_power_fused_bit_identical(dtype, tmp_path, monkeypatch):
    """``x ** 2`` (int or float exponent) compiles as ``x * x``: NumPy's power gives the correctly
    rounded square too, over every exponent (random bit patterns: NaN, inf, subnormals); other
    exponents replay."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    nd, it = (np.float32, np.uint32) if dtype is rt.float32 else (np.float64, np.uint64)
    bits = np.random.default_rng(4).integers(0, np.iinfo(it).max, 50000, dtype=it)
    x = rt.asarray(bits.view(nd))

    def f(t):
        return t ** 2 + 1.0, rt.pow(t, 2.0) * 3.0, t ** 3 - 1.0
    jf = rt.jit(f)
    with np.errstate(all="ignore"):
        want = f(x)
        jf(x)
        for w, g in zip(want, jf(x)):
            np.testing.assert_array_equal(N(g).view(it), N(w).view(it))
    names = [s.name for s in next(iter(jf._jit.cache.values())).steps]
    assert names.count("pow") == 1 and "fused" in names


@needs_cc
def test_fallback_of_compiled_steps_equals_eager(tmp_path, monkeypatch):
    """When a kernel's operands come in a layout its plan cannot read, the step replays its original
    steps (expands the kernel read through their operands included); row chains too."""
    from runetensor._backend import _jitrun
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))

    def f(a, b, c):
        e = rt.exp(a - rt.max(a, [-1], keepdims=True))
        s = e / rt.sum(e, [-1], keepdims=True)
        return s * rt.expand_dims(c, 0) + rt.expand_dims(b, -1), rt.sum(a * 2.0 - rt.expand_dims(c, 0), [-1])
    args = [rt.astype(x, rt.float32) for x in (R([6, 5], 1), R([6], 2), R([5], 3))]
    jf = rt.jit(f)
    jf(*args)
    want = jf(*args)  # compiled
    prog = next(iter(jf._jit.cache.values()))
    assert "expand" not in [s.name for s in prog.steps]  # kernels read the expands' operands
    monkeypatch.setattr(_jitrun, "_as2d", lambda *a: None)  # every plan fails: replay
    jf2 = rt.jit(f)
    jf2(*args)
    for w, g, e in zip(want, jf2(*args), f(*args)):
        np.testing.assert_array_equal(N(g), N(e))  # replayed: eager's own steps
        np.testing.assert_allclose(N(w), N(e), rtol=1e-5, atol=1e-6)  # compiled: float32 exp bound


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_arg_reductions_at_chain_end(dtype, tmp_path, monkeypatch):
    """argmax/argmin over the last axis at the end of a chain compile (one pass per row) and give
    eager's index: first of equal extremes, first NaN when there is one, ±inf, ±0 ties; a long 1-d
    row is not split over threads."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    nd = np.float32 if dtype is rt.float32 else np.float64
    a = np.random.default_rng(1).standard_normal((300, 257)).astype(nd)
    a[3, 5] = a[3, 9] = np.nan
    a[4, :] = 1.0
    a[5, 7], a[5, 8] = -0.0, 0.0
    a[6, :] = np.inf
    a[7, 2] = -np.inf
    a[8, :] = np.nan
    long = np.random.default_rng(2).standard_normal(200003).astype(nd)
    long[150000] = 9.0
    A, L = rt.asarray(a), rt.asarray(long)

    def f(t, u):
        return (rt.argmax(t * 2.0 + 1.0, axis=1), rt.argmin(-t, axis=-1, keepdims=True),
                rt.argmax(u * 0.5 - 1.0, axis=0), rt.argmin(u + 0.0, axis=0))
    jf = rt.jit(f)
    jf(A, L)
    for _ in range(2):
        for w, g in zip(f(A, L), jf(A, L)):
            same(w, g)
    srcs = [s.params["source"] for s in _kernels(jf)]
    assert sum("int64_t* restrict red" in s for s in srcs) == 4


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_scans_at_chain_end_bit_identical(dtype, tmp_path, monkeypatch):
    """cumsum/cumprod/cummax/cummin over the last axis at a chain's end compile into one sequential
    pass per row, as NumPy's accumulate: bit-identical (NaN, ±inf, -0.0 rows, a 200003-long 1-d row,
    which is never split over threads)."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    nd = np.float32 if dtype is rt.float32 else np.float64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 257)).astype(nd)
    a[3, 5] = np.nan
    a[4, :] = -0.0
    a[5, 7], a[6, 3] = np.inf, -np.inf
    A, L = rt.asarray(a), rt.asarray(rng.standard_normal(200003).astype(nd))

    def f(t, u):
        return (rt.cumsum(t * 2.0, axis=1), rt.cumprod(t * 0.5 + 1.0, axis=-1), rt.cummax(t - 1.0, axis=1),
                rt.cummin(-t, axis=1), rt.cumsum(u * 3.0, axis=0))
    jf = rt.jit(f)
    jf(A, L)
    for _ in range(2):
        for w, g in zip(f(A, L), jf(A, L)):
            np.testing.assert_array_equal(N(g).view(np.uint8), N(w).view(np.uint8))
    assert len(_kernels(jf)) == 5


@needs_cc
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
def test_leading_axis_reductions_at_chain_end(dtype, tmp_path, monkeypatch):
    """sum/max/min over leading axes at a chain's end compile: one running value per kept column
    (sum in double, rounded once: within eager's own error + 1 ulp; max/min exact, NaN propagating),
    each chunk of rows its own partials, combined in chunk order (a 70000-row sum runs in chunks)."""
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))
    nd = np.float32 if dtype is rt.float32 else np.float64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 257)).astype(nd)
    a[3, 5] = np.nan
    a[:, 7] = -np.inf
    a[10, 9] = np.inf
    b = rng.standard_normal((70000, 3)).astype(nd)
    A, B = rt.asarray(a), rt.asarray(b)

    def f(t, u):
        return (rt.sum(t * 2.0, [0]), rt.max(t - 1.0, [0], keepdims=True), rt.min(-t, [0]),
                rt.sum(u * u, [0]), rt.max(rt.reshape(t, [10, 30, 257]) * 1.0, [0, 1]))
    jf = rt.jit(f)
    with np.errstate(all="ignore"):
        jf(A, B)
        want, got = f(A, B), jf(A, B)
    eps = np.finfo(nd).eps
    for k, (w, g) in enumerate(zip(want, got)):
        w, g = N(w), N(g)
        assert w.shape == g.shape and w.dtype == g.dtype
        if k in (0, 3):  # sums
            src = (np.abs(a * 2.0) if k == 0 else b * b).sum(0)
            fin = np.isfinite(w)
            assert np.array_equal(w[~fin], g[~fin], equal_nan=True)
            assert (np.abs(g[fin] - w[fin]) <= 64 * eps * src[fin]).all()
        else:
            np.testing.assert_array_equal(g, w)
    assert len(_kernels(jf)) == 5


@needs_cc
def test_avx512_compile_failure_falls_back_to_avx2(tmp_path, monkeypatch):
    """Where compiling for AVX-512 fails (a compiler or libmvec without it), kernels are compiled for
    AVX2 from then on: results as eager's, no warning."""
    import shutil
    import warnings
    cc = shutil.which("cc")
    fake = tmp_path / "cc-no-avx512"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *-mavx512f*) exit 1;; esac\nexec {cc} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_fuse, "_CC_STATE", {"avx2": _fuse._avx2(), "avx512": _fuse._avx2()})
    f = lambda a, b: a * b + rt.sin(a)  # noqa: E731
    a, b = rt.astype(R([300], 1), rt.float32), rt.astype(R([300], 2), rt.float32)
    jf = rt.jit(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jf(a, b)
        got = jf(a, b)
    np.testing.assert_allclose(N(got), N(f(a, b)), rtol=1e-6, atol=1e-7)
    assert len(_kernels(jf)) == 1 and _fuse._CC_STATE["avx512"] is False
