"""Weight initialisers (Glorot/Xavier, He/Kaiming, LeCun), uniform and normal, taking keys.

Each is ``init(key, shape, dtype=float32, ...)`` with a key of :mod:`runetensor.random`: the
values are a pure function of the key.  Fans follow PyTorch's layouts: a weight of shape
``(out, in, *kernel)`` (``linear``'s ``(out_features, in_features)``, a convolution's
``(C_out, C_in / groups, kH, kW)``) has ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)``.

| initialiser | distribution |
|---|---|
| ``glorot_uniform`` | ``U(-b, b)``, ``b = gain * sqrt(6 / (fan_in + fan_out))`` |
| ``glorot_normal`` | ``N(0, s**2)``, ``s = gain * sqrt(2 / (fan_in + fan_out))`` |
| ``he_uniform`` | ``U(-b, b)``, ``b = sqrt(6 / fan)`` (``fan`` = ``fan_in`` or ``fan_out`` by ``mode``) |
| ``he_normal`` | ``N(0, s**2)``, ``s = sqrt(2 / fan)`` |
| ``lecun_uniform`` | ``U(-b, b)``, ``b = sqrt(3 / fan_in)`` |
| ``lecun_normal`` | ``N(0, s**2)``, ``s = sqrt(1 / fan_in)`` |

The normal variants are plain (untruncated) normals, as PyTorch's ``xavier_normal_`` and
``kaiming_normal_``; JAX's ``jax.nn.initializers`` truncate at two standard deviations.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import runetensor as rt

from .. import _dtypes as D
from .. import random as rrandom
from .._special import _scalar_float
from .._validate import as_dtype, as_shape

__all__ = ["glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_uniform", "lecun_normal",
           "fans"]


def fans(shape: Sequence[int]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)`` (PyTorch's layout).

    Args:
        shape: a shape with at least 2 axes.
    Returns:
        ``(in * prod(kernel), out * prod(kernel))``.
    Raises:
        ValueError: for fewer than 2 axes.

    >>> from runetensor import nn
    >>> nn.fans((16, 3, 5, 5))
    (75, 400)
    """
    shp = as_shape(shape, "fans")
    if len(shp) < 2:
        raise ValueError(f"fans: a weight needs at least 2 axes (out, in, *kernel), got shape {shp}")
    rf = math.prod(shp[2:])
    return shp[1] * rf, shp[0] * rf


def _prep(fname: str, shape: Any, dtype: Any) -> tuple[tuple[int, ...], Any, int, int]:
    shp = as_shape(shape, fname)
    if len(shp) < 2:
        raise ValueError(f"{fname}: a weight needs at least 2 axes (out, in, *kernel), got shape {shp}")
    d = as_dtype(dtype, fname)
    if not d.is_float:
        raise TypeError(f"{fname}: dtype must be a real floating dtype, got {d}")
    fi, fo = fans(shp)
    if fi == 0 or fo == 0:
        raise ValueError(f"{fname}: cannot initialise a weight with a zero fan (shape {shp})")
    return shp, d, fi, fo


def _draw(fname: str, key: Any, shape: Any, dtype: Any, normal: bool,
          scale: Callable[[int, int], float]) -> Any:
    """The shared initialiser: ``U(-b, b)`` (``normal=False``) or ``N(0, b**2)`` with
    ``b = scale(fan_in, fan_out)``; ``scale`` validates its own arguments (gain, mode)."""
    shp, d, fi, fo = _prep(fname, shape, dtype)
    b = scale(fi, fo)
    if not normal:
        return rrandom.uniform(key, shp, d, -b, b)
    cd = D.float32 if d.is_low_precision else d
    z = rrandom.normal(key, shp, cd) * b
    return z if cd is d else rt.astype(z, d)


def _gain(gain: Any, fname: str) -> float:
    g = _scalar_float(gain, fname, "gain")
    if not 0 < g < math.inf:
        raise ValueError(f"{fname}: gain must be positive and finite, got {gain!r}")
    return g


def _fan(mode: Any, fi: int, fo: int, fname: str) -> int:
    if mode == "fan_in":
        return fi
    if mode == "fan_out":
        return fo
    raise ValueError(f"{fname}: mode must be 'fan_in' or 'fan_out', got {mode!r}")


