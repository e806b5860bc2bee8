"""The batching transformation (``rt.vmap``) as a tracer backend over the contract.

A :class:`BatchTracer` wraps a handle of the parent backend that holds every lane of a batch
along one axis, ``bdim`` (``None``: the same value for every lane).  The frontend sees the
*logical* shape (without the batch axis).  Each primitive moves or carries the batch axis and
calls the parent's primitive once for all lanes: nothing loops over the batch in Python.  The
methods are generated from the contract (:mod:`._tracer`); each primitive's batching rule is the
``batch`` entry of its row in the primitive table (:mod:`._batch_rules`), which
:meth:`BatchBackend.process` calls.

Writes: writing a batched value into a tensor created inside the function that is not batched
yet makes its buffer batched (a broadcast copy); views taken before re-derive themselves from
their root.  Writing a batched value into a tensor created outside the function raises.
Reading a batched value as a Python scalar (``float(t)``, ``bool(t)``, ``if t > 0:``) raises
``ValueError`` pointing to ``rt.where``/``rt.cond``.
"""
from __future__ import annotations

import math
from typing import Any

from .. import _dtypes as D
from .._backend.contract import Backend, BatchedValueError
from .._primitives import PRIMS, inv_perm
from .._primitives import reshape as _reshape
from ._batch_rules import BATCH_RULES as _RULES
from ._base import Transformation

_SCALARS = (int, float, complex, bool)
#: what each host read is called in the error for a value that differs from lane to lane
_READS = {"to_host": "reading a tensor's values", "to_list": "converting to a Python value", "to_bytes": "to_bytes",
          "dlpack": "__dlpack__"}


class BatchTracer:
    """A handle of a :class:`BatchBackend`: all lanes in one parent handle, batched along ``bdim``."""

    __slots__ = ("trace", "primal", "bdim", "shape", "ndim", "size", "base", "recipe", "version")

    def __init__(self, trace: "BatchBackend", primal: Any, bdim: int | None):
        self.trace = trace
        self.primal = primal
        self.bdim = bdim
        s = primal.shape
        if bdim is not None:
            s = s[:bdim] + s[bdim + 1:]
        self.shape = s
        self.ndim = len(s)
        self.size = math.prod(s)
        self.base: BatchTracer | None = None
        self.recipe: tuple = ()
        self.version = 0

    def __repr__(self) -> str:
        return f"BatchTracer({self.trace.name}, shape={self.shape}, bdim={self.bdim})"


def _h(x: Any) -> bool:
    return x is not None and type(x) not in _SCALARS and hasattr(x, "shape")


def _h(x: Any) -> bool:
    return x is not None and type(x) not in _SCALARS and hasattr(x, "shape")


