"""Shared plumbing of :mod:`runetensor.harpie`: coercion, object tensors, views, printing.

Nothing here is public API except what ``__all__`` lists; the combinator
modules build on these helpers.  Like every frontend module, this one never
imports NumPy: it works on backend handles through the backend contract.
"""
from __future__ import annotations

import builtins
import decimal
import math
import operator
import struct
from typing import Any, Callable, Sequence

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from .. import _dtypes as D
from .._backend import get_backend
from .._backend.contract import UNARY_OPS
from .._dtypes import DType
from .._indexing import _full
from .._tensor import Tensor, as_tensor, wrap
from .._tracers._diff import carries_derivative
from .._tensor import binary_op

__all__ = ["UnsafeArray", "show", "pretty", "equal"]

_range = builtins.range
_PY_NUM = (builtins.bool, builtins.int, builtins.float, builtins.complex)


class UnsafeArray:
    """An array whose shape and element vector disagree (harpie's unvalidated ``UnsafeArray``).

    ``hp.array`` returns a plain :class:`~runetensor.Tensor` whenever the data
    fill the shape exactly; only a mismatch gives an ``UnsafeArray``.  It
    exists so that ``validate``, ``fill``, ``safe_array`` and
    ``unsafe_modify_shape`` can be expressed; every other harpie function
    raises ``ValueError`` when given one.

    Attributes:
        shape: the claimed shape (a tuple).
        vector: the elements, a 1-d Tensor.

    >>> from runetensor import harpie as hp
    >>> u = hp.array([2, 3, 4], list(range(1, 24)))
    >>> type(u).__name__, hp.validate(u)
    ('UnsafeArray', False)
    """

    __slots__ = ("shape", "vector")

    def __init__(self, shape: Sequence[int], vector: Tensor):
        self.shape = tuple(shape)
        self.vector = vector

    def __repr__(self) -> str:
        return show(self)

    __str__ = __repr__


# ---------------------------------------------------------------------------
# coercion and handles
# ---------------------------------------------------------------------------
def arr(x: Any, fname: str) -> Tensor:
    """``x`` as a Tensor: Tensors pass, numbers become 0-d, sequences go through ``rt.asarray``.

    Raises:
        ValueError: for an :class:`UnsafeArray` (its shape and data disagree).
    """
    if type(x) is Tensor or isinstance(x, Tensor):
        return x
    if isinstance(x, UnsafeArray):
        raise ValueError(f"{fname}: the array's shape {list(x.shape)} needs {size_of(x.shape)} elements but it "
                         f"holds {x.vector.size}; use hp.fill or hp.safe_array first")
    if isinstance(x, _PY_NUM):
        return as_tensor(x, fname)
    if isinstance(x, (list, tuple)):
        return as_tensor(x, fname)
    return scalar_object(x)


def size_of(shape: Sequence[int]) -> int:
    return math.prod(shape)


def dims_arg(ds: Any, rank: int, fname: str, what: str = "dims", distinct: bool = True) -> list[int]:
    """A list of dimensions, each in ``[0, rank)`` (negative values count from the end).

    Raises:
        TypeError: if an entry is not an integer.
        IndexError: if a dimension is out of range.
        ValueError: on repeats (when ``distinct``).
    """
    if isinstance(ds, builtins.int) and not isinstance(ds, builtins.bool):
        ds = [ds]
    try:
        items = list(ds)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be a list of ints, got {type(ds).__name__} {ds!r}") from None
    out = []
    for d in items:
        d = int_arg(d, fname, "dimension")
        if not -rank <= d < rank:
            raise IndexError(f"{fname}: dimension {d} is out of range for an array of rank {rank} "
                             f"(expected 0 <= d < {rank})")
        out.append(d + rank if d < 0 else d)
    if distinct and len(set(out)) != len(out):
        raise ValueError(f"{fname}: {what} {items} repeat a dimension; expected distinct dimensions")
    return out


def int_arg(v: Any, fname: str, what: str = "value") -> int:
    if isinstance(v, builtins.bool):
        raise TypeError(f"{fname}: {what} must be an integer, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be an integer, got {type(v).__name__} {v!r}") from None


