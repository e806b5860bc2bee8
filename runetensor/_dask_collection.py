"""Dask tensors as Dask collections: the collection protocol, ``t.chunks``, ``rt.persist``, ``rt.rechunk``
and ``rt.map_blocks``.

A tensor of the Dask backend implements Dask's collection protocol (``__dask_graph__``,
``__dask_keys__``, ``__dask_postcompute__``, ``__dask_postpersist__``...), so Dask's own functions
and the distributed client take it as they take a ``dask.array.Array``:

* ``dask.compute(t, ...)`` and ``client.compute(t).result()`` give runetensor tensors of the NumPy
  backend (the values); ``dask.persist(t)`` / ``client.persist(t)`` give Dask tensors whose chunks
  are held in memory (in the workers' with a client), as do :func:`persist` and ``t.persist()``;
* ``dask.is_dask_collection(t)`` is True, ``distributed.progress(t)`` and ``dask.visualize(t)``
  work, and the graph's keys read ``rt-<operation>-<token>``.

A tensor of another backend is no collection (``__dask_graph__()`` is None) and its ``chunks`` is
None.  Nothing here imports Dask until a Dask tensor asks for it.

>>> import numpy as np, runetensor as rt, dask
>>> x = rt.asarray(np.arange(6.0), backend="dask", chunks=4)
>>> x.chunks
((4, 2),)
>>> dask.is_dask_collection(x), dask.is_dask_collection(rt.zeros(rt.float32, [2]))
(True, False)
>>> (s,) = dask.compute(rt.sum(x))
>>> s.backend.name, float(s)
('numpy', 15.0)
"""
from __future__ import annotations

import copy as _copy
from typing import Any, Callable

from . import _dtypes as D
from ._backend import get_backend
from ._tensor import Tensor, wrap

__all__ = ["persist", "rechunk", "map_blocks"]


def _is_dask(t: Any) -> bool:
    return isinstance(t, Tensor) and t._backend.name == "dask"


def _arr(t: Tensor) -> Any:
    return t._data.arr


