"""Linear algebra: products, decompositions, eigenvalues, norms, solvers.

Every function works on stacks of matrices: leading axes are batch axes (and
broadcast where two operands meet).  Dtype rules:

* integer and bool inputs of the float routines (``cholesky`` ... ``tensorinv``)
  are computed in ``float64``;
* float16, bfloat16 and float8 are computed in float32 and rounded back once
  (complex results of such inputs, as from ``eig``, are ``complex64``);
* the product functions (``vdot`` ... ``multi_dot``) keep the promoted dtype of
  their operands, integers included.

Numerical failure (a singular matrix, a matrix that is not positive definite,
an iteration that does not converge) raises :class:`LinAlgError`, a
``ValueError`` whose message names the operation.

>>> import runetensor as rt
>>> a = rt.create(rt.float64, [2, 2], [4, 1, 1, 3])
>>> print(rt.solve(a, rt.create(rt.float64, [2], [1, 2])))
[0.0909091, 0.636364]
>>> print(rt.det(a))
11
"""
from __future__ import annotations

import builtins
import functools
import math
from typing import Any, Sequence

from . import _dtypes as D
from ._backend.contract import NumericalFailure
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, on_common, wrap
from ._validate import as_int, broadcast_shapes, normalize_axes, normalize_axis, shape_str
from ._out import write_out

__all__ = [
    "LinAlgError", "matrix_transpose", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum",
    "kron", "multi_dot", "matrix_power", "cross", "cholesky", "qr", "svd", "svdvals", "eig", "eigh",
    "eigvals", "eigvalsh", "norm", "det", "slogdet", "matrix_rank", "trace", "solve", "lstsq",
    "inv", "pinv", "tensorsolve", "tensorinv",
]


class LinAlgError(ValueError):
    """A numerical failure in a linear-algebra routine (singular matrix, not positive
    definite, no convergence).  The message starts with the operation's name.

    >>> import runetensor as rt
    >>> try:
    ...     rt.inv(rt.zeros(rt.float64, [2, 2]))
    ... except rt.LinAlgError as e:
    ...     print(e)
    inv: Singular matrix
    """


# ---------------------------------------------------------------------------
# small helpers on handles
# ---------------------------------------------------------------------------
def _t(x: Any, fname: str) -> Tensor:
    t = as_tensor(x, fname)
    if t._dtype is D.object_:
        raise TypeError(f"{fname}: not defined for object tensors")
    return t


def _float_dtypes(d: DType, fname: str) -> tuple[DType, DType]:
    """(compute dtype, dtype of real-valued results) for a float routine."""
    k = d.kind
    if k in "biu":
        return D.float64, D.float64
    if k == "f":
        if d is D.float32 or d is D.float64:
            return d, d
        return D.float32, d  # float16, bfloat16, float8: compute in float32, round back
    if k == "c":
        return d, d
    raise TypeError(f"{fname}: expected a numeric tensor, got {d}")


def _cast_h(t: Tensor, d: DType) -> Any:
    return t._data if t._dtype is d else t._backend.cast(t._data, d)


def _back(be: Any, h: Any, want: DType) -> Tensor:
    """Wrap a backend result, rounding real results back to a low-precision ``want``."""
    got = be.dtype(h)
    if got.is_float and want.is_float and got is not want:
        return wrap(be.cast(h, want), want, be)
    return wrap(h, got, be)


def _la(fname: str, be: Any, op: str, *args: Any, **params: Any) -> Any:
    try:
        return be.linalg(op, *args, **params)
    except NumericalFailure as e:
        raise LinAlgError(f"{fname}: {e}") from None


def _matrix(t: Tensor, fname: str, square: bool = False) -> None:
    s = t._data.shape
    if len(s) < 2:
        raise ValueError(f"{fname}: expected a matrix (or a stack of matrices) with ndim >= 2, "
                         f"got shape {shape_str(s)}")
    if square and s[-1] != s[-2]:
        raise ValueError(f"{fname}: expected square matrices, got shape {shape_str(s)} "
                         f"(last two dimensions {s[-2]} and {s[-1]} differ)")


def _float_input(x: Any, fname: str, square: bool = False) -> tuple[Tensor, Any, DType]:
    """(tensor, handle in the compute dtype, dtype for real results)."""
    t = _t(x, fname)
    _matrix(t, fname, square)
    cd, rd = _float_dtypes(t._dtype, fname)
    return t, _cast_h(t, cd), rd


def _reshape(be: Any, h: Any, shape: tuple[int, ...]) -> Any:
    r = be.reshape(h, shape)
    if r is None:
        r = be.reshape(be.copy(h), shape)
    return r


