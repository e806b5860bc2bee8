"""Elementwise math (seed sections "arithmetic" to "bitwise").

Every function broadcasts its operands (NumPy rules), promotes mixed dtypes
with :func:`runetensor.promote_types` (Python scalars are weak: ``add_s(t, 1)``
keeps ``t``'s dtype) and accepts non-contiguous views.  float16, bfloat16 and
the float8 types compute in float32 and round back once.  Integer arithmetic
wraps on overflow; integer division and modulo by zero give 0.

Where the seed fixes a meaning it wins over NumPy's (see ``docs/math.md``):
``div`` truncates integers toward zero, ``mod_`` takes the dividend's sign,
``round`` rounds half away from zero, ``logical_not`` is ``1 - x``, and
``rshift`` divides by ``2**shift`` rounding toward zero.  Python's operators
(``/``, ``//``, ``%``, ``>>``) follow Python and the Array API instead.

In-place forms (``iadd``, ``iadd_s``...) write into their first argument and
return it; the result must fit the target's dtype.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Callable

from . import _dtypes as D
from ._tensor import _PY_SCALARS, Tensor, as_tensor, attach, binary_op, inplace_op, on_common, unary_op, wrap
from ._validate import broadcast_shapes

__all__ = [
    # arithmetic
    "add", "add_s", "radd_s", "iadd", "iadd_s", "sub", "sub_s", "rsub_s", "isub", "isub_s",
    "mul", "mul_s", "rmul_s", "imul", "imul_s", "div", "div_s", "rdiv_s", "idiv", "idiv_s",
    "pow", "pow_s", "rpow_s", "ipow", "ipow_s", "mod_", "mod_s", "rmod_s", "imod", "imod_s",
    "neg", "conjugate", "abs", "sign", "square", "sqrt", "rsqrt", "recip",
    # math functions
    "log", "log2", "exp", "exp2", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot", "trunc", "ceil", "floor", "round",
    "lerp", "lerp_scalar_weight", "isinf", "isnan", "isfinite",
    # comparison and logic
    "cmplt", "less", "less_s", "cmpne", "not_equal", "not_equal_s", "cmpeq", "equal", "equal_s",
    "cmpgt", "greater", "greater_s", "cmple", "less_equal", "less_equal_s", "cmpge",
    "greater_equal", "greater_equal_s", "array_equal",
    "maximum", "maximum_s", "rmaximum_s", "imaximum", "imaximum_s",
    "minimum", "minimum_s", "rminimum_s", "iminimum", "iminimum_s",
    "logical_and", "logical_or", "logical_xor", "logical_not", "where", "clamp", "clip",
    "fmax", "fmin", "deg2rad", "rad2deg", "select",
    # bitwise
    "bitwise_xor", "bitwise_or", "bitwise_and", "bitwise_not", "invert", "lshift", "rshift",
]

_EX = ">>> import runetensor as rt\n    "


def _doc(line: str, args: str, returns: str, raises: str, example: str) -> str:
    parts = [line, ""]
    if args:
        parts += ["Args:"] + ["    " + a for a in args.split("\n")]
    parts += ["Returns:", "    " + returns]
    if raises:
        parts += ["Raises:"] + ["    " + r for r in raises.split("\n")]
    parts += ["", example.strip()]
    return "\n    ".join(parts) + "\n    "


def _finish(fn: Callable, name: str, doc: str, method: bool = True) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    if method:
        setattr(Tensor, name, fn)
    return fn


_BCAST = "ValueError: if the shapes cannot be broadcast together."


# ---------------------------------------------------------------------------
# Binary functions: t1 op t2, t op scalar, scalar op t, and in-place forms
# ---------------------------------------------------------------------------
def _make_binary(name: str, op: str, line: str, example: str, extra_raises: str = "") -> Callable:
    def fn(t1: Any, t2: Any) -> Tensor:
        return binary_op(op, t1, t2, name)
    raises = _BCAST + ("\n" + extra_raises if extra_raises else "")
    return _finish(fn, name, _doc(line, "t1, t2: tensors (or Python scalars); they broadcast together.",
                                   "A new tensor of the promoted dtype.", raises, example))


def _swapped(name: str) -> None:
    """The scalar forms take the tensor first (``rsub_s(t, s)`` is ``s - t``): a scalar first and
    a tensor second is a mistake that would silently compute the other operation."""
    raise TypeError(f"{name}(t, scalar): the tensor comes first and the scalar second, got a "
                    f"Python scalar then a tensor")


def _make_scalar(name: str, op: str, line: str, example: str, reverse: bool = False,
                 extra_raises: str = "") -> Callable:
    if reverse:
        def fn(t: Any, scalar: Any) -> Tensor:
            if type(t) in _PY_SCALARS and isinstance(scalar, Tensor):
                _swapped(name)
            return binary_op(op, scalar, t, name)
    else:
        def fn(t: Any, scalar: Any) -> Tensor:
            if type(t) in _PY_SCALARS and isinstance(scalar, Tensor):
                _swapped(name)
            return binary_op(op, t, scalar, name)
    raises = ("TypeError: if a Python scalar comes first and a tensor second (the tensor comes first).\n"
              "ValueError: if an integer scalar is out of range for the tensor's dtype.") + \
        ("\n" + extra_raises if extra_raises else "")
    return _finish(fn, name, _doc(line, "t: the tensor.\nscalar: a Python number (weakly typed) or a 0-d tensor.",
                                   "A new tensor.", raises, example))


def _make_inplace(name: str, op: str, line: str, example: str, scalar: bool = False) -> Callable:
    if scalar:
        def fn(t: Tensor, scalar: Any) -> Tensor:
            return inplace_op(op, t, scalar, name)
        args = "t: the tensor written to.\nscalar: a Python number or a 0-d tensor."
    else:
        def fn(target: Tensor, value: Any) -> Tensor:
            return inplace_op(op, target, value, name)
        args = "target: the tensor written to.\nvalue: a tensor broadcastable to ``target``'s shape, or a scalar."
    raises = ("TypeError: if the result's dtype cannot be stored in the target's dtype.\n"
              "ValueError: if the value does not broadcast to the target's shape.")
    return _finish(fn, name, _doc(line, args, "The target itself, modified.", raises, example))


_INT_DIV = "Integer division by zero gives 0; integer overflow wraps (``int_min / -1 == int_min``)."

add = _make_binary("add", "add", "Element-wise sum ``t1 + t2`` with broadcasting.", _EX + """\
>>> print(rt.add(rt.create(rt.float32, [2], [1., 2.]), rt.create(rt.float32, [2, 1], [10., 20.])))
    [[11, 12],
     [21, 22]]""")
add_s = _make_scalar("add_s", "add", "Add a scalar to each element.", _EX + """\
>>> print(rt.add_s(rt.create(rt.int32, [3], [1, 2, 3]), 10))
    [11, 12, 13]""")
radd_s = _make_scalar("radd_s", "add", "``scalar + t`` (the same as ``add_s``).", _EX + """\
>>> print(rt.radd_s(rt.create(rt.int32, [2], [1, 2]), 5))
    [6, 7]""", reverse=True)
iadd = _make_inplace("iadd", "add", "Add ``value`` to ``target`` in place.", _EX + """\
>>> t = rt.create(rt.float32, [2], [1., 2.])
    >>> _ = rt.iadd(t, rt.create(rt.float32, [2], [10., 20.])); print(t)
    [11, 22]""")
iadd_s = _make_inplace("iadd_s", "add", "Add a scalar to ``t`` in place.", _EX + """\
>>> t = rt.create(rt.int8, [2], [1, 127]); print(rt.iadd_s(t, 1))
    [2, -128]""", scalar=True)

sub = _make_binary("sub", "sub", "Element-wise difference ``t1 - t2`` with broadcasting.", _EX + """\
>>> print(rt.sub(rt.create(rt.int32, [3], [5, 6, 7]), rt.create(rt.int32, [3], [1, 1, 10])))
    [4, 5, -3]""")
sub_s = _make_scalar("sub_s", "sub", "Subtract a scalar from each element.", _EX + """\
>>> print(rt.sub_s(rt.create(rt.float32, [2], [1., 2.]), 0.5))
    [0.5, 1.5]""")
rsub_s = _make_scalar("rsub_s", "sub", "``scalar - t``.", _EX + """\
>>> print(rt.rsub_s(rt.create(rt.float32, [2], [1., 2.]), 10))
    [9, 8]""", reverse=True)
isub = _make_inplace("isub", "sub", "Subtract ``value`` from ``target`` in place.", _EX + """\
>>> t = rt.create(rt.int32, [2], [5, 5]); print(rt.isub(t, rt.create(rt.int32, [2], [1, 2])))
    [4, 3]""")
isub_s = _make_inplace("isub_s", "sub", "Subtract a scalar from ``t`` in place.", _EX + """\
>>> t = rt.create(rt.uint8, [2], [0, 5]); print(rt.isub_s(t, 1))
    [255, 4]""", scalar=True)

mul = _make_binary("mul", "mul", "Element-wise product ``t1 * t2`` with broadcasting.", _EX + """\
>>> print(rt.mul(rt.create(rt.float32, [3], [1., 2., 3.]), rt.scalar(rt.float32, 2.)))
    [2, 4, 6]""")
mul_s = _make_scalar("mul_s", "mul", "Multiply each element by a scalar.", _EX + """\
>>> print(rt.mul_s(rt.create(rt.int32, [2], [3, 4]), 3))
    [9, 12]""")
rmul_s = _make_scalar("rmul_s", "mul", "``scalar * t`` (the same as ``mul_s``).", _EX + """\
>>> print(rt.rmul_s(rt.create(rt.int32, [2], [3, 4]), -1))
    [-3, -4]""", reverse=True)
imul = _make_inplace("imul", "mul", "Multiply ``target`` by ``value`` in place.", _EX + """\
>>> t = rt.create(rt.float32, [2], [1., 2.]); print(rt.imul(t, rt.scalar(rt.float32, 4.)))
    [4, 8]""")
imul_s = _make_inplace("imul_s", "mul", "Multiply ``t`` by a scalar in place.", _EX + """\
>>> t = rt.create(rt.int32, [2], [1, 2]); print(rt.imul_s(t, 5))
    [5, 10]""", scalar=True)

div = _make_binary("div", "div",
                   "Element-wise division: true division for floats, truncation toward zero for integers.", _EX + """\
