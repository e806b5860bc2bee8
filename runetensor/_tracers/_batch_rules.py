"""The batching rules of ``rt.vmap``: one per primitive, stored in its table entry (``Prim.batch``).

A rule is ``rule(B, name, fn, hs, params)``: ``B`` the :class:`~runetensor._tracers._batch.BatchBackend`,
``name`` the table entry, ``fn`` the parent's primitive with ``params`` bound (a function of parent
handles), ``hs`` the operands (batch tracers, lower-level handles or scalars).  It calls the parent
once for all lanes and returns batch tracers.  Most primitives batch by one of a few patterns, so an
entry gets the rule of its contract method (:data:`BY_METHOD`) unless it gives its own
(:data:`RULES`); ``tests/test_tracers.py`` checks that every entry has one.
"""
from __future__ import annotations

import math
from typing import Any

from .. import _dtypes as D
from .. import _primitives_linalg  # noqa: F401  (its entries get rules too)
from .._primitives import PRIMS, _einsum_labels, inv_perm
from .._primitives import reshape as _reshape

_SCALARS = (int, float, complex, bool)


def _h(x: Any) -> bool:
    return x is not None and type(x) not in _SCALARS and hasattr(x, "shape")


# ---------------------------------------------------------------------- the common patterns
def elementwise(B, name, fn, hs, params):
    """Operands broadcast: the batched ones with the batch axis first, padded to the common rank."""
    if len(hs) == 1:  # one operand: nothing to pad
        p, bd = B._in(hs[0])
        if bd is None:
            return B._w_all(fn(p), None)
        return B._w_all(B._fresh(fn(B._mv0(p, bd))), 0)
    rank = max([h.ndim for h in hs if _h(h)], default=0)
    ps = []
    batched = False
    for h in hs:
        if _h(h):
            p, b = B._b0(h, rank)
            batched = batched or b
            ps.append(p)
        else:
            ps.append(h)
    if batched:
        return B._w_all(B._fresh(fn(*ps)), 0)
    return B._w_all(fn(*ps), None)


def _axis(B, h, fn, shifted):
    """``fn(p)`` for an unbatched operand, else ``shifted(p)`` on its parent handle with the lanes first
    (the op's axes shifted by one)."""
    p, bd = B._in(h)
    if bd is None:
        return B._w_all(fn(p), None)
    return B._w_all(B._fresh(shifted(B._mv0(p, bd))), 0)


def reduce(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.reduce(name[7:], p, tuple([a + 1 for a in params["axes"]]),
                                                         params["keepdims"]))


def arg_reduce(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.arg_reduce(name[11:], p, params["axis"] + 1, params["keepdims"]))


def scan(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.scan(name[5:], p, params["axis"] + 1))


def sort(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.sort(p, params["axis"] + 1, params["descending"]))


def argsort(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.argsort(p, params["axis"] + 1, params["descending"]))


def fft(B, name, fn, hs, params):
    return _axis(B, hs[0], fn, lambda p: B.parent.fft(name[4:], p, params["s"], tuple([a + 1 for a in params["axes"]]),
                                                      params["norm"]))


def created(B, name, fn, hs, params):
    """A new handle: the same in every lane (an imported operand keeps its lanes)."""
    if hs:
        p, bd = B._in(hs[0])
        return B._w_all(fn(p), bd)
    return B._w_all(fn(), None)


# ---------------------------------------------------------------------- views
def _view(batched):
    """A movement rule: unbatched operands move as they are; ``batched(B, h, p, n, params)`` moves the parent
    handle ``p`` of ``h`` whose batch axis is first (its ``n`` lanes) and returns the parent view or None."""
    def rule(B, name, fn, hs, params):
        p, bd = B._in(hs[0])
        if bd is None:
            r = fn(p)
            return None if r is None else B._w(r, None)
        r = batched(B, hs[0], B._mv0(p, bd), B.n, params)
        return None if r is None else B._w(r, 0)
    rule.__name__ = rule.__qualname__ = batched.__name__
    rule.__doc__ = batched.__doc__
    return rule