def _swap_last(be: Any, h: Any) -> Any:
    nd = h.ndim
    return be.permute(h, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _common(a: Any, b: Any, fname: str) -> tuple[Tensor, Tensor, DType]:
    _, (a, b) = on_common(fname, _t(a, fname), _t(b, fname))
    d = D.promote_types(a._dtype, b._dtype)
    return a, b, d


def _conj_h(be: Any, h: Any, d: DType) -> Any:
    return be.unary("conj", h) if d.is_complex else h


def _eye_h(be: Any, n: int, d: DType) -> Any:
    r = be.arange(0, n, 1, D.int64)
    col = be.reshape(r, (n, 1))
    row = be.reshape(r, (1, n))
    return be.cast(be.binary("eq", col, row), d)


# ---------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------
@attach()
def matrix_transpose(t: Tensor) -> Tensor:
    """Swap the last two axes (a view); tensors with fewer than 2 axes come back unchanged.

    Args:
        t: the tensor.
    Returns:
        A view of shape ``(..., n, m)`` for input ``(..., m, n)``.

    >>> import runetensor as rt
    >>> rt.matrix_transpose(rt.zeros(rt.float32, [5, 2, 3])).shape
    (5, 3, 2)
    """
    t = as_tensor(t, "matrix_transpose")
    if t._data.ndim < 2:
        return t
    return wrap(_swap_last(t._backend, t._data), t._dtype, t._backend)


@attach()
def vdot(a: Any, b: Any) -> Tensor:
    """Dot product of two tensors flattened to vectors, conjugating ``a`` when complex.

    Args:
        a, b: tensors with the same number of elements.
    Returns:
        A 0-d tensor of the promoted dtype.
    Raises:
        ValueError: if the sizes differ.

    >>> import runetensor as rt
    >>> print(rt.vdot(rt.create(rt.complex128, [2], [1j, 2]), rt.create(rt.complex128, [2], [1j, 3])))
    7+0i
    """
    a, b, d = _common(a, b, "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: inputs have {a.size} and {b.size} elements; expected the same number")
    be = a._backend
    x = _reshape(be, _cast_h(a, d), (a.size,))
    y = _reshape(be, _cast_h(b, d), (b.size,))
    return wrap(be.matmul(_conj_h(be, x, d), y), d, be)


@attach()
def vecdot(a: Any, b: Any, axis: int = -1) -> Tensor:
    """Dot product along ``axis`` with broadcasting, conjugating ``a`` when complex.

    Args:
        a, b: broadcast-compatible tensors with equal sizes along ``axis``.
        axis: the contracted axis of the broadcast shape (default ``-1``).
    Returns:
        The broadcast shape without ``axis``.
    Raises:
        ValueError: if the shapes do not broadcast or the sizes along ``axis`` differ.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> a = rt.create(rt.float64, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> print(rt.vecdot(a, rt.create(rt.float64, [3], [1, 1, 1])))
    [6, 15]
    """
    a, b, d = _common(a, b, "vecdot")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: expected tensors with at least one axis, got a 0-d tensor")
    ax_a = normalize_axis(axis, a.ndim, "vecdot")
    ax_b = normalize_axis(axis, b.ndim, "vecdot")
    if a.shape[ax_a] != b.shape[ax_b]:
        raise ValueError(f"vecdot: sizes along axis {axis} differ: {a.shape[ax_a]} (shape {shape_str(a.shape)}) and "
                         f"{b.shape[ax_b]} (shape {shape_str(b.shape)})")
    shape = broadcast_shapes(a.shape, b.shape, fname="vecdot")
    be = a._backend
    ax = normalize_axis(axis, len(shape), "vecdot")
    perm = tuple(i for i in range(len(shape)) if i != ax) + (ax,)
    x = be.permute(be.expand(_cast_h(a, d), shape), perm)
    y = be.permute(be.expand(_cast_h(b, d), shape), perm)
    n = shape[ax]
    lead = x.shape[:-1]
    x = _reshape(be, _conj_h(be, x, d), lead + (1, n))
    y = _reshape(be, y, lead + (n, 1))
    r = be.matmul(x, y)
    return wrap(_reshape(be, r, lead), d, be)


@attach()
def inner(a: Any, b: Any) -> Tensor:
    """Inner product over the last axes (no conjugation); a 0-d operand multiplies.

    Args:
        a, b: tensors whose last dimensions agree.
    Returns:
        Shape ``a.shape[:-1] + b.shape[:-1]``.
    Raises:
        ValueError: if the last dimensions differ.

    >>> import runetensor as rt
    >>> a = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    >>> print(rt.inner(a, a))
    [[5, 11],
     [11, 25]]
    """
    a, b, d = _common(a, b, "inner")
    be = a._backend
    x, y = _cast_h(a, d), _cast_h(b, d)
    if a.ndim == 0 or b.ndim == 0:
        return wrap(be.binary("mul", x, y), d, be)
    n = a.shape[-1]
    if b.shape[-1] != n:
        raise ValueError(f"inner: last dimensions differ: {shape_str(a.shape)} and {shape_str(b.shape)}")
    x2 = _reshape(be, x, (math.prod(a.shape[:-1]), n))
    y2 = _reshape(be, y, (math.prod(b.shape[:-1]), n))
    r = be.matmul(x2, be.permute(y2, (1, 0)))
    return wrap(_reshape(be, r, a.shape[:-1] + b.shape[:-1]), d, be)


@attach()
def outer(a: Any, b: Any, out: Tensor | None = None) -> Tensor:
    """Outer product of the flattened inputs: shape ``(a.size, b.size)``.

    ``out`` (Rune's ``?out``): a tensor of the result's shape and dtype to write into.

    >>> import runetensor as rt
    >>> print(rt.outer(rt.create(rt.int32, [2], [1, 2]), rt.create(rt.int32, [3], [1, 10, 100])))
    [[1, 10, 100],
     [2, 20, 200]]
    """
    a, b, d = _common(a, b, "outer")
    be = a._backend
    x = _reshape(be, _cast_h(a, d), (a.size, 1))
    y = _reshape(be, _cast_h(b, d), (1, b.size))
    return write_out(wrap(be.binary("mul", x, y), d, be), out, "outer")


def _tensordot_axes(axes: Any, an: int, bn: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if axes is None:
        axes = 1
    if isinstance(axes, int) or hasattr(axes, "__index__") and not isinstance(axes, (list, tuple)):
        k = as_int(axes, "tensordot", "axes")
        if k < 0 or k > an or k > bn:
            raise ValueError(f"tensordot: axes={k} must be between 0 and the ranks {an} and {bn}")
        return tuple(range(an - k, an)), tuple(range(k))
    try:
        xa, xb = axes
    except (TypeError, ValueError):
        raise TypeError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}") from None
    xa = normalize_axes(xa, an, "tensordot", "axes of a")
    xb = normalize_axes(xb, bn, "tensordot", "axes of b")
    if len(xa) != len(xb):
        raise ValueError(f"tensordot: the axis lists {list(xa)} and {list(xb)} have different lengths")
    return xa, xb


@attach()
def tensordot(a: Any, b: Any, axes: Any = None) -> Tensor:
    """Contract ``a`` and ``b`` over pairs of axes.

    Args:
        a, b: tensors.
        axes: a pair ``(axes_of_a, axes_of_b)`` of equally long axis lists, or
            an int ``k`` (the last ``k`` axes of ``a`` with the first ``k`` of
            ``b``).  Default: the last axis of ``a`` with the first of ``b``.
    Returns:
        The free axes of ``a`` followed by the free axes of ``b``.
    Raises:
        ValueError: if contracted sizes differ.

    >>> import runetensor as rt
    >>> a = rt.ones(rt.float32, [3, 4, 5]); b = rt.ones(rt.float32, [4, 3, 2])
    >>> t = rt.tensordot(a, b, axes=([1, 0], [0, 1]))
    >>> t.shape, rt.to_array(t)[0]
    ((5, 2), 12.0)
    """
    a, b, d = _common(a, b, "tensordot")
    xa, xb = _tensordot_axes(axes, a.ndim, b.ndim)
    for i, j in zip(xa, xb):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: contracted sizes differ: axis {i} of a {shape_str(a.shape)} "
                             f"has {a.shape[i]}, axis {j} of b {shape_str(b.shape)} has {b.shape[j]}")
    be = a._backend
    fa = tuple(i for i in range(a.ndim) if i not in xa)
    fb = tuple(j for j in range(b.ndim) if j not in xb)
    k = math.prod(a.shape[i] for i in xa)
    x = _reshape(be, be.permute(_cast_h(a, d), fa + xa), (math.prod(a.shape[i] for i in fa), k))
    y = _reshape(be, be.permute(_cast_h(b, d), xb + fb), (k, math.prod(b.shape[j] for j in fb)))
    r = be.matmul(x, y)
    return wrap(_reshape(be, r, tuple(a.shape[i] for i in fa) + tuple(b.shape[j] for j in fb)), d, be)