def ints_arg(xs: Any, fname: str, what: str) -> list[int]:
    if isinstance(xs, builtins.int) and not isinstance(xs, builtins.bool):
        xs = [xs]
    try:
        items = list(xs)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be a list of ints, got {type(xs).__name__} {xs!r}") from None
    return [int_arg(x, fname, what) for x in items]


def shape_arg(s: Any, fname: str) -> list[int]:
    out = ints_arg(s, fname, "shape")
    for x in out:
        if x < 0:
            raise ValueError(f"{fname}: shape {out} has a negative dimension {x}; expected sizes >= 0")
    return out


def view(t: Tensor, key: Sequence[Any]) -> Tensor:
    """Basic indexing view; ``key`` holds one int or normalised slice per axis."""
    return wrap(t._backend.view_index(t._data, tuple(key)), t._dtype, t._backend)


def full_key(shape: Sequence[int]) -> list[Any]:
    """``[slice(0, d, 1), ...]``: rt's full index key (``runetensor._indexing._full``), as a list to edit."""
    return list(_full(tuple(shape)))


def permute(t: Tensor, axes: Sequence[int]) -> Tensor:
    axes = tuple(axes)
    if axes == tuple(_range(t.ndim)):
        return t
    return wrap(t._backend.permute(t._data, axes), t._dtype, t._backend)


