"""Functional forms behind the layers of :mod:`runetensor.nn._modules`: rms_norm, group_norm,
multi_head_attention and 3-d pooling (PyTorch's functional names and parameters).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import runetensor as rt

from .. import _dtypes as D
from .._special import _scalar_float
from .._tensor import Tensor
from ._conv import _avg_pool, _max_pool
from ._layers import _compute, _float_tensor, _to, linear

__all__ = ["rms_norm", "group_norm", "multi_head_attention", "max_pool3d", "avg_pool3d"]

#: mantissa bits of each floating dtype (machine epsilon is 2 ** -bits)
_MANTISSA = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52, "float8_e4m3": 3, "float8_e5m2": 2}


def _eps_of(d: Any) -> float:
    return 2.0 ** -_MANTISSA.get(d.name, 23)


def _positive(v: Any, fname: str, what: str) -> float:
    e = _scalar_float(v, fname, what)
    if not e > 0:
        raise ValueError(f"{fname}: {what} must be positive, got {v!r}")
    return e


def rms_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation over the trailing axes: ``x / sqrt(mean(x**2) + eps) * weight``.

    Args:
        x: a float tensor whose trailing axes are ``normalized_shape``.
        normalized_shape: an int or a sequence of ints.
        weight: None or a tensor of shape ``normalized_shape``.
        eps: a positive number added to the mean square (default: the machine epsilon of ``x``'s
            dtype, as PyTorch).
    Returns:
        A new tensor of ``x``'s shape and dtype (float16/bfloat16 computed in float32).
    Raises:
        TypeError: for non-float tensors.
        ValueError: for mismatched shapes or a non-positive eps.

    >>> import runetensor as rt
    >>> print(rt.nn.rms_norm(rt.asarray([[3., 4.]]), 2, eps=1e-12))
    [[0.848528, 1.13137]]
    """
    fname = "rms_norm"
    x = _float_tensor(x, fname, "x")
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != ns:
        raise ValueError(f"{fname}: normalized_shape {ns} must be the trailing axes of x (shape {x.shape})")
    e = _eps_of(x.dtype) if eps is None else _positive(eps, fname, "eps")
    d = x.dtype
    if weight is not None:
        w = _float_tensor(weight, fname, "weight")
        if tuple(w.shape) != ns:
            raise ValueError(f"{fname}: weight must have shape {ns}, got {w.shape}")
        d = rt.promote_types(d, w.dtype)
    cd = _compute(d)
    xc = _to(x, cd)
    y = xc * rt.rsqrt(rt.mean(xc * xc, list(range(x.ndim - k, x.ndim)), keepdims=True) + e)
    if weight is not None:
        y = y * _to(w, cd)
    return _to(y, d)


def group_norm(x: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Tensor:
    """Group normalisation: the channels (axis 1) of each sample split into ``num_groups`` groups, each
    normalised to zero mean and unit (biased) variance, then scaled and shifted per channel.

    Args:
        x: a float tensor of shape ``(N, C, ...)``.
        num_groups: a positive divisor of ``C``.
        weight, bias: None or tensors of shape ``(C,)``.
        eps: a positive number added to the variance.
    Returns:
        A new tensor of ``x``'s shape and dtype.
    Raises:
        TypeError: for non-float tensors or a non-integer num_groups.
        ValueError: for a bad shape or a num_groups that does not divide C.

    >>> import runetensor as rt
    >>> x = rt.reshape(rt.asarray([1., 2., 3., 5.]), [1, 4])
    >>> print(rt.nn.group_norm(x, 2, eps=1e-12))
    [[-1, 1, -1, 1]]
    """
    fname = "group_norm"
    x = _float_tensor(x, fname, "x")
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have shape (N, C, ...), got {x.shape}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, int):
        raise TypeError(f"{fname}: num_groups must be an int, got {num_groups!r}")
    C = x.shape[1]
    if num_groups < 1 or C % num_groups:
        raise ValueError(f"{fname}: num_groups must be a positive divisor of the {C} channels, got {num_groups}")
    e = _positive(eps, fname, "eps")
    d = x.dtype
    ps = {}
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            pt = _float_tensor(p, fname, name)
            if tuple(pt.shape) != (C,):
                raise ValueError(f"{fname}: {name} must have shape ({C},), got {pt.shape}")
            ps[name] = pt
            d = rt.promote_types(d, pt.dtype)
    cd = _compute(d)
    shape = tuple(x.shape)
    g = rt.reshape(rt.contiguous(_to(x, cd)), [shape[0], num_groups, -1] if x.size else [shape[0], num_groups, 0])
    m = rt.mean(g, [2], keepdims=True)
    c = g - m
    v = rt.mean(c * c, [2], keepdims=True)
    y = rt.reshape(c * rt.rsqrt(v + e), list(shape))
    bshape = [1, C] + [1] * (x.ndim - 2)
    if "weight" in ps:
        y = y * rt.reshape(_to(ps["weight"], cd), bshape)
    if "bias" in ps:
        y = y + rt.reshape(_to(ps["bias"], cd), bshape)
    return _to(y, d)