def _parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> str:
    """Validate ``subscripts`` against the operand shapes; return the normalised explicit form."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    return _parse_einsum_cached(subscripts, tuple(tuple(s) for s in shapes))


@functools.lru_cache(maxsize=512)
def _parse_einsum_cached(subscripts: str, shapes: tuple[tuple[int, ...], ...]) -> str:
    fn = "einsum"
    s = "".join(subscripts.split())
    if s.count("->") > 1:
        raise ValueError(f"{fn}: subscripts {subscripts!r} contain '->' more than once")
    lhs, arrow, rhs = s.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"{fn}: subscripts {subscripts!r} name {len(ins)} operand(s), but {len(shapes)} were given")
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    ell_shape: tuple[int, ...] = ()
    any_ell = False
    for spec, shp in zip(ins, shapes):
        if spec.count("...") > 1 or "." in spec.replace("...", ""):
            raise ValueError(f"{fn}: bad ellipsis in {spec!r}; expected at most one '...'")
        letters = spec.replace("...", "")
        for c in letters:
            if not ("a" <= c <= "z" or "A" <= c <= "Z"):
                raise ValueError(f"{fn}: invalid subscript character {c!r} in {subscripts!r}; "
                                 f"expected letters a-z, A-Z")
        if "..." in spec:
            any_ell = True
            if len(letters) > len(shp):
                raise ValueError(f"{fn}: operand of shape {shape_str(shp)} has fewer axes than the labels in {spec!r}")
            pre, post = spec.split("...")
            nell = len(shp) - len(letters)
            dims = shp[:len(pre)] + shp[len(pre) + nell:]
            es = shp[len(pre):len(pre) + nell]
            try:
                ell_shape = broadcast_shapes(ell_shape, es, fname=fn)
            except ValueError:
                raise ValueError(f"{fn}: the '...' dimensions {shape_str(es)} do not broadcast with "
                                 f"{shape_str(ell_shape)}") from None
        else:
            if len(letters) != len(shp):
                raise ValueError(f"{fn}: subscripts {spec!r} label {len(letters)} axes, but the operand has shape "
                                 f"{shape_str(shp)}")
            dims = shp
        for c, n in zip(letters, dims):
            counts[c] = counts.get(c, 0) + 1
            if c in sizes and sizes[c] != n:
                if sizes[c] == 1:
                    sizes[c] = n
                elif n != 1:
                    raise ValueError(f"{fn}: label {c!r} has sizes {sizes[c]} and {n}")
            else:
                sizes.setdefault(c, n)
    if arrow:
        if rhs.count("...") > 1 or "." in rhs.replace("...", ""):
            raise ValueError(f"{fn}: bad ellipsis in output {rhs!r}")
        if "..." in rhs and not any_ell:
            raise ValueError(f"{fn}: output {rhs!r} has '...' but no input does")
        out_letters = rhs.replace("...", "")
        for c in out_letters:
            if c not in sizes:
                raise ValueError(f"{fn}: output label {c!r} does not appear in the inputs of {subscripts!r}")
        if len(set(out_letters)) != len(out_letters):
            raise ValueError(f"{fn}: output {rhs!r} repeats a label")
        return ",".join(ins) + "->" + rhs
    out = "".join(sorted(c for c, k in counts.items() if k == 1))
    return ",".join(ins) + "->" + ("..." if any_ell else "") + out


@attach()
def einsum(subscripts: str, *operands: Any) -> Tensor:
    """Einstein summation, e.g. ``"ij,jk->ik"`` (matrix product) or ``"ii"`` (trace).

    Args:
        subscripts: comma-separated input labels (letters, at most one
            ``...`` each), optionally ``->`` and the output labels; without
            ``->`` the output is the labels used once, in alphabetical order.
        operands: the tensors, either as separate arguments or as one list
            (``rt.einsum("ij,jk->ik", [a, b])``, Rune's form).
    Returns:
        A tensor of the operands' promoted dtype.
    Raises:
        ValueError: for malformed subscripts, a wrong operand count, rank or size.

    >>> import runetensor as rt
    >>> a = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> b = rt.create(rt.float32, [3, 2], [1, 2, 3, 4, 5, 6])
    >>> print(rt.einsum("ij,jk->ik", [a, b]))
    [[22, 28],
     [49, 64]]
    >>> print(rt.einsum("ii", rt.create(rt.int32, [2, 2], [1, 2, 3, 4])))
    5
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)) and operands[0] \
            and all(isinstance(o, Tensor) for o in operands[0]):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    be, ts = on_common("einsum", *[_t(o, "einsum") for o in operands])
    d = ts[0]._dtype
    for t in ts[1:]:
        d = D.promote_types(d, t._dtype)
    spec = _parse_einsum(subscripts, [t.shape for t in ts])
    hs = [_cast_h(t, d) for t in ts]
    try:
        r = be.linalg("einsum", *hs, subscripts=spec)
    except ValueError as e:
        raise ValueError(f"einsum: {e}") from None
    return wrap(r, d, be)


@attach()
def kron(a: Any, b: Any) -> Tensor:
    """Kronecker product: ``result[i*m + k] = a[i] * b[k]`` per axis (ranks padded with leading 1s).

    >>> import runetensor as rt
    >>> print(rt.kron(rt.create(rt.int32, [2], [1, 10]), rt.create(rt.int32, [3], [1, 2, 3])))
    [1, 2, 3, 10, 20, 30]
    """
    a, b, d = _common(a, b, "kron")
    be = a._backend
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    x = _reshape(be, _cast_h(a, d), tuple(v for s in sa for v in (s, 1)))
    y = _reshape(be, _cast_h(b, d), tuple(v for s in sb for v in (1, s)))
    r = be.binary("mul", x, y)
    return wrap(_reshape(be, r, tuple(p * q for p, q in zip(sa, sb))), d, be)


def _chain_order(dims: list[int]) -> list[list[int]]:
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            best = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, k
            cost[i][j] = best
    return split


@attach()
def multi_dot(ts: Sequence[Any]) -> Tensor:
    """Chained matrix product, multiplied in the cheapest association order.

    The first tensor may be 1-D (a row vector) and the last 1-D (a column
    vector); the others must be 2-D.

    Raises:
        ValueError: for fewer than one tensor, wrong ranks or mismatched sizes.

    >>> import runetensor as rt
    >>> a = rt.ones(rt.float64, [10, 100]); b = rt.ones(rt.float64, [100, 5]); c = rt.ones(rt.float64, [5, 50])
    >>> rt.multi_dot([a, b, c]).shape
    (10, 50)
    """
    items = [_t(x, "multi_dot") for x in ts]
    if not items:
        raise ValueError("multi_dot: expected at least one tensor, got an empty list")
    if len(items) == 1:
        return items[0]
    d = items[0]._dtype
    for t in items[1:]:
        d = D.promote_types(d, t._dtype)
    be = items[0]._backend
    hs = [_cast_h(t, d) for t in items]
    first_vec = hs[0].ndim == 1
    last_vec = hs[-1].ndim == 1
    if first_vec:
        hs[0] = be.reshape(hs[0], (1, hs[0].shape[0]))
    if last_vec:
        hs[-1] = be.reshape(hs[-1], (hs[-1].shape[0], 1))
    for i, h in enumerate(hs):
        if h.ndim != 2:
            raise ValueError(f"multi_dot: tensor {i} has shape {shape_str(items[i].shape)}; expected 2-D "
                             "(the first and last may be 1-D)")
    for i in range(len(hs) - 1):
        if hs[i].shape[1] != hs[i + 1].shape[0]:
            raise ValueError(f"multi_dot: tensor {i} {shape_str(items[i].shape)} and tensor {i + 1} "
                             f"{shape_str(items[i + 1].shape)} cannot be multiplied")
    dims = [hs[0].shape[0]] + [h.shape[1] for h in hs]
    split = _chain_order(dims)

    def go(i: int, j: int) -> Any:
        if i == j:
            return hs[i]
        k = split[i][j]
        return be.matmul(go(i, k), go(k + 1, j))

    r = go(0, len(hs) - 1)
    shape = r.shape
    if first_vec and last_vec:
        shape = ()
    elif first_vec:
        shape = shape[1:]
    elif last_vec:
        shape = shape[:1]
    return wrap(_reshape(be, r, shape), d, be)


