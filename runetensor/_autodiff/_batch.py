"""The batching transformation (``rt.vmap``) as a tracer backend over the contract.

A :class:`BatchTracer` wraps a handle of the parent backend that holds every lane of a batch
along one axis, ``bdim`` (``None``: the same value for every lane).  The frontend sees the
*logical* shape (without the batch axis).  Each primitive moves or carries the batch axis and
calls the parent's primitive once for all lanes: nothing loops over the batch in Python.  The
rules are the ``batch`` entries of ``runetensor._primitives``... for most primitives the rule is
one of a few patterns (elementwise, axis-shifting, movement), so they are written here as
methods, one per primitive; the table test checks that every contract primitive has one.

Writes: writing a batched value into a tensor created inside the function that is not batched
yet makes its buffer batched (a broadcast copy); views taken before re-derive themselves from
their root.  Writing a batched value into a tensor created outside the function raises.
Reading a batched value as a Python scalar (``float(t)``, ``bool(t)``, ``if t > 0:``) raises
``ValueError`` pointing to ``rt.where``/``rt.cond``.
"""
from __future__ import annotations

import math
from typing import Any

from .._backend.contract import Backend, BatchedValueError
from .._primitives import inv_perm
from .._primitives import reshape as _reshape
from . import _delegate

_SCALARS = (int, float, complex, bool)


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