@_view
def reshape(B, h, p, n, params):
    """The lanes stay the leading axis of the new shape."""
    return B.parent.reshape(p, (n,) + params["shape"])


@_view
def expand(B, h, p, n, params):
    """The logical axes broadcast; the lanes stay first."""
    shape = params["shape"]
    p, _ = B._b0(h, len(shape))
    return B.parent.expand(p, (n,) + shape)


@_view
def permute(B, h, p, n, params):
    return B.parent.permute(p, (0,) + tuple([a + 1 for a in params["axes"]]))


@_view
def view_index(B, h, p, n, params):
    return B.parent.view_index(p, (slice(0, n, 1),) + params["key"])


@_view
def flip(B, h, p, n, params):
    return B.parent.flip(p, tuple([a + 1 for a in params["axes"]]))


def as_strided(B, name, fn, hs, params):
    """The lane stride prepended; the view must stay inside every lane's data."""
    P = B.parent
    p, bd = B._in(hs[0])
    if bd is None:
        return B._w(fn(p), None)
    shape, strides, offset = params["shape"], params["strides"], params["offset"]
    sb = P.strides(p)[bd]
    lo = offset + sum(min(0, (d - 1) * s) for d, s in zip(shape, strides)) + min(0, (B.n - 1) * sb)
    hi = offset + sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + max(0, (B.n - 1) * sb)
    if math.prod(shape) and (lo < 0 or hi >= P.buffer_size(p)):
        raise ValueError("as_strided: under vmap the view must stay inside every lane's data")
    return B._w(P.as_strided(p, (B.n,) + tuple(shape), (sb,) + tuple(strides), offset), 0)


# ---------------------------------------------------------------------- searching, indexing
def searchsorted(B, name, fn, hs, params):
    """One sorted array per lane: count the elements before each value (vectorised comparisons)."""
    P = B.parent
    sorted_, values = hs
    sp, sb = B._in(sorted_)
    vp, vb = B._in(values)
    if sb is None:
        return B._w(fn(sp, vp), vb)
    s0 = B._mv0(sp, sb)                                   # (n, m)
    v0 = B._bcast0(values)                                # (n, *vs)
    vs = v0.shape[1:]
    s_b = _reshape(P, s0, (B.n,) + (1,) * len(vs) + (s0.shape[1],))
    v_b = _reshape(P, v0, v0.shape + (1,))
    if params["side"] == "left":  # NaN orders last: a value NaN counts every non-NaN element before it
        before = P.binary("logical_or", P.binary("lt", s_b, v_b),
                          P.binary("logical_and", P.unary("isnan", v_b), P.unary("logical_not",
                                                                                   P.unary("isnan", s_b))))
    else:
        before = P.binary("logical_or", P.binary("le", s_b, v_b), P.unary("isnan", v_b))
    cnt = P.reduce("sum", P.cast(before, D.int64), (v_b.ndim - 1,), False)
    return B._w(cnt, 0)


def nonzero(B, name, fn, hs, params):
    """Only for a value that is the same in every lane (the result's length depends on the values)."""
    p, bd = B._in(hs[0])
    if bd is not None:
        raise ValueError("nonzero: the number of results depends on the values, so it cannot be batched "
                         "under vmap; use rt.where with a fixed shape instead")
    return B._w_all(fn(p), None)


def gather(B, name, fn, hs, params):
    """Advanced indexing with the lanes as one more index array (see ``BatchBackend._batched_key``)."""
    p, bd = B._in(hs[0])
    xb = bd is not None
    if xb:
        p = B._mv0(p, bd)
    k2, info, rbd = B._batched_key(tuple(params["key"]), xb)
    r = B.parent.gather(p, k2)
    if rbd < 0:
        return B._w(r, None)
    return B._w(B._fix_adv(r, info), rbd)


# ---------------------------------------------------------------------- memory
def copy(B, name, fn, hs, params):
    p, bd = B._in(hs[0])
    if bd not in (None, 0):
        p = B._mv0(p, bd)
    return B._w(B.parent.copy(p), None if bd is None else 0)


