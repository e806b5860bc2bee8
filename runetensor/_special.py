"""Special functions of the main namespace (as Nx has them): error functions, sigmoid, relu,
log-sum-exp and softmax, standardize, one_hot, sinc, nan_to_num, complex parts and angle.

Every function here is built from runetensor operations, so ``rt.grad``/``rt.jvp`` see through it.
The numerically delicate ones are written in stable forms:

* ``logsumexp``/``softmax``/``log_softmax`` subtract the maximum, taken through
  ``rt.stop_gradient`` (the shift cancels exactly, so the derivative is exact and does not depend
  on the tie rule of ``max``);
* ``sigmoid`` exponentiates ``-|x|`` only (no overflow, full relative accuracy for very negative x);
* ``erfc`` is ``1 - erf(x)`` below 1.5 and a continued fraction times ``exp(-x**2)`` above (full
  relative accuracy down to the underflow near x = 26.5); its derivative is given by ``custom_vjp``.

Low-precision floats (float16, bfloat16, float8) are computed in float32 and rounded back once;
integer and bool inputs give float64 (the default float), as the other float functions of rt.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from . import _dtypes as D
from ._autodiff import custom_vjp, stop_gradient
from ._dtypes import DType
from ._elementwise import conjugate as conj
from ._elementwise import atan2, exp, isfinite, isinf, isnan, log, sin, sqrt, where
from ._reduction import max as rmax
from ._reduction import mean, sum as rsum, var
from ._tensor import _PY_SCALARS, Tensor, as_tensor, binary_op, unary_op
from ._validate import as_dtype, as_int, normalize_axes
from ._creation import arange
from ._views import copy, expand_dims, moveaxis, reshape

__all__ = ["erf", "erfc", "log1p", "expm1", "sigmoid", "relu", "logaddexp", "logaddexp2", "logsumexp", "logmeanexp",
           "softmax", "log_softmax", "standardize", "one_hot", "sinc", "nan_to_num", "real", "imag", "conj", "angle"]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _real_float(t: Any, fname: str) -> tuple[Tensor, DType]:
    """``(x, out_dtype)``: ``t`` as a real float tensor to compute with (float32 for low-precision
    floats, float64 for integers and bool) and the dtype the result is rounded back to."""
    t = as_tensor(t, fname)
    d = t.dtype
    if d.kind in "biu":
        return t.astype(D.float64), D.float64
    if d.is_complex:
        raise TypeError(f"{fname}: complex input is not supported (got a {d} tensor); "
                        f"apply it to rt.real/rt.imag or rt.abs of the tensor")
    if not d.is_float:
        raise TypeError(f"{fname}: expected a numeric tensor, got dtype {d}")
    if d.is_low_precision:
        return t.astype(D.float32), d
    return t, d


def _real_keep_int(t: Any, fname: str) -> Tensor:
    """``t`` as a tensor of a real integer or float dtype (kept as is; bool and complex raise)."""
    t = as_tensor(t, fname)
    if t.dtype.kind in "bc":
        raise TypeError(f"{fname}: expected a real numeric tensor, got dtype {t.dtype}")
    return t


def _back(r: Tensor, d: DType) -> Tensor:
    return r if r.dtype is d else r.astype(d)


def _axes(x: Tensor, axes: Any, fname: str) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(x.ndim))
    return normalize_axes(axes, x.ndim, fname)


def _squeeze(r: Tensor, shape: tuple[int, ...], ax: tuple[int, ...]) -> Tensor:
    return reshape(r, [n for i, n in enumerate(shape) if i not in ax])


def _value_range(t: Tensor) -> tuple[Any, Any] | None:
    """``(min, max)`` of a real tensor's values as Python scalars (None if empty): the backend's
    validating read, which also works under transformations (over every lane under vmap)."""
    return t._backend.value_range(t._data)


def _scalar_float(v: Any, fname: str, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
        raise TypeError(f"{fname}: {what} must be a real number, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: {what} must be a real number, got {v!r}") from None
    return f


# ---------------------------------------------------------------------------
# error functions, log1p, expm1
# ---------------------------------------------------------------------------
def erf(t: Any) -> Tensor:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-u**2) du``, element-wise.

    Args:
        t: a real tensor (integers and bool give float64).
    Returns:
        A new float tensor of the same shape.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.erf(rt.create(rt.float64, [3], [0., 0.5, -2.])))
    [0, 0.5205, -0.995322]
    """
    x, d = _real_float(t, "erf")
    return _back(unary_op("erf", x, "erf"), d)


