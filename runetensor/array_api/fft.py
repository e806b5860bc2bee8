"""The ``fft`` extension of the Array API standard (``runetensor.array_api.fft``).

Each function calls the main namespace's transform (``rt.fft``, ``rt.rfftn``...)
with the standard's keyword-only signature; ``s`` entries of ``-1`` keep the
axis's length (the last axis of ``irfftn``: ``2 * (m - 1)``).

Transforms keep the input's precision (float32/complex64 in, complex64 or
float32 out); integer and bool input is computed in float64/complex128, and a
real input to a complex transform is taken as complex.  ``norm`` is
``"backward"`` (default: no scaling forward, 1/n inverse), ``"ortho"`` or
``"forward"``.

>>> import runetensor.array_api as xp
>>> print(xp.fft.fft(xp.asarray([1.0, 0.0, 0.0, 0.0])))
[1+0i, 1+0i, 1+0i, 1+0i]
>>> print(xp.fft.fftfreq(4))
[0, 0.25, -0.5, -0.25]
"""
from __future__ import annotations

from typing import Any, Sequence

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from .. import _dtypes as D
from .._fft import _length
from .._tensor import Tensor
from .._validate import as_int, normalize_axes
from ._common import arr, cast, check_device, dtype_arg
from .._backend import use_backend

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

def _one(x: Any, name: str, n: Any, axis: int, norm: str) -> Tensor:
    """A 1-d transform: the main namespace's ``rt.<name>``."""
    t = arr(x, name)
    if t.ndim == 0:
        raise ValueError(f"{name}: expected an array of rank >= 1, got a 0-d array")
    return getattr(rt, name)(t, axis=axis, n=n, norm=norm)


def _many(x: Any, name: str, s: Any, axes: Any, norm: str, half_last: bool = False) -> Tensor:
    """An n-d transform: the main namespace's ``rt.<name>``, after resolving ``-1`` entries of ``s``."""
    t = arr(x, name)
    nd = t.ndim
    if axes is None:
        if s is None:
            ax = tuple(range(nd))
        else:
            k = len(s)
            if k > nd:
                raise ValueError(f"{name}: s has {k} entries but the array has rank {nd}")
            ax = tuple(range(nd - k, nd))
    else:
        ax = normalize_axes(axes, nd, name, "axes")
    if not ax:
        raise ValueError(f"{name}: expected at least one axis to transform (array of shape {t.shape})")
    sizes = None
    if s is not None:
        s = tuple(s)
        if len(s) != len(ax):
            raise ValueError(f"{name}: s {s} and axes {tuple(ax)} must have the same length")
        shape = t._data.shape
        sizes = []
        for i, (v, a) in enumerate(zip(s, ax)):
            v = as_int(v, name, "s entry")
            if v == -1:
                v = 2 * (shape[a] - 1) if half_last and i == len(ax) - 1 else shape[a]
            sizes.append(_length(v, name, "each transform length"))
    return getattr(rt, name)(t, axes=ax, s=sizes, norm=norm)


def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """One-dimensional discrete Fourier transform along ``axis`` (input cropped or zero-padded to ``n``).

    Raises:
        ValueError: for ``n < 1``, a bad ``norm`` or a 0-d array.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fft(xp.asarray([0.0, 1.0, 0.0, 0.0])))
    [1+0i, 0-1i, -1+0i, 0+1i]
    """
    return _one(x, "fft", n, axis, norm)


def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """One-dimensional inverse discrete Fourier transform along ``axis``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifft(xp.asarray([4.0, 4.0])))
    [4+0i, 0+0i]
    """
    return _one(x, "ifft", n, axis, norm)


def fftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward") -> Tensor:
    """N-dimensional discrete Fourier transform over ``axes`` (all, or the last ``len(s)``).

    ``s`` gives the transform length per axis (-1 keeps the axis's size).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftn(xp.ones((2, 2))))
    [[4+0i, 0+0i],
     [0+0i, 0+0i]]
    """
    return _many(x, "fftn", s, axes, norm)


def ifftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """N-dimensional inverse discrete Fourier transform.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifftn(xp.asarray([[4.0, 0.0], [0.0, 0.0]])))
    [[1+0i, 1+0i],
     [1+0i, 1+0i]]
    """
    return _many(x, "ifftn", s, axes, norm)


def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Fourier transform of real input: the ``n // 2 + 1`` non-negative frequency terms.

    Raises:
        TypeError: for complex input.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.rfft(xp.asarray([1.0, 2.0, 3.0, 4.0])))
    [10+0i, -2+2i, -2+0i]
    """
    return _one(x, "rfft", n, axis, norm)


def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Inverse of :func:`rfft`: a real array of length ``n`` (default ``2 * (m - 1)``) along ``axis``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.irfft(xp.fft.rfft(xp.asarray([1.0, 2.0, 3.0, 4.0]))))
    [1, 2, 3, 4]
    """
    return _one(x, "irfft", n, axis, norm)


def rfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """N-dimensional Fourier transform of real input (the last axis halved as in :func:`rfft`).

    >>> import runetensor.array_api as xp
    >>> xp.fft.rfftn(xp.ones((4, 6))).shape
    (4, 4)
    """
    return _many(x, "rfftn", s, axes, norm)


def irfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward") -> Tensor:
    """Inverse of :func:`rfftn` (last transformed axis of real length ``2 * (m - 1)`` unless ``s`` says).

    >>> import runetensor.array_api as xp
    >>> xp.fft.irfftn(xp.fft.rfftn(xp.ones((4, 6)))).shape
    (4, 6)
    """
    return _many(x, "irfftn", s, axes, norm, half_last=True)


def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Fourier transform of a Hermitian-symmetric signal given by its first half: real output of length ``n``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.hfft(xp.asarray([1.0, 0.0, 0.0])))
    [1, 1, 1, 1]
    """
    return _one(x, "hfft", n, axis, norm)


def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Inverse of :func:`hfft`: the ``n // 2 + 1`` terms of a real signal's inverse transform.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ihfft(xp.asarray([1.0, 1.0, 1.0, 1.0])))
    [1-0i, 0-0i, 0-0i]
    """
    return _one(x, "ihfft", n, axis, norm)


def _freq_dtype(dtype: Any, fname: str) -> Any:
    d = dtype_arg(dtype, fname) or D.default_float
    if d.kind != "f":
        raise TypeError(f"{fname}: dtype must be a real floating type, got {d}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """Sample frequencies of :func:`fft`: ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)``.

    Raises:
        ValueError: for ``n < 1`` or ``d == 0``.
        TypeError: for a ``dtype`` that is not real floating.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftfreq(5, d=0.5))
    [0, 0.4, 0.8, -0.8, -0.4]
    """
    be = check_device(device, "fftfreq")
    dt = _freq_dtype(dtype, "fftfreq")
    if be is not None:  # another device than the default backend's
        with use_backend(be):
            return cast(rt.fftfreq(n, d=d), dt)
    return cast(rt.fftfreq(n, d=d), dt)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """Sample frequencies of :func:`rfft`: ``[0, 1, ..., n//2] / (d * n)``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.rfftfreq(4))
    [0, 0.25, 0.5]
    """
    be = check_device(device, "rfftfreq")
    dt = _freq_dtype(dtype, "rfftfreq")
    if be is not None:  # another device than the default backend's
        with use_backend(be):
            return cast(rt.rfftfreq(n, d=d), dt)
    return cast(rt.rfftfreq(n, d=d), dt)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero-frequency term to the centre (roll by ``n // 2`` along ``axes``, all by default).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftshift(xp.fft.fftfreq(5)))
    [-0.4, -0.2, 0, 0.2, 0.4]
    """
    return rt.fftshift(arr(x, "fftshift"), axes=axes)


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Inverse of :func:`fftshift` (they differ for odd lengths).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifftshift(xp.fft.fftshift(xp.fft.fftfreq(5))))
    [0, 0.2, 0.4, -0.4, -0.2]
    """
    return rt.ifftshift(arr(x, "ifftshift"), axes=axes)

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