def reshape(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A view with ``shape`` where the strides allow it, else a reshaped copy."""
    shape = tuple(shape)
    if t._data.shape == shape:
        return t
    be = t._backend
    h = be.reshape(t._data, shape)
    if h is None:
        h = be.reshape(be.copy(t._data), shape)
    return wrap(h, t._dtype, be)


def expand_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    return wrap(t._backend.expand(t._data, tuple(shape)), t._dtype, t._backend)


def copy(t: Tensor) -> Tensor:
    return wrap(t._backend.copy(t._data), t._dtype, t._backend)


def cast(t: Tensor, d: DType) -> Tensor:
    if t._dtype is d:
        return t
    return wrap(t._backend.cast(t._data, d), d, t._backend)


def empty(shape: Sequence[int], d: DType, be: Any = None) -> Tensor:
    be = be or get_backend()
    return wrap(be.empty(tuple(shape), d), d, be)


def full(shape: Sequence[int], value: Any, d: DType, be: Any = None) -> Tensor:
    be = be or get_backend()
    if d.kind == "O":
        h = be.empty(tuple(shape), d)
        be.assign(h, _obj0(be, value))
        return wrap(h, d, be)
    return wrap(be.full(tuple(shape), value, d), d, be)


def _obj0(be: Any, value: Any) -> Any:
    h = be.empty((), D.object_)
    be.scatter(h, (), value)
    return h


def scalar_object(value: Any, be: Any = None) -> Tensor:
    """A 0-d object tensor holding ``value`` (a tuple, list, array...)."""
    be = be or get_backend()
    return wrap(_obj0(be, value), D.object_, be)


def assign(dst: Tensor, src: Tensor) -> None:
    """Write ``src`` (broadcast) into the view ``dst``, converting dtype to ``dst``'s."""
    if src._dtype is not dst._dtype:
        src = cast(src, dst._dtype)
    dst._backend.assign(dst._data, src._data)


def values(t: Tensor, compute: bool = True) -> list[Any]:
    """The elements of ``t`` as a flat Python list, row-major (objects for object tensors).

    With ``compute`` (the values feed a computation, as in the per-element paths of ``fmap``,
    ``zip_with``, ``reduces``...), a tensor that carries a derivative under ``rt.grad``/``rt.jvp``
    raises ``TypeError``: plain Python numbers would silently drop it.
    """
    be = t._backend
    if compute and be.level > 0 and t._dtype.is_inexact:
        if carries_derivative(t):
            raise TypeError("harpie: a Python function applied element by element reads plain numbers, which "
                            "cannot carry the derivative being taken; use runetensor functions (rt.exp, rt.add, "
                            "rt.sum...) or a function of whole tensors")
    if t._data.ndim == 0:
        v = be.to_list(t._data)
        return [v]
    h = be.reshape(be.contiguous(t._data), (t._data.size,))
    return be.to_list(h)


def item(t: Tensor, idx: Sequence[int]) -> Any:
    """One element as a Python value (no bounds check beyond the backend's)."""
    h = t._backend.view_index(t._data, tuple(idx))
    return t._backend.to_list(h)  # a 0-d handle: its element


def infer_dtype(vals: list[Any], default: DType | None = None) -> DType:
    """The dtype of a tensor holding ``vals``: bool/int64/float64/complex128 for numbers, else object."""
    if not vals:
        return default or D.int64
    kinds = set()
    for v in vals:
        tv = type(v)
        if tv is builtins.bool:
            kinds.add("b")
        elif tv is builtins.int:
            if not -(1 << 63) <= v < (1 << 63):
                return D.object_
            kinds.add("i")
        elif tv is builtins.float:
            kinds.add("f")
        elif tv is builtins.complex:
            kinds.add("c")
        else:
            return D.object_
    if kinds == {"b"}:
        return D.bool
    if "c" in kinds:
        return D.complex128
    if "f" in kinds:
        return D.float64
    return D.int64


def from_values(shape: Sequence[int], vals: list[Any], dtype: DType | None = None,
                default: DType | None = None, be: Any = None, fname: str = "harpie") -> Tensor:
    """A tensor of ``shape`` from a flat list of Python values.

    0-d tensors among ``vals`` are unwrapped to scalars (keeping their common
    dtype); anything that is not a number makes an object tensor.
    """
    be = be or get_backend()
    shape = tuple(shape)
    if dtype is None:
        d0 = None
        n0 = 0
        for v in vals:
            if isinstance(v, Tensor) and v.ndim == 0 and v._dtype.kind != "O":
                d0 = v._dtype if d0 is None else D.promote_types(d0, v._dtype)
                n0 += 1
        if n0 == len(vals) and any(v._backend.level > 0 for v in vals):
            # 0-d results under a transformation (rt.grad, rt.vmap): stacked as tensors, so a
            # derivative or a batch they carry is kept (reading them as numbers would drop it)
            from .._combine import stack as rt_stack
            t = rt_stack([v.astype(d0) for v in vals], axis=0)
            return wrap(t._backend.reshape(t._data, shape), d0, t._backend)
        if n0:  # 0-d typed tensors (e.g. rt.sum results) stand for their element
            vals = [v._backend.to_list(v._data) if isinstance(v, Tensor) and v.ndim == 0 and v._dtype.kind != "O"
                    else v for v in vals]
        dtype = d0 if n0 == len(vals) and n0 else infer_dtype(vals, default)
    if dtype.kind == "O":
        h = be.empty((len(vals),), D.object_)
        for i, v in enumerate(vals):
            be.scatter(h, (i,), v)
        return wrap(be.reshape(h, shape), D.object_, be)
    t = as_tensor(vals, fname, dtype=dtype, backend=be) if vals else wrap(be.empty((0,), dtype), dtype, be)
    return wrap(be.reshape(t._data, shape), dtype, be)


def stack(parts: list[Tensor], outer: Sequence[int], fname: str, hint: Tensor | None = None) -> Tensor:
    """Tensors of one shape stacked into a tensor of shape ``outer + inner``.

    With no parts (an empty outer shape) the inner shape and dtype are taken
    from ``hint`` (a sub-array of the input: functions are assumed to keep
    the shape), else ``()`` and int64.

    Raises:
        ValueError: if the parts' shapes differ.
    """
    be = get_backend()
    outer = tuple(outer)
    if not parts:
        if hint is not None:
            return empty(outer + hint.shape, hint._dtype, be)
        return empty(outer, D.int64, be)
    inner = parts[0].shape
    d = parts[0]._dtype
    for p in parts[1:]:
        if p.shape != inner:
            raise ValueError(f"{fname}: inner arrays have different shapes {list(inner)} and {list(p.shape)}; "
                             "expected all the same shape")
        if p._dtype is not d:
            d = D.promote_types(d, p._dtype)
    out = be.empty((len(parts),) + inner, d)
    fk = tuple(full_key(inner))
    for i, p in enumerate(parts):
        src = p._data if p._dtype is d else be.cast(p._data, d)
        be.assign(be.view_index(out, (i,) + fk), src)
    return wrap(be.reshape(out, outer + inner), d, be)


def as_part(v: Any, fname: str) -> Tensor:
    """A function result as an array: Tensors pass, other values become 0-d arrays."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, UnsafeArray):
        return arr(v, fname)
    if isinstance(v, _PY_NUM):
        return as_tensor(v, fname)
    return scalar_object(v)


# ---------------------------------------------------------------------------
# recognised functions: runetensor's own ops, Python's builtins and operators
# ---------------------------------------------------------------------------
_FOLD_BUILTINS = {builtins.sum: "sum", builtins.max: "max", builtins.min: "min",
                  builtins.any: "any", builtins.all: "all", math.prod: "prod"}
_FOLD_RT = ("sum", "prod", "max", "min", "any", "all")
_BINARY_OPERATOR = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                    operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
                    operator.gt, operator.ge, operator.and_, operator.or_, operator.xor}
_BINARY_RT = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmax", "fmin", "atan2",
              "hypot", "mod_", "fmod", "equal", "not_equal", "less", "less_equal", "greater",
              "greater_equal", "cmpeq", "cmpne", "cmplt", "cmple", "cmpgt", "cmpge", "logical_and",
              "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "copysign",
              "logaddexp", "nextafter", "lshift", "rshift", "left_shift", "right_shift", "minimum",
              "add_s", "sub_s", "mul_s")
_UNARY_OPERATOR = {operator.neg, operator.abs, builtins.abs, operator.invert}
#: the contract's unary ops (a new one is elementwise here too) and the public elementwise composites
_UNARY_RT = UNARY_OPS + ("relu", "sigmoid", "reciprocal", "negative", "absolute", "rsqrt")


def fold_op(f: Any) -> str | None:
    """The backend reduction ``f`` performs ("sum", "max"...), or None for other functions."""
    op = _FOLD_BUILTINS.get(f) if _hashable(f) else None
    if op is not None:
        return op
    for n in _FOLD_RT:
        g = getattr(rt, n, None)
        if g is not None and g is f:
            return n
    return None


def _hashable(f: Any) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False


def is_binary_op(f: Any) -> bool:
    """True for functions that act elementwise (with broadcasting) on whole tensors."""
    if _hashable(f) and f in _BINARY_OPERATOR:
        return True
    return any(getattr(rt, n, None) is f for n in _BINARY_RT)


def is_unary_op(f: Any) -> bool:
    if _hashable(f) and f in _UNARY_OPERATOR:
        return True
    return any(getattr(rt, n, None) is f for n in _UNARY_RT)


def reduce_axes(t: Tensor, op: str, axes: Sequence[int], fname: str) -> Tensor:
    """Backend reduction ``op`` over ``axes`` (sum/prod of bool count as int64)."""
    axes = tuple(axes)
    be = t._backend
    d = t._dtype
    if op in ("sum", "prod") and d.kind == "b":
        t = cast(t, D.int64)
        d = D.int64
    if op in ("max", "min") and axes and any(t.shape[a] == 0 for a in axes):
        raise ValueError(f"{fname}: {op} of an empty array (shape {list(t.shape)}); "
                         "expected at least one element in each reduced sub-array")
    if op in ("max", "min") and d.is_complex:
        raise TypeError(f"{fname}: complex numbers have no order ({d})")
    if not axes:
        return t if op not in ("any", "all") else wrap(be.cast(t._data, D.bool), D.bool, be)
    r = be.reduce(op, t._data, axes, False)
    return wrap(r, D.bool if op in ("any", "all") else d, be)


def fold_axes(t: Tensor, f: Any, op: str, axes: Sequence[int], fname: str) -> Tensor:
    """The recognised fold ``f`` (kind ``op``) over ``axes`` in one call.

    runetensor's own reductions are called themselves with ``axes=`` (so
    their dtype rules apply); Python's builtins go to the backend reduction.
    """
    axes = list(axes)
    if axes and f is getattr(rt, op, None):
        if op in ("max", "min") and any(t.shape[a] == 0 for a in axes):
            raise ValueError(f"{fname}: {op} of an empty array (shape {list(t.shape)}); "
                             "expected at least one element in each reduced sub-array")
        return f(t, axes=axes)
    return reduce_axes(t, op, axes, fname)


def fold_values(op: str, vals: list[Any]) -> Any:
    """Python's meaning of a recognised fold on a list of elements (the general path)."""
    if op == "sum":
        return builtins.sum(vals)
    if op == "prod":
        return math.prod(vals)
    if op == "max":
        return builtins.max(vals)
    if op == "min":
        return builtins.min(vals)
    if op == "any":
        return builtins.any(vals)
    return builtins.all(vals)


