"""Automatic differentiation, part 1: the primitive table, elementwise ops, reductions, scans,
sorting and the exact transpose of every linear rule.

Every rule is checked against central differences in float64 with a fixed *non-uniform*
cotangent (a uniform one hides transposition mistakes) in both modes; smooth ops also at
second order.  The helpers here are shared with tests/test_autodiff_ops.py and
tests/test_autodiff_api.py.

Other files: tests/test_autodiff_ops.py (movement, views, indexing, writes, products, complex
numbers, JAX oracle), tests/test_autodiff_api.py (nesting, pytrees, errors, dtypes,
stop_gradient, custom rules, other namespaces).
"""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
from runetensor import _primitives as P
from runetensor._backend import contract
from runetensor._tensor import binary_op, unary_op


# ---------------------------------------------------------------------------
# helpers (imported by the other test_autodiff_* files)
# ---------------------------------------------------------------------------
def T(a, dtype=rt.float64):
    """A tensor of ``dtype`` from a nested list or NumPy array."""
    return rt.asarray(np.asarray(a), dtype=dtype)


def N(t):
    """A tensor (or number) as a NumPy array."""
    return rt.to_numpy(t) if isinstance(t, rt.Tensor) else np.asarray(t)


def fixed(shape, seed=0, lo=-1.0, hi=2.0):
    """A fixed, non-uniform pattern of float64 values (deterministic, no two equal neighbours)."""
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    k = np.arange(n, dtype=np.float64)
    v = 0.35 + np.sin(1.37 * k + 0.71 * seed + 0.2) * 1.1 + 0.05 * k
    v = lo + (hi - lo) * (v - v.min() + 0.1) / (np.ptp(v) + 0.2) if n > 1 else np.array([0.5 * (lo + hi) + 0.3])
    return v.reshape(shape)