_T_ERFC = 1.5      # below: 1 - erf(x) (relative error < 2e-15); above: the continued fraction
_CF_TERMS = 80     # enough for double precision at x >= 1.5 (fewer terms are needed further out)
_RSQRT_PI = 1.0 / math.sqrt(math.pi)


def _erfc_value(x: Tensor) -> Tensor:
    """erfc of a float32/float64 tensor, computed in float64 (no derivative: see ``erfc``)."""
    d = x.dtype
    x = x.astype(D.float64) if d is not D.float64 else x
    small = x < _T_ERFC
    lo = 1.0 - unary_op("erf", x, "erfc")
    # the continued fraction only sees 1.5 <= x <= 30 (no 0 divisors; erfc(30) underflows to 0, +inf too)
    xc = where(small, _T_ERFC, where(x > 30.0, 30.0, x))
    # erfc(x) = exp(-x**2) / sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
    f = xc
    for k in range(_CF_TERMS, 0, -1):
        f = xc + (0.5 * k) / f
    # exp(-x**2) with x**2 split as xh**2 + (x - xh)(x + xh): xh = x rounded to 1/16 squares exactly
    xh = unary_op("trunc", xc * 16.0, "erfc") / 16.0
    e = exp(-(xh * xh)) * exp(-((xc - xh) * (xc + xh)))
    hi = e * _RSQRT_PI / f
    r = where(small, lo, hi)
    return r if d is D.float64 else r.astype(d)


@custom_vjp
def _erfc(x: Tensor) -> Tensor:
    return _erfc_value(x)


def _erfc_fwd(x: Tensor) -> tuple[Tensor, Tensor]:
    return _erfc_value(x), x


def _erfc_bwd(x: Tensor, g: Tensor) -> tuple[Tensor]:
    return (g * (exp(-(x * x)) * (-2.0 * _RSQRT_PI)),)


_erfc.defvjp(_erfc_fwd, _erfc_bwd)


def erfc(t: Any) -> Tensor:
    """The complementary error function ``1 - erf(x)``, accurate in relative terms for large x.

    ``1 - erf(x)`` would lose every digit for x above ~6 (erfc(10) = 2.1e-45); here x >= 1.5
    uses a continued fraction times ``exp(-x**2)`` (computed in float64 with the square split
    exactly), so the relative error stays at a few ulps down to the underflow near x = 26.5.
    Its derivative ``-2/sqrt(pi) exp(-x**2)`` is exact, in both modes and to any order.

    Args:
        t: a real tensor (integers and bool give float64).
    Returns:
        A new float tensor of the same shape.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.erfc(rt.create(rt.float64, [4], [0., 1., -1., 10.])))
    [1, 0.157299, 1.8427, 2.08849e-45]
    """
    x, d = _real_float(t, "erfc")
    return _back(_erfc(x), d)


def log1p(t: Any) -> Tensor:
    """``log(1 + x)``, accurate for small ``x``.

    Args:
        t: a tensor (integers and bool give float64; complex is accepted).
    Returns:
        A new float tensor.

    >>> import runetensor as rt
    >>> print(rt.log1p(rt.create(rt.float64, [3], [0., 1e-10, -0.5])))
    [0, 1e-10, -0.693147]
    """
    return unary_op("log1p", t, "log1p")


def expm1(t: Any) -> Tensor:
    """``exp(x) - 1``, accurate for small ``x``.

    Args:
        t: a tensor (integers and bool give float64; complex is accepted).
    Returns:
        A new float tensor.

    >>> import runetensor as rt
    >>> print(rt.expm1(rt.create(rt.float64, [3], [0., 1e-10, 1.])))
    [0, 1e-10, 1.71828]
    """
    return unary_op("expm1", t, "expm1")


# ---------------------------------------------------------------------------
# sigmoid, relu, logaddexp
# ---------------------------------------------------------------------------
def _sigmoid(x: Tensor) -> Tensor:
    pos = x >= 0
    e = exp(where(pos, -x, x))            # exp(-|x|) <= 1: never overflows
    r = 1.0 / (1.0 + e)
    return where(pos, r, e * r)


