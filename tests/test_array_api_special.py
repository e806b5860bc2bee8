"""The special cases the Array API standard (2024.12) lists for its elementwise functions, as a table.

Each row is ``(function, operands, expected)``; every row runs for float32 and
float64 inputs and compares bit-for-bit in the sense that matters: NaN matches
NaN, and the sign of a zero must match.
"""
import math

import pytest

import runetensor.array_api as xp

inf = math.inf
nan = math.nan
pi = math.pi

# (function name, operands, expected result)
CASES = [
    # abs
    ("abs", (-0.0,), 0.0), ("abs", (-inf,), inf), ("abs", (nan,), nan), ("abs", (-2.5,), 2.5),
    # acos / acosh / asin / asinh / atan / atanh
    ("acos", (1.0,), 0.0), ("acos", (1.5,), nan), ("acos", (nan,), nan),
    ("acosh", (1.0,), 0.0), ("acosh", (0.5,), nan), ("acosh", (inf,), inf),
    ("asin", (0.0,), 0.0), ("asin", (-0.0,), -0.0), ("asin", (2.0,), nan),
    ("asinh", (-0.0,), -0.0), ("asinh", (inf,), inf), ("asinh", (-inf,), -inf),
    ("atan", (-0.0,), -0.0), ("atan", (inf,), pi / 2), ("atan", (-inf,), -pi / 2),
    ("atanh", (1.0,), inf), ("atanh", (-1.0,), -inf), ("atanh", (2.0,), nan), ("atanh", (-0.0,), -0.0),
    # atan2
    ("atan2", (0.0, 0.0), 0.0), ("atan2", (0.0, -0.0), pi), ("atan2", (-0.0, -0.0), -pi),
    ("atan2", (-0.0, 0.0), -0.0), ("atan2", (0.0, -1.0), pi), ("atan2", (-0.0, -1.0), -pi),
    ("atan2", (1.0, 0.0), pi / 2), ("atan2", (-1.0, -0.0), -pi / 2), ("atan2", (inf, inf), pi / 4),
    ("atan2", (-inf, -inf), -3 * pi / 4), ("atan2", (1.0, inf), 0.0), ("atan2", (1.0, -inf), pi),
    ("atan2", (-1.0, inf), -0.0), ("atan2", (nan, 1.0), nan),
    # ceil / floor / trunc / round
    ("ceil", (-0.5,), -0.0), ("ceil", (inf,), inf), ("ceil", (nan,), nan), ("ceil", (-0.0,), -0.0),
    ("floor", (0.5,), 0.0), ("floor", (-0.0,), -0.0), ("floor", (-inf,), -inf),
    ("trunc", (-0.5,), -0.0), ("trunc", (1.7,), 1.0), ("trunc", (-inf,), -inf),
    ("round", (0.5,), 0.0), ("round", (1.5,), 2.0), ("round", (2.5,), 2.0), ("round", (-0.5,), -0.0),
    ("round", (-2.5,), -2.0), ("round", (inf,), inf), ("round", (nan,), nan), ("round", (-0.0,), -0.0),
    # cos / cosh / sin / sinh / tan / tanh
    ("cos", (0.0,), 1.0), ("cos", (-0.0,), 1.0), ("cos", (inf,), nan),
    ("cosh", (-0.0,), 1.0), ("cosh", (-inf,), inf),
    ("sin", (-0.0,), -0.0), ("sin", (inf,), nan), ("sinh", (-0.0,), -0.0), ("sinh", (-inf,), -inf),
    ("tan", (-0.0,), -0.0), ("tan", (-inf,), nan), ("tanh", (inf,), 1.0), ("tanh", (-inf,), -1.0),
    ("tanh", (-0.0,), -0.0),
    # exp / expm1 / log / log1p / log2 / log10
    ("exp", (-inf,), 0.0), ("exp", (inf,), inf), ("exp", (-0.0,), 1.0), ("exp", (nan,), nan),
    ("expm1", (-0.0,), -0.0), ("expm1", (-inf,), -1.0), ("expm1", (inf,), inf),
    ("log", (-1.0,), nan), ("log", (0.0,), -inf), ("log", (-0.0,), -inf), ("log", (1.0,), 0.0),
    ("log", (inf,), inf),
    ("log1p", (-1.0,), -inf), ("log1p", (-2.0,), nan), ("log1p", (-0.0,), -0.0), ("log1p", (inf,), inf),
    ("log2", (0.0,), -inf), ("log2", (1.0,), 0.0), ("log2", (-1.0,), nan),
    ("log10", (-0.0,), -inf), ("log10", (1.0,), 0.0), ("log10", (-3.0,), nan),
    # sqrt / square / sign / signbit
    ("sqrt", (-1.0,), nan), ("sqrt", (-0.0,), -0.0), ("sqrt", (inf,), inf), ("sqrt", (-inf,), nan),
    ("square", (-0.0,), 0.0), ("square", (-inf,), inf),
    ("sign", (-0.0,), 0.0), ("sign", (0.0,), 0.0), ("sign", (nan,), nan), ("sign", (-inf,), -1.0),
    ("sign", (3.0,), 1.0),
    ("signbit", (-0.0,), True), ("signbit", (0.0,), False), ("signbit", (-inf,), True),
    ("signbit", (-nan,), True), ("signbit", (nan,), False),
    # predicates
    ("isnan", (nan,), True), ("isinf", (-inf,), True), ("isfinite", (inf,), False),
    ("isfinite", (-0.0,), True),
    # add / subtract / multiply
    ("add", (inf, -inf), nan), ("add", (-0.0, -0.0), -0.0), ("add", (-0.0, 0.0), 0.0),
    ("add", (inf, 1.0), inf), ("add", (nan, 1.0), nan),
    ("subtract", (inf, inf), nan), ("subtract", (-0.0, 0.0), -0.0), ("subtract", (0.0, 0.0), 0.0),
    ("multiply", (0.0, inf), nan), ("multiply", (-0.0, 1.0), -0.0), ("multiply", (-inf, -2.0), inf),
    # divide
    ("divide", (inf, -inf), nan), ("divide", (0.0, -0.0), nan), ("divide", (0.0, 2.0), 0.0),
    ("divide", (-0.0, 2.0), -0.0), ("divide", (0.0, -2.0), -0.0), ("divide", (-0.0, -2.0), 0.0),
    ("divide", (1.0, 0.0), inf), ("divide", (1.0, -0.0), -inf), ("divide", (-1.0, 0.0), -inf),
    ("divide", (-1.0, -0.0), inf), ("divide", (inf, 2.0), inf), ("divide", (-inf, 2.0), -inf),
    ("divide", (2.0, inf), 0.0), ("divide", (2.0, -inf), -0.0), ("divide", (-2.0, inf), -0.0),
    # floor_divide (the standard's cases, where NumPy differs for infinities)
    ("floor_divide", (inf, 2.0), inf), ("floor_divide", (inf, -2.0), -inf),
    ("floor_divide", (-inf, 2.0), -inf), ("floor_divide", (-inf, -2.0), inf),
    ("floor_divide", (1.0, -inf), -0.0), ("floor_divide", (-1.0, inf), -0.0),
    ("floor_divide", (1.0, inf), 0.0), ("floor_divide", (-1.0, -inf), 0.0),
    ("floor_divide", (inf, inf), nan), ("floor_divide", (0.0, 0.0), nan), ("floor_divide", (nan, 1.0), nan),
    ("floor_divide", (1.0, 0.0), inf), ("floor_divide", (-1.0, 0.0), -inf), ("floor_divide", (7.0, 2.0), 3.0),
    ("floor_divide", (-7.0, 2.0), -4.0), ("floor_divide", (-0.0, 2.0), -0.0),
    # remainder (sign of the divisor, as Python)
    ("remainder", (1.0, 0.0), nan), ("remainder", (inf, 1.0), nan), ("remainder", (inf, inf), nan),
    ("remainder", (1.0, inf), 1.0), ("remainder", (-1.0, inf), inf), ("remainder", (1.0, -inf), -inf),
    ("remainder", (-1.0, -inf), -1.0), ("remainder", (0.0, 1.0), 0.0), ("remainder", (-0.0, 1.0), 0.0),
    ("remainder", (0.0, -1.0), -0.0), ("remainder", (5.0, -3.0), -1.0), ("remainder", (-5.0, 3.0), 1.0),
    # pow
    ("pow", (nan, 0.0), 1.0), ("pow", (nan, -0.0), 1.0), ("pow", (nan, 1.0), nan), ("pow", (2.0, nan), nan),
    ("pow", (2.0, inf), inf), ("pow", (0.5, inf), 0.0), ("pow", (2.0, -inf), 0.0), ("pow", (0.5, -inf), inf),
    ("pow", (-1.0, inf), 1.0), ("pow", (-1.0, -inf), 1.0), ("pow", (inf, 1.0), inf), ("pow", (inf, -1.0), 0.0),
    ("pow", (0.0, 1.0), 0.0), ("pow", (0.0, -1.0), inf), ("pow", (-inf, 3.0), -inf), ("pow", (-inf, 2.0), inf),
    ("pow", (-inf, -3.0), -0.0), ("pow", (-inf, -2.0), 0.0), ("pow", (-0.0, 3.0), -0.0), ("pow", (-0.0, 2.0), 0.0),
    ("pow", (-0.0, -3.0), -inf), ("pow", (-0.0, -2.0), inf), ("pow", (-2.0, 0.5), nan),
    # hypot / copysign / nextafter / logaddexp
    ("hypot", (inf, nan), inf), ("hypot", (nan, -inf), inf), ("hypot", (nan, 1.0), nan),
    ("hypot", (-0.0, -0.0), 0.0), ("hypot", (3.0, -4.0), 5.0),
    ("copysign", (1.0, -0.0), -1.0), ("copysign", (-1.0, 0.0), 1.0), ("copysign", (inf, -1.0), -inf),
    ("copysign", (-0.0, 1.0), 0.0), ("copysign", (nan, 1.0), nan),
    ("nextafter", (1.0, 1.0), 1.0), ("nextafter", (nan, 1.0), nan), ("nextafter", (1.0, nan), nan),
    ("nextafter", (-0.0, 0.0), 0.0), ("nextafter", (0.0, -0.0), -0.0),
    ("logaddexp", (nan, 1.0), nan), ("logaddexp", (inf, 1.0), inf), ("logaddexp", (1.0, inf), inf),
    ("logaddexp", (-inf, -inf), -inf), ("logaddexp", (0.0, 0.0), math.log(2.0)),
    # maximum / minimum propagate NaN
    ("maximum", (nan, 1.0), nan), ("maximum", (1.0, nan), nan), ("maximum", (-inf, 1.0), 1.0),
    ("minimum", (nan, 1.0), nan), ("minimum", (1.0, nan), nan), ("minimum", (inf, 1.0), 1.0),
    # comparisons with NaN
    ("equal", (nan, nan), False), ("not_equal", (nan, nan), True), ("less", (nan, 1.0), False),
    ("greater_equal", (nan, nan), False), ("equal", (-0.0, 0.0), True),
    # reciprocal
    ("reciprocal", (0.0,), inf), ("reciprocal", (-0.0,), -inf), ("reciprocal", (inf,), 0.0),
    ("reciprocal", (-inf,), -0.0),
]