def _heads(t: Tensor, h: int) -> Tensor:
    """(B, L, E) -> (B, H, L, E / H)."""
    b, n, e = t.shape
    return rt.swapaxes(rt.reshape(t, [b, n, h, e // h]), 1, 2)


def _causal_keep(L: int, S: int) -> Tensor:
    """The ``(L, S)`` bool mask of causal attention whose ``L`` queries are the last ``L`` of ``S`` positions."""
    return rt.tril(rt.ones(D.bool, [L, S]), S - L)


def multi_head_attention(query: Any, key: Any, value: Any, num_heads: int, in_proj_weight: Any,
                         in_proj_bias: Any = None, out_proj_weight: Any = None, out_proj_bias: Any = None, *,
                         mask: Any = None, dropout_p: float = 0.0, dropout_key: Any = None,
                         kv_cache: tuple[Any, Any] | None = None, return_kv: bool = False) -> Any:
    """Multi-head attention, batch-first (PyTorch's ``nn.MultiheadAttention`` with ``batch_first=True``).

    ``q, k, v`` are the projections ``query @ Wq.T + bq`` etc. (``in_proj_weight`` stacks ``Wq, Wk, Wv``),
    split into ``num_heads`` heads; each head attends with ``softmax(q k^T / sqrt(head_dim))``; the heads
    are concatenated and projected by ``out_proj``.

    Args:
        query: ``(B, L, E)`` (or ``(L, E)``).
        key, value: ``(B, S, E)`` (or ``(S, E)``).
        num_heads: a divisor of ``E``.
        in_proj_weight: ``(3E, E)``; in_proj_bias: None or ``(3E,)``.
        out_proj_weight: ``(E, E)``; out_proj_bias: None or ``(E,)``.
        mask: None; ``"causal"`` (query ``i`` attends to keys up to its own position, the queries being
            the last ``L`` of the keys' positions, so a KV cache works); or a bool tensor broadcastable to
            ``(B, num_heads, L, S)``, **True where a query may attend** (PyTorch's ``attn_mask`` uses the
            opposite sense; this is ``scaled_dot_product_attention``'s); or a float tensor added to the scores.
        dropout_p: dropout on the attention weights (needs ``dropout_key`` to apply; without a key, none).
        dropout_key: a key of :mod:`runetensor.random`.
        kv_cache: None or ``(k, v)``, the projected keys and values of earlier positions,
            ``(B, num_heads, T, head_dim)`` each, put before this call's.
        return_kv: also return the ``(k, v)`` of all positions (the next call's ``kv_cache``).
    Returns:
        ``(B, L, E)`` (``(L, E)`` for unbatched input), or ``(output, (k, v))`` with ``return_kv``.
    Raises:
        TypeError: for non-float tensors or a bad mask.
        ValueError: for mismatched shapes.

    >>> import runetensor as rt
    >>> x = rt.ones(rt.float32, [1, 3, 4])
    >>> w = rt.concatenate([rt.eye(rt.float32, 4)] * 3, axis=0)
    >>> rt.nn.multi_head_attention(x, x, x, 2, w, out_proj_weight=rt.eye(rt.float32, 4), mask="causal").shape
    (1, 3, 4)
    """
    fname = "multi_head_attention"
    q_in = _float_tensor(query, fname, "query")
    k_in = _float_tensor(key, fname, "key")
    v_in = _float_tensor(value, fname, "value")
    unbatched = q_in.ndim == 2
    if unbatched:
        q_in, k_in, v_in = (rt.expand_dims(t, 0) for t in (q_in, k_in, v_in))
    for name, t in (("query", q_in), ("key", k_in), ("value", v_in)):
        if t.ndim != 3:
            raise ValueError(f"{fname}: {name} must be (batch, length, embed_dim) or (length, embed_dim), "
                             f"got {t.shape}")
    B, L, E = q_in.shape
    if k_in.shape[0] != B or v_in.shape[0] != B or k_in.shape[2] != E or v_in.shape[2] != E \
            or k_in.shape[1] != v_in.shape[1]:
        raise ValueError(f"{fname}: key {k_in.shape} and value {v_in.shape} must be (batch, S, embed_dim) "
                         f"matching query {q_in.shape}")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1 or E % num_heads:
        raise ValueError(f"{fname}: num_heads must be a positive divisor of embed_dim {E}, got {num_heads!r}")
    w = _float_tensor(in_proj_weight, fname, "in_proj_weight")
    if tuple(w.shape) != (3 * E, E):
        raise ValueError(f"{fname}: in_proj_weight must have shape ({3 * E}, {E}), got {w.shape}")
    b = None if in_proj_bias is None else _float_tensor(in_proj_bias, fname, "in_proj_bias")
    if b is not None and tuple(b.shape) != (3 * E,):
        raise ValueError(f"{fname}: in_proj_bias must have shape ({3 * E},), got {b.shape}")
    H = num_heads
    hd = E // H
    if q_in is k_in and k_in is v_in:       # self-attention: one product for the three projections
        qkv = linear(q_in, w, b)
        q, k, v = (qkv[:, :, i * E:(i + 1) * E] for i in range(3))
    else:
        q = linear(q_in, w[:E], None if b is None else b[:E])
        k = linear(k_in, w[E:2 * E], None if b is None else b[E:2 * E])
        v = linear(v_in, w[2 * E:], None if b is None else b[2 * E:])
    q, k, v = _heads(q, H), _heads(k, H), _heads(v, H)
    if kv_cache is not None:
        ck, cv = kv_cache
        if tuple(ck.shape[:2]) != (B, H) or tuple(ck.shape[3:]) != (hd,) or tuple(cv.shape) != tuple(ck.shape):
            raise ValueError(f"{fname}: kv_cache must be two (batch, num_heads, T, head_dim) = ({B}, {H}, T, {hd}) "
                             f"tensors, got {ck.shape} and {cv.shape}")
        k = rt.concatenate([_to(ck, k.dtype), k], axis=2)
        v = rt.concatenate([_to(cv, v.dtype), v], axis=2)
    S = k.shape[2]
    scores = rt.matmul(q, rt.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(hd))
    keep = None
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"{fname}: mask must be None, 'causal' or a tensor, got {mask!r}")
        keep = _causal_keep(L, S)
    elif mask is not None:
        mt = mask if isinstance(mask, Tensor) else rt.asarray(mask)
        if mt.dtype is D.bool:
            keep = mt
        elif mt.dtype.is_float:
            scores = scores + _to(mt, scores.dtype)
        else:
            raise TypeError(f"{fname}: mask must be 'causal', a bool or a float tensor, got dtype {mt.dtype}")
    if keep is not None:
        scores = rt.where(keep, scores, -math.inf)
        if not isinstance(mask, str):
            # a row with no key left gets zeros instead of NaN
            any_keep = rt.any(rt.broadcast_to(keep, tuple(scores.shape)), [-1], keepdims=True)
            scores = rt.where(any_keep, scores, 0.0)
    p = rt.softmax(scores, [-1])
    if keep is not None and not isinstance(mask, str):
        p = rt.where(keep, p, 0.0)
    r = _scalar_float(dropout_p, fname, "dropout_p")
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"{fname}: dropout_p must be in [0, 1], got {dropout_p!r}")
    if r > 0.0 and dropout_key is not None:
        p = rt.nn.dropout(p, r, dropout_key)
    o = rt.matmul(p, v)                                          # (B, H, L, hd)
    o = rt.reshape(rt.contiguous(rt.swapaxes(o, 1, 2)), [B, L, E])
    if out_proj_weight is not None:
        o = linear(o, out_proj_weight, out_proj_bias)
    elif out_proj_bias is not None:
        o = o + out_proj_bias
    if unbatched:
        o = o[0]
    return (o, (k, v)) if return_kv else o


def max_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Tensor:
    """3-D max pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``), as ``torch.nn.functional.max_pool3d``.

    Args and errors as :func:`runetensor.nn.max_pool2d`, with three spatial axes.

    >>> import runetensor as rt
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 8., 1.), [1, 1, 2, 2, 2])
    >>> print(rt.nn.max_pool3d(x, 2))
    [[[[[7]]]]]
    """
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, 3, "max_pool3d")


def avg_pool3d(x: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None, *,
               dilation: Any = 1) -> Tensor:
    """3-D average pooling over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``), as ``torch.nn.functional.avg_pool3d``.

    Args and errors as :func:`runetensor.nn.avg_pool2d`, with three spatial axes.

    >>> import runetensor as rt
    >>> x = rt.reshape(rt.arange_f(rt.float32, 0., 8., 1.), [1, 1, 2, 2, 2])
    >>> print(rt.nn.avg_pool3d(x, 2))
    [[[[[3.5]]]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     dilation, 3, "avg_pool3d")