>>> x = rt.create(rt.float32, [3], [7., 8., 9.]); y = rt.create(rt.float32, [3], [2., 2., 2.])
    >>> print(rt.div(x, y))
    [3.5, 4, 4.5]
    >>> print(rt.div(rt.create(rt.int32, [2], [-7, 8]), rt.create(rt.int32, [2], [2, 0])))
    [-3, 0]""")
div.__doc__ += "\n    " + _INT_DIV + "\n    "
div_s = _make_scalar("div_s", "div", "Divide each element by a scalar (integers truncate toward zero).", _EX + """\
>>> print(rt.div_s(rt.create(rt.int32, [3], [7, -7, 6]), 2))
    [3, -3, 3]""")
rdiv_s = _make_scalar("rdiv_s", "div", "``scalar / t`` (integers truncate toward zero; ``x / 0 == 0``).", _EX + """\
>>> print(rt.rdiv_s(rt.create(rt.float32, [2], [2., 4.]), 1.))
    [0.5, 0.25]""", reverse=True)
idiv = _make_inplace("idiv", "div", "Divide ``target`` by ``value`` in place (the seed's ``div``).", _EX + """\
>>> t = rt.create(rt.int32, [2], [9, -9]); print(rt.idiv(t, rt.create(rt.int32, [2], [2, 2])))
    [4, -4]""")
idiv_s = _make_inplace("idiv_s", "div", "Divide ``t`` by a scalar in place.", _EX + """\
>>> t = rt.create(rt.float64, [2], [1., 3.]); print(rt.idiv_s(t, 2.))
    [0.5, 1.5]""", scalar=True)

pow = _make_binary("pow", "pow", "Element-wise power ``base ** exponent``.", _EX + """\
>>> print(rt.pow(rt.create(rt.float32, [3], [2., 3., 4.]), rt.create(rt.float32, [3], [2., 0.5, -1.])))
    [4, 1.73205, 0.25]
    >>> print(rt.pow(rt.create(rt.int32, [3], [2, -1, 2]), rt.create(rt.int32, [3], [10, -3, -1])))
    [1024, -1, 0]""")
pow.__doc__ += ("\n    Integers: negative exponents truncate ``1 / x**n`` (1 for 1, +-1 for -1, else 0); "
                "overflow wraps.\n    ")
pow_s = _make_scalar("pow_s", "pow", "Raise each element to a scalar power.", _EX + """\
>>> print(rt.pow_s(rt.create(rt.int32, [3], [1, 2, 3]), 2))
    [1, 4, 9]""")
rpow_s = _make_scalar("rpow_s", "pow", "``scalar ** t``.", _EX + """\
>>> print(rt.rpow_s(rt.create(rt.float32, [3], [0., 1., 3.]), 2.))
    [1, 2, 8]""", reverse=True)
ipow = _make_inplace("ipow", "pow", "Raise ``target`` to ``value`` in place.", _EX + """\
>>> t = rt.create(rt.int32, [2], [3, 4]); print(rt.ipow(t, rt.create(rt.int32, [2], [2, 3])))
    [9, 64]""")
ipow_s = _make_inplace("ipow_s", "pow", "Raise ``t`` to a scalar power in place.", _EX + """\
>>> t = rt.create(rt.float32, [2], [4., 9.]); print(rt.ipow_s(t, 0.5))
    [2, 3]""", scalar=True)

mod_ = _make_binary("mod_", "mod", "Element-wise remainder with the dividend's sign (C ``fmod``; the seed's ``mod``).",
                    _EX + """\
