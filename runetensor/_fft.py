"""Discrete Fourier transforms (Rune's ``fft`` family) and the frequency helpers.

Every transform takes ``norm``: ``"backward"`` (default: no scaling forward,
``1/n`` on the inverse), ``"forward"`` (``1/n`` forward, none on the inverse)
or ``"ortho"`` (``1/sqrt(n)`` both ways).  Transforms run over the given axes
of any-rank input; the other axes are batch axes.

Dtypes: the result keeps the input's precision.  float32 (and float16,
bfloat16, float8, computed in float32) gives complex64 / float32; float64,
integers and bool give complex128 / float64.  The complex transforms accept
real input (it is promoted); the real-input transforms (``rfft*``, ``ihfft``)
reject complex input with a ``TypeError``.

>>> import runetensor as rt
>>> print(rt.fft(rt.create(rt.float64, [4], [1, 0, 0, 0])))
[1+0i, 1+0i, 1+0i, 1+0i]
>>> print(rt.fftfreq(4))
[0, 0.25, -0.5, -0.25]
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from . import _dtypes as D
from ._backend import get_backend
from ._tensor import Tensor, as_tensor, attach, wrap
from ._validate import as_int, normalize_axes, normalize_axis, shape_str
from ._out import write_out

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
           "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "forward", "ortho")
_SINGLE = (D.float32, D.float16, D.bfloat16, D.float8_e4m3, D.float8_e5m2, D.complex64)


def _norm(norm: Any, fname: str) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"{fname}: norm must be 'backward', 'forward' or 'ortho', got {norm!r}")
    return norm


def _input(x: Any, fname: str, real_input: bool) -> tuple[Tensor, Any]:
    """(tensor, handle cast to the transform's input dtype)."""
    t = as_tensor(x, fname)
    d = t._dtype
    if d.kind not in "biufc":
        raise TypeError(f"{fname}: expected a numeric tensor, got {d}")
    single = d in _SINGLE
    if real_input:
        if d.is_complex:
            raise TypeError(f"{fname}: expected a real tensor, got {d}; use the complex transform instead")
        want = D.float32 if single else D.float64
    else:
        want = D.complex64 if single else D.complex128
    h = t._data if d is want else t._backend.cast(t._data, want)
    return t, h


def _length(n: Any, fname: str, what: str) -> int:
    v = as_int(n, fname, what)
    if v < 1:
        raise ValueError(f"{fname}: {what} must be >= 1, got {v}")
    return v


def _run(fname: str, op: str, x: Any, axes: Any, s: Any, norm: Any, multi: bool,
         default_axes: Any = None) -> Tensor:
    real_in = op in ("rfft", "ihfft")
    half_out = op in ("irfft", "hfft")  # s/n is the real output length along the last axis
    t, h = _input(x, fname, real_in)
    nm = _norm(norm, fname)
    nd = t.ndim
    if multi:
        if axes is None:
            if s is not None:
                k = len(list(s))
                if k > nd:
                    raise ValueError(f"{fname}: s={list(s)} has more entries than the tensor's rank {nd}")
                ax = tuple(range(nd - k, nd))
            elif default_axes is not None:
                if nd < len(default_axes):
                    raise ValueError(f"{fname}: expected a tensor with at least {len(default_axes)} dimensions, "
                                     f"got shape {shape_str(t.shape)}")
                ax = normalize_axes(default_axes, nd, fname)
            else:
                ax = tuple(range(nd))
        else:
            ax = normalize_axes(axes, nd, fname)
        if s is None:
            lens: list[int | None] = [None] * len(ax)
        else:
            sl = list(s)
            if len(sl) != len(ax):
                raise ValueError(f"{fname}: s={sl} and axes={list(ax)} have different lengths")
            lens = [_length(v, fname, "each entry of s") for v in sl]
    else:
        ax = (normalize_axis(axes, nd, fname),)
        lens = [None if s is None else _length(s, fname, "n")]
    be = t._backend
    if not ax:
        if op in ("rfft", "irfft"):
            raise ValueError(f"{fname}: a real transform needs at least one axis")
        out = D.complex64 if be.dtype(h) in (D.complex64, D.float32) else D.complex128
        return wrap(be.cast(h, out) if be.dtype(h) is not out else be.copy(h), out, be)
    full: list[int] = []
    for i, (a, n) in enumerate(zip(ax, lens)):
        m = t.shape[a]
        if n is None:
            if half_out and i == len(ax) - 1:
                n = 2 * (m - 1)
                if n < 1:
                    raise ValueError(f"{fname}: cannot infer the output length from {m} point(s) along axis {a}; "
                                     "pass n (or s) explicitly")
            else:
                n = m
                if n < 1:
                    raise ValueError(f"{fname}: invalid number of data points ({m}) along axis {a}")
        full.append(n)
    r = be.fft(op, h, tuple(full), ax, nm)
    return wrap(r, be.dtype(r), be)


# -- 1-D ---------------------------------------------------------------------------------
@attach()
def fft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward",
        out: Tensor | None = None) -> Tensor:
    """1-D discrete Fourier transform along ``axis``.

    Args:
        x: input (real input is promoted to complex).
        axis: the transformed axis (default -1).
        n: transform length: the input is cropped or zero-padded to it (default: its size).
        norm: ``"backward"``, ``"forward"`` or ``"ortho"``.
        out: a tensor of the result's shape and dtype to write into (Rune's
            ``?out``; every transform but ``hfft``/``ihfft`` takes it).
    Returns:
        complex64 for single-precision input, complex128 otherwise (``out`` when given).
    Raises:
        ValueError: for ``n < 1``, an empty axis, a bad ``norm`` or an ``out`` of the wrong shape.
        TypeError: for an ``out`` of the wrong dtype.
        IndexError: for an out-of-range axis.

    >>> import runetensor as rt
    >>> print(rt.fft(rt.create(rt.float64, [4], [0, 1, 0, 0])))
    [1+0i, 0-1i, -1+0i, 0+1i]
    """
    r = _run("fft", "fft", x, axis, n, norm, False)
    return write_out(r, out, "fft")