@attach()
def matrix_power(t: Any, n: int) -> Tensor:
    """``t`` multiplied by itself ``n`` times (stacks of square matrices); ``n = 0`` gives
    the identity and ``n < 0`` powers of the inverse.

    Raises:
        ValueError: if the matrices are not square.
        TypeError: if ``n < 0`` and ``t`` has an integer dtype.
        LinAlgError: if ``n < 0`` and a matrix is singular.

    >>> import runetensor as rt
    >>> print(rt.matrix_power(rt.create(rt.int32, [2, 2], [1, 1, 1, 0]), 10))
    [[89, 55],
     [55, 34]]
    """
    t = _t(t, "matrix_power")
    _matrix(t, "matrix_power", square=True)
    n = as_int(n, "matrix_power", "n")
    be = t._backend
    d = t._dtype
    h = t._data
    if n < 0:
        if d.kind not in "fc":
            raise TypeError(f"matrix_power: negative powers need a floating-point or complex tensor, got {d}")
        cd, rd = _float_dtypes(d, "matrix_power")
        h = _la("matrix_power", be, "inv", _cast_h(t, cd))
        h = be.cast(h, d) if cd is not d else h
        n = -n
    m = t.shape[-1]
    if n == 0:
        eye = _eye_h(be, m, d)
        return wrap(be.copy(be.expand(eye, t.shape)), d, be)
    result = None
    base = h
    while n:
        if n & 1:
            result = base if result is None else be.matmul(result, base)
        n >>= 1
        if n:
            base = be.matmul(base, base)
    if result is t._data:
        result = be.copy(result)
    return wrap(result, d, be)


@attach()
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None,
          out: Tensor | None = None) -> Tensor:
    """Cross product of 3-element vectors (with broadcasting over the other axes).

    Args:
        a, b: tensors holding 3-vectors along ``axisa`` and ``axisb``.
        axisa, axisb: the axis of ``a`` and of ``b`` that holds the vectors.
        axisc: the axis of the result that holds the vectors.
        axis: if given, used for ``axisa``, ``axisb`` and ``axisc`` alike.
        out: (Rune's ``?out``) a tensor of the result's shape and dtype to write into.
    Returns:
        A new tensor (or ``out``) of the promoted dtype.
    Raises:
        ValueError: if a vector axis does not have size 3 or the other shapes do not broadcast.
        IndexError: if an axis is out of range.
        TypeError: for bool tensors.

    >>> import runetensor as rt
    >>> print(rt.cross(rt.create(rt.float32, [3], [1, 0, 0]), rt.create(rt.float32, [3], [0, 1, 0])))
    [0, 0, 1]
    >>> print(rt.cross(rt.create(rt.int32, [3, 1], [1, 0, 0]), rt.create(rt.int32, [3], [0, 1, 0]), axisa=0))
    [[0, 0, 1]]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b, d = _common(a, b, "cross")
    if d is D.bool:
        raise TypeError("cross: not defined for bool tensors (it subtracts)")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("cross: expected tensors with at least one axis, got a 0-d tensor")
    be = a._backend
    hs = []
    names = ("axisa", "axisb") if axis is None else ("axis", "axis")
    for t, ta, what, arg in ((a, axisa, names[0], "a"), (b, axisb, names[1], "b")):
        ax = normalize_axis(ta, t.ndim, "cross", what)
        if t.shape[ax] != 3:
            raise ValueError(f"cross: size along axis {ta} must be 3, got {t.shape[ax]} ({arg} has shape "
                             f"{shape_str(t.shape)}; {what} names the vectors' axis)")
        h = _cast_h(t, d)
        if ax != t.ndim - 1:  # the vector axis goes last
            h = be.permute(h, tuple(i for i in range(t.ndim) if i != ax) + (ax,))
        hs.append(h)
    shape = broadcast_shapes(hs[0].shape, hs[1].shape, fname="cross")
    nd = len(shape)
    ax = normalize_axis(axisc, nd, "cross", "axisc" if axis is None else "axis")
    x = be.expand(hs[0], shape)
    y = be.expand(hs[1], shape)
    lead = tuple(slice(0, s, 1) for s in shape[:-1])

    def comp(h: Any, i: int) -> Any:
        return be.view_index(h, lead + (i,))

    res = be.empty(shape, d)
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        c = be.binary("sub", be.binary("mul", comp(x, j), comp(y, k)), be.binary("mul", comp(x, k), comp(y, j)))
        be.assign(comp(res, i), c)
    if ax != nd - 1:  # the vectors' axis goes from last to axisc
        res = be.contiguous(be.permute(res, tuple(range(ax)) + (nd - 1,) + tuple(range(ax, nd - 1))))
    return write_out(wrap(res, d, be), out, "cross")


# ---------------------------------------------------------------------------
# decompositions and eigenvalues
# ---------------------------------------------------------------------------
@attach()
def cholesky(a: Any, upper: bool = False) -> Tensor:
    """Cholesky factor of Hermitian positive-definite matrices: lower ``L`` with
    ``a = L L^H``, or (``upper=True``) upper ``U`` with ``a = U^H U``.

    Raises:
        ValueError: if the matrices are not square.
        LinAlgError: if a matrix is not positive definite.

    >>> import runetensor as rt
    >>> print(rt.cholesky(rt.create(rt.float64, [2, 2], [4, 2, 2, 5])))
    [[2, 0],
     [1, 2]]
    """
    t, h, rd = _float_input(a, "cholesky", square=True)
    return _back(t._backend, _la("cholesky", t._backend, "cholesky", h, upper=builtins.bool(upper)), rd)


@attach()
def qr(a: Any, mode: str = "reduced") -> tuple[Tensor, Tensor]:
    """QR decomposition ``a = Q R`` with orthonormal ``Q`` and upper-triangular ``R``.

    Args:
        a: ``(..., M, N)`` matrices.
        mode: ``"reduced"`` (Q is ``(..., M, K)``, K = min(M, N)) or
            ``"complete"`` (Q is ``(..., M, M)``).
    Returns:
        ``(Q, R)``.

    >>> import runetensor as rt
    >>> q, r = rt.qr(rt.create(rt.float64, [3, 2], [1, 2, 3, 4, 5, 6]))
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    t, h, rd = _float_input(a, "qr")
    be = t._backend
    q, r = _la("qr", be, "qr", h, mode=mode)
    return _back(be, q, rd), _back(be, r, rd)


