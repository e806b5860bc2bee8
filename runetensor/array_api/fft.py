"""The ``fft`` extension of the Array API standard (``runetensor.array_api.fft``).

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

from .. import _dtypes as D
from .._backend import get_backend
from .._tensor import Tensor, wrap
from .._validate import as_int, normalize_axes, normalize_axis
from ._common import arr, cast, check_device, dtype_arg, index_range

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_COMPLEX_IN = frozenset({"fft", "ifft", "irfft", "hfft"})


def _input(x: Any, op: str, fname: str) -> Tensor:
    x = arr(x, fname)
    d = x._dtype
    if op in _COMPLEX_IN:
        if d.kind == "c":
            return x
        want = D.complex64 if d.kind == "f" and d.bits <= 32 else D.complex128
        return cast(x, want)
    if d.kind == "c":
        raise TypeError(f"{fname}: expected a real-valued array, got {d}")
    want = D.float32 if d.kind == "f" and d.bits <= 32 else D.float64
    return cast(x, want)


def _norm(norm: str, fname: str) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return norm


def _length(n: Any, fname: str, what: str = "n") -> int:
    v = as_int(n, fname, what)
    if v < 1:
        raise ValueError(f"{fname}: {what} must be >= 1, got {v}")
    return v


def _run(x: Tensor, op: str, s: tuple[int, ...], axes: tuple[int, ...], norm: str) -> Tensor:
    be = x._backend
    h = be.fft(op, x._data, s, axes, norm)
    return wrap(h, be.dtype(h), be)


def _one(x: Any, op: str, n: Any, axis: int, norm: str, fname: str, default_n: Any = None) -> Tensor:
    norm = _norm(norm, fname)
    t = _input(x, op, fname)
    if t.ndim == 0:
        raise ValueError(f"{fname}: expected an array of rank >= 1, got a 0-d array")
    ax = normalize_axis(axis, t.ndim, fname)
    m = t._data.shape[ax]
    if n is None:
        n = default_n(m) if default_n else m
        if n < 1:
            raise ValueError(f"{fname}: the transform length from axis size {m} is {n}; give n >= 1")
    else:
        n = _length(n, fname)
    return _run(t, op, (n,), (ax,), norm)


def _many(x: Any, op: str, s: Any, axes: Any, norm: str, fname: str, last_default: Any = None) -> Tensor:
    norm = _norm(norm, fname)
    t = _input(x, op, fname)
    nd = t.ndim
    if axes is None:
        if s is None:
            ax = tuple(range(nd))
        else:
            k = len(s)
            if k > nd:
                raise ValueError(f"{fname}: s has {k} entries but the array has rank {nd}")
            ax = tuple(range(nd - k, nd))
    else:
        ax = normalize_axes(axes, nd, fname, "axes")
    if not ax:
        raise ValueError(f"{fname}: expected at least one axis to transform (array of shape {t.shape})")
    shape = t._data.shape
    if s is None:
        sizes = [shape[a] for a in ax]
        if last_default is not None:
            sizes[-1] = last_default(sizes[-1])
    else:
        s = tuple(s)
        if len(s) != len(ax):
            raise ValueError(f"{fname}: s {s} and axes {tuple(ax)} must have the same length")
        sizes = []
        for i, (v, a) in enumerate(zip(s, ax)):
            v = as_int(v, fname, "s entry")
            if v == -1:
                v = shape[a] if (last_default is None or i != len(ax) - 1) else last_default(shape[a])
            sizes.append(v)
    for v in sizes:
        if v < 1:
            raise ValueError(f"{fname}: transform lengths must be >= 1, got {tuple(sizes)}")
    return _run(t, op, tuple(sizes), ax, norm)


def _half(m: int) -> int:
    return 2 * (m - 1)


def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """One-dimensional discrete Fourier transform along ``axis`` (input cropped or zero-padded to ``n``).

    Raises:
        ValueError: for ``n < 1``, a bad ``norm`` or a 0-d array.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fft(xp.asarray([0.0, 1.0, 0.0, 0.0])))
    [1+0i, 0-1i, -1+0i, 0+1i]
    """
    return _one(x, "fft", n, axis, norm, "fft")


def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """One-dimensional inverse discrete Fourier transform along ``axis``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifft(xp.asarray([4.0, 4.0])))
    [4+0i, 0+0i]
    """
    return _one(x, "ifft", n, axis, norm, "ifft")


def fftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward") -> Tensor:
    """N-dimensional discrete Fourier transform over ``axes`` (all, or the last ``len(s)``).

    ``s`` gives the transform length per axis (-1 keeps the axis's size).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftn(xp.ones((2, 2))))
    [[4+0i, 0+0i],
     [0+0i, 0+0i]]
    """
    return _many(x, "fft", s, axes, norm, "fftn")


def ifftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """N-dimensional inverse discrete Fourier transform.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifftn(xp.asarray([[4.0, 0.0], [0.0, 0.0]])))
    [[1+0i, 1+0i],
     [1+0i, 1+0i]]
    """
    return _many(x, "ifft", s, axes, norm, "ifftn")


def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Fourier transform of real input: the ``n // 2 + 1`` non-negative frequency terms.

    Raises:
        TypeError: for complex input.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.rfft(xp.asarray([1.0, 2.0, 3.0, 4.0])))
    [10+0i, -2+2i, -2+0i]
    """
    return _one(x, "rfft", n, axis, norm, "rfft")


