"""Sliding windows (Nx's "Sliding windows" section): patches, correlation, convolution, filters.

``extract_patches`` is im2col: the windows of the last ``K`` axes of a tensor, laid out as
``(leading..., prod(kernel_size), L)``; ``combine_patches`` is its exact transpose (col2im:
overlapping windows add).  ``correlate``/``convolve`` are N-D over the kernel's axes with leading
batch axes; ``maximum_filter``/``minimum_filter``/``uniform_filter`` reduce each window.

Everything is built from runetensor operations (pad, an ``as_strided`` window view, reshape,
matmul, slices, adds), so every function differentiates with ``rt.grad``; ``extract_patches``
carries its own reverse rule (``combine_patches``, k strided adds instead of a scatter-add).
Semantics and the differences from NumPy/SciPy/PyTorch are in ``docs/windows.md``.
"""
from __future__ import annotations

import builtins
import functools
import itertools
import math
import operator
from typing import Any, Sequence

from ._autodiff import custom_vjp
from ._combine import pad as _pad
from ._elementwise import iadd as _iadd
from ._reduction import max as _rmax, mean as _rmean, min as _rmin
from ._tensor import Tensor, as_tensor, wrap
from ._views import as_strided, contiguous, flip, reshape, transpose

__all__ = ["extract_patches", "combine_patches", "correlate", "convolve",
           "maximum_filter", "minimum_filter", "uniform_filter"]

_PADDINGS = ("valid", "same", "full")


# ---------------------------------------------------------------------------
# argument checking
# ---------------------------------------------------------------------------
def _int(v: Any, fname: str, what: str) -> int:
    if isinstance(v, builtins.bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{fname}: {what} must be an integer, got {v!r}")
    return operator.index(v)


def _ints(v: Any, k: int, fname: str, what: str, lo: int = 1) -> tuple[int, ...]:
    """``v`` (an int, or a sequence of ``k`` ints) as ``k`` ints ``>= lo``."""
    if isinstance(v, (list, tuple)):
        if len(v) != k:
            raise ValueError(f"{fname}: {what} {tuple(v)} has {len(v)} entries, expected {k} "
                             f"(one per spatial axis)")
        out = tuple(_int(x, fname, what) for x in v)
    else:
        out = (_int(v, fname, what),) * k
    for x in out:
        if x < lo:
            raise ValueError(f"{fname}: {what} {v!r} must be >= {lo}")
    return out


def _kernel_size(v: Any, fname: str) -> tuple[int, ...]:
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"{fname}: kernel_size must be a sequence of ints (one per spatial axis), got {v!r}")
    if len(v) == 0:
        raise ValueError(f"{fname}: kernel_size must have at least one entry, got {tuple(v)}")
    return _ints(tuple(v), len(v), fname, "kernel_size")


def _pairs(v: Any, k: int, fname: str) -> tuple[tuple[int, int], ...]:
    """``padding``: an int, ``k`` ints (symmetric) or ``k`` ``(before, after)`` pairs, all ``>= 0``."""
    if isinstance(v, str):
        raise TypeError(f"{fname}: padding must be an int or (before, after) pairs, got {v!r}")
    if isinstance(v, (list, tuple)):
        if len(v) != k:
            raise ValueError(f"{fname}: padding {tuple(v)} has {len(v)} entries, expected {k} "
                             f"(one per spatial axis)")
        out = []
        for p in v:
            if isinstance(p, (list, tuple)):
                if len(p) != 2:
                    raise ValueError(f"{fname}: padding entry {tuple(p)} must be a (before, after) pair")
                out.append((_int(p[0], fname, "padding"), _int(p[1], fname, "padding")))
            else:
                q = _int(p, fname, "padding")
                out.append((q, q))
    else:
        q = _int(v, fname, "padding")
        out = [(q, q)] * k
    for a, b in out:
        if a < 0 or b < 0:
            raise ValueError(f"{fname}: padding {tuple(out)} must be >= 0")
    return tuple(out)