class BatchBackend(Transformation):
    """The backend of one ``vmap``: batch size ``n`` over the parent backend."""

    view_state = ("primal", "bdim")

    def __init__(self, parent: Backend, n: int, axis_name: Any = None):
        super().__init__(parent)
        self.n = n
        self.name = f"vmap{self.level}"
        #: the name collectives (``rt.psum(x, axis_name)``...) use to reduce over this batch axis
        self.axis_name = axis_name

    # ------------------------------------------------------------------ handles
    def owns(self, h: Any) -> bool:
        return type(h) is BatchTracer and h.trace is self

    _own = owns

    def _in(self, h: Any) -> tuple[Any, int | None]:
        if type(h) is BatchTracer and h.trace is self:
            b = h.base
            if b is not None and h.version != b.version:
                self.fresh(h)
            return h.primal, h.bdim
        return h, None

    def unwrap(self, h: Any) -> Any:
        return self._in(h)[0]

    def constant_value(self, h: Any) -> Any:
        """The parent-level value of a handle that is the same in every lane (an index, a value
        written into a tensor created outside the function).

        Raises:
            ValueError: if it differs from lane to lane.
        """
        p, bd = self._in(h)
        if bd is not None:
            raise ValueError("cannot write a value that differs from lane to lane into a tensor created outside "
                             "the vmapped function; create the tensor inside it")
        return p

    def _w(self, p: Any, bd: int | None) -> BatchTracer:
        return BatchTracer(self, p, bd)

    def _w_all(self, r: Any, bd: int | None) -> Any:
        if isinstance(r, tuple):
            return tuple(self._w_all(x, bd) for x in r)
        return self._w(r, bd) if _h(r) else r

    def _mv0(self, p: Any, bd: int | None) -> Any:
        """``p`` with its batch axis first (a view)."""
        if bd is None or bd == 0:
            return p
        nd = p.ndim
        return self.parent.permute(p, (bd,) + tuple(i for i in range(nd) if i != bd))

    def _b0(self, h: Any, rank: int | None = None) -> tuple[Any, bool]:
        """The parent handle with the batch axis first, padded with size-1 axes after it to
        ``rank`` logical axes (so it broadcasts against unbatched operands); (h, False) when
        ``h`` is not batched."""
        p, bd = self._in(h)
        if bd is None:
            return p, False
        p = self._mv0(p, bd)
        if rank is not None and p.ndim - 1 < rank:
            p = _reshape(self.parent, p, (p.shape[0],) + (1,) * (rank - p.ndim + 1) + p.shape[1:])
        return p, True

    def _bcast0(self, h: Any) -> Any:
        """``h`` as a batched parent handle with the batch axis first (broadcast if unbatched)."""
        p, bd = self._in(h)
        if bd is None:
            P = self.parent
            p = P.expand(_reshape(P, p, (1,) + p.shape), (self.n,) + p.shape)
            return p
        return self._mv0(p, bd)

    def _fresh(self, r: Any) -> Any:
        """A computed batch-first result laid out lane by lane: NumPy lays a result out in its
        input's memory order, so an input batched along an inner axis (``in_axes=1``) would give
        lanes that interleave, and ``rt.reshape`` of a lane (a view only) would fail under
        ``vmap`` where it works on each lane alone.  Copied (C order) when the batch axis is not
        the outermost in memory."""
        if isinstance(r, tuple):
            return tuple(self._fresh(x) for x in r)
        P = self.parent
        if not _h(r) or r.ndim < 2 or r.shape[0] < 2 or P.is_c_contiguous(r):
            return r
        st = P.strides(r)
        inner = [abs(s) for s, d in zip(st[1:], r.shape[1:]) if d > 1]
        if inner and abs(st[0]) < max(inner):
            return P.copy(r)
        return r

    # ------------------------------------------------------------------ the hooks of the generated methods
    def process(self, name, fn, hs, params):
        return _RULES[name](self, name, fn, hs, params)

    def move_rule(self, name, fn, h, params):
        return _RULES[name](self, name, fn, (h,), params)

    def write(self, name, dst, src, key, mode):
        if key is None:
            PRIMS["assign"].batch(self, "assign", None, (dst, src), {})
        else:
            PRIMS["scatter"].batch(self, "scatter", None, (dst, src), {"key": tuple(key), "mode": mode})

    def host_value(self, x: Any, name: str) -> Any:
        """The parent handle of ``x`` for a read of its values to the host.

        Raises:
            BatchedValueError: if ``x`` differs from lane to lane.
        """
        p, bd = self._in(x)
        if bd is not None:
            raise BatchedValueError(f"{_READS.get(name, name)}: this value differs from lane to lane under vmap and "
                                    "cannot be read as one value; select with rt.where or branch with rt.cond / "
                                    "rt.while_loop instead")
        return p

    def strides(self, h):
        p, bd = self._in(h)
        s = self.parent.strides(p)
        return s if bd is None else s[:bd] + s[bd + 1:]

    def is_c_contiguous(self, h):
        p, bd = self._in(h)
        return self.parent.is_c_contiguous(p) and bd in (None, 0)

    def lanes(self, x: Any) -> tuple[Backend, Any] | None:
        """``(parent, handle)`` with every lane of ``x`` along a leading axis (for printing), or
        None when ``x`` is the same in every lane."""
        p, bd = self._in(x)
        return None if bd is None else (self.parent, self._mv0(p, bd))

    # ------------------------------------------------------------------ indexing (the gather and scatter rules)
    def _batched_key(self, key: tuple, x_batched: bool) -> tuple[tuple, Any, int]:
        """A parent-level key for all lanes and how to find the batch axis in the result.

        Returns ``(key', perm_info, bdim)``: ``key'`` indexes the parent handle (batch axis first
        when ``x_batched``); the result's batch axis is ``bdim`` after the permutation (if any)
        described by ``perm_info`` (None or a permutation)."""
        P = self.parent
        n = self.n
        if any(_h(k) for k in key):
            expanded = []
            for k in key:
                if _h(k) and P.dtype(self._in(k)[0]).kind == "b":
                    kp, kbd = self._in(k)
                    if kbd is not None:
                        raise ValueError("gather: a boolean mask that differs from lane to lane has a "
                                         "value-dependent result shape and cannot be batched under vmap; use rt.where")
                    expanded.extend(P.nonzero(kp))
                else:
                    expanded.append(k)
            key = tuple(expanded)
        adv_pos = [i for i, k in enumerate(key) if _h(k) or (isinstance(k, int) and not isinstance(k, bool))]
        arrays = [i for i, k in enumerate(key) if _h(k)]
        batched_idx = [i for i in arrays if self._in(key[i])[1] is not None]
        if not arrays or (not batched_idx and not x_batched):
            k2 = tuple(self._in(k)[0] if _h(k) else k for k in key)
            if x_batched:
                return (slice(0, n, 1),) + k2, None, 0
            return k2, None, -1
        if not arrays:
            adv_pos = []
        # advanced indexing: bring the batch in as one more index array, first
        adv_rank = 0
        for i in arrays:
            adv_rank = max(adv_rank, key[i].ndim)
        k2 = []
        for i, k in enumerate(key):
            if _h(k):
                p, bd = self._in(k)
                if bd is not None:
                    p = self._mv0(p, bd)
                    p = _reshape(P, p, (n,) + (1,) * (adv_rank - (p.ndim - 1)) + p.shape[1:])
                k2.append(p)
            else:
                k2.append(k)
        contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos))) if adv_pos else True
        # the logical result: advanced dims at adv_pos[0] (contiguous) or first
        n_before = sum(1 for k in key[:adv_pos[0]] if not (isinstance(k, int) and not isinstance(k, bool)))
        if x_batched:
            bidx = _reshape(P, P.arange(0, n, 1, D.int64), (n,) + (1,) * adv_rank)
            k2 = [bidx] + k2
            # parent: advanced (batch, adv...) adjacent only if the logical block starts at 0
            phys_first = not (contiguous and adv_pos[0] == 0)
            if phys_first:
                # parent result: (n, adv..., other dims in order); logical (per lane): before, adv, after
                if contiguous:
                    # move the adv block after the n_before leading slice dims
                    return tuple(k2), ("adv_first", n_before, adv_rank), 0
                return tuple(k2), None, 0
            return tuple(k2), None, 0
        # x unbatched, some index batched: the batch axis is the first advanced dim
        return tuple(k2), None, (n_before if contiguous else 0)

    @staticmethod
    def _adv_perm(nd: int, info: Any) -> tuple:
        """The permutation from the parent's layout (n, adv, before, after) to the logical one
        (n, before, adv, after)."""
        _, n_before, adv_rank = info
        return (0,) + tuple(range(1 + adv_rank, 1 + adv_rank + n_before)) + tuple(range(1, 1 + adv_rank)) + \
            tuple(range(1 + adv_rank + n_before, nd))

    def _fix_adv(self, r: Any, info: Any) -> Any:
        if info is None:
            return r
        return self.parent.permute(r, self._adv_perm(r.ndim, info))

    def _batch_root(self, dst: Any, op: str) -> None:
        """Make the buffer under ``dst`` batched (a broadcast copy), for a batched write."""
        if not self._own(dst):
            raise ValueError(f"{op}: cannot write a value that differs from lane to lane into a tensor created "
                             "outside the vmapped function; create the tensor inside it")
        root = dst.base or dst
        if root.bdim is None:
            root.primal = self.parent.copy(self._bcast0(root))
            root.bdim = 0
            root.version += 1
        if dst is not root:
            self.fresh(dst)



def move_out(B: BatchBackend, h: Any, axis: int) -> Any:
    """A parent handle with the batch axis at ``axis`` (broadcast when ``h`` is not batched)."""
    P = B.parent
    p = B._bcast0(h) if _h(h) else None
    nd = p.ndim
    if axis == 0:
        return p
    perm = list(range(1, nd))
    perm.insert(axis, 0)
    return P.permute(p, tuple(perm))


__all__ = ["BatchBackend", "BatchTracer", "BatchedValueError", "move_out", "inv_perm"]