# ---------------------------------------------------------------------------
# equality
# ---------------------------------------------------------------------------
def equal(a: Any, b: Any) -> bool:
    """harpie's ``==`` on arrays: same shape and equal elements.

    Args:
        a, b: arrays (Tensors), or any values (compared with ``==``).
    Returns:
        A Python bool (not an elementwise tensor, unlike ``a == b``).

    >>> from runetensor import harpie as hp
    >>> hp.equal(hp.singleton(3), hp.to_scalar(3))
    False
    >>> hp.equal(hp.range([2, 3]), hp.array([2, 3], [0, 1, 2, 3, 4, 5]))
    True
    """
    if isinstance(a, UnsafeArray) or isinstance(b, UnsafeArray):
        if not (isinstance(a, UnsafeArray) and isinstance(b, UnsafeArray)):
            return False
        return a.shape == b.shape and equal(a.vector, b.vector)
    at, bt = isinstance(a, Tensor), isinstance(b, Tensor)
    if at != bt:
        return False
    if not at:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return type(a) is type(b) and len(a) == len(b) and builtins.all(equal(x, y) for x, y in zip(a, b))
        r = a == b
        return builtins.bool(r)
    if a.shape != b.shape:
        return False
    if a._dtype.kind != "O" and b._dtype.kind != "O":
        e = binary_op("eq", a, b, "equal")
        if e.size == 0:
            return True
        if e.ndim == 0:
            return builtins.bool(e._backend.to_list(e._data))
        return builtins.bool(e._backend.to_list(e._backend.reduce("all", e._data, tuple(_range(e.ndim)), False)))
    return builtins.all(equal(x, y) for x, y in zip(values(a, False), values(b, False)))


