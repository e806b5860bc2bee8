"""More optimizers, gradient transformations, schedules and loss scaling for ``rt.optim``.

Re-exported by :mod:`runetensor.optim` (``rt.optim.lamb`` ...); written to its conventions
(``optim``'s module docstring): every state is a pytree of tensors with a 0-d int32 step
count, schedules take the count as an int or a 0-d tensor and return 0-d float64 tensors, and
nothing reads a tensor's value in Python, so a whole training step runs under one ``rt.jit``
trace.  Each rule is optax's of the same name (checked against optax in
``tests/test_optim_extra.py``); ``docs/optim.md`` states each one.
"""
from __future__ import annotations

import builtins
import math
import numbers
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from . import _dtypes as D
from ._tensor import Tensor
from ._optim_core import (GradientTransformation, _adam_moments, _check_state, _count, _count_init, _count_next,
                          _flat, _lr, _lr_at, _mul, _neg, _nonneg, _number, _params, _positive_int, _scaled, _state,
                          _step, _unflat, _zero_moments, _zeros, warmup_cosine_decay_schedule)
from .random import _check_key
from ._autodiff import register_pytree

__all__ = ["lamb", "radam", "lars", "adan", "adafactor", "scale_by_trust_ratio", "centralize", "add_noise",
           "apply_if_finite", "grads_finite", "piecewise_constant_schedule", "polynomial_schedule",
           "cosine_onecycle_schedule", "sgdr_schedule", "join_schedules", "reduce_on_plateau",
           "StaticLossScale", "DynamicLossScale",
           "LambState", "RadamState", "LarsState", "AdanState", "AdafactorState", "AddNoiseState",
           "ApplyIfFiniteState", "ReduceOnPlateauState"]


class LambState(NamedTuple):
    """State of :func:`lamb`: the update count, first and second moments."""
    count: Any
    mu: Any
    nu: Any


class RadamState(NamedTuple):
    """State of :func:`radam`: the update count, first and second moments."""
    count: Any
    mu: Any
    nu: Any


class LarsState(NamedTuple):
    """State of :func:`lars`: the update count and the momentum trace."""
    count: Any
    trace: Any


class AdanState(NamedTuple):
    """State of :func:`adan`: count, gradient average ``m``, gradient-difference average ``v``,
    squared-term average ``n`` and the previous gradient."""
    count: Any
    m: Any
    v: Any
    n: Any
    prev: Any


class AdafactorState(NamedTuple):
    """State of :func:`adafactor`: count, the factored row/column second moments (or the full one, ``v``)
    per leaf, and the momentum (None without)."""
    count: Any
    v_row: Any
    v_col: Any
    v: Any
    momentum: Any


class AddNoiseState(NamedTuple):
    """State of :func:`add_noise`: the update count and the key of the next draw."""
    count: Any
    key: Any


class ApplyIfFiniteState(NamedTuple):
    """State of :func:`apply_if_finite`: consecutive non-finite steps, whether the last was finite,
    the total of non-finite steps, and the wrapped optimizer's state."""
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


class ReduceOnPlateauState(NamedTuple):
    """State of :func:`reduce_on_plateau` (all 0-d tensors)."""
    scale: Any
    best_value: Any
    plateau_count: Any
    cooldown_count: Any
    count: Any
    avg_value: Any


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def _norm(x: Tensor) -> Tensor:
    """The Euclidean norm of one leaf, in float64."""
    y = rt.cast(x, D.float64)
    return rt.sqrt(rt.sum(y * y))


def _f64(v: Any) -> Tensor:
    return rt.cast(v, D.float64) if isinstance(v, Tensor) else rt.scalar(D.float64, builtins.float(v))


def _trust(u: Tensor, p: Tensor, min_norm: float, coef: float, eps: float) -> Tensor:
    """``u * coef * max(|p|, min_norm) / (max(|u|, min_norm) + eps)``; 1 where either norm is 0 (optax)."""
    pn = rt.maximum(_norm(p), min_norm)
    un = rt.maximum(_norm(u), min_norm)
    zero = (pn == 0.0) | (un == 0.0)
    ratio = rt.where(zero, rt.ones_like(pn), coef * pn / rt.where(zero, rt.ones_like(un), un + eps))
    return _mul(u, ratio)


def _bias(t: Tensor, b: float) -> Tensor:
    """``1 - b**t`` in float64 tensor operations (``t`` the float64 step number)."""
    return 1.0 - b ** t


def _rms(x: Tensor) -> Tensor:
    y = rt.cast(x, D.float64)
    return rt.sqrt(rt.mean(y * y))


# ---------------------------------------------------------------------------------------------
# optimizers
# ---------------------------------------------------------------------------------------------