>>> print(rt.mod_(rt.create(rt.int32, [4], [7, -7, 7, 5]), rt.create(rt.int32, [4], [3, 3, -3, 0])))
    [1, -1, 1, 0]""", extra_raises="TypeError: for complex tensors.")
mod_.__doc__ += "\n    Python's ``%`` on tensors takes the divisor's sign instead.  Integer ``x mod 0`` is 0.\n    "
mod_s = _make_scalar("mod_s", "mod", "Remainder of each element by a scalar (dividend's sign).", _EX + """\
>>> print(rt.mod_s(rt.create(rt.float32, [3], [5.5, -5.5, 3.]), 2.))
    [1.5, -1.5, 1]""", extra_raises="TypeError: for complex tensors.")
rmod_s = _make_scalar("rmod_s", "mod", "``scalar mod t`` (dividend's sign).", _EX + """\
>>> print(rt.rmod_s(rt.create(rt.int32, [3], [3, 4, 0]), 10))
    [1, 2, 0]""", reverse=True, extra_raises="TypeError: for complex tensors.")
imod = _make_inplace("imod", "mod", "Remainder in place (dividend's sign).", _EX + """\
>>> t = rt.create(rt.int32, [2], [-7, 7]); print(rt.imod(t, rt.create(rt.int32, [2], [4, 4])))
    [-3, 3]""")
imod_s = _make_inplace("imod_s", "mod", "Remainder by a scalar in place (dividend's sign).", _EX + """\
>>> t = rt.create(rt.int32, [2], [-7, 7]); print(rt.imod_s(t, 4))
    [-3, 3]""", scalar=True)


# ---------------------------------------------------------------------------
# Unary functions
# ---------------------------------------------------------------------------
def _make_unary(name: str, op: str, line: str, example: str, raises: str = "", returns: str = "") -> Callable:
    def fn(t: Any) -> Tensor:
        return unary_op(op, t, name)
    return _finish(fn, name, _doc(line, "t: the tensor.", returns or "A new tensor.", raises, example))


_FLOAT_RET = "A new tensor; integer and bool inputs give float64 (the default float)."

neg = _make_unary("neg", "neg", "Negate each element (integers wrap: ``-int_min == int_min``).", _EX + """\
>>> print(rt.neg(rt.create(rt.int8, [3], [1, -2, -128])))
    [-1, 2, -128]""", raises="TypeError: for bool tensors (use ``logical_not``).")
conjugate = _make_unary("conjugate", "conj", "Complex conjugate; real tensors come back unchanged (as a copy).",
                        _EX + """\
>>> x = rt.create(rt.complex64, [2], [1+2j, 3+4j])
    >>> rt.to_array(rt.conjugate(x))
    [(1-2j), (3-4j)]""")
abs = _make_unary("abs", "abs", "Absolute value (the modulus for complex input, of the matching real dtype).",
                  _EX + """\
>>> print(rt.abs(rt.create(rt.float32, [3], [-1.5, 0., 2.])))
    [1.5, 0, 2]
    >>> print(rt.abs(rt.create(rt.complex64, [1], [3+4j])))
    [5]""")
sign = _make_unary("sign", "sign", "-1, 0 or 1 by sign (1 for every non-zero unsigned value; NaN stays NaN).",
                   _EX + """\