def _spatial(shape: tuple[int, ...], k: int, fname: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if len(shape) < k:
        raise ValueError(f"{fname}: input of rank {len(shape)} {shape} has fewer axes than the "
                         f"{k} spatial axes of the kernel")
    return shape[:len(shape) - k], shape[len(shape) - k:]


def _out_sizes(sp: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
               pads: tuple[tuple[int, int], ...], fname: str) -> tuple[int, ...]:
    out = []
    for n, k, s, d, (a, b) in zip(sp, ks, st, dl, pads):
        ext = d * (k - 1) + 1
        if n + a + b < ext:
            raise ValueError(f"{fname}: the window (kernel_size {ks}, dilation {dl}) is larger than the "
                             f"padded input: spatial size {sp} with padding {pads}")
        out.append((n + a + b - ext) // s + 1)
    return tuple(out)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


# ---------------------------------------------------------------------------
# the two kernels: im2col (a window view) and col2im (k strided adds)
# ---------------------------------------------------------------------------
def _extract_raw(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                 pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    """im2col: ``(leading..., P, L)``: one pad, one window view, one contiguous copy."""
    k = len(ks)
    nl = x.ndim - k
    if any(a or b for a, b in pads):
        x = _pad(x, [(0, 0)] * nl + list(pads), 0)
    else:
        x = contiguous(x)
    cs = _c_strides(x.shape)
    lead, lst = x.shape[:nl], cs[:nl]
    tap_st = tuple(c * d for c, d in zip(cs[nl:], dl))
    win_st = tuple(c * s for c, s in zip(cs[nl:], st))
    shape = lead + ks + out
    strides = lst + tap_st + win_st
    final = lead + (math.prod(ks), math.prod(out))
    if x.size == 0:
        return reshape(x, final)              # (an empty batch) on x's own level, as custom_vjp's fwd needs
    v = as_strided(x, shape, strides, x.offset)
    return reshape(contiguous(v), final)


def _combine_raw(t: Tensor, size: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...],
                 dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    """col2im of patches ``t`` (``(lead..., P, L)``) into an output of spatial shape ``size``."""
    lead = t.shape[:-2]
    return _combine_y(reshape(contiguous(t), lead + ks + out), lead, size, ks, st, dl, pads, out)


def _combine_y(y: Tensor, lead: tuple[int, ...], size: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...],
               dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...],
               trail: tuple[int, ...] = ()) -> Tensor:
    """Sum each kernel offset's slice of ``y`` (``lead + ks + out + trail``, any strides) into
    ``lead + size + trail``.

    The result starts as zeros (on ``y``'s level) and each kernel offset's ``out`` values are
    added in place into the strided slice they came from (positions ``i*d - before + m*s``);
    those falling in the padding are dropped.  ``prod(kernel_size)`` in-place adds of
    offset-sized pieces: no padded copies, no zero-interleaving for strides.
    """
    taps = _col2im_taps(lead, size, ks, st, dl, pads, out, trail)
    be = y._backend
    if be.level == 0:
        # no transformation running: the same adds on the backend's handles (no Tensor indexing per tap)
        acc = be.full(lead + size + trail, 0, y._dtype)
        yd = y._data
        for src, dst in taps:
            d = be.view_index(acc, dst)
            be.binary("add", d, be.view_index(yd, src), out=d)
        return wrap(acc, y._dtype, be)
    k = len(ks)
    nl = len(lead)
    nt = len(trail)
    empty = y[(slice(None),) * nl + (0,) * k + (slice(0, 0),) * k + (slice(None),) * nt]
    acc = _pad(empty, [(0, 0)] * nl + [(n, 0) for n in size] + [(0, 0)] * nt, 0)   # zeros, on y's level
    for src, dst in taps:
        _iadd(acc[dst], y[src])
    return acc


@functools.lru_cache(maxsize=1024)
def _col2im_taps(lead: tuple[int, ...], size: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...],
                 dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...],
                 trail: tuple[int, ...]) -> tuple[tuple[tuple, tuple], ...]:
    """Per kernel offset that reaches the output: the (normalised, full) keys of its piece of ``y``
    (``lead + ks + out + trail``) and of the strided slice of the result (``lead + size + trail``)
    it adds into."""
    k = len(ks)
    full = tuple(slice(0, n, 1) for n in lead)
    tail = tuple(slice(0, n, 1) for n in trail)
    taps = []
    for idx in itertools.product(*(range(q) for q in ks)):
        src: list[Any] = list(full) + list(idx)
        dst: list[Any] = list(full)
        for ax in range(k):
            a = idx[ax] * dl[ax] - pads[ax][0]           # output position of window 0's tap
            s, o, n = st[ax], out[ax], size[ax]
            m_lo = (-a + s - 1) // s if a < 0 else 0      # first window whose tap lands at >= 0
            m_hi = min(o, (n - 1 - a) // s + 1) if n - 1 - a >= 0 else 0
            if m_hi <= m_lo:
                break
            src.append(slice(m_lo, m_hi, 1))
            before = a + m_lo * s
            dst.append(slice(before, before + (m_hi - m_lo - 1) * s + 1, s))
        else:
            taps.append((tuple(src) + tail, tuple(dst) + tail))
    return tuple(taps)


@functools.lru_cache(maxsize=512)
def _extract_fn(ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                pads: tuple[tuple[int, int], ...], sp: tuple[int, ...], out: tuple[int, ...]) -> Any:

    @custom_vjp
    def extract(x: Tensor) -> Tensor:
        return _extract_raw(x, ks, st, dl, pads, out)

    def fwd(x: Tensor) -> tuple[Tensor, None]:
        return extract(x), None        # at the level below: its own rule again (fast nested derivatives)

    def bwd(res: None, g: Tensor) -> tuple[Tensor]:
        return (_combine_raw(g, sp, ks, st, dl, pads, out),)

    extract.defvjp(fwd, bwd)
    return extract


def _extract_bl_raw(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                    pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    """im2col of an ``(N, C, spatial...)`` tensor as the matrix ``(C*P, L*N)``, the batch axis last.

    The input is moved to ``(C, spatial..., N)`` by the pad's (or a contiguous) copy, so every copy
    runs over ``N`` contiguous elements: for small images that is many times faster than rows of
    a few pixels."""
    k = len(ks)
    n, c = x.shape[0], x.shape[1]
    xt = transpose(x, [1] + list(range(2, k + 2)) + [0])
    if any(a or b for a, b in pads):
        xt = _pad(xt, [(0, 0)] + list(pads) + [(0, 0)], 0)
    else:
        xt = contiguous(xt)
    final = (c * math.prod(ks), math.prod(out) * n)
    if xt.size == 0:
        return reshape(xt, final)
    cs = _c_strides(xt.shape)
    tap_st = tuple(q * d for q, d in zip(cs[1:k + 1], dl))
    win_st = tuple(q * s for q, s in zip(cs[1:k + 1], st))
    v = as_strided(xt, (c,) + ks + out + (n,), (cs[0],) + tap_st + win_st + (cs[-1],), xt.offset)
    return reshape(contiguous(v), final)


@functools.lru_cache(maxsize=512)
def _extract_bl_fn(ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                   pads: tuple[tuple[int, int], ...], shape: tuple[int, ...], out: tuple[int, ...]) -> Any:
    """:func:`_extract_bl_raw` with col2im (batch axis last, moved first at the end) as its reverse rule."""
    n, c, sp = shape[0], shape[1], shape[2:]
    k = len(ks)
    back = [k + 1, 0] + list(range(1, k + 1))

    @custom_vjp
    def extract(x: Tensor) -> Tensor:
        return _extract_bl_raw(x, ks, st, dl, pads, out)

    def fwd(x: Tensor) -> tuple[Tensor, None]:
        return extract(x), None

    def bwd(res: None, g: Tensor) -> tuple[Tensor]:
        y = reshape(contiguous(g), (c,) + ks + out + (n,))
        return (transpose(_combine_y(y, (c,), sp, ks, st, dl, pads, out, (n,)), back),)

    extract.defvjp(fwd, bwd)
    return extract


def _im2col_bl(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
               pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    """``(C*P, L*N)`` patches of an ``(N, C, spatial...)`` tensor, batch last (for nn's convolutions)."""
    if x.dtype.is_inexact:
        return _extract_bl_fn(ks, st, dl, pads, x.shape, out)(x)
    return _extract_bl_raw(x, ks, st, dl, pads, out)


def _im2col(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
            pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    """``(leading..., P, L)`` patches of the last ``len(ks)`` axes (for nn's convolutions; no argument checks)."""
    if x.dtype.is_inexact:
        return _extract_fn(ks, st, dl, pads, x.shape[x.ndim - len(ks):], out)(x)
    return _extract_raw(x, ks, st, dl, pads, out)


def _params(t: Any, kernel_size: Any, stride: Any, dilation: Any, padding: Any, fname: str):
    x = t if isinstance(t, Tensor) else as_tensor(t, fname)
    ks = _kernel_size(kernel_size, fname)
    k = len(ks)
    st = _ints(stride, k, fname, "stride")
    dl = _ints(dilation, k, fname, "dilation")
    pads = _pairs(padding, k, fname)
    return x, ks, st, dl, pads


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
def extract_patches(t: Tensor, kernel_size: Sequence[int], stride: int | Sequence[int] = 1,
                    dilation: int | Sequence[int] = 1, padding: Any = 0) -> Tensor:
    """Sliding windows (im2col) of the last ``K = len(kernel_size)`` axes of ``t``.

    The windows are taken over the zero-padded input; window ``l`` (in row-major order of the
    output positions) starts at ``o * stride`` in the padded coordinates and its taps are
    ``dilation`` apart.  Leading axes are kept as they are.

    Args:
        t: a tensor of rank ``>= K``, shape ``(leading..., spatial...)``.
        kernel_size: the window size, one int per spatial axis (its length is ``K``).
        stride: the step between windows: an int or ``K`` ints (default 1).
        dilation: the step between a window's taps: an int or ``K`` ints (default 1).
        padding: zeros added around each spatial axis: an int, ``K`` ints (both sides), or ``K``
            ``(before, after)`` pairs (Nx's form); default 0.
    Returns:
        A new tensor of shape ``(leading..., prod(kernel_size), L)`` with ``L`` the number of windows,
        ``prod((n + before + after - dilation*(k-1) - 1) // stride + 1)``; entry ``[..., p, l]`` is tap
        ``p`` (row-major over the kernel) of window ``l``.
    Raises:
        TypeError: if ``kernel_size`` is not a sequence or an entry is not an int.
        ValueError: if a size/stride/dilation is < 1, a padding is negative or of the wrong length,
            ``t`` has fewer than ``K`` axes, or a window is larger than the padded input.

    >>> import runetensor as rt
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 16., 1.), [1, 1, 4, 4])
    >>> rt.extract_patches(x, [2, 2]).shape
    (1, 1, 4, 9)
    >>> print(rt.extract_patches(rt.create(rt.float32, [4], [1., 2., 3., 4.]), [2]))
    [[1, 2, 3],
     [2, 3, 4]]
    >>> print(rt.extract_patches(rt.create(rt.float32, [3], [1., 2., 3.]), [2], stride=2, padding=[(1, 0)]))
    [[0, 2],
     [1, 3]]
    """
    x, ks, st, dl, pads = _params(t, kernel_size, stride, dilation, padding, "extract_patches")
    _, sp = _spatial(x.shape, len(ks), "extract_patches")
    out = _out_sizes(sp, ks, st, dl, pads, "extract_patches")
    if x.dtype.is_inexact:
        return _extract_fn(ks, st, dl, pads, sp, out)(x)
    return _extract_raw(x, ks, st, dl, pads, out)


def combine_patches(t: Tensor, output_size: Sequence[int], kernel_size: Sequence[int],
                    stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1,
                    padding: Any = 0) -> Tensor:
    """Sum sliding windows back into a tensor (col2im): the exact transpose of :func:`extract_patches`.

    Each window's values are added at the positions ``extract_patches`` read them from, with
    the same ``kernel_size``, ``stride``, ``dilation`` and ``padding``; overlapping windows add,
    values that fall into the padding are dropped.  So
    ``sum(u * extract_patches(x, ...)) == sum(combine_patches(u, ...) * x)`` for all ``u``, ``x``.

    Args:
        t: patches of shape ``(leading..., prod(kernel_size), L)``.
        output_size: the spatial shape of the result (the unpadded input of ``extract_patches``).
        kernel_size, stride, dilation, padding: as for :func:`extract_patches`.
    Returns:
        A new tensor of shape ``(leading..., *output_size)`` and ``t``'s dtype.
    Raises:
        TypeError: for non-int sizes.
        ValueError: if ``output_size`` and ``kernel_size`` differ in length, ``t`` has fewer than 2
            axes, or its last two sizes are not ``prod(kernel_size)`` and the number of windows that
            ``extract_patches`` gives for ``output_size``.

    >>> import runetensor as rt
    >>> ones = rt.ones(rt.float32, [2, 3])
    >>> print(rt.combine_patches(ones, [4], [2]))
    [1, 2, 2, 1]
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 9., 1.), [3, 3])
    >>> print(rt.combine_patches(rt.extract_patches(x, [2, 2]), [3, 3], [2, 2]))
    [[0, 2, 2],
     [6, 16, 10],
     [6, 14, 8]]
    """
    fname = "combine_patches"
    x, ks, st, dl, pads = _params(t, kernel_size, stride, dilation, padding, fname)
    if not isinstance(output_size, (list, tuple)):
        raise TypeError(f"{fname}: output_size must be a sequence of ints, got {output_size!r}")
    size = _ints(tuple(output_size), len(output_size), fname, "output_size", lo=0)
    if len(size) != len(ks):
        raise ValueError(f"{fname}: output_size {size} and kernel_size {ks} differ in length")
    out = _out_sizes(size, ks, st, dl, pads, fname)
    want = (math.prod(ks), math.prod(out))
    if x.ndim < 2 or x.shape[-2:] != want:
        raise ValueError(f"{fname}: patches of shape {x.shape} do not match output_size {size}, kernel_size "
                         f"{ks}, stride {st}, dilation {dl}, padding {pads}: expected shape "
                         f"(leading..., {want[0]}, {want[1]})")
    return _combine_raw(x, size, ks, st, dl, pads, out)


def _corr_pads(ks: tuple[int, ...], padding: Any, fname: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(padding, str) or padding not in _PADDINGS:
        raise ValueError(f"{fname}: padding must be 'valid', 'same' or 'full', got {padding!r}")
    if padding == "valid":
        return tuple((0, 0) for _ in ks)
    if padding == "full":
        return tuple((k - 1, k - 1) for k in ks)
    return tuple(((k - 1) // 2, k - 1 - (k - 1) // 2) for k in ks)


def _correlate(x: Any, kernel: Any, padding: Any, fname: str, flipped: bool) -> Tensor:
    x = x if isinstance(x, Tensor) else as_tensor(x, fname)
    w = kernel if isinstance(kernel, Tensor) else as_tensor(kernel, fname, backend=x._backend)
    if w.ndim == 0:
        raise ValueError(f"{fname}: the kernel must have at least one axis, got a 0-d tensor")
    ks = w.shape
    if 0 in ks:
        raise ValueError(f"{fname}: the kernel has an empty axis: shape {ks}")
    pads = _corr_pads(ks, padding, fname)
    lead, sp = _spatial(x.shape, len(ks), fname)
    if padding == "valid" and any(n < k for n, k in zip(sp, ks)):
        raise ValueError(f"{fname}: kernel of shape {ks} is larger than the input's spatial shape {sp} "
                         f"with padding='valid'; use 'same' or 'full'")
    one = (1,) * len(ks)
    if flipped:
        w = flip(w, list(range(w.ndim)))
    p = extract_patches(x, list(ks), one, one, pads)
    out = _out_sizes(sp, ks, one, one, pads, fname)
    r = reshape(contiguous(w), (math.prod(ks),)) @ p
    return reshape(r, lead + out)


def correlate(x: Tensor, kernel: Tensor, padding: str = "valid") -> Tensor:
    """N-D cross-correlation of ``x`` with ``kernel`` (no kernel flip, no conjugation).

    ``out[..., i] = sum_j x_padded[..., i + j] * kernel[j]`` over the kernel's ``K = kernel.ndim``
    axes, which are ``x``'s last ``K`` axes; ``x``'s leading axes are batch axes.

    Args:
        x: a tensor of rank ``>= kernel.ndim``.
        kernel: a tensor with no empty axis.
        padding: ``"valid"`` (no padding: windows inside ``x``), ``"same"`` (the output has ``x``'s
            spatial shape; ``(k-1)//2`` zeros before and the rest after, as PyTorch), or ``"full"``
            (``k-1`` zeros on both sides: every overlap).
    Returns:
        A tensor of the promoted dtype, shape ``leading + out``.
    Raises:
        ValueError: for a bad ``padding``, a 0-d or empty kernel, ``x`` of lower rank than the kernel, or a
            kernel larger than ``x`` with ``"valid"``.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [5], [1., 2., 3., 4., 5.])
    >>> print(rt.correlate(x, rt.create(rt.float32, [2], [1., -1.])))
    [-1, -1, -1, -1]
    >>> print(rt.correlate(x, rt.create(rt.float32, [3], [0., 1., 2.]), padding="same"))
    [5, 8, 11, 14, 5]
    >>> rt.correlate(rt.zeros(rt.float32, [8, 6, 6]), rt.ones(rt.float32, [3, 3]), padding="full").shape
    (8, 8, 8)
    """
    return _correlate(x, kernel, padding, "correlate", False)


def convolve(x: Tensor, kernel: Tensor, padding: str = "valid") -> Tensor:
    """N-D convolution: :func:`correlate` with the kernel flipped along all its axes.

    ``out[..., i] = sum_j x_padded[..., i + j] * kernel[k - 1 - j]``; ``padding`` pads as in
    :func:`correlate` (so with ``"same"`` and an even kernel the result is shifted by one from
    SciPy's, see ``docs/windows.md``).

    Args:
        x: a tensor of rank ``>= kernel.ndim``; leading axes are batch axes.
        kernel: a tensor with no empty axis.
        padding: ``"valid"``, ``"same"`` or ``"full"``.
    Returns:
        A tensor of the promoted dtype, shape ``leading + out``.
    Raises:
        ValueError: as :func:`correlate`.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [3], [1., 2., 3.])
    >>> print(rt.convolve(x, rt.create(rt.float32, [2], [1., 10.]), padding="full"))
    [1, 12, 23, 30]
    """
    return _correlate(x, kernel, padding, "convolve", True)


def _filter(t: Any, kernel_size: Any, stride: Any, fname: str, red: Any) -> Tensor:
    x = t if isinstance(t, Tensor) else as_tensor(t, fname)
    ks = _kernel_size(kernel_size, fname)
    st = ks if stride is None else _ints(stride, len(ks), fname, "stride")
    lead, sp = _spatial(x.shape, len(ks), fname)
    if any(n < k for n, k in zip(sp, ks)):
        raise ValueError(f"{fname}: kernel_size {ks} is larger than the input's spatial shape {sp}")
    one = (1,) * len(ks)
    zero = tuple((0, 0) for _ in ks)
    out = _out_sizes(sp, ks, st, one, zero, fname)
    p = extract_patches(x, list(ks), st, one, zero)
    return reshape(red(p, axes=[-2]), lead + out)


def maximum_filter(t: Tensor, kernel_size: Sequence[int], stride: int | Sequence[int] | None = None) -> Tensor:
    """The maximum of each window over the last ``len(kernel_size)`` axes (no padding).

    Args:
        t: a tensor; its leading axes are batch axes.
        kernel_size: the window size, one int per spatial axis.
        stride: the step between windows (default: ``kernel_size``, non-overlapping windows, as Nx).
    Returns:
        A tensor of ``t``'s dtype, shape ``leading + ((n - k) // stride + 1 per axis)``.
    Raises:
        TypeError: if ``kernel_size`` is not a sequence of ints.
        ValueError: if a size or stride is < 1, or the window is larger than ``t``.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [6], [1., 5., 2., 0., 3., 4.])
    >>> print(rt.maximum_filter(x, [2]))
    [5, 2, 4]
    >>> print(rt.maximum_filter(x, [3], stride=1))
    [5, 5, 3, 4]
    """
    return _filter(t, kernel_size, stride, "maximum_filter", _rmax)


def minimum_filter(t: Tensor, kernel_size: Sequence[int], stride: int | Sequence[int] | None = None) -> Tensor:
    """The minimum of each window over the last ``len(kernel_size)`` axes (no padding).

    Args:
        t: a tensor; its leading axes are batch axes.
        kernel_size: the window size, one int per spatial axis.
        stride: the step between windows (default: ``kernel_size``, as Nx).
    Returns:
        A tensor of ``t``'s dtype, shape ``leading + ((n - k) // stride + 1 per axis)``.
    Raises:
        TypeError: if ``kernel_size`` is not a sequence of ints.
        ValueError: if a size or stride is < 1, or the window is larger than ``t``.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [2, 4], [1, 5, 2, 0, 3, 4, 7, 8])
    >>> print(rt.minimum_filter(x, [2, 2]))
    [[1, 0]]
    """
    return _filter(t, kernel_size, stride, "minimum_filter", _rmin)


def uniform_filter(t: Tensor, kernel_size: Sequence[int], stride: int | Sequence[int] | None = None) -> Tensor:
    """The mean of each window over the last ``len(kernel_size)`` axes (no padding).

    Args:
        t: a tensor; its leading axes are batch axes.
        kernel_size: the window size, one int per spatial axis.
        stride: the step between windows (default: ``kernel_size``, as Nx).
    Returns:
        A tensor (the dtype ``rt.mean`` gives: floats keep theirs), shape
        ``leading + ((n - k) // stride + 1 per axis)``.
    Raises:
        TypeError: if ``kernel_size`` is not a sequence of ints.
        ValueError: if a size or stride is < 1, or the window is larger than ``t``.

    >>> import runetensor as rt
    >>> print(rt.uniform_filter(rt.create(rt.float32, [5], [1., 2., 3., 4., 6.]), [2], stride=1))
    [1.5, 2.5, 3.5, 5]
    """
    return _filter(t, kernel_size, stride, "uniform_filter", _rmean)