def lamb(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6, weight_decay: float = 0.0
         ) -> GradientTransformation:
    """LAMB (You et al., 2020, "Large batch optimization for deep learning"): Adam scaled per leaf by a trust ratio.

    ``m, v`` as Adam's; ``u = m_hat / (sqrt(v_hat) + eps) + weight_decay * p``; then
    ``u *= |p| / |u|`` (1 where either norm is 0), per leaf; the update is ``-lr * u`` (optax's
    ``lamb``: ``eps`` outside the root, ``eps_root = 0``).

    Args:
        lr: the learning rate (a number >= 0, a 0-d tensor or a schedule).
        b1, b2: the moment decay rates, in ``[0, 1)``.
        eps: added to the root of the second moment (default 1e-6, as optax).
        weight_decay: decoupled decay added before the trust ratio (default 0).
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params`` (the trust ratio reads them).
    Raises:
        TypeError, ValueError: for bad hyperparameters; ValueError for an update without ``params``.

    >>> import runetensor as rt
    >>> opt = rt.optim.lamb(0.1)
    >>> p = [rt.create(rt.float64, [2], [3.0, 4.0])]
    >>> u, s = opt.update([rt.create(rt.float64, [2], [1.0, -1.0])], opt.init(p), p)
    >>> [round(v, 4) for v in rt.to_array(u[0])]   # |u| = lr * |p| on the first step
    [-0.3536, 0.3536]
    """
    fname = "lamb"
    lr = _lr(lr, fname)
    b1 = _number(b1, fname, "b1", 0.0, 1.0, hi_open=True)
    b2 = _number(b2, fname, "b2", 0.0, 1.0, hi_open=True)
    eps = _nonneg(eps, fname, "eps")
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> LambState:
        return LambState(_count_init(), *_zero_moments(params, fname))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, LambState]:
        s = _check_state(state, LambState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        m = _state(s.mu, g, tg, fname, "state.mu")
        v = _state(s.nu, g, tg, fname, "state.nu")
        if params is None:
            raise ValueError(f"{fname}: update needs params (the trust ratio is |params| / |update|)")
        p = _params(params, g, tg, fname)
        t = _count_next(count)
        tf = rt.cast(t, D.float64)
        c1, c2 = _bias(tf, b1), _bias(tf, b2)
        m, v = _adam_moments(g, m, v, b1, b2)
        u = [_mul(mm, 1.0 / c1) / (rt.sqrt(_mul(vv, 1.0 / c2)) + eps) for mm, vv in zip(m, v)]
        if wd:
            u = [x + wd * y for x, y in zip(u, p)]
        u = [_trust(x, y, 0.0, 1.0, 0.0) for x, y in zip(u, p)]
        step = _lr_at(lr, count, fname)
        return _scaled(tg, u, _neg(step)), LambState(t, _unflat(tg, m), _unflat(tg, v))

    return GradientTransformation(init, update)


def radam(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, threshold: float = 5.0
          ) -> GradientTransformation:
    """Rectified Adam (Liu et al., 2020, "On the variance of the adaptive learning rate and beyond").

    With ``rho_inf = 2 / (1 - b2) - 1`` and ``rho_t = rho_inf - 2 t b2**t / (1 - b2**t)``: while
    ``rho_t < threshold`` the update is ``-lr * m_hat`` (momentum only); after, ``-lr * r_t *
    m_hat / (sqrt(v_hat) + eps)`` with ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf /
    ((rho_inf - 4)(rho_inf - 2) rho_t))`` (optax's ``radam``; PyTorch's ``RAdam`` adds ``eps``
    before the bias correction of ``v``).

    Args:
        lr: the learning rate (a number >= 0, a 0-d tensor or a schedule).
        b1, b2: the moment decay rates, in ``[0, 1)``.
        eps: added to the root of the second moment.
        threshold: the ``rho_t`` from which the adaptive step is used, >= 4 (default 5; ``r_t``
            is not real below 4).
    Returns:
        A :class:`GradientTransformation`.
    Raises:
        TypeError, ValueError: for bad hyperparameters.

    >>> import runetensor as rt
    >>> opt = rt.optim.radam(0.1)
    >>> p = [rt.zeros(rt.float64, [2])]
    >>> u, s = opt.update([rt.create(rt.float64, [2], [2.0, -1.0])], opt.init(p), p)
    >>> print(u[0])   # the first steps are momentum SGD: -lr * m_hat = -lr * g
    [-0.2, 0.1]
    """
    fname = "radam"
    lr = _lr(lr, fname)
    b1 = _number(b1, fname, "b1", 0.0, 1.0, hi_open=True)
    b2 = _number(b2, fname, "b2", 0.0, 1.0, hi_open=True)
    eps = _nonneg(eps, fname, "eps")
    thr = _number(threshold, fname, "threshold", 4.0, math.inf, hi_open=True)   # r_t needs rho_t >= 4
    rho_inf = 2.0 / (1.0 - b2) - 1.0

    def init(params: Any) -> RadamState:
        return RadamState(_count_init(), *_zero_moments(params, fname))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, RadamState]:
        s = _check_state(state, RadamState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        m = _state(s.mu, g, tg, fname, "state.mu")
        v = _state(s.nu, g, tg, fname, "state.nu")
        t = _count_next(count)
        tf = rt.cast(t, D.float64)
        b2t = b2 ** tf
        rho = rho_inf - 2.0 * tf * b2t / (1.0 - b2t)
        ok = rho >= thr
        safe = rt.where(ok, rho, rt.full_like(rho, rho_inf))    # r_t only where it is used (no NaN)
        r = rt.sqrt((safe - 4.0) * (safe - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * safe))
        c1, c2 = _bias(tf, b1), 1.0 - b2t
        m, v = _adam_moments(g, m, v, b1, b2)
        u = []
        for mm, vv in zip(m, v):
            mh = _mul(mm, 1.0 / c1)
            adaptive = _mul(mh, r) / (rt.sqrt(_mul(vv, 1.0 / c2)) + eps)
            u.append(rt.where(ok, adaptive, mh))
        step = _lr_at(lr, count, fname)
        return _scaled(tg, u, _neg(step)), RadamState(t, _unflat(tg, m), _unflat(tg, v))

    return GradientTransformation(init, update)


def lars(lr: Any, weight_decay: float = 0.0, trust_coefficient: float = 0.001, eps: float = 0.0,
         momentum: float = 0.9, nesterov: bool = False) -> GradientTransformation:
    """LARS (You et al., 2017, "Large batch training of convolutional networks"), as optax's ``lars``.

    ``u = g + weight_decay * p``; ``u *= trust_coefficient * |p| / (|u| + eps)`` per leaf (1 where
    either norm is 0); ``u *= -lr``; then a momentum trace ``b = u + momentum * b`` (from zero),
    the update ``b`` (or ``u + momentum * b`` with ``nesterov``).

    Args:
        lr: the learning rate (a number >= 0, a 0-d tensor or a schedule).
        weight_decay: L2 coefficient added to the gradient (default 0).
        trust_coefficient: the trust ratio's factor (default 0.001).
        eps: added to the update's norm (default 0).
        momentum: the trace's decay, in ``[0, 1]`` (default 0.9).
        nesterov: Nesterov momentum.
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params``.
    Raises:
        TypeError, ValueError: for bad hyperparameters; ValueError for an update without ``params``.

    >>> import runetensor as rt
    >>> opt = rt.optim.lars(1.0, trust_coefficient=0.1)
    >>> p = [rt.create(rt.float64, [2], [6.0, 8.0])]
    >>> u, s = opt.update([rt.create(rt.float64, [2], [0.3, 0.4])], opt.init(p), p)
    >>> print(u[0])   # |u| = 0.1 * |p| = 1
    [-0.6, -0.8]
    """
    fname = "lars"
    lr = _lr(lr, fname)
    wd = _nonneg(weight_decay, fname, "weight_decay")
    tc = _nonneg(trust_coefficient, fname, "trust_coefficient")
    eps = _nonneg(eps, fname, "eps")
    mom = _number(momentum, fname, "momentum", 0.0, 1.0)

    def init(params: Any) -> LarsState:
        p, tp = _flat(params, fname, "params")
        return LarsState(_count_init(), _unflat(tp, _zeros(p)))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, LarsState]:
        s = _check_state(state, LarsState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        b = _state(s.trace, g, tg, fname, "state.trace")
        if params is None:
            raise ValueError(f"{fname}: update needs params (the trust ratio is |params| / |update|)")
        p = _params(params, g, tg, fname)
        u = [x + wd * y for x, y in zip(g, p)] if wd else g
        u = [_trust(x, y, 0.0, tc, eps) for x, y in zip(u, p)]
        step = _lr_at(lr, count, fname)
        u = [_mul(x, _neg(step)) for x in u]
        b = [x + mom * y for x, y in zip(u, b)]
        d = [x + mom * y for x, y in zip(u, b)] if nesterov else b
        return _unflat(tg, d), LarsState(_count_next(count), _unflat(tg, b))

    return GradientTransformation(init, update)


def adan(lr: Any, b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8, eps_root: float = 1e-8,
         weight_decay: float = 0.0) -> GradientTransformation:
    """Adan (Xie et al., 2022, "Adaptive Nesterov momentum algorithm"), as optax's ``adan``.

    With ``d = g - g_prev`` (0 at the first step): ``m = b1 m + (1-b1) g``, ``v = b2 v + (1-b2) d``,
    ``n = b3 n + (1-b3) (g + (1-b2) d)**2``; bias-corrected ``m_hat, v_hat, n_hat``;
    ``u = (m_hat + (1-b2) v_hat) / (sqrt(n_hat + eps_root) + eps) + weight_decay * p``; the update
    is ``-lr * u``.
    (The ``b``'s are optax's: the weight of the old average, so ``b1 = 0.98`` is the paper's
    ``beta1 = 0.02``.)

    Args:
        lr: the learning rate (a number >= 0, a 0-d tensor or a schedule).
        b1, b2, b3: the decay rates of ``m``, ``v`` and ``n``, in ``[0, 1)``.
        eps: added to the root of ``n_hat``.
        eps_root: added to ``n_hat`` inside the root (default 1e-8, as optax).
        weight_decay: decoupled decay (default 0).
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params`` when ``weight_decay > 0``.
    Raises:
        TypeError, ValueError: for bad hyperparameters.

    >>> import runetensor as rt
    >>> opt = rt.optim.adan(0.1)
    >>> p = [rt.zeros(rt.float64, [2])]
    >>> u, s = opt.update([rt.create(rt.float64, [2], [2.0, -1.0])], opt.init(p), p)
    >>> [round(x, 6) for x in rt.to_array(u[0])]   # the first step is -lr * sign(g)
    [-0.1, 0.1]
    """
    fname = "adan"
    lr = _lr(lr, fname)
    b1 = _number(b1, fname, "b1", 0.0, 1.0, hi_open=True)
    b2 = _number(b2, fname, "b2", 0.0, 1.0, hi_open=True)
    b3 = _number(b3, fname, "b3", 0.0, 1.0, hi_open=True)
    eps = _nonneg(eps, fname, "eps")
    eps_root = _nonneg(eps_root, fname, "eps_root")
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> AdanState:
        p, tp = _flat(params, fname, "params")
        z = [_unflat(tp, _zeros(p)) for _ in range(4)]
        return AdanState(_count_init(), *z)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, AdanState]:
        s = _check_state(state, AdanState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        m = _state(s.m, g, tg, fname, "state.m")
        v = _state(s.v, g, tg, fname, "state.v")
        n = _state(s.n, g, tg, fname, "state.n")
        prev = _state(s.prev, g, tg, fname, "state.prev")
        first = count == 0
        d = [rt.where(first, rt.zeros_like(x), x - y) for x, y in zip(g, prev)]
        m = [b1 * y + (1.0 - b1) * x for x, y in zip(g, m)]
        v = [b2 * y + (1.0 - b2) * x for x, y in zip(d, v)]
        sq = [x + (1.0 - b2) * dd for x, dd in zip(g, d)]
        n = [b3 * y + (1.0 - b3) * (x * x) for x, y in zip(sq, n)]
        t = _count_next(count)
        tf = rt.cast(t, D.float64)
        c1, c2, c3 = _bias(tf, b1), _bias(tf, b2), _bias(tf, b3)
        u = [(_mul(mm, 1.0 / c1) + (1.0 - b2) * _mul(vv, 1.0 / c2)) / (rt.sqrt(_mul(nn, 1.0 / c3) + eps_root) + eps)
             for mm, vv, nn in zip(m, v, n)]
        if wd:
            u = [x + wd * y for x, y in zip(u, _params(params, g, tg, fname))]
        step = _lr_at(lr, count, fname)
        return (_scaled(tg, u, _neg(step)),
                AdanState(t, _unflat(tg, m), _unflat(tg, v), _unflat(tg, n), _unflat(tg, list(g))))

    return GradientTransformation(init, update)


def _factored_dims(shape: tuple[int, ...], factored: bool, min_dim: int) -> tuple[int, int] | None:
    """The two largest axes (second largest, largest) of a leaf to factor, or None (optax's rule)."""
    if not factored or len(shape) < 2:
        return None
    order = sorted(range(len(shape)), key=lambda i: (shape[i], i))   # a stable argsort
    if shape[order[-2]] < min_dim:
        return None
    return order[-2], order[-1]


def adafactor(lr: Any = None, min_dim_size_to_factor: int = 128, decay_rate: float = 0.8, decay_offset: int = 0,
              multiply_by_parameter_scale: bool = True, clipping_threshold: float | None = 1.0,
              momentum: float | None = None, weight_decay_rate: float | None = None, eps: float = 1e-30,
              factored: bool = True) -> GradientTransformation:
    """Adafactor (Shazeer and Stern, 2018): factored second moments, as optax's ``adafactor``.

    Per leaf, with ``beta_t = 1 - max(t - decay_offset, 1)**(-decay_rate)`` (``t`` from 1) and
    ``s = g**2 + eps``: a leaf whose two largest axes ``(d1, d0)`` are both at least
    ``min_dim_size_to_factor`` keeps row and column averages ``r = beta r + (1 - beta) mean(s,
    d0)``, ``c = beta c + (1 - beta) mean(s, d1)`` and scales ``g`` by ``(r / mean(r))**-1/2`` and
    ``c**-1/2``; another leaf keeps the full ``v = beta v + (1 - beta) s`` and takes ``g / sqrt(v)``.
    Then, in order: clip per leaf to RMS ``clipping_threshold`` (``u / max(1, rms(u) / thr)``),
    multiply by ``lr``, by ``max(rms(p), 1e-3)`` (``multiply_by_parameter_scale``), a momentum
    average ``b = momentum b + (1 - momentum) u`` (``momentum``), add ``weight_decay_rate * p``,
    and negate.

    Args:
        lr: the learning rate (a number >= 0, a 0-d tensor or a schedule), or None for no scaling.
        min_dim_size_to_factor: the smallest axis size of a factored leaf.
        decay_rate: the exponent of ``beta_t``.
        decay_offset: steps subtracted from ``t`` in ``beta_t`` (an int >= 0).
        multiply_by_parameter_scale: scale by the parameter's RMS.
        clipping_threshold: the RMS clip (None: no clipping).
        momentum: the momentum decay (None: none).
        weight_decay_rate: decay added after the learning rate (None: none).
        eps: added to the squared gradient.
        factored: factor the second moments at all.
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params`` for the parameter scale
        and the weight decay.
    Raises:
        TypeError, ValueError: for bad hyperparameters.

    >>> import runetensor as rt
    >>> opt = rt.optim.adafactor(0.1, multiply_by_parameter_scale=False)
    >>> p = [rt.zeros(rt.float64, [2])]
    >>> u, s = opt.update([rt.create(rt.float64, [2], [2.0, -1.0])], opt.init(p), p)
    >>> print(u[0])   # beta_1 = 0: g / |g|, then times -lr
    [-0.1, 0.1]
    """
    fname = "adafactor"
    lr = None if lr is None else _lr(lr, fname)
    min_dim = _positive_int(min_dim_size_to_factor, fname, "min_dim_size_to_factor", allow_zero=True)
    dr = _nonneg(decay_rate, fname, "decay_rate")
    off = _positive_int(decay_offset, fname, "decay_offset", allow_zero=True)
    clip = None if clipping_threshold is None else _number(clipping_threshold, fname, "clipping_threshold", 0.0,
                                                           math.inf, lo_open=True, hi_open=True)
    mom = None if momentum is None else _number(momentum, fname, "momentum", 0.0, 1.0)
    wd = None if weight_decay_rate is None else _nonneg(weight_decay_rate, fname, "weight_decay_rate")
    eps = _nonneg(eps, fname, "eps")

    def init(params: Any) -> AdafactorState:
        p, tp = _flat(params, fname, "params")
        rows, cols, full = [], [], []
        for x in p:
            shape = tuple(x.shape)
            fd = _factored_dims(shape, factored, min_dim)
            if fd is None:
                rows.append(rt.zeros(x.dtype, [1]))
                cols.append(rt.zeros(x.dtype, [1]))
                full.append(rt.zeros_like(x))
            else:
                d1, d0 = fd
                rows.append(rt.zeros(x.dtype, [s for i, s in enumerate(shape) if i != d0]))
                cols.append(rt.zeros(x.dtype, [s for i, s in enumerate(shape) if i != d1]))
                full.append(rt.zeros(x.dtype, [1]))
        return AdafactorState(_count_init(), _unflat(tp, rows), _unflat(tp, cols), _unflat(tp, full),
                              _unflat(tp, _zeros(p)) if mom is not None else None)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, AdafactorState]:
        s = _check_state(state, AdafactorState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        rows, _ = _flat(s.v_row, fname, "state.v_row")
        cols, _ = _flat(s.v_col, fname, "state.v_col")
        full, _ = _flat(s.v, fname, "state.v")
        if not len(rows) == len(cols) == len(full) == len(g):
            raise ValueError(f"{fname}: the state holds {len(rows)} leaves, the gradients {len(g)}")
        t = rt.cast(count, D.float64) - off + 1.0
        beta = 1.0 - rt.maximum(t, 1.0) ** (-dr)     # before the offset: beta = 0 (optax: NaN)
        nr, nc, nf, u = [], [], [], []
        for x, r, c, v in zip(g, rows, cols, full):
            b = rt.cast(beta, x.dtype)
            sq = x * x + eps
            fd = _factored_dims(tuple(x.shape), factored, min_dim)
            if fd is None:
                v = b * v + (1.0 - b) * sq
                nr.append(r)
                nc.append(c)
                nf.append(v)
                u.append(x * v ** -0.5)
            else:
                d1, d0 = fd
                r = b * r + (1.0 - b) * rt.mean(sq, axes=[d0])
                c = b * c + (1.0 - b) * rt.mean(sq, axes=[d1])
                rd1 = d1 - 1 if d1 > d0 else d1
                row_factor = (r / rt.mean(r, axes=[rd1], keepdims=True)) ** -0.5
                col_factor = c ** -0.5
                u.append(x * rt.expand_dims(row_factor, d0) * rt.expand_dims(col_factor, d1))
                nr.append(r)
                nc.append(c)
                nf.append(v)
        if clip is not None:
            u = [_mul(x, 1.0 / rt.maximum(_rms(x) / clip, 1.0)) for x in u]
        if lr is not None:
            u = [_mul(x, _lr_at(lr, count, fname)) for x in u]
        p = None
        if multiply_by_parameter_scale or wd is not None:
            if params is None:
                raise ValueError(f"{fname}: update needs params (parameter scale or weight decay)")
            p = _params(params, g, tg, fname)
        if multiply_by_parameter_scale:
            u = [_mul(x, rt.maximum(_rms(y), 1e-3)) for x, y in zip(u, p)]
        mo = None
        if mom is not None:
            mo = _state(s.momentum, g, tg, fname, "state.momentum")
            mo = [mom * y + (1.0 - mom) * x for x, y in zip(u, mo)]
            u = mo
        if wd is not None:
            u = [x + wd * y for x, y in zip(u, p)]
        return (_unflat(tg, [-x for x in u]),
                AdafactorState(_count_next(count), _unflat(tg, nr), _unflat(tg, nc), _unflat(tg, nf),
                               _unflat(tg, mo)))

    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# transformations
# ---------------------------------------------------------------------------------------------

def scale_by_trust_ratio(min_norm: float = 0.0, trust_coefficient: float = 1.0, eps: float = 0.0
                         ) -> GradientTransformation:
    """Scale each leaf's update by ``trust_coefficient * max(|p|, min_norm) / (max(|u|, min_norm) + eps)``.

    The ratio is 1 where either norm is 0 (optax's ``scale_by_trust_ratio``): the layer-wise
    adaptation of LARS and LAMB, to chain after any optimizer.

    Args:
        min_norm: the least norm used for both (default 0).
        trust_coefficient: the ratio's factor (default 1).
        eps: added to the update's norm (default 0).
    Returns:
        A stateless :class:`GradientTransformation` (state ``()``); its ``update`` needs ``params``.
    Raises:
        TypeError, ValueError: for bad hyperparameters; ValueError for an update without ``params``.

    >>> import runetensor as rt
    >>> tr = rt.optim.scale_by_trust_ratio()
    >>> p = [rt.create(rt.float32, [2], [3.0, 4.0])]
    >>> u, _ = tr.update([rt.create(rt.float32, [2], [0.0, 0.5])], tr.init(p), p)
    >>> print(u[0])
    [0, 5]
    """
    fname = "scale_by_trust_ratio"
    mn = _nonneg(min_norm, fname, "min_norm")
    tc = _nonneg(trust_coefficient, fname, "trust_coefficient")
    eps = _nonneg(eps, fname, "eps")

    def init(params: Any) -> tuple:
        return ()

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, tuple]:
        g, tg = _flat(grads, fname, "updates")
        if params is None:
            raise ValueError(f"{fname}: update needs params (the ratio is |params| / |update|)")
        p = _params(params, g, tg, fname)
        return _unflat(tg, [_trust(x, y, mn, tc, eps) for x, y in zip(g, p)]), ()

    return GradientTransformation(init, update)