def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Inverse of :func:`rfft`: a real array of length ``n`` (default ``2 * (m - 1)``) along ``axis``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.irfft(xp.fft.rfft(xp.asarray([1.0, 2.0, 3.0, 4.0]))))
    [1, 2, 3, 4]
    """
    return _one(x, "irfft", n, axis, norm, "irfft", _half)


def rfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """N-dimensional Fourier transform of real input (the last axis halved as in :func:`rfft`).

    >>> import runetensor.array_api as xp
    >>> xp.fft.rfftn(xp.ones((4, 6))).shape
    (4, 4)
    """
    return _many(x, "rfft", s, axes, norm, "rfftn")


def irfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward") -> Tensor:
    """Inverse of :func:`rfftn` (last transformed axis of real length ``2 * (m - 1)`` unless ``s`` says).

    >>> import runetensor.array_api as xp
    >>> xp.fft.irfftn(xp.fft.rfftn(xp.ones((4, 6)))).shape
    (4, 6)
    """
    return _many(x, "irfft", s, axes, norm, "irfftn", _half)


def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Fourier transform of a Hermitian-symmetric signal given by its first half: real output of length ``n``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.hfft(xp.asarray([1.0, 0.0, 0.0])))
    [1, 1, 1, 1]
    """
    return _one(x, "hfft", n, axis, norm, "hfft", _half)


def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Tensor:
    """Inverse of :func:`hfft`: the ``n // 2 + 1`` terms of a real signal's inverse transform.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ihfft(xp.asarray([1.0, 1.0, 1.0, 1.0])))
    [1-0i, 0-0i, 0-0i]
    """
    return _one(x, "ihfft", n, axis, norm, "ihfft")


def _freq_dtype(dtype: Any, fname: str) -> Any:
    d = dtype_arg(dtype, fname) or D.default_float
    if d.kind != "f":
        raise TypeError(f"{fname}: dtype must be a real floating type, got {d}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """Sample frequencies of :func:`fft`: ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -n//2, ..., -1] / (d * n)``.

    Raises:
        ValueError: for ``n < 1``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftfreq(5, d=0.5))
    [0, 0.4, 0.8, -0.8, -0.4]
    """
    check_device(device, "fftfreq")
    n = _length(n, "fftfreq")
    dt = _freq_dtype(dtype, "fftfreq")
    be = get_backend()
    i = index_range(be, n)
    k = be.binary("sub", i, be.binary("mul", be.cast(be.binary("ge", i, (n + 1) // 2), D.int64), n))
    h = be.binary("div", be.cast(k, D.float64), float(d) * n)
    return wrap(be.cast(h, dt) if dt is not D.float64 else h, dt, be)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """Sample frequencies of :func:`rfft`: ``[0, 1, ..., n//2] / (d * n)``.

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.rfftfreq(4))
    [0, 0.25, 0.5]
    """
    check_device(device, "rfftfreq")
    n = _length(n, "rfftfreq")
    dt = _freq_dtype(dtype, "rfftfreq")
    be = get_backend()
    h = be.binary("div", be.cast(index_range(be, n // 2 + 1), D.float64), float(d) * n)
    return wrap(be.cast(h, dt) if dt is not D.float64 else h, dt, be)


def _shift(x: Any, axes: Any, inverse: bool, fname: str) -> Tensor:
    from ._manipulation import roll
    x = arr(x, fname)
    ax = tuple(range(x.ndim)) if axes is None else normalize_axes(axes, x.ndim, fname, "axes")
    if not ax:
        return wrap(x._backend.copy(x._data), x._dtype, x._backend)
    shifts = tuple((-(x._data.shape[a] // 2)) if inverse else x._data.shape[a] // 2 for a in ax)
    return roll(x, shifts, axis=ax)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero-frequency term to the centre (roll by ``n // 2`` along ``axes``, all by default).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.fftshift(xp.fft.fftfreq(5)))
    [-0.4, -0.2, 0, 0.2, 0.4]
    """
    return _shift(x, axes, False, "fftshift")


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Inverse of :func:`fftshift` (they differ for odd lengths).

    >>> import runetensor.array_api as xp
    >>> print(xp.fft.ifftshift(xp.fft.fftshift(xp.fft.fftfreq(5))))
    [0, 0.2, 0.4, -0.4, -0.2]
    """
    return _shift(x, axes, True, "ifftshift")
