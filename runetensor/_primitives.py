"""The primitive table: one entry per contract primitive (or per op of the op-taking primitives),
holding everything a transformation needs to know about it.

Each :class:`Prim` records

* ``dtype``: the frontend's dtype rule, a named :class:`~runetensor._dtype_rules.DTypeRule` (for the
  elementwise ops; ``_tensor.BINARY_RULES`` and ``_tensor.UNARY_RULES`` are read off this table);
* ``jvp(B, ts, xs, out, **params)``: the tangent of the output(s), given the input tangents
  ``ts`` (``None`` for an input that carries none), the primal inputs ``xs`` and the output(s);
* ``vjp(B, g, xs, out, need, **params)``: the cotangents of the inputs (``None`` where
  ``need[i]`` is false or the input is not differentiable), given the output cotangent ``g``
  (a tuple for primitives with several outputs).

``B`` is the backend one level down (the NumPy backend, or the tracer backend of an enclosing
transformation: that is how derivatives of derivatives are taken).  Rules work on its handles
through the helpers below.  Cotangents follow JAX's convention for complex numbers: the
vector-Jacobian product is the plain transpose of the (real-linear) Jacobian, with no
conjugation; for a real function ``f`` of ``z = x + iy`` the gradient is ``df/dx - i df/dy``.

Elementwise ops give their partial derivatives once (``deriv``); both modes are derived from
them.  ``nondiff`` marks a primitive whose outputs carry no derivative (predicates, integer
results, indices, random bits); ``write`` marks the in-place primitives, which the tracer
backends turn into functional updates.
"""
from __future__ import annotations

import cmath
import math
from typing import Any, Callable

from . import _dtype_rules as R
from ._dtype_rules import DTypeRule
from ._dtypes import DType, int64
from ._dtypes import bool as _bool_dtype

__all__ = ["Prim", "PRIMS", "prim"]

Handle = Any


class Prim:
    """One primitive's rules (see the module docstring)."""

    __slots__ = ("name", "dtype", "jvp", "vjp", "deriv", "nondiff", "write", "kind", "batch")

    def __init__(self, name: str, *, dtype: DTypeRule | None = None, jvp: Callable | None = None,
                 vjp: Callable | None = None, deriv: Callable | None = None, nondiff: bool = False,
                 write: bool = False, kind: str = "holo", batch: Callable | None = None):
        self.name = name
        #: the batching rule of ``rt.vmap``, ``batch(B, name, fn, operands, params)``: given by the entry,
        #: or by ``runetensor._tracers._batch_rules`` from the primitive's contract method (every
        #: elementwise op batches the same way)
        self.batch = batch
        self.dtype = dtype
        self.deriv = deriv
        self.nondiff = nondiff
        self.write = write
        self.kind = kind
        self.jvp = jvp
        self.vjp = vjp

    def __repr__(self) -> str:
        return f"Prim({self.name!r})"


PRIMS: dict[str, Prim] = {}


def prim(name: str, **kw: Any) -> Prim:
    p = Prim(name, **kw)
    PRIMS[name] = p
    return p


# ---------------------------------------------------------------------------
# Handle helpers (scalars allowed where NumPy-style broadcasting allows them)
# ---------------------------------------------------------------------------
def _h(x: Any) -> bool:
    return hasattr(x, "shape")


def add(B, a, b):
    if a is None:
        return b
    if b is None:
        return a
    return B.binary("add", a, b)


def mul(B, a, b):
    if type(a) in (int, float) and a == 1:
        return b
    if type(b) in (int, float) and b == 1:
        return a
    if not _h(a) and not _h(b):
        return a * b
    return B.binary("mul", a, b)


def sub(B, a, b):
    return B.binary("sub", a, b)


def div(B, a, b):
    return B.binary("div", a, b)


def neg(B, a):
    return B.unary("neg", a) if _h(a) else -a


def un(B, op, a):
    return B.unary(op, a)


def zeros(B, shape, d: DType):
    return B.full(tuple(shape), 0, d)


def zeros_like(B, h):
    return B.full(h.shape, 0, B.dtype(h))


def full_like(B, h, v):
    return B.full(h.shape, v, B.dtype(h))


def where(B, c, a, b, d: DType | None = None):
    """``where`` with handles of one dtype (scalars become full handles of ``d`` or the handle's dtype)."""
    if d is None:
        d = B.dtype(a if _h(a) else b)
    shp = c.shape
    if not _h(a):
        a = B.full(shp, a, d)
    if not _h(b):
        b = B.full(shp, b, d)
    return B.where(c, a, b)


def reshape(B, h, shape):
    shape = tuple(shape)
    if h.shape == shape:
        return h
    r = B.reshape(h, shape)
    return r if r is not None else B.reshape(B.copy(h), shape)


def sum_to(B, g, shape):
    """Sum a broadcast cotangent back to ``shape``."""
    shape = tuple(shape)
    gs = g.shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and gs[lead + i] != 1)
    r = B.reduce("sum", g, axes, False) if axes else g
    return reshape(B, r, shape)


def cast_like(B, g, d: DType):
    gd = B.dtype(g)
    if gd is d:
        return g
    if gd.is_complex and not d.is_complex:
        g = B.unary("real", g)
        if B.dtype(g) is d:
            return g
    return B.cast(g, d)


