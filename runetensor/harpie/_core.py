"""harpie arrays: construction, conversion, shape access, indexing, scalars, creation, element-level maps.

harpie's ``Array a`` is a runetensor :class:`~runetensor.Tensor`: numeric
elements give typed tensors (``Int`` -> ``int64``, ``Double`` -> ``float64``,
``Bool`` -> ``bool``), tuples, lists and arrays give ``rt.object`` tensors.
"""
from __future__ import annotations

import builtins
import itertools
from typing import Any, Callable, Sequence

from .. import _dtypes as D
from .._backend import get_backend
from .._tensor import Tensor, as_tensor, wrap
from .._validate import alloc_error, check_alloc
from ._base import (UnsafeArray, arr, as_part, from_values, full, int_arg, ints_arg, is_binary_op,
                    is_unary_op, item, reshape, scalar_object, shape_arg, size_of, values)

__all__ = [
    "array", "safe_array", "validate", "unsafe_modify_shape", "unsafe_modify_vector",
    "as_vector", "vector_as", "as_array", "array_as",
    "shape", "rank", "size", "length", "is_null", "index", "index_safe", "tabulate", "backpermute",
    "from_scalar", "to_scalar", "is_scalar", "as_singleton", "as_scalar",
    "empty", "range", "corange", "indices", "ident", "konst", "singleton", "diag", "undiag",
    "zip_with", "zip_with_safe", "modify", "imap", "fmap", "row_wise", "col_wise", "dims_wise", "iota",
]

_range = builtins.range


def _data_list(data: Any, fname: str) -> tuple[list[Any] | None, Tensor | None]:
    if isinstance(data, Tensor):
        return None, data
    if isinstance(data, UnsafeArray):
        return None, data.vector
    try:
        return list(data), None
    except TypeError:
        raise TypeError(f"{fname}: data must be a sequence of elements, got {type(data).__name__}") from None


def _flat(t: Tensor) -> Tensor:
    return reshape(t, (t.size,))


def _alloc_shape(shape: Any, fname: str, d: Any) -> list[int]:
    """``shape_arg`` for a new array of dtype ``d``: a shape no buffer can hold raises ``ValueError``,
    and one the machine cannot allocate raises ``MemoryError`` before any per-element work."""
    shp = shape_arg(shape, fname)
    t = tuple(shp)
    check_alloc(t, d, fname)
    if size_of(shp) > 1 << 16:
        try:
            get_backend().empty(t, d)
        except MemoryError:
            raise alloc_error(fname, t, d) from None
    return shp


def array(shape: Sequence[int], data: Any, dtype: Any = None) -> Any:
    """harpie's ``array`` (and ``><``): an array of ``shape`` holding ``data`` in row-major order.

    Args:
        shape: the dimensions, a list of ints (``[]`` for a scalar).
        data: the elements: a flat sequence or a Tensor (flattened).
        dtype: optional element type; inferred otherwise (ints -> int64,
            floats -> float64, bools -> bool, anything else -> ``rt.object``).
    Returns:
        A Tensor when ``len(data)`` equals the shape's size; otherwise an
        :class:`UnsafeArray` (harpie builds such arrays without checking);
        only ``validate``, ``fill``, ``show`` and the ``unsafe_*`` functions
        accept one.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.array([2, 3], range(6)))
    'UnsafeArray [2,3] [0,1,2,3,4,5]'
    """
    shp = shape_arg(shape, "array")
    lst, t = _data_list(data, "array")
    d = None if dtype is None else D.dtype_of(dtype)
    if t is not None:
        t = _flat(t)
        if d is not None and d is not t._dtype:
            t = wrap(t._backend.cast(t._data, d), d, t._backend)
    else:
        t = from_values((len(lst),), lst, dtype=d, fname="array")
    if t.size != size_of(shp):
        return UnsafeArray(shp, t)
    return reshape(t, shp)


