"""Activation functions (element-wise unless stated), built from runetensor operations.

Conventions: float inputs keep their dtype (low-precision floats compute in float32 and round
back once); integer and bool inputs give float64, except ``relu``/``relu6``/``hard_tanh``, which
keep integer dtypes; complex input raises ``TypeError``.  Kinks take the derivative PyTorch uses
(``relu'(0) = 0``, ``leaky_relu'(0) = negative_slope``, ``elu'(0) = alpha``...).
"""
from __future__ import annotations

import math
from typing import Any

from .._elementwise import abs as rabs
from .._elementwise import clip, tanh, where
from .._special import _back, _real_float, _scalar_float, _sigmoid, _softplus_t as _softplus, erf, expm1
from .._special import _real_keep_int
from .._special import relu as _relu
from .._special import sigmoid as _rt_sigmoid
from .._tensor import Tensor
from .._validate import normalize_axis
from .._combine import split

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus",
           "softsign", "hard_sigmoid", "hard_tanh", "log_sigmoid", "glu", "sigmoid"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _num(v: Any, fname: str, what: str, positive: bool = False) -> float:
    f = _scalar_float(v, fname, what)
    if not math.isfinite(f) or (positive and f <= 0):
        raise ValueError(f"{fname}: {what} must be {'a positive' if positive else 'a'} finite number, got {v!r}")
    return f


def relu(x: Any) -> Tensor:
    """The rectified linear unit ``max(x, 0)`` (the same function as ``rt.relu``).

    Args:
        x: a real tensor (integer dtypes are kept).
    Returns:
        A new tensor of ``x``'s dtype; NaN stays NaN.
    Raises:
        TypeError: for complex or bool input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.relu(rt.create(rt.float32, [3], [-1., 0., 2.])))
    [0, 0, 2]
    """
    return _relu(x)


def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)``.

    Args:
        x: a real tensor (integer dtypes are kept).
    Returns:
        A new tensor of ``x``'s dtype.
    Raises:
        TypeError: for complex or bool input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.relu6(rt.create(rt.float32, [3], [-1., 3., 7.])))
    [0, 3, 6]
    """
    t = _real_keep_int(x, "relu6")
    return where(t <= 0, 0, where(t >= 6, 6, t))


def leaky_relu(x: Any, negative_slope: float = 0.01) -> Tensor:
    """``x`` for ``x > 0``, ``negative_slope * x`` otherwise.

    Args:
        x: a real tensor (integers give float64).
        negative_slope: the slope for ``x <= 0`` (a finite number).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input or a non-number slope.
        ValueError: for a non-finite slope.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.leaky_relu(rt.create(rt.float32, [2], [-2., 3.]), 0.1))
    [-0.2, 3]
    """
    s = _num(negative_slope, "leaky_relu", "negative_slope")
    t, d = _real_float(x, "leaky_relu")
    return _back(where(t > 0, t, t * s), d)


def _elu(t: Tensor, alpha: float, div: float | None = None) -> Tensor:
    """``x`` for ``x > 0``, ``alpha * expm1(x / div)`` otherwise (``div=None``: ``expm1(x)``)."""
    neg = where(t > 0, 0.0, t)  # the exponential never sees large x (no inf * 0 in derivatives)
    return where(t > 0, t, expm1(neg if div is None else neg / div) * alpha)


def elu(x: Any, alpha: float = 1.0) -> Tensor:
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        x: a real tensor (integers give float64).
        alpha: the saturation value for ``x -> -inf`` (a finite number).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input or a non-number alpha.
        ValueError: for a non-finite alpha.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.elu(rt.create(rt.float64, [2], [-1., 2.])))
    [-0.632121, 2]
    """
    a = _num(alpha, "elu", "alpha")
    t, d = _real_float(x, "elu")
    return _back(_elu(t, a), d)


def selu(x: Any) -> Tensor:
    """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalising constants
    ``alpha = 1.6732632...``, ``scale = 1.0507009...``.

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.selu(rt.create(rt.float64, [2], [-1., 1.])))
    [-1.11133, 1.0507]
    """
    t, d = _real_float(x, "selu")
    return _back(_elu(t, _SELU_ALPHA) * _SELU_SCALE, d)


def celu(x: Any, alpha: float = 1.0) -> Tensor:
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        x: a real tensor (integers give float64).
        alpha: a positive finite number.
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input or a non-number alpha.
        ValueError: if alpha is not positive and finite.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.celu(rt.create(rt.float64, [2], [-1., 1.]), alpha=2.))
    [-0.786939, 1]
    """
    a = _num(alpha, "celu", "alpha", positive=True)
    t, d = _real_float(x, "celu")
    return _back(_elu(t, a, a), d)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_RSQRT2 = 1.0 / math.sqrt(2.0)


def gelu(x: Any, approximate: str | bool = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)``, exact or in the tanh approximation.

    ``approximate="none"`` (default, as PyTorch): ``0.5 x (1 + erf(x / sqrt 2))``;
    ``approximate="tanh"``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``.
    ``True``/``False`` are accepted for ``"tanh"``/``"none"`` (JAX's spelling).
    Note JAX's ``jax.nn.gelu`` defaults to the tanh form; this default is the exact one.

    Args:
        x: a real tensor (integers give float64).
        approximate: ``"none"`` or ``"tanh"`` (or a bool).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.
        ValueError: for another ``approximate``.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.gelu(rt.create(rt.float64, [3], [-1., 0., 1.])))
    [-0.158655, 0, 0.841345]
    >>> print(nn.gelu(rt.create(rt.float64, [3], [-1., 0., 1.]), approximate="tanh"))
    [-0.158808, 0, 0.841192]
    """
    if approximate is True or approximate == "tanh":
        tanh_form = True
    elif approximate is False or approximate == "none":
        tanh_form = False
    else:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    t, d = _real_float(x, "gelu")
    if tanh_form:
        inner = (t + (t * t * t) * 0.044715) * _SQRT_2_OVER_PI
        r = t * (tanh(inner) + 1.0) * 0.5
    else:
        r = t * (erf(t * _RSQRT2) + 1.0) * 0.5
    return _back(r, d)