class BatchBackend(Backend):
    """The backend of one ``vmap``: batch size ``n`` over the parent backend."""

    def __init__(self, parent: Backend, n: int, axis_name: Any = None):
        self.parent = parent
        self.level = parent.level + 1
        self.n = n
        self.name = f"vmap{self.level}"
        #: the name collectives (``rt.psum(x, axis_name)``...) use to reduce over this batch axis
        self.axis_name = axis_name

    # ------------------------------------------------------------------ handles
    def _own(self, h: Any) -> bool:
        return type(h) is BatchTracer and h.trace is self

    def _in(self, h: Any) -> tuple[Any, int | None]:
        if type(h) is BatchTracer and h.trace is self:
            b = h.base
            if b is not None and h.version != b.version:
                self._refresh(h)
            return h.primal, h.bdim
        return h, None

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

    def _elementwise(self, fn: Any, *ins: Any) -> Any:
        rank = max((h.ndim for h in ins if _h(h)), default=0)
        ps = []
        batched = False
        for h in ins:
            if _h(h):
                p, b = self._b0(h, rank)
                batched = batched or b
                ps.append(p)
            else:
                ps.append(h)
        if batched:
            return self._w_all(self._fresh(fn(*ps)), 0)
        return self._w_all(fn(*ps), None)

    def _axis_op(self, h: Any, fn: Any) -> Any:
        """Apply ``fn(parent_handle, shift)`` where ``shift`` is 1 for a batched input (batch axis
        first) and 0 otherwise; the result keeps the batch axis first."""
        p, bd = self._in(h)
        if bd is None:
            return self._w_all(fn(p, 0), None)
        return self._w_all(self._fresh(fn(self._mv0(p, bd), 1)), 0)

    # ------------------------------------------------------------------ views
    def _view(self, name: str, h: Any, params: dict, fn: Any) -> Any:
        out = fn(h)
        if out is None:
            return None
        if self._own(h):
            root = h.base or h
            out.base = root
            out.recipe = h.recipe + ((name, params),)
            out.version = root.version
        return out

    def _refresh(self, h: BatchTracer) -> None:
        root = h.base
        cur: Any = root
        for name, params in h.recipe:
            cur = getattr(self, "_mv_" + name)(cur, **params)
        h.primal, h.bdim = cur.primal, cur.bdim
        h.version = root.version

    def _mv_reshape(self, h, shape):
        p, bd = self._in(h)
        if bd is None:
            r = self.parent.reshape(p, shape)
            return None if r is None else self._w(r, None)
        r = self.parent.reshape(self._mv0(p, bd), (self.n,) + tuple(shape))
        return None if r is None else self._w(r, 0)

    def _mv_expand(self, h, shape):
        p, bd = self._in(h)
        if bd is None:
            return self._w(self.parent.expand(p, shape), None)
        p, _ = self._b0(h, len(shape))
        return self._w(self.parent.expand(p, (self.n,) + tuple(shape)), 0)

    def _mv_permute(self, h, axes):
        p, bd = self._in(h)
        if bd is None:
            return self._w(self.parent.permute(p, axes), None)
        return self._w(self.parent.permute(self._mv0(p, bd), (0,) + tuple(a + 1 for a in axes)), 0)

    def _mv_view_index(self, h, key):
        p, bd = self._in(h)
        if bd is None:
            return self._w(self.parent.view_index(p, key), None)
        return self._w(self.parent.view_index(self._mv0(p, bd), (slice(0, self.n, 1),) + tuple(key)), 0)

    def _mv_flip(self, h, axes):
        p, bd = self._in(h)
        if bd is None:
            return self._w(self.parent.flip(p, axes), None)
        return self._w(self.parent.flip(self._mv0(p, bd), tuple(a + 1 for a in axes)), 0)

    def _mv_as_strided(self, h, shape, strides, offset):
        P = self.parent
        p, bd = self._in(h)
        if bd is None:
            return self._w(P.as_strided(p, shape, strides, offset), None)
        sb = P.strides(p)[bd]
        lo = offset + sum(min(0, (d - 1) * s) for d, s in zip(shape, strides)) + min(0, (self.n - 1) * sb)
        hi = offset + sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + max(0, (self.n - 1) * sb)
        if math.prod(shape) and (lo < 0 or hi >= P.buffer_size(p)):
            raise ValueError("as_strided: under vmap the view must stay inside every lane's data")
        return self._w(P.as_strided(p, (self.n,) + tuple(shape), (sb,) + tuple(strides), offset), 0)

    def reshape(self, h, shape):
        return self._view("reshape", h, {"shape": tuple(shape)}, lambda x: self._mv_reshape(x, tuple(shape)))

    def expand(self, h, shape):
        return self._view("expand", h, {"shape": tuple(shape)}, lambda x: self._mv_expand(x, tuple(shape)))

    def permute(self, h, axes):
        return self._view("permute", h, {"axes": tuple(axes)}, lambda x: self._mv_permute(x, tuple(axes)))

    def view_index(self, h, key):
        return self._view("view_index", h, {"key": tuple(key)}, lambda x: self._mv_view_index(x, tuple(key)))

    def flip(self, h, axes):
        return self._view("flip", h, {"axes": tuple(axes)}, lambda x: self._mv_flip(x, tuple(axes)))

    def as_strided(self, h, shape, strides, offset):
        prm = {"shape": tuple(shape), "strides": tuple(strides), "offset": offset}
        return self._view("as_strided", h, prm, lambda x: self._mv_as_strided(x, **prm))

    # ------------------------------------------------------------------ introspection, host reads
    capabilities = property(_delegate.capabilities)  # the parent's: the batch computes on its handles
    require = _delegate.require
    dtype = _delegate.dtype
    offset = _delegate.offset
    buffer_size = _delegate.buffer_size
    shares_memory = _delegate.shares_memory
    value_range = _delegate.value_range  # over every lane: what validation needs
    dlpack_device = _delegate.dlpack_device
    to_host = _delegate.to_host
    to_list = _delegate.to_list
    to_bytes = _delegate.to_bytes
    dlpack = _delegate.dlpack

    def strides(self, h):
        p, bd = self._in(h)
        s = self.parent.strides(p)
        return s if bd is None else s[:bd] + s[bd + 1:]

    def is_c_contiguous(self, h):
        p, bd = self._in(h)
        return self.parent.is_c_contiguous(p) and bd in (None, 0)

    def _host(self, x: Any, what: str) -> Any:
        """The parent handle of ``x`` for a read of its values to the host.

        Raises:
            BatchedValueError: if ``x`` differs from lane to lane.
        """
        p, bd = self._in(x)
        if bd is not None:
            raise BatchedValueError(f"{what}: this value differs from lane to lane under vmap and cannot be read "
                                    "as one value; select with rt.where or branch with rt.cond / rt.while_loop "
                                    "instead")
        return p

    def lanes(self, x: Any) -> tuple[Backend, Any] | None:
        """``(parent, handle)`` with every lane of ``x`` along a leading axis (for printing), or
        None when ``x`` is the same in every lane."""
        p, bd = self._in(x)
        return None if bd is None else (self.parent, self._mv0(p, bd))

    # ------------------------------------------------------------------ creation (unbatched)
    def empty(self, shape, dtype):
        return self._w(self.parent.empty(shape, dtype), None)

    def full(self, shape, value, dtype):
        return self._w(self.parent.full(shape, value, dtype), None)

    def arange(self, start, stop, step, dtype):
        return self._w(self.parent.arange(start, stop, step, dtype), None)

    def asarray(self, obj, dtype, copy):
        if self._own(obj):
            obj = obj.primal
        h, d = self.parent.asarray(obj, dtype, copy)
        return self._w(h, None), d

    def random_bits(self, seed, n):
        return self._w(self.parent.random_bits(seed, n), None)

    def random_uniform(self, seed, n, dtype):
        return self._w(self.parent.random_uniform(seed, n, dtype), None)

    def from_buffer(self, buf, dtype, shape, offset):
        return self._w(self.parent.from_buffer(buf, dtype, shape, offset), None)

    def from_dlpack(self, obj, copy):
        h, d = self.parent.from_dlpack(obj, copy)
        return self._w(h, None), d

    # ------------------------------------------------------------------ elementwise
    def unary(self, op, x, out=None):
        r = self._elementwise(lambda a: self.parent.unary(op, a), x)
        if out is not None:
            self.assign(out, r)
            return out
        return r

    def binary(self, op, x, y, out=None):
        r = self._elementwise(lambda a, b: self.parent.binary(op, a, b), x, y)
        if out is not None:
            self.assign(out, r)
            return out
        return r

    def where(self, cond, x, y):
        return self._elementwise(self.parent.where, cond, x, y)

    def clip(self, x, lo, hi):
        return self._elementwise(self.parent.clip, x, lo, hi)

    def cast(self, x, dtype):
        p, bd = self._in(x)
        if bd is None:
            return self._w(self.parent.cast(p, dtype), None)
        return self._w(self._fresh(self.parent.cast(self._mv0(p, bd), dtype)), 0)

    # ------------------------------------------------------------------ reductions, scans, sorting
    def reduce(self, op, x, axes, keepdims):
        return self._axis_op(x, lambda p, k: self.parent.reduce(op, p, tuple(a + k for a in axes), keepdims))

    def arg_reduce(self, op, x, axis, keepdims):
        return self._axis_op(x, lambda p, k: self.parent.arg_reduce(op, p, axis + k, keepdims))

    def scan(self, op, x, axis):
        return self._axis_op(x, lambda p, k: self.parent.scan(op, p, axis + k))

    def sort(self, x, axis, descending):
        return self._axis_op(x, lambda p, k: self.parent.sort(p, axis + k, descending))

    def argsort(self, x, axis, descending):
        return self._axis_op(x, lambda p, k: self.parent.argsort(p, axis + k, descending))

    def searchsorted(self, sorted_, values, side):
        P = self.parent
        sp, sb = self._in(sorted_)
        vp, vb = self._in(values)
        if sb is None:
            return self._w(P.searchsorted(sp, vp, side), vb)
        # a sorted array per lane: count the elements before each value (vectorised comparisons)
        s0 = self._mv0(sp, sb)                                   # (n, m)
        v0 = self._bcast0(values)                                # (n, *vs)
        vs = v0.shape[1:]
        s_b = _reshape(P, s0, (self.n,) + (1,) * len(vs) + (s0.shape[1],))
        v_b = _reshape(P, v0, v0.shape + (1,))
        from .. import _dtypes as D
        if side == "left":  # NaN orders last: a value NaN counts every non-NaN element before it
            before = P.binary("logical_or", P.binary("lt", s_b, v_b),
                              P.binary("logical_and", P.unary("isnan", v_b), P.unary("logical_not",
                                                                                       P.unary("isnan", s_b))))
        else:
            before = P.binary("logical_or", P.binary("le", s_b, v_b), P.unary("isnan", v_b))
        cnt = P.reduce("sum", P.cast(before, D.int64), (v_b.ndim - 1,), False)
        return self._w(cnt, 0)

    def nonzero(self, x):
        p, bd = self._in(x)
        if bd is not None:
            raise ValueError("nonzero: the number of results depends on the values, so it cannot be batched "
                             "under vmap; use rt.where with a fixed shape instead")
        return self._w_all(self.parent.nonzero(p), None)

    # ------------------------------------------------------------------ gather / scatter
    def _batched_key(self, key: tuple, x_batched: bool) -> tuple[tuple, Any, int]:
        """A parent-level key for all lanes and how to find the batch axis in the result.

        Returns ``(key', perm_info, bdim)``: ``key'`` indexes the parent handle (batch axis first
        when ``x_batched``); the result's batch axis is ``bdim`` after the permutation (if any)
        described by ``perm_info`` (None or a permutation)."""
        from .. import _dtypes as D
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

    def gather(self, x, key):
        p, bd = self._in(x)
        xb = bd is not None
        if xb:
            p = self._mv0(p, bd)
        k2, info, rbd = self._batched_key(tuple(key), xb)
        r = self.parent.gather(p, k2)
        if rbd < 0:
            return self._w(r, None)
        return self._w(self._fix_adv(r, info), rbd)

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
            self._refresh(dst)

    def assign(self, dst, src):
        P = self.parent
        sp, sb = self._in(src) if _h(src) else (src, None)
        dp, db = self._in(dst)
        if sb is not None and db is None:
            self._batch_root(dst, "assign")
            dp, db = self._in(dst)
        if db is None:
            P.assign(dp, sp)
            return
        d0 = self._mv0(dp, db)
        if sb is not None:
            sp, _ = self._b0(src, dst.ndim)
        P.assign(d0, sp)

    def scatter(self, x, key, values, mode="set"):
        P = self.parent
        vb = self._in(values)[1] if _h(values) else None
        kb = any(_h(k) and self._in(k)[1] is not None for k in key)
        dp, db = self._in(x)
        if (vb is not None or kb) and db is None:
            self._batch_root(x, "scatter")
            dp, db = self._in(x)
        if db is None:
            P.scatter(dp, tuple(self._in(k)[0] if _h(k) else k for k in key),
                      self._in(values)[0] if _h(values) else values, mode)
            return
        d0 = self._mv0(dp, db)
        k2, info, _ = self._batched_key(tuple(key), True)
        v = values
        if _h(values):
            sel_shape = self.gather(x, key).shape  # the selection's logical shape
            vp, vbd = self._in(values)
            if vbd is not None:
                v, _ = self._b0(values, len(sel_shape))
            else:
                v = _reshape(P, vp, (1,) * (len(sel_shape) + 1 - vp.ndim) + vp.shape)
            if v.shape != (self.n,) + sel_shape:
                v = P.expand(v, (self.n,) + sel_shape)
            if info is not None:  # the parent's selection has the advanced dims first
                v = P.permute(v, inv_perm(self._adv_perm(v.ndim, info)))
        P.scatter(d0, k2, v, mode)

    # ------------------------------------------------------------------ memory
    def copy(self, x):
        p, bd = self._in(x)
        if bd not in (None, 0):
            p = self._mv0(p, bd)
        return self._w(self.parent.copy(p), None if bd is None else 0)

    def contiguous(self, x):
        p, bd = self._in(x)
        if bd is None:
            r = self.parent.contiguous(p)
            return x if r is p and self._own(x) else self._w(r, None)
        if bd == 0 and self.parent.is_c_contiguous(p):
            return x if self._own(x) else self._w(p, 0)
        return self._w(self.parent.copy(self._mv0(p, bd)), 0)

    # ------------------------------------------------------------------ products
    def matmul(self, a, b):
        P = self.parent
        pa, ba = self._in(a)
        pb, bb = self._in(b)
        if ba is None and bb is None:
            return self._w(P.matmul(pa, pb), None)
        ra, rb = a.ndim, b.ndim
        if bb is None and rb == 2 and ra >= 1:
            # per-lane x @ shared W: one matrix product with the lanes (and x's leading axes) as rows
            A = self._mv0(pa, ba)
            k = A.shape[-1]
            r = P.matmul(_reshape(P, A, (-1, k)), pb)
            return self._w(_reshape(P, r, A.shape[:-1] + (pb.shape[1],)), 0)
        if ba is None and ra == 2 and rb == 1:
            # shared M @ per-lane v: M @ V^T, the lanes as columns
            V = self._mv0(pb, bb)
            return self._w(P.matmul(pa, P.permute(V, (1, 0))), 1)
        A, _ = self._b0(a)
        Bm, _ = self._b0(b)
        n = self.n
        sq_a = sq_b = False
        if ra == 1:  # (k,) -> (1, k)
            A = _reshape(P, A, (n, 1, A.shape[1]) if ba is not None else (1, A.shape[0]))
            sq_a = True
        if rb == 1:  # (k,) -> (k, 1)
            Bm = _reshape(P, Bm, (n, Bm.shape[1], 1) if bb is not None else (Bm.shape[0], 1))
            sq_b = True
        la = A.ndim - (1 if ba is not None else 0)
        lb = Bm.ndim - (1 if bb is not None else 0)
        R = max(la, lb)
        if ba is not None and la < R:
            A = _reshape(P, A, (n,) + (1,) * (R - la) + A.shape[1:])
        if bb is not None and lb < R:
            Bm = _reshape(P, Bm, (n,) + (1,) * (R - lb) + Bm.shape[1:])
        if ba is None and la < R + 1:
            A = _reshape(P, A, (1,) * (R + 1 - la) + A.shape)
        if bb is None and lb < R + 1:
            Bm = _reshape(P, Bm, (1,) * (R + 1 - lb) + Bm.shape)
        r = P.matmul(A, Bm)
        if sq_a and sq_b:
            r = _reshape(P, r, r.shape[:-2])
        elif sq_a:
            r = _reshape(P, r, r.shape[:-2] + r.shape[-1:])
        elif sq_b:
            r = _reshape(P, r, r.shape[:-1])
        return self._w(r, 0)

    # ------------------------------------------------------------------ functional composites
    def concatenate(self, hs, axis):
        if all(self._in(h)[1] is None for h in hs):
            return self._w(self.parent.concatenate([self._in(h)[0] for h in hs], axis), None)
        return self._w(self.parent.concatenate([self._bcast0(h) for h in hs], axis + 1), 0)

    def pad(self, h, widths, value):
        P = self.parent
        if _h(value) and self._in(value)[1] is not None:
            # a fill value per lane: pad with zeros, then select the border from the values
            z = self.pad(h, widths, 0)
            inner = self.pad(self.full(h.shape, True, _bool()), widths, False)
            return self.where(inner, z, value)
        v = self._in(value)[0] if _h(value) else value
        p, bd = self._in(h)
        if bd is None:
            return self._w(P.pad(p, widths, v), None)
        return self._w(P.pad(self._mv0(p, bd), ((0, 0),) + tuple(tuple(w) for w in widths), v), 0)

    # ------------------------------------------------------------------ effects
    def callback(self, fn, hs):
        """``fn`` once per lane, in lane order, with that lane's slice of each batched value (the
        whole value for one that is the same in every lane): the parent calls the loop once."""
        ps = []
        lane = []
        for h in hs:
            p, bd = self._in(h)
            lane.append(bd is not None)
            ps.append(p if bd is None else self._mv0(p, bd))
        n = self.n

        def per_lane(*vals: Any) -> None:
            for i in range(n):
                fn(*[v[i] if b else v for v, b in zip(vals, lane)])
        self.parent.callback(per_lane, ps)

    # ------------------------------------------------------------------ linear algebra and FFT
    def linalg(self, op, *args, **params):
        P = self.parent
        if all(self._in(a)[1] is None for a in args):
            return self._w_all(P.linalg(op, *[self._in(a)[0] for a in args], **params), None)
        if op == "einsum":
            return self._einsum(args, params["subscripts"])
        if op == "lstsq":
            raise ValueError("lstsq: not supported under vmap (its rank result is an int per call); use "
                             "rt.pinv or rt.solve on the normal equations")
        rank = max(a.ndim for a in args)
        ps = []
        for a in args:
            p, bd = self._in(a)
            if bd is None:
                ps.append(_reshape(P, p, (1,) * (rank + 1 - p.ndim) + p.shape))
            else:
                ps.append(self._b0(a, rank)[0])
        if op == "solve" and args[1].ndim == 1:
            raise ValueError("solve: under vmap give b as a matrix (..., M, K)")
        return self._w_all(P.linalg(op, *ps, **params), 0)

    def _einsum(self, args: tuple, spec: str) -> Any:
        from .._primitives import _einsum_labels
        ins, out, _ = _einsum_labels(spec, [a.shape for a in args])
        used = set("".join(ins) + out)
        b = next(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
        ps = []
        specs = []
        for a, s in zip(args, ins):
            p, bd = self._in(a)
            if bd is None:
                ps.append(p)
                specs.append(s)
            else:
                ps.append(self._mv0(p, bd))
                specs.append(b + s)
        return self._w(self.parent.linalg("einsum", *ps, subscripts=",".join(specs) + "->" + b + out), 0)

    def fft(self, op, x, s, axes, norm):
        return self._axis_op(x, lambda p, k: self.parent.fft(op, p, s, tuple(a + k for a in axes), norm))


def _bool():
    from .. import _dtypes as D
    return D.bool


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