>>> print(rt.sign(rt.create(rt.float32, [3], [-2., 0., 3.5])))
    [-1, 0, 1]""")
square = _make_unary("square", "square", "Element-wise square ``t * t`` (integers wrap).", _EX + """\
>>> print(rt.square(rt.create(rt.int32, [3], [-3, 0, 4])))
    [9, 0, 16]""")
sqrt = _make_unary("sqrt", "sqrt", "Element-wise square root (NaN for negative reals).", _EX + """\
>>> print(rt.sqrt(rt.create(rt.float32, [3], [4., 2., 0.])))
    [2, 1.41421, 0]""", returns=_FLOAT_RET)


@attach()
def rsqrt(t: Any) -> Tensor:
    """Reciprocal square root ``1 / sqrt(t)``.

    Args:
        t: the tensor.
    Returns:
        A new tensor; integer and bool inputs give float64.

    >>> import runetensor as rt
    >>> print(rt.rsqrt(rt.create(rt.float32, [3], [4., 0.25, 0.])))
    [0.5, 2, inf]
    """
    t = as_tensor(t, "rsqrt")
    d = t._dtype
    if d.is_low_precision:  # in float32, rounded once
        r = rsqrt(wrap(t._backend.cast(t._data, D.float32), D.float32, t._backend))
        return wrap(r._backend.cast(r._data, d), d, r._backend)
    r = unary_op("sqrt", t, "rsqrt")
    r._backend.unary("recip", r._data, out=r._data)
    return r


recip = _make_unary("recip", "recip", "Element-wise reciprocal ``1 / t``.", _EX + """\
>>> print(rt.recip(rt.create(rt.float32, [3], [2., -4., 0.])))
    [0.5, -0.25, inf]
    >>> print(rt.recip(rt.create(rt.int32, [4], [1, -1, 2, 0])))
    [1, -1, 0, 0]""", raises="TypeError: for bool tensors.",
                    returns="A new tensor of the same dtype; integers truncate (``1 / 0 == 0``).")

# name: (primitive, first doc line, doctest output, doctest input)
_MATH = {
    "log": ("log", "Natural logarithm.", "[0, 1, -inf]", "[1., 2.7182817, 0.]"),
    "log2": ("log2", "Base-2 logarithm.", "[0, 3, -inf]", "[1., 8., 0.]"),
    "exp": ("exp", "Exponential ``e ** t``.", "[1, 2.71828, 0]", "[0., 1., -float('inf')]"),
    "exp2": ("exp2", "``2 ** t``.", "[1, 8, 0.5]", "[0., 3., -1.]"),
    "sin": ("sin", "Sine (radians).", "[0, 1]", "[0., 1.5707964]"),
    "cos": ("cos", "Cosine (radians).", "[1, -1]", "[0., 3.1415927]"),
    "tan": ("tan", "Tangent (radians).", "[0, 1]", "[0., 0.7853982]"),
    "asin": ("asin", "Arcsine, in ``[-pi/2, pi/2]`` (NaN outside ``[-1, 1]``).", "[0, 1.5708, nan]", "[0., 1., 2.]"),
    "acos": ("acos", "Arccosine, in ``[0, pi]`` (NaN outside ``[-1, 1]``).", "[1.5708, 0, nan]", "[0., 1., 2.]"),
    "atan": ("atan", "Arctangent, in ``(-pi/2, pi/2)``.", "[0, 0.785398, 1.5708]", "[0., 1., float('inf')]"),
    "sinh": ("sinh", "Hyperbolic sine.", "[0, 1.1752]", "[0., 1.]"),
    "cosh": ("cosh", "Hyperbolic cosine.", "[1, 1.54308]", "[0., 1.]"),
    "tanh": ("tanh", "Hyperbolic tangent.", "[0, 0.761594, 1]", "[0., 1., float('inf')]"),
    "asinh": ("asinh", "Inverse hyperbolic sine.", "[0, 0.881374]", "[0., 1.]"),
    "acosh": ("acosh", "Inverse hyperbolic cosine (NaN below 1).", "[0, 1.31696, nan]", "[1., 2., 0.]"),
    "atanh": ("atanh", "Inverse hyperbolic tangent (infinite at +-1).", "[0, 0.549306, inf]", "[0., 0.5, 1.]"),
}


def _math(name: str) -> Callable:
    op, line, out, data = _MATH[name]
    example = f">>> print(rt.{name}(rt.create(rt.float32, [{len(data.split(','))}], {data})))\n    {out}"
    return _make_unary(name, op, line, _EX + example, returns=_FLOAT_RET)


log = _math("log")
log2 = _math("log2")
exp = _math("exp")
exp2 = _math("exp2")
sin = _math("sin")
cos = _math("cos")
tan = _math("tan")
asin = _math("asin")
acos = _math("acos")
atan = _math("atan")
sinh = _math("sinh")
cosh = _math("cosh")
tanh = _math("tanh")
asinh = _math("asinh")
acosh = _math("acosh")
atanh = _math("atanh")

trunc = _make_unary("trunc", "trunc", "Round toward zero (integers are returned unchanged).", _EX + """\
>>> print(rt.trunc(rt.create(rt.float32, [3], [2.7, -2.7, 2.0])))
    [2, -2, 2]""", raises="TypeError: for complex tensors.")
ceil = _make_unary("ceil", "ceil", "Round up to the nearest integer.", _EX + """\
>>> print(rt.ceil(rt.create(rt.float32, [4], [2.1, 2.9, -2.1, -2.9])))
    [3, 3, -2, -2]""", raises="TypeError: for complex tensors.")
floor = _make_unary("floor", "floor", "Round down to the nearest integer.", _EX + """\
>>> print(rt.floor(rt.create(rt.float32, [4], [2.1, 2.9, -2.1, -2.9])))
    [2, 2, -3, -3]""", raises="TypeError: for complex tensors.")
round = _make_unary("round", "round", "Round to the nearest integer, ties away from zero (not NumPy's ties-to-even).",
                    _EX + """\
>>> print(rt.round(rt.create(rt.float32, [4], [2.5, 3.5, -2.5, -3.5])))
    [3, 4, -3, -4]""", raises="TypeError: for complex tensors.")

atan2 = _make_binary("atan2", "atan2", "Arctangent of ``t1 / t2`` (``y``, ``x``) using both signs, in ``[-pi, pi]``.",
                     _EX + """\