def centralize() -> GradientTransformation:
    """Gradient centralization (Yong et al., 2020): each leaf of rank >= 2 minus its mean over all axes but the first.

    Leaves of rank 0 or 1 (biases) pass unchanged (optax's ``centralize``).  Chain it before an
    optimizer: ``chain(centralize(), adam(1e-3))``.

    Returns:
        A stateless :class:`GradientTransformation` (state ``()``).

    >>> import runetensor as rt
    >>> c = rt.optim.centralize()
    >>> u, _ = c.update([rt.create(rt.float32, [2, 2], [1.0, 3.0, 0.0, 4.0])], c.init(None))
    >>> print(u[0])
    [[-1, 1],
     [-2, 2]]
    """
    fname = "centralize"

    def init(params: Any) -> tuple:
        return ()

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, tuple]:
        g, tg = _flat(grads, fname, "updates")
        out = [x - rt.mean(x, axes=list(range(1, x.ndim)), keepdims=True) if x.ndim > 1 else x for x in g]
        return _unflat(tg, out), ()

    return GradientTransformation(init, update)


def add_noise(eta: float, gamma: float, key: Tensor) -> GradientTransformation:
    """Add Gaussian noise of variance ``eta / (1 + t)**gamma`` to the updates (Neelakantan et al., 2015).

    ``t`` is the update count (0 first).  The noise comes from ``key``: the state carries a key,
    split at each update into the next state's key and one key per leaf, so the same key gives
    the same noise (eagerly and under ``rt.jit``).

    Args:
        eta: the initial variance, >= 0.
        gamma: the decay exponent of the variance, >= 0 (the paper uses 0.55).
        key: a random key (``rt.random.key``).
    Returns:
        A :class:`GradientTransformation` with state :class:`AddNoiseState`.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> tr = rt.optim.add_noise(0.01, 0.55, rt.random.key(0))
    >>> u, s = tr.update([rt.zeros(rt.float32, [1000])], tr.init(None))
    >>> 0.08 < float(rt.std(u[0])) < 0.12     # sqrt(0.01) at the first update
    True
    """
    fname = "add_noise"
    eta = _nonneg(eta, fname, "eta")
    gamma = _nonneg(gamma, fname, "gamma")
    _check_key(key, fname)

    def init(params: Any) -> AddNoiseState:
        return AddNoiseState(_count_init(), key)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, AddNoiseState]:
        s = _check_state(state, AddNoiseState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "updates")
        keys = rt.random.split(s.key, len(g) + 1)
        std = rt.sqrt(eta / (rt.cast(count, D.float64) + 1.0) ** gamma)
        out = []
        for i, x in enumerate(g):
            d = x.dtype if x.dtype in (D.float32, D.float64) else D.float32
            z = rt.random.normal(keys[i + 1], tuple(x.shape), d)
            out.append(x + rt.cast(_mul(z, std), x.dtype))
        return _unflat(tg, out), AddNoiseState(_count_next(count), keys[0])

    return GradientTransformation(init, update)