def _same(got, want):
    if isinstance(want, bool):
        return got is want
    if math.isnan(want):
        return math.isnan(got)
    if want == 0.0:
        return got == 0.0 and math.copysign(1.0, got) == math.copysign(1.0, want)
    if math.isinf(want):
        return got == want
    return math.isclose(got, want, rel_tol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,args,want", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_special_case(name, args, want, dtype):
    d = getattr(xp, dtype)
    fn = getattr(xp, name)
    r = fn(*[xp.asarray(a, dtype=d) for a in args])
    if not isinstance(want, bool):
        assert r.dtype is d
    assert _same(r.item() if hasattr(r, "item") else r._scalar(), want), (name, args, r)


@pytest.mark.parametrize("name,args,want", [c for c in CASES if len(c[1]) == 2],
                         ids=[f"{c[0]}{c[1]}" for c in CASES if len(c[1]) == 2])
def test_special_case_scalar_operand(name, args, want):
    """The binary cases hold with a Python scalar on either side (2024.12 scalar arguments)."""
    a, b = args
    r1 = getattr(xp, name)(xp.asarray(a), b)
    r2 = getattr(xp, name)(a, xp.asarray(b))
    assert _same(r1._scalar(), want) and _same(r2._scalar(), want)


# complex special cases (C99 Annex G, as the standard lists them)
COMPLEX_CASES = [
    ("sign", 0j, 0j), ("sign", complex(3, 4), complex(0.6, 0.8)), ("sign", complex(0, -2), complex(0, -1)),
    ("abs", complex(inf, nan), inf), ("abs", complex(nan, -inf), inf), ("abs", complex(3, -4), 5.0),
    ("exp", 0j, 1 + 0j), ("sqrt", complex(-1, 0), 1j), ("sqrt", complex(0, 0), 0j),
    ("log", complex(1, 0), 0j), ("conj", complex(1, 2), complex(1, -2)),
    ("round", complex(2.5, -1.5), complex(2, -2)), ("real", complex(1, 2), 1.0), ("imag", complex(1, 2), 2.0),
    ("isnan", complex(nan, 0), True), ("isinf", complex(0, -inf), True), ("isfinite", complex(1, 2), True),
    # expm1: the standard's table (2024.12); NumPy's loop differs at zeros, infinities and NaNs
    ("expm1", complex(0, 0), 0j), ("expm1", complex(-0.0, 0), 0j), ("expm1", complex(0, -0.0), complex(0, -0.0)),
    ("expm1", complex(1, inf), complex(nan, nan)), ("expm1", complex(1, nan), complex(nan, nan)),
    ("expm1", complex(inf, 0), complex(inf, 0)), ("expm1", complex(inf, -0.0), complex(inf, -0.0)),
    ("expm1", complex(-inf, 1), complex(-1, 0)), ("expm1", complex(-inf, -1), complex(-1, -0.0)),
    ("expm1", complex(inf, 1), complex(inf, inf)), ("expm1", complex(inf, 2), complex(-inf, inf)),
    ("expm1", complex(-inf, inf), complex(-1, 0)), ("expm1", complex(-inf, nan), complex(-1, 0)),
    ("expm1", complex(inf, inf), complex(inf, nan)), ("expm1", complex(inf, nan), complex(inf, nan)),
    ("expm1", complex(nan, 0), complex(nan, 0)), ("expm1", complex(nan, -0.0), complex(nan, -0.0)),
    ("expm1", complex(nan, 1), complex(nan, nan)), ("expm1", complex(nan, nan), complex(nan, nan)),
]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name,arg,want", COMPLEX_CASES, ids=[f"{c[0]}{c[1]}" for c in COMPLEX_CASES])
def test_complex_special_case(name, arg, want, dtype):
    r = getattr(xp, name)(xp.asarray(arg, dtype=getattr(xp, dtype)))
    got = r._scalar()
    if isinstance(want, bool):
        assert got is want
    elif isinstance(want, complex):
        assert _same(got.real, want.real) and _same(got.imag, want.imag), (name, arg, got)
    else:
        assert _same(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floordiv_operator_infinities(dtype):
    """``//`` and ``//=`` (one primitive with ``xp.floor_divide`` and ``rt``'s ``//``): ``floor(x1 / x2)``
    where an operand is infinite, the standard's cases; NumPy gives NaN and -1 there."""
    d = getattr(xp, dtype)
    a = xp.asarray([inf, inf, -inf, -inf, 1.0, -1.0, 1.0, -1.0, inf, 7.0], dtype=d)
    b = xp.asarray([2.0, -2.0, 2.0, -2.0, -inf, inf, inf, -inf, inf, -2.0], dtype=d)
    want = [inf, -inf, -inf, inf, -0.0, -0.0, 0.0, 0.0, nan, -4.0]
    for r in (a // b, xp.floor_divide(a, b)):
        assert all(_same(float(r[i]), w) for i, w in enumerate(want))
    c = xp.asarray(a, copy=True)
    c //= b
    assert all(_same(float(c[i]), w) for i, w in enumerate(want))
    assert _same(float((a // 2.0)[0]), inf) and _same(float((1.0 // b)[4]), -0.0)