def sigmoid(x: Any) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))`` (the same function as ``rt.sigmoid``).

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.sigmoid(rt.create(rt.float64, [2], [0., 2.])))
    [0.5, 0.880797]
    """
    return _rt_sigmoid(x)


def silu(x: Any) -> Tensor:
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``.

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.silu(rt.create(rt.float64, [2], [-1., 2.])))
    [-0.268941, 1.76159]
    """
    t, d = _real_float(x, "silu")
    return _back(t * _sigmoid(t), d)


def softplus(x: Any, beta: float = 1.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, computed stably as ``logaddexp(beta x, 0) / beta``.

    PyTorch switches to ``x`` above ``beta x > threshold = 20`` (an error of up to 2e-9);
    this form is exact everywhere and has no threshold.

    Args:
        x: a real tensor (integers give float64).
        beta: a positive finite number.
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input or a non-number beta.
        ValueError: if beta is not positive and finite.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.softplus(rt.create(rt.float64, [3], [-1000., 0., 1000.])))
    [0, 0.693147, 1000]
    """
    b = _num(beta, "softplus", "beta", positive=True)
    t, d = _real_float(x, "softplus")
    r = _softplus(t) if b == 1.0 else _softplus(t * b) / b
    return _back(r, d)


def mish(x: Any) -> Tensor:
    """``x * tanh(softplus(x))``.

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.mish(rt.create(rt.float64, [2], [-1., 1.])))
    [-0.303401, 0.865098]
    """
    t, d = _real_float(x, "mish")
    return _back(t * tanh(_softplus(t)), d)


def softsign(x: Any) -> Tensor:
    """``x / (1 + |x|)``.

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.softsign(rt.create(rt.float64, [2], [-1., 3.])))
    [-0.5, 0.75]
    """
    t, d = _real_float(x, "softsign")
    return _back(t / (rabs(t) + 1.0), d)


def hard_sigmoid(x: Any) -> Tensor:
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between (PyTorch's ``hardsigmoid``).

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.hard_sigmoid(rt.create(rt.float64, [3], [-4., 0., 1.5])))
    [0, 0.5, 0.75]
    """
    t, d = _real_float(x, "hard_sigmoid")
    return _back(where(t <= -3.0, 0.0, where(t >= 3.0, 1.0, t / 6.0 + 0.5)), d)


def hard_tanh(x: Any, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]`` (PyTorch's ``hardtanh``); derivative 0 outside and at the bounds.

    Args:
        x: a real tensor (integer dtypes are kept).
        min_val, max_val: the bounds, ``min_val <= max_val``.
    Returns:
        A new tensor of ``x``'s dtype.
    Raises:
        TypeError: for complex or bool input, non-number bounds.
        ValueError: if ``min_val > max_val``.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.hard_tanh(rt.create(rt.float32, [3], [-2., 0.5, 2.])))
    [-1, 0.5, 1]
    """
    lo = _scalar_float(min_val, "hard_tanh", "min_val")
    hi = _scalar_float(max_val, "hard_tanh", "max_val")
    if lo > hi:
        raise ValueError(f"hard_tanh: min_val must be <= max_val, got min_val={min_val}, max_val={max_val}")
    t = _real_keep_int(x, "hard_tanh")
    if t.dtype.is_int:
        return clip(t, int(math.ceil(lo)), int(math.floor(hi)))
    return where(t <= lo, lo, where(t >= hi, hi, t))


def log_sigmoid(x: Any) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, computed stably.

    Args:
        x: a real tensor (integers give float64).
    Returns:
        A new float tensor.
    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.log_sigmoid(rt.create(rt.float64, [3], [-1000., 0., 1000.])))
    [-1000, -0.693147, -0]
    """
    t, d = _real_float(x, "log_sigmoid")
    return _back(-_softplus(-t), d)


def glu(x: Any, axis: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` where ``a, b`` are the two halves of ``x`` along ``axis``.

    Args:
        x: a real tensor (integers give float64) whose size along ``axis`` is even.
        axis: the axis split in two (default: last; PyTorch's ``dim``).
    Returns:
        A new float tensor, half as long along ``axis``.
    Raises:
        TypeError: for complex input.
        ValueError: if the axis has odd size.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.glu(rt.create(rt.float64, [4], [1., 2., 0., 100.])))
    [0.5, 2]
    """
    t, d = _real_float(x, "glu")
    ax = normalize_axis(axis, t.ndim, "glu")
    n = t.shape[ax]
    if n % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {n} (shape {t.shape})")
    a, b = split(t, 2, ax)
    return _back(a * _sigmoid(b), d)