def sigmoid(t: Any) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))``, element-wise, without overflow.

    Only ``exp(-|x|)`` is computed, so large ``|x|`` neither overflows nor loses the tiny values
    of very negative ``x`` (``sigmoid(-40) = 4.25e-18``, not 0).

    Args:
        t: a real tensor (integers and bool give float64).
    Returns:
        A new float tensor of the same shape.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.sigmoid(rt.create(rt.float64, [4], [0., 2., -40., 1000.])))
    [0.5, 0.880797, 4.24835e-18, 1]
    """
    x, d = _real_float(t, "sigmoid")
    return _back(_sigmoid(x), d)


def relu(t: Any) -> Tensor:
    """The rectified linear unit ``max(x, 0)``, element-wise (NaN stays NaN).

    Its derivative is 1 for ``x > 0`` and 0 for ``x <= 0`` (0 at the kink, as PyTorch and JAX).

    Args:
        t: a real tensor (integer dtypes are kept).
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        TypeError: for complex or bool input.

    >>> import runetensor as rt
    >>> print(rt.relu(rt.create(rt.float32, [3], [-1., 0., 2.5])))
    [0, 0, 2.5]
    """
    t = _real_keep_int(t, "relu")
    return where(t <= 0, 0, t)


def logaddexp(t1: Any, t2: Any) -> Tensor:
    """``log(exp(t1) + exp(t2))`` without overflow, with broadcasting.

    Args:
        t1, t2: real tensors (or Python scalars); integers give float64.
    Returns:
        A new float tensor of the broadcast shape.
    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.logaddexp(rt.create(rt.float64, [3], [0., 1000., -1000.]), 0.))
    [0.693147, 1000, 0]
    """
    return binary_op("logaddexp", t1, t2, "logaddexp")


_LN2 = math.log(2.0)


def logaddexp2(t1: Any, t2: Any) -> Tensor:
    """``log2(2**t1 + 2**t2)`` without overflow, with broadcasting.

    Computed as ``logaddexp(t1 * ln 2, t2 * ln 2) / ln 2`` (exact for infinities; NaN propagates).

    Args:
        t1, t2: real tensors (or Python scalars); integers and bool give float64.
    Returns:
        A new float tensor of the broadcast shape and the promoted dtype.
    Raises:
        ValueError: if the shapes cannot be broadcast together.
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> print(rt.logaddexp2(rt.create(rt.float64, [3], [1., 1000., -1000.]), 1.))
    [2, 1000, 1]
    """
    fname = "logaddexp2"
    ops: list[Any] = []
    outs: list[DType] = []
    for v in (t1, t2):
        if isinstance(v, Tensor) or type(v) not in _PY_SCALARS:
            x, d = _real_float(v, fname)
            ops.append(x)
            outs.append(d)
        elif isinstance(v, complex):
            raise TypeError(f"{fname}: complex input is not supported (got {v!r})")
        else:
            ops.append(float(v))
    if not outs:
        ops, outs = [as_tensor(ops[0], fname, dtype=D.float64), ops[1]], [D.float64]
    out_d = D.result_type(*outs)
    r = binary_op("logaddexp", ops[0] * _LN2, ops[1] * _LN2, fname) * (1.0 / _LN2)
    return _back(r, out_d)


def _softplus_t(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` of a float tensor, stably (``logaddexp(x, 0)``); for ``runetensor.nn``."""
    return binary_op("logaddexp", x, 0.0, "softplus")


# ---------------------------------------------------------------------------
# log-sum-exp, softmax
# ---------------------------------------------------------------------------
def _shift(x: Tensor, ax: tuple[int, ...]) -> Tensor:
    """The per-slice maximum as a constant (non-finite maxima replaced by 0), keepdims."""
    m = stop_gradient(rmax(stop_gradient(x), ax, keepdims=True))
    return where(isfinite(m), m, 0.0)


def _lse_keep(x: Tensor, ax: tuple[int, ...]) -> Tensor:
    m = _shift(x, ax)
    return log(rsum(exp(x - m), ax, keepdims=True)) + m


def _check_scale(scale: Any, fname: str) -> float:
    s = _scalar_float(scale, fname, "scale")
    if not math.isfinite(s):
        raise ValueError(f"{fname}: scale must be finite, got {scale!r}")
    return s