>>> print(rt.atan2(rt.create(rt.float32, [3], [1., 1., 0.]), rt.create(rt.float32, [3], [1., 0., 0.])))
    [0.785398, 1.5708, 0]""", extra_raises="TypeError: for complex tensors.")
hypot = _make_binary("hypot", "hypot", "``sqrt(t1**2 + t2**2)`` without intermediate overflow.", _EX + """\
>>> print(rt.hypot(rt.scalar(rt.float32, 3.), rt.scalar(rt.float32, 4.)))
    5
    >>> float(rt.hypot(rt.scalar(rt.float64, 1e200), rt.scalar(rt.float64, 1e200))) < float("inf")
    True""", extra_raises="TypeError: for complex tensors.")


@attach()
def lerp(start: Any, end_: Any, weight: Any) -> Tensor:
    """Linear interpolation ``start + weight * (end_ - start)``.

    Args:
        start, end_: tensors (or scalars); they broadcast together.
        weight: a tensor or scalar, broadcast with them.
    Returns:
        A new tensor of the promoted dtype.
    Raises:
        ValueError: if the shapes cannot be broadcast together.

    >>> import runetensor as rt
    >>> print(rt.lerp(rt.scalar(rt.float32, 0.), rt.scalar(rt.float32, 10.), rt.scalar(rt.float32, 0.3)))
    3
    >>> s = rt.create(rt.float32, [2], [1., 2.]); e = rt.create(rt.float32, [2], [5., 8.])
    >>> print(rt.lerp(s, e, rt.create(rt.float32, [2], [0.25, 0.5])))
    [2, 5]
    """
    return _lerp(start, end_, weight, "lerp")


def _lerp(start: Any, end_: Any, weight: Any, fname: str) -> Tensor:
    args = [v if isinstance(v, Tensor) or type(v) in _PY_SCALARS else as_tensor(v, fname)
            for v in (start, end_, weight)]
    d = D.result_type(*args)
    if d.is_low_precision:  # compute in float32, round once
        args = [as_tensor(v, fname, dtype=D.float32) if isinstance(v, Tensor) else v for v in args]
    s, e, w = args
    r = binary_op("sub", e, s, fname)
    r = binary_op("mul", w, r, fname)
    r = binary_op("add", s, r, fname)
    if r._dtype is not d and d.is_low_precision:
        r = wrap(r._backend.cast(r._data, d), d, r._backend)
    return r


@attach()
def lerp_scalar_weight(start: Any, end_: Any, weight: float) -> Tensor:
    """Linear interpolation with a scalar weight: ``start + weight * (end_ - start)``.

    Args:
        start, end_: tensors; they broadcast together.
        weight: a Python number.
    Returns:
        A new tensor.
    Raises:
        TypeError: if ``weight`` is not a number.
        ValueError: if the shapes cannot be broadcast together.

    >>> import runetensor as rt
    >>> print(rt.lerp_scalar_weight(rt.create(rt.float32, [2], [0., 10.]), rt.create(rt.float32, [2], [10., 20.]), 0.5))
    [5, 15]
    """
    if type(weight) not in _PY_SCALARS and not (isinstance(weight, Tensor) and weight.ndim == 0):
        raise TypeError(f"lerp_scalar_weight: weight must be a number, got {type(weight).__name__}")
    return _lerp(start, end_, weight, "lerp_scalar_weight")


isinf = _make_unary("isinf", "isinf", "True where the element is +inf or -inf (all false for integers).", _EX + """\
>>> print(rt.isinf(rt.create(rt.float32, [4], [1., float("inf"), float("-inf"), float("nan")])))
    [false, true, true, false]""", returns="A bool tensor.")
isnan = _make_unary("isnan", "isnan", "True where the element is NaN (all false for integers).", _EX + """\
>>> print(rt.isnan(rt.create(rt.float32, [3], [1., float("nan"), float("inf")])))
    [false, true, false]""", returns="A bool tensor.")
isfinite = _make_unary("isfinite", "isfinite", "True where the element is neither infinite nor NaN.", _EX + """\
>>> print(rt.isfinite(rt.create(rt.float32, [4], [1., float("inf"), float("nan"), -0.])))
    [true, false, false, true]""", returns="A bool tensor.")


# ---------------------------------------------------------------------------
# Comparisons, maximum/minimum, logic
# ---------------------------------------------------------------------------
_CMP = [("lt", "cmplt", "less", "less_s", "<"), ("ne", "cmpne", "not_equal", "not_equal_s", "!="),
        ("eq", "cmpeq", "equal", "equal_s", "=="), ("gt", "cmpgt", "greater", "greater_s", ">"),
        ("le", "cmple", "less_equal", "less_equal_s", "<="), ("ge", "cmpge", "greater_equal", "greater_equal_s", ">=")]
_CMP_RES = {"lt": "[true, false, false]", "ne": "[true, false, true]", "eq": "[false, true, false]",
            "gt": "[false, false, true]", "le": "[true, true, false]", "ge": "[false, true, true]"}


def _cmp(name: str) -> Callable:
    """The comparison ``name`` of ``_CMP``: its ``cmp*`` form, its NumPy-named form or its scalar form."""
    op, a, b, s, sym = next(row for row in _CMP if name in row[1:4])
    r = "TypeError: for complex tensors (they have no order)." if op not in ("eq", "ne") else ""
    if name == s:
        return _make_scalar(s, op, f"True where ``t {sym} scalar`` (a bool tensor).", _EX + f"""\
>>> print(rt.{s}(rt.create(rt.int32, [3], [1, 2, 3]), 2))
    {_CMP_RES[op]}""", extra_raises=r)
    ex = _EX + f""">>> print(rt.{name}(rt.create(rt.int32, [3], [1, 2, 3]), rt.create(rt.int32, [3], [2, 2, 2])))
    {_CMP_RES[op]}"""
    if name == a:
        return _make_binary(a, op, f"True where ``t1 {sym} t2`` (a bool tensor).", ex, r)
    return _make_binary(b, op, f"True where ``t1 {sym} t2``; the same as ``{a}``.", ex, r)


cmplt = _cmp("cmplt")
less = _cmp("less")
less_s = _cmp("less_s")
cmpne = _cmp("cmpne")
not_equal = _cmp("not_equal")
not_equal_s = _cmp("not_equal_s")
cmpeq = _cmp("cmpeq")
equal = _cmp("equal")
equal_s = _cmp("equal_s")
cmpgt = _cmp("cmpgt")
greater = _cmp("greater")
greater_s = _cmp("greater_s")
cmple = _cmp("cmple")
less_equal = _cmp("less_equal")
less_equal_s = _cmp("less_equal_s")
cmpge = _cmp("cmpge")
greater_equal = _cmp("greater_equal")
greater_equal_s = _cmp("greater_equal_s")


@attach()
def array_equal(t1: Any, t2: Any) -> Tensor:
    """Whether all elements are equal after broadcasting (false if the shapes do not broadcast).

    NaN never equals NaN.

    Args:
        t1, t2: tensors.
    Returns:
        A 0-d bool tensor.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3], [1, 2, 3])
    >>> print(rt.array_equal(x, rt.create(rt.int32, [3], [1, 2, 3])))
    true
    >>> print(rt.array_equal(rt.create(rt.int32, [2], [1, 2]), rt.create(rt.int32, [2], [1, 3])))
    false
    >>> print(rt.array_equal(x, rt.zeros(rt.int32, [2])))
    false
    """
    a = as_tensor(t1, "array_equal")
    b = as_tensor(t2, "array_equal", backend=a._backend)
    be = a._backend
    try:
        broadcast_shapes(a.shape, b.shape, fname="array_equal")
    except ValueError:
        return wrap(be.full((), False, D.bool), D.bool, be)
    eq = binary_op("eq", a, b, "array_equal")
    r = be.reduce("all", eq._data, tuple(range(eq.ndim)), False)
    return wrap(r, D.bool, be)


maximum = _make_binary("maximum", "maximum", "Element-wise maximum; NaN propagates.", _EX + """\
>>> print(rt.maximum(rt.create(rt.float32, [3], [1., 5., float("nan")]), rt.create(rt.float32, [3], [3., 2., 0.])))
    [3, 5, nan]""", extra_raises="TypeError: for complex tensors.")
maximum_s = _make_scalar("maximum_s", "maximum", "Maximum of each element and a scalar.", _EX + """\
>>> print(rt.maximum_s(rt.create(rt.int32, [3], [-1, 0, 4]), 0))
    [0, 0, 4]""", extra_raises="TypeError: for complex tensors.")
rmaximum_s = _make_scalar("rmaximum_s", "maximum", "Maximum of a scalar and each element (as ``maximum_s``).",
                          _EX + """\