@attach()
def svd(a: Any, full_matrices: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """Singular value decomposition ``a = U diag(S) Vh``, S descending.

    Args:
        a: ``(..., M, N)`` matrices.
        full_matrices: False (default, as Rune) for the economy form.
    Returns:
        ``(U, S, Vh)``; S has the real dtype of ``a``.
    Raises:
        LinAlgError: if the SVD does not converge.

    >>> import runetensor as rt
    >>> u, s, vh = rt.svd(rt.create(rt.float64, [2, 2], [3, 0, 0, -2]))
    >>> print(s)
    [3, 2]
    """
    t, h, rd = _float_input(a, "svd")
    be = t._backend
    u, s, vh = _la("svd", be, "svd", h, full_matrices=builtins.bool(full_matrices))
    return _back(be, u, rd), _back(be, s, rd), _back(be, vh, rd)


@attach()
def svdvals(a: Any) -> Tensor:
    """The singular values of ``a``, descending (real dtype).

    >>> import runetensor as rt
    >>> print(rt.svdvals(rt.create(rt.float64, [2, 2], [0, 2, 1, 0])))
    [2, 1]
    """
    t, h, rd = _float_input(a, "svdvals")
    return _back(t._backend, _la("svdvals", t._backend, "svdvals", h), rd)


@attach()
def eig(a: Any) -> tuple[Tensor, Tensor]:
    """Eigenvalues and right eigenvectors of general square matrices (always complex).

    Returns:
        ``(w, v)`` with ``a @ v[..., :, i] = w[..., i] * v[..., :, i]``.
    Raises:
        LinAlgError: if the eigenvalue iteration does not converge.

    >>> import runetensor as rt
    >>> w, v = rt.eig(rt.create(rt.float64, [2, 2], [0, -1, 1, 0]))
    >>> sorted(rt.to_array(w), key=lambda z: z.imag)
    [-1j, 1j]
    """
    t, h, rd = _float_input(a, "eig", square=True)
    be = t._backend
    w, v = _la("eig", be, "eig", h)
    return wrap(w, be.dtype(w), be), wrap(v, be.dtype(v), be)


@attach()
def eigvals(a: Any) -> Tensor:
    """Eigenvalues of general square matrices (always complex).

    >>> import runetensor as rt
    >>> print(rt.eigvals(rt.create(rt.float64, [2, 2], [2, 0, 0, 3])))
    [2+0i, 3+0i]
    """
    t, h, rd = _float_input(a, "eigvals", square=True)
    be = t._backend
    w = _la("eigvals", be, "eigvals", h)
    return wrap(w, be.dtype(w), be)


def _uplo(uplo: str, fname: str) -> str:
    if uplo not in ("L", "U"):
        raise ValueError(f"{fname}: uplo must be 'L' or 'U', got {uplo!r}")
    return uplo


@attach()
def eigh(a: Any, uplo: str = "L") -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of Hermitian matrices.

    Args:
        a: square matrices; only the ``uplo`` triangle (``"L"`` or ``"U"``) is read.

    >>> import runetensor as rt
    >>> w, v = rt.eigh(rt.create(rt.float64, [2, 2], [2, 1, 1, 2]))
    >>> print(w)
    [1, 3]
    """
    uplo = _uplo(uplo, "eigh")
    t, h, rd = _float_input(a, "eigh", square=True)
    be = t._backend
    w, v = _la("eigh", be, "eigh", h, uplo=uplo)
    return _back(be, w, rd), _back(be, v, rd)


@attach()
def eigvalsh(a: Any, uplo: str = "L") -> Tensor:
    """Eigenvalues (ascending, real) of Hermitian matrices.

    >>> import runetensor as rt
    >>> print(rt.eigvalsh(rt.create(rt.float64, [2, 2], [2, 1, 1, 2])))
    [1, 3]
    """
    uplo = _uplo(uplo, "eigvalsh")
    t, h, rd = _float_input(a, "eigvalsh", square=True)
    return _back(t._backend, _la("eigvalsh", t._backend, "eigvalsh", h, uplo=uplo), rd)


# ---------------------------------------------------------------------------
# norms and invariants
# ---------------------------------------------------------------------------
_ORD_NAMES = {"fro": "fro", "nuc": "nuc", "one": 1, "two": 2, "inf": math.inf, "neg_one": -1, "negone": -1,
              "neg_two": -2, "negtwo": -2, "neg_inf": -math.inf, "neginf": -math.inf}


def _ord(o: Any, fname: str) -> Any:
    if o is None:
        return None
    if isinstance(o, str):
        key = o.lower()
        if key in _ORD_NAMES:
            return _ORD_NAMES[key]
        raise ValueError(f"{fname}: unknown ord {o!r}; expected 'fro', 'nuc', 'one', 'two', 'inf', 'neg_one', "
                         "'neg_two', 'neg_inf' or a number")
    if isinstance(o, builtins.bool) or not isinstance(o, (int, float)):
        raise TypeError(f"{fname}: ord must be a number or a name, got {type(o).__name__} {o!r}")
    return float(o) if not isinstance(o, int) else o


def _keep(be: Any, h: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    out = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return _reshape(be, h, out)


@attach()
def norm(t: Any, ord: Any = None, axes: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002
    """Vector or matrix norm.

    Args:
        t: the tensor.
        ord: for vectors (one axis) 2 (default), 1, ``inf``, ``-inf``, 0
            (count of non-zeros) or any number ``p``; for matrices (two axes)
            ``"fro"`` (default), ``"nuc"``, 1, -1, 2, -2, ``inf``, ``-inf``.
            Rune's names work too: ``"one" "two" "inf" "neg_one" "neg_two"
            "neg_inf"``.
        axes: None (all axes: the 2-norm of the flattened tensor when ``ord``
            is None; with ``ord`` the tensor must be 1-D or 2-D), one axis or two.
        keepdims: keep the reduced axes with size 1.
    Returns:
        The real dtype of ``t`` (float64 for integer input).
    Raises:
        ValueError: for an ``ord`` that does not fit the number of axes.

    >>> import runetensor as rt
    >>> print(rt.norm(rt.create(rt.float64, [2], [3, 4])))
    5
    >>> print(rt.norm(rt.create(rt.float64, [2, 2], [1, -2, 3, 4]), ord="inf"))
    7
    """
    fname = "norm"
    t = _t(t, fname)
    o = _ord(ord, fname)
    cd, rd = _float_dtypes(t._dtype, fname)
    be = t._backend
    h = _cast_h(t, cd)
    nd = t.ndim
    if axes is None:
        if o is None:
            ax = tuple(range(nd))
            a2 = be.unary("square", be.unary("abs", h))
            r = be.unary("sqrt", be.reduce("sum", a2, ax, builtins.bool(keepdims)))
            return _back(be, r, rd.real_dtype)
        if nd not in (1, 2):
            raise ValueError(f"norm: with ord={ord!r} and no axes the tensor must be 1-D or 2-D, got shape "
                             f"{shape_str(t.shape)}")
        ax = tuple(range(nd))
    else:
        ax = normalize_axes(axes, nd, fname)
        if len(ax) not in (1, 2):
            raise ValueError(f"norm: axes must name one axis (vector norm) or two (matrix norm), got {axes!r}")
    kd = builtins.bool(keepdims)
    absx = be.unary("abs", h)
    rdt = rd.real_dtype
    if len(ax) == 1:
        if o in ("fro", "nuc"):
            raise ValueError(f"norm: ord={ord!r} is a matrix norm; a vector norm needs a number")
        if o is None or o == 2:
            r = be.unary("sqrt", be.reduce("sum", be.unary("square", absx), ax, kd))
        elif o == math.inf:
            r = be.reduce("max", absx, ax, kd) if t.shape[ax[0]] else be.reduce("sum", absx, ax, kd)
        elif o == -math.inf:
            if not t.shape[ax[0]]:
                raise ValueError("norm: ord=-inf of an empty vector is undefined")
            r = be.reduce("min", absx, ax, kd)
        elif o == 0:
            nz = be.cast(be.binary("ne", absx, 0), cd.real_dtype)
            r = be.reduce("sum", nz, ax, kd)
        elif o == 1:
            r = be.reduce("sum", absx, ax, kd)
        else:
            p = float(o)
            r = be.binary("pow", be.reduce("sum", be.binary("pow", absx, p), ax, kd), 1.0 / p)
        return _back(be, r, rdt)
    # matrix norms
    r0, c0 = ax
    if o is None or o == "fro":
        r = be.unary("sqrt", be.reduce("sum", be.unary("square", absx), ax, kd))
        return _back(be, r, rdt)
    if o in (1, -1, math.inf, -math.inf):
        if t.shape[r0] == 0 or t.shape[c0] == 0:
            raise ValueError(f"norm: ord={ord!r} of an empty matrix is undefined (shape {shape_str(t.shape)})")
        sum_ax, pick_ax = (r0, c0) if o in (1, -1) else (c0, r0)
        s = be.reduce("sum", absx, (sum_ax,), True)
        r = be.reduce("max" if o > 0 else "min", s, (pick_ax,), True)
        if not kd:
            r = _reshape(be, r, tuple(n for i, n in enumerate(t.shape) if i not in ax))
        return _back(be, r, rdt)
    if o in (2, -2, "nuc"):
        rest = tuple(i for i in range(nd) if i not in ax)
        m = be.permute(h, rest + ax)
        sv = _la("norm", be, "svdvals", m)
        if o == "nuc":
            r = be.reduce("sum", sv, (sv.ndim - 1,), False)
        else:
            if sv.shape[-1] == 0:
                raise ValueError(f"norm: ord={ord!r} of an empty matrix is undefined (shape {shape_str(t.shape)})")
            r = be.reduce("max" if o == 2 else "min", sv, (sv.ndim - 1,), False)
        if kd:
            r = _keep(be, r, t.shape, ax)
        return _back(be, r, rdt)
    raise ValueError(f"norm: ord={ord!r} is not a matrix norm; expected 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")


@attach()
def cond(a: Any, p: Any = None) -> Tensor:
    """Condition number ``norm(a, p) * norm(inv(a), p)`` (``p`` default 2: largest over
    smallest singular value); singular matrices give ``inf``.

    Args:
        a: matrices (square unless ``p`` is None, 2 or -2).
        p: None, ``"fro"``, ``"nuc"``, 1, -1, 2, -2, ``inf``, ``-inf`` (or Rune's names).

    >>> import runetensor as rt
    >>> print(rt.cond(rt.create(rt.float64, [2, 2], [2, 0, 0, 0.5])))
    4
    """
    o = _ord(p, "cond")
    t, h, rd = _float_input(a, "cond", square=o not in (None, 2, -2))
    be = t._backend
    rdt = rd.real_dtype
    if o in (None, 2, -2):
        sv = _la("cond", be, "svdvals", h)
        if sv.shape[-1] == 0:
            raise ValueError(f"cond: the condition number of an empty matrix is undefined (shape {shape_str(t.shape)})")
        last = (sv.ndim - 1,)
        mx, mn = be.reduce("max", sv, last, False), be.reduce("min", sv, last, False)
        r = be.binary("div", mx, mn) if o != -2 else be.binary("div", mn, mx)
        return _back(be, r, rdt)
    n = t.shape[-1]
    cd = be.dtype(h)
    # singular matrices give inf: replace them by the identity for the inverse, then mask
    sv = _la("cond", be, "svdvals", h)
    if n == 0:
        raise ValueError(f"cond: the condition number of an empty matrix is undefined (shape {shape_str(t.shape)})")
    last = (sv.ndim - 1,)
    smin = be.reduce("min", sv, last, False)
    smax = be.reduce("max", sv, last, False)
    try:
        ih = be.linalg("inv", h)
        total = be.reduce("sum", be.unary("abs", ih), (ih.ndim - 2, ih.ndim - 1), False)
        sing = be.unary("logical_not", be.unary("isfinite", total))
    except NumericalFailure:
        # some matrix is singular: mark the rank-deficient ones, invert the others
        eps = {D.float32: 2.0 ** -23, D.float64: 2.0 ** -52}[cd.real_dtype]
        sing = be.binary("le", smin, be.binary("mul", smax, n * eps))
        eye = be.expand(_eye_h(be, n, cd), t.shape)
        sing_m = _reshape(be, sing, sing.shape + (1, 1))
        safe = be.where(be.expand(sing_m, t.shape), eye, h)
        ih = _la("cond", be, "inv", safe)
    nr = norm(wrap(h, cd, be), ord=o, axes=(-2, -1))
    ni = norm(wrap(ih, cd, be), ord=o, axes=(-2, -1))
    r = be.binary("mul", nr._data, ni._data)
    inf = be.full(r.shape, math.inf, be.dtype(r))
    r = be.where(sing, inf, r)
    return _back(be, r, rdt)


@attach()
def det(a: Any) -> Tensor:
    """Determinant of square matrices (shape ``a.shape[:-2]``).

    >>> import runetensor as rt
    >>> print(rt.det(rt.create(rt.float32, [2, 2], [1, 2, 3, 4])))
    -2
    """
    t, h, rd = _float_input(a, "det", square=True)
    return _back(t._backend, _la("det", t._backend, "det", h), rd)


@attach()
def slogdet(a: Any) -> tuple[Tensor, Tensor]:
    """Sign and natural log of the absolute determinant: ``det = sign * exp(logabsdet)``.

    Returns:
        ``(sign, logabsdet)``; a singular matrix gives ``(0, -inf)``.

    >>> import runetensor as rt
    >>> s, l = rt.slogdet(rt.create(rt.float64, [2, 2], [1, 2, 3, 4]))
    >>> print(s, round(l.item(), 6))
    -1 0.693147
    """
    t, h, rd = _float_input(a, "slogdet", square=True)
    be = t._backend
    s, la = _la("slogdet", be, "slogdet", h)
    return _back(be, s, rd), _back(be, la, rd.real_dtype)


@attach()
def matrix_rank(a: Any, tol: float | None = None, rtol: float | None = None,
                hermitian: bool = False) -> Any:
    """Rank: the number of singular values above the tolerance.

    Args:
        a: a matrix or a stack of matrices (a 1-D tensor has rank 1 unless all zero).
        tol: absolute threshold; when None it is ``rtol * largest singular value``.
        rtol: relative threshold, default ``max(M, N) * eps`` of the compute dtype.
        hermitian: use the eigenvalues of the Hermitian ``a`` (faster).
    Returns:
        A Python int for one matrix, an int64 tensor of shape ``a.shape[:-2]`` for a stack.

    >>> import runetensor as rt
    >>> rt.matrix_rank(rt.create(rt.float64, [3, 3], [1, 2, 3, 2, 4, 6, 1, 0, 1]))
    2
    """
    fname = "matrix_rank"
    t = _t(a, fname)
    be = t._backend
    if t.ndim < 2:
        nz = be.reduce("any", be.binary("ne", t._data, 0), tuple(range(t.ndim)), False)
        return builtins.int(wrap(nz, D.bool, be)._scalar())
    cd, rd = _float_dtypes(t._dtype, fname)
    h = _cast_h(t, cd)
    if hermitian:
        _matrix(t, fname, square=True)
        sv = be.unary("abs", _la(fname, be, "eigvalsh", h, uplo="L"))
    else:
        sv = _la(fname, be, "svdvals", h)
    last = (sv.ndim - 1,)
    m, n = t.shape[-2], t.shape[-1]
    if m == 0 or n == 0:
        zero = be.full(t.shape[:-2], 0, D.int64)
        return 0 if t.ndim == 2 else wrap(zero, D.int64, be)
    smax = be.reduce("max", sv, last, True)
    if tol is None:
        if rtol is None:
            eps = {D.float32: 2.0 ** -23, D.float64: 2.0 ** -52}[cd.real_dtype]
            rtol = max(m, n) * eps
        thr = be.binary("mul", smax, float(rtol))
    else:
        thr = be.full(smax.shape, float(tol), be.dtype(smax))
    cnt = be.reduce("sum", be.cast(be.binary("gt", sv, thr), D.int64), last, False)
    r = wrap(cnt, D.int64, be)
    return builtins.int(r._scalar()) if t.ndim == 2 else r


@attach()
def trace(t: Any, offset: int = 0, out: Tensor | None = None) -> Tensor:
    """Sum along the ``offset``-th diagonal of the last two axes (batched).

    Args:
        t: a tensor with at least 2 axes.
        offset: 0 the main diagonal, > 0 above it, < 0 below.
        out: a tensor of the result's shape and dtype to write into (Rune's ``?out``).
    Returns:
        Shape ``t.shape[:-2]``, ``t``'s dtype (bool counts as int64).
    Raises:
        ValueError: if ``t`` has fewer than 2 axes.

    >>> import runetensor as rt
    >>> print(rt.trace(rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6]), offset=1))
    8
    """
    t = _t(t, "trace")
    if t.ndim < 2:
        raise ValueError(f"trace: expected a tensor with at least 2 dimensions, got shape {shape_str(t.shape)}")
    off = as_int(offset, "trace", "offset")
    be = t._backend
    d = D.int64 if t._dtype is D.bool else t._dtype
    h = _cast_h(t, d)
    m, n = t.shape[-2], t.shape[-1]
    r0, c0 = max(0, -off), max(0, off)
    k = max(0, min(m - r0, n - c0))
    lead = t.shape[:-2]
    if k == 0 or 0 in lead:
        return write_out(wrap(be.full(lead, 0, d), d, be), out, "trace")
    # the k x k block whose main diagonal is the wanted one (a view), then einsum's trace
    key = tuple(slice(0, s, 1) for s in lead) + (slice(r0, r0 + k, 1), slice(c0, c0 + k, 1))
    block = be.view_index(h, key)
    return write_out(wrap(be.linalg("einsum", block, subscripts="...ii->..."), d, be), out, "trace")


# ---------------------------------------------------------------------------
# solving and inverting
# ---------------------------------------------------------------------------
@attach()
def solve(a: Any, b: Any) -> Tensor:
    """``x`` with ``a @ x = b`` for square ``a``.

    Args:
        a: ``(..., M, M)``.
        b: ``(M,)`` (one right-hand side vector) or ``(..., M, K)``; batch axes broadcast.
    Raises:
        ValueError: for incompatible shapes.
        LinAlgError: if a matrix is singular.

    >>> import runetensor as rt
    >>> print(rt.solve(rt.create(rt.float64, [2, 2], [2, 0, 0, 4]), rt.create(rt.float64, [2], [2, 2])))
    [1, 0.5]
    """
    return _solve(a, b, "solve")


def _solve(a: Any, b: Any, fname: str) -> Tensor:
    _, (ta, tb) = on_common(fname, _t(a, fname), _t(b, fname))  # b may be batched or traced, a not
    _matrix(ta, fname, square=True)
    d = D.promote_types(ta._dtype, tb._dtype)
    cd, rd = _float_dtypes(d, fname)
    be = ta._backend
    ha, hb = _cast_h(ta, cd), _cast_h(tb, cd)
    m = ta.shape[-1]
    if tb.ndim == 0:
        raise ValueError(f"{fname}: b must have at least one dimension, got a 0-d tensor")
    if tb.ndim == 1:
        if tb.shape[0] != m:
            raise ValueError(f"{fname}: a has shape {shape_str(ta.shape)} but b has shape {shape_str(tb.shape)}; "
                             f"expected b of length {m}")
        hb = be.reshape(hb, (m, 1))
        r = _la(fname, be, "solve", ha, hb)
        return _back(be, _reshape(be, r, r.shape[:-1]), rd)
    if tb.shape[-2] != m:
        raise ValueError(f"{fname}: a has shape {shape_str(ta.shape)} but b has shape {shape_str(tb.shape)}; "
                         f"expected b of shape (..., {m}, K)")
    batch = broadcast_shapes(ta.shape[:-2], tb.shape[:-2], fname=fname)
    ha = be.expand(ha, batch + ta.shape[-2:])
    hb = be.expand(hb, batch + tb.shape[-2:])
    return _back(be, _la(fname, be, "solve", ha, hb), rd)


@attach()
def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple[Tensor, Tensor, Any, Tensor]:
    """Least-squares solution of ``a @ x ~= b``.

    Args:
        a: ``(..., M, N)``.
        b: ``(M,)`` or ``(..., M, K)``.
        rcond: singular values below ``rcond * largest`` count as zero
            (default ``max(M, N) * eps``).
    Returns:
        ``(x, residuals, rank, sv)``: ``residuals`` holds the squared residual
        norms per column when ``a`` has full column rank and M > N (else it is
        empty); ``rank`` is an int for one matrix, an int64 tensor for a stack.

    >>> import runetensor as rt
    >>> a = rt.create(rt.float64, [3, 2], [1, 0, 1, 1, 1, 2])
    >>> x, res, rank, sv = rt.lstsq(a, rt.create(rt.float64, [3], [1, 2, 2]))
    >>> print(x, rank)
    [1.16667, 0.5] 2
    """
    fname = "lstsq"
    ta = _t(a, fname)
    tb = _t(b, fname)
    _matrix(ta, fname)
    d = D.promote_types(ta._dtype, tb._dtype)
    cd, rd = _float_dtypes(d, fname)
    be = ta._backend
    ha, hb = _cast_h(ta, cd), _cast_h(tb, cd)
    m = ta.shape[-2]
    vec = tb.ndim == 1
    if tb.ndim == 0:
        raise ValueError("lstsq: b must have at least one dimension, got a 0-d tensor")
    if vec:
        if tb.shape[0] != m:
            raise ValueError(f"lstsq: a has shape {shape_str(ta.shape)} but b has shape {shape_str(tb.shape)}; "
                             f"expected b of length {m}")
        hb = be.reshape(hb, (m, 1))
    elif tb.shape[-2] != m:
        raise ValueError(f"lstsq: a has shape {shape_str(ta.shape)} but b has shape {shape_str(tb.shape)}; "
                         f"expected b of shape (..., {m}, K)")
    if ta.ndim > 2 or hb.ndim > 2:
        batch = broadcast_shapes(ta.shape[:-2], hb.shape[:-2], fname=fname)
        ha = be.expand(ha, batch + ta.shape[-2:])
        hb = be.expand(hb, batch + hb.shape[-2:])
    x, res, rank, sv = _la(fname, be, "lstsq", ha, hb, rcond=None if rcond is None else float(rcond))
    if vec:
        x = _reshape(be, x, x.shape[:-1])
    rk = rank if isinstance(rank, int) else wrap(rank, D.int64, be)
    return _back(be, x, rd), _back(be, res, rd.real_dtype), rk, _back(be, sv, rd.real_dtype)


@attach()
def inv(a: Any) -> Tensor:
    """Inverse of square matrices.

    Raises:
        ValueError: if the matrices are not square.
        LinAlgError: if a matrix is singular.

    >>> import runetensor as rt
    >>> print(rt.inv(rt.create(rt.float64, [2, 2], [2, 0, 0, 4])))
    [[0.5, 0],
     [0, 0.25]]
    """
    t, h, rd = _float_input(a, "inv", square=True)
    return _back(t._backend, _la("inv", t._backend, "inv", h), rd)


@attach()
def pinv(a: Any, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse (any shape, singular matrices allowed).

    Args:
        rtol: singular values below ``rtol * largest`` are dropped (default ``max(M, N) * eps``).
        hermitian: ``a`` is Hermitian (uses the eigendecomposition).

    >>> import runetensor as rt
    >>> print(rt.pinv(rt.create(rt.float64, [1, 2], [1, 1])))
    [[0.5],
     [0.5]]
    """
    t, h, rd = _float_input(a, "pinv", square=builtins.bool(hermitian))
    be = t._backend
    return _back(be, _la("pinv", be, "pinv", h, rtol=None if rtol is None else float(rtol),
                         hermitian=builtins.bool(hermitian)), rd)