def _require_dask(t: Any, fname: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: expected a Tensor, got {type(t).__name__}")
    if not _is_dask(t):
        if t._backend.level > 0:
            raise TypeError(f"{fname}: inside rt.grad, rt.vmap or rt.jit ({t._backend.name}) a tensor's chunks are "
                            f"not in the transformation's hands (they are how the Dask backend stores values, not "
                            f"values); call {fname} on the Dask tensor before or after the transformed function")
        raise TypeError(f"{fname}: expected a tensor of the dask backend, got one of the {t._backend.name} "
                        f"backend; move it first with t.to_backend('dask', chunks=...)")
    return t


# ---------------------------------------------------------------------------------------------
# the collection protocol
# ---------------------------------------------------------------------------------------------
def _dask_graph(self: Tensor) -> Any:
    """The Dask graph of a Dask tensor (a ``HighLevelGraph``); None for other backends (no collection)."""
    return _arr(self).__dask_graph__() if _is_dask(self) else None


def _dask_keys(self: Tensor) -> Any:
    """The keys of the tensor's chunks (nested lists, one level per axis, as ``dask.array``)."""
    return _arr(_require_dask(self, "__dask_keys__")).__dask_keys__()


def _dask_layers(self: Tensor) -> Any:
    return _arr(_require_dask(self, "__dask_layers__")).__dask_layers__()


def _dask_tokenize(self: Tensor) -> Any:
    """A deterministic token: the graph's name for a Dask tensor, the values for the others."""
    if _is_dask(self):
        return ("runetensor.Tensor", "dask", self._dtype.name, _arr(self).name)
    be = self._backend
    if be.level > 0 or self._dtype is D.object_:
        # deferred: keeps import runetensor fast (only Dask's tokens need it)
        import uuid
        return ("runetensor.Tensor", uuid.uuid4().hex)  # no stable token (a traced value, Python objects)
    # deferred: optional dependency, loaded on first use (and a heavy import)
    from dask.base import normalize_token
    return ("runetensor.Tensor", be.name, self._dtype.name, self.shape, normalize_token(be.to_host(self._data)))


def _finalize(results: Any, fin: Callable, args: tuple, dtype: D.DType) -> Tensor:
    """``dask.compute``'s last step for a tensor: the chunks joined by dask.array's own finalizer, then
    wrapped as a NumPy-backend tensor."""
    nb = get_backend("numpy")
    h, _ = nb.asarray(fin(results, *args), None, None)
    return wrap(h, dtype, nb)


def _rebuild(dsk: Any, rebuild: Callable, state: tuple, dtype: D.DType, rename: Any = None) -> Tensor:
    """``dask.persist``'s last step for a tensor: a new Dask tensor over the persisted chunks."""
    # deferred: keeps import runetensor fast (the Dask backend imports Dask)
    from ._backend.dask_backend import DaskHandle
    be = get_backend("dask")
    return wrap(DaskHandle(rebuild(dsk, *state, rename=rename)), dtype, be)


def _dask_postcompute(self: Tensor) -> tuple:
    fin, args = _arr(_require_dask(self, "__dask_postcompute__")).__dask_postcompute__()
    return _finalize, (fin, tuple(args), self._dtype)


def _dask_postpersist(self: Tensor) -> tuple:
    rebuild, state = _arr(_require_dask(self, "__dask_postpersist__")).__dask_postpersist__()
    return _rebuild, (rebuild, tuple(state), self._dtype)


def _dask_optimize(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    # deferred: optional dependency, loaded on first use (and a heavy import)
    import dask.array as da
    return da.Array.__dask_optimize__(dsk, keys, **kwargs)


def _dask_scheduler(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    """Dask's default scheduler for tensors: the local threaded one (as ``dask.array``); an active
    ``distributed.Client`` takes precedence, as for every collection."""
    # deferred: optional dependency, loaded on first use (and a heavy import)
    import dask.threaded
    return dask.threaded.get(dsk, keys, **kwargs)


def _chunks(self: Tensor) -> tuple[tuple[int, ...], ...] | None:
    """The chunk sizes of a Dask tensor along each axis (Dask's tuple of tuples); None for other backends.

    >>> import runetensor as rt
    >>> rt.zeros(rt.float32, [5, 4], backend="dask").rechunk((2, 4)).chunks
    ((2, 2, 1), (4,))
    """
    return tuple(tuple(int(n) for n in c) for c in _arr(self).chunks) if _is_dask(self) else None


# ---------------------------------------------------------------------------------------------
# persist, rechunk, map_blocks
# ---------------------------------------------------------------------------------------------
def persist(*tensors: Any, **kwargs: Any) -> tuple:
    """Compute Dask tensors into memory (the workers' memory with a ``distributed.Client``): Dask tensors
    whose graphs are their computed chunks, so later work does not recompute or re-send their inputs.

    Other arguments (tensors of other backends, anything else) are returned as they are.

    Args:
        *tensors: the tensors (computed together: shared work is done once).
        **kwargs: passed to ``dask.persist`` (``scheduler=``, ``optimize_graph=``...).
    Returns:
        A tuple with one entry per argument (as ``dask.persist``; ``t.persist()`` returns the tensor).

    >>> import runetensor as rt
    >>> x = rt.rand(rt.float32, [1000], seed=0, backend="dask")
    >>> y, z = rt.persist(x * 2, x + 1)
    >>> len(y.__dask_graph__()) == y._data.arr.npartitions   # the chunks only, no generator tasks
    True
    """
    # deferred: optional dependency, loaded on first use (and a heavy import)
    import dask
    return tuple(dask.persist(*tensors, traverse=False, **kwargs))


def _persist_method(self: Tensor, **kwargs: Any) -> Tensor:
    """This tensor computed into memory (see :func:`persist`); ``self`` for other backends."""
    return persist(self, **kwargs)[0]


def rechunk(t: Tensor, chunks: Any) -> Tensor:
    """A Dask tensor with the same values in other chunks (``chunks`` as ``dask.array`` takes them: an int,
    a tuple per axis, ``"auto"``, ``-1`` for a whole axis, a dict ``{axis: size}``).

    Raises:
        TypeError: for a tensor of another backend.
        ValueError: for chunks that do not fit the shape.

    >>> import runetensor as rt
    >>> x = rt.arange(rt.int32, 0, 10, 1, backend="dask")
    >>> rt.rechunk(x, 3).chunks
    ((3, 3, 3, 1),)
    >>> print(rt.rechunk(x, 3)[4:7])
    [4, 5, 6]
    """
    return _rechunk(t, chunks, "rechunk")


def _rechunk(t: Tensor, chunks: Any, fname: str) -> Tensor:
    t = _require_dask(t, fname)
    # deferred: keeps import runetensor fast (the Dask backend imports Dask)
    from ._backend.dask_backend import DaskHandle
    a = _arr(t)
    # deferred: optional dependency, loaded on first use (and a heavy import)
    from dask.array.core import normalize_chunks
    try:
        r = a.rechunk(normalize_chunks(chunks, a.shape, dtype=a.dtype, previous_chunks=a.chunks)
                      if isinstance(chunks, (tuple, list)) else chunks)
    except (ValueError, TypeError, NotImplementedError) as e:
        raise ValueError(f"{fname}: chunks {chunks!r} do not fit shape {t.shape}: {e}") from None
    return wrap(DaskHandle(r), t._dtype, t._backend)


def _rechunk_method(self: Tensor, chunks: Any) -> Tensor:
    """This tensor's values in other chunks: :func:`rechunk`."""
    return _rechunk(self, chunks, "rechunk")


def _call_block(*blocks: Any, fn: Callable, dtypes: tuple, out: D.DType, kwargs: dict) -> Any:
    """Runs in the workers: the blocks as NumPy-backend tensors, ``fn``'s result as an ndarray."""
    nb = get_backend("numpy")
    ts = [wrap(nb.asarray(b, None, None)[0], d, nb) for b, d in zip(blocks, dtypes)]
    r = fn(*ts, **kwargs)
    if isinstance(r, Tensor):
        if r._backend is not nb:
            r = r.to_backend("numpy")
        got, h = r._dtype, r._data
    else:
        h, got = nb.asarray(r, None, None)
    if got is not out:
        raise TypeError(f"map_blocks: {getattr(fn, '__name__', fn)!r} returned a {got} block; "
                        f"expected {out} (pass dtype=)")
    return nb.to_host(h)


def map_blocks(fn: Callable, *tensors: Any, dtype: Any = None, chunks: Any = None, drop_axis: Any = None,
               new_axis: Any = None, **kwargs: Any) -> Tensor:
    """A Dask tensor whose every block is ``fn`` of the matching blocks of ``tensors`` (the escape hatch:
    anything runetensor computes on one block, run block by block, lazily).

    ``fn`` receives each block as a tensor of the NumPy backend and returns a tensor (or an array) of
    the block's result, as ``dask.array.map_blocks`` (whose rules for ``chunks``, ``drop_axis`` and
    ``new_axis`` apply: they describe the result's blocks when ``fn`` changes their shape).

    Args:
        fn: the function of the blocks; runs in the workers (it must pickle for a distributed cluster).
        *tensors: Dask tensors (tensors of other backends are moved with ``to_backend("dask")``);
            their blocks are aligned as ``dask.array.blockwise`` aligns them (broadcasting).
        dtype: the result's dtype; by default found by calling ``fn`` on empty (or one-element) blocks.
        chunks, drop_axis, new_axis: as ``dask.array.map_blocks``.
        **kwargs: passed to ``fn``.
    Returns:
        A Dask tensor.
    Raises:
        TypeError: without tensors, for a non-callable ``fn``, when ``dtype`` cannot be found by calling
            ``fn`` on empty or one-element blocks (pass ``dtype=``), or when a block's result has another dtype.

    >>> import numpy as np, runetensor as rt
    >>> x = rt.asarray(np.arange(8.0), backend="dask", chunks=4)
    >>> y = rt.map_blocks(lambda b: b - rt.mean(b), x)      # centre each block
    >>> print(y)
    [-1.5, -0.5, 0.5, 1.5, -1.5, -0.5, 0.5, 1.5]
    """
    if not callable(fn):
        raise TypeError(f"map_blocks: fn must be callable, got {type(fn).__name__}")
    if not tensors:
        raise TypeError("map_blocks: expected at least one tensor")
    ts = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"map_blocks: argument {i} must be a Tensor, got {type(t).__name__} "
                            "(pass other values as keyword arguments)")
        ts.append(t if _is_dask(t) else t.to_backend("dask"))
    # deferred: keeps import runetensor fast (the Dask backend imports Dask)
    from ._backend.dask_backend import map_blocks_handle
    dtypes = tuple(t._dtype for t in ts)
    if dtype is None:
        nb = get_backend("numpy")
        probe: Any = None
        for n in (0, 1):  # empty blocks, then one-element blocks (reductions have no empty result)
            try:
                probe = fn(*(wrap(nb.full((n,) * t.ndim, 1, t._dtype), t._dtype, nb) for t in ts), **kwargs)
                break
            except Exception as e:
                err = e
        else:
            raise TypeError(f"map_blocks: could not find the result dtype by calling {getattr(fn, '__name__', fn)!r} "
                            f"on small blocks ({type(err).__name__}: {err}); pass dtype=") from None
        out = probe._dtype if isinstance(probe, Tensor) else nb.asarray(probe, None, None)[1]
    else:
        out = D.dtype_of(dtype)
    name = getattr(fn, "__name__", type(fn).__name__).strip("<>") or "fn"
    h = map_blocks_handle(_call_block, [_arr(t) for t in ts], out, chunks, drop_axis, new_axis,
                          f"rt-map_blocks-{name}", fn=fn, dtypes=dtypes, out=out, kwargs=kwargs)
    return wrap(h, out, get_backend("dask"))


# ---------------------------------------------------------------------------------------------
# copy.copy / copy.deepcopy keep the backend
# ---------------------------------------------------------------------------------------------
def _shallow_copy(self: Tensor) -> Tensor:
    be = self._backend
    if be.level == 0 and self._dtype is not D.object_:
        return wrap(be.copy(self._data), self._dtype, be)
    fn, args = self.__reduce__()
    return fn(*args)


def _deepcopy(self: Tensor, memo: dict) -> Tensor:
    be = self._backend
    if be.level == 0 and self._dtype is not D.object_:
        r = wrap(be.copy(self._data), self._dtype, be)
    else:
        fn, args = self.__reduce__()
        r = fn(*_copy.deepcopy(args, memo))
    memo[id(self)] = r
    return r


_shallow_copy.__doc__ = "``copy.copy(t)``: a copy of the values on the tensor's own backend (a Dask tensor stays lazy)."
_deepcopy.__doc__ = "``copy.deepcopy(t)``: as ``copy.copy`` (Python objects of an object tensor are deep-copied)."

Tensor.__dask_graph__ = _dask_graph  # type: ignore[attr-defined]
Tensor.__dask_keys__ = _dask_keys  # type: ignore[attr-defined]
Tensor.__dask_layers__ = _dask_layers  # type: ignore[attr-defined]
Tensor.__dask_tokenize__ = _dask_tokenize  # type: ignore[attr-defined]
Tensor.__dask_postcompute__ = _dask_postcompute  # type: ignore[attr-defined]
Tensor.__dask_postpersist__ = _dask_postpersist  # type: ignore[attr-defined]
Tensor.__dask_optimize__ = staticmethod(_dask_optimize)  # type: ignore[attr-defined]
Tensor.__dask_scheduler__ = staticmethod(_dask_scheduler)  # type: ignore[attr-defined]
Tensor.chunks = property(_chunks, doc=_chunks.__doc__)  # type: ignore[attr-defined]
Tensor.persist = _persist_method  # type: ignore[attr-defined]
Tensor.rechunk = _rechunk_method  # type: ignore[attr-defined]
Tensor.__copy__ = _shallow_copy  # type: ignore[attr-defined]
Tensor.__deepcopy__ = _deepcopy  # type: ignore[attr-defined]
