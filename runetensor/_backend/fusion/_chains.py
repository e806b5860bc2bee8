"""Row chains of ``rt.jit``'s compiled kernels: consecutive fused loops over the same rows (with
``out=`` float ops on their per-row results between them) become one kernel that runs them all for
one row before the next, so that a row stays in cache (softmax, layer norm: x read from memory once).
Turned on and off by ``runetensor._backend.fusion._fuse.ROW_CHAINS`` (docs/jit.md, "Row chains"); run
after ``_fuse.fuse_program`` by the NumPy backend's fuser (``runetensor._backend.fusion``)."""
from __future__ import annotations

import math
from typing import Any

from ..._tracers._jit import Slot, Step
from .._jitrun import Stride, c_layout_as2d_strides, make_row_runner
from ._fuse import _CTYPE, _FBIN, _FLOAT, _literal, _load


def _rowwise(st: Step) -> int | None:
    """The row count of a step that can join a row chain (a fused loop over rows, not reducing all
    axes, or an ``out=`` float op on one value per row), else None."""
    if st.name == "fused":
        fl, red = st.params.get("loop"), st.params.get("reduction")
        if fl is None or st.params.get("scan") or (red is not None and (red.whole or red.op[:3] in ("arg", "col"))):
            return None
        return fl.loop[0]
    return None


def chain_rows(steps: list[Step], avals: list, out_slots: set) -> list[Step]:
    """Runs of consecutive row-wise steps (fused loops over the same rows, with ``out=`` float ops on
    their per-row results between them) become one kernel that runs them all for one row before the
    next row (the row stays in cache: softmax/layer norm read x from memory once)."""
    res: list[Step] = []
    i = 0
    while i < len(steps):
        n = _rowwise(steps[i])
        if n is None or n < 2:
            res.append(steps[i])
            i += 1
            continue
        j = i + 1
        while j < len(steps) and (_rowwise(steps[j]) == n or steps[j].name == "out"):
            j += 1
        while j > i and steps[j - 1].name == "out":
            j -= 1
        seg = steps[i:j]
        later = set(out_slots)
        for s2 in steps[:i] + steps[j:]:
            later.update(x.index for x in s2.ins if type(x) is Slot)
        st = _build_chain(seg, avals, n, later) if sum(s.name == "fused" for s in seg) >= 2 else None
        if st is None:
            res.append(steps[i])
            i += 1
            continue
        res.append(st)
        i = j
    return res