def safe_array(shape: Sequence[int], data: Any) -> Tensor | None:
    """harpie's ``safeArray``: like :func:`array` but None when the data do not fill the shape.

    >>> from runetensor import harpie as hp
    >>> hp.safe_array([2, 3, 4], range(23)) is None, hp.safe_array([2], [1, 2]).shape
    (True, (2,))
    """
    a = array(shape, data)
    return a if isinstance(a, Tensor) else None


def validate(a: Any) -> bool:
    """harpie's ``validate``: whether the shape's size equals the number of elements.

    >>> from runetensor import harpie as hp
    >>> hp.validate(hp.array([2, 3, 4], hp.range([23]))), hp.validate(hp.range([2, 3]))
    (False, True)
    """
    if isinstance(a, UnsafeArray):
        return size_of(a.shape) == a.vector.size
    arr(a, "validate")
    return True


def unsafe_modify_shape(a: Any, f: Callable[[list[int]], Sequence[int]]) -> Any:
    """harpie's ``unsafeModifyShape``: replace the shape by ``f(shape)`` keeping the elements.

    Returns an :class:`UnsafeArray` if the new shape's size differs.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.unsafe_modify_shape(hp.array([2, 3], range(6)), lambda s: [x + 1 for x in s]))
    'UnsafeArray [3,4] [0,1,2,3,4,5]'
    """
    vec = a.vector if isinstance(a, UnsafeArray) else _flat(arr(a, "unsafe_modify_shape"))
    old = list(a.shape)
    return array(shape_arg(f(old), "unsafe_modify_shape"), vec)


def unsafe_modify_vector(a: Any, f: Callable[[Tensor], Any]) -> Any:
    """harpie's ``unsafeModifyVector``: replace the flat element vector by ``f(vector)``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.unsafe_modify_vector(hp.array([2, 3], range(6)), lambda v: v + 1))
    'UnsafeArray [2,3] [1,2,3,4,5,6]'
    """
    vec = a.vector if isinstance(a, UnsafeArray) else _flat(arr(a, "unsafe_modify_vector"))
    return array(list(a.shape), f(vec))


def as_vector(a: Any) -> Tensor:
    """harpie's ``asVector``: the elements as a 1-d array (drops the shape; a view where possible).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.as_vector(hp.range([2, 3])))
    '[0,1,2,3,4,5]'
    """
    if isinstance(a, UnsafeArray):
        return a.vector
    if isinstance(a, (list, tuple)):
        return as_array(a)
    return _flat(arr(a, "as_vector"))


def vector_as(v: Any) -> Tensor:
    """harpie's ``vectorAs``: a 1-d array from a vector (a sequence or 1-d tensor).

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.vector_as(range(6)))
    'UnsafeArray [6] [0,1,2,3,4,5]'
    """
    return as_array(v)


def as_array(xs: Any) -> Tensor:
    """harpie's ``asArray``: a 1-d array from a list (elements kept as they are).

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.as_array([0, 1, 2, 3, 4, 5]))
    'UnsafeArray [6] [0,1,2,3,4,5]'
    """
    if isinstance(xs, Tensor):
        return _flat(xs) if xs.ndim != 1 else xs
    lst, t = _data_list(xs, "as_array")
    if t is not None:
        return _flat(t)
    return from_values((len(lst),), lst)


def array_as(a: Any) -> list[Any]:
    """harpie's ``arrayAs`` to a list: the elements in row-major order.

    >>> from runetensor import harpie as hp
    >>> hp.array_as(hp.range([2, 3]))
    [0, 1, 2, 3, 4, 5]
    """
    if isinstance(a, UnsafeArray):
        return values(a.vector)
    return values(arr(a, "array_as"))


def shape(a: Any) -> list[int]:
    """harpie's ``shape``, as a list (harpie's ``Dims``).

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.range([2, 3, 4]))
    [2, 3, 4]
    """
    if isinstance(a, UnsafeArray):
        return list(a.shape)
    return list(arr(a, "shape").shape)


def rank(a: Any) -> int:
    """Number of dimensions.

    >>> from runetensor import harpie as hp
    >>> hp.rank(hp.range([2, 3, 4]))
    3
    """
    return len(shape(a))