def grads_finite(tree: Any) -> Tensor:
    """Whether every element of every leaf of ``tree`` is finite (no NaN, no infinity): a 0-d bool tensor.

    A tensor, not a Python bool, so a jitted step can use it (``rt.where``, a loss scale's
    ``adjust``) without reading it.

    Args:
        tree: a pytree of tensors (integer leaves are always finite).
    Returns:
        A 0-d bool tensor (True for a tree without leaves).
    Raises:
        TypeError: for a leaf that is not a tensor.

    >>> import runetensor as rt
    >>> g = {"w": rt.ones(rt.float32, [2]), "b": rt.create(rt.float32, [1], [float("inf")])}
    >>> print(rt.optim.grads_finite(g), rt.optim.grads_finite({"w": g["w"]}))
    false true
    """
    leaves, _ = rt.tree_flatten(tree)
    ok = rt.full(D.bool, [], True)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise TypeError(f"grads_finite: every leaf must be a tensor, got {type(x).__name__}")
        if x.dtype.is_float or x.dtype.is_complex:
            ok = ok & rt.all(rt.isfinite(x))
    return ok


def apply_if_finite(inner: GradientTransformation, max_consecutive_errors: int) -> GradientTransformation:
    """Skip the updates (zeros, state kept) of a step whose gradients hold a NaN or an infinity.

    As optax's ``apply_if_finite``: a step is applied when its gradients are all finite, or when
    more than ``max_consecutive_errors`` steps in a row were not (then the non-finite update goes
    through, so a run that cannot recover shows it).  Both outcomes are computed and selected
    with ``rt.where``, so a jitted step does not retrace on them.

    Args:
        inner: the optimizer to guard.
        max_consecutive_errors: how many non-finite steps in a row are skipped, an int >= 0.
    Returns:
        A :class:`GradientTransformation` with state :class:`ApplyIfFiniteState`.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> opt = rt.optim.apply_if_finite(rt.optim.sgd(0.1), 3)
    >>> p = [rt.zeros(rt.float32, [1])]
    >>> u, s = opt.update([rt.create(rt.float32, [1], [float("nan")])], opt.init(p), p)
    >>> print(u[0], s.notfinite_count, s.total_notfinite)
    [0] 1 1
    """
    fname = "apply_if_finite"
    if not isinstance(inner, GradientTransformation):
        raise TypeError(f"{fname}: inner must be a GradientTransformation, got {type(inner).__name__}")
    mx = _positive_int(max_consecutive_errors, fname, "max_consecutive_errors", allow_zero=True)

    def init(params: Any) -> ApplyIfFiniteState:
        z = rt.zeros(D.int32, [])
        return ApplyIfFiniteState(z, rt.full(D.bool, [], True), z, inner.init(params))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, ApplyIfFiniteState]:
        s = _check_state(state, ApplyIfFiniteState, fname)
        finite = grads_finite(grads)
        bad = rt.where(finite, rt.zeros_like(s.notfinite_count), s.notfinite_count + 1)
        total = rt.where(finite, s.total_notfinite, s.total_notfinite + 1)
        apply = finite | (bad > mx)
        u, new_inner = inner.update(grads, s.inner_state, params)
        ul, tu = rt.tree_flatten(u)
        u = rt.tree_unflatten(tu, [rt.where(apply, x, rt.zeros_like(x)) for x in ul])
        nl, tn = rt.tree_flatten(new_inner)
        ol, to = rt.tree_flatten(s.inner_state)
        if tn != to:
            raise ValueError(f"{fname}: the inner optimizer's state changed structure ({to} -> {tn})")
        kept = rt.tree_unflatten(tn, [rt.where(apply, a, b) for a, b in zip(nl, ol)])
        return u, ApplyIfFiniteState(bad, finite, total, kept)

    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------------