def _build_chain(seg: list[Step], avals: list, N: int, later: set) -> Step | None:
    """One row-chain step for ``seg`` (None if it cannot be); ``later``: slots read outside ``seg``.
    An elementwise group writes over a full-size buffer of the chain that it reads at the same
    element and that nothing reads after it (softmax: ``exp(x - m) / s`` over ``exp(x - m)``)."""
    alias: dict[int, int] = {}   # slot -> chain buffer index
    bufs: list[tuple] = []       # (shape, dtype) of the chain's buffers (C-contiguous)
    ext: list = []               # external operands: (spec, dtype, group shape, (n0, n1), Stride)
    ext_idx: dict = {}
    srcs: list[str] = []
    body: list[str] = []
    outs: list[int] = []         # result slots, in order; their buffer: alias

    def new_buf(slot: int) -> int:
        shape, d = avals[slot][0], avals[slot][1]
        alias[slot] = len(bufs)
        bufs.append((shape, d))
        outs.append(slot)
        return alias[slot]

    def per_row(slot: int) -> bool:
        a = avals[slot]
        return a is not None and a[2] and math.prod(a[0]) == N

    for i, st in enumerate(seg):
        if st.name == "out":
            op = st.params.get("op")
            if op not in _FBIN or type(st.outs) is not int or len(st.ins) != 3:
                return None
            xa, xb, xo = st.ins
            if type(xa) is not Slot or type(xo) is not Slot:
                return None
            va, vo = xa.index, xo.index
            if va not in alias or vo not in alias or not per_row(va):
                return None
            d = avals[vo][1]
            if d not in _FLOAT or avals[va][1] is not d or avals[st.outs] is None or avals[st.outs][1] is not d:
                return None
            if type(xb) is Slot:
                vb = xb.index
                if vb not in alias or not per_row(vb) or avals[vb][1] is not d:
                    return None
                bx = f"b{alias[vb]}[r]"
            else:
                bx = _literal(xb.value, d)
                if bx is None:
                    return None
            body.append(f"b{alias[vo]}[r] = {_FBIN[op].format(a=f'b{alias[va]}[r]', b=bx)};")
            alias[st.outs] = alias[vo]
            outs.append(st.outs)
            continue
        fl = st.params["loop"]
        src, ins, in_dts, pats, gouts, (n0, n1) = fl.source, fl.ins, fl.in_dtypes, fl.patterns, fl.outs, fl.loop
        red = st.params["reduction"]
        gshape = avals[gouts[0]][0] if gouts else None
        if red is not None:
            red_slot = st.outs[-1]
            gshape = None
        ksrc = src.replace("void kernel(", f"static inline void k{i}(", 1)
        args = ["1", str(n1)]  # this row's loop: n0 = 1, n1
        reads_after = {x.index for s2 in seg[i + 1:] for x in s2.ins if type(x) is Slot} | later
        reuse: int | None = None
        for spec, dt, pt in zip(ins, in_dts, pats):
            if type(spec) is Slot and spec.index in alias:
                v = spec.index
                bshape, bd = bufs[alias[v]]
                if bd is not dt:
                    return None
                isz = dt.itemsize
                try:
                    shp = _group_shape(st, avals, gshape, ins)
                    sts = c_layout_as2d_strides(bshape, isz, shp, n0, n1)
                except ValueError:
                    return None
                if sts is None or sts[0] != isz * (math.prod(bshape) // N):
                    return None  # row r must read the buffer's own row r
                sa, sb = sts[0] // isz, sts[1] // isz
                if n1 > 1 and ((pt == Stride.UNIT and sb != 1) or (pt == Stride.BROADCAST and sb != 0)):
                    return None
                args += [f"b{alias[v]} + r * {sa}", str(sa)] + ([str(sb)] if pt == Stride.GENERAL else [])
                if (reuse is None and red is None and gouts and v not in reads_after and sa == n1 and sb == 1
                        and tuple(bshape) == tuple(avals[gouts[0]][0]) and bd is avals[gouts[0]][1]
                        and sum(1 for x in alias.values() if x == alias[v]) == 1):
                    reuse = v
                continue
            j = ext_idx.get(spec)
            if j is None:
                j = ext_idx[spec] = len(ext)
                ext.append((spec, dt, _group_shape(st, avals, gshape, ins), (n0, n1), pt))
            args += [f"e{j}p + r * e{j}a", f"e{j}a"] + ([f"e{j}b"] if pt == Stride.GENERAL else [])
        for o in gouts:
            if reuse is not None:
                # in place: element c is read before it is written (no restrict on this kernel)
                k = alias[o] = alias.pop(reuse)
                outs.remove(reuse)
                outs.append(o)
                reuse = None
                ksrc = ksrc.replace(" restrict ", " ")
            else:
                k = new_buf(o)
            args.append(f"b{k} + r * {n1}")
        srcs.append(ksrc)
        if red is not None:
            rdt = red.dtype
            if math.prod(red.shape) != N or rdt not in _FLOAT:
                return None
            if avals[red_slot] is None or tuple(avals[red_slot][0]) != red.shape:
                return None
            k = new_buf(red_slot)
            args.append(f"&rd{i}")
            body.append(f"double rd{i};")
            body.append(f"k{i}({', '.join(args)});")
            body.append(f"b{k}[r] = ({_CTYPE[rdt]})rd{i};")
        else:
            body.append(f"k{i}({', '.join(args)});")
    params = ["long n0"]
    for j, (spec, dt, shp, loop, pt) in enumerate(ext):
        params.append(f"const {_CTYPE[dt]}* restrict e{j}p, long e{j}a, long e{j}b")
    for k, (shape, d) in enumerate(bufs):
        params.append(f"{_CTYPE[d]}* b{k}")
    lines = [*srcs, f"void kernel({', '.join(params)}) {{", "  for (long r = 0; r < n0; r++) {"]
    lines += ["    " + x for x in body]
    lines += ["  }", "}"]
    src = "\n".join(lines) + "\n"
    fn = _load(src)
    if fn is None:
        return None
    ext_specs = [e[0] for e in ext]

    res_slots = [Slot(o) for o in outs]

    def fallback(*xs: Any) -> tuple:
        env: dict = dict(zip(ext_specs, xs))  # operand (Slot, Const) -> value
        for s in seg:
            r = s.fn(*[env[x] if x in env else x.value for x in s.ins])
            if type(s.outs) is int:
                env[Slot(s.outs)] = r
            else:
                for o, x in zip(s.outs, r):
                    if type(o) is int:
                        env[Slot(o)] = x
        return tuple(env[o] for o in res_slots)

    run = make_row_runner(fn, N, [(e[2], e[3], e[1], e[4]) for e in ext], bufs, [alias[o] for o in outs], fallback)
    return Step("fused", run, tuple(ext_specs), tuple(outs),
                {"n_ops": sum(s.params.get("n_ops", 1) for s in seg), "source": src, "rows": len(seg)})


def _group_shape(st: Step, avals: list, gshape: tuple | None, ins: list) -> tuple:
    """The full (unreduced) shape of fused step ``st``'s loop."""
    if gshape is not None:
        return gshape
    g = st.params.get("gshape")
    if g is None:
        raise ValueError("no group shape")
    return g