def size(a: Any) -> int:
    """Number of elements (the product of the shape).

    >>> from runetensor import harpie as hp
    >>> hp.size(hp.range([2, 3, 4]))
    24
    """
    return size_of(shape(a))


def length(a: Any) -> int:
    """Number of rows (size of the first dimension); a scalar counts as one row.

    >>> from runetensor import harpie as hp
    >>> hp.length(hp.range([2, 3, 4])), hp.length(hp.to_scalar(0))
    (2, 1)
    """
    s = shape(a)
    return s[0] if s else 1


def is_null(a: Any) -> bool:
    """Whether the array has no elements.

    >>> from runetensor import harpie as hp
    >>> hp.is_null(hp.array([2, 0], [])), hp.is_null(hp.array([], [4]))
    (True, False)
    """
    return size(a) == 0


def _check_index(t: Tensor, i: Sequence[int], fname: str) -> list[int] | None:
    idx = ints_arg(i, fname, "index")
    if len(idx) != t.ndim:
        return None
    for x, s in zip(idx, t.shape):
        if not 0 <= x < s:
            return None
    return idx


def index(a: Any, i: Sequence[int]) -> Any:
    """harpie's ``index`` / ``!``: the element at index ``i`` (a list with one entry per dimension).

    Raises:
        IndexError: if ``i`` has the wrong length or is out of range.

    >>> from runetensor import harpie as hp
    >>> hp.index(hp.range([2, 3, 4]), [1, 2, 3])
    23
    """
    t = arr(a, "index")
    idx = _check_index(t, i, "index")
    if idx is None:
        raise IndexError(f"index: index {list(i)} is out of range for shape {list(t.shape)}; "
                         f"expected {t.ndim} entries with 0 <= i[k] < shape[k]")
    return item(t, idx)


def index_safe(a: Any, i: Sequence[int]) -> Any:
    """harpie's ``!?``: the element at ``i``, or None when ``i`` is out of range.

    >>> from runetensor import harpie as hp
    >>> a = hp.range([2, 3, 4])
    >>> hp.index_safe(a, [1, 2, 3]), hp.index_safe(a, [2, 3, 1])
    (23, None)
    """
    t = arr(a, "index_safe")
    idx = _check_index(t, i, "index_safe")
    return None if idx is None else item(t, idx)


def _all_indices(shp: Sequence[int]):
    return itertools.product(*(_range(s) for s in shp))


def tabulate(shape: Sequence[int], f: Callable[[list[int]], Any]) -> Tensor:
    """harpie's ``tabulate``: the array whose element at index ``i`` (a list) is ``f(i)``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.tabulate([2, 2], lambda i: i[0] * 10 + i[1]))
    '[[0,1],\\n [10,11]]'
    """
    shp = _alloc_shape(shape, "tabulate", D.object_)
    if not callable(f):
        raise TypeError(f"tabulate: f must be callable, got {type(f).__name__}")
    return from_values(shp, [f(list(i)) for i in _all_indices(shp)])


def backpermute(a: Any, f: Callable[[list[int]], Sequence[int]], g: Callable[[list[int]], Sequence[int]]) -> Tensor:
    """harpie's ``backpermute``: new shape ``f(shape)``, element ``i`` taken from ``a`` at ``g(i)``.

    One gather: the source positions are computed for every output index,
    then read in a single backend call.  The named shape functions
    (``transpose``, ``take``, ``reorder``...) are views instead.

    Raises:
        IndexError: if ``g`` maps an index outside ``a``.

    >>> from runetensor import harpie as hp
    >>> rev = lambda s: list(reversed(s))
    >>> hp.equal(hp.backpermute(hp.range([2, 3]), rev, rev), hp.transpose(hp.range([2, 3])))
    True
    """
    t = arr(a, "backpermute")
    shp = shape_arg(f(list(t.shape)), "backpermute")
    r = t.ndim
    cols: list[list[int]] = [[] for _ in _range(r)]
    for i in _all_indices(shp):
        src = ints_arg(g(list(i)), "backpermute", "source index")
        if len(src) != r or not builtins.all(0 <= x < s for x, s in zip(src, t.shape)):
            raise IndexError(f"backpermute: g maps {list(i)} to {src}, outside shape {list(t.shape)}")
        for k in _range(r):
            cols[k].append(src[k])
    be = t._backend
    n = size_of(shp)
    if r == 0:
        h = be.expand(be.reshape(t._data, (1,)), (n,))
        return wrap(be.reshape(be.copy(h), tuple(shp)), t._dtype, be)
    key = tuple(as_tensor(c, "backpermute", dtype=D.int64, backend=be)._data if c else
                be.empty((0,), D.int64) for c in cols)
    h = be.gather(t._data, key)
    return wrap(be.reshape(h, tuple(shp)), t._dtype, be)


