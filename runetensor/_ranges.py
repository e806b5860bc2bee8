"""Structured creation: ``eye identity diag linspace logspace geomspace meshgrid tril triu``.

Composed from backend primitives: a diagonal is an ``as_strided`` view of a
zero matrix that one ``assign`` fills; ranges are one ``arange`` and a few
elementwise calls computed in float64 (or complex128) and cast once.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

from . import _dtypes as D
from ._backend import get_backend
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, on_common, wrap
from ._validate import alloc_error, as_dtype, as_int, check_alloc, check_count

__all__ = ["eye", "identity", "diag", "linspace", "logspace", "geomspace", "meshgrid", "tril", "triu"]

_Number = (builtins.int, builtins.float, builtins.complex)


def _size(v: Any, fname: str, what: str) -> int:
    # 16 bytes: the float64/complex128 working arrays of the ranges
    return check_count(v, fname, what, 16)


def _number(v: Any, fname: str, what: str, allow_complex: bool = True) -> builtins.float | builtins.complex:
    if isinstance(v, Tensor) and v.size == 1:
        v = v._scalar()
    if isinstance(v, builtins.complex):
        if not allow_complex:
            raise TypeError(f"{fname}: {what} must be real, got {v!r}")
        return v
    if isinstance(v, builtins.bool) or not hasattr(v, "__float__"):
        raise TypeError(f"{fname}: {what} must be a number, got {type(v).__name__} {v!r}")
    return builtins.float(v)


def _traced(*vs: Any) -> builtins.bool:
    """Whether an argument is a tensor of a running transformation (``grad``, ``jvp``, ``vmap``...):
    then the range is computed with tensor operations, so derivatives (and lanes) flow through it."""
    for v in vs:
        if isinstance(v, Tensor) and v._backend.level > 0:
            return True
    return False


def _traced_bounds(fname: str, vals: Sequence[Any], names: Sequence[str], allow_complex: builtins.bool
                   ) -> tuple[Any, DType, list, list]:
    """``(be, cd, hs, nums)`` for range bounds of which at least one is a tensor of a transformation:
    ``be`` the common (highest) backend, ``cd`` float64 or complex128 (for a complex bound), ``hs``
    each bound as a 0-d ``cd`` handle of ``be`` and ``nums`` each bound's value as a Python number
    for a plain one (None for a tensor: it is not read)."""
    ts = []
    cplx = False
    nums: list = []
    for v, nm in zip(vals, names):
        if isinstance(v, Tensor) and v._backend.level > 0:
            if v.size != 1:
                raise TypeError(f"{fname}: {nm} must be a number or a one-element tensor, got a tensor of shape "
                                f"{v.shape}")
            k = v._dtype.kind
            if k == "c" and not allow_complex:
                raise TypeError(f"{fname}: {nm} must be real, got a {v._dtype} tensor")
            if k not in "iufc":
                raise TypeError(f"{fname}: {nm} must be a number, got a {v._dtype} tensor")
            cplx = cplx or k == "c"
            ts.append(v)
            nums.append(None)
        else:
            x = _number(v, fname, nm, allow_complex)
            cplx = cplx or isinstance(x, builtins.complex)
            nums.append(x)
    cd = D.complex128 if cplx else D.float64
    be, _ = on_common(fname, *ts)
    hs = []
    for v, x in zip(vals, nums):
        if x is None:
            h = be.reshape(v._data if v._backend is be else wrap(v._data, v._dtype, be)._data, ())
            hs.append(h if v._dtype is cd else be.cast(h, cd))
        else:
            hs.append(be.full((), x, cd))
    return be, cd, hs, nums


def _traced_steps(be: Any, count: int, a: Any, b: Any, endpoint: builtins.bool, cd: DType) -> Any:
    """:func:`_steps` with the bounds ``a``, ``b`` given as 0-d handles of ``be`` (tensors of a
    transformation): the same operations in the same order, so the values are the same bits, with
    the last value chosen by ``where`` instead of written (the derivative of ``stop`` goes there)."""
    pos = be.arange(0, count, 1, D.int64)
    idx = be.cast(pos, cd)
    if count == 0:
        return idx
    div = count - 1 if endpoint else count
    if div > 0:
        step = be.binary("div", be.binary("sub", b, a), builtins.float(div))
        y = be.binary("add", be.binary("mul", idx, step), a)
    else:
        y = be.copy(be.expand(be.reshape(a, (1,)), (count,)))
    if endpoint and count > 1:
        y = be.where(be.binary("eq", pos, count - 1), b, y)
    return y


def _flag(v: Any, fname: str) -> builtins.bool:
    try:
        return builtins.bool(v)
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: endpoint must be a bool, got {type(v).__name__} {v!r}") from None


def _diag_view(be: Any, h: Any, rows: int, cols: int, k: int) -> Any | None:
    """The k-th diagonal of a C-contiguous (rows, cols) handle as a 1-d view (None if empty)."""
    if k >= 0:
        n, start = min(rows, cols - k), k
    else:
        n, start = min(rows + k, cols), -k * cols
    if n <= 0:
        return None
    return be.as_strided(h, (n,), (cols + 1,), be.offset(h) + start)


def eye(dtype: Any, n: int, m: int | None = None, k: int = 0, backend: Any = None) -> Tensor:
    """An ``(m, n)`` matrix with ones on the ``k``-th diagonal and zeros elsewhere.

    Args:
        dtype: element type (any of the 19).
        n: number of columns.
        m: number of rows (default ``n``).
        k: diagonal offset: ``> 0`` above the main diagonal, ``< 0`` below.
    Returns:
        A new C-contiguous tensor.
    Raises:
        ValueError: if ``n`` or ``m`` is negative.
        TypeError: if ``n``, ``m`` or ``k`` is not an integer.

    >>> import runetensor as rt
    >>> print(rt.eye(rt.int32, 3, k=1))
    [[0, 1, 0],
     [0, 0, 1],
     [0, 0, 0]]
    >>> print(rt.eye(rt.int32, 3, m=2, k=-1))
    [[0, 0, 0],
     [1, 0, 0]]
    """
    return _eye(dtype, n, m, k, "eye", backend)


def _eye(dtype: Any, n: Any, m: Any, k: Any, fname: str, backend: Any = None) -> Tensor:
    d = as_dtype(dtype, fname)
    cols = check_count(n, fname, "n", d.itemsize)
    rows = cols if m is None else check_count(m, fname, "m", d.itemsize)
    kk = as_int(k, fname, "k")
    kk = max(-rows, min(kk, cols))  # beyond the matrix: no diagonal (and no huge offsets)
    check_alloc((rows, cols), d, fname)
    be = get_backend(backend)
    try:
        h = be.full((rows, cols), 0, d)
    except MemoryError:
        raise alloc_error(fname, (rows, cols), d) from None
    v = _diag_view(be, h, rows, cols, kk)
    if v is not None:
        be.assign(v, 1)
    return wrap(h, d, be)


def identity(dtype: Any, n: int, backend: Any = None) -> Tensor:
    """The ``n x n`` identity matrix (``eye(dtype, n)``).

    Raises:
        ValueError: if ``n`` is negative.

    >>> import runetensor as rt
    >>> print(rt.identity(rt.int32, 3))
    [[1, 0, 0],
     [0, 1, 0],
     [0, 0, 1]]
    """
    return _eye(dtype, n, None, 0, "identity", backend)


@attach()
def diag(v: Tensor, k: int = 0) -> Tensor:
    """Extract a diagonal (2-d input) or build a diagonal matrix (1-d input).

    Args:
        v: a 1-d tensor (placed on the ``k``-th diagonal of a square matrix of
            side ``len(v) + |k|``) or a 2-d tensor (its ``k``-th diagonal is returned).
        k: diagonal offset (default 0; ``> 0`` above, ``< 0`` below the main diagonal).
    Returns:
        A new tensor of ``v``'s dtype (a copy, never a view).
    Raises:
        ValueError: if ``v`` is 0-d or has more than 2 dimensions.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3, 3], list(range(9)))
    >>> print(rt.diag(x)), print(rt.diag(x, k=1))
    [0, 4, 8]
    [1, 5]
    (None, None)
    >>> print(rt.diag(rt.create(rt.int32, [3], [1, 2, 3])))
    [[1, 0, 0],
     [0, 2, 0],
     [0, 0, 3]]
    """
    v = as_tensor(v, "diag")
    kk = as_int(k, "diag", "k")
    be, h, d = v._backend, v._data, v._dtype
    if h.ndim == 1:
        n = h.shape[0] + abs(kk)
        check_alloc((n, n), d, "diag")
        try:
            out = be.full((n, n), 0, d)
        except MemoryError:
            raise alloc_error("diag", (n, n), d) from None
        m = h.shape[0]
        if m:  # a scatter at (i + max(-k, 0), i + max(k, 0)): functional, so transformations see through it
            idx = be.arange(0, m, 1, D.int64)
            rows = be.binary("add", idx, -kk) if kk < 0 else idx
            cols = be.binary("add", idx, kk) if kk > 0 else idx
            be.scatter(out, (rows, cols), h)
        return wrap(out, d, be)
    if h.ndim == 2:
        rows, cols = h.shape
        kk = max(-rows, min(kk, cols))  # beyond the matrix: an empty diagonal
        if kk >= 0:
            cnt, r0, c0 = min(rows, cols - kk), 0, kk
        else:
            cnt, r0, c0 = min(rows + kk, cols), -kk, 0
        if cnt <= 0:
            return wrap(be.empty((0,), d), d, be)
        s0, s1 = be.strides(h)
        view = be.as_strided(h, (cnt,), (s0 + s1,), be.offset(h) + r0 * s0 + c0 * s1)
        return wrap(be.copy(view), d, be)
    if h.ndim == 0:
        raise ValueError("diag: v must be 1-d or 2-d, got a 0-d tensor (a scalar)")
    raise ValueError(f"diag: v must be 1-d or 2-d, got a {h.ndim}-d tensor of shape {h.shape}")


def _steps(be: Any, count: int, start: Any, stop: Any, endpoint: bool) -> tuple[Any, DType]:
    """``start + i * (stop - start) / div`` for ``i < count`` in float64 (complex128 for complex
    bounds), with the last value exactly ``stop`` when ``endpoint``."""
    cd = D.complex128 if isinstance(start, complex) or isinstance(stop, complex) else D.float64
    div = count - 1 if endpoint else count
    idx = be.cast(be.arange(0, count, 1, D.int64), cd)
    if count == 0:
        return idx, cd
    if div > 0:
        step = (stop - start) / div
        y = be.binary("add", be.binary("mul", idx, step), start)
    else:
        y = be.full((count,), start, cd)
    if endpoint and count > 1:
        be.assign(be.view_index(y, (count - 1,)), stop)
    return y, cd


def _finish(be: Any, y: Any, d: DType, floor_ints: bool, fname: str) -> Any:
    """Cast a float64/complex128 result to ``d`` (flooring first for integer ``d`` if asked).

    Raises:
        ValueError: for an integer ``d``, if a value is not finite or does not fit ``d``.
    """
    if d.kind in "biuf" and be.dtype(y).kind == "c":
        y = be.unary("real", y)
    if d.kind in "iu" and floor_ints:
        y = be.unary("floor", y)
    if d.kind in "iu" and y.size:
        y = be.unary("trunc", y)
        lo_v = be.to_list(be.reduce("min", y, (0,), False))
        hi_v = be.to_list(be.reduce("max", y, (0,), False))
        lo, hi = ((-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.kind == "i" else (0, (1 << d.bits) - 1))
        if not (math.isfinite(lo_v) and math.isfinite(hi_v) and lo <= lo_v and hi_v <= hi):
            raise ValueError(f"{fname}: values from {lo_v:g} to {hi_v:g} do not fit {d} (expected {lo} .. {hi})")
    return be.cast(y, d) if be.dtype(y) is not d else y


def linspace(dtype: Any, start: float, stop: float, count: int, endpoint: bool = True,
             backend: Any = None) -> Tensor:
    """``count`` evenly spaced values from ``start`` to ``stop``.

    Values are ``start + i * step`` computed in float64 (complex128 for complex
    bounds) and cast once; with ``endpoint`` the last value is exactly ``stop``.
    Integer dtypes take the floor of each value (as NumPy).

    Args:
        dtype: element type.
        start, stop: the ends (real or complex numbers, or one-element tensors: inside
            ``grad``/``jvp``/``vmap`` the derivative flows from them, as in JAX, and the values
            are the same bits).
        count: number of values (>= 0).
        endpoint: include ``stop`` (default True); if False, the step is
            ``(stop - start) / count``.
    Raises:
        ValueError: if ``count`` is negative, or (integer dtypes) a value is not finite or
            does not fit the dtype.
        TypeError: if an argument is not a number.

    >>> import runetensor as rt
    >>> print(rt.linspace(rt.float32, 0., 10., 5, endpoint=True))
    [0, 2.5, 5, 7.5, 10]
    >>> print(rt.linspace(rt.float32, 0., 10., 5, endpoint=False))
    [0, 2, 4, 6, 8]
    """
    d = as_dtype(dtype, "linspace")
    if (start.__class__ is not builtins.float or stop.__class__ is not builtins.float) and _traced(start, stop):
        n = _size(count, "linspace", "count")
        be, cd, (ha, hb), _ = _traced_bounds("linspace", (start, stop), ("start", "stop"), True)
        y = _traced_steps(be, n, ha, hb, _flag(endpoint, "linspace"), cd)
        return wrap(_finish(be, y, d, True, "linspace"), d, be)
    a = _number(start, "linspace", "start")
    b = _number(stop, "linspace", "stop")
    n = _size(count, "linspace", "count")
    be = get_backend(backend)
    try:
        y, _ = _steps(be, n, a, b, _flag(endpoint, "linspace"))
        return wrap(_finish(be, y, d, True, "linspace"), d, be)
    except MemoryError:
        raise alloc_error("linspace", (n,), d) from None


def logspace(dtype: Any, start_exp: float, stop_exp: float, count: int, endpoint: bool = True,
             base: float = 10.0, backend: Any = None) -> Tensor:
    """``base ** x`` for ``count`` exponents ``x`` evenly spaced from ``start_exp`` to ``stop_exp``.

    Computed in float64 and cast once (integer dtypes truncate, as NumPy);
    exact powers such as ``10 ** 2`` come out exact.

    Args:
        dtype: element type.
        start_exp, stop_exp: the first and last exponent (numbers or one-element tensors, whose
            derivative flows through, as ``base``'s does).
        count: number of values (>= 0).
        endpoint: include ``base ** stop_exp`` (default True).
        base: the base (default 10.0).
    Raises:
        ValueError: if ``count`` is negative, or (integer dtypes) a value does not fit the dtype.
        TypeError: if an argument is not a real number.

    >>> import runetensor as rt
    >>> print(rt.logspace(rt.float32, 0., 2., 3))
    [1, 10, 100]
    >>> print(rt.logspace(rt.float32, 0., 3., 4, base=2.0))
    [1, 2, 4, 8]
    """
    d = as_dtype(dtype, "logspace")
    if (start_exp.__class__ is not builtins.float or stop_exp.__class__ is not builtins.float
            or base.__class__ is not builtins.float) and _traced(start_exp, stop_exp, base):
        n = _size(count, "logspace", "count")
        be, cd, (ha, hb, hbase), nums = _traced_bounds("logspace", (start_exp, stop_exp, base),
                                                       ("start_exp", "stop_exp", "base"), False)
        ep = _flag(endpoint, "logspace")
        x = _steps(be, n, nums[0], nums[1], ep)[0] if nums[0] is not None and nums[1] is not None else \
            _traced_steps(be, n, ha, hb, ep, cd)
        return wrap(_finish(be, be.binary("pow", hbase, x), d, False, "logspace"), d, be)
    a = _number(start_exp, "logspace", "start_exp", False)
    b = _number(stop_exp, "logspace", "stop_exp", False)
    bs = _number(base, "logspace", "base", False)
    n = _size(count, "logspace", "count")
    be = get_backend(backend)
    try:
        x, _ = _steps(be, n, a, b, _flag(endpoint, "logspace"))
        y = be.binary("pow", be.full((), bs, D.float64), x)
        return wrap(_finish(be, y, d, False, "logspace"), d, be)
    except MemoryError:
        raise alloc_error("logspace", (n,), d) from None


def geomspace(dtype: Any, start: float, stop: float, count: int, endpoint: bool = True,
              backend: Any = None) -> Tensor:
    """``count`` values from ``start`` to ``stop`` with a constant ratio between neighbours.

    Value ``i`` is ``start * 10 ** (i * log10(stop / start) / div)`` in float64,
    so exact powers stay exact (``1, 10, 100, 1000``); the ends are exactly
    ``start`` and (with ``endpoint``) ``stop``.  Integer dtypes truncate.

    Args:
        dtype: element type.
        start, stop: the ends, both > 0 (numbers or one-element tensors, whose derivative flows
            through; their values are read to check them, so not under ``vmap``).
        count: number of values (>= 0).
        endpoint: include ``stop`` (default True).
    Raises:
        ValueError: if ``start <= 0`` or ``stop <= 0`` (or either is NaN), ``count`` is negative,
            or (integer dtypes) a value does not fit the dtype.
        TypeError: if an argument is not a real number.

    >>> import runetensor as rt
    >>> print(rt.geomspace(rt.float32, 1., 1000., 4))
    [1, 10, 100, 1000]
    """
    d = as_dtype(dtype, "geomspace")
    a = _number(start, "geomspace", "start", False)
    b = _number(stop, "geomspace", "stop", False)
    n = _size(count, "geomspace", "count")
    if not (a > 0 and b > 0):
        raise ValueError(f"geomspace: start and stop must be > 0, got start={a}, stop={b}")
    if (start.__class__ is not builtins.float or stop.__class__ is not builtins.float) and _traced(start, stop):
        return _geomspace_traced(d, start, stop, a, b, n, _flag(endpoint, "geomspace"))
    try:
        return _geomspace(d, a, b, n, endpoint, backend)
    except MemoryError:
        raise alloc_error("geomspace", (n,), d) from None


def _geomspace(d: DType, a: float, b: float, n: int, endpoint: Any, backend: Any = None) -> Tensor:
    be = get_backend(backend)
    div = n - 1 if endpoint else n
    idx = be.cast(be.arange(0, n, 1, D.int64), D.float64)
    if n and div > 0:
        ratio = b / a
        lr = math.log10(ratio) if math.isfinite(ratio) and ratio > 0 else math.log10(b) - math.log10(a)
        e = be.binary("div", be.binary("mul", idx, lr), builtins.float(div))
        y = be.binary("mul", be.binary("pow", be.full((), 10.0, D.float64), e), a)
        be.assign(be.view_index(y, (0,)), a)
        if endpoint:
            be.assign(be.view_index(y, (n - 1,)), b)
    else:
        y = be.full((n,), a, D.float64)
    return wrap(_finish(be, y, d, False, "geomspace"), d, be)


def _geomspace_traced(d: DType, start: Any, stop: Any, a: float, b: float, n: int, endpoint: builtins.bool
                      ) -> Tensor:
    """:func:`_geomspace` with a bound that is a tensor of a transformation (its value ``a``/``b`` was
    read to check it): the same operations on handles, the ends chosen by ``where``."""
    be, cd, (ha, hb), _ = _traced_bounds("geomspace", (start, stop), ("start", "stop"), False)
    div = n - 1 if endpoint else n
    pos = be.arange(0, n, 1, D.int64)
    idx = be.cast(pos, D.float64)
    if n and div > 0:
        ratio = b / a
        if math.isfinite(ratio) and ratio > 0:
            lr = be.unary("log10", be.binary("div", hb, ha))
        else:
            lr = be.binary("sub", be.unary("log10", hb), be.unary("log10", ha))
        e = be.binary("div", be.binary("mul", idx, lr), builtins.float(div))
        y = be.binary("mul", be.binary("pow", be.full((), 10.0, D.float64), e), ha)
        y = be.where(be.binary("eq", pos, 0), ha, y)
        if endpoint:
            y = be.where(be.binary("eq", pos, n - 1), hb, y)
    else:
        y = be.copy(be.expand(be.reshape(ha, (1,)), (n,)))
    return wrap(_finish(be, y, d, False, "geomspace"), d, be)


def meshgrid(x: Tensor, y: Tensor, indexing: str = "xy") -> tuple[Tensor, Tensor]:
    """Coordinate grids ``(X, Y)`` from two 1-d tensors.

    Args:
        x: 1-d tensor of length ``nx``.
        y: 1-d tensor of length ``ny``.
        indexing: ``"xy"`` (default, Cartesian: both results have shape
            ``(ny, nx)``, X varies along columns) or ``"ij"`` (matrix: shape
            ``(nx, ny)``, X varies along rows).
    Returns:
        A tuple of two new C-contiguous tensors (of the promoted dtype if ``x``
        and ``y`` differ).
    Raises:
        ValueError: if ``x`` or ``y`` is not 1-d, or ``indexing`` is neither "xy" nor "ij".

    >>> import runetensor as rt
    >>> X, Y = rt.meshgrid(rt.linspace(rt.float32, 0., 2., 3), rt.linspace(rt.float32, 0., 1., 2))
    >>> print(X); print(Y)
    [[0, 1, 2],
     [0, 1, 2]]
    [[0, 0, 0],
     [1, 1, 1]]
    """
    x = as_tensor(x, "meshgrid")
    X, Y = _meshgrid([x, as_tensor(y, "meshgrid", backend=x._backend)], indexing, ("x", "y"))
    return X, Y


def _meshgrid(ts: list[Tensor], indexing: str, names: Sequence[str] | None = None) -> list[Tensor]:
    """N coordinate grids of rank N from N 1-d tensors (promoted to one dtype), fresh C-contiguous
    copies; ``"xy"`` swaps the first two output axes.  rt's ``meshgrid`` (two tensors) and
    array_api's (any number); ``names`` name the inputs in errors (default ``array i``)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be \"xy\" or \"ij\", got {indexing!r}")
    for i, t in enumerate(ts):
        if t.ndim != 1:
            name = names[i] if names else f"array {i}"
            raise ValueError(f"meshgrid: {name} must be 1-d, got shape {t.shape}")
    if not ts:
        return []
    _, ts = on_common("meshgrid", *ts)
    d = ts[0]._dtype
    for t in ts[1:]:
        if t._dtype is not d:
            d = D.promote_types(d, t._dtype)
    be = ts[0]._backend
    n = len(ts)
    sizes = [t._data.shape[0] for t in ts]
    pos = list(range(n))
    if indexing == "xy" and n >= 2:
        pos[0], pos[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    shape = check_alloc(tuple(sizes), d, "meshgrid")
    out = []
    for t, p in zip(ts, pos):
        h = t._data if t._dtype is d else be.cast(t._data, d)
        shp = [1] * n
        shp[p] = h.shape[0]
        try:
            out.append(wrap(be.copy(be.expand(be.reshape(be.contiguous(h), tuple(shp)), shape)), d, be))
        except MemoryError:
            raise alloc_error("meshgrid", shape, d) from None
    return out


def _tri(x: Any, k: int, fname: str, lower: bool) -> Tensor:
    x = as_tensor(x, fname)
    kk = as_int(k, fname, "k")
    if x.ndim < 2:
        raise ValueError(f"{fname}: x must have at least 2 dimensions (rank >= 2), got shape {x.shape}")
    be, h, d = x._backend, x._data, x._dtype
    rows, cols = h.shape[-2], h.shape[-1]
    kk = max(-rows - 1, min(kk, cols + 1))  # beyond the matrix: all or nothing (and no int64 overflow)
    r = be.reshape(be.arange(0, rows, 1, D.int64), (rows, 1))
    c = be.reshape(be.arange(0, cols, 1, D.int64), (1, cols))
    diff = be.binary("sub", c, r)  # column - row: 0 on the main diagonal
    keep = be.binary("le", diff, kk) if lower else be.binary("ge", diff, kk)
    return wrap(be.where(keep, h, be.full((), 0, d)), d, be)


@attach()
def tril(x: Tensor, k: int = 0) -> Tensor:
    """The lower triangle of ``x``'s last two axes: elements above the ``k``-th diagonal become 0.

    Args:
        x: a tensor with at least 2 dimensions (leading axes are a batch).
        k: ``0`` keeps the main diagonal, ``> 0`` also keeps ``k`` diagonals
            above it, ``< 0`` also zeroes ``|k|`` diagonals below it.
    Returns:
        A new tensor of ``x``'s shape and dtype.
    Raises:
        ValueError: if ``x`` has fewer than 2 dimensions.

    >>> import runetensor as rt
    >>> print(rt.tril(rt.ones(rt.int32, [3, 3])))
    [[1, 0, 0],
     [1, 1, 0],
     [1, 1, 1]]
    """
    return _tri(x, k, "tril", True)


@attach()
def triu(x: Tensor, k: int = 0) -> Tensor:
    """The upper triangle of ``x``'s last two axes: elements below the ``k``-th diagonal become 0.

    Args:
        x: a tensor with at least 2 dimensions (leading axes are a batch).
        k: ``0`` keeps the main diagonal, ``> 0`` also zeroes ``k`` diagonals
            above it, ``< 0`` keeps ``|k|`` diagonals below it.
    Returns:
        A new tensor of ``x``'s shape and dtype.
    Raises:
        ValueError: if ``x`` has fewer than 2 dimensions.

    >>> import runetensor as rt
    >>> print(rt.triu(rt.ones(rt.int32, [2, 3]), k=1))
    [[0, 1, 1],
     [0, 0, 1]]
    """
    return _tri(x, k, "triu", False)