def inv_perm(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _arange_idx(B, n, ndim, axis):
    """int64 indices 0..n-1 shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    a = B.arange(0, n, 1, int64)
    shp = [1] * ndim
    shp[axis] = n
    return reshape(B, a, shp)


def along_key(B, idx, axis):
    """A gather/scatter key taking ``idx`` (int64, same ndim) along ``axis`` (take_along_axis)."""
    nd = idx.ndim
    return tuple(idx if i == axis else _arange_idx(B, idx.shape[i], nd, i) for i in range(nd))


def take_along(B, x, idx, axis):
    return B.gather(x, along_key(B, idx, axis))


def put_along_add(B, shape, d, g, idx, axis):
    z = zeros(B, shape, d)
    B.scatter(z, along_key(B, idx, axis), g, "add")
    return z


def any_true(B, m) -> bool:
    """Whether any element of the bool handle ``m`` is true (read through ``value_range``)."""
    r = B.value_range(m)
    return r is not None and bool(r[1])


# ---------------------------------------------------------------------------
# Elementwise unary ops: dtype rule and derivative d(out)/d(x) as a function of (x, out)
# ---------------------------------------------------------------------------
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _rsqrt(B, a):
    return B.unary("recip", B.unary("sqrt", a))


def _one_plus(B, a, s=1.0):
    return B.binary("add", a, s)


def _abs_deriv(B, x, y):
    if B.dtype(x).is_complex:  # d|z| = Re(conj(z)/|z| dz): "c2r" with c = conj(z)/|z| (0 at z = 0)
        r = B.cast(y, B.dtype(x))
        safe = where(B, B.binary("eq", r, 0), 1, r)
        return where(B, B.binary("eq", r, 0), 0, div(B, B.unary("conj", x), safe))
    return B.unary("sign", x)


UNARY_DERIVS: dict[str, tuple[DTypeRule, Callable | None, str]] = {
    # op: (dtype rule, deriv(B, x, out), kind); kind "holo": t*d / g*d; "c2r": real(d*t) / g*d;
    # deriv None: zero derivative (piecewise constant); "nondiff": no derivative (bool/int out)
    "neg": (R.numeric_no_bool, lambda B, x, y: -1, "holo"),
    "abs": (R.magnitude, _abs_deriv, "absc"),
    "sign": (R.numeric, None, "holo"),
    "square": (R.numeric_bool_as_int, lambda B, x, y: B.binary("mul", x, 2.0), "holo"),
    "sqrt": (R.floating, lambda B, x, y: B.binary("div", 0.5, y), "holo"),
    "recip": (R.numeric_no_bool, lambda B, x, y: B.unary("neg", B.unary("square", y)), "holo"),
    "exp": (R.floating, lambda B, x, y: y, "holo"),
    "exp2": (R.floating, lambda B, x, y: B.binary("mul", y, _LN2), "holo"),
    "expm1": (R.floating, lambda B, x, y: B.binary("add", y, 1.0), "holo"),
    "log": (R.floating, lambda B, x, y: B.unary("recip", x), "holo"),
    "log2": (R.floating, lambda B, x, y: B.unary("recip", B.binary("mul", x, _LN2)), "holo"),
    "log10": (R.floating, lambda B, x, y: B.unary("recip", B.binary("mul", x, _LN10)), "holo"),
    "log1p": (R.floating, lambda B, x, y: B.unary("recip", _one_plus(B, x)), "holo"),
    "sin": (R.floating, lambda B, x, y: B.unary("cos", x), "holo"),
    "cos": (R.floating, lambda B, x, y: B.unary("neg", B.unary("sin", x)), "holo"),
    "tan": (R.floating, lambda B, x, y: _one_plus(B, B.unary("square", y)), "holo"),
    "asin": (R.floating, lambda B, x, y: _rsqrt(B, B.binary("sub", 1.0, B.unary("square", x))), "holo"),
    "acos": (R.floating, lambda B, x, y: B.unary("neg", _rsqrt(B, B.binary("sub", 1.0, B.unary("square", x)))), "holo"),
    "atan": (R.floating, lambda B, x, y: B.unary("recip", _one_plus(B, B.unary("square", x))), "holo"),
    "sinh": (R.floating, lambda B, x, y: B.unary("cosh", x), "holo"),
    "cosh": (R.floating, lambda B, x, y: B.unary("sinh", x), "holo"),
    "tanh": (R.floating, lambda B, x, y: B.binary("sub", 1.0, B.unary("square", y)), "holo"),
    "asinh": (R.floating, lambda B, x, y: _rsqrt(B, _one_plus(B, B.unary("square", x))), "holo"),
    "acosh": (R.floating, lambda B, x, y: _rsqrt(B, B.binary("sub", B.unary("square", x), 1.0)), "holo"),
    "atanh": (R.floating, lambda B, x, y: B.unary("recip", B.binary("sub", 1.0, B.unary("square", x))), "holo"),
    "erf": (R.numeric, lambda B, x, y: B.binary("mul", B.unary("exp", B.unary("neg", B.unary("square", x))),
                                                 _TWO_OVER_SQRT_PI), "holo"),
    "trunc": (R.real_numeric, None, "holo"), "ceil": (R.real_numeric, None, "holo"),
    "floor": (R.real_numeric, None, "holo"), "round": (R.real_numeric, None, "holo"),
    "rint": (R.real_numeric, None, "holo"),
    "isnan": (R.predicate, None, "nondiff"), "isinf": (R.predicate, None, "nondiff"),
    "isfinite": (R.predicate, None, "nondiff"),
    "signbit": (R.real_predicate, None, "nondiff"), "bitwise_not": (R.bitwise, None, "nondiff"),
    "logical_not": (R.predicate, None, "nondiff"),
    "conj": (R.numeric, None, "conj"),
    "real": (R.complex_part, lambda B, x, y: 1.0, "c2r"),
    "imag": (R.complex_part, lambda B, x, y: -1j, "c2r"),
}


def _unary_jvp(op: str, deriv: Callable | None, kind: str) -> Callable:
    def jvp(B, ts, xs, out):
        t = ts[0]
        if kind == "conj":
            return B.unary("conj", t)
        if deriv is None:
            return zeros_like(B, out)
        d = deriv(B, xs[0], out)
        if kind in ("c2r", "absc") and B.dtype(xs[0]).is_complex:
            return B.unary("real", mul(B, t, d))
        return mul(B, t, d)
    return jvp


def _unary_vjp(op: str, deriv: Callable | None, kind: str) -> Callable:
    def vjp(B, g, xs, out, need):
        x = xs[0]
        if kind == "conj":
            return (B.unary("conj", g),)
        if deriv is None:
            return (None,)
        d = deriv(B, x, out)
        xd = B.dtype(x)
        if kind in ("c2r", "absc") and xd.is_complex:
            return (mul(B, B.cast(g, xd), d),)
        return (mul(B, g, d),)
    return vjp


for _op, (_rule, _d, _kind) in UNARY_DERIVS.items():
    if _kind == "nondiff":
        prim(_op, dtype=_rule, nondiff=True)
    else:
        prim(_op, dtype=_rule, deriv=_d, kind=_kind, jvp=_unary_jvp(_op, _d, _kind), vjp=_unary_vjp(_op, _d, _kind))


# ---------------------------------------------------------------------------
# Elementwise binary ops: dtype rule and partials (d out/d x, d out/d y) as functions of (x, y, out)
# ---------------------------------------------------------------------------
def _pow_partials(B, x, y, out):
    # d/dx = y x^(y-1), 0 where y == 0 (so 0**0 has derivative 0 in x, as JAX);
    # d/dy = out log x, 0 where x == 0 (the limit from the right at y > 0)
    dx = dy = None
    xh, yh = _h(x), _h(y)
    if xh:
        if not yh and type(y) in (int, float) and y == 2 and B.dtype(x).kind == "f":
            dx = mul(B, x, y)       # x ** 1 is x (real floats): one pass fewer for the common square
        else:
            ym1 = B.binary("sub", y, 1.0) if yh else y - 1.0
            p = B.binary("pow", x, ym1)
            dx = mul(B, p, y)
        if yh:
            dx = where(B, B.binary("eq", y, 0), 0, dx)
        elif y == 0:
            dx = zeros_like(B, x)
    if yh:
        if xh:
            xz = B.binary("eq", x, 0)
            lg = B.unary("log", where(B, xz, 1, x))
            dy = where(B, xz, 0, B.binary("mul", out, lg))
        elif x == 0:
            dy = zeros_like(B, y)
        else:
            lg = math.log(x) if type(x) is not complex and x > 0 else cmath.log(x)
            dy = B.binary("mul", out, lg if B.dtype(out).is_complex or type(lg) is not complex else float("nan"))
    return dx, dy


def _maxmin_partials(greater: str, nan_ignoring: bool):
    def partials(B, x, y, out):
        xh, yh = _h(x), _h(y)
        gt = B.binary(greater, x, y)
        eq = B.binary("eq", x, y)
        d = B.dtype(out)
        dx = where(B, gt, 1.0, where(B, eq, 0.5, 0.0, d), d)
        if nan_ignoring:  # fmax/fmin: the gradient goes to the operand that is not NaN
            if yh:
                dx = where(B, B.unary("isnan", y), 1.0, dx)
            if xh:
                dx = where(B, B.unary("isnan", x), 0.0, dx)
        dy = B.binary("sub", 1.0, dx)
        return (dx if xh else None), (dy if yh else None)
    return partials


def _atan2_partials(B, x, y, out):
    # either operand may be a Python scalar (atan2(x, 2.0)): square it in Python then
    xh, yh = _h(x), _h(y)
    den = B.binary("add", B.binary("mul", x, x) if xh else x * x, B.binary("mul", y, y) if yh else y * y)
    return (div(B, y, den) if xh else None), (div(B, neg(B, x), den) if yh else None)


def _hypot_partials(B, x, y, out):
    z = B.binary("eq", out, 0)
    safe = where(B, z, 1, out)
    return (where(B, z, 0, div(B, x, safe)) if _h(x) else None), (where(B, z, 0, div(B, y, safe)) if _h(y) else None)


def _copysign_partials(B, x, y, out):
    if not _h(x):
        return None, None
    same = B.binary("eq", B.unary("signbit", x), B.unary("signbit", out))
    return where(B, same, 1.0, -1.0, B.dtype(out)), None


def _bool():
    return _bool_dtype


def _fmod_partials(rounder: str):
    def partials(B, x, y, out):
        q = B.unary(rounder, B.binary("div", x, y))
        return 1, neg(B, q)
    return partials


BINARY_DERIVS: dict[str, tuple[DTypeRule, Callable | None]] = {
    "add": (R.numeric, lambda B, x, y, out: (1, 1)),
    "sub": (R.numeric, lambda B, x, y, out: (1, -1)),
    "mul": (R.numeric, lambda B, x, y, out: (y, x)),
    "div": (R.numeric_bool_as_int, lambda B, x, y, out: ((B.unary("recip", y) if _h(y) else 1.0 / y),
                                                          div(B, neg(B, out), y))),
    "truediv": (R.true_division, None),   # frontend name of div with the true-division dtype rule
    "floordiv": (R.ordered_bool_as_int, lambda B, x, y, out: (0, 0)),
    "mod": (R.ordered_bool_as_int, _fmod_partials("trunc")),
    "pymod": (R.ordered_bool_as_int, _fmod_partials("floor")),
    "pow": (R.numeric_bool_as_int, _pow_partials),
    "maximum": (R.ordered, _maxmin_partials("gt", False)),
    "minimum": (R.ordered, _maxmin_partials("lt", False)),
    "fmax": (R.ordered, _maxmin_partials("gt", True)),
    "fmin": (R.ordered, _maxmin_partials("lt", True)),
    "atan2": (R.real_float, _atan2_partials),
    "hypot": (R.real_float, _hypot_partials),
    "copysign": (R.real_float, _copysign_partials),
    "nextafter": (R.real_float, lambda B, x, y, out: (1, 0)),
    "logaddexp": (R.real_float, lambda B, x, y, out: (B.unary("exp", B.binary("sub", x, out)) if _h(x) else None,
                                                      B.unary("exp", B.binary("sub", y, out)) if _h(y) else None)),
    "eq": (R.equality, None), "ne": (R.equality, None),
    "lt": (R.comparison, None), "le": (R.comparison, None), "gt": (R.comparison, None), "ge": (R.comparison, None),
    "logical_and": (R.logical, None), "logical_or": (R.logical, None), "logical_xor": (R.logical, None),
    "bitwise_and": (R.bitwise, None), "bitwise_or": (R.bitwise, None), "bitwise_xor": (R.bitwise, None),
    "lshift": (R.shift, None), "rshift": (R.shift, None),
}


def _scale(B, v, d):
    """``v * d`` where ``d`` may be the literal 0, 1 or -1."""
    if type(d) is int:
        if d == 0:
            return None
        if d == 1:
            return v
        if d == -1:
            return B.unary("neg", v)
    return mul(B, v, d)


def _binary_jvp(partials: Callable) -> Callable:
    def jvp(B, ts, xs, out):
        dx, dy = partials(B, xs[0], xs[1], out)
        r = None
        if ts[0] is not None and dx is not None:
            r = _scale(B, ts[0], dx)
        if ts[1] is not None and dy is not None:
            r = add(B, r, _scale(B, ts[1], dy))
        if r is None:
            return zeros_like(B, out)
        if r.shape != out.shape:
            r = B.expand(r, out.shape)
        return r
    return jvp


def _binary_vjp(partials: Callable) -> Callable:
    def vjp(B, g, xs, out, need):
        x, y = xs
        dx, dy = partials(B, x, y, out)
        cx = cy = None
        if need[0] and dx is not None:
            cx = _scale(B, g, dx)
            if cx is not None:
                cx = sum_to(B, cx, x.shape)
        if need[1] and dy is not None:
            cy = _scale(B, g, dy)
            if cy is not None:
                cy = sum_to(B, cy, y.shape)
        return cx, cy
    return vjp


for _op, (_rule, _p) in BINARY_DERIVS.items():
    if _op == "truediv":
        continue  # a frontend name: the primitive is "div"
    if _p is None:
        prim(_op, dtype=_rule, nondiff=True)
    else:
        prim(_op, dtype=_rule, deriv=_p, jvp=_binary_jvp(_p), vjp=_binary_vjp(_p))



# the three most common ops get direct reverse rules (the same values, fewer calls)
def _add_vjp(B, g, xs, out, need):
    return (sum_to(B, g, xs[0].shape) if need[0] else None, sum_to(B, g, xs[1].shape) if need[1] else None)


def _sub_vjp(B, g, xs, out, need):
    return (sum_to(B, g, xs[0].shape) if need[0] else None,
            sum_to(B, B.unary("neg", g), xs[1].shape) if need[1] else None)


def _mul_vjp(B, g, xs, out, need):
    x, y = xs
    return (sum_to(B, B.binary("mul", g, y), x.shape) if need[0] else None,
            sum_to(B, B.binary("mul", g, x), y.shape) if need[1] else None)


PRIMS["add"].vjp = _add_vjp
PRIMS["sub"].vjp = _sub_vjp
PRIMS["mul"].vjp = _mul_vjp

# ---------------------------------------------------------------------------
# where, clip, cast
# ---------------------------------------------------------------------------


def _where_jvp(B, ts, xs, out):
    c, x, y = xs
    tx = ts[1] if ts[1] is not None else 0.0
    ty = ts[2] if ts[2] is not None else 0.0
    if not _h(tx):
        tx = B.full(out.shape, tx, B.dtype(out))
    if not _h(ty):
        ty = B.full(out.shape, ty, B.dtype(out))
    return B.where(c, tx, ty)


def _where_vjp(B, g, xs, out, need):
    c, x, y = xs
    z = B.full((), 0, B.dtype(g))  # one element, broadcast: the same selection without a full buffer of zeros
    cx = sum_to(B, B.where(c, g, z), x.shape) if need[1] else None
    cy = sum_to(B, B.where(c, z, g), y.shape) if need[2] else None
    return None, cx, cy


prim("where", jvp=_where_jvp, vjp=_where_vjp)


def _clip_masks(B, x, lo, hi, out):
    """Masks of where the output follows x, lo and hi (PyTorch's convention: the gradient goes to x
    inside [lo, hi], bounds included; with lo > hi the output is hi everywhere, as NumPy's clip)."""
    mlo = mhi = None
    if hi is not None:
        mhi = B.binary("gt", x, hi)
        if lo is not None:
            mhi = B.binary("logical_or", mhi, B.binary("gt", lo, hi))
    if lo is not None:
        mlo = B.binary("lt", x, lo)
        if mhi is not None:
            mlo = B.binary("logical_and", mlo, B.unary("logical_not", mhi))
    m = mlo if mhi is None else mhi if mlo is None else B.binary("logical_or", mlo, mhi)
    return B.unary("logical_not", m), mlo, mhi


def _mask_f(B, m, ref_d, shape):
    r = B.cast(m, ref_d)
    return B.expand(r, shape) if r.shape != tuple(shape) else r


def _clip_jvp(B, ts, xs, out):
    x, lo, hi = xs
    mx, mlo, mhi = _clip_masks(B, x, lo, hi, out)
    d = B.dtype(out)
    r = None
    for t, m in zip(ts, (mx, mlo, mhi)):
        if t is not None and m is not None:
            r = add(B, r, B.binary("mul", t, _mask_f(B, m, d, out.shape)))
    return r if r is not None else zeros_like(B, out)


def _clip_vjp(B, g, xs, out, need):
    x, lo, hi = xs
    mx, mlo, mhi = _clip_masks(B, x, lo, hi, out)
    d = B.dtype(g)
    res = []
    for i, (h, m) in enumerate(zip(xs, (mx, mlo, mhi))):
        if need[i] and h is not None and m is not None:
            res.append(sum_to(B, B.binary("mul", g, _mask_f(B, m, d, g.shape)), h.shape))
        else:
            res.append(None)
    return tuple(res)


prim("clip", jvp=_clip_jvp, vjp=_clip_vjp)


def _cast_jvp(B, ts, xs, out, dtype):
    return cast_like(B, ts[0], dtype)


def _cast_vjp(B, g, xs, out, need, dtype):
    return (cast_like(B, g, B.dtype(xs[0])),)


prim("cast", jvp=_cast_jvp, vjp=_cast_vjp)


# ---------------------------------------------------------------------------
# movement (linear: the tangent takes the same view; the cotangent the transposed one)
# ---------------------------------------------------------------------------
prim("reshape", jvp=lambda B, ts, xs, out, shape: reshape(B, ts[0], shape),
     vjp=lambda B, g, xs, out, need, shape: (reshape(B, g, xs[0].shape),))
prim("expand", jvp=lambda B, ts, xs, out, shape: B.expand(ts[0], shape),
     vjp=lambda B, g, xs, out, need, shape: (sum_to(B, g, xs[0].shape),))
prim("permute", jvp=lambda B, ts, xs, out, axes: B.permute(ts[0], axes),
     vjp=lambda B, g, xs, out, need, axes: (B.permute(g, inv_perm(axes)),))
prim("flip", jvp=lambda B, ts, xs, out, axes: B.flip(ts[0], axes),
     vjp=lambda B, g, xs, out, need, axes: (B.flip(g, axes),))


def _view_index_vjp(B, g, xs, out, need, key):
    x = xs[0]
    z = zeros(B, x.shape, B.dtype(g))
    B.assign(B.view_index(z, key), g)
    return (z,)


prim("view_index", jvp=lambda B, ts, xs, out, key: B.view_index(ts[0], key), vjp=_view_index_vjp)


def _strided_index(B, x, shape, strides, offset):
    """int64 positions (relative to ``x``'s own C-order elements) that an ``as_strided`` view reads."""
    n = B.buffer_size(x)
    pos = B.arange(0, n, 1, int64)
    return B.as_strided(pos, shape, strides, offset)


def _as_strided_jvp(B, ts, xs, out, shape, strides, offset):
    t = B.contiguous(ts[0])
    x = xs[0]
    return B.gather(reshape(B, t, (t.size,)), (_strided_rel(B, x, shape, strides, offset),))


def _strided_rel(B, x, shape, strides, offset):
    """Flat C-order positions within ``x`` of the elements an as_strided view of x's buffer reads.

    ``x`` may be any strided view without repeated elements (a transpose, a slice with steps):
    buffer positions are mapped back to x's own elements through an inverse table.

    Raises:
        TypeError: if ``x`` repeats elements (a broadcast view) or the view reads outside ``x``.
    """
    n = B.buffer_size(x)
    pos = B.arange(0, n, 1, int64)
    idx = B.contiguous(B.as_strided(pos, shape, strides, offset))
    outside = TypeError("as_strided: under differentiation the view must stay within the tensor's own elements")
    if B.is_c_contiguous(x):
        rel = B.binary("sub", idx, B.offset(x))
        if idx.size:
            bad = B.binary("logical_or", B.binary("lt", rel, 0), B.binary("ge", rel, x.size))
            if any_true(B, bad):
                raise outside
        return rel
    if any(st == 0 and m > 1 for st, m in zip(B.strides(x), x.shape)):
        raise TypeError("as_strided: under differentiation the tensor must not repeat elements (a broadcast "
                        "view): make a copy first")
    xpos = reshape(B, B.contiguous(B.as_strided(pos, x.shape, B.strides(x), B.offset(x))), (x.size,))
    inv = B.full((n,), -1, int64)
    B.scatter(inv, (xpos,), B.arange(0, x.size, 1, int64))
    rel = B.gather(inv, (idx,))
    if idx.size and any_true(B, B.binary("lt", rel, 0)):
        raise outside
    return rel


def _as_strided_vjp(B, g, xs, out, need, shape, strides, offset):
    x = xs[0]
    rel = _strided_rel(B, x, shape, strides, offset)
    z = zeros(B, (x.size,), B.dtype(g))
    B.scatter(z, (rel,), g, "add")
    return (reshape(B, z, x.shape),)


prim("as_strided", jvp=_as_strided_jvp, vjp=_as_strided_vjp)
prim("copy", jvp=lambda B, ts, xs, out: B.copy(ts[0]), vjp=lambda B, g, xs, out, need: (g,))
prim("contiguous", jvp=lambda B, ts, xs, out: B.contiguous(ts[0]), vjp=lambda B, g, xs, out, need: (g,))


# ---------------------------------------------------------------------------
# reductions and scans
# ---------------------------------------------------------------------------
def _keep(B, h, xshape, axes):
    """A reduced handle reshaped with the reduced axes kept as size 1."""
    shp = tuple(1 if i in axes else n for i, n in enumerate(xshape))
    return reshape(B, h, shp)


def _bcast(B, h, xshape, axes, keepdims):
    if not keepdims:
        h = _keep(B, h, xshape, axes)
    return B.expand(h, tuple(xshape)) if h.shape != tuple(xshape) else h


def _sum_jvp(B, ts, xs, out, axes, keepdims):
    return B.reduce("sum", ts[0], axes, keepdims)


def _sum_vjp(B, g, xs, out, need, axes, keepdims):
    xshape = xs[0].shape
    if not keepdims and g.ndim:  # (a 0-d cotangent, all axes reduced, broadcasts as it is)
        g = reshape(B, g, tuple(1 if i in axes else n for i, n in enumerate(xshape)))
    return (B.expand(g, xshape) if g.shape != xshape else g,)


prim("reduce.sum", jvp=_sum_jvp, vjp=_sum_vjp)


def _prod_deriv(B, x, axes):
    """d prod / d x_i = product of the others, exact with zeros (one zero: only it gets a gradient)."""
    isz = B.binary("eq", x, 0)
    if not any_true(B, isz):
        p = B.reduce("prod", x, axes, True)
        return B.binary("div", B.expand(p, x.shape), x)
    return _prod_others(B, x, axes)


def _prod_others(B, x, axes):
    """At each position, the product over ``axes`` of all the other elements: exclusive running
    products from both ends (no division, so exact with zeros, and differentiable again: the
    derivative of the product of the others with respect to a zero is not lost)."""
    nd = x.ndim
    axes = tuple(sorted({a % nd for a in axes})) if nd else ()
    keep = tuple(i for i in range(nd) if i not in axes)
    perm = keep + axes
    kshape = tuple(x.shape[i] for i in keep)
    n = 1
    for a in axes:
        n *= x.shape[a]
    k = len(kshape)
    pre = tuple(slice(0, m, 1) for m in kshape)
    moved = B.permute(x, perm) if perm != tuple(range(nd)) else x
    flat = reshape(B, moved, kshape + (n,))
    d = B.dtype(x)

    def exclusive(h):
        r = B.full(kshape + (n,), 1, d)
        if n > 1:
            B.assign(B.view_index(r, pre + (slice(1, n, 1),)), B.view_index(h, pre + (slice(0, n - 1, 1),)))
        return B.scan("cumprod", r, k)
    left = exclusive(flat)
    right = B.flip(exclusive(B.flip(flat, (k,))), (k,))
    others = reshape(B, B.binary("mul", left, right), tuple(x.shape[i] for i in perm))
    return B.permute(others, inv_perm(perm)) if perm != tuple(range(nd)) else others


prim("reduce.prod",
     jvp=lambda B, ts, xs, out, axes, keepdims: B.reduce("sum", B.binary("mul", ts[0], _prod_deriv(B, xs[0], axes)),
                                                         axes, keepdims),
     vjp=lambda B, g, xs, out, need, axes, keepdims: (B.binary("mul", _bcast(B, g, xs[0].shape, axes, keepdims),
                                                                _prod_deriv(B, xs[0], axes)),))


def _extreme_weights(B, x, out, axes, keepdims):
    """Ties share the derivative equally (as JAX); NaN results send it to the NaNs."""
    ob = _bcast(B, out, x.shape, axes, keepdims)
    m = B.binary("eq", x, ob)
    if B.dtype(x).is_float:
        m = B.binary("logical_or", m, B.binary("logical_and", B.unary("isnan", x), B.unary("isnan", ob)))
    mf = B.cast(m, B.dtype(x))
    cnt = B.reduce("sum", mf, axes, True)
    return B.binary("div", mf, B.expand(cnt, x.shape))


for _op in ("max", "min"):
    prim(f"reduce.{_op}",
         jvp=lambda B, ts, xs, out, axes, keepdims: B.reduce(
             "sum", B.binary("mul", ts[0], _extreme_weights(B, xs[0], out, axes, keepdims)), axes, keepdims),
         vjp=lambda B, g, xs, out, need, axes, keepdims: (B.binary(
             "mul", _bcast(B, g, xs[0].shape, axes, keepdims), _extreme_weights(B, xs[0], out, axes, keepdims)),))
prim("reduce.all", nondiff=True)
prim("reduce.any", nondiff=True)
for _op in ("argmax", "argmin"):
    prim(f"arg_reduce.{_op}", nondiff=True)


def _rev_cumsum(B, g, axis):
    return B.flip(B.scan("cumsum", B.flip(g, (axis,)), axis), (axis,))


prim("scan.cumsum", jvp=lambda B, ts, xs, out, axis: B.scan("cumsum", ts[0], axis),
     vjp=lambda B, g, xs, out, need, axis: (_rev_cumsum(B, g, axis),))


def _axis_slice(h, axis, i):
    return tuple(slice(i, i + 1, 1) if a == axis else slice(0, n, 1) for a, n in enumerate(h.shape))


def _cumprod_jvp(B, ts, xs, out, axis):
    x, t = xs[0], ts[0]
    if not any_true(B, B.binary("eq", x, 0)):
        return B.binary("mul", out, B.scan("cumsum", B.binary("div", t, x), axis))
    # with zeros: the product rule step by step, T_i = T_(i-1) x_i + out_(i-1) t_i
    r = zeros_like(B, out)
    prev = None
    for i in range(x.shape[axis]):
        k = _axis_slice(x, axis, i)
        ti = B.view_index(t, k)
        cur = ti if prev is None else B.binary("add", B.binary("mul", prev, B.view_index(x, k)),
                                               B.binary("mul", B.view_index(out, _axis_slice(x, axis, i - 1)), ti))
        B.assign(B.view_index(r, k), cur)
        prev = cur
    return r


def _cumprod_vjp(B, g, xs, out, need, axis):
    x = xs[0]
    if not any_true(B, B.binary("eq", x, 0)):
        return (B.binary("div", _rev_cumsum(B, B.binary("mul", g, out), axis), x),)
    # with zeros: S_j = g_j + x_(j+1) S_(j+1) from the end; ct_j = out_(j-1) S_j (out_(-1) = 1)
    n = x.shape[axis]
    r = zeros_like(B, g)
    s = None
    for j in range(n - 1, -1, -1):
        k = _axis_slice(x, axis, j)
        gj = B.view_index(g, k)
        s = gj if s is None else B.binary("add", gj, B.binary("mul", B.view_index(x, _axis_slice(x, axis, j + 1)), s))
        cj = s if j == 0 else B.binary("mul", B.view_index(out, _axis_slice(x, axis, j - 1)), s)
        B.assign(B.view_index(r, k), cj)
    return (r,)


prim("scan.cumprod", jvp=_cumprod_jvp, vjp=_cumprod_vjp)


def _cum_extreme_index(B, x, out, axis):
    """For each position, the index along ``axis`` where the running extreme was first attained."""
    n = x.shape[axis]
    idx = B.expand(_arange_idx(B, n, x.ndim, axis), x.shape)
    prev = B.view_index(out, tuple(slice(0, n - 1, 1) if a == axis else slice(0, m, 1)
                                   for a, m in enumerate(x.shape)))
    cur = B.view_index(out, tuple(slice(1, n, 1) if a == axis else slice(0, m, 1) for a, m in enumerate(x.shape)))
    changed = B.binary("ne", cur, prev)
    first = B.full(tuple(1 if a == axis else m for a, m in enumerate(x.shape)), True, _bool())
    mark = _concat_bool(B, first, changed, axis)
    starts = where(B, mark, B.cast(idx, int64), -1)
    return B.scan("cummax", starts, axis)


def _concat_bool(B, a, b, axis):
    shp = tuple(a.shape[i] + b.shape[i] if i == axis else a.shape[i] for i in range(a.ndim))
    r = B.full(shp, False, _bool())
    B.assign(B.view_index(r, tuple(slice(0, a.shape[axis], 1) if i == axis else slice(0, n, 1)
                                   for i, n in enumerate(shp))), a)
    B.assign(B.view_index(r, tuple(slice(a.shape[axis], n, 1) if i == axis else slice(0, n, 1)
                                   for i, n in enumerate(shp))), b)
    return r


for _op in ("cummax", "cummin"):
    prim(f"scan.{_op}",
         jvp=lambda B, ts, xs, out, axis: take_along(B, ts[0], _cum_extreme_index(B, xs[0], out, axis), axis),
         vjp=lambda B, g, xs, out, need, axis: (put_along_add(B, xs[0].shape, B.dtype(g), g,
                                                              _cum_extreme_index(B, xs[0], out, axis), axis),))


def _sort_jvp(B, ts, xs, out, axis, descending):
    return take_along(B, ts[0], out[1], axis), None


def _sort_vjp(B, g, xs, out, need, axis, descending):
    return (put_along_add(B, xs[0].shape, B.dtype(g[0]), g[0], out[1], axis),)


prim("sort", jvp=_sort_jvp, vjp=_sort_vjp)
for _n in ("argsort", "searchsorted", "nonzero", "random_bits", "random_uniform", "empty", "full", "arange",
           "asarray", "from_buffer", "from_dlpack"):
    prim(_n, nondiff=True)


# ---------------------------------------------------------------------------
# gather / scatter / assign
# ---------------------------------------------------------------------------
def _gather_vjp(B, g, xs, out, need, key):
    x = xs[0]
    z = zeros(B, x.shape, B.dtype(g))
    B.scatter(z, key, g, "add")
    return (z,)


prim("gather", jvp=lambda B, ts, xs, out, key: B.gather(ts[0], key), vjp=_gather_vjp)
# scatter and assign are writes: the tracer backends rewrite them functionally (see _autodiff)
prim("scatter", write=True)
prim("assign", write=True)


# ---------------------------------------------------------------------------
# concatenate, pad (functional composites)
# ---------------------------------------------------------------------------
def _concat_jvp(B, ts, xs, out, axis):
    return B.concatenate([t if t is not None else zeros_like(B, x) for t, x in zip(ts, xs)], axis)


def _concat_vjp(B, g, xs, out, need, axis):
    res = []
    pos = 0
    for x, nd in zip(xs, need):
        n = x.shape[axis]
        res.append(B.view_index(g, tuple(slice(pos, pos + n, 1) if i == axis else slice(0, m, 1)
                                         for i, m in enumerate(g.shape))) if nd else None)
        pos += n
    return tuple(res)


prim("concatenate", jvp=_concat_jvp, vjp=_concat_vjp)


def _interior(h, x, widths):
    return tuple(slice(b, b + n, 1) for (b, _), n in zip(widths, x.shape))


def _pad_jvp(B, ts, xs, out, widths):
    x, v = xs
    t = ts[0] if ts[0] is not None else zeros_like(B, x)
    return B.pad(t, widths, ts[1] if ts[1] is not None else 0)


def _pad_vjp(B, g, xs, out, need, widths):
    x, v = xs
    inner = B.view_index(g, _interior(g, x, widths))
    cv = None
    if need[1]:
        all_axes = tuple(range(g.ndim))
        cv = B.binary("sub", B.reduce("sum", g, all_axes, False), B.reduce("sum", inner, all_axes, False))
    return (inner if need[0] else None), cv


prim("pad", jvp=_pad_jvp, vjp=_pad_vjp)


# ---------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------
def _swap(B, h):
    n = h.ndim
    return B.permute(h, tuple(range(n - 2)) + (n - 1, n - 2))


def _matmul_jvp(B, ts, xs, out):
    a, b = xs
    r = None
    if ts[0] is not None:
        r = B.matmul(ts[0], b)
    if ts[1] is not None:
        r = add(B, r, B.matmul(a, ts[1]))
    return r


def _matmul_vjp(B, g, xs, out, need):
    a, b = xs
    if a.ndim == 1 and b.ndim == 1:
        return (B.binary("mul", B.expand(g, b.shape), b) if need[0] else None,
                B.binary("mul", B.expand(g, a.shape), a) if need[1] else None)
    a2 = reshape(B, a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(B, b, b.shape + (1,)) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = reshape(B, g2, g2.shape[:-1] + (1,) + g2.shape[-1:])
    if b.ndim == 1:
        g2 = reshape(B, g2, g2.shape + (1,))
    ca = cb = None
    if need[0]:
        ca = reshape(B, sum_to(B, B.matmul(g2, _swap(B, b2)), a2.shape), a.shape)
    if need[1]:
        cb = reshape(B, sum_to(B, B.matmul(_swap(B, a2), g2), b2.shape), b.shape)
    return ca, cb


prim("matmul", jvp=_matmul_jvp, vjp=_matmul_vjp)
# an effect (rt.debug_print): no result, so nothing to differentiate; tracers pass their primal values
prim("callback", nondiff=True)

#: primitives whose every output is a host value or metadata (no handle result to trace)
HOST_PRIMS = ("dtype", "strides", "offset", "buffer_size", "is_c_contiguous", "shares_memory",
              "to_host", "to_list", "to_bytes", "dlpack", "dlpack_device", "value_range", "require")


# ---------------------------------------------------------------------------
# einsum (linear in each operand)
# ---------------------------------------------------------------------------
def _einsum_labels(spec: str, shapes: list) -> tuple[list[str], str, dict]:
    """Explicit labels per operand and output (``...`` spelled out with unused letters), and the
    global size of each label."""
    lhs, rhs = spec.split("->")
    ins = lhs.split(",")
    used = set(spec)
    pool = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    nell = max((len(s) - len(i.replace("...", "")) for i, s in zip(ins, shapes) if "..." in i), default=0)
    ell = "".join(pool[:nell])
    out_ins = []
    for i, s in zip(ins, shapes):
        if "..." in i:
            k = len(s) - len(i.replace("...", ""))
            i = i.replace("...", ell[nell - k:] if k else "")
        out_ins.append(i)
    out = rhs.replace("...", ell)
    sizes: dict[str, int] = {}
    for i, s in zip(out_ins, shapes):
        for c, n in zip(i, s):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
    return out_ins, out, sizes


def _einsum_jvp(B, ts, xs, out, subscripts):
    r = None
    for i, t in enumerate(ts):
        if t is not None:
            ops = list(xs)
            ops[i] = t
            r = add(B, r, B.linalg("einsum", *ops, subscripts=subscripts))
    return r


def _einsum_vjp(B, g, xs, out, need, subscripts):
    ins, outl, sizes = _einsum_labels(subscripts, [x.shape for x in xs])
    res = []
    for i, x in enumerate(xs):
        if not need[i]:
            res.append(None)
            continue
        s = ins[i]
        uniq = "".join(dict.fromkeys(s))
        others = [ins[j] for j in range(len(xs)) if j != i]
        avail = set(outl).union(*others) if others else set(outl)
        keep = "".join(c for c in uniq if c in avail)
        spec = ",".join([outl] + others) + "->" + keep
        r = B.linalg("einsum", g, *[xs[j] for j in range(len(xs)) if j != i], subscripts=spec)
        r = reshape(B, r, tuple(sizes[c] if c in keep else 1 for c in uniq))
        full = tuple(sizes[c] for c in uniq)
        if r.shape != full:
            r = B.expand(r, full)
        own = {c: n for c, n in zip(s, x.shape)}
        r = sum_to(B, r, tuple(own[c] for c in uniq))
        if len(uniq) != len(s):  # a repeated label: the cotangent lives on the diagonal
            key = []
            for c in s:
                k = uniq.index(c)
                shp = [1] * len(uniq)
                shp[k] = own[c]
                key.append(reshape(B, B.arange(0, own[c], 1, int64), tuple(shp)))
            z = zeros(B, x.shape, B.dtype(r))
            B.scatter(z, tuple(key), r)
            r = z
        res.append(r)
    return tuple(res)


prim("linalg.einsum", jvp=_einsum_jvp, vjp=_einsum_vjp)