def from_scalar(a: Any) -> Any:
    """harpie's ``fromScalar``: the element of a scalar (or the first element of any array).

    >>> from runetensor import harpie as hp
    >>> hp.from_scalar(hp.array([], [3]))
    3
    """
    t = arr(a, "from_scalar")
    if t.size == 0:
        raise ValueError(f"from_scalar: the array of shape {list(t.shape)} has no elements")
    return item(t, [0] * t.ndim)


def to_scalar(x: Any) -> Tensor:
    """harpie's ``toScalar``: a rank-0 array holding ``x``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.to_scalar(2))
    'UnsafeArray [] [2]'
    """
    if isinstance(x, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        return from_values((), [x])
    return scalar_object(x)


def is_scalar(a: Any) -> bool:
    """Whether the array has rank 0.

    >>> from runetensor import harpie as hp
    >>> hp.is_scalar(hp.to_scalar(2))
    True
    """
    return rank(a) == 0


def as_singleton(a: Any) -> Tensor:
    """A scalar becomes shape ``[1]``; other arrays are returned as they are (a view).

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.as_singleton(hp.to_scalar(4)))
    'UnsafeArray [1] [4]'
    """
    t = arr(a, "as_singleton")
    return reshape(t, (1,)) if t.ndim == 0 else t


def as_scalar(a: Any) -> Tensor:
    """A shape ``[1]`` array becomes a scalar; other arrays are returned as they are.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.as_scalar(hp.singleton(3)))
    'UnsafeArray [] [3]'
    """
    t = arr(a, "as_scalar")
    return reshape(t, ()) if t.shape == (1,) else t


def empty() -> Tensor:
    """harpie's ``empty``: the array of shape ``[0]``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.empty())
    'UnsafeArray [0] []'
    """
    be = get_backend()
    return wrap(be.empty((0,), D.int64), D.int64, be)


def range(shape: Sequence[int]) -> Tensor:  # noqa: A001  (harpie's name)
    """harpie's ``range``: ``0, 1, 2...`` in row-major order (int64).

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.range([2, 3])))
    [[0,1,2],
     [3,4,5]]
    """
    return _range_of(shape, "range")


def _range_of(shape: Any, fname: str) -> Tensor:
    shp = _alloc_shape(shape, fname, D.int64)
    be = get_backend()
    try:
        h = be.arange(0, size_of(shp), 1, D.int64)
    except MemoryError:
        raise alloc_error(fname, tuple(shp), D.int64) from None
    return wrap(be.reshape(h, tuple(shp)), D.int64, be)


def corange(shape: Sequence[int]) -> Tensor:
    """harpie's ``corange``: column-major (colexicographic) enumeration (a transposed view).

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.corange([2, 3])))
    [[0,2,4],
     [1,3,5]]
    """
    shp = shape_arg(shape, "corange")
    t = _range_of(list(reversed(shp)), "corange")
    return wrap(t._backend.permute(t._data, tuple(reversed(_range(len(shp))))), D.int64, t._backend)


def indices(shape: Sequence[int]) -> Tensor:
    """harpie's ``indices``: an object array whose element at ``i`` is the list ``i``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.indices([2]))
    '[[0],[1]]'
    """
    shp = _alloc_shape(shape, "indices", D.object_)
    return from_values(shp, [list(i) for i in _all_indices(shp)], dtype=D.object_)


def ident(shape: Sequence[int]) -> Tensor:
    """harpie's ``ident``: 1 where all index entries are equal, 0 elsewhere (int64).

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.ident([2, 2])))
    [[1,0],
     [0,1]]
    """
    shp = _alloc_shape(shape, "ident", D.int64)
    be = get_backend()
    try:
        h = be.full(tuple(shp), 0, D.int64)
    except MemoryError:
        raise alloc_error("ident", tuple(shp), D.int64) from None
    if shp:
        n = builtins.min(shp)
        if n:
            idx = be.arange(0, n, 1, D.int64)
            be.scatter(h, (idx,) * len(shp), 1)
    else:
        be.assign(h, 1)
    return wrap(h, D.int64, be)


def konst(shape: Sequence[int], x: Any) -> Tensor:
    """harpie's ``konst``: an array of ``shape`` filled with ``x``.

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.konst([3, 2], 1)))
    [[1,1],
     [1,1],
     [1,1]]
    """
    shp = shape_arg(shape, "konst")
    if isinstance(x, Tensor) and x.ndim == 0 and x._dtype.kind != "O":
        x, d = x._backend.to_list(x._data), x._dtype
    else:
        d = from_values((1,), [x])._dtype
    check_alloc(tuple(shp), d, "konst")
    try:
        return full(shp, x, d)
    except MemoryError:
        raise alloc_error("konst", tuple(shp), d) from None


def singleton(x: Any) -> Tensor:
    """harpie's ``singleton``: an array of shape ``[1]`` holding ``x``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.singleton(1))
    '[1]'
    """
    return from_values((1,), [x])


def diag(a: Any) -> Tensor:
    """The diagonal ``a[i, i, ..., i]`` for ``i < min(shape)`` (a strided view).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.diag(hp.ident([3, 3])))
    '[1,1,1]'
    """
    t = arr(a, "diag")
    if t.ndim == 0:
        return t
    be = t._backend
    n = builtins.min(t.shape)
    st = be.strides(t._data)
    return wrap(be.as_strided(t._data, (n,), (builtins.sum(st),), be.offset(t._data)), t._dtype, be)


def undiag(a: Any) -> Tensor:
    """An array of shape ``shape ++ shape`` with ``a[i...]`` where all indices equal ``i``, 0 elsewhere.

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.undiag(hp.range([3]))))
    [[0,0,0],
     [0,1,0],
     [0,0,2]]
    """
    t = arr(a, "undiag")
    be = t._backend
    r = t.ndim
    out = full(tuple(t.shape) * 2, 0, t._dtype, be)
    if r == 0:
        be.assign(out._data, t._data)
        return out
    n = builtins.min(t.shape)
    if n:
        idx = be.arange(0, n, 1, D.int64)
        vals = diag(t)
        be.scatter(out._data, (idx,) * (2 * r), vals._data)
    return out


def zip_with(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``zipWith``: ``f`` applied to matching elements of two same-shaped arrays.

    Runetensor's elementwise functions (``rt.add``...) and Python's
    ``operator`` functions run as one vectorised call; other functions are
    called per element.

    Raises:
        ValueError: if the shapes differ (harpie does not check).

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> v = hp.range([3])
    >>> hp.show(hp.zip_with(v, v, operator.sub))
    'UnsafeArray [3] [0,0,0]'
    """
    r = zip_with_safe(a, b, f)
    if r is None:
        raise ValueError(f"zip_with: shapes {shape(a)} and {shape(b)} differ; expected equal shapes")
    return r


def zip_with_safe(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Tensor | None:
    """harpie's ``zipWithSafe``: :func:`zip_with`, or None when the shapes differ.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.zip_with_safe(hp.range([3]), hp.range([4]), operator.sub) is None
    True
    """
    x = arr(a, "zip_with")
    y = arr(b, "zip_with")
    if x.shape != y.shape:
        return None
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f):
        return as_part(f(x, y), "zip_with")
    return from_values(x.shape, [f(p, q) for p, q in zip(values(x), values(y))])


def modify(a: Any, i: Sequence[int], f: Callable[[Any], Any]) -> Tensor:
    """harpie's ``modify``: a copy of ``a`` with the element at ``i`` replaced by ``f(element)``.

    Raises:
        IndexError: if ``i`` is out of range.

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.modify(hp.range([3, 2]), [0, 0], lambda x: 100)))
    [[100,1],
     [2,3],
     [4,5]]
    """
    t = arr(a, "modify")
    idx = _check_index(t, i, "modify")
    if idx is None:
        raise IndexError(f"modify: index {list(i)} is out of range for shape {list(t.shape)}")
    v = f(item(t, idx))
    d = t._dtype
    nd = from_values((1,), [v])._dtype if not isinstance(v, Tensor) else v._dtype
    if nd is not d:
        nd = D.promote_types(d, nd)
    be = t._backend
    h = be.cast(t._data, nd) if nd is not d else be.copy(t._data)
    if isinstance(v, Tensor):
        v = v._backend.to_list(v._data) if v.ndim == 0 and v._dtype.kind != "O" else v
    be.scatter(h, tuple(idx), v)
    return wrap(h, nd, be)


def imap(a: Any, f: Callable[[list[int], Any], Any]) -> Tensor:
    """harpie's ``imap``: ``f(index, element)`` for every element.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.imap(hp.range([3]), lambda i, x: x * 10 + i[0]))
    '[0,11,22]'
    """
    t = arr(a, "imap")
    vals = values(t)
    return from_values(t.shape, [f(list(i), x) for i, x in zip(_all_indices(t.shape), vals)])


def fmap(f: Callable[[Any], Any], a: Any) -> Tensor:
    """Haskell's ``fmap`` over an array: ``f`` applied to every element (shape kept).

    Runetensor's elementwise unary functions (``rt.exp``, ``rt.neg``...) and
    ``operator.neg``/``abs`` run as one vectorised call.  The array may also
    come first (``hp.fmap(a, f)``).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.fmap(lambda x: (x, x + 3), hp.range([2])))
    '[(0,3),(1,4)]'
    """
    if not callable(f) and callable(a):
        f, a = a, f
    t = arr(a, "fmap")
    if t._dtype.kind != "O" and is_unary_op(f):
        return as_part(f(t), "fmap")
    return from_values(t.shape, [f(x) for x in values(t)], default=t._dtype)


def row_wise(a: Any, f: Callable[..., Any], xs: Sequence[Any]) -> Any:
    """harpie's ``rowWise``: ``f(a, [0, 1, ...], xs)``, the parameters applied to the leading dimensions.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.row_wise(hp.range([2, 3, 4]), hp.indexes, [1, 0]))
    'UnsafeArray [4] [12,13,14,15]'
    """
    xs = list(xs)
    return f(a, list(_range(len(xs))), xs)


def col_wise(a: Any, f: Callable[..., Any], xs: Sequence[Any]) -> Any:
    """harpie's ``colWise``: the parameters applied to the last dimensions, last dimension first.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.col_wise(hp.range([2, 3, 4]), hp.indexes, [1, 0]))
    'UnsafeArray [2] [1,13]'
    """
    xs = list(xs)
    r = rank(a)
    if len(xs) > r:
        raise ValueError(f"col_wise: {len(xs)} parameters for an array of rank {r}; expected at most {r}")
    return f(a, list(reversed(_range(r - len(xs), r))), xs)


def dims_wise(a: Any, f: Callable[..., Any], ds: Sequence[int], xs: Sequence[Any]) -> Any:
    """harpie's ``dimsWise``: fold ``f(acc, d, x)`` over the pairs of ``ds`` and ``xs``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.dims_wise(hp.range([2, 3, 4]), hp.take, [0, 2], [1, 2]))
    'UnsafeArray [1,3,2] [0,1,4,5,8,9]'
    """
    acc = a
    for d, x in zip(ds, xs):
        acc = f(acc, d, x)
    return acc


def iota(n: int) -> Tensor:
    """harpie's ``iota``: ``range([n])``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.iota(5))
    'UnsafeArray [5] [0,1,2,3,4]'
    """
    return _range_of([int_arg(n, "iota", "n")], "iota")