def glorot_uniform(key: Any, shape: Sequence[int], dtype: Any = D.float32, gain: float = 1.0) -> Any:
    """Glorot (Xavier) uniform: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``.

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
        gain: a positive scale (PyTorch's ``gain``).
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes, a zero fan or a bad gain.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.glorot_uniform(rt.random.key(0), (200, 100))
    >>> bool(rt.item(rt.max(rt.abs(w))) <= (6 / 300) ** 0.5)
    True
    """
    return _draw("glorot_uniform", key, shape, dtype, False,
                 lambda fi, fo: _gain(gain, "glorot_uniform") * math.sqrt(6.0 / (fi + fo)))


def glorot_normal(key: Any, shape: Sequence[int], dtype: Any = D.float32, gain: float = 1.0) -> Any:
    """Glorot (Xavier) normal: ``N(0, s**2)`` with ``s = gain * sqrt(2 / (fan_in + fan_out))``.

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
        gain: a positive scale.
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes, a zero fan or a bad gain.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.glorot_normal(rt.random.key(0), (200, 200), rt.float64)
    >>> round(rt.item(rt.std(w)) / (2 / 400) ** 0.5, 1)
    1.0
    """
    return _draw("glorot_normal", key, shape, dtype, True,
                 lambda fi, fo: _gain(gain, "glorot_normal") * math.sqrt(2.0 / (fi + fo)))


def he_uniform(key: Any, shape: Sequence[int], dtype: Any = D.float32, mode: str = "fan_in") -> Any:
    """He (Kaiming) uniform: ``U(-b, b)`` with ``b = sqrt(6 / fan)`` (PyTorch's ``kaiming_uniform_``
    for ReLU).

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
        mode: ``"fan_in"`` (default) or ``"fan_out"``.
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes, a zero fan or a bad mode.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.he_uniform(rt.random.key(0), (64, 24))
    >>> bool(rt.item(rt.max(rt.abs(w))) <= 0.5)
    True
    """
    return _draw("he_uniform", key, shape, dtype, False,
                 lambda fi, fo: math.sqrt(6.0 / _fan(mode, fi, fo, "he_uniform")))


def he_normal(key: Any, shape: Sequence[int], dtype: Any = D.float32, mode: str = "fan_in") -> Any:
    """He (Kaiming) normal: ``N(0, s**2)`` with ``s = sqrt(2 / fan)`` (PyTorch's ``kaiming_normal_``).

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
        mode: ``"fan_in"`` (default) or ``"fan_out"``.
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes, a zero fan or a bad mode.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.he_normal(rt.random.key(0), (300, 200), rt.float64)
    >>> round(rt.item(rt.std(w)) / 0.1, 1)
    1.0
    """
    return _draw("he_normal", key, shape, dtype, True,
                 lambda fi, fo: math.sqrt(2.0 / _fan(mode, fi, fo, "he_normal")))


def lecun_uniform(key: Any, shape: Sequence[int], dtype: Any = D.float32) -> Any:
    """LeCun uniform: ``U(-b, b)`` with ``b = sqrt(3 / fan_in)`` (unit variance per input).

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes or a zero fan.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.lecun_uniform(rt.random.key(0), (10, 12))
    >>> bool(rt.item(rt.max(rt.abs(w))) <= 0.5)
    True
    """
    return _draw("lecun_uniform", key, shape, dtype, False, lambda fi, fo: math.sqrt(3.0 / fi))


def lecun_normal(key: Any, shape: Sequence[int], dtype: Any = D.float32) -> Any:
    """LeCun normal: ``N(0, s**2)`` with ``s = sqrt(1 / fan_in)``.

    Args:
        key: a key (``rt.random.key(seed)``).
        shape: ``(out, in, *kernel)``.
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for fewer than 2 axes or a zero fan.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = nn.lecun_normal(rt.random.key(0), (400, 100), rt.float64)
    >>> round(rt.item(rt.std(w)) / 0.1, 1)
    1.0
    """
    return _draw("lecun_normal", key, shape, dtype, True, lambda fi, fo: math.sqrt(1.0 / fi))