# ---------------------------------------------------------------------------
# printing: Haskell's show and harpie's pretty
# ---------------------------------------------------------------------------
def show_double(v: float) -> str:
    """Haskell's ``show`` of a Double: shortest digits, ``1.0``, ``0.1``, ``1.0e-2``, ``1.0e7``.

    >>> show_double(49.36111111111111), show_double(0.01), show_double(1e7), show_double(-0.0)
    ('49.36111111111111', '1.0e-2', '1.0e7', '-0.0')
    """
    return _show_real(v, repr)


def _shortest32(v: float) -> str:
    for p in _range(1, 10):
        s = "%.*g" % (p, v)
        if struct.unpack("f", struct.pack("f", float(s)))[0] == v:
            return s
    return repr(v)


def _shortest16(v: float) -> str:
    for p in _range(1, 6):
        s = "%.*g" % (p, v)
        try:
            if struct.unpack("e", struct.pack("e", float(s)))[0] == v:
                return s
        except OverflowError:
            continue
    return repr(v)


def _show_real(v: float, digits_of: Callable[[float], str]) -> str:
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    neg = math.copysign(1.0, v) < 0
    av = abs(v)
    if av == 0.0:
        body = "0.0"
    else:
        tup = decimal.Decimal(digits_of(av)).as_tuple()
        ds = list(tup.digits)
        exp = tup.exponent
        while len(ds) > 1 and ds[-1] == 0:
            ds.pop()
            exp += 1
        while len(ds) > 1 and ds[0] == 0:
            ds.pop(0)
        e = len(ds) + exp  # v = 0.d1d2... * 10**e
        s = "".join(str(d) for d in ds)
        if e < 0 or e > 7:
            body = s[0] + "." + (s[1:] or "0") + "e" + str(e - 1)
        elif e <= 0:
            body = "0." + "0" * (-e) + s
        else:
            ip = s[:e].ljust(e, "0")
            fp = s[e:] or "0"
            body = ip + "." + fp
    return "-" + body if neg else body