def logsumexp(t: Any, axes: Sequence[int] | int | None = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(t)))`` over ``axes`` (all by default), computed stably.

    The maximum is subtracted before exponentiating and added back; it is taken through
    ``rt.stop_gradient`` (the shift cancels), so the gradient is exactly ``softmax(t)``.
    An empty reduction gives ``-inf``.

    Args:
        t: a real tensor (integers give float64).
        axes: axes to reduce (an int or a sequence; None for all).
        keepdims: keep the reduced axes with size 1.
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.
        IndexError: if an axis is out of range.
        ValueError: if an axis repeats.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float64, [2, 2], [0., 0., 1000., 1000.])
    >>> print(rt.logsumexp(x, axes=[1]))
    [0.693147, 1000.69]
    """
    x, d = _real_float(t, "logsumexp")
    ax = _axes(x, axes, "logsumexp")
    if any(x.shape[a] == 0 for a in ax):
        shape = [1 if i in ax else n for i, n in enumerate(x.shape)]
        r = rsum(x, ax, keepdims=True) + float("-inf")  # -inf, differentiable (zero cotangent)
        r = reshape(r, shape)
    else:
        r = _lse_keep(x, ax)
    return _back(r if keepdims else _squeeze(r, x.shape, ax), d)


def logmeanexp(t: Any, axes: Sequence[int] | int | None = None, keepdims: bool = False) -> Tensor:
    """``log(mean(exp(t)))`` over ``axes`` (all by default): ``logsumexp(t) - log(N)``.

    Args:
        t: a real tensor (integers give float64).
        axes: axes to reduce (an int or a sequence; None for all).
        keepdims: keep the reduced axes with size 1.
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.
        ValueError: if a reduced axis is empty (the mean of nothing), or an axis repeats.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.logmeanexp(rt.create(rt.float64, [2], [1000., 1000.])))
    1000
    """
    x, d = _real_float(t, "logmeanexp")
    ax = _axes(x, axes, "logmeanexp")
    n = 1
    for a in ax:
        n *= x.shape[a]
    if n == 0:
        raise ValueError(f"logmeanexp: cannot average over an empty set (shape {x.shape}, axes {ax})")
    r = _lse_keep(x, ax) - math.log(n)
    return _back(r if keepdims else _squeeze(r, x.shape, ax), d)


def softmax(t: Any, axes: Sequence[int] | int = (-1,), scale: float = 1.0) -> Tensor:
    """``exp(s x) / sum(exp(s x))`` over ``axes`` with ``s = scale``, computed stably.

    Args:
        t: a real tensor (integers give float64).
        axes: the axes normalised over (default: the last one).
        scale: a finite factor applied to ``t`` first (an inverse temperature).
    Returns:
        A new float tensor of ``t``'s shape whose slices along ``axes`` sum to 1.
    Raises:
        TypeError: for complex input or a non-number scale.
        ValueError: if ``scale`` is not finite, or an axis repeats.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.softmax(rt.create(rt.float64, [3], [1., 2., 1000.])))
    [0, 0, 1]
    >>> print(rt.softmax(rt.create(rt.float64, [2], [0., 1.]), scale=0.))
    [0.5, 0.5]
    """
    x, d = _real_float(t, "softmax")
    s = _check_scale(scale, "softmax")
    ax = _axes(x, axes, "softmax")
    if s != 1.0:
        x = x * s
    e = exp(x - _shift(x, ax))
    return _back(e / rsum(e, ax, keepdims=True), d)


def log_softmax(t: Any, axes: Sequence[int] | int = (-1,), scale: float = 1.0) -> Tensor:
    """``log(softmax(t, axes, scale))``, computed as ``s x - logsumexp(s x)`` (stable).

    Args:
        t: a real tensor (integers give float64).
        axes: the axes normalised over (default: the last one).
        scale: a finite factor applied to ``t`` first.
    Returns:
        A new float tensor of ``t``'s shape.
    Raises:
        TypeError: for complex input or a non-number scale.
        ValueError: if ``scale`` is not finite, or an axis repeats.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.log_softmax(rt.create(rt.float64, [2], [0., 1000.])))
    [-1000, 0]
    """
    x, d = _real_float(t, "log_softmax")
    s = _check_scale(scale, "log_softmax")
    ax = _axes(x, axes, "log_softmax")
    if s != 1.0:
        x = x * s
    y = x - _shift(x, ax)
    return _back(y - log(rsum(exp(y), ax, keepdims=True)), d)


def standardize(t: Any, axes: Sequence[int] | int | None = None, eps: float = 1e-10) -> Tensor:
    """``(t - mean) / sqrt(var + eps)`` over ``axes`` (all by default), as Nx's ``standardize``.

    Args:
        t: a real tensor (integers give float64).
        axes: the axes the mean and (population) variance are taken over; None for all.
        eps: a non-negative number added to the variance.
    Returns:
        A new float tensor of ``t``'s shape.
    Raises:
        TypeError: for complex input.
        ValueError: if ``eps`` is negative or not finite, or an axis repeats.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.standardize(rt.create(rt.float64, [4], [1., 2., 3., 4.])))
    [-1.34164, -0.447214, 0.447214, 1.34164]
    """
    x, d = _real_float(t, "standardize")
    e = _scalar_float(eps, "standardize", "eps")
    if not (e >= 0 and math.isfinite(e)):
        raise ValueError(f"standardize: eps must be finite and >= 0, got {eps!r}")
    ax = _axes(x, axes, "standardize")
    m = mean(x, ax, keepdims=True)
    v = var(x, ax, keepdims=True)
    return _back((x - m) / sqrt(v + e), d)


def one_hot(t: Any, num_classes: int, dtype: Any = D.float32, axis: int = -1) -> Tensor:
    """One-hot encoding of integer labels: a new axis of size ``num_classes``.

    ``one_hot(t)[..., c] == (t == c)``; labels outside ``[0, num_classes)`` (negative ones
    included) give rows of zeros, as Nx.

    Args:
        t: an integer (or bool) tensor of labels.
        num_classes: the size of the new axis (>= 0).
        dtype: the result's dtype (default float32).
        axis: where the new axis goes in the result (default: last).
    Returns:
        A new tensor of shape ``t.shape`` with ``num_classes`` inserted at ``axis``.
    Raises:
        TypeError: if ``t`` is not an integer tensor, or ``num_classes`` not an integer.
        ValueError: if ``num_classes`` is negative.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.one_hot(rt.create(rt.int32, [3], [0, 2, 5]), 3))
    [[1, 0, 0],
     [0, 0, 1],
     [0, 0, 0]]
    """
    t = as_tensor(t, "one_hot")
    if t.dtype.kind not in "biu":
        raise TypeError(f"one_hot: labels must be an integer tensor, got dtype {t.dtype}")
    n = as_int(num_classes, "one_hot", "num_classes")
    if n < 0:
        raise ValueError(f"one_hot: num_classes must be >= 0, got {num_classes}")
    d = as_dtype(dtype, "one_hot")
    nd = t.ndim + 1
    a = normalize_axes([axis], nd, "one_hot", "axis")[0]
    # int64 labels (uint64 labels >= 2**63 wrap to negatives: out of range either way)
    lab = t if t.dtype is D.int64 else t.astype(D.int64)
    r = (expand_dims(lab, -1) == arange(D.int64, 0, n, 1)).astype(d)
    return r if a == nd - 1 else moveaxis(r, -1, a)


# ---------------------------------------------------------------------------
# sinc, nan_to_num
# ---------------------------------------------------------------------------
def sinc(t: Any) -> Tensor:
    """The normalised sinc function ``sin(pi x) / (pi x)``, with ``sinc(0) = 1``, element-wise.

    Near zero (``|x| < 1e-3``) it is the Taylor polynomial ``1 - (pi x)**2/6 + (pi x)**4/120``, so
    the value and the derivatives at 0 are right (``sinc'(0) = 0``); each branch sees only the
    inputs it is used for, so neither produces NaN derivatives for the other's elements.

    Args:
        t: a real or complex tensor; integers and bool give float64.
    Returns:
        A new float (or complex) tensor of the same shape.
    Raises:
        TypeError: for non-numeric input.

    >>> import runetensor as rt
    >>> print(rt.sinc(rt.create(rt.float64, [4], [0., 0.5, 1., -1.5])))
    [1, 0.63662, 3.89817e-17, -0.212207]
    """
    fname = "sinc"
    t = as_tensor(t, fname)
    d = t.dtype
    if d.kind in "biu":
        x, out_d = t.astype(D.float64), D.float64
    elif d.is_low_precision:
        x, out_d = t.astype(D.float32), d
    elif d.kind in "fc":
        x, out_d = t, d
    else:
        raise TypeError(f"{fname}: expected a numeric tensor, got dtype {d}")
    small = abs(x) < 1e-3
    y = where(small, x, 0.0) * math.pi
    y2 = y * y
    near = 1.0 + y2 * (y2 * (1.0 / 120.0) - 1.0 / 6.0)
    z = where(small, 1.0, x) * math.pi
    return _back(where(small, near, sin(z) / z), out_d)


# largest finite value of each real float dtype (nan_to_num's default replacement for +-inf)
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": (2 - 2.0 ** -7) * 2.0 ** 127, "float32": (2 - 2.0 ** -23) * 2.0 ** 127,
              "float64": (2 - 2.0 ** -52) * 2.0 ** 1023, "float8_e4m3": 448.0, "float8_e5m2": 57344.0}


def nan_to_num(x: Any, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """Replace NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (NumPy's ``nan_to_num``).

    Complex tensors have their real and imaginary parts treated separately; integer and bool tensors
    come back as a copy.  The derivative is 1 at kept elements and 0 at replaced ones.

    Args:
        x: a tensor.
        nan: the value for NaN (a real number).
        posinf: the value for +inf (a real number); None: the dtype's largest finite value.
        neginf: the value for -inf (a real number); None: the dtype's most negative finite value.
    Returns:
        A new tensor of ``x``'s dtype and shape.
    Raises:
        TypeError: if a replacement value is not a real number.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [4], [float("nan"), float("inf"), -float("inf"), 1.5])
    >>> print(rt.nan_to_num(x, posinf=9.))
    [0, 9, -3.40282e+38, 1.5]
    """
    fname = "nan_to_num"
    t = as_tensor(x, fname)
    vals = [None if v is None else _scalar_float(v, fname, what)
            for v, what in ((nan, "nan"), (posinf, "posinf"), (neginf, "neginf"))]
    d = t.dtype
    if d.kind in "biu":
        return copy(t)
    if d.is_complex:
        re = _finite_parts(real(t), vals)
        im = _finite_parts(imag(t), vals)
        return re.astype(d) + im.astype(d) * 1j
    if not d.is_float:
        raise TypeError(f"{fname}: expected a numeric tensor, got dtype {d}")
    return _finite_parts(t, vals)


def _finite_parts(t: Tensor, vals: list[float | None]) -> Tensor:
    mx = _FLOAT_MAX[t.dtype.name]
    nan, pos, neg = vals
    inf = isinf(t)
    r = where(isnan(t), nan, t)
    r = where(inf & (t > 0), mx if pos is None else pos, r)
    return where(inf & (t < 0), -mx if neg is None else neg, r)


# ---------------------------------------------------------------------------
# complex parts
# ---------------------------------------------------------------------------
def real(t: Any) -> Tensor:
    """The real part (of the matching real dtype); real tensors give a copy.

    Args:
        t: a tensor.
    Returns:
        A new tensor: float32 for complex64, float64 for complex128, ``t``'s dtype otherwise.

    >>> import runetensor as rt
    >>> print(rt.real(rt.create(rt.complex64, [2], [1+2j, 3-4j])))
    [1, 3]
    """
    return unary_op("real", t, "real")


def imag(t: Any) -> Tensor:
    """The imaginary part (of the matching real dtype); real tensors give zeros.

    Args:
        t: a tensor.
    Returns:
        A new tensor: float32 for complex64, float64 for complex128, ``t``'s dtype otherwise.

    >>> import runetensor as rt
    >>> print(rt.imag(rt.create(rt.complex64, [2], [1+2j, 3-4j])))
    [2, -4]
    """
    return unary_op("imag", t, "imag")


def angle(z: Any, deg: bool = False) -> Tensor:
    """The argument (phase angle) of each element, in ``(-pi, pi]`` (degrees with ``deg=True``).

    For real input it is 0 for non-negative values and pi for negative ones (and for -0.0), with
    derivative 0.

    Args:
        z: a tensor; integers and bool give float64.
        deg: return degrees instead of radians.
    Returns:
        A new real float tensor (float32 for complex64, float64 for complex128 and integers).
    Raises:
        TypeError: if ``deg`` is not a bool.

    >>> import runetensor as rt
    >>> print(rt.angle(rt.create(rt.complex128, [3], [1j, -1+0j, 1-1j]), deg=True))
    [90, 180, -45]
    """
    fname = "angle"
    if not isinstance(deg, bool):
        raise TypeError(f"{fname}: deg must be True or False, got {deg!r}")
    t = as_tensor(z, fname)
    d = t.dtype
    if d.is_complex:
        r = atan2(imag(t), real(t))
    else:
        x = t.astype(D.float64) if d.kind in "biu" else t
        if not x.dtype.is_float:
            raise TypeError(f"{fname}: expected a numeric tensor, got dtype {d}")
        r = stop_gradient(atan2(0.0, x))
    return r * (180.0 / math.pi) if deg else r