def _real(v: Any, fname: str, what: str) -> float:
    return _number(v, fname, what, -math.inf, math.inf, True, True)


def piecewise_constant_schedule(init_value: float, boundaries_and_scales: Mapping[int, float] | None = None
                                ) -> Callable[[Any], Tensor]:
    """``init_value`` times the scale of every boundary reached (``{100: 0.1, 200: 0.1}``: /10 at 100 and at 200).

    As optax: the value at step ``t`` is ``init_value * prod(scale for boundary, scale in
    boundaries_and_scales.items() if t >= boundary)``.

    Args:
        init_value: the value before the first boundary.
        boundaries_and_scales: a mapping from step (an int >= 0) to a factor >= 0 (None: constant).
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.piecewise_constant_schedule(1.0, {10: 0.5, 20: 0.1})
    >>> [round(float(s(t)), 6) for t in (0, 9, 10, 19, 20, 1000)]
    [1.0, 1.0, 0.5, 0.5, 0.05, 0.05]
    """
    fname = "piecewise_constant_schedule"
    v0 = _real(init_value, fname, "init_value")
    items: list[tuple[int, float]] = []
    if boundaries_and_scales is not None:
        if not isinstance(boundaries_and_scales, Mapping):
            raise TypeError(f"{fname}: boundaries_and_scales must be a mapping step -> scale, got "
                            f"{type(boundaries_and_scales).__name__}")
        for b, sc in boundaries_and_scales.items():
            items.append((_positive_int(b, fname, "a boundary", allow_zero=True), _nonneg(sc, fname, "a scale")))
    items.sort()

    def schedule(count: Any) -> Tensor:
        t = _step(count, fname)
        v = rt.full_like(t, v0)
        for b, sc in items:
            v = rt.where(t >= b, v * sc, v)
        return v

    return schedule


