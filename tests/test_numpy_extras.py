"""The NumPy functions users reach for (composites of primitives; ``fmax``/``fmin`` the contract's ops):
``logaddexp2 fmax fmin sinc deg2rad
rad2deg nan_to_num angle column_stack rot90 atleast_1d/2d/3d select append`` and ``cross``'s
``axisa/axisb/axisc``.

Values are compared with NumPy over several dtypes and shapes (NaN, inf and -0.0 included); derivatives
with central differences computed here in NumPy (a non-uniform cotangent in reverse mode, a random
tangent in forward mode); ``rt.vmap`` with a loop over examples; ``rt.jit`` with eager execution.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import runetensor as rt

NAN, INF = float("nan"), float("inf")


@pytest.fixture(autouse=True)
def _quiet_numpy():
    """The NumPy oracles see NaN and inf on purpose."""
    with np.errstate(all="ignore"):
        yield


def T(a, dtype=None):
    t = rt.asarray(np.asarray(a))
    return t if dtype is None else rt.astype(t, dtype)


def N(t):
    return np.asarray(rt.to_numpy(t))


def NP(d):
    return np.dtype(N(rt.zeros(d, [0])).dtype)


def same(got, exp, rtol=0.0, atol=0.0):
    """``got`` (a tensor) equals ``exp`` (NumPy) in shape and values, NaN where NaN."""
    g = N(got)
    assert g.shape == np.shape(exp), (g.shape, np.shape(exp))
    if rtol or atol:
        np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else np.float64),
                                   np.asarray(exp), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, exp)


def specials(rng, shape, d=np.float64, p=0.25):
    """Random normal values with NaN, +-inf, +-0.0 and small integers mixed in."""
    v = rng.standard_normal(shape) * 3
    sp = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -2.0])
    v = np.where(rng.random(shape) < p, sp[rng.integers(len(sp), size=shape)], v)
    return v.astype(d)


# ---------------------------------------------------------------------------
# fmax, fmin
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fmax", "fmin"])
@pytest.mark.parametrize("da,db", [("float64", "float64"), ("float32", "float32"), ("float16", "float16"),
                                   ("float32", "float64"), ("float16", "float32")])
@pytest.mark.parametrize("sa,sb", [((7,), (7,)), ((3, 4), (4,)), ((2, 1, 3), (4, 1))])
def test_fmax_fmin_ignore_nan_like_numpy(name, da, db, sa, sb):
    rng = np.random.default_rng(hash((name, da, db, sa)) % 2**32)
    a, b = specials(rng, sa, da, 0.4), specials(rng, sb, db, 0.4)
    r = getattr(rt, name)(T(a), T(b))
    exp = getattr(np, name)(a, b)
    assert NP(r.dtype) == exp.dtype
    same(r, exp)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_integers_scalars_and_nan_only_when_both_nan(name):
    a = np.array([-128, 5, 127, 0], np.int8)
    b = np.array([3, 200, 0, 255], np.uint8)
    r = getattr(rt, name)(T(a), T(b))
    assert r.dtype is rt.int16
    same(r, getattr(np, name)(a, b))
    x = np.array([NAN, 1.0, -INF, NAN], np.float32)
    same(getattr(rt, name)(T(x), 0.5), getattr(np, name)(x, np.float32(0.5)))
    assert getattr(rt, name)(T(x), 0.5).dtype is rt.float32
    both = getattr(rt, name)(T([NAN, NAN, 1.0]), T([NAN, 2.0, NAN]))
    assert np.isnan(N(both)).tolist() == [True, False, False]


def test_fmax_fmin_errors_name_the_function():
    with pytest.raises(ValueError, match="fmax"):
        rt.fmax(rt.zeros(rt.float64, [3]), rt.zeros(rt.float64, [4]))
    with pytest.raises(ValueError, match="fmin"):
        rt.fmin(rt.zeros(rt.float64, [2, 3]), rt.zeros(rt.float64, [2]))


# ---------------------------------------------------------------------------
# deg2rad, rad2deg
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["deg2rad", "rad2deg"])
@pytest.mark.parametrize("d,rtol", [("float64", 1e-15), ("float32", 1e-6), ("float16", 1e-3)])
def test_angle_units_like_numpy(name, d, rtol):
    x = specials(np.random.default_rng(5), (4, 5), d) * 50
    r = getattr(rt, name)(T(x))
    exp = getattr(np, name)(x)
    assert NP(r.dtype) == exp.dtype
    same(r, exp, rtol=rtol)


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg"])
def test_angle_units_of_integers_give_float64(name):
    x = np.array([-360, -90, 0, 45, 180, 720], np.int32)
    r = getattr(rt, name)(T(x))
    assert r.dtype is rt.float64
    same(r, getattr(np, name)(x.astype(np.float64)), rtol=1e-15)
    with pytest.raises(TypeError, match=name + ": expected a real tensor"):
        getattr(rt, name)(T(np.array([1j])))


# ---------------------------------------------------------------------------
# logaddexp2
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d,rtol", [("float64", 1e-13), ("float32", 3e-6)])
def test_logaddexp2_like_numpy(d, rtol):
    rng = np.random.default_rng(7)
    a, b = specials(rng, (5, 4), d) * 300, specials(rng, (4,), d) * 300
    r = rt.logaddexp2(T(a), T(b))
    exp = np.logaddexp2(a, b)
    assert NP(r.dtype) == exp.dtype
    same(r, exp, rtol=rtol, atol=1e-300)


def test_logaddexp2_edges_integers_and_low_precision():
    a = np.array([INF, -INF, INF, -INF, NAN, 1e308, 0.0, 1074.0])
    b = np.array([INF, -INF, -INF, 3.0, 0.0, 1e308, 0.0, 1074.0])
    same(rt.logaddexp2(T(a), T(b)), np.logaddexp2(a, b), rtol=1e-15)
    i = np.array([0, 1, 10, -10], np.int32)
    r = rt.logaddexp2(T(i), 1)
    assert r.dtype is rt.float64
    same(r, np.logaddexp2(i.astype(np.float64), 1.0), rtol=1e-15)
    h = np.array([0.5, -3.0, 20.0], np.float16)
    r = rt.logaddexp2(T(h), T(h))
    assert r.dtype is rt.float16
    same(r, np.logaddexp2(h, h), rtol=1e-3)
    with pytest.raises(TypeError, match="logaddexp2: complex"):
        rt.logaddexp2(T(np.array([1j])), 1.0)
    with pytest.raises(ValueError, match="logaddexp2"):
        rt.logaddexp2(rt.zeros(rt.float64, [2]), rt.zeros(rt.float64, [3]))


# ---------------------------------------------------------------------------
# sinc
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d,rtol,atol", [("float64", 1e-14, 1e-16), ("float32", 2e-6, 1e-7)])
def test_sinc_like_numpy(d, rtol, atol):
    x = np.concatenate([specials(np.random.default_rng(9), (40,), d),
                        np.array([0.0, -0.0, 1e-300, 1e-8, -1e-5, 9.99e-4, 1e-3, 1.001e-3, 0.5, 1.0, -2.0, 2.5,
                                  1e6 + 0.5, NAN, INF, -INF], d)])
    r = rt.sinc(T(x))
    exp = np.sinc(x)
    assert NP(r.dtype) == exp.dtype
    same(r, exp, rtol=rtol, atol=atol)
    assert N(rt.sinc(T(np.array([0.0], d))))[0] == 1.0


def test_sinc_integers_complex_and_low_precision():
    i = np.array([0, 1, -3, 7], np.int64)
    r = rt.sinc(T(i))
    assert r.dtype is rt.float64
    same(r, np.sinc(i.astype(np.float64)), atol=1e-15)
    z = np.array([0.0, 0.5 + 0.25j, -1.5 - 2j, 1e-4j, 3.0 + 0j])
    same(rt.sinc(T(z)), np.sinc(z), rtol=1e-13, atol=1e-15)
    h = np.array([0.0, 0.25, 3.5], np.float16)
    r = rt.sinc(T(h))
    assert r.dtype is rt.float16
    same(r, np.sinc(h.astype(np.float32)).astype(np.float16), rtol=1e-3, atol=1e-3)


def test_sinc_derivatives_at_zero_are_exact_and_finite():
    g = rt.grad(lambda x: rt.sum(rt.sinc(x)))(T([0.0, -0.0, 1e-12, 2e-4, 0.5]))
    exp = [0.0, 0.0, 0.0, None, None]
    gv = N(g)
    assert np.all(np.isfinite(gv))
    assert gv[0] == exp[0] and gv[1] == exp[1] and abs(gv[2]) < 1e-10
    # sinc'(x) = (cos(pi x) - sinc(x)) / x
    for k in (3, 4):
        x = [0.0, -0.0, 1e-12, 2e-4, 0.5][k]
        np.testing.assert_allclose(gv[k], (math.cos(math.pi * x) - np.sinc(x)) / x, rtol=1e-6)
    d2 = rt.grad(rt.grad(lambda x: rt.sinc(x)))(T(0.0))
    np.testing.assert_allclose(float(N(d2)), -math.pi ** 2 / 3, rtol=1e-12)
    _, t = rt.jvp(rt.sinc, (T([0.0, 1e-3]),), (T([1.0, 1.0]),))
    assert N(t)[0] == 0.0 and np.isfinite(N(t)).all()


# ---------------------------------------------------------------------------
# nan_to_num
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ["float64", "float32", "float16"])
@pytest.mark.parametrize("kw", [{}, {"nan": -1.0}, {"nan": 2.5, "posinf": 7.0, "neginf": -9.0}, {"posinf": 1e300}])
def test_nan_to_num_like_numpy(d, kw):
    x = specials(np.random.default_rng(11), (6, 5), d, p=0.5)
    r = rt.nan_to_num(T(x), **kw)
    exp = np.nan_to_num(x, **kw)
    assert NP(r.dtype) == exp.dtype
    same(r, exp)


def test_nan_to_num_complex_integers_and_errors():
    z = np.array([complex(NAN, 1), complex(INF, -INF), complex(2, NAN), complex(-INF, 3), 1 + 2j])
    for d in (np.complex128, np.complex64):
        r = rt.nan_to_num(T(z.astype(d)), nan=0.5)
        assert NP(r.dtype) == np.dtype(d)
        same(r, np.nan_to_num(z.astype(d), nan=0.5))
    i = np.array([-3, 0, 7], np.int32)
    t = T(i)
    r = rt.nan_to_num(t)
    assert r.dtype is rt.int32 and N(r).tolist() == [-3, 0, 7]
    r[0] = 5
    assert N(t)[0] == -3  # a copy, not the input
    with pytest.raises(TypeError, match="nan_to_num: nan must be a real number"):
        rt.nan_to_num(T([1.0]), nan="zero")
    with pytest.raises(TypeError, match="nan_to_num: posinf must be a real number"):
        rt.nan_to_num(T([1.0]), posinf=1j)


# ---------------------------------------------------------------------------
# angle
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d,rtol", [("complex128", 1e-15), ("complex64", 1e-6)])
@pytest.mark.parametrize("deg", [False, True])
def test_angle_like_numpy(d, rtol, deg):
    rng = np.random.default_rng(13)
    re, im = specials(rng, (30,)), specials(rng, (30,))
    z = np.empty(re.shape, d)
    z.real, z.imag = re, im
    z = np.concatenate([z, np.array([0, -0.0, complex(-1, 0.0), complex(-1, -0.0), 1j, -1j], d)])
    r = rt.angle(T(z), deg=deg)
    exp = np.angle(z, deg=deg)
    assert NP(r.dtype) == exp.dtype
    same(r, exp, rtol=rtol, atol=1e-6 if d == "complex64" else 0.0)


def test_angle_of_real_input_is_zero_or_pi_with_zero_derivative():
    x = np.array([2.0, -3.0, 0.0, -0.0, INF, -INF, NAN])
    same(rt.angle(T(x)), np.angle(x))
    same(rt.angle(T(x), deg=True), np.angle(x, deg=True))
    i = np.array([-2, 0, 5], np.int32)
    r = rt.angle(T(i))
    assert r.dtype is rt.float64
    same(r, np.angle(i))
    g = rt.grad(lambda v: rt.sum(rt.angle(v)))(T([2.0, -3.0, 0.0]))
    assert N(g).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="angle: deg must be True or False"):
        rt.angle(T([1.0]), deg="yes")


# ---------------------------------------------------------------------------
# column_stack, append, atleast_*d
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(4,), (4, 2), (4,)], [(), ()], [(2, 3, 2), (2, 1, 2)]])
@pytest.mark.parametrize("dts", [("int32", "int32"), ("int32", "float32"), ("bool", "float64")])
def test_column_stack_like_numpy(shapes, dts):
    rng = np.random.default_rng(17)
    arrs = [(rng.standard_normal(s) * 5).astype(dts[i % 2]) for i, s in enumerate(shapes)]
    r = rt.column_stack([T(a) for a in arrs])
    d = rt.promote_types(getattr(rt, dts[0]), getattr(rt, dts[1]))
    assert r.dtype is d  # rt's promotion (int32 with float32 gives float32, NumPy's float64)
    same(r, np.column_stack([x.astype(NP(d)) for x in arrs]))


def test_column_stack_errors():
    with pytest.raises(ValueError, match="column_stack"):
        rt.column_stack([rt.zeros(rt.float32, [3]), rt.zeros(rt.float32, [4])])
    with pytest.raises(ValueError, match="column_stack: expected a non-empty list"):
        rt.column_stack([])


@pytest.mark.parametrize("sa,sv,axis", [((2, 3), (4,), None), ((), (2, 2), None), ((2, 3), (2, 5), 1),
                                        ((2, 3), (1, 3), 0), ((2, 3), (2, 1), -1), ((3, 1, 2), (3, 4, 2), 1)])
@pytest.mark.parametrize("dts", [("int64", "int64"), ("float32", "int16"), ("uint8", "float64")])
def test_append_like_numpy(sa, sv, axis, dts):
    rng = np.random.default_rng(19)
    a, v = (rng.standard_normal(sa) * 9).astype(dts[0]), (rng.standard_normal(sv) * 9).astype(dts[1])
    r = rt.append(T(a), T(v), axis=axis)
    exp = np.append(a, v, axis=axis)
    assert NP(r.dtype) == exp.dtype
    same(r, exp)


def test_append_errors_and_array_likes():
    same(rt.append([1, 2], [[3], [4]]), np.append([1, 2], [[3], [4]]))
    with pytest.raises(ValueError, match="append: arr has rank 2"):
        rt.append(rt.zeros(rt.float32, [2, 3]), rt.zeros(rt.float32, [3]), axis=0)
    with pytest.raises(ValueError, match="append"):
        rt.append(rt.zeros(rt.float32, [2, 3]), rt.zeros(rt.float32, [2, 2]), axis=0)
    with pytest.raises(IndexError, match="append"):
        rt.append(rt.zeros(rt.float32, [2, 3]), rt.zeros(rt.float32, [2, 3]), axis=2)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 1, 3)])
def test_atleast_nd_like_numpy(n, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    fn, npfn = getattr(rt, f"atleast_{n}d"), getattr(np, f"atleast_{n}d")
    t = T(a)
    r = fn(t)
    assert isinstance(r, rt.Tensor)
    same(r, npfn(a))
    if len(shape) >= n:
        assert r is t
    many = fn(t, T(np.float32(2.5)), [1, 2])
    exp = npfn(a, np.float32(2.5), [1, 2])
    assert isinstance(many, tuple) and len(many) == 3
    for g, e in zip(many, exp):
        same(g, e)
    assert fn() == ()


def test_atleast_nd_returns_views():
    t = rt.zeros(rt.float64, [3])
    v = rt.atleast_3d(t)
    v[0, 1, 0] = 4.0
    assert N(t).tolist() == [0.0, 4.0, 0.0]


# ---------------------------------------------------------------------------
# rot90
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [-5, -2, -1, 0, 1, 2, 3, 4, 7])
@pytest.mark.parametrize("shape,axes", [((2, 3), (0, 1)), ((2, 3), (1, 0)), ((2, 3, 4), (2, 0)),
                                        ((2, 3, 4), (-1, 1)), ((3, 1, 2, 2), (3, 0))])
def test_rot90_like_numpy(k, shape, axes):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = T(a)
    r = rt.rot90(t, k, axes=axes)
    same(r, np.rot90(a, k, axes=axes))
    r[(0,) * len(shape)] = -1.0  # a view: the write reaches the same element of the input as in NumPy
    np.rot90(a, k, axes=axes)[(0,) * len(shape)] = -1.0
    same(t, a)


def test_rot90_is_a_view_and_checks_arguments():
    t = rt.asarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    r = rt.rot90(t)
    r[0, 0] = -1.0  # rot90(m)[0, 0] is m[0, -1]
    assert N(t)[0, 2] == -1.0
    with pytest.raises(ValueError, match="rot90: expected a tensor of at least 2 dimensions"):
        rt.rot90(rt.zeros(rt.float32, [3]))
    with pytest.raises(ValueError, match="rot90: axes must be two axes"):
        rt.rot90(t, axes=(0, 1, 2))
    with pytest.raises(ValueError, match="rot90: axes .* the same axis twice"):
        rt.rot90(t, axes=(1, -1))
    with pytest.raises(IndexError, match="rot90"):
        rt.rot90(t, axes=(0, 2))
    with pytest.raises(TypeError, match="rot90"):
        rt.rot90(t, 1.5)


# ---------------------------------------------------------------------------
# select
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ["int32", "float64", "float32"])
def test_select_like_numpy(d):
    rng = np.random.default_rng(23)
    x = (rng.standard_normal((4, 5)) * 3).astype(d)
    conds = [x < -1, x > 1, (x > 0)[0]]          # the last one broadcasts along the rows
    choices = [x * 2, np.ones((5,), d) * 7, -x]
    for default in (0, -3.5 if d != "int32" else -3, np.full((4, 1), 9, d)):
        r = rt.select([T(c) for c in conds], [T(c) for c in choices], default=T(default)
                      if isinstance(default, np.ndarray) else default)
        exp = np.select(conds, choices, default=default)
        assert NP(r.dtype) == exp.dtype
        same(r, exp)


def test_select_first_true_condition_wins_and_promotes():
    c1 = np.array([True, True, False, False])
    c2 = np.array([True, False, True, False])
    a = np.array([1, 2, 3, 4], np.int16)
    b = np.array([10.5, 20.5, 30.5, 40.5], np.float32)
    r = rt.select([T(c1), T(c2)], [T(a), T(b)], default=T(np.float64(-1)))
    exp = np.select([c1, c2], [a, b], default=np.float64(-1))
    assert NP(r.dtype) == exp.dtype
    same(r, exp)


def test_select_errors_name_the_function():
    x = rt.zeros(rt.float32, [3])
    with pytest.raises(ValueError, match="select: condlist has 2 entries but choicelist has 1"):
        rt.select([x > 0, x < 0], [x])
    with pytest.raises(ValueError, match="select: condlist is empty"):
        rt.select([], [])
    with pytest.raises(TypeError, match="select: condlist\\[0\\] has dtype float32"):
        rt.select([x], [x])
    with pytest.raises(ValueError, match="select"):
        rt.select([x > 0], [rt.zeros(rt.float32, [4])])


# ---------------------------------------------------------------------------
# cross with axisa/axisb/axisc
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,kw", [((3,), (3,), {}), ((4, 3), (3,), {}), ((3, 4), (4, 3), {"axisa": 0}),
                                      ((3, 4), (3, 4), {"axisa": 0, "axisb": 0, "axisc": 0}),
                                      ((2, 3, 4), (3, 1, 4), {"axisa": 1, "axisb": 0, "axisc": -2}),
                                      ((2, 4, 3), (3, 2, 4), {"axisb": 0, "axisc": 1}),
                                      ((3, 2), (3, 2), {"axis": 0, "axisa": 1}),
                                      ((5, 3), (1, 3), {"axisc": 0})])
@pytest.mark.parametrize("d", ["float64", "int32", "complex128"])
def test_cross_axes_like_numpy(sa, sb, kw, d):
    rng = np.random.default_rng(29)
    a, b = (rng.standard_normal(sa) * 4).astype(d), (rng.standard_normal(sb) * 4).astype(d)
    if d == "complex128":
        a = a + 1j * rng.standard_normal(sa)
    r = rt.cross(T(a), T(b), **kw)
    exp = np.cross(a, b, **kw)
    assert NP(r.dtype) == exp.dtype
    same(r, exp, rtol=1e-14 if d != "int32" else 0.0)


def test_cross_axis_errors_name_the_argument():
    with pytest.raises(ValueError, match="cross: size along axis 0 must be 3, got 2 \\(a has shape"):
        rt.cross(rt.zeros(rt.float64, [2, 3]), rt.zeros(rt.float64, [3]), axisa=0)
    with pytest.raises(IndexError, match="cross"):
        rt.cross(rt.zeros(rt.float64, [3]), rt.zeros(rt.float64, [3]), axisc=1)
    with pytest.raises(ValueError, match="cross"):
        rt.cross(rt.zeros(rt.float64, [2, 3]), rt.zeros(rt.float64, [4, 3]))


# ---------------------------------------------------------------------------
# derivatives (central differences), vmap (a loop over examples) and jit (eager) for every function
# ---------------------------------------------------------------------------
def _c(re, im):
    return rt.astype(re, rt.complex128) + rt.astype(im, rt.complex128) * 1j


def _normal(rng, shape):
    return rng.standard_normal(shape) * 2


def _with_nan(rng, shape):
    v = rng.standard_normal(shape) * 2
    v.flat[::3] = NAN
    return v


def _with_specials(rng, shape):
    v = rng.standard_normal(shape) * 2
    sp = [NAN, INF, -INF]
    for i in range(0, v.size, 2):
        v.flat[i] = sp[(i // 2) % 3]
    return v


def _near_zero(rng, shape):
    v = rng.standard_normal(shape)
    v.flat[0], v.flat[1], v.flat[2 % v.size] = 0.0, 3e-4, -2e-3
    return v


# name: (function, [(shape, input generator) per argument])
CASES = {
    "fmax": (rt.fmax, [((3, 4), _normal), ((4,), _normal)]),
    "fmax_nan": (rt.fmax, [((6,), _normal), ((6,), _with_nan)]),
    "fmin": (rt.fmin, [((3, 4), _normal), ((3, 1), _normal)]),
    "fmin_nan": (rt.fmin, [((6,), _with_nan), ((6,), _normal)]),
    "deg2rad": (rt.deg2rad, [((5,), _normal)]),
    "rad2deg": (rt.rad2deg, [((2, 3), _normal)]),
    "logaddexp2": (rt.logaddexp2, [((3, 4), _normal), ((4,), _normal)]),
    "sinc": (rt.sinc, [((7,), _normal)]),
    "sinc_near_zero": (rt.sinc, [((5,), _near_zero)]),
    "nan_to_num": (lambda x: rt.nan_to_num(x, nan=1.5, neginf=-4.0), [((7,), _with_specials)]),
    "angle": (lambda re, im: rt.angle(_c(re, im)), [((5,), _normal), ((5,), _normal)]),
    "angle_deg": (lambda re, im: rt.angle(_c(re, im), deg=True), [((2, 3), _normal), ((3,), _normal)]),
    "column_stack": (lambda a, b: rt.column_stack([a, b, a]), [((4,), _normal), ((4, 2), _normal)]),
    "append": (lambda a, b: rt.append(a, b, axis=1), [((2, 3), _normal), ((2, 2), _normal)]),
    "append_flat": (lambda a, b: rt.append(a, b), [((2, 3), _normal), ((4,), _normal)]),
    "atleast_3d": (lambda a: rt.atleast_3d(a) * 2.0, [((4,), _normal)]),
    "rot90": (lambda m: rt.rot90(m, 3, axes=(2, 0)), [((2, 3, 4), _normal)]),
    "select": (lambda x, a, b: rt.select([x > 0.3, x < -0.3], [a, b * 2.0], default=x),
               [((6,), _normal), ((6,), _normal), ((6,), _normal)]),
    "cross": (lambda a, b: rt.cross(a, b, axisa=0, axisc=0), [((3, 4), _normal), ((4, 3), _normal)]),
}


def _inputs(name, rng, batch=None):
    return [g(rng, shape if batch is None else (batch,) + shape) for shape, g in CASES[name][1]]


def _f_np(f, args):
    return N(f(*[T(a) for a in args]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_reverse_mode_matches_central_differences(name):
    f = CASES[name][0]
    rng = np.random.default_rng(31)
    args = _inputs(name, rng)
    out, vjp_fn = rt.vjp(f, *[T(a) for a in args])
    ct = rng.standard_normal(out.shape) * np.linspace(0.5, 3.0, int(np.prod(out.shape))).reshape(out.shape)
    grads = vjp_fn(T(ct))
    h = 1e-6
    for i, a in enumerate(args):
        num = np.zeros_like(a)
        for j in range(a.size):
            hi, lo = [x.copy() for x in args], [x.copy() for x in args]
            hi[i].flat[j] += h
            lo[i].flat[j] -= h
            num.flat[j] = np.sum(ct * np.nan_to_num(_f_np(f, hi) - _f_np(f, lo))) / (2 * h)
        g = N(grads[i])
        assert np.all(np.isfinite(g)), (name, i, g)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6, err_msg=f"{name} argument {i}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_mode_matches_central_differences(name):
    f = CASES[name][0]
    rng = np.random.default_rng(37)
    args = _inputs(name, rng)
    tans = [rng.standard_normal(a.shape) for a in args]
    _, tout = rt.jvp(f, tuple(T(a) for a in args), tuple(T(v) for v in tans))
    h = 1e-6
    hi = [a + h * v for a, v in zip(args, tans)]
    lo = [a - h * v for a, v in zip(args, tans)]
    num = np.nan_to_num(_f_np(f, hi) - _f_np(f, lo)) / (2 * h)
    got = N(tout)
    assert np.all(np.isfinite(got)), (name, got)
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_a_loop_over_examples(name):
    f = CASES[name][0]
    batched = _inputs(name, np.random.default_rng(41), batch=3)
    got = N(rt.vmap(f)(*[T(a) for a in batched]))
    for k in range(3):
        exp = _f_np(f, [a[k] for a in batched])
        np.testing.assert_array_equal(got[k], exp, err_msg=f"{name} example {k}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_matches_eager(name):
    f = CASES[name][0]
    jf = rt.jit(f)
    for seed in (43, 47):  # the second call runs the compiled program
        args = _inputs(name, np.random.default_rng(seed))
        np.testing.assert_allclose(N(jf(*[T(a) for a in args])), _f_np(f, args), rtol=1e-15, atol=0,
                                   equal_nan=True, err_msg=name)


def test_jit_of_value_and_grad_matches_eager():
    def loss(x, y):
        return rt.sum(rt.sinc(x) * rt.logaddexp2(x, y) + rt.fmax(x, y) ** 2 + rt.nan_to_num(rt.rad2deg(y)))
    vg = rt.value_and_grad(loss, argnums=(0, 1))
    rng = np.random.default_rng(53)
    x, y = _near_zero(rng, (6,)), _normal(rng, (6,))
    v0, (gx0, gy0) = vg(T(x), T(y))
    v1, (gx1, gy1) = rt.jit(vg)(T(x), T(y))
    np.testing.assert_allclose(N(v1), N(v0), rtol=1e-14)
    np.testing.assert_allclose(N(gx1), N(gx0), rtol=1e-14)
    np.testing.assert_allclose(N(gy1), N(gy0), rtol=1e-14)