@attach()
def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Tensor:
    """``x`` with ``tensordot(a, x, axes=x.ndim) = b``.

    Args:
        a: shape ``b.shape + x.shape`` (after moving ``axes`` of ``a`` to the end),
            with ``prod(x.shape) == prod(b.shape)``.
        b: right-hand side.
        axes: axes of ``a`` to move to the end first.
    Raises:
        ValueError: for incompatible shapes.
        LinAlgError: if the reshaped matrix is singular.

    >>> import runetensor as rt
    >>> x = rt.tensorsolve(rt.create(rt.float64, [2, 2, 4], [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
    ...                    rt.create(rt.float64, [2, 2], [1, 2, 3, 4]))
    >>> x.shape
    (4,)
    """
    fname = "tensorsolve"
    ta = _t(a, fname)
    tb = _t(b, fname)
    be = ta._backend
    ha = ta._data
    if axes is not None:
        ax = normalize_axes(axes, ta.ndim, fname)
        rest = tuple(i for i in range(ta.ndim) if i not in ax)
        ha = be.permute(ha, rest + ax)
    shp = ha.shape
    if shp[:tb.ndim] != tb.shape:
        raise ValueError(f"tensorsolve: a's leading shape {shape_str(shp[:tb.ndim])} must equal b's shape "
                         f"{shape_str(tb.shape)}")
    xs = shp[tb.ndim:]
    nb, nx = math.prod(tb.shape), math.prod(xs)
    if nb != nx:
        raise ValueError(f"tensorsolve: a of shape {shape_str(shp)} is not 'square': prod{shape_str(tb.shape)} = {nb} "
                         f"but prod{shape_str(xs)} = {nx}")
    am = wrap(_reshape(be, ha, (nb, nx)), ta._dtype, be)
    bm = wrap(_reshape(be, tb._data, (nb,)), tb._dtype, be)
    x = _solve(am, bm, fname)
    return wrap(_reshape(be, x._data, xs), x._dtype, be)


