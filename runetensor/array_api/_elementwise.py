"""Elementwise functions of the Array API standard.

Binary functions accept a Python scalar for either operand (2024.12); scalars
are weak (``xp.add(int8_array, 1)`` stays int8).  Where NumPy's ufunc and the
standard's special cases disagree (``floor_divide`` with infinities, the sign
of ``sign(-0.0)``), the standard wins.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable

from .. import _dtypes as D
from .. import _elementwise as E
from .._tensor import BINARY_RULES, Tensor, binary_op, unary_op, wrap
from ._common import PY_SCALARS, arr, promote
from ._common import cast
from ._data_types import iinfo

__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp",
    "expm1", "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite",
    "isinf", "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
    "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder",
    "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc",
]

# name: (primitive, what it computes, doctest input, doctest output)
_UNARY: dict[str, tuple[str, str, str, str]] = {
    "abs": ("abs", "Absolute value |x| (the modulus, as a real array, for complex input)",
            "[-1.5, 2.0]", "[1.5, 2]"),
    "acos": ("acos", "Inverse cosine, in radians", "[1.0, 0.0]", "[0, 1.5708]"),
    "acosh": ("acosh", "Inverse hyperbolic cosine", "[1.0, 2.0]", "[0, 1.31696]"),
    "asin": ("asin", "Inverse sine, in radians", "[0.0, 1.0]", "[0, 1.5708]"),
    "asinh": ("asinh", "Inverse hyperbolic sine", "[0.0, 1.0]", "[0, 0.881374]"),
    "atan": ("atan", "Inverse tangent, in radians", "[0.0, 1.0]", "[0, 0.785398]"),
    "atanh": ("atanh", "Inverse hyperbolic tangent", "[0.0, 0.5]", "[0, 0.549306]"),
    "ceil": ("ceil", "Smallest integer-valued number >= x (integer input is returned as is)",
             "[-1.5, 1.2]", "[-1, 2]"),
    "conj": ("conj", "Complex conjugate (real input is returned unchanged)", "[1+2j]", "[1-2i]"),
    "cos": ("cos", "Cosine of an angle in radians", "[0.0, 3.141592653589793]", "[1, -1]"),
    "cosh": ("cosh", "Hyperbolic cosine", "[0.0, 1.0]", "[1, 1.54308]"),
    "exp": ("exp", "Exponential e**x", "[0.0, 1.0]", "[1, 2.71828]"),
    "expm1": ("expm1", "exp(x) - 1, accurate for small x", "[0.0, 1e-10]", "[0, 1e-10]"),
    "floor": ("floor", "Largest integer-valued number <= x (integer input is returned as is)",
              "[-1.5, 1.2]", "[-2, 1]"),
    "imag": ("imag", "Imaginary part of a complex array (zeros for real input)", "[1+2j]", "[2]"),
    "isfinite": ("isfinite", "Whether each element is finite (not NaN nor infinite)",
                 "[1.0, float('inf'), float('nan')]", "[true, false, false]"),
    "isinf": ("isinf", "Whether each element is +-infinity", "[1.0, float('-inf')]", "[false, true]"),
    "isnan": ("isnan", "Whether each element is NaN", "[1.0, float('nan')]", "[false, true]"),
    "log": ("log", "Natural logarithm", "[1.0, 0.0]", "[0, -inf]"),
    "log1p": ("log1p", "log(1 + x), accurate for small x", "[0.0, -1.0]", "[0, -inf]"),
    "log2": ("log2", "Base-2 logarithm", "[1.0, 8.0]", "[0, 3]"),
    "log10": ("log10", "Base-10 logarithm", "[1.0, 1000.0]", "[0, 3]"),
    "logical_not": ("logical_not", "Logical NOT (true where x is false / zero)", "[True, False]",
                    "[false, true]"),
    "negative": ("neg", "Numerical negative -x", "[1, -2]", "[-1, 2]"),
    "real": ("real", "Real part (real input is returned as a copy)", "[1+2j]", "[1]"),
    "signbit": ("signbit", "Whether the sign bit is set (true for -0.0 and negative NaN)",
                "[-0.0, 0.0, -1.0]", "[true, false, true]"),
    "sin": ("sin", "Sine of an angle in radians", "[0.0, 1.5707963267948966]", "[0, 1]"),
    "sinh": ("sinh", "Hyperbolic sine", "[0.0, 1.0]", "[0, 1.1752]"),
    "square": ("square", "x * x", "[-3, 2]", "[9, 4]"),
    "sqrt": ("sqrt", "Principal square root (NaN for negative reals)", "[4.0, -1.0]", "[2, nan]"),
    "tan": ("tan", "Tangent of an angle in radians", "[0.0, 0.7853981633974483]", "[0, 1]"),
    "tanh": ("tanh", "Hyperbolic tangent", "[0.0, float('inf')]", "[0, 1]"),
    "trunc": ("trunc", "Integer part, rounding toward zero (integer input is returned as is)",
              "[-1.7, 1.7]", "[-1, 1]"),
}

_BINARY: dict[str, tuple[str, str, str, str, str]] = {
    "add": ("add", "Sum x1 + x2", "[1, 2]", "[10, 20]", "[11, 22]"),
    "atan2": ("atan2", "Angle of the point (x2, x1) in radians, in [-pi, pi]", "[1.0, -0.0]",
              "[1.0, -1.0]", "[0.785398, -3.14159]"),
    "bitwise_and": ("bitwise_and", "Bitwise AND of integer or bool arrays", "[12, 10]", "[10, 6]", "[8, 2]"),
    "bitwise_left_shift": ("lshift", "x1 shifted left by x2 bits (integer arrays)", "[1, 3]", "[2, 1]",
                           "[4, 6]"),
    "bitwise_or": ("bitwise_or", "Bitwise OR of integer or bool arrays", "[12, 10]", "[10, 6]", "[14, 14]"),
    "bitwise_right_shift": ("rshift", "x1 shifted right by x2 bits (arithmetic for signed integers)",
                            "[8, -8]", "[2, 2]", "[2, -2]"),
    "bitwise_xor": ("bitwise_xor", "Bitwise XOR of integer or bool arrays", "[12, 10]", "[10, 6]",
                    "[6, 12]"),
    "copysign": ("copysign", "|x1| with the sign of x2", "[1.0, 2.0]", "[-0.0, 1.0]", "[-1, 2]"),
    "divide": ("truediv", "True division x1 / x2 (integer inputs give the default float)", "[1, 3]",
               "[2, 0]", "[0.5, inf]"),
    "equal": ("eq", "x1 == x2, elementwise", "[1, 2]", "[1, 3]", "[true, false]"),
    "greater": ("gt", "x1 > x2, elementwise", "[1, 2]", "[1, 1]", "[false, true]"),
    "greater_equal": ("ge", "x1 >= x2, elementwise", "[1, 2]", "[1, 3]", "[true, false]"),
    "hypot": ("hypot", "sqrt(x1**2 + x2**2) without undue overflow", "[3.0, float('inf')]",
              "[4.0, float('nan')]", "[5, inf]"),
    "less": ("lt", "x1 < x2, elementwise", "[1, 2]", "[1, 3]", "[false, true]"),
    "less_equal": ("le", "x1 <= x2, elementwise", "[1, 2]", "[1, 1]", "[true, false]"),
    "logaddexp": ("logaddexp", "log(exp(x1) + exp(x2)) without undue overflow", "[0.0, 1000.0]",
                  "[0.0, 1000.0]", "[0.693147, 1000.69]"),
    "logical_and": ("logical_and", "Logical AND", "[True, True]", "[True, False]", "[true, false]"),
    "logical_or": ("logical_or", "Logical OR", "[True, False]", "[False, False]", "[true, false]"),
    "logical_xor": ("logical_xor", "Logical XOR", "[True, True]", "[True, False]", "[false, true]"),
    "maximum": ("maximum", "Larger of x1 and x2 (NaN if either is NaN)", "[1.0, float('nan')]",
                "[2.0, 0.0]", "[2, nan]"),
    "minimum": ("minimum", "Smaller of x1 and x2 (NaN if either is NaN)", "[1.0, float('nan')]",
                "[2.0, 0.0]", "[1, nan]"),
    "multiply": ("mul", "Product x1 * x2", "[1, 2]", "[3, 4]", "[3, 8]"),
    "nextafter": ("nextafter", "The next representable value after x1 toward x2 (real floating)",
                  "[1.0, 0.0]", "[2.0, 1.0]", "[1, 4.94066e-324]"),
    "not_equal": ("ne", "x1 != x2, elementwise", "[1, 2]", "[1, 3]", "[false, true]"),
    "pow": ("pow", "x1 raised to the power x2", "[2, 3]", "[3, 2]", "[8, 9]"),
    "remainder": ("pymod", "Remainder of floor division, with the sign of x2 (Python's %)", "[5, -5]",
                  "[3, 3]", "[2, 1]"),
    "subtract": ("sub", "Difference x1 - x2", "[1, 2]", "[10, 20]", "[-9, -18]"),
}

_BOOL = D.bool


def _make_unary(name: str, op: str, what: str, ex_in: str, ex_out: str) -> Callable[[Tensor], Tensor]:
    def fn(x: Tensor, /) -> Tensor:
        return unary_op(op, arr(x, name), name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{what}, elementwise.\n\n"
                  f"    Args:\n        x: input array.\n"
                  f"    Returns:\n        An array of the results (its dtype follows the standard: bool for\n"
                  f"        predicates, a floating type for transcendental functions).\n"
                  f"    Raises:\n        TypeError: for a dtype the function does not accept.\n\n"
                  f"    >>> import runetensor.array_api as xp\n"
                  f"    >>> print(xp.{name}(xp.asarray({ex_in})))\n    {ex_out}\n    ")
    return fn


def _make_binary(name: str, op: str, what: str, a: str, b: str, out: str) -> Callable[[Any, Any], Tensor]:
    rule = BINARY_RULES[op]  # the op's dtype rule (``_dtype_rules``)
    kinds, to_bool = rule.kinds_kept, rule.returns_bool
    prim = "div" if op == "truediv" else op

    def fn(x1: Tensor | bool | int | float | complex, x2: Tensor | bool | int | float | complex, /) -> Tensor:
        # fast path: two tensors of one dtype (of a kind the rule computes in its own dtype, with no
        # check of values), shape and backend need no promotion or broadcasting; an error (subtract on
        # bool) goes to binary_op, which words it
        if type(x1) is Tensor and type(x2) is Tensor:
            d = x1._dtype
            if d is x2._dtype and d.kind in kinds and x1._data.shape == x2._data.shape \
                    and x1._backend is x2._backend:
                try:
                    return wrap(x1._backend.binary(prim, x1._data, x2._data), _BOOL if to_bool else d, x1._backend)
                except (TypeError, ValueError, OverflowError):
                    pass
        return binary_op(op, x1, x2, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{what}, elementwise with broadcasting.\n\n"
                  f"    Args:\n        x1, x2: arrays, or one array and a Python scalar (weakly typed).\n"
                  f"    Returns:\n        An array of the broadcast shape and the promoted dtype.\n"
                  f"    Raises:\n        ValueError: if the shapes do not broadcast.\n"
                  f"        TypeError: for dtypes the function does not accept.\n\n"
                  f"    >>> import runetensor.array_api as xp\n"
                  f"    >>> print(xp.{name}(xp.asarray({a}), xp.asarray({b})))\n    {out}\n    ")
    return fn


abs = _make_unary("abs", *_UNARY["abs"])
acos = _make_unary("acos", *_UNARY["acos"])
acosh = _make_unary("acosh", *_UNARY["acosh"])
asin = _make_unary("asin", *_UNARY["asin"])
asinh = _make_unary("asinh", *_UNARY["asinh"])
atan = _make_unary("atan", *_UNARY["atan"])
atanh = _make_unary("atanh", *_UNARY["atanh"])
ceil = _make_unary("ceil", *_UNARY["ceil"])
conj = _make_unary("conj", *_UNARY["conj"])
cos = _make_unary("cos", *_UNARY["cos"])
cosh = _make_unary("cosh", *_UNARY["cosh"])
exp = _make_unary("exp", *_UNARY["exp"])
expm1 = _make_unary("expm1", *_UNARY["expm1"])
floor = _make_unary("floor", *_UNARY["floor"])
imag = _make_unary("imag", *_UNARY["imag"])
isfinite = _make_unary("isfinite", *_UNARY["isfinite"])
isinf = _make_unary("isinf", *_UNARY["isinf"])
isnan = _make_unary("isnan", *_UNARY["isnan"])
log = _make_unary("log", *_UNARY["log"])
log1p = _make_unary("log1p", *_UNARY["log1p"])
log2 = _make_unary("log2", *_UNARY["log2"])
log10 = _make_unary("log10", *_UNARY["log10"])
logical_not = _make_unary("logical_not", *_UNARY["logical_not"])
negative = _make_unary("negative", *_UNARY["negative"])
real = _make_unary("real", *_UNARY["real"])
signbit = _make_unary("signbit", *_UNARY["signbit"])
sin = _make_unary("sin", *_UNARY["sin"])
sinh = _make_unary("sinh", *_UNARY["sinh"])
square = _make_unary("square", *_UNARY["square"])
sqrt = _make_unary("sqrt", *_UNARY["sqrt"])
tan = _make_unary("tan", *_UNARY["tan"])
tanh = _make_unary("tanh", *_UNARY["tanh"])
trunc = _make_unary("trunc", *_UNARY["trunc"])

add = _make_binary("add", *_BINARY["add"])
atan2 = _make_binary("atan2", *_BINARY["atan2"])
bitwise_and = _make_binary("bitwise_and", *_BINARY["bitwise_and"])
bitwise_left_shift = _make_binary("bitwise_left_shift", *_BINARY["bitwise_left_shift"])
bitwise_or = _make_binary("bitwise_or", *_BINARY["bitwise_or"])
bitwise_right_shift = _make_binary("bitwise_right_shift", *_BINARY["bitwise_right_shift"])
bitwise_xor = _make_binary("bitwise_xor", *_BINARY["bitwise_xor"])
copysign = _make_binary("copysign", *_BINARY["copysign"])
divide = _make_binary("divide", *_BINARY["divide"])
equal = _make_binary("equal", *_BINARY["equal"])
greater = _make_binary("greater", *_BINARY["greater"])
greater_equal = _make_binary("greater_equal", *_BINARY["greater_equal"])
hypot = _make_binary("hypot", *_BINARY["hypot"])
less = _make_binary("less", *_BINARY["less"])
less_equal = _make_binary("less_equal", *_BINARY["less_equal"])
logaddexp = _make_binary("logaddexp", *_BINARY["logaddexp"])
logical_and = _make_binary("logical_and", *_BINARY["logical_and"])
logical_or = _make_binary("logical_or", *_BINARY["logical_or"])
logical_xor = _make_binary("logical_xor", *_BINARY["logical_xor"])
maximum = _make_binary("maximum", *_BINARY["maximum"])
minimum = _make_binary("minimum", *_BINARY["minimum"])
multiply = _make_binary("multiply", *_BINARY["multiply"])
nextafter = _make_binary("nextafter", *_BINARY["nextafter"])
not_equal = _make_binary("not_equal", *_BINARY["not_equal"])
pow = _make_binary("pow", *_BINARY["pow"])
remainder = _make_binary("remainder", *_BINARY["remainder"])
subtract = _make_binary("subtract", *_BINARY["subtract"])


def floor_divide(x1: Tensor | int | float, x2: Tensor | int | float, /) -> Tensor:
    """Floor of x1 / x2, elementwise with broadcasting.

    For floating inputs where either operand is infinite the result is
    ``floor(x1 / x2)`` as the standard's special cases require
    (``inf // 2 == inf``, ``1 // -inf == -0.0``), where NumPy gives NaN / -1.

    Raises:
        TypeError: for complex inputs.

    >>> import runetensor.array_api as xp
    >>> print(xp.floor_divide(xp.asarray([7, -7]), 2))
    [3, -4]
    >>> print(xp.floor_divide(xp.asarray([float('inf'), 1.0]), xp.asarray([2.0, float('-inf')])))
    [inf, -0]
    """
    # the floordiv primitive (also rt's ``//``) follows the standard's special cases for infinities
    return binary_op("floordiv", x1, x2, "floor_divide")


def bitwise_invert(x: Tensor, /) -> Tensor:
    """Bitwise NOT of an integer array (logical NOT of a bool array).

    Raises:
        TypeError: for floating-point input.

    >>> import runetensor.array_api as xp
    >>> print(xp.bitwise_invert(xp.asarray([0, 5], dtype=xp.int8)))
    [-1, -6]
    >>> print(xp.bitwise_invert(xp.asarray([True])))
    [false]
    """
    x = arr(x, "bitwise_invert")
    return unary_op("logical_not" if x._dtype is D.bool else "bitwise_not", x, "bitwise_invert")


def round(x: Tensor, /) -> Tensor:  # noqa: A001
    """Round to the nearest integer-valued number, halves to even (the standard's round).

    Complex input rounds the real and imaginary parts separately; integer input is returned as a copy.

    >>> import runetensor.array_api as xp
    >>> print(xp.round(xp.asarray([0.5, 1.5, 2.5, -0.5, -1.7])))
    [0, 2, 2, -0, -2]
    """
    x = arr(x, "round")
    if x._dtype.kind == "c":
        be = x._backend
        re = be.unary("rint", be.unary("real", x._data))
        im = be.unary("rint", be.unary("imag", x._data))
        out = be.binary("add", be.cast(re, x._dtype), be.binary("mul", be.cast(im, x._dtype), 1j))
        return wrap(out, x._dtype, be)
    return unary_op("rint", x, "round")


def sign(x: Tensor, /) -> Tensor:
    """Sign of each element: -1, 0 or 1 for reals (``sign(-0.0)`` is ``+0.0``, the standard's ``0``),
    x/|x| for complex.

    NaN gives NaN; a complex zero gives 0.  The same primitive as ``rt.sign``.

    >>> import runetensor.array_api as xp
    >>> print(xp.sign(xp.asarray([-3.0, -0.0, 2.0, float('nan')])))
    [-1, 0, 1, nan]
    >>> print(xp.sign(xp.asarray([3+4j, 0j])))
    [0.6+0.8i, 0+0i]
    """
    return unary_op("sign", arr(x, "sign"), "sign")


def positive(x: Tensor, /) -> Tensor:
    """+x: a copy of ``x``.

    Raises:
        TypeError: for bool input (not numeric).

    >>> import runetensor.array_api as xp
    >>> print(xp.positive(xp.asarray([-1, 2])))
    [-1, 2]
    """
    x = arr(x, "positive")
    if x._dtype is D.bool:
        raise TypeError("positive: not defined for bool arrays; expected a numeric dtype")
    return wrap(x._backend.copy(x._data), x._dtype, x._backend)


def reciprocal(x: Tensor, /) -> Tensor:
    """1 / x, elementwise (integer input gives the default float).

    >>> import runetensor.array_api as xp
    >>> print(xp.reciprocal(xp.asarray([2.0, 0.0, -4.0])))
    [0.5, inf, -0.25]
    """
    x = arr(x, "reciprocal")
    if x._dtype.kind in "fc":
        return unary_op("recip", x, "reciprocal")
    return binary_op("truediv", 1, x, "reciprocal")


def _bound(x: Tensor, v: Any, which: str) -> Any:
    """A clip bound suited to ``x``'s dtype: integer scalars are clamped to the dtype's range."""
    d = x._dtype
    if v is None:
        return None
    if isinstance(v, Tensor):
        if v._dtype is not d:
            pd = promote([x, v], "clip")
            if pd is not d and not (d.kind in "iu" and v._dtype.kind in "iu"):
                raise TypeError(f"clip: {which} of dtype {v._dtype} does not match x's dtype {d}")
            v = cast(v, pd)
        return v
    if not isinstance(v, PY_SCALARS):
        v = arr(v, "clip")
        return _bound(x, v, which)
    if d.kind in "iu":
        if isinstance(v, builtins.float):
            raise TypeError(f"clip: float {which} {v!r} with integer array of dtype {d}")
        info = iinfo(d)
        return builtins.min(builtins.max(builtins.int(v), info.min), info.max)
    if d.kind == "f" and isinstance(v, builtins.complex):
        raise TypeError(f"clip: complex {which} {v!r} with real array of dtype {d}")
    return v


def clip(x: Tensor, /, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clamp each element to ``[min, max]``.

    Args:
        x: a real array.
        min, max: lower and upper bounds: None (no bound), a Python scalar or an
            array broadcastable with ``x``.  Integer scalars outside ``x``'s dtype
            range are clamped to it.  NaN in ``x`` or a bound gives NaN.
    Returns:
        An array of ``x``'s dtype (and the broadcast shape).
    Raises:
        TypeError: for complex ``x``, or a bound of another kind (a float bound for an integer array).

    >>> import runetensor.array_api as xp
    >>> print(xp.clip(xp.asarray([-5, 0, 5, 10]), 0, 6))
    [0, 0, 5, 6]
    >>> print(xp.clip(xp.asarray([1, 100], dtype=xp.int8), min=-1000, max=50))
    [1, 50]
    """
    x = arr(x, "clip")
    if x._dtype.kind == "c":
        raise TypeError(f"clip: not defined for complex arrays ({x._dtype})")
    r = E._clamp(x, _bound(x, min, "min"), _bound(x, max, "max"), "clip")
    if r._dtype is not x._dtype:
        r = wrap(r._backend.cast(r._data, x._dtype), x._dtype, r._backend)
    return r