def polynomial_schedule(init_value: float, end_value: float, power: float, transition_steps: int,
                        transition_begin: int = 0) -> Callable[[Any], Tensor]:
    """Polynomial decay from ``init_value`` to ``end_value`` over ``transition_steps``, as optax.

    With ``s = clip(t - transition_begin, 0, transition_steps)``: ``(init_value - end_value) *
    (1 - s / transition_steps)**power + end_value`` (``power = 1`` is a linear ramp).

    Args:
        init_value: the value up to ``transition_begin``.
        end_value: the value from ``transition_begin + transition_steps`` on.
        power: the exponent, > 0.
        transition_steps: the length of the transition, an int > 0.
        transition_begin: the step where it starts, an int >= 0.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.polynomial_schedule(1.0, 0.0, 2.0, 10, transition_begin=5)
    >>> [round(float(s(t)), 6) for t in (0, 5, 10, 15, 30)]
    [1.0, 1.0, 0.25, 0.0, 0.0]
    """
    fname = "polynomial_schedule"
    v0 = _real(init_value, fname, "init_value")
    v1 = _real(end_value, fname, "end_value")
    pw = _number(power, fname, "power", 0.0, math.inf, lo_open=True, hi_open=True)
    n = _positive_int(transition_steps, fname, "transition_steps")
    b = _positive_int(transition_begin, fname, "transition_begin", allow_zero=True)

    def schedule(count: Any) -> Tensor:
        s = rt.clip(_step(count, fname) - b, 0.0, builtins.float(n))
        return (v0 - v1) * (1.0 - s / n) ** pw + v1

    return schedule


def cosine_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4) -> Callable[[Any], Tensor]:
    """The one-cycle schedule (Smith and Topin, 2018) with cosine ramps, as optax's ``cosine_onecycle_schedule``.

    From ``peak_value / div_factor`` up to ``peak_value`` at step ``int(pct_start *
    transition_steps)``, then down to ``peak_value / (div_factor * final_div_factor)`` at
    ``transition_steps`` (constant after); each ramp is a half cosine ``end + (start - end) *
    (1 + cos(pi * fraction)) / 2``.

    Args:
        transition_steps: the length of the cycle, an int > 0.
        peak_value: the largest value, >= 0.
        pct_start: the fraction of the cycle spent rising, in ``[0, 1]``.
        div_factor: ``peak_value / initial value``, > 0.
        final_div_factor: ``initial value / final value``, > 0.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.cosine_onecycle_schedule(100, 1.0, pct_start=0.25, div_factor=10.0, final_div_factor=10.0)
    >>> [round(float(s(t)), 6) for t in (0, 25, 100, 200)]
    [0.1, 1.0, 0.01, 0.01]
    """
    fname = "cosine_onecycle_schedule"
    n = _positive_int(transition_steps, fname, "transition_steps")
    pk = _nonneg(peak_value, fname, "peak_value")
    pct = _number(pct_start, fname, "pct_start", 0.0, 1.0)
    df = _number(div_factor, fname, "div_factor", 0.0, math.inf, lo_open=True, hi_open=True)
    fdf = _number(final_div_factor, fname, "final_div_factor", 0.0, math.inf, lo_open=True, hi_open=True)
    bounds = [0, int(pct * n), n]
    values = [pk / df, pk, pk / df / fdf]

    def schedule(count: Any) -> Tensor:
        t = _step(count, fname)
        out = rt.full_like(t, values[-1])
        for i in (1, 0):
            lo, hi = bounds[i], bounds[i + 1]
            if hi <= lo:
                continue
            frac = (t - lo) / (hi - lo)
            ramp = values[i + 1] + (values[i] - values[i + 1]) * 0.5 * (1.0 + rt.cos(math.pi * frac))
            out = rt.where((t >= lo) & (t < hi), ramp, out)
        return out

    return schedule