def _show_scalar(v: Any, d: DType | None = None) -> str:
    t = type(v)
    if t is builtins.bool:
        return "True" if v else "False"
    if t is builtins.int:
        return str(v)
    if t is builtins.float:
        if d is not None and d.is_float and d.bits <= 32:
            return _show_real(v, _shortest16 if d is D.float16 else _shortest32)
        return show_double(v)
    if t is builtins.complex:
        return show_double(v.real) + " :+ " + show_double(v.imag)
    return show(v)


def show(x: Any) -> str:
    """Haskell's ``show`` of a harpie value: ``UnsafeArray [2,3] [0,1,2,3,4,5]`` for an array.

    Tuples show as ``(0,3)``, lists as ``[0,1]``, booleans as ``True``,
    floats as Haskell Doubles (``1.0``), ``None`` as ``()``.

    Args:
        x: an array (Tensor or :class:`UnsafeArray`) or any value.
    Returns:
        The text.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.array([2, 3], [0, 1, 2, 3, 4, 5]))
    'UnsafeArray [2,3] [0,1,2,3,4,5]'
    >>> hp.show((hp.to_scalar(1), [1, 2], (0.5, True)))
    '(UnsafeArray [] [1],[1,2],(0.5,True))'
    """
    if isinstance(x, Tensor):
        d = x._dtype
        body = ",".join(_show_scalar(v, d) for v in values(x, False))
        return "UnsafeArray [" + ",".join(str(s) for s in x.shape) + "] [" + body + "]"
    if isinstance(x, UnsafeArray):
        d = x.vector._dtype
        body = ",".join(_show_scalar(v, d) for v in values(x.vector, False))
        return "UnsafeArray [" + ",".join(str(s) for s in x.shape) + "] [" + body + "]"
    if x is None:
        return "()"
    if isinstance(x, tuple):
        return "(" + ",".join(show(e) for e in x) + ")"
    if isinstance(x, list):
        return "[" + ",".join(show(e) for e in x) + "]"
    if isinstance(x, str):
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(x, _PY_NUM):
        return _show_scalar(x)
    return str(x)


def pretty(a: Any) -> str:
    """harpie's ``pretty``: nested rows without spaces, ``[[0,1,2],\\n [3,4,5]]``.

    Rank 0 prints the element, rank 1 the list of elements, higher ranks one
    row per line, each nesting level indented by one space.  Elements print
    as :func:`show` does (``(0,3)``, ``[0,1]``, ``True``, ``1.0``).

    Args:
        a: an array (or any value, printed with :func:`show`).
    Returns:
        The text.

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.range([2, 3])))
    [[0,1,2],
     [3,4,5]]
    """
    if isinstance(a, UnsafeArray):
        a = arr(a, "pretty")
    if not isinstance(a, Tensor):
        return show(a)
    d = a._dtype
    vals = [_show_scalar(v, d) for v in values(a, False)]
    shp = a.shape
    if not shp:
        return vals[0]

    def rec(lo: int, axis: int) -> str:
        n = shp[axis]
        step = size_of(shp[axis + 1:])
        if axis == len(shp) - 1:
            return "[" + ",".join(vals[lo:lo + n]) + "]"
        if n == 0:
            return "[]"
        rows = [rec(lo + i * step, axis + 1) for i in _range(n)]
        return "[" + ",\n ".join(r.replace("\n", "\n ") for r in rows) + "]"

    return rec(0, 0)
