"""Convolutions and pooling, with the names and parameters of PyTorch's functional ops (NCHW).

``conv1d``/``conv2d``/``conv3d`` with stride 1, one group and float32 operands run on the compiled
flat-row kernels of ``runetensor/_backend/_convk.py`` (also as single steps under ``rt.jit``); the
others are im2col (:func:`runetensor.extract_patches`) followed by one (batched) matrix product per
call (stride-1 convolutions of larger images read the patches as contiguous runs of the flattened
padded input, in batch chunks on the thread pool; see ``docs/windows.md`` and
``docs/performance.md``, "Convolutions"); ``conv_transpose1d/2d/3d`` are the transpose: a matrix
product followed by col2im (the strided adds of :func:`runetensor.combine_patches`).  Pooling
reduces the windows of ``extract_patches``.  Everything is built from runetensor operations, so
``rt.grad`` differentiates it; there is no Python loop over output positions.  Semantics and the
differences from PyTorch are in ``docs/windows.md``.
"""
from __future__ import annotations

import builtins
import functools
import itertools
import math
import operator
import threading
from typing import Any

from .. import _dtypes as D
from .._combine import pad as _pad
from .._creation import int_range, ones
from .._elementwise import maximum as _maximum
from .._reduction import sum as _rsum
from .._autodiff import custom_vjp, vjp as _vjp
from .._tracers._diff import TraceBackend, carries_derivative
from .._backend import _convk
from .._backend._parallel import parallel_for
from .._tensor import Tensor, as_tensor, wrap
from .._views import contiguous, copy, reshape, swapaxes, transpose
from .._windows import _c_strides, _col2im_taps, _combine_raw, _combine_y, _im2col, _im2col_bl, extract_patches

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"]