def contiguous(B, name, fn, hs, params):
    x = hs[0]
    p, bd = B._in(x)
    if bd is None:
        r = B.parent.contiguous(p)
        return x if r is p and B.owns(x) else B._w(r, None)
    if bd == 0 and B.parent.is_c_contiguous(p):
        return x if B.owns(x) else B._w(p, 0)
    return B._w(B.parent.copy(B._mv0(p, bd)), 0)


def assign(B, name, fn, hs, params):
    """``dst = src``: a batched source makes a destination created inside the function batched."""
    P = B.parent
    dst, src = hs
    sp, sb = B._in(src) if _h(src) else (src, None)
    dp, db = B._in(dst)
    if sb is not None and db is None:
        B._batch_root(dst, "assign")
        dp, db = B._in(dst)
    if db is None:
        P.assign(dp, sp)
        return
    d0 = B._mv0(dp, db)
    if sb is not None:
        sp, _ = B._b0(src, dst.ndim)
    P.assign(d0, sp)


def scatter(B, name, fn, hs, params):
    """``x[key] = values``: batched values or indices make ``x`` batched, the lanes an extra index."""
    P = B.parent
    x, values = hs
    key, mode = params["key"], params["mode"]
    vb = B._in(values)[1] if _h(values) else None
    kb = any(_h(k) and B._in(k)[1] is not None for k in key)
    dp, db = B._in(x)
    if (vb is not None or kb) and db is None:
        B._batch_root(x, "scatter")
        dp, db = B._in(x)
    if db is None:
        P.scatter(dp, tuple(B._in(k)[0] if _h(k) else k for k in key),
                  B._in(values)[0] if _h(values) else values, mode)
        return
    d0 = B._mv0(dp, db)
    k2, info, _ = B._batched_key(tuple(key), True)
    v = values
    if _h(values):
        sel_shape = B.gather(x, key).shape  # the selection's logical shape
        vp, vbd = B._in(values)
        if vbd is not None:
            v, _ = B._b0(values, len(sel_shape))
        else:
            v = _reshape(P, vp, (1,) * (len(sel_shape) + 1 - vp.ndim) + vp.shape)
        if v.shape != (B.n,) + sel_shape:
            v = P.expand(v, (B.n,) + sel_shape)
        if info is not None:  # the parent's selection has the advanced dims first
            v = P.permute(v, inv_perm(B._adv_perm(v.ndim, info)))
    P.scatter(d0, k2, v, mode)


# ---------------------------------------------------------------------- products and composites
def matmul(B, name, fn, hs, params):
    """One parent product: per-lane x @ shared W as one GEMM, shared M @ per-lane v with the lanes
    as columns, else batched matrices (vectors promoted to matrices and back)."""
    P = B.parent
    a, b = hs
    pa, ba = B._in(a)
    pb, bb = B._in(b)
    if ba is None and bb is None:
        return B._w(P.matmul(pa, pb), None)
    ra, rb = a.ndim, b.ndim
    if bb is None and rb == 2 and ra >= 1:
        A = B._mv0(pa, ba)
        k = A.shape[-1]
        r = P.matmul(_reshape(P, A, (-1, k)), pb)
        return B._w(_reshape(P, r, A.shape[:-1] + (pb.shape[1],)), 0)
    if ba is None and ra == 2 and rb == 1:
        V = B._mv0(pb, bb)
        return B._w(P.matmul(pa, P.permute(V, (1, 0))), 1)
    A, _ = B._b0(a)
    Bm, _ = B._b0(b)
    n = B.n
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
    return B._w(r, 0)


def concatenate(B, name, fn, hs, params):
    if all(B._in(h)[1] is None for h in hs):
        return B._w(fn(*[B._in(h)[0] for h in hs]), None)
    return B._w(B.parent.concatenate([B._bcast0(h) for h in hs], params["axis"] + 1), 0)