>>> print(rt.rmaximum_s(rt.create(rt.int32, [3], [-1, 0, 4]), 1))
    [1, 1, 4]""", reverse=True, extra_raises="TypeError: for complex tensors.")
imaximum = _make_inplace("imaximum", "maximum", "Element-wise maximum written into ``target``.", _EX + """\
>>> t = rt.create(rt.int32, [2], [1, 5]); print(rt.imaximum(t, rt.create(rt.int32, [2], [3, 3])))
    [3, 5]""")
imaximum_s = _make_inplace("imaximum_s", "maximum", "Maximum with a scalar, in place.", _EX + """\
>>> t = rt.create(rt.int32, [2], [1, 5]); print(rt.imaximum_s(t, 2))
    [2, 5]""", scalar=True)
minimum = _make_binary("minimum", "minimum", "Element-wise minimum; NaN propagates.", _EX + """\
>>> print(rt.minimum(rt.create(rt.float32, [3], [1., 5., float("nan")]), rt.create(rt.float32, [3], [3., 2., 0.])))
    [1, 2, nan]""", extra_raises="TypeError: for complex tensors.")
minimum_s = _make_scalar("minimum_s", "minimum", "Minimum of each element and a scalar.", _EX + """\
>>> print(rt.minimum_s(rt.create(rt.int32, [3], [-1, 0, 4]), 1))
    [-1, 0, 1]""", extra_raises="TypeError: for complex tensors.")
rminimum_s = _make_scalar("rminimum_s", "minimum", "Minimum of a scalar and each element (as ``minimum_s``).",
                          _EX + """\
>>> print(rt.rminimum_s(rt.create(rt.int32, [3], [-1, 0, 4]), 0))
    [-1, 0, 0]""", reverse=True, extra_raises="TypeError: for complex tensors.")
iminimum = _make_inplace("iminimum", "minimum", "Element-wise minimum written into ``target``.", _EX + """\
>>> t = rt.create(rt.int32, [2], [1, 5]); print(rt.iminimum(t, rt.create(rt.int32, [2], [3, 3])))
    [1, 3]""")
iminimum_s = _make_inplace("iminimum_s", "minimum", "Minimum with a scalar, in place.", _EX + """\
>>> t = rt.create(rt.int32, [2], [1, 5]); print(rt.iminimum_s(t, 2))
    [1, 2]""", scalar=True)

logical_and = _make_binary("logical_and", "logical_and", "Element-wise AND of truth values (non-zero is true).",
                           _EX + """\
>>> print(rt.logical_and(rt.create(rt.int32, [3], [0, 1, 5]), rt.create(rt.int32, [3], [1, 1, 0])))
    [false, true, false]""")
logical_or = _make_binary("logical_or", "logical_or", "Element-wise OR of truth values (non-zero is true).",
                          _EX + """\
>>> print(rt.logical_or(rt.create(rt.int32, [3], [0, 1, 0]), rt.create(rt.int32, [3], [0, 0, 2])))
    [false, true, true]""")
logical_xor = _make_binary("logical_xor", "logical_xor", "Element-wise XOR of truth values (non-zero is true).",
                           _EX + """\
>>> print(rt.logical_xor(rt.create(rt.bool, [3], [True, True, False]), rt.create(rt.bool, [3], [True, False, False])))
    [false, true, false]""")


@attach()
def logical_not(t: Any) -> Tensor:
    """The seed's logical NOT: ``1 - x`` (for bool tensors, the negation).

    For 0 and 1 this is the usual NOT; other values give ``1 - x`` as the seed
    specifies (``5 -> -4``; unsigned types wrap).

    Args:
        t: the tensor.
    Returns:
        A new tensor of the same dtype.

    >>> import runetensor as rt
    >>> print(rt.logical_not(rt.create(rt.int32, [3], [0, 1, 5])))
    [1, 0, -4]
    >>> print(rt.logical_not(rt.create(rt.bool, [2], [True, False])))
    [false, true]
    """
    t = as_tensor(t, "logical_not")
    if t._dtype is D.bool:
        return unary_op("logical_not", t, "logical_not")
    return binary_op("sub", 1, t, "logical_not")


def _scalar_as(v: Any, d: D.DType, be: Any, fname: str) -> Tensor:
    try:
        return wrap(be.full((), v, d), d, be)
    except OverflowError:
        raise ValueError(f"{fname}: scalar {v!r} is out of range for {d}") from None


@attach()
def where(cond: Any, if_true: Any, if_false: Any) -> Tensor:
    """Pick ``if_true`` where ``cond`` holds (is non-zero), ``if_false`` elsewhere.

    All three broadcast to a common shape; ``if_true`` and ``if_false`` promote
    to a common dtype (Python scalars are weak).

    Args:
        cond: a condition tensor (any dtype; non-zero means true).
        if_true, if_false: tensors or scalars.
    Returns:
        A new tensor.
    Raises:
        ValueError: if the shapes cannot be broadcast together.

    >>> import runetensor as rt
    >>> c = rt.create(rt.bool, [3], [True, False, True])
    >>> print(rt.where(c, rt.create(rt.int32, [3], [2, 3, 4]), rt.create(rt.int32, [3], [5, 6, 7])))
    [2, 6, 4]
    >>> x = rt.create(rt.float32, [4], [-1., 2., -3., 4.])
    >>> print(rt.where(rt.cmpgt(x, rt.scalar(rt.float32, 0.)), x, rt.scalar(rt.float32, 0.)))
    [0, 2, 0, 4]
    """
    fname = "where"
    be, (cond, if_true, if_false) = on_common(fname, cond, if_true, if_false)
    c = as_tensor(cond, fname, backend=be)
    be = c._backend
    xt, yt = isinstance(if_true, Tensor), isinstance(if_false, Tensor)
    if not xt and type(if_true) not in _PY_SCALARS:
        if_true, xt = as_tensor(if_true, fname, backend=be), True
    if not yt and type(if_false) not in _PY_SCALARS:
        if_false, yt = as_tensor(if_false, fname, backend=be), True
    if xt and yt:
        d = D.promote_types(if_true._dtype, if_false._dtype)
    elif xt:
        d = D.weak_result(if_true._dtype, if_false)
    elif yt:
        d = D.weak_result(if_false._dtype, if_true)
    else:
        d = D.weak_result(D.weak_result(None, if_true), if_false)
    x = as_tensor(if_true, fname, dtype=d) if xt else _scalar_as(if_true, d, be, fname)
    y = as_tensor(if_false, fname, dtype=d) if yt else _scalar_as(if_false, d, be, fname)
    broadcast_shapes(c.shape, x.shape, y.shape, fname=fname)
    cd = c._data if c._dtype is D.bool else be.binary("ne", c._data, 0)
    return wrap(be.where(cd, x._data, y._data), d, be)


@attach()
def clamp(t: Any, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to ``[min, max]`` (NumPy's ``clip``: ``minimum(maximum(t, min), max)``).

    Either bound may be None (no limit), a scalar or a broadcastable tensor.
    NaN in ``t`` propagates.

    Args:
        t: the tensor.
        min, max: the bounds.
    Returns:
        A new tensor.
    Raises:
        TypeError: for complex tensors.
        ValueError: if a bound does not broadcast with ``t``.

    >>> import runetensor as rt
    >>> print(rt.clamp(rt.create(rt.int32, [5], [-2, 0, 3, 7, 10]), min=0, max=5))
    [0, 0, 3, 5, 5]
    >>> print(rt.clamp(rt.create(rt.float32, [3], [-1., 0.5, 2.]), max=1.))
    [-1, 0.5, 1]
    """
    return _clamp(t, min, max, "clamp")