@attach()
def tensorinv(a: Any, ind: int = 2) -> Tensor:
    """The tensor inverse: ``tensordot(tensorinv(a, ind), a, ind)`` is the identity.

    Args:
        a: shape ``A + B`` with ``A = a.shape[:ind]`` and ``prod(A) == prod(B)``.
        ind: number of leading axes forming ``A`` (default 2).
    Returns:
        Shape ``B + A``.
    Raises:
        ValueError: if ``ind <= 0`` or the shape is not 'square'.
        LinAlgError: if the reshaped matrix is singular.

    >>> import runetensor as rt
    >>> a = rt.create(rt.float64, [2, 2, 4], [2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2])
    >>> rt.tensorinv(a, ind=2).shape
    (4, 2, 2)
    """
    fname = "tensorinv"
    t = _t(a, fname)
    ind = as_int(ind, fname, "ind")
    if ind <= 0 or ind > t.ndim:
        raise ValueError(f"tensorinv: ind must be between 1 and the rank {t.ndim}, got {ind}")
    be = t._backend
    A, B = t.shape[:ind], t.shape[ind:]
    na, nb = math.prod(A), math.prod(B)
    if na != nb:
        raise ValueError(f"tensorinv: a of shape {shape_str(t.shape)} is not 'square' for ind={ind}: "
                         f"prod{shape_str(A)} = {na} but prod{shape_str(B)} = {nb}")
    m = wrap(_reshape(be, t._data, (na, nb)), t._dtype, be)
    mt, mh, rd = _float_input(m, fname, square=True)
    r = _back(be, _la(fname, be, "inv", mh), rd)
    return wrap(_reshape(be, r._data, B + A), r._dtype, be)