def pad(B, name, fn, hs, params):
    """A fill value per lane: pad with zeros, then select the border from the values."""
    h, value = hs
    widths = params["widths"]
    if _h(value) and B._in(value)[1] is not None:
        z = B.pad(h, widths, 0)
        inner = B.pad(B.full(h.shape, True, D.bool), widths, False)
        return B.where(inner, z, value)
    v = B._in(value)[0] if _h(value) else value
    p, bd = B._in(h)
    if bd is None:
        return B._w(fn(p, v), None)
    return B._w(B.parent.pad(B._mv0(p, bd), ((0, 0),) + tuple(tuple(w) for w in widths), v), 0)


def callback(B, name, fn, hs, params):
    """``fn`` once per lane, in lane order, with that lane's slice of each batched value (the whole
    value for one that is the same in every lane): the parent calls the loop once."""
    user = params["fn"]
    ps = []
    lane = []
    for h in hs:
        p, bd = B._in(h)
        lane.append(bd is not None)
        ps.append(p if bd is None else B._mv0(p, bd))
    n = B.n

    def per_lane(*vals: Any) -> None:
        for i in range(n):
            user(*[v[i] if b else v for v, b in zip(vals, lane)])
    B.parent.callback(per_lane, ps)


def linalg(B, name, fn, hs, params):
    """Stacks of matrices: the lanes are one more leading batch axis (``einsum``: one more label)."""
    P = B.parent
    op = name.partition(".")[2]
    if all(B._in(a)[1] is None for a in hs):
        return B._w_all(fn(*[B._in(a)[0] for a in hs]), None)
    if op == "einsum":
        return _einsum(B, hs, params["subscripts"])
    if op == "lstsq":
        raise ValueError("lstsq: not supported under vmap (its rank result is an int per call); use "
                         "rt.pinv or rt.solve on the normal equations")
    rank = max(a.ndim for a in hs)
    ps = []
    for a in hs:
        p, bd = B._in(a)
        if bd is None:
            ps.append(_reshape(P, p, (1,) * (rank + 1 - p.ndim) + p.shape))
        else:
            ps.append(B._b0(a, rank)[0])
    if op == "solve" and hs[1].ndim == 1:
        raise ValueError("solve: under vmap give b as a matrix (..., M, K)")
    return B._w_all(P.linalg(op, *ps, **params), 0)


def _einsum(B, args: tuple, spec: str) -> Any:
    ins, out, _ = _einsum_labels(spec, [a.shape for a in args])
    used = set("".join(ins) + out)
    b = next(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
    ps = []
    specs = []
    for a, s in zip(args, ins):
        p, bd = B._in(a)
        if bd is None:
            ps.append(p)
            specs.append(s)
        else:
            ps.append(B._mv0(p, bd))
            specs.append(b + s)
    return B._w(B.parent.linalg("einsum", *ps, subscripts=",".join(specs) + "->" + b + out), 0)


# ---------------------------------------------------------------------- the table
#: the rule of every entry of a contract method
BY_METHOD = {
    "unary": elementwise, "binary": elementwise, "where": elementwise, "clip": elementwise, "cast": elementwise,
    "reduce": reduce, "arg_reduce": arg_reduce, "scan": scan, "fft": fft, "linalg": linalg,
    "empty": created, "full": created, "arange": created, "asarray": created, "random_bits": created,
    "random_uniform": created, "from_buffer": created, "from_dlpack": created,
}
#: the primitives with a rule of their own
RULES = {f.__name__: f for f in (reshape, expand, permute, view_index, flip, as_strided, sort, argsort,
                                 searchsorted, nonzero, gather, copy, contiguous, assign, scatter, matmul,
                                 concatenate, pad, callback)}


def rule_for(name: str) -> Any:
    """The batching rule of table entry ``name`` (None if neither its own nor its method's exists)."""
    method = name.partition(".")[0]
    return RULES.get(name) or BY_METHOD.get(method) or (elementwise if PRIMS[name].dtype is not None else None)


for _name, _prim in PRIMS.items():
    if _prim.batch is None:
        _prim.batch = rule_for(_name)
del _name, _prim
#: the rules by table entry, for the batching backend's dispatch (one dict lookup per primitive call)
BATCH_RULES = {n: p.batch for n, p in PRIMS.items()}