def _clamp(t: Any, lo: Any, hi: Any, fname: str) -> Tensor:
    be, (t, lo, hi) = on_common(fname, as_tensor(t, fname), lo, hi)
    d = t._dtype
    bounds = []
    for v in (lo, hi):
        if v is not None and not isinstance(v, Tensor) and type(v) not in _PY_SCALARS:
            v = as_tensor(v, fname, backend=be)
        if isinstance(v, Tensor):
            d = D.promote_types(d, v._dtype)
        elif v is not None:
            d = D.weak_result(d, v)
        bounds.append(v)
    if d.kind in "cO":
        raise TypeError(f"{fname}: not defined for {d} tensors (complex numbers have no order)")
    if lo is None and hi is None:
        return wrap(be.copy(t._data), d, be) if d is t._dtype else wrap(be.cast(t._data, d), d, be)
    hs = [None if v is None else as_tensor(v, fname, dtype=d)._data if isinstance(v, Tensor)
          else _scalar_as(v, d, be, fname)._data for v in bounds]
    broadcast_shapes(t._data.shape, *(h.shape for h in hs if h is not None), fname=fname)
    x = t._data if d is t._dtype else be.cast(t._data, d)
    return wrap(be.clip(x, hs[0], hs[1]), d, be)


@attach()
def clip(t: Any, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to ``[min, max]``; the same as :func:`clamp`.

    Args:
        t: the tensor.
        min, max: the bounds (None: no limit), scalars or broadcastable tensors.
    Returns:
        A new tensor.
    Raises:
        TypeError: for complex tensors.
        ValueError: if a bound does not broadcast with ``t``.

    >>> import runetensor as rt
    >>> print(rt.clip(rt.create(rt.float32, [3], [-5., 0., 5.]), min=-1., max=1.))
    [-1, 0, 1]
    """
    return _clamp(t, min, max, "clip")


# ---------------------------------------------------------------------------
# NaN-ignoring maximum/minimum (contract ops), angle units, select (composites)
# ---------------------------------------------------------------------------
def fmax(t1: Any, t2: Any) -> Tensor:
    """Element-wise maximum that ignores NaN: NaN only where both operands are NaN.

    Args:
        t1, t2: tensors (or Python scalars); they broadcast together and promote as in ``maximum``.
    Returns:
        A new tensor of the promoted dtype.
    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex operands (complex numbers have no order).

    >>> import runetensor as rt
    >>> nan = float("nan")
    >>> print(rt.fmax(rt.create(rt.float64, [3], [1., nan, nan]), rt.create(rt.float64, [3], [2., 3., nan])))
    [2, 3, nan]
    """
    return binary_op("fmax", t1, t2, "fmax")  # the contract's op (NumPy's fmax; its derivative skips the NaN)


def fmin(t1: Any, t2: Any) -> Tensor:
    """Element-wise minimum that ignores NaN: NaN only where both operands are NaN.

    Args:
        t1, t2: tensors (or Python scalars); they broadcast together and promote as in ``minimum``.
    Returns:
        A new tensor of the promoted dtype.
    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex operands (complex numbers have no order).

    >>> import runetensor as rt
    >>> nan = float("nan")
    >>> print(rt.fmin(rt.create(rt.float64, [3], [1., nan, nan]), rt.create(rt.float64, [3], [2., 3., nan])))
    [1, 3, nan]
    """
    return binary_op("fmin", t1, t2, "fmin")


def _angle_scale(t: Any, factor: float, fname: str) -> Tensor:
    t = as_tensor(t, fname)
    k = t._dtype.kind
    if k in "biu":
        t = t.astype(D.float64)
    elif k != "f":
        raise TypeError(f"{fname}: expected a real tensor, got dtype {t._dtype}; convert complex input "
                        f"with rt.real/rt.imag or rt.angle first")
    return binary_op("mul", t, factor, fname)


def deg2rad(t: Any) -> Tensor:
    """Convert angles from degrees to radians (``t * pi / 180``).

    Args:
        t: a real tensor; integer and bool inputs give float64 (the default float).
    Returns:
        A new float tensor of ``t``'s shape.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.deg2rad(rt.create(rt.int32, [3], [0, 90, 180])))
    [0, 1.5708, 3.14159]
    """
    return _angle_scale(t, math.pi / 180.0, "deg2rad")


def rad2deg(t: Any) -> Tensor:
    """Convert angles from radians to degrees (``t * 180 / pi``).

    Args:
        t: a real tensor; integer and bool inputs give float64 (the default float).
    Returns:
        A new float tensor of ``t``'s shape.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.rad2deg(rt.create(rt.float64, [2], [3.141592653589793, -1.5707963267948966])))
    [180, -90]
    """
    return _angle_scale(t, 180.0 / math.pi, "rad2deg")


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Tensor:
    """Pick, per element, from the first choice whose condition holds (``default`` where none does).

    Args:
        condlist: a list of bool tensors.
        choicelist: a list of tensors or scalars, as many as ``condlist``.
        default: a tensor or scalar for the elements where no condition holds.
    Returns:
        A new tensor of the broadcast shape of every condition, choice and ``default``, and of
        their promoted dtype (Python scalars are weak).
    Raises:
        ValueError: if the lists differ in length, are empty, or the shapes do not broadcast.
        TypeError: if a condition is not a bool tensor.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [5], [-2, -1, 0, 1, 2])
    >>> print(rt.select([x < 0, x > 0], [-x, x * 10], default=7))
    [2, 1, 7, 10, 20]
    """
    fname = "select"
    if isinstance(condlist, Tensor) or isinstance(choicelist, Tensor):
        raise TypeError(f"{fname}: condlist and choicelist must be lists (of tensors), got a Tensor; "
                        f"wrap single entries in a list")
    conds, choices = list(condlist), list(choicelist)
    if len(conds) != len(choices):
        raise ValueError(f"{fname}: condlist has {len(conds)} entries but choicelist has {len(choices)}; "
                         f"they must have the same length")
    if not conds:
        raise ValueError(f"{fname}: condlist is empty; give at least one condition")
    conds = [as_tensor(c, fname) for c in conds]
    for i, c in enumerate(conds):
        if c._dtype is not D.bool:
            raise TypeError(f"{fname}: condlist[{i}] has dtype {c._dtype}; conditions must be bool tensors "
                            f"(compare, e.g. x > 0)")
    vals = [v if isinstance(v, Tensor) or type(v) in _PY_SCALARS else as_tensor(v, fname)
            for v in choices + [default]]
    d = D.result_type(*vals)
    broadcast_shapes(*[c.shape for c in conds], *[v.shape for v in vals if isinstance(v, Tensor)], fname=fname)
    choices, default = vals[:-1], vals[-1]
    r = as_tensor(default, fname, dtype=d)
    for c, v in zip(reversed(conds), reversed(choices)):
        r = where(c, as_tensor(v, fname, dtype=d), r)
    return r


# ---------------------------------------------------------------------------
# Bitwise
# ---------------------------------------------------------------------------
_BITS_R = "TypeError: for float or complex tensors."
bitwise_xor = _make_binary("bitwise_xor", "bitwise_xor", "Element-wise bitwise XOR (integers and bool).", _EX + """\
>>> print(rt.bitwise_xor(rt.create(rt.int32, [3], [12, 10, -1]), rt.create(rt.int32, [3], [10, 10, 0])))
    [6, 0, -1]""", extra_raises=_BITS_R)
bitwise_or = _make_binary("bitwise_or", "bitwise_or", "Element-wise bitwise OR (integers and bool).", _EX + """\
>>> print(rt.bitwise_or(rt.create(rt.uint8, [2], [12, 1]), rt.create(rt.uint8, [2], [10, 2])))
    [14, 3]""", extra_raises=_BITS_R)
bitwise_and = _make_binary("bitwise_and", "bitwise_and", "Element-wise bitwise AND (integers and bool).", _EX + """\
>>> print(rt.bitwise_and(rt.create(rt.int32, [2], [12, -1]), rt.create(rt.int32, [2], [10, 7])))
    [8, 7]""", extra_raises=_BITS_R)
bitwise_not = _make_unary("bitwise_not", "bitwise_not", "Element-wise bitwise NOT (``~x == -x - 1``; NOT for bool).",
                          _EX + """\