def uniform(shape, lo, hi, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def _flat_out(out):
    return np.concatenate([N(o).astype(np.complex128 if np.iscomplexobj(N(o)) else np.float64).ravel()
                           for o in rt.tree_leaves(out)]) if rt.tree_leaves(out) else np.zeros(0)


def num_jac(f, args, i, eps=1e-6):
    """Central-difference Jacobian (outputs flattened and concatenated, by rows) of ``f`` with
    respect to the real float64 argument ``args[i]`` (columns: its elements in C order)."""
    x = N(args[i]).astype(np.float64)
    cols = []
    for k in range(x.size):
        d = np.zeros(x.size)
        d[k] = eps
        d = d.reshape(x.shape)
        ap, am = list(args), list(args)
        ap[i] = rt.asarray(x + d, dtype=args[i].dtype)
        am[i] = rt.asarray(x - d, dtype=args[i].dtype)
        cols.append((_flat_out(f(*ap)) - _flat_out(f(*am))) / (2 * eps))
    if not cols:
        return np.zeros((_flat_out(f(*args)).size, 0))
    return np.stack(cols, axis=1)


def cotangent_like(out, seed=3):
    """A fixed non-uniform cotangent with ``out``'s structure, shapes and dtypes."""
    leaves, tree = rt.tree_flatten(out)
    cts = [rt.asarray(fixed(o.shape, seed + 7 * k), dtype=o.dtype) for k, o in enumerate(leaves)]
    return rt.tree_unflatten(tree, cts)


def check_rule(f, *args, order=1, atol=1e-6, rtol=1e-6, argnums=None, eps=1e-6, modes=("fwd", "rev")):
    """``f``'s vjp (fixed non-uniform cotangent) and jvp (fixed non-uniform tangent) against an
    explicit central-difference Jacobian; then ``rt.check_grads`` up to ``order`` (0: skip)."""
    argnums = range(len(args)) if argnums is None else argnums
    out, fn = rt.vjp(f, *args)
    ct = cotangent_like(out)
    u = _flat_out(ct).real
    grads = fn(ct)
    for i in argnums:
        J = num_jac(f, args, i, eps)
        if "rev" in modes:
            exp = (u @ J).reshape(args[i].shape)
            got = N(grads[i])
            assert got.shape == exp.shape, (i, got.shape, exp.shape)
            np.testing.assert_allclose(got, exp, atol=atol, rtol=rtol, err_msg=f"vjp, argument {i}")
        if "fwd" in modes:
            v = fixed(args[i].shape, seed=11 + i)
            tans = tuple(rt.asarray(v if j == i else np.zeros(a.shape), dtype=a.dtype) for j, a in enumerate(args))
            tout = rt.jvp(f, args, tans)[1]
            np.testing.assert_allclose(_flat_out(tout), J @ v.ravel(), atol=atol, rtol=rtol,
                                       err_msg=f"jvp, argument {i}")
    if order:
        rt.check_grads(f, args, order=order, modes=modes)


def vdot(a, b):
    return float(np.vdot(N(a).ravel(), N(b).ravel()).real)


def check_transpose(f, x, tol=1e-12):
    """For a linear ``f``: <u, J v> == <J^T u, v> exactly (to ``tol``, relative), by rt.jvp and rt.vjp."""
    v = rt.asarray(fixed(x.shape, 5), dtype=x.dtype)
    out, jv = rt.jvp(f, (x,), (v,))
    u = cotangent_like(out, seed=9)
    jtu = rt.vjp(f, x)[1](u)[0]
    lhs = sum(vdot(a, b) for a, b in zip(rt.tree_leaves(u), rt.tree_leaves(jv)))
    rhs = vdot(jtu, v)
    assert abs(lhs - rhs) <= tol * max(1.0, abs(lhs)), (lhs, rhs)
    # and linearity: J v is f's own output when f is linear
    np.testing.assert_allclose(_flat_out(jv), _flat_out(f(v)), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# 1. the primitive table
# ---------------------------------------------------------------------------
_OP_TAKING = {"unary": contract.UNARY_OPS, "binary": contract.BINARY_OPS,
              "reduce": tuple(f"reduce.{o}" for o in contract.REDUCE_OPS),
              "arg_reduce": tuple(f"arg_reduce.{o}" for o in contract.ARG_REDUCE_OPS),
              "scan": tuple(f"scan.{o}" for o in contract.SCAN_OPS),
              "linalg": tuple(f"linalg.{o}" for o in contract.LINALG_OPS),
              "fft": tuple(f"fft.{o}" for o in contract.FFT_OPS)}


def _expected_keys():
    keys = []
    for name in contract.primitive_names():
        if name in _OP_TAKING:
            keys.extend(_OP_TAKING[name])
        elif name not in P.HOST_PRIMS:
            keys.append(name)
    return keys


def test_table_every_differentiable_entry_has_both_rules():
    bad = [n for n, p in P.PRIMS.items() if not (p.nondiff or p.write) and (p.jvp is None or p.vjp is None)]
    assert not bad, f"differentiable primitives without a jvp or vjp rule: {bad}"
    for n, p in P.PRIMS.items():
        assert p.name == n
        assert not (p.nondiff and p.write), n


def test_table_covers_the_contract():
    missing = [k for k in _expected_keys() if k not in P.PRIMS and not k.startswith(("linalg.", "fft."))]
    assert not missing, f"contract primitives without an entry in the table: {missing}"
    for name in P.HOST_PRIMS:
        assert name in contract.primitive_names(), name
        assert name not in P.PRIMS, f"{name} is a host primitive and needs no entry"


def test_table_covers_linalg_and_fft():
    keys = [k for k in _expected_keys() if k.startswith(("linalg.", "fft."))]
    assert keys, "the contract lists no linear-algebra or FFT primitive: _expected_keys has lost them"
    missing = [k for k in keys if k not in P.PRIMS]
    assert not missing, f"linear algebra / FFT contract primitives without an entry in the table: {missing}"


def test_table_elementwise_dtype_rules():
    for op in contract.UNARY_OPS + contract.BINARY_OPS:
        assert P.PRIMS[op].dtype, f"{op} has no dtype rule"


# ---------------------------------------------------------------------------
# 2. elementwise ops
# ---------------------------------------------------------------------------
_NONDIFF_UNARY = {"isnan", "isinf", "isfinite", "signbit", "bitwise_not", "logical_not"}
_PIECEWISE_CONST = {"sign", "trunc", "ceil", "floor", "round", "rint"}
_DOMAIN = {"sqrt": (0.5, 2.0), "log": (0.5, 2.0), "log2": (0.5, 2.0), "log10": (0.5, 2.0), "log1p": (-0.5, 2.0),
           "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8), "acosh": (1.2, 3.0),
           "recip": (0.5, 2.0), "tan": (-1.0, 1.0), "abs": (0.2, 2.0)}
DIFF_UNARY = [op for op in contract.UNARY_OPS if op not in _NONDIFF_UNARY]


@pytest.mark.parametrize("op", DIFF_UNARY)
def test_unary(op):
    lo, hi = _DOMAIN.get(op, (-2.0, 2.0))
    x = fixed((3, 4), seed=len(op), lo=lo, hi=hi)
    if op in _PIECEWISE_CONST:  # stay away from the jumps
        x = np.floor(x * 2) / 2 + 0.23
    if op == "abs":
        x = x * np.where(np.arange(12).reshape(3, 4) % 3 == 0, -1, 1)
    check_rule(lambda a: unary_op(op, a, op), T(x), order=2)
    if op in _PIECEWISE_CONST:
        g = rt.grad(lambda a: rt.sum(unary_op(op, a, op) * a))(T(x))
        np.testing.assert_allclose(N(g), N(unary_op(op, T(x), op)))


@pytest.mark.parametrize("op", sorted(_NONDIFF_UNARY - {"bitwise_not"}))
def test_unary_predicates_carry_no_gradient(op):
    x = T([0.5, -1.0, 2.0])
    g = rt.grad(lambda a: rt.sum(rt.where(unary_op(op, a, op), a, a * 3.0)))(x)
    exp = np.where(N(unary_op(op, x, op)), 1.0, 3.0)
    np.testing.assert_allclose(N(g), exp)


_DIFF_BINARY = ["add", "sub", "mul", "div", "floordiv", "mod", "pymod", "pow", "maximum", "minimum", "fmax", "fmin",
                "atan2", "hypot", "copysign", "nextafter", "logaddexp"]


@pytest.mark.parametrize("op", _DIFF_BINARY)
def test_binary_broadcasting(op):
    x = fixed((3, 4), seed=1, lo=0.5, hi=2.0)
    y = fixed((4,), seed=2, lo=0.6, hi=1.9)
    if op in ("copysign",):
        x = x * np.where(np.arange(12).reshape(3, 4) % 2 == 0, -1, 1)
        y = y * np.array([1, -1, 1, -1])
    if op in ("floordiv", "mod", "pymod"):
        y = np.array([0.7, 0.9, 1.3, 1.7])
        x = (np.floor(x[...] / y) + 0.37) * y  # away from the jumps of the quotient
        x = x * np.where(np.arange(12).reshape(3, 4) % 2 == 0, -1, 1)
    check_rule(lambda a, b: binary_op(op, a, b, op), T(x), T(y), order=2)


def test_binary_with_python_scalars():
    x = T(fixed((5,), lo=0.5, hi=2.0))
    check_rule(lambda a: 2.0 ** a + a ** 3 + 3.0 / a - a / 4.0 + rt.maximum(a, 1.0) + rt.atan2(a, 2.0), x, order=2)
    check_rule(lambda a: 1.5 - a * 2.0 + rt.hypot(a, 3.0), x, order=2)


def test_pow_at_zero():
    # documented: d/dx x**y at x = 0 is y * 0**(y-1): 0 for y > 1, 1 for y == 1, inf for 0 < y < 1;
    # at y == 0 the derivative in x is 0 (0**0 == 1 is constant in x), as JAX.
    # d/dy x**y at x == 0 is 0 (the right-hand limit for y > 0).
    x = T([0.0, 0.0, 0.0, 2.0])
    y = T([2.0, 1.0, 0.0, 0.0])
    gx, gy = rt.grad(lambda a, b: rt.sum(a ** b), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(N(gx), [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(N(gy), [0.0, 0.0, 0.0, np.log(2.0)])
    g = rt.grad(lambda a: rt.sum(a ** 2.0))(T([0.0, 3.0]))
    np.testing.assert_array_equal(N(g), [0.0, 6.0])
    g = rt.grad(lambda a: rt.sum(a ** 0.0))(T([0.0, 3.0]))
    np.testing.assert_array_equal(N(g), [0.0, 0.0])
    g = rt.grad(lambda b: rt.sum(0.0 ** b))(T([1.0, 2.0]))
    np.testing.assert_array_equal(N(g), [0.0, 0.0])
    # forward mode agrees
    t = rt.jvp(lambda a, b: a ** b, (x, y), (T([1.0] * 4), T([0.0] * 4)))[1]
    np.testing.assert_array_equal(N(t), [0.0, 1.0, 0.0, 0.0])
    # second derivative of x**2 at 0 is 2, of x**3 is 0
    np.testing.assert_allclose(N(rt.grad(rt.grad(lambda a: a ** 2.0))(T(0.0))), 2.0)
    np.testing.assert_allclose(N(rt.grad(rt.grad(lambda a: a ** 3.0))(T(0.0))), 0.0)


def test_pow_negative_base_integer_exponent():
    check_rule(lambda a: a ** 3.0 + a ** 2.0, T([-1.5, -0.5, 0.7]), order=2)


def test_where():
    c = T([True, False, True, False, True], dtype=rt.bool)
    x = T(fixed((5,), 1))
    y = T(fixed((5,), 2))
    check_rule(lambda a, b: rt.where(c, a * a, b * 3.0), x, y, order=2)
    # broadcasting of the branches and the condition
    c2 = T([[True], [False]], dtype=rt.bool)
    check_rule(lambda a, b: rt.where(c2, a, b), T(fixed((3,), 4)), T(fixed((2, 1), 5)))
    # scalar branch
    check_rule(lambda a: rt.where(a > 0.5, a, 0.0), x)


def test_where_safe_pattern_does_not_leak_nan():
    x = T([0.0, 4.0])
    g = rt.grad(lambda a: rt.sum(rt.where(a > 0, rt.sqrt(rt.where(a > 0, a, 1.0)), 0.0)))(x)
    np.testing.assert_allclose(N(g), [0.0, 0.25])


def test_clip_inside_inclusive_bounds():
    # the gradient goes to x inside [lo, hi], bounds included
    x = T([-2.0, -1.0, 0.0, 1.0, 2.0])
    g = rt.grad(lambda a: rt.sum(rt.clip(a, -1.0, 1.0) * T([1.0, 2.0, 3.0, 4.0, 5.0])))(x)
    np.testing.assert_array_equal(N(g), [0.0, 2.0, 3.0, 4.0, 0.0])
    t = rt.jvp(lambda a: rt.clip(a, -1.0, 1.0), (x,), (T([1.0, 2.0, 3.0, 4.0, 5.0]),))[1]
    np.testing.assert_array_equal(N(t), [0.0, 2.0, 3.0, 4.0, 0.0])
    # one-sided
    g = rt.grad(lambda a: rt.sum(rt.clip(a, None, 0.0)))(x)
    np.testing.assert_array_equal(N(g), [1.0, 1.0, 1.0, 0.0, 0.0])


def test_clip_with_tensor_bounds():
    x = T(fixed((2, 3), 1))
    lo = T(fixed((3,), 2, -2.0, 0.0))
    hi = T(fixed((2, 1), 3, 1.0, 1.5))
    x = T(N(x) * 1.7 - 0.2)
    assert not np.any(np.isclose(N(x), N(lo))) and not np.any(np.isclose(N(x), N(hi)))
    check_rule(lambda a, b, c: rt.clip(a, b, c), x, lo, hi)


@pytest.mark.parametrize("fn,greater", [(rt.maximum, True), (rt.minimum, False)])
def test_maximum_minimum_ties_split(fn, greater):
    x = T([1.0, 2.0, 3.0])
    y = T([1.0, 1.0, 4.0])
    gx, gy = rt.grad(lambda a, b: rt.sum(fn(a, b) * T([2.0, 3.0, 5.0])), argnums=(0, 1))(x, y)
    if greater:
        np.testing.assert_array_equal(N(gx), [1.0, 3.0, 0.0])
        np.testing.assert_array_equal(N(gy), [1.0, 0.0, 5.0])
    else:
        np.testing.assert_array_equal(N(gx), [1.0, 0.0, 5.0])
        np.testing.assert_array_equal(N(gy), [1.0, 3.0, 0.0])
    # x vs itself: the whole gradient (0.5 + 0.5)
    np.testing.assert_array_equal(N(rt.grad(lambda a: rt.sum(fn(a, a)))(x)), [1.0, 1.0, 1.0])
    # forward mode: 0.5 (tx + ty) at a tie
    t = rt.jvp(fn, (x, y), (T([2.0, 2.0, 2.0]), T([4.0, 4.0, 4.0])))[1]
    np.testing.assert_array_equal(N(t), [3.0, 2.0, 4.0] if greater else [3.0, 4.0, 2.0])


def test_fmax_fmin_nan_goes_to_the_other():
    x = T([np.nan, 1.0])
    y = T([2.0, np.nan])
    gx, gy = rt.grad(lambda a, b: rt.sum(binary_op("fmax", a, b, "fmax")), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(N(gx), [0.0, 1.0])
    np.testing.assert_array_equal(N(gy), [1.0, 0.0])


@pytest.mark.parametrize("src,dst", [(rt.float64, rt.float32), (rt.float32, rt.float64), (rt.float64, rt.float16),
                                     (rt.float64, rt.bfloat16), (rt.float64, rt.complex128)])
def test_cast_between_floats(src, dst):
    x = T([0.5, -1.25, 2.0], dtype=src)
    def f(a):
        b = rt.astype(a, dst) * 3.0
        if dst.kind == "c":
            b = unary_op("real", b * (1 - 2j), "real")
        return rt.sum(rt.astype(b, rt.float64) * T([1.0, 2.0, 4.0]))
    g = rt.grad(f)(x)
    assert g.dtype == src
    np.testing.assert_allclose(N(g).astype(np.float64), [3.0, 6.0, 12.0])
    if src == rt.float64 and dst == rt.float32:  # through the rounding: differences need a larger step
        check_rule(lambda a: rt.astype(rt.astype(a, dst) * a, rt.float64), x, order=0, atol=1e-3, rtol=1e-3, eps=1e-3)
        rt.check_grads(lambda a: rt.astype(rt.astype(a, dst) * a, rt.float64), (x,), order=2, eps=1e-3, atol=1e-3,
                       rtol=1e-3)


def test_cast_jvp_dtype():
    x = T([1.0, 2.0])
    out, t = rt.jvp(lambda a: rt.astype(a, rt.float32), (x,), (T([0.5, 0.25]),))
    assert out.dtype == rt.float32 and t.dtype == rt.float32
    np.testing.assert_array_equal(N(t), [0.5, 0.25])


def test_cast_to_int_stops_gradient():
    x = T([1.5, 2.5])
    g = rt.grad(lambda a: rt.sum(a * rt.astype(rt.astype(a, rt.int32), rt.float64)))(x)
    np.testing.assert_array_equal(N(g), [1.0, 2.0])


# ---------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("axes,keepdims", [(None, False), ([0], False), ([1], True), ([0, 2], False), ([-1], True)])
def test_reductions(name, axes, keepdims):
    x = T(fixed((2, 3, 4), 3, 0.5, 1.5))
    f = getattr(rt, name)
    check_rule(lambda a: f(a, axes=axes, keepdims=keepdims), x, order=0 if name in ("max", "min") else 2)


@pytest.mark.parametrize("n_zeros", [1, 2])
def test_prod_with_zeros(n_zeros):
    data = [[2.0, 0.0, 3.0, 5.0], [1.5, 2.0, 0.5, 4.0]]
    if n_zeros == 2:
        data[0][3] = 0.0
    x = T(data)
    for axes in (None, [1], [0]):
        check_rule(lambda a: rt.prod(a, axes=axes), x, order=0)
    g = rt.grad(lambda a: rt.prod(a))(T([2.0, 0.0, 3.0] if n_zeros == 1 else [2.0, 0.0, 0.0]))
    np.testing.assert_array_equal(N(g), [0.0, 6.0, 0.0] if n_zeros == 1 else [0.0, 0.0, 0.0])
    # second order through the zero: d^2/dxi dxj prod([x0, x1, x2]) = x_k (k the third index)
    h = rt.hessian(lambda a: rt.prod(a))(T([2.0, 0.0, 3.0]))
    np.testing.assert_allclose(N(h), [[0.0, 3.0, 0.0], [3.0, 0.0, 2.0], [0.0, 2.0, 0.0]])
    h = rt.hessian(lambda a: rt.prod(a))(T([2.0, 0.0, 0.0]))
    np.testing.assert_allclose(N(h), [[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 2.0, 0.0]])
    # and along an axis, reverse over reverse
    x2 = T([[2.0, 0.0, 3.0], [1.5, 2.0, 0.5]])
    hv = rt.grad(lambda a: rt.sum(rt.grad(lambda b: rt.sum(rt.prod(b, axes=[1]) * T([1.0, 3.0])))(a)
                                  * T([[1.0, 2.0, 4.0], [1.0, 1.0, 1.0]])))(x2)
    # row 0: H = [[0, x2, x1], [x2, 0, x0], [x1, x0, 0]] at (2, 0, 3) times (1, 2, 4)
    np.testing.assert_allclose(N(hv)[0], [3.0 * 2.0 + 0.0 * 4.0, 3.0 + 2.0 * 4.0, 0.0 + 2.0 * 2.0])
    np.testing.assert_allclose(N(hv)[1], 3.0 * np.array([0.5 + 2.0, 0.5 + 1.5, 2.0 + 1.5]))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_ties_share_equally(name):
    v = 3.0 if name == "max" else -3.0
    x = T([[v, 1.0, v], [0.5, v, 0.25]])
    f = getattr(rt, name)
    g = rt.grad(lambda a: f(a))(x)
    np.testing.assert_allclose(N(g), [[1 / 3, 0.0, 1 / 3], [0.0, 1 / 3, 0.0]])
    g = rt.grad(lambda a: rt.sum(f(a, axes=[1]) * T([2.0, 5.0])))(x)
    np.testing.assert_allclose(N(g), [[1.0, 0.0, 1.0], [0.0, 5.0, 0.0]])
    t = rt.jvp(lambda a: f(a, axes=[1]), (x,), (T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),))[1]
    np.testing.assert_allclose(N(t), [2.0, 5.0])


def test_var_std_norm_compositions():
    x = T(fixed((3, 4), 2))
    check_rule(lambda a: rt.var(a, axes=[1]), x, order=2)
    check_rule(lambda a: rt.std(a, axes=[0], ddof=1), x, order=2)
    check_rule(lambda a: rt.sum(a * a) ** 0.5, x, order=2)


# ---------------------------------------------------------------------------
# cumulative ops
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(axis):
    check_rule(lambda a: rt.cumsum(a, axis=axis), T(fixed((3, 4), 1)), order=2)


def test_cumsum_flat():
    check_rule(lambda a: rt.cumsum(a), T(fixed((2, 3), 1)), order=1)


@pytest.mark.parametrize("axis", [0, 1])
def test_cumprod_without_zeros(axis):
    check_rule(lambda a: rt.cumprod(a, axis=axis), T(fixed((3, 4), 1, 0.5, 1.5)), order=2)


@pytest.mark.parametrize("data", [[2.0, 0.0, 3.0, 0.5], [0.0, 2.0, 3.0, 0.5], [2.0, 3.0, 0.5, 0.0],
                                  [2.0, 0.0, 0.0, 1.5], [0.0, 0.0, 0.0, 0.0]])
def test_cumprod_with_zeros(data):
    x = T(data)
    check_rule(lambda a: rt.cumprod(a, axis=0), x, order=0)
    x2 = T([data, [1.5, 2.0, 0.0, 0.5]])
    check_rule(lambda a: rt.cumprod(a, axis=1), x2, order=0)
    check_rule(lambda a: rt.cumprod(a, axis=0), x2, order=0)


def test_cumprod_with_zeros_second_order():
    x = T([2.0, 0.0, 3.0])
    h = rt.hessian(lambda a: rt.sum(rt.cumprod(a, axis=0)))(x)
    # f = x0 + x0 x1 + x0 x1 x2
    exp = [[0.0, 1.0 + 3.0, 0.0], [4.0, 0.0, 2.0], [0.0, 2.0, 0.0]]
    np.testing.assert_allclose(N(h), exp)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("axis", [0, 1])
def test_cummax_cummin(name, axis):
    x = T(fixed((3, 5), 4))
    f = getattr(rt, name)
    check_rule(lambda a: f(a, axis=axis), x, order=2)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_plateaus(name):
    # the running extreme stays put: the gradient goes where it was first attained
    x = T([1.0, 3.0, 2.0, 3.0, 0.5]) if name == "cummax" else T([3.0, 1.0, 2.0, 1.0, 0.5])
    g = rt.grad(lambda a: rt.sum(getattr(rt, name)(a, axis=0) * T([1.0, 2.0, 4.0, 8.0, 16.0])))(x)
    np.testing.assert_array_equal(N(g), [1.0, 30.0, 0.0, 0.0, 0.0] if name == "cummax" else
                                  [1.0, 14.0, 0.0, 0.0, 16.0])


# ---------------------------------------------------------------------------
# sort
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_values(descending, axis):
    x = T(fixed((3, 4), 6))
    check_rule(lambda a: rt.sort(a, descending=descending, axis=axis)[0], x, order=2)


def test_sort_gradient_is_a_permutation():
    x = T([3.0, 1.0, 2.0])
    g = rt.grad(lambda a: rt.sum(rt.sort(a)[0] * T([10.0, 20.0, 30.0])))(x)
    np.testing.assert_array_equal(N(g), [30.0, 10.0, 20.0])


def test_argsort_indices_are_constants():
    x = T([3.0, 1.0, 2.0])
    g = rt.grad(lambda a: rt.sum(rt.take(a, rt.argsort(a)) * T([10.0, 20.0, 30.0])))(x)
    np.testing.assert_array_equal(N(g), [30.0, 10.0, 20.0])


# ---------------------------------------------------------------------------
# 3. exact transposes of the linear rules
# ---------------------------------------------------------------------------
_X234 = (2, 3, 4)
_LINEAR = {
    "reshape": lambda a: rt.reshape(a, [4, 6]),
    "transpose": lambda a: rt.transpose(a, [2, 0, 1]),
    "broadcast_to": lambda a: rt.broadcast_to(rt.reshape(a, [2, 1, 3, 4]), [2, 5, 3, 4]),
    "slice_neg_step": lambda a: a[::-1, 1:, ::-2],
    "flip": lambda a: rt.flip(a, [0, 2]),
    "as_strided": lambda a: rt.as_strided(a, [3, 3], [4, 5], 2),
    "squeeze_expand": lambda a: rt.squeeze(rt.expand_dims(a, [1]), [1]),
    "concatenate": lambda a: rt.concatenate([a, a[:, :2] * 2.0], axis=1),
    "stack": lambda a: rt.stack([a, a * 3.0], axis=1),
    "split": lambda a: tuple(rt.split(a, [1, 3], axis=2)),
    "pad": lambda a: rt.pad(a, [(1, 0), (0, 2), (1, 1)], 0.0),
    "roll": lambda a: rt.roll(a, [1, -2], axis=[1, 2]),
    "tile": lambda a: rt.tile(a, [1, 2, 1]),
    "repeat": lambda a: rt.repeat(a, 2, axis=1),
    "sum": lambda a: rt.sum(a, axes=[1]),
    "mean": lambda a: rt.mean(a, axes=[0, 2], keepdims=True),
    "cumsum": lambda a: rt.cumsum(a, axis=1),
    "gather_fancy": lambda a: a[T([1, 0, 1], dtype=rt.int64), :, T([3, 3, 0], dtype=rt.int64)],
    "take": lambda a: rt.take(a, T([2, 0, 2, 1], dtype=rt.int64), axis=1),
    "take_along_axis": lambda a: rt.take_along_axis(a, T(np.array([[[0, 3, 3]], [[1, 1, 2]]]), dtype=rt.int64),
                                                    axis=2),
    "mask": lambda a: a[T(fixed(_X234, 1) > 0.5, dtype=rt.bool)],
    "matmul_left": lambda a: rt.matmul(a, T(fixed((4, 5), 2))),
    "matmul_right": lambda a: rt.matmul(T(fixed((3, 2), 2)), rt.reshape(a, [2, 12])),
    "cast_f32": lambda a: rt.astype(a, rt.float32).astype(rt.float64),
    "cast_c128": lambda a: rt.astype(a, rt.complex128) * (1 + 2j),
    "einsum_trace_like": lambda a: rt.einsum("ijk,kl->jil", a, T(fixed((4, 2), 3))),
    "einsum_diag": lambda a: rt.einsum("iji->j", rt.reshape(a[:, :, :2], [2, 3, 2])),
    "conj_real_imag": lambda a: rt.astype(a, rt.complex128).conjugate(),
}


@pytest.mark.parametrize("name", sorted(_LINEAR))
def test_linear_rule_exact_transpose(name):
    f = _LINEAR[name]
    x = T(fixed(_X234, 2))
    tol = 1e-6 if name == "cast_f32" else 1e-12
    if name == "cast_f32":  # float32 rounding: check <u, Jv> == <J^T u, v> to float32 precision
        v = T(fixed(_X234, 5))
        jv = rt.jvp(f, (x,), (v,))[1]
        u = cotangent_like(jv, 9)
        assert abs(vdot(u, jv) - vdot(rt.vjp(f, x)[1](u)[0], v)) <= tol * abs(vdot(u, jv))
        return
    check_transpose(f, x, tol)