def join_schedules(schedules: Sequence[Callable[[Any], Any]], boundaries: Sequence[int]) -> Callable[[Any], Tensor]:
    """One schedule made of several, each restarted at its boundary: ``schedules[i](t - boundaries[i-1])``.

    As optax: before ``boundaries[0]`` the first schedule at ``t``; from ``boundaries[i-1]`` up to
    ``boundaries[i]`` schedule ``i`` at ``t - boundaries[i-1]``.  All are evaluated (with counts
    clamped at 0) and selected with ``rt.where``, so it runs under ``rt.jit``.

    Args:
        schedules: ``k`` schedules (functions from the count to a number or a 0-d tensor).
        boundaries: ``k - 1`` increasing steps (ints >= 0).
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> warm = rt.optim.polynomial_schedule(0.0, 1.0, 1.0, 10)
    >>> s = rt.optim.join_schedules([warm, rt.optim.cosine_decay_schedule(1.0, 90)], [10])
    >>> [round(float(s(t)), 6) for t in (0, 5, 10, 55, 100)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    fname = "join_schedules"
    scheds = list(schedules)
    if not scheds or not all(callable(s) for s in scheds):
        raise TypeError(f"{fname}: schedules must be a non-empty sequence of functions of the step count")
    bounds = [_positive_int(b, fname, "a boundary", allow_zero=True) for b in boundaries]
    if len(bounds) != len(scheds) - 1:
        raise ValueError(f"{fname}: {len(scheds)} schedules need {len(scheds) - 1} boundaries, got {len(bounds)}")
    if any(a > b for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"{fname}: boundaries must be increasing, got {bounds}")

    def schedule(count: Any) -> Tensor:
        t = _step(count, fname)
        out = _f64(scheds[0](t))
        for b, s in zip(bounds, scheds[1:]):
            out = rt.where(t < b, out, _f64(s(rt.maximum(t - b, 0.0))))
        return out

    return schedule


def sgdr_schedule(cosine_kwargs: Iterable[Mapping[str, Any]]) -> Callable[[Any], Tensor]:
    """Cosine annealing with warm restarts (Loshchilov and Hutter, 2017), as optax's ``sgdr_schedule``.

    Each mapping holds :func:`warmup_cosine_decay_schedule`'s arguments (``init_value``,
    ``peak_value``, ``warmup_steps``, ``decay_steps``, optionally ``end_value``); the cycles
    follow each other, cycle ``i`` starting where cycle ``i - 1``'s ``decay_steps`` end.

    Args:
        cosine_kwargs: the cycles' arguments, in order.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> cycle = dict(init_value=0.0, peak_value=1.0, warmup_steps=0, decay_steps=10)
    >>> s = rt.optim.sgdr_schedule([cycle, cycle])
    >>> [round(float(s(t)), 6) for t in (0, 5, 10, 15, 20)]
    [1.0, 0.5, 1.0, 0.5, 0.0]
    """
    fname = "sgdr_schedule"
    scheds, bounds, step = [], [], 0
    for kw in cosine_kwargs:
        if not isinstance(kw, Mapping):
            raise TypeError(f"{fname}: each cycle must be a mapping of warmup_cosine_decay_schedule's arguments, "
                            f"got {type(kw).__name__}")
        scheds.append(warmup_cosine_decay_schedule(**kw))
        step += _positive_int(kw["decay_steps"], fname, "decay_steps")
        bounds.append(step)
    if not scheds:
        raise ValueError(f"{fname}: no cycles")
    return join_schedules(scheds, bounds[:-1])


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4, atol: float = 0.0,
                      cooldown: int = 0, accumulation_size: int = 1, min_scale: float = 0.0
                      ) -> GradientTransformation:
    """Scale the updates down by ``factor`` when a monitored value (the loss) stops improving, as optax's.

    The update takes the value: ``updates, state = plateau.update(updates, state, value=loss)``
    (after the optimizer; it is not a :func:`chain` member, since ``chain`` passes no value).
    Every ``accumulation_size`` calls the mean of the values is compared with the best so far: an
    improvement is ``mean < (1 - rtol) * best - atol``; after ``patience`` evaluations without one
    the scale is multiplied by ``factor`` (at least ``min_scale``), then ``cooldown`` evaluations
    pass before counting again.  The updates are multiplied by the current scale.

    Args:
        factor: the reduction factor, in ``(0, 1]``.
        patience: evaluations without improvement before a reduction, an int >= 0.
        rtol, atol: the relative and absolute margins of an improvement, >= 0.
        cooldown: evaluations to wait after a reduction, an int >= 0.
        accumulation_size: values averaged per evaluation, an int > 0.
        min_scale: the least scale, >= 0.
    Returns:
        A :class:`GradientTransformation` whose ``update(updates, state, params=None, *, value)``
        needs the value; state :class:`ReduceOnPlateauState` (``state.scale`` is the current scale).
    Raises:
        TypeError, ValueError: for bad arguments, or an update without ``value``.

    >>> import runetensor as rt
    >>> pl = rt.optim.reduce_on_plateau(factor=0.5, patience=2)
    >>> s = pl.init(None)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0]:
    ...     _, s = pl.update([rt.ones(rt.float32, [1])], s, value=loss)
    >>> float(s.scale)
    0.5
    """
    fname = "reduce_on_plateau"
    fac = _number(factor, fname, "factor", 0.0, 1.0, lo_open=True)
    pat = _positive_int(patience, fname, "patience", allow_zero=True)
    rtol = _nonneg(rtol, fname, "rtol")
    atol = _nonneg(atol, fname, "atol")
    cd = _positive_int(cooldown, fname, "cooldown", allow_zero=True)
    acc = _positive_int(accumulation_size, fname, "accumulation_size")
    mins = _nonneg(min_scale, fname, "min_scale")

    def init(params: Any) -> ReduceOnPlateauState:
        zi = rt.zeros(D.int32, [])
        return ReduceOnPlateauState(rt.ones(D.float32, []), rt.full(D.float32, [], math.inf), zi, zi, zi,
                                    rt.zeros(D.float32, []))

    def update(updates: Any, state: Any, params: Any = None, *, value: Any = None
               ) -> tuple[Any, ReduceOnPlateauState]:
        s = _check_state(state, ReduceOnPlateauState, fname)
        if value is None:
            raise TypeError(f"{fname}: update needs the monitored value: update(updates, state, value=loss)")
        if not isinstance(value, Tensor) and (isinstance(value, builtins.bool) or not isinstance(value, numbers.Real)):
            raise TypeError(f"{fname}: value must be a number or a 0-d tensor, got {type(value).__name__}")
        val = rt.cast(value, D.float32) if isinstance(value, Tensor) else rt.scalar(D.float32, builtins.float(value))
        if val.ndim != 0:
            raise ValueError(f"{fname}: value must be 0-d, got shape {tuple(val.shape)}")
        cnt = rt.cast(s.count, D.float32)
        avg = (cnt * s.avg_value + val) / (cnt + 1.0)
        new_count = (s.count + 1) % acc
        evaluate = new_count == 0
        improved = avg < (1.0 - rtol) * s.best_value - atol
        best = rt.where(improved, avg, s.best_value)
        plateau = rt.where(improved, rt.zeros_like(s.plateau_count), s.plateau_count + 1)
        hit = plateau == pat
        cooling = s.cooldown_count > 0
        zi = rt.zeros_like(s.plateau_count)
        new_plateau = rt.where(cooling, zi, rt.where(hit, zi, plateau))
        new_scale = rt.where(cooling, s.scale, rt.maximum(rt.where(hit, s.scale * fac, s.scale), mins))
        new_cool = rt.where(cooling, s.cooldown_count - 1, rt.where(hit, rt.full_like(zi, cd), zi))
        ns = ReduceOnPlateauState(
            rt.where(evaluate, new_scale, s.scale), rt.where(evaluate, best, s.best_value),
            rt.where(evaluate, new_plateau, s.plateau_count), rt.where(evaluate, new_cool, s.cooldown_count),
            new_count, rt.where(evaluate, rt.zeros_like(avg), avg))
        leaves, td = rt.tree_flatten(updates)
        return rt.tree_unflatten(td, [_mul(x, ns.scale) for x in leaves]), ns

    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# loss scaling (mixed precision)
# ---------------------------------------------------------------------------------------------

def _scale_tree(tree: Any, f: Tensor, divide: bool) -> Any:
    """Each float leaf times (or divided by) the float32 0-d ``f``; float16/bfloat16 leaves in float32, cast back."""
    leaves, td = rt.tree_flatten(tree)
    out = []
    for x in leaves:
        if not isinstance(x, Tensor) or not x.dtype.is_float:
            raise TypeError(f"loss scaling: every leaf must be a real floating tensor, got "
                            f"{x.dtype if isinstance(x, Tensor) else type(x).__name__}")
        if x.dtype in (D.float32, D.float64):
            y = x / rt.cast(f, x.dtype) if divide else x * rt.cast(f, x.dtype)
        else:
            w = rt.cast(x, D.float32)
            y = rt.cast(w / f if divide else w * f, x.dtype)
        out.append(y)
    return rt.tree_unflatten(td, out)


def _scale_value(v: Any, fname: str) -> Tensor:
    if isinstance(v, Tensor):
        if v.ndim != 0 or not v.dtype.is_float:
            raise TypeError(f"{fname}: loss_scale must be a number or a 0-d float tensor, got shape {tuple(v.shape)} "
                            f"dtype {v.dtype}")
        return rt.cast(v, D.float32)
    return rt.scalar(D.float32, _number(v, fname, "loss_scale", 0.0, math.inf, lo_open=True, hi_open=True))


class StaticLossScale:
    """A fixed loss scale: multiply the loss by ``loss_scale`` before differentiating, divide the gradients after.

    Small float16 gradients underflow to 0; computing the gradient of ``loss * S`` moves them up
    by ``S``, and :meth:`unscale` brings them back (in float32 for float16/bfloat16 leaves).  A
    pytree (``rt.register_pytree``), so it can be passed to and returned from a jitted step.

    Args:
        loss_scale: the factor, a number > 0 or a 0-d float tensor (powers of two are exact).
    Raises:
        TypeError, ValueError: for a bad ``loss_scale``.

    >>> import runetensor as rt
    >>> ls = rt.optim.StaticLossScale(1024.0)
    >>> print(ls.scale(rt.scalar(rt.float32, 0.5)), ls.unscale([rt.full(rt.float16, [2], 512.0)])[0])
    512 [0.5, 0.5]
    """

    def __init__(self, loss_scale: Any) -> None:
        self.loss_scale = _scale_value(loss_scale, "StaticLossScale")

    def scale(self, tree: Any) -> Any:
        """``tree`` (a loss, or any pytree of float tensors) times the loss scale."""
        return _scale_tree(tree, self.loss_scale, False)

    def unscale(self, tree: Any) -> Any:
        """``tree`` (the gradients) divided by the loss scale."""
        return _scale_tree(tree, self.loss_scale, True)

    def adjust(self, grads_finite: Any) -> StaticLossScale:
        """The loss scale for the next step: itself (a static scale never changes)."""
        return self

    def __repr__(self) -> str:
        return f"StaticLossScale({self.loss_scale!r})"


class DynamicLossScale:
    """A loss scale that adapts: halved after a step with non-finite gradients, doubled after ``period`` good ones.

    The update rule (:meth:`adjust`, given :func:`grads_finite` of the unscaled gradients):
    finite gradients count a good step, and the ``period``-th good step in a row multiplies the
    scale by ``factor`` (and restarts the count); non-finite gradients divide the scale by
    ``factor`` (never below ``min_loss_scale``) and restart the count; skip that step's update
    (``rt.where(finite, new, old)``, or :func:`apply_if_finite`).  The scale and the count are
    0-d tensors (float32 and int32), so the rule runs under ``rt.jit``; the object is a pytree.

    Args:
        loss_scale: the starting scale (default ``2**15``).
        counter: the count of good steps so far (default 0).
        period: good steps before growing, an int > 0 (default 2000).
        factor: the growth and shrink factor, > 1 (default 2).
        min_loss_scale: the least scale, > 0 (default 1).
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> ls = rt.optim.DynamicLossScale(8.0, period=2)
    >>> ok, bad = rt.full(rt.bool, [], True), rt.full(rt.bool, [], False)
    >>> [float((ls := ls.adjust(f)).loss_scale) for f in (ok, ok, bad, ok)]
    [8.0, 16.0, 8.0, 8.0]
    """

    def __init__(self, loss_scale: Any = 2.0 ** 15, counter: Any = None, *, period: int = 2000,
                 factor: float = 2.0, min_loss_scale: float = 1.0) -> None:
        fname = "DynamicLossScale"
        self.loss_scale = _scale_value(loss_scale, fname)
        if counter is None:
            counter = rt.zeros(D.int32, [])
        elif isinstance(counter, Tensor):
            if counter.ndim != 0 or not counter.dtype.is_int:
                raise TypeError(f"{fname}: counter must be a 0-d integer tensor, got shape {tuple(counter.shape)} "
                                f"dtype {counter.dtype}")
            counter = rt.cast(counter, D.int32)
        else:
            counter = rt.scalar(D.int32, _positive_int(counter, fname, "counter", allow_zero=True))
        self.counter = counter
        self.period = _positive_int(period, fname, "period")
        self.factor = _number(factor, fname, "factor", 1.0, math.inf, lo_open=True, hi_open=True)
        self.min_loss_scale = _number(min_loss_scale, fname, "min_loss_scale", 0.0, math.inf, lo_open=True,
                                      hi_open=True)

    def scale(self, tree: Any) -> Any:
        """``tree`` (a loss, or any pytree of float tensors) times the loss scale."""
        return _scale_tree(tree, self.loss_scale, False)

    def unscale(self, tree: Any) -> Any:
        """``tree`` (the gradients) divided by the loss scale."""
        return _scale_tree(tree, self.loss_scale, True)

    def adjust(self, grads_finite: Any) -> DynamicLossScale:
        """The loss scale for the next step, after a step whose gradients were (or were not) all finite.

        Args:
            grads_finite: a 0-d bool tensor (:func:`grads_finite`) or a Python bool.
        Returns:
            A new :class:`DynamicLossScale` (this one is not modified).
        """
        ok = grads_finite if isinstance(grads_finite, Tensor) else rt.full(D.bool, [], builtins.bool(grads_finite))
        if ok.ndim != 0 or ok.dtype is not D.bool:
            raise TypeError(f"DynamicLossScale.adjust: grads_finite must be a 0-d bool tensor, got shape "
                            f"{tuple(ok.shape)} dtype {ok.dtype}")
        grow = self.counter == self.period - 1
        ls = self.loss_scale
        up = rt.where(grow, ls * self.factor, ls)
        down = rt.maximum(ls / self.factor, self.min_loss_scale)
        new_ls = rt.where(ok, up, down)
        new_counter = rt.where(ok, (self.counter + 1) % self.period, rt.zeros_like(self.counter))
        return DynamicLossScale(new_ls, new_counter, period=self.period, factor=self.factor,
                                min_loss_scale=self.min_loss_scale)

    def __repr__(self) -> str:
        return (f"DynamicLossScale({self.loss_scale!r}, counter={self.counter!r}, period={self.period}, "
                f"factor={self.factor}, min_loss_scale={self.min_loss_scale})")


def _register() -> None:
    register_pytree(StaticLossScale, lambda s: ([s.loss_scale], None),
                    lambda aux, ch: _static_from(ch[0]))
    register_pytree(DynamicLossScale, lambda s: ([s.loss_scale, s.counter], (s.period, s.factor, s.min_loss_scale)),
                    lambda aux, ch: _dynamic_from(ch, aux))


def _static_from(v: Any) -> StaticLossScale:
    s = StaticLossScale.__new__(StaticLossScale)
    s.loss_scale = v        # as is: a tracer or a cotangent under a transformation
    return s


def _dynamic_from(ch: list, aux: tuple) -> DynamicLossScale:
    s = DynamicLossScale.__new__(DynamicLossScale)
    s.loss_scale, s.counter = ch
    s.period, s.factor, s.min_loss_scale = aux
    return s


_register()