>>> print(rt.bitwise_not(rt.create(rt.int8, [3], [0, 5, -128])))
    [-1, -6, 127]""", raises=_BITS_R)
invert = _make_unary("invert", "bitwise_not", "The same as :func:`bitwise_not`.", _EX + """\
>>> print(rt.invert(rt.create(rt.uint8, [2], [0, 255])))
    [255, 0]""", raises=_BITS_R)


def _shift_args(t: Any, shift: Any, fname: str) -> tuple[Tensor, Any]:
    t = as_tensor(t, fname)
    if t._dtype.kind not in "iu":
        raise TypeError(f"{fname}: expected an integer tensor, got {t._dtype}")
    if isinstance(shift, Tensor):
        if shift._dtype.kind not in "iu":
            raise TypeError(f"{fname}: shift must be an integer, got a {shift._dtype} tensor")
        if shift.ndim != 0:
            raise ValueError(f"{fname}: shift must be a single integer, got a tensor of shape {shift.shape}")
        shift = shift.item()
    if isinstance(shift, builtins.bool) or not isinstance(shift, builtins.int):
        if not hasattr(shift, "__index__") or isinstance(shift, builtins.bool):
            raise TypeError(f"{fname}: shift must be an integer, got {type(shift).__name__} {shift!r}")
        shift = shift.__index__()
    if shift < 0:
        raise ValueError(f"{fname}: shift must be >= 0, got {shift}")
    return t, shift


@attach()
def lshift(t: Any, shift: int) -> Tensor:
    """Shift each element left by ``shift`` bits: multiplication by ``2**shift`` that wraps.

    Args:
        t: an integer tensor.
        shift: a non-negative int (shifts of the bit width or more give 0).
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        TypeError: if ``t`` is not an integer tensor or ``shift`` not an int.
        ValueError: if ``shift`` is negative.

    >>> import runetensor as rt
    >>> print(rt.lshift(rt.create(rt.int32, [3], [1, 2, 3]), 2))
    [4, 8, 12]
    >>> print(rt.lshift(rt.create(rt.int8, [2], [64, -1]), 1))
    [-128, -2]
    """
    t, s = _shift_args(t, shift, "lshift")
    if s >= t._dtype.bits:
        return wrap(t._backend.full(t.shape, 0, t._dtype), t._dtype, t._backend)
    return wrap(t._backend.binary("lshift", t._data, s), t._dtype, t._backend)


@attach()
def rshift(t: Any, shift: int) -> Tensor:
    """Divide each element by ``2**shift``, rounding toward zero (the seed's ``rshift``).

    For non-negative values this is the usual right shift; for negative ones it
    differs from an arithmetic shift (``rshift(-7, 1) == -3``; Python's
    ``-7 >> 1`` and the tensor operator ``>>`` give -4).

    Args:
        t: an integer tensor.
        shift: a non-negative int.
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        TypeError: if ``t`` is not an integer tensor or ``shift`` not an int.
        ValueError: if ``shift`` is negative.

    >>> import runetensor as rt
    >>> print(rt.rshift(rt.create(rt.int32, [3], [8, 9, 10]), 2))
    [2, 2, 2]
    >>> print(rt.rshift(rt.create(rt.int32, [3], [-7, -8, -1]), 1))
    [-3, -4, 0]
    """
    t, s = _shift_args(t, shift, "rshift")
    d, be = t._dtype, t._backend
    if s >= d.bits:
        return wrap(be.full(t.shape, 0, d), d, be)
    if d.kind == "u" or s == 0:
        return wrap(be.binary("rshift", t._data, s), d, be)
    # add 2**s - 1 to negative values before the arithmetic shift (truncation toward zero)
    bias = be.binary("rshift", t._data, d.bits - 1)          # -1 for negatives, 0 otherwise
    be.binary("bitwise_and", bias, (1 << s) - 1, out=bias)
    be.binary("add", bias, t._data, out=bias)
    be.binary("rshift", bias, s, out=bias)
    return wrap(bias, d, be)