@attach()
def ifft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward",
         out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`fft`.

    >>> import runetensor as rt
    >>> print(rt.ifft(rt.create(rt.complex128, [2], [2, 0])))
    [1+0i, 1+0i]
    """
    r = _run("ifft", "ifft", x, axis, n, norm, False)
    return write_out(r, out, "ifft")


@attach()
def rfft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward",
         out: Tensor | None = None) -> Tensor:
    """FFT of real input: only the ``n // 2 + 1`` non-negative frequencies.

    Raises:
        TypeError: for complex input.

    >>> import runetensor as rt
    >>> rt.rfft(rt.create(rt.float64, [4], [0, 1, 2, 3])).shape
    (3,)
    """
    r = _run("rfft", "rfft", x, axis, n, norm, False)
    return write_out(r, out, "rfft")


@attach()
def irfft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward",
          out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`rfft`: real output of length ``n`` (default ``2 * (m - 1)``).

    >>> import runetensor as rt
    >>> print(rt.irfft(rt.rfft(rt.create(rt.float64, [4], [0, 1, 2, 3]))))
    [0, 1, 2, 3]
    """
    r = _run("irfft", "irfft", x, axis, n, norm, False)
    return write_out(r, out, "irfft")


@attach()
def hfft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward") -> Tensor:
    """FFT of a Hermitian-symmetric signal given by its first half: real output of
    length ``n`` (default ``2 * (m - 1)``).

    >>> import runetensor as rt
    >>> print(rt.hfft(rt.create(rt.complex128, [3], [1, 0, 0])))
    [1, 1, 1, 1]
    """
    return _run("hfft", "hfft", x, axis, n, norm, False)


@attach()
def ihfft(x: Any, axis: int = -1, n: int | None = None, norm: str = "backward") -> Tensor:
    """Inverse of :func:`hfft`: the ``n // 2 + 1`` first terms of the inverse FFT of real input.

    >>> import runetensor as rt
    >>> print(rt.ihfft(rt.create(rt.float64, [4], [1, 1, 1, 1])))
    [1-0i, 0-0i, 0-0i]
    """
    return _run("ihfft", "ihfft", x, axis, n, norm, False)