# ---------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------
def _int(v: Any, fname: str, what: str) -> int:
    if isinstance(v, builtins.bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{fname}: {what} must be an int or a tuple of ints, got {v!r}")
    return operator.index(v)


def _tup(v: Any, nd: int, fname: str, what: str, lo: int) -> tuple[int, ...]:
    if isinstance(v, (list, tuple)):
        if len(v) != nd:
            raise ValueError(f"{fname}: {what} {tuple(v)} must have {nd} entries (one per spatial axis)")
        out = tuple(_int(x, fname, what) for x in v)
    else:
        out = (_int(v, fname, what),) * nd
    if any(x < lo for x in out):
        raise ValueError(f"{fname}: {what} {v!r} must be >= {lo}")
    return out


def _t(x: Any, fname: str, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return as_tensor(x, fname, backend=None if like is None else like._backend)


def _batched(x: Tensor, nd: int, fname: str, what: str = "input") -> tuple[Tensor, bool]:
    """``x`` with a batch axis (added for an unbatched ``(C, spatial...)`` input) and whether it was added."""
    if x.ndim == nd + 2:
        return x, False
    if x.ndim == nd + 1:
        return reshape(contiguous(x), (1,) + x.shape), True
    raise ValueError(f"{fname}: expected a {nd + 2}-d (batched) or {nd + 1}-d (unbatched) {what}, "
                     f"got shape {x.shape}")


def _unbatch(y: Tensor, added: bool) -> Tensor:
    return reshape(y, y.shape[1:]) if added else y


# ---------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------
def _conv_pads(padding: Any, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
               fname: str) -> tuple[tuple[int, int], ...]:
    nd = len(ks)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding == "same":
            if any(s != 1 for s in st):
                raise ValueError(f"{fname}: padding='same' needs stride 1, got stride {st}")
            tot = [d * (k - 1) for k, d in zip(ks, dl)]
            return tuple((t // 2, t - t // 2) for t in tot)
        raise ValueError(f"{fname}: padding must be 'valid', 'same', an int or a tuple of {nd} ints, "
                         f"got {padding!r}")
    return tuple((p, p) for p in _tup(padding, nd, fname, "padding", 0))


def _groups(groups: Any, fname: str) -> int:
    g = _int(groups, fname, "groups")
    if g < 1:
        raise ValueError(f"{fname}: groups must be >= 1, got {g}")
    return g


def _add_bias(y: Tensor, bias: Any, cout: int, nd: int, fname: str) -> Tensor:
    if bias is None:
        return y
    b = _t(bias, fname, y)
    if b.shape != (cout,):
        raise ValueError(f"{fname}: bias of shape {b.shape} does not match the {cout} output channels; "
                         f"expected shape ({cout},)")
    return y + reshape(contiguous(b), (cout,) + (1,) * nd)


#: the last output axis below which convolutions use the batch-last im2col when the patch matrix is
#: larger than the output (C_in*K > C_out: the patches' copies and col2im's adds save more than the
#: output's transposing copy costs).  Measured on the digits CNN: conv 16->32 on 4x4 images 1.6x
#: faster forward + backward; conv 1->16 on 8x8 (C_in*K = 9) and 32x32 images faster as (N, C*K, L).
_BATCH_LAST_BELOW = 16


def _operands(x: Any, weight: Any, groups: Any, nd: int, fname: str,
              layout: str) -> tuple[Tensor, Tensor, bool, int]:
    """The input (batched: ``added`` says whether a batch axis was added), the weight (``nd + 2``
    axes, ``layout`` naming its two leading ones) and the groups of a convolution."""
    x = _t(x, fname)
    w = _t(weight, fname, x)
    if w.ndim != nd + 2:
        raise ValueError(f"{fname}: weight must have shape ({layout}, {', '.join('k' * nd)}), "
                         f"got shape {w.shape}")
    x, added = _batched(x, nd, fname)
    return x, w, added, _groups(groups, fname)


def _convnd(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any, groups: Any,
            nd: int, fname: str) -> Tensor:
    x, w, added, g = _operands(x, weight, groups, nd, fname, "C_out, C_in/groups")
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    ks = w.shape[2:]
    if c % g or cout % g:
        raise ValueError(f"{fname}: groups={g} must divide the input channels ({c}) and the output channels "
                         f"({cout})")
    if cg * g != c:
        raise ValueError(f"{fname}: input has {c} channels but weight of shape {w.shape} expects "
                         f"{cg * g} (weight.shape[1]={cg} x groups={g})")
    if 0 in ks:
        raise ValueError(f"{fname}: weight has an empty kernel axis: shape {w.shape}")
    st = _tup(stride, nd, fname, "stride", 1)
    dl = _tup(dilation, nd, fname, "dilation", 1)
    pads = _conv_pads(padding, ks, st, dl, fname)
    sp = x.shape[2:]
    out = []
    for i in range(nd):
        eff = dl[i] * (ks[i] - 1) + 1
        if sp[i] + sum(pads[i]) < eff:
            raise ValueError(f"{fname}: kernel of size {ks} (dilation {dl}) is larger than the input's spatial "
                             f"shape {sp} padded by {tuple(p[0] + p[1] for p in pads)}")
        out.append((sp[i] + sum(pads[i]) - eff) // st[i] + 1)
    kk = math.prod(ks)
    out = tuple(out)
    b = None
    if bias is not None:
        b = _t(bias, fname, x)
        if b.shape != (cout,):
            raise ValueError(f"{fname}: bias of shape {b.shape} does not match the {cout} output channels; "
                             f"expected shape ({cout},)")
    # the custom rules take the bias too (added in place, its gradient one reduction) when of x's dtype
    custom = x.dtype is w.dtype and x.dtype.is_inexact and n > 0 and (b is None or b.dtype is x.dtype)
    args = (x, w) if b is None else (x, w, b)
    need = tuple(carries_derivative(a) for a in args)
    if custom and g == 1 and c and cout and x.dtype is D.float32 and all(v == 1 for v in st) \
            and _kernel_chain(x._backend):
        # stride 1, float32: the compiled flat-row kernels (_backend/_convk.py), also as one step under rt.jit
        return _unbatch(_conv_k_fn(x.shape, w.shape, ks, dl, pads, out, need)(*args), added)
    if out[-1] < _BATCH_LAST_BELOW and c * kk > cout:
        # small images: im2col with the batch axis last, (C*K, L*N), so that the copies and col2im's adds
        # run over N contiguous elements; one matrix product per group, then (C_out, out..., N) moved to
        # (N, C_out, out...) by one copy
        if custom:
            return _unbatch(_conv_bl_fn(x.shape, w.shape, g, ks, st, dl, pads, out, need)(*args), added)
        y = _conv_bl(x, w, g, ks, st, dl, pads, out)
    else:
        # im2col as (N, C*K, L) (a free reshape of extract_patches' (N, C, K, L)), then one batched
        # product (C_out/G, C_in/G*K) @ (N, G, C_in/G*K, L): the result is (N, C_out, L) with no
        # transpose; its reverse rule is two batched products (the weight's summed over N) and col2im
        if custom:
            # a custom rule: forward and backward run in chunks of the batch (each chunk's patches
            # stay in cache from im2col to the product; the backward recomputes them)
            fn = _conv_nf_fn(x.shape, w.shape, g, ks, st, dl, pads, out, need)
            return _unbatch(reshape(fn(*args), (n, cout) + out), added)
        y = reshape(_conv_nf(x, w, g, ks, st, dl, pads, out), (n, cout) + out)
    return _unbatch(_add_bias(y, b, cout, nd, fname), added)


def _kernel_chain(be: Any) -> bool:
    """Whether the compiled convolution kernels can serve a tensor of backend ``be``: the NumPy backend,
    possibly under reverse/forward-mode tracers and ``rt.jit`` (whose program then runs the kernels as
    one step, :func:`_host`); not under ``vmap`` or on other backends."""
    if not _convk.AVAILABLE:
        return False
    while be.level > 0:
        if not isinstance(be, TraceBackend) and getattr(be, "host_call", None) is None:
            return False
        be = be.parent
    return be.name == "numpy"


def _host(*ts: Tensor, any_level0: bool = False) -> Any:
    """How to run code on the level-0 handles of ``ts``: ``(call, be)``, ``be`` the level-0 backend and
    ``call(name, fn, handles)`` running ``fn`` on its handles: directly for tensors of the NumPy backend
    (of any level-0 backend with ``any_level0``), or recorded as one step of ``rt.jit``'s program for
    tensors traced by a jit directly over the NumPy backend (``JitBackend.host_call``).  None under any
    other transformation (which must see the primitives) and for tensors of different backends."""
    be = ts[0]._backend
    if any(t._backend is not be for t in ts[1:]):
        return None
    if be.level == 0:
        return (_direct, be) if be.name == "numpy" or any_level0 else None
    par = getattr(be, "parent", None)
    call = getattr(be, "host_call", None)
    if call is not None and par is not None and par.level == 0 and par.name == "numpy":
        return call, par
    return None


def _direct(name: str, fn: Any, hs: Any) -> Any:
    return fn(*hs)


@functools.lru_cache(maxsize=256)
def _conv_k_fn(xshape: tuple[int, ...], wshape: tuple[int, ...], ks: tuple[int, ...], dl: tuple[int, ...],
               pads: tuple[tuple[int, int], ...], out: tuple[int, ...], need: tuple[bool, ...]) -> Any:
    """A stride-1, one-group float32 convolution ``conv(x, w[, b]) -> (N, C_out, out...)`` on the compiled
    flat-row kernels (:mod:`runetensor._backend._convk`), with a hand-written reverse rule.

    On NumPy-backend handles the forward (bias added in the output pass) and the backward (input and
    weight gradients from the forward's flat rows) run in C; under ``rt.jit`` directly over the NumPy
    backend each is one step of the program (:func:`_host`).  Under any other transformation the
    computation is written with runetensor operations (:func:`_conv_nf`, :func:`_conv_nf_bwd`), so
    higher derivatives work."""
    n, cout = xshape[0], wshape[0]
    st = (1,) * len(ks)
    need_x, need_w = need[:2]
    need_b = len(need) == 3 and need[2]

    def traced(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        return reshape(_conv_nf(x, w, 1, ks, st, dl, pads, out, b), (n, cout) + out)

    def fwd_raw(x: Any, w: Any, b: Any = None) -> tuple[Any, Any]:
        return _convk.forward(x, w, b, ks, dl, pads, out)

    def fun(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        ts = (x, w) if b is None else (x, w, b)
        host = _host(*ts)
        if host is None:
            return traced(*ts)
        y = host[0]("conv", lambda *hs: fwd_raw(*hs)[0], [t._data for t in ts])
        return wrap(y, x._dtype, x._backend)

    conv = custom_vjp(fun)

    def fwd(*args: Tensor) -> tuple[Tensor, tuple]:
        x = args[0]
        host = _host(*args)
        if host is None:
            return conv(*args), (x, args[1], None)      # at the level below: its own rule again
        y, xr = host[0]("conv_fwd", fwd_raw, [t._data for t in args])
        return wrap(y, x._dtype, x._backend), (x, args[1], xr)

    def bwd_raw(gy: Any, xr: Any, w: Any) -> tuple[Any, ...]:
        gx, gw, gb = _convk.backward(gy, xr, w, xshape, ks, dl, pads, out, need_x, need_w, need_b)
        return tuple(v for v in (gx, gw, gb) if v is not None)

    def bwd(res: tuple, gy: Tensor) -> tuple[Any, ...]:
        x, w, xr = res
        host = None if xr is None else _host(gy, x, w)
        if host is None:
            return _conv_nf_bwd(x, w, gy, 1, ks, st, dl, pads, out, need)
        be, dt = gy._backend, x._dtype
        got = iter(host[0]("conv_bwd", bwd_raw, [gy._data, xr, w._data]))
        cts = tuple(wrap(next(got), dt, be) if nd_ else None for nd_ in (need_x, need_w, need_b))
        return cts if len(need) == 3 else cts[:2]

    conv.defvjp(fwd, bwd)
    return conv


def _conv_nf(x: Tensor, w: Tensor, g: int, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
             pads: tuple[tuple[int, int], ...], out: tuple[int, ...], b: Tensor | None = None) -> Tensor:
    """The convolution as ``(N, G, C_out/G, L)`` with runetensor operations (any level, any dtypes)."""
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    kk, lsz = math.prod(ks), math.prod(out)
    p = _im2col(x, ks, st, dl, pads, out)                                  # (N, C, K, L)
    y = reshape(contiguous(w), (g, cout // g, cg * kk)) @ reshape(p, (n, g, cg * kk, lsz))
    return y if b is None else y + reshape(contiguous(b), (g, cout // g, 1))


def _conv_nf_bwd(x: Tensor, w: Tensor, gy: Tensor, g: int, ks: tuple[int, ...], st: tuple[int, ...],
                 dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...],
                 need: tuple[bool, ...]) -> tuple[Any, ...]:
    """The cotangents of :func:`_conv_nf` with runetensor operations (differentiable again)."""
    need_x, need_w = need[:2]
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    kk, lsz = math.prod(ks), math.prod(out)
    g4 = reshape(contiguous(gy), (n, g, cout // g, lsz))
    p = reshape(_im2col(x, ks, st, dl, pads, out), (n, g, cg * kk, lsz))
    gx = gw = None
    if need_w:
        gw = reshape(_rsum(g4 @ swapaxes(p, -1, -2), axes=[0]), w.shape)
    if need_x:
        gp = swapaxes(reshape(contiguous(w), (g, cout // g, cg * kk)), -1, -2) @ g4     # (N, G, C/G*K, L)
        gx = _combine_y(reshape(gp, (n, c) + ks + out), (n, c), x.shape[2:], ks, st, dl, pads, out)
    if len(need) == 2:
        return gx, gw
    return gx, gw, (reshape(_rsum(g4, axes=[0, 3]), (cout,)) if need[2] else None)


def _nf_chunks(n: int, per_sample: int, itemsize: int) -> list[tuple[int, int]]:
    """Batch ranges whose patch matrices take about 2 MiB (a chunk stays in cache)."""
    cs = max(1, (2 << 20) // max(1, per_sample * itemsize))
    return [(a, min(n, a + cs)) for a in range(0, n, cs)]


#: the patches of one chunk of the stride-1 path take at most about this many bytes (at least one sample):
#: measured on the 16->32, 32x32 conv, chunks of 1-2 samples ran the forward twice as fast as chunks of 4-8
#: (the buffers of larger chunks are fresh pages from the allocator every time)
_WIDE_CHUNK_BYTES = 3 << 19


#: stride-1 convolutions use the flat-row path when a sample's wide output row has at least this many
#: positions.  Measured on one thread, batch 32, 16->32 channels, 3x3, padding 1, forward + both
#: gradients: 32x32 images (rows of 1088) 19.2 ms against 28.4 ms for the per-sample im2col, 16x16
#: (rows of 288) 7.1 ms against 14.2 ms; the digits CNN's 1->16 conv on 8x8 (rows of 80, batch 64)
#: was slower on it (0.32 against 0.20 ms forward): short rows pay their padding and the per-tap calls
_WIDE_MIN_ROW = 256


@functools.lru_cache(maxsize=256)
def _wide_chunks(n: int, per_sample: int) -> tuple[tuple[int, int], ...]:
    """Batch ranges of the stride-1 path: shape-only (never the thread count), at most about
    :data:`_WIDE_CHUNK_BYTES` of patches each."""
    cs = max(1, _WIDE_CHUNK_BYTES // max(1, per_sample))
    return tuple((a, min(n, a + cs)) for a in range(0, n, cs))


@functools.lru_cache(maxsize=256)
def _wide_geometry(sp: tuple[int, ...], ks: tuple[int, ...], dl: tuple[int, ...],
                   pads: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> tuple[Any, ...]:
    """The layout of a stride-1 convolution computed on "wide" rows.

    The input is zero-padded (plus a few extra rows at the end of the first spatial axis) and
    each sample's padded spatial block is read as one flat row of ``sflat`` elements.  Output
    position ``q`` of the wide output (``out[0]`` x the padded sizes of the other spatial axes,
    ``lw`` positions) reads tap ``t`` at flat position ``offs[t] + q``, so each tap's patch row is
    one contiguous run of ``lw`` elements (the copies and col2im's adds run over long rows instead
    of rows of a few pixels).  Positions whose column lies past ``out`` are computed and dropped.

    Returns ``(widths, ps, sflat, lw, wshape, tap_strides, offs)``: the pad widths of the spatial
    axes, the padded spatial shape, its size, the wide output's length and shape, the flat strides
    of the kernel axes and each tap's flat offset (row-major over the kernel)."""
    nd = len(ks)
    sp_pad = tuple(m + a + b for m, (a, b) in zip(sp, pads))
    inner = math.prod(sp_pad[1:])
    tail = sum((ks[i] - 1) * dl[i] * math.prod(sp_pad[i + 1:]) for i in range(1, nd))
    extra = -(-tail // inner) if inner else 0
    ps = (sp_pad[0] + extra,) + sp_pad[1:]
    cs = _c_strides(ps)
    widths = ((pads[0][0], pads[0][1] + extra),) + tuple(pads[1:])
    tap_strides = tuple(cs[i] * dl[i] for i in range(nd))
    offs = tuple(sum(i * s for i, s in zip(idx, tap_strides))
                 for idx in itertools.product(*(range(k) for k in ks)))
    return widths, ps, math.prod(ps), out[0] * inner, (out[0],) + sp_pad[1:], tap_strides, offs


def _raw_padded(be: Any, xd: Any, pads: tuple[tuple[int, int], ...]) -> tuple[Any, int]:
    if any(a or b for a, b in pads):
        return be.pad(xd, [(0, 0), (0, 0)] + list(pads), 0), 0
    xd = be.contiguous(xd)
    return xd, be.offset(xd)


def _raw_patches(be: Any, xp: Any, off: int, a: int, b: int, ks: tuple[int, ...], st: tuple[int, ...],
                 dl: tuple[int, ...], out: tuple[int, ...]) -> Any:
    """The ``(b - a, C, K, L)`` patches of samples ``a:b`` of the padded C-contiguous handle ``xp``."""
    cs = _c_strides(xp.shape)
    k = len(ks)
    shape = (b - a, xp.shape[1]) + ks + out
    strides = (cs[0], cs[1]) + tuple(cs[2 + i] * dl[i] for i in range(k)) + tuple(cs[2 + i] * st[i] for i in range(k))
    v = be.as_strided(xp, shape, strides, off + a * cs[0])
    return be.reshape(be.copy(v), (b - a, xp.shape[1], math.prod(ks), math.prod(out)))


@functools.lru_cache(maxsize=256)
def _conv_nf_fn(xshape: tuple[int, ...], wshape: tuple[int, ...], g: int, ks: tuple[int, ...],
                st: tuple[int, ...], dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...],
                need: tuple[bool, ...]) -> Any:
    """``conv(x, w[, b]) -> (N, G, C_out/G, L)`` (one dtype) with a hand-written reverse rule.

    Without a transformation below it (handles of a level-0 backend) both directions run on the
    backend's handles in batch chunks: im2col of a chunk, its products, and (backward) col2im's
    strided adds of the chunk straight into the input gradient; stride-1 convolutions with long output
    rows take the flat-row layout of :func:`_wide_geometry` (chunks on the thread pool).  Under a
    transformation the same
    computation is written with runetensor operations (:func:`_conv_nf`, :func:`_conv_nf_bwd`), so
    higher derivatives work."""
    n, c, sp = xshape[0], xshape[1], xshape[2:]
    cout, cg = wshape[:2]
    co = cout // g
    kk, lsz = math.prod(ks), math.prod(out)
    need_x, need_w = need[:2]
    wide = all(s == 1 for s in st) and _wide_geometry(sp, ks, dl, pads, out)[3] >= _WIDE_MIN_ROW
    if wide:
        widths, ps, sflat, lw, wide_shape, tap_strides, offs = _wide_geometry(sp, ks, dl, pads, out)
        pwidths = [(0, 0), (0, 0)] + list(widths)
        all_out = tuple(slice(0, m, 1) for m in (cout,) + out)
        crop = tuple(slice(a, a + m, 1) for (a, _), m in zip(widths, sp))
        view_rest = tuple(slice(0, m, 1) for m in (c,) + ks + (lw,))
        nd = len(ks)

    def level0(*ts: Tensor) -> Any:
        be = ts[0]._backend
        return be if be.level == 0 and all(t._backend is be for t in ts) else None

    def wide_view(be: Any, xp: Any) -> Any:
        """The ``(N, C, ks..., lw)`` window view of the padded input ``xp`` (one contiguous run of
        ``lw`` per patch row)."""
        return be.as_strided(xp, (n, c) + ks + (lw,), (c * sflat, sflat) + tap_strides + (1,), be.offset(xp))

    def wide_patches(be: Any, v: Any, a: int, b: int, bufs: dict, dt: Any) -> Any:
        """The ``(m, G, C/G*K, lw)`` patches of samples ``a:b`` of the window view ``v``, copied into
        this thread's buffer of the call (``bufs``: fresh buffers per chunk cost page faults that
        took longer than the copy)."""
        m = b - a
        key = (threading.get_ident(), m)
        buf = bufs.get(key)
        if buf is None:
            buf = bufs[key] = be.empty((m, c) + ks + (lw,), dt)
        be.assign(buf, be.view_index(v, (slice(a, b, 1),) + view_rest))
        return be.reshape(buf, (m, g, cg * kk, lw))

    def wide_fwd(be: Any, x: Tensor, w: Tensor, b: Tensor | None) -> tuple[Any, Any]:
        """The stride-1 forward in chunks of the batch (over the thread pool): wide patches, one
        product, the valid columns written into ``y`` with the bias added on the way (one pass)."""
        v = wide_view(be, be.pad(x._data, pwidths, 0))
        w3 = be.reshape(be.contiguous(w._data), (g, co, cg * kk))
        bias = None if b is None else be.reshape(be.contiguous(b._data), (cout,) + (1,) * nd)
        y = be.empty((n, cout) + out, x._dtype)
        wchunks = _wide_chunks(n, c * kk * lw * x.itemsize)
        bufs: dict = {}

        def chunk(i: int) -> None:
            a, e = wchunks[i]
            p = wide_patches(be, v, a, e, bufs, x._dtype)
            yw = be.reshape(be.matmul(w3, p), (e - a, cout) + wide_shape)
            src = be.view_index(yw, (slice(0, e - a, 1),) + all_out)
            dst = be.view_index(y, (slice(a, e, 1),) + all_out)
            if bias is None:
                be.assign(dst, src)
            else:
                be.binary("add", src, bias, out=dst)

        parallel_for(chunk, len(wchunks))
        return be.reshape(y, (n, g, co, lsz)), v          # the window view (its padded input) for the backward

    def wide_bwd(be: Any, x: Tensor, w: Tensor, gy: Tensor, v: Any) -> tuple[Any, Any]:
        """The stride-1 backward from the forward's window view ``v`` (None: made again).

        The cotangent is widened with zero columns once for the batch.  The weight's gradient is
        one batched product per kernel tap read straight from the window view (no patch copy:
        measured 4.1 ms against 6.6 ms for copying the patches and one product with them, on the
        16->32 32x32 conv), summed over the batch.  The input's gradient runs in batch chunks on
        the thread pool: one product per tap, each added over contiguous runs (col2im)."""
        dt = x._dtype
        gyd = be.reshape(be.contiguous(gy._data), (n, cout) + out)
        gwide = be.full((n, cout) + wide_shape, 0, dt)          # zero outside the valid columns
        be.assign(be.view_index(gwide, (slice(0, n, 1),) + all_out), gyd)
        g4 = be.reshape(gwide, (n, g, co, lw))
        gw = None
        if need_w:
            if v is None:
                v = wide_view(be, be.pad(x._data, pwidths, 0))
            gw = be.empty((g, co, cg, kk), dt)
            lead = (slice(0, n, 1), slice(0, c, 1))
            for t, idx in enumerate(itertools.product(*(range(k) for k in ks))):
                vt = be.reshape(be.view_index(v, lead + idx + (slice(0, lw, 1),)), (n, g, cg, lw))
                prod = be.matmul(g4, be.permute(vt, (0, 1, 3, 2)))          # (N, G, C_out/G, C_in/G)
                be.assign(be.view_index(gw, (slice(0, g, 1), slice(0, co, 1), slice(0, cg, 1), t)),
                          be.reduce("sum", prod, (0,), False))
        gx = None
        if need_x:
            # per tap, (G, C_in/G, C_out/G): its product with a chunk's cotangent is that tap's
            # (m, C_in, lw) contribution, added straight into the flat input gradient (no
            # (m, C_in*K, lw) product to read back: measured 5.9 ms against 10.1 ms)
            w4 = be.reshape(be.contiguous(w._data), (g, co, cg, kk))
            wts = [be.contiguous(be.permute(be.view_index(w4, (slice(0, g, 1), slice(0, co, 1), slice(0, cg, 1), t)),
                                            (0, 2, 1))) for t in range(kk)]
            gx = be.empty((n, c) + sp, dt)
            wchunks = _wide_chunks(n, 2 * c * sflat * x.itemsize)
            chans = slice(0, c, 1)

            def chunk(i: int) -> None:
                a, e = wchunks[i]
                m = e - a
                rows = slice(0, m, 1)
                gc = be.view_index(g4, (slice(a, e, 1), slice(0, g, 1), slice(0, co, 1), slice(0, lw, 1)))
                acc = be.full((m, c, sflat), 0, dt)
                for t, o in enumerate(offs):
                    d = be.view_index(acc, (rows, chans, slice(o, o + lw, 1)))
                    be.binary("add", d, be.reshape(be.matmul(wts[t], gc), (m, c, lw)), out=d)
                val = be.view_index(be.reshape(acc, (m, c) + ps), (rows, chans) + crop)
                be.assign(be.view_index(gx, (slice(a, e, 1), chans) + tuple(slice(0, q, 1) for q in sp)), val)

            parallel_for(chunk, len(wchunks))
        return gx, gw

    def raw(be: Any, x: Tensor, w: Tensor, b: Tensor | None) -> tuple[Any, Any]:
        if wide:
            return wide_fwd(be, x, w, b)
        y, p = raw_nobias(be, x, w)
        if b is not None:
            be.binary("add", y, be.reshape(be.contiguous(b._data), (g, co, 1)), out=y)
        return y, p

    def raw_nobias(be: Any, x: Tensor, w: Tensor) -> tuple[Any, Any]:
        """``y`` and, when the batch is one chunk, its patches (kept for the backward)."""
        xp, off = _raw_padded(be, x._data, pads)
        w3 = be.reshape(be.contiguous(w._data), (g, co, cg * kk))
        chunks = _nf_chunks(n, c * kk * lsz, x.itemsize)
        if len(chunks) == 1:
            p = be.reshape(_raw_patches(be, xp, off, 0, n, ks, st, dl, out), (n, g, cg * kk, lsz))
            return be.matmul(w3, p), p
        y = be.empty((n, g, co, lsz), x._dtype)
        for a, b in chunks:
            p = be.reshape(_raw_patches(be, xp, off, a, b, ks, st, dl, out), (b - a, g, cg * kk, lsz))
            be.assign(be.view_index(y, (slice(a, b, 1),) + tuple(slice(0, m, 1) for m in (g, co, lsz))),
                      be.matmul(w3, p))
        return y, None

    def fun(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        be = level0(x, w) if b is None else level0(x, w, b)
        if be is None:
            return _conv_nf(x, w, g, ks, st, dl, pads, out, b)
        return wrap(raw(be, x, w, b)[0], x._dtype, be)

    conv = custom_vjp(fun)

    def fwd(*args: Tensor) -> tuple[Tensor, tuple]:
        x = args[0]
        be = level0(*args)
        if be is None:
            return conv(*args), (x, args[1], None)      # at the level below: its own rule again
        y, p = raw(be, x, args[1], args[2] if len(args) == 3 else None)
        return wrap(y, x._dtype, be), (x, args[1], p)

    def bwd(res: tuple, gy: Tensor) -> tuple[Any, ...]:
        x, w, kept = res
        be = level0(gy, x, w)
        if be is None:
            return _conv_nf_bwd(x, w, gy, g, ks, st, dl, pads, out, need)
        dt = x._dtype
        if wide:
            gxh, gw = wide_bwd(be, x, w, gy, kept)
            cts = (wrap(gxh, dt, be) if need_x else None, wrap(be.reshape(gw, wshape), dt, be) if need_w else None)
            if len(need) == 2:
                return cts
            gb = be.reshape(be.reduce("sum", be.reshape(be.contiguous(gy._data), (n, cout, lsz)), (0, 2), False),
                            (cout,))
            return cts + ((wrap(gb, dt, be) if need[2] else None),)
        gd = be.reshape(be.contiguous(gy._data), (n, g, co, lsz))
        w3 = be.reshape(be.contiguous(w._data), (g, co, cg * kk))
        w3t = be.permute(w3, (0, 2, 1))
        chunks = _nf_chunks(n, c * kk * lsz, x.itemsize)
        if kept is None and need_w:
            xp, off = _raw_padded(be, x._data, pads)
        gw = None
        gx = be.full((n, c) + sp, 0, dt) if need_x else None
        full = tuple(slice(0, m, 1) for m in (c,) + sp)
        for a, b in chunks:
            gc = be.view_index(gd, (slice(a, b, 1),) + tuple(slice(0, m, 1) for m in (g, co, lsz)))
            if need_w:
                p = kept if kept is not None else \
                    be.reshape(_raw_patches(be, xp, off, a, b, ks, st, dl, out), (b - a, g, cg * kk, lsz))
                part = be.reduce("sum", be.matmul(gc, be.permute(p, (0, 1, 3, 2))), (0,), False)
                gw = part if gw is None else be.binary("add", gw, part, out=gw)
            if need_x:
                gp = be.reshape(be.matmul(w3t, gc), (b - a, c) + ks + out)
                dst = be.view_index(gx, (slice(a, b, 1),) + full)
                for src_key, dst_key in _col2im_taps((b - a, c), sp, ks, st, dl, pads, out, ()):
                    d = be.view_index(dst, dst_key)
                    be.binary("add", d, be.view_index(gp, src_key), out=d)
        cts = (wrap(gx, dt, be) if need_x else None, wrap(be.reshape(gw, wshape), dt, be) if need_w else None)
        if len(need) == 2:
            return cts
        return cts + ((wrap(be.reshape(be.reduce("sum", gd, (0, 3), False), (cout,)), dt, be) if need[2] else None),)

    conv.defvjp(fwd, bwd)
    return conv


def _conv_bl(x: Tensor, w: Tensor, g: int, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
             pads: tuple[tuple[int, int], ...], out: tuple[int, ...], b: Tensor | None = None) -> Tensor:
    """The batch-last convolution, ``(N, C_out, out...)``, with runetensor operations (any level)."""
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    nd = len(ks)
    kk, lsz = math.prod(ks), math.prod(out)
    p = _im2col_bl(x, ks, st, dl, pads, out)                               # (C*K, L*N)
    y = reshape(contiguous(w), (g, cout // g, cg * kk)) @ reshape(p, (g, cg * kk, lsz * n))
    y = contiguous(transpose(reshape(y, (cout,) + out + (n,)), [nd + 1, 0] + list(range(1, nd + 1))))
    return y if b is None else y + reshape(contiguous(b), (cout,) + (1,) * nd)


@functools.lru_cache(maxsize=256)
def _conv_bl_fn(xshape: tuple[int, ...], wshape: tuple[int, ...], g: int, ks: tuple[int, ...],
                st: tuple[int, ...], dl: tuple[int, ...], pads: tuple[tuple[int, int], ...], out: tuple[int, ...],
                need: tuple[bool, ...]) -> Any:
    """:func:`_conv_bl` (one dtype, optional bias) with a hand-written reverse rule.

    On level-0 handles: forward = the batch-last im2col copy, one product, one transposing copy
    (the patches are kept for the backward); backward = one transposing copy of the cotangent,
    the weight's product, and the input's product followed by col2im's strided adds (over N
    contiguous elements).  Under a transformation: :func:`_conv_bl` and its traced vjp."""
    n, c, sp = xshape[0], xshape[1], xshape[2:]
    cout, cg = wshape[:2]
    co = cout // g
    nd = len(ks)
    kk, lsz = math.prod(ks), math.prod(out)
    to_first = (nd + 1, 0) + tuple(range(1, nd + 1))            # (C, sp..., N) -> (N, C, sp...)
    to_last = (1,) + tuple(range(2, nd + 2)) + (0,)              # (N, C, sp...) -> (C, sp..., N)
    pshape = (c,) + tuple(m + a + b for m, (a, b) in zip(sp, pads)) + (n,)
    cs = _c_strides(pshape)
    vshape = (c,) + ks + out + (n,)
    vstrides = (cs[0],) + tuple(cs[1 + i] * dl[i] for i in range(nd)) + \
        tuple(cs[1 + i] * st[i] for i in range(nd)) + (cs[-1],)
    padded = any(a or b for a, b in pads)
    need_x, need_w = need[:2]

    def traced(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        return _conv_bl(x, w, g, ks, st, dl, pads, out, b)

    def raw(be: Any, x: Tensor, w: Tensor, b: Tensor | None) -> tuple[Any, Any]:
        y, p = raw_nobias(be, x, w)
        if b is not None:
            be.binary("add", y, be.reshape(be.contiguous(b._data), (cout,) + (1,) * nd), out=y)
        return y, p

    def raw_nobias(be: Any, x: Tensor, w: Tensor) -> tuple[Any, Any]:
        xt = be.permute(x._data, to_last)
        if padded:
            xp, off = be.pad(xt, [(0, 0)] + list(pads) + [(0, 0)], 0), 0
        else:
            xp = be.contiguous(xt)
            off = be.offset(xp)
        p = be.reshape(be.copy(be.as_strided(xp, vshape, vstrides, off)), (g, cg * kk, lsz * n))
        y = be.matmul(be.reshape(be.contiguous(w._data), (g, co, cg * kk)), p)
        return be.copy(be.permute(be.reshape(y, (cout,) + out + (n,)), to_first)), p

    def level0(*ts: Tensor) -> Any:
        be = ts[0]._backend
        return be if be.level == 0 and all(t._backend is be for t in ts) else None

    def fun(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        be = level0(x, w) if b is None else level0(x, w, b)
        if be is None:
            return traced(x, w, b)
        return wrap(raw(be, x, w, b)[0], x._dtype, be)

    conv = custom_vjp(fun)

    def fwd(*args: Tensor) -> tuple[Tensor, tuple]:
        be = level0(*args)
        if be is None:
            return conv(*args), (args, None)     # at the level below: its own rule again
        y, p = raw(be, args[0], args[1], args[2] if len(args) == 3 else None)
        return wrap(y, args[0]._dtype, be), (args, p)

    def bwd(res: tuple, gy: Tensor) -> tuple[Any, ...]:
        args, p = res
        x, w = args[:2]
        be = level0(gy, x, w)
        if be is None or p is None:
            cts = _vjp(traced, *args)[1](gy)
            return tuple(ct if nd_ else None for ct, nd_ in zip(cts, need))
        dt = x._dtype
        g3 = be.reshape(be.copy(be.permute(gy._data, to_last)), (g, co, lsz * n))
        gx = gw = None
        if need_w:
            gw = wrap(be.reshape(be.matmul(g3, be.permute(p, (0, 2, 1))), wshape), dt, be)
        if need_x:
            w3t = be.permute(be.reshape(be.contiguous(w._data), (g, co, cg * kk)), (0, 2, 1))
            gp = be.reshape(be.matmul(w3t, g3), vshape)
            acc = be.full((c,) + sp + (n,), 0, dt)
            for src, dst in _col2im_taps((c,), sp, ks, st, dl, pads, out, (n,)):
                d = be.view_index(acc, dst)
                be.binary("add", d, be.view_index(gp, src), out=d)
            gx = wrap(be.permute(acc, to_first), dt, be)
        if len(need) == 2:
            return gx, gw
        gb = be.reduce("sum", gy._data, (0,) + tuple(range(2, nd + 2)), False) if need[2] else None
        return gx, gw, (None if gb is None else wrap(gb, dt, be))

    conv.defvjp(fwd, bwd)
    return conv


_CONV_DOC = """{nd}-D convolution (cross-correlation, as PyTorch's ``torch.nn.functional.{name}``).

    Args:
        x: input of shape ``(N, C_in, {sp})``, or ``(C_in, {sp})`` unbatched.
        weight: ``(C_out, C_in / groups, {ks})``.
        bias: ``(C_out,)`` or ``None``.
        stride: an int or {nd} ints (>= 1).
        padding: ``"valid"`` (none), ``"same"`` (output size = input size; stride 1 only; for an even
            total ``dilation*(k-1)`` the extra zero goes after), an int or {nd} ints (zeros on both sides).
        dilation: spacing of the kernel taps, an int or {nd} ints (>= 1).
        groups: input and output channels are split into ``groups`` independent groups.
    Returns:
        ``(N, C_out, {out})`` with ``out = (n + 2*padding - dilation*(k-1) - 1) // stride + 1`` per axis,
        dtype promoted from ``x`` and ``weight``.
    Raises:
        ValueError: bad ranks, channel counts not matching ``weight.shape[1] * groups``, groups not dividing
            the channels, a bad bias shape, a bad padding string, ``"same"`` with a stride, a kernel larger
            than the padded input.
        TypeError: non-integer stride/padding/dilation/groups.
"""


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _convnd(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _convnd(x, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    return _convnd(x, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


conv1d.__doc__ = _CONV_DOC.format(nd=1, name="conv1d", sp="L", ks="k", out="L_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float32, [1, 1, 5], [1., 2., 3., 4., 5.])
    >>> print(nn.conv1d(x, rt.create(rt.float32, [1, 1, 2], [1., -1.]), padding=1))
    [[[-1, -1, -1, -1, -1, 5]]]
    """
conv2d.__doc__ = _CONV_DOC.format(nd=2, name="conv2d", sp="H, W", ks="kh, kw", out="H_out, W_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.ones(rt.float32, [2, 3, 8, 8])
    >>> w = rt.ones(rt.float32, [4, 3, 3, 3])
    >>> nn.conv2d(x, w, padding="same").shape
    (2, 4, 8, 8)
    >>> print(nn.conv2d(x, w, stride=4)[0, 0])
    [[27, 27],
     [27, 27]]
    """
conv3d.__doc__ = _CONV_DOC.format(nd=3, name="conv3d", sp="D, H, W", ks="kd, kh, kw",
                                  out="D_out, H_out, W_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> nn.conv3d(rt.ones(rt.float32, [1, 2, 4, 4, 4]), rt.ones(rt.float32, [6, 1, 2, 2, 2]), groups=2).shape
    (1, 6, 3, 3, 3)
    """


def _conv_transposend(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, output_padding: Any,
                      groups: Any, dilation: Any, nd: int, fname: str) -> Tensor:
    x, w, added, g = _operands(x, weight, groups, nd, fname, "C_in, C_out/groups")
    n, c = x.shape[:2]
    cin, cog = w.shape[:2]
    ks = w.shape[2:]
    if cin != c:
        raise ValueError(f"{fname}: input has {c} channels but weight of shape {w.shape} expects {cin} "
                         f"(weight.shape[0])")
    if c % g:
        raise ValueError(f"{fname}: groups={g} must divide the input channels ({c})")
    if 0 in ks:
        raise ValueError(f"{fname}: weight has an empty kernel axis: shape {w.shape}")
    if isinstance(padding, str):
        raise ValueError(f"{fname}: padding must be an int or a tuple of {nd} ints, got {padding!r}")
    st = _tup(stride, nd, fname, "stride", 1)
    dl = _tup(dilation, nd, fname, "dilation", 1)
    pd = _tup(padding, nd, fname, "padding", 0)
    op = _tup(output_padding, nd, fname, "output_padding", 0)
    for i in range(nd):
        if op[i] >= st[i] and op[i] >= dl[i]:
            raise ValueError(f"{fname}: output_padding {op} must be smaller than the stride {st} or the "
                             f"dilation {dl}")
    sp = x.shape[2:]
    out = tuple((sp[i] - 1) * st[i] - 2 * pd[i] + dl[i] * (ks[i] - 1) + op[i] + 1 for i in range(nd))
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}: the output size {out} would not be positive (input {sp}, kernel {ks}, "
                         f"stride {st}, padding {pd}, dilation {dl})")
    kk = math.prod(ks)
    lsz = math.prod(sp)
    cout = cog * g
    ci = c // g
    xg = reshape(contiguous(x), (n, g, ci, lsz))
    wt = swapaxes(reshape(contiguous(w), (g, ci, cog * kk)), -1, -2)     # (G, C_out/G * K, C_in/G)
    cols = reshape(wt @ xg, (n, cout, kk, lsz))
    y = _combine_raw(cols, out, ks, st, dl, tuple((p, p) for p in pd), sp)
    return _unbatch(_add_bias(y, bias, cout, nd, fname), added)


_CONVT_DOC = """{nd}-D transposed convolution (as PyTorch's ``torch.nn.functional.{name}``): the
    transpose (gradient with respect to the input) of ``conv{nd}d`` with the same parameters.

    Args:
        x: input of shape ``(N, C_in, {sp})``, or ``(C_in, {sp})`` unbatched.
        weight: ``(C_in, C_out / groups, {ks})``.
        bias: ``(C_out,)`` or ``None``.
        stride, padding, dilation: as for the convolution it transposes (ints or {nd} ints; padding
            removes ``padding`` positions from each side of the output; no strings).
        output_padding: positions added after the end of each spatial axis (smaller than the stride
            or the dilation).
        groups: independent channel groups.
    Returns:
        ``(N, C_out, {out})`` with ``out = (n - 1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    Raises:
        ValueError: bad ranks, ``C_in != weight.shape[0]``, groups not dividing ``C_in``, a bad
            output_padding, a non-positive output size, a bias of the wrong shape.
        TypeError: non-integer parameters.
"""


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transposend(x, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transposend(x, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    return _conv_transposend(x, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                             "conv_transpose3d")


conv_transpose1d.__doc__ = _CONVT_DOC.format(nd=1, name="conv_transpose1d", sp="L", ks="k", out="L_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float32, [1, 1, 3], [1., 2., 3.])
    >>> print(nn.conv_transpose1d(x, rt.create(rt.float32, [1, 1, 2], [1., 10.]), stride=2))
    [[[1, 10, 2, 20, 3, 30]]]
    """
conv_transpose2d.__doc__ = _CONVT_DOC.format(nd=2, name="conv_transpose2d", sp="H, W", ks="kh, kw",
                                             out="H_out, W_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> y = nn.conv_transpose2d(rt.ones(rt.float32, [1, 4, 5, 5]), rt.ones(rt.float32, [4, 2, 3, 3]),
    ...                            stride=2, padding=1, output_padding=1)
    >>> y.shape
    (1, 2, 10, 10)
    """
conv_transpose3d.__doc__ = _CONVT_DOC.format(nd=3, name="conv_transpose3d", sp="D, H, W", ks="kd, kh, kw",
                                             out="D_out, H_out, W_out") + """
    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> nn.conv_transpose3d(rt.ones(rt.float32, [2, 3, 3, 3]), rt.ones(rt.float32, [2, 1, 2, 2, 2])).shape
    (1, 4, 4, 4)
    """


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------
def _pool_geometry(sp: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...], pd: tuple[int, ...],
                   dl: tuple[int, ...], ceil_mode: bool, fname: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(output sizes, extra zeros after the right padding that ceil_mode's last window reaches)."""
    out, extra = [], []
    for n, k, s, p, d in zip(sp, ks, st, pd, dl):
        if 2 * p > k:
            raise ValueError(f"{fname}: padding {pd} must be at most half of kernel_size {ks}")
        eff = d * (k - 1) + 1
        num = n + 2 * p - eff
        if num < 0:
            raise ValueError(f"{fname}: kernel_size {ks} (dilation {dl}) is larger than the input's spatial "
                             f"shape {sp} padded by {pd} on each side")
        o = (num + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1                    # PyTorch: the last window must start inside the input or the left padding
        out.append(o)
        extra.append(max(0, (o - 1) * s + eff - (n + 2 * p)))
    return tuple(out), tuple(extra)


def _pool_args(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any, nd: int,
               fname: str):
    x = _t(x, fname)
    x, added = _batched(x, nd, fname)
    ks = _tup(kernel_size, nd, fname, "kernel_size", 1)
    st = ks if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _tup(stride, nd, fname, "stride", 1)
    pd = _tup(padding, nd, fname, "padding", 0)
    dl = _tup(dilation, nd, fname, "dilation", 1)
    if not isinstance(ceil_mode, (builtins.bool, int)):
        raise TypeError(f"{fname}: ceil_mode must be a bool, got {ceil_mode!r}")
    out, extra = _pool_geometry(x.shape[2:], ks, st, pd, dl, bool(ceil_mode), fname)
    return x, added, ks, st, pd, dl, out, extra


def _window_reduce(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                   out: tuple[int, ...], op: Any) -> Tensor:
    """Fold ``op`` (elementwise maximum or add) over each window of the padded ``(N, C, spatial...)`` ``x``.

    One strided slice per kernel offset, ``prod(kernel_size) - 1`` elementwise ops on output-sized
    tensors: no window copy, and NumPy's slow reductions over short strided axes are avoided."""
    acc = None
    for idx in itertools.product(*(range(k) for k in ks)):
        key = (slice(None), slice(None)) + tuple(slice(i * d, i * d + (o - 1) * s + 1, s)
                                                 for i, d, o, s in zip(idx, dl, out, st))
        v = x[key]
        acc = v if acc is None else op(acc, v)
    return acc if math.prod(ks) > 1 else copy(acc)      # a new tensor, never a view of the input


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any,
              nd: int, fname: str) -> Tensor:
    x, added, ks, st, pd, dl, out, extra = _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode,
                                                      nd, fname)
    d = x.dtype
    if d.is_complex:
        raise TypeError(f"{fname}: complex input ({d}) has no order")
    widths = ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(pd, extra))
    if d.is_float and x.size and math.prod(ks) > 1 and all(s >= q * (k - 1) + 1 for s, q, k in zip(st, dl, ks)):
        # windows that do not overlap (max_pool2d(2) and the like): a custom rule whose backward is
        # the traced one's arithmetic (the same primitive rules) on level-0 handles, in a few ops
        return _unbatch(_max_pool_fn(x.shape, ks, st, dl, widths, out)(x), added)
    return _unbatch(_max_pool_traced(x, ks, st, dl, widths, out), added)


def _max_pool_traced(x: Tensor, ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                     widths: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Tensor:
    d = x.dtype
    if any(a or b for a, b in widths):
        fill = float("-inf") if d.is_float else (False if d is D.bool else int_range(d)[0])
        x = _pad(x, list(widths), fill)
    return _window_reduce(x, ks, st, dl, out, _maximum)


@functools.lru_cache(maxsize=256)
def _max_pool_fn(shape: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...], dl: tuple[int, ...],
                 widths: tuple[tuple[int, int], ...], out: tuple[int, ...]) -> Any:
    """Max pooling of a float ``(N, C, spatial...)`` tensor with non-overlapping windows, as a custom rule.

    The value is :func:`_max_pool_traced`'s.  On level-0 handles the windows are first copied into one
    contiguous ``(K, N, C, out...)`` buffer (strided ops over a few elements per row are several times
    slower), the maximum is folded over the ``K`` offsets, and the backward computes what the traced
    version's rules compute (maximum's partials per offset of the chain, ties split in halves as
    they split them: the same products, bit for bit) and
    adds the ``(K, N, C, out...)`` cotangents into a zero buffer through the same window view (the
    windows do not overlap: one term per input position, as exact as the traced sum).  Under a
    transformation it is the traced function and its vjp (so higher derivatives work)."""
    k = len(ks)
    kk = math.prod(ks)
    lead = shape[:2]
    padded = any(a or b for a, b in widths)
    pshape = tuple(n + a + b for n, (a, b) in zip(shape, widths))
    cs = _c_strides(pshape)
    wshape = ks + lead + out
    wstrides = tuple(cs[2 + i] * dl[i] for i in range(k)) + cs[:2] + tuple(cs[2 + i] * st[i] for i in range(k))
    rest = tuple(slice(0, n, 1) for n in lead + out)
    taps = [(i,) + rest for i in range(kk)]
    inner = tuple(slice(a, a + n, 1) for (a, _), n in zip(widths, shape))

    def windows(be: Any, xd: Any) -> tuple[Any, int]:
        if padded:
            return be.pad(xd, list(widths), float("-inf")), 0
        xp = be.contiguous(xd)
        return xp, be.offset(xp)

    def chain(be: Any, xd: Any) -> tuple:
        """``(t, *accs)``: the ``(K, N, C, out...)`` window copy and the running maxima over its taps."""
        xp, off = windows(be, xd)
        t = None
        if _convk.AVAILABLE and be.name == "numpy":
            t = be.empty((kk,) + lead + out, be.dtype(xp))
            if not _convk.take_windows(xp, wshape, wstrides, k, t):      # (from xp's first element)
                t = None
        if t is None:
            t = be.reshape(be.copy(be.as_strided(xp, wshape, wstrides, off)), (kk,) + lead + out)
        vs = [be.view_index(t, key) for key in taps]
        accs = [vs[0]]
        for v in vs[1:]:
            accs.append(be.binary("maximum", accs[-1], v))
        return (t, *accs)

    def traced(x: Tensor) -> Tensor:
        return _max_pool_traced(x, ks, st, dl, widths, out)

    def fun(x: Tensor) -> Tensor:
        host = _host(x, any_level0=True)
        if host is None:
            return traced(x)
        call, be = host
        return wrap(call("max_pool", lambda xd: chain(be, xd)[-1], [x._data]), x._dtype, x._backend)

    pool = custom_vjp(fun)

    def fwd(x: Tensor) -> tuple[Tensor, tuple]:
        host = _host(x, any_level0=True)
        if host is None:
            return pool(x), (x, None)            # at the level below: its own rule again
        call, be = host
        kept = call("max_pool_fwd", lambda xd: chain(be, xd), [x._data])
        return wrap(kept[-1], x._dtype, x._backend), (x, kept)

    def grad_raw(be: Any, dt: Any, ct: Any, t: Any, *accs: Any) -> Any:
        kern = _convk.AVAILABLE and be.name == "numpy"
        cts = _convk.max_pool_cts(t, ct) if kern else None
        if cts is None:
            cts = chain_cts(be, dt, ct, t, accs)
        gx = be.full(pshape, 0, dt)
        if not (kern and _convk.put_windows(cts, wshape, wstrides, k, gx)):
            dst = be.as_strided(gx, wshape, wstrides, 0)
            be.binary("add", dst, be.reshape(cts, wshape), out=dst)
        return be.view_index(gx, inner) if padded else gx

    def chain_cts(be: Any, dt: Any, ct: Any, t: Any, accs: tuple) -> Any:
        """The per-tap cotangents with the elementwise primitives (the compiled kernel's arithmetic)."""
        vs = [be.view_index(t, key) for key in taps]
        cts = be.empty((kk,) + lead + out, dt)
        for i in range(kk - 1, 0, -1):
            # maximum's rule: the partials are 1, 0.5 (a tie) or 0 for the earlier operand and one
            # minus that for the later; ct * 1 is ct, so only ct * 0.5 and ct * 0 are computed
            gt = be.binary("gt", accs[i - 1], vs[i])
            eq = be.binary("eq", accs[i - 1], vs[i])
            half = be.binary("mul", ct, 0.5)
            zero = be.binary("mul", ct, 0.0)
            be.assign(be.view_index(cts, taps[i]), be.where(gt, zero, be.where(eq, half, ct)))
            ct = be.where(gt, ct, be.where(eq, half, zero))
        be.assign(be.view_index(cts, taps[0]), ct)
        return cts

    def bwd(res: tuple, g: Tensor) -> tuple[Tensor]:
        x, kept = res
        host = None if kept is None else _host(g, x, any_level0=True)
        if host is None:
            return _vjp(traced, x)[1](g)
        call, be = host
        dt = x._dtype
        gx = call("max_pool_bwd", lambda *hs: grad_raw(be, dt, *hs), [g._data, *kept])
        return (wrap(gx, dt, g._backend),)

    pool.defvjp(fwd, bwd)
    return pool


def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any, count_include_pad: Any,
              divisor_override: Any, dilation: Any, nd: int, fname: str) -> Tensor:
    x, added, ks, st, pd, dl, out, extra = _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode,
                                                      nd, fname)
    if not x.dtype.is_inexact:
        raise TypeError(f"{fname}: expected a float or complex input, got {x.dtype}")
    sp = x.shape[2:]
    pads = [(p, p + e) for p, e in zip(pd, extra)]
    xp = _pad(x, [(0, 0), (0, 0)] + pads, 0) if any(pd) or any(extra) else x
    s = _window_reduce(xp, ks, st, dl, out, operator.add)
    if divisor_override is not None:
        dv = _int(divisor_override, fname, "divisor_override")
        if dv == 0:
            raise ValueError(f"{fname}: divisor_override must be non-zero, got 0")
        y = s / dv
    else:
        # the divisor counts each window's taps in the input (count_include_pad=False) or in the
        # input and its padding (True), never in the extra zeros ceil_mode's last windows reach
        m = ones(x.dtype, sp)
        if count_include_pad:
            m = _pad(m, [(p, p) for p in pd], 1)
            m = _pad(m, [(0, e) for e in extra], 0)
        else:
            m = _pad(m, pads, 0)
        cnt = reshape(_rsum(extract_patches(m, list(ks), st, dl, 0), axes=[-2]), out)
        y = s / cnt
    return _unbatch(y, added)


def max_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Tensor:
    """1-D max pooling over ``(N, C, L)`` (or ``(C, L)``), as ``torch.nn.functional.max_pool1d``.

    Args:
        x: the input.
        kernel_size: the window size (an int or a 1-tuple).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit ``-inf`` (floats) or the dtype's minimum on both sides, at most half the kernel.
        dilation: spacing of the window's taps.
        ceil_mode: round the output size up (a last, partial window), as PyTorch.
    Returns:
        ``(N, C, L_out)``, ``L_out = (L + 2*padding - dilation*(k-1) - 1) // stride + 1`` (rounded up with
        ``ceil_mode``, unless that window would start in the right padding), ``x``'s dtype.
    Raises:
        ValueError: bad rank, padding above half the kernel, a window larger than the padded input.
        TypeError: non-integer parameters, complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float32, [1, 1, 5], [1., 3., 2., 5., 4.])
    >>> print(nn.max_pool1d(x, 2))
    [[[3, 5]]]
    >>> print(nn.max_pool1d(x, 2, ceil_mode=True))
    [[[3, 5, 4]]]
    """
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, 1, "max_pool1d")


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Tensor:
    """2-D max pooling over ``(N, C, H, W)`` (or ``(C, H, W)``), as ``torch.nn.functional.max_pool2d``.

    Args:
        x: the input.
        kernel_size: the window size, an int or ``(kh, kw)``.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit ``-inf`` (floats) or the dtype's minimum on both sides, at most half the kernel.
        dilation: spacing of the window's taps.
        ceil_mode: round the output size up, as PyTorch.
    Returns:
        ``(N, C, H_out, W_out)`` of ``x``'s dtype (sizes as in :func:`max_pool1d`, per axis).
    Raises:
        ValueError: bad rank, padding above half the kernel, a window larger than the padded input.
        TypeError: non-integer parameters, complex input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 16., 1.), [1, 1, 4, 4])
    >>> print(nn.max_pool2d(x, 2))
    [[[[5, 7],
       [13, 15]]]]
    """
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, 2, "max_pool2d")


def avg_pool1d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None, *,
               dilation: Any = 1) -> Tensor:
    """1-D average pooling over ``(N, C, L)`` (or ``(C, L)``), as ``torch.nn.functional.avg_pool1d``.

    Args:
        x: a float input.
        kernel_size: the window size.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zeros on both sides (at most half the kernel).
        ceil_mode: round the output size up, as PyTorch.
        count_include_pad: divide by the number of taps in the input and its padding (True, PyTorch's
            default) or in the input only; the extra positions ``ceil_mode`` reaches never count.
        divisor_override: divide every window's sum by this instead (PyTorch has it for 2-D only).
        dilation: spacing of the window's taps (an extension: PyTorch's avg_pool has none).
    Returns:
        ``(N, C, L_out)``, sizes as in :func:`max_pool1d`.
    Raises:
        ValueError: bad rank, padding above half the kernel, a window larger than the padded input.
        TypeError: non-integer parameters, integer input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float32, [1, 1, 4], [1., 2., 3., 4.])
    >>> print(nn.avg_pool1d(x, 2, padding=1))
    [[[0.5, 2.5, 2]]]
    >>> print(nn.avg_pool1d(x, 2, padding=1, count_include_pad=False))
    [[[1, 2.5, 4]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     dilation, 1, "avg_pool1d")


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None, *,
               dilation: Any = 1) -> Tensor:
    """2-D average pooling over ``(N, C, H, W)`` (or ``(C, H, W)``), as ``torch.nn.functional.avg_pool2d``.

    Args:
        x: a float input.
        kernel_size: the window size, an int or ``(kh, kw)``.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zeros on both sides (at most half the kernel).
        ceil_mode: round the output size up, as PyTorch.
        count_include_pad: count the padding in the divisor (PyTorch's default) or not.
        divisor_override: divide every window's sum by this instead.
        dilation: spacing of the window's taps (an extension: PyTorch's avg_pool has none).
    Returns:
        ``(N, C, H_out, W_out)``, sizes as in :func:`max_pool2d`.
    Raises:
        ValueError: bad rank, padding above half the kernel, a window larger than the padded input.
        TypeError: non-integer parameters, integer input.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 16., 1.), [1, 1, 4, 4])
    >>> print(nn.avg_pool2d(x, 2))
    [[[[2.5, 4.5],
       [10.5, 12.5]]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     dilation, 2, "avg_pool2d")