# -- 2-D and N-D ---------------------------------------------------------------------------
@attach()
def fft2(x: Any, axes: Sequence[int] | None = (-2, -1), s: Sequence[int] | None = None,
         norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """2-D FFT over ``axes`` (default the last two).

    Args:
        axes: the two transformed axes.
        s: transform lengths per axis (crop or zero-pad).
    Raises:
        ValueError: for fewer than 2 dimensions, ``s``/``axes`` length mismatch.

    >>> import runetensor as rt
    >>> print(rt.fft2(rt.ones(rt.float32, [2, 2])))
    [[4+0i, 0+0i],
     [0+0i, 0+0i]]
    """
    r = _run("fft2", "fft", x, axes if axes is None else list(axes), s, norm, True, default_axes=(-2, -1))
    return write_out(r, out, "fft2")


@attach()
def ifft2(x: Any, axes: Sequence[int] | None = (-2, -1), s: Sequence[int] | None = None,
          norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`fft2`.

    >>> import runetensor as rt
    >>> print(rt.ifft2(rt.fft2(rt.ones(rt.float64, [2, 2]))))
    [[1+0i, 1+0i],
     [1+0i, 1+0i]]
    """
    r = _run("ifft2", "ifft", x, axes if axes is None else list(axes), s, norm, True, default_axes=(-2, -1))
    return write_out(r, out, "ifft2")


@attach()
def fftn(x: Any, axes: Sequence[int] | None = None, s: Sequence[int] | None = None,
         norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """N-D FFT over ``axes`` (default: all axes, or the last ``len(s)`` when ``s`` is given).

    >>> import runetensor as rt
    >>> rt.fftn(rt.ones(rt.float32, [2, 3, 4])).dtype
    rt.complex64
    """
    r = _run("fftn", "fft", x, axes, s, norm, True)
    return write_out(r, out, "fftn")


@attach()
def ifftn(x: Any, axes: Sequence[int] | None = None, s: Sequence[int] | None = None,
          norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`fftn`.

    >>> import runetensor as rt
    >>> print(rt.ifftn(rt.create(rt.complex64, [2, 2], [4, 0, 0, 0])))
    [[1+0i, 1+0i],
     [1+0i, 1+0i]]
    """
    r = _run("ifftn", "ifft", x, axes, s, norm, True)
    return write_out(r, out, "ifftn")


@attach()
def rfft2(x: Any, axes: Sequence[int] | None = (-2, -1), s: Sequence[int] | None = None,
          norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """2-D FFT of real input (half spectrum along the last axis).

    >>> import runetensor as rt
    >>> rt.rfft2(rt.ones(rt.float64, [4, 6])).shape
    (4, 4)
    """
    r = _run("rfft2", "rfft", x, axes if axes is None else list(axes), s, norm, True, default_axes=(-2, -1))
    return write_out(r, out, "rfft2")


@attach()
def irfft2(x: Any, axes: Sequence[int] | None = (-2, -1), s: Sequence[int] | None = None,
           norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`rfft2`.

    >>> import runetensor as rt
    >>> rt.irfft2(rt.rfft2(rt.ones(rt.float64, [4, 6]))).shape
    (4, 6)
    """
    r = _run("irfft2", "irfft", x, axes if axes is None else list(axes), s, norm, True, default_axes=(-2, -1))
    return write_out(r, out, "irfft2")


@attach()
def rfftn(x: Any, axes: Sequence[int] | None = None, s: Sequence[int] | None = None,
          norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """N-D FFT of real input (half spectrum along the last transformed axis).

    >>> import runetensor as rt
    >>> rt.rfftn(rt.ones(rt.float64, [2, 3, 4])).shape
    (2, 3, 3)
    """
    r = _run("rfftn", "rfft", x, axes, s, norm, True)
    return write_out(r, out, "rfftn")


@attach()
def irfftn(x: Any, axes: Sequence[int] | None = None, s: Sequence[int] | None = None,
           norm: str = "backward", out: Tensor | None = None) -> Tensor:
    """Inverse of :func:`rfftn` (pass ``s`` to recover odd lengths).

    >>> import runetensor as rt
    >>> rt.irfftn(rt.rfftn(rt.ones(rt.float64, [2, 3, 5])), s=[2, 3, 5]).shape
    (2, 3, 5)
    """
    r = _run("irfftn", "irfft", x, axes, s, norm, True)
    return write_out(r, out, "irfftn")


# -- frequencies and shifts -------------------------------------------------------------------
def _spacing(d: Any, fname: str) -> builtins.float:
    try:
        v = builtins.float(d)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: d must be a number, got {type(d).__name__} {d!r}") from None
    if v == 0.0 or v != v:
        raise ValueError(f"{fname}: d must be a non-zero number, got {v}")
    return v


def fftfreq(n: int, d: float = 1.0) -> Tensor:
    """Sample frequencies of an ``n``-point FFT with sample spacing ``d`` (float64):
    ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d * n)``.

    Raises:
        ValueError: if ``n < 1`` or ``d`` is zero.

    >>> import runetensor as rt
    >>> print(rt.fftfreq(5, d=0.1))
    [0, 2, 4, -4, -2]
    """
    n = _length(n, "fftfreq", "n")
    dv = _spacing(d, "fftfreq")
    be = get_backend()
    i = be.arange(0, n, 1, D.int64)
    wrapk = be.binary("mul", be.cast(be.binary("ge", i, (n + 1) // 2), D.int64), n)
    k = be.cast(be.binary("sub", i, wrapk), D.float64)
    return wrap(be.binary("div", k, dv * n), D.float64, be)


def rfftfreq(n: int, d: float = 1.0) -> Tensor:
    """Non-negative sample frequencies ``[0, 1, ..., n//2] / (d * n)`` (float64), for :func:`rfft`.

    >>> import runetensor as rt
    >>> print(rt.rfftfreq(4))
    [0, 0.25, 0.5]
    """
    n = _length(n, "rfftfreq", "n")
    dv = _spacing(d, "rfftfreq")
    be = get_backend()
    k = be.arange(0, n // 2 + 1, 1, D.float64)
    return wrap(be.binary("div", k, dv * n), D.float64, be)


def _roll(t: Tensor, axes: Any, fname: str, inverse: bool) -> Tensor:
    t = as_tensor(t, fname)
    be = t._backend
    nd = t.ndim
    ax = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, fname)
    h = t._data
    moved = False
    for a in ax:
        n = h.shape[a]
        if n <= 1:
            continue
        shift = -(n // 2) if inverse else n // 2
        i = be.arange(0, n, 1, D.int64)
        idx = be.binary("pymod", be.binary("sub", i, shift), n)
        key = tuple(slice(0, s, 1) for s in h.shape[:a]) + (idx,) + tuple(slice(0, s, 1) for s in h.shape[a + 1:])
        h = be.gather(h, key)
        moved = True
    if not moved:
        h = be.copy(h)
    return wrap(h, t._dtype, be)


@attach()
def fftshift(t: Any, axes: Sequence[int] | None = None) -> Tensor:
    """Move the zero-frequency term to the centre (roll each axis by ``n // 2``).

    Args:
        t: any tensor.
        axes: the axes to shift (default all).

    >>> import runetensor as rt
    >>> print(rt.fftshift(rt.fftfreq(5)))
    [-0.4, -0.2, 0, 0.2, 0.4]
    """
    return _roll(t, axes, "fftshift", False)


@attach()
def ifftshift(t: Any, axes: Sequence[int] | None = None) -> Tensor:
    """Inverse of :func:`fftshift` (they differ for odd lengths).

    >>> import runetensor as rt
    >>> print(rt.ifftshift(rt.fftshift(rt.fftfreq(5))))
    [0, 0.2, 0.4, -0.4, -0.2]
    """
    return _roll(t, axes, "ifftshift", True)
