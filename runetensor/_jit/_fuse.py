"""The compiled fast path of ``rt.jit``: runs of consecutive elementwise steps become one C loop.

What fuses: consecutive steps (in program order, so no write can fall between them) that are
``add sub mul div maximum minimum`` or ``neg abs sqrt`` on float32 or float64 operands of one
dtype (Python scalars become exact C literals), all with the same result shape and C-contiguous
results at trace time.  These operations are correctly rounded in IEEE 754, so with
``-O2 -fno-fast-math -ffp-contract=off`` the loop gives eager's bits (``maximum``/``minimum``
follow NumPy: NaN propagates, ``maximum(-0., 0.)`` is the first operand).  Intermediates used
only inside the run stay in registers; the others are written out.  Everything else replays.

The C source is compiled with the system compiler (``$CC`` or ``cc``) into a shared library
named by the source's hash, in ``$RUNETENSOR_JIT_CACHE`` (default: ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``runetensor/jit``); ``RUNETENSOR_JIT_CACHE=0`` turns the compiled path off.
A library is written under a temporary name and renamed into place (atomic), so processes
compiling the same kernel at once are safe.  Without a compiler, ``rt.jit`` warns once and
replays.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from typing import Any

from .. import _dtypes as D
from ._backend import Step

_BIN = {"add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
        "maximum": "(({a} >= {b} || {a} != {a}) ? {a} : {b})",
        "minimum": "(({a} <= {b} || {a} != {a}) ? {a} : {b})"}
_UN = {"neg": "(-{a})", "abs": "{fabs}({a})", "sqrt": "{sqrt}({a})"}
_CTYPE = {D.float32: "float", D.float64: "double"}

_CC_STATE: dict = {}
_WARNED: list = []
_MEM: dict[str, Any] = {}


def clear_memory_cache() -> None:
    """Forget the kernels loaded in this process (the disk cache stays)."""
    _MEM.clear()


def cache_dir() -> str | None:
    """The kernel cache folder, or None when the compiled path is off (``RUNETENSOR_JIT_CACHE=0``)."""
    v = os.environ.get("RUNETENSOR_JIT_CACHE")
    if v is not None and v.strip().lower() in ("0", "off", "false", "no", "none", ""):
        return None
    if v:
        return v
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "runetensor", "jit")


def _compiler() -> str | None:
    cc = os.environ.get("CC") or "cc"
    st = _CC_STATE.get(cc)
    if st is None:
        path = shutil.which(cc)
        st = _CC_STATE[cc] = (path, None if path else f"no C compiler found ({cc!r} is not on PATH; set $CC)")
    return st[0]


def compiler_available() -> bool:
    return _compiler() is not None


def _warn(reason: str) -> None:
    if not _WARNED:
        _WARNED.append(reason)
        warnings.warn(f"rt.jit: not compiling ({reason}); jitted functions run by replaying their traced "
                      f"programs", RuntimeWarning, stacklevel=4)


def _fusable(s: Step) -> bool:
    if s.aval is None or s.aval[1] not in _CTYPE or not s.aval[2]:
        return False
    kind = s.params.get("kind")
    return (kind == "binary" and s.name in _BIN) or (kind == "unary" and s.name in _UN)


def _literal(v: Any, d: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    if f != f:
        return "(0.0/0.0)" if d is D.float64 else "(0.0f/0.0f)"
    if f in (float("inf"), float("-inf")):
        return ("-" if f < 0 else "") + ("(1.0/0.0)" if d is D.float64 else "(1.0f/0.0f)")
    if isinstance(v, int) and float(v) != v:
        return None
    return f"(({_CTYPE[d]}){f.hex()})" if d is D.float32 else f"({f.hex()})"


def _groups(steps: list[Step], out_slots: set) -> list[tuple[int, int]]:
    """``[(start, stop)]`` of runs of at least two consecutive fusable steps of one shape and dtype."""
    res = []
    i = 0
    n = len(steps)
    while i < n:
        if not _fusable(steps[i]):
            i += 1
            continue
        j = i + 1
        while j < n and _fusable(steps[j]) and steps[j].aval[:2] == steps[i].aval[:2]:
            j += 1
        if j - i >= 2:
            res.append((i, j))
        i = j
    return res


def _emit(group: list[Step], later_reads: set, out_slots: set) -> tuple[str, list, list] | None:
    """(C source, input operands (slot or constant), output slots) of one group, or None."""
    d = group[0].aval[1]
    T = _CTYPE[d]
    fabs, sqrt = ("fabsf", "sqrtf") if d is D.float32 else ("fabs", "sqrt")
    shape = group[0].aval[0]
    made: dict[int, str] = {}
    ins: list = []
    in_names: dict[Any, str] = {}
    body = []
    for s in group:
        args = []
        for k, v in s.ins:
            if k == "s" and v in made:
                args.append(made[v])
                continue
            if k == "c" and not hasattr(v, "shape"):
                lit = _literal(v, d)
                if lit is None:
                    return None
                args.append(lit)
                continue
            key = (k, v if k == "s" else id(v))
            nm = in_names.get(key)
            if nm is None:
                nm = in_names[key] = f"x{len(ins)}"
                ins.append((k, v))
            args.append(nm)
        tv = f"t{s.outs}"
        if s.params["kind"] == "binary":
            expr = _BIN[s.name].format(a=args[0], b=args[1])
        else:
            expr = _UN[s.name].format(a=args[0], fabs=fabs, sqrt=sqrt)
        body.append(f"      const {T} {tv} = {expr};")
        made[s.outs] = tv
    outs = [s.outs for s in group if s.outs in later_reads or s.outs in out_slots]
    if not outs:
        return None
    params = ["long n0", "long n1"]
    loads = []
    for j in range(len(ins)):
        params.append(f"const {T}* x{j}p, long x{j}a, long x{j}b")
        loads.append(f"      const {T} x{j} = x{j}p[r * x{j}a + c * x{j}b];")
    for j in range(len(outs)):
        params.append(f"{T}* restrict y{j}p")
    stores = [f"      y{j}p[r * n1 + c] = t{o};" for j, o in enumerate(outs)]
    # a unit-stride (or broadcast-scalar) inner loop the compiler can vectorise, else the general one
    unit = " && ".join(f"x{j}b == 1" for j in range(len(ins))) or "1"
    loads1 = [f"      const {T} x{j} = x{j}p[r * x{j}a + c];" for j in range(len(ins))]
    src = ("#include <math.h>\n"
           f"void kernel({', '.join(params)}) {{\n"
           f"  if ({unit}) {{\n"
           "  for (long r = 0; r < n0; r++) {\n"
           "    for (long c = 0; c < n1; c++) {\n"
           + "\n".join(loads1 + body + stores) + "\n    }\n  }\n  return;\n  }\n"
           "  for (long r = 0; r < n0; r++) {\n"
           "    for (long c = 0; c < n1; c++) {\n"
           + "\n".join(loads + body + stores) + "\n    }\n  }\n}\n")
    del shape
    return src, ins, outs


def _load(src: str) -> Any:
    h = hashlib.sha256(src.encode()).hexdigest()[:32]
    fn = _MEM.get(h)
    if fn is not None:
        return fn
    folder = cache_dir()
    if folder is None:
        return None
    cc = _compiler()
    if cc is None:
        _warn(_CC_STATE[os.environ.get("CC") or "cc"][1])
        return None
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        _warn(f"cannot create the cache folder {folder!r}: {e}")
        return None
    so = os.path.join(folder, f"k{h}.so")
    if not os.path.exists(so):
        fd, tmp_c = tempfile.mkstemp(suffix=".c", prefix=f"k{h}.tmp", dir=folder)
        tmp_so = tmp_c[:-2] + ".so"
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(src)
            r = subprocess.run([cc, "-O2", "-fno-fast-math", "-ffp-contract=off", "-shared", "-fPIC",
                                "-o", tmp_so, tmp_c, "-lm"], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                _warn(f"{cc} failed: {r.stderr.strip()[:300]}")
                return None
            os.replace(tmp_so, so)  # atomic: a concurrent compiler's identical library may win
        except (OSError, subprocess.SubprocessError) as e:
            _warn(f"running {cc} failed: {e}")
            return None
        finally:
            for p in (tmp_c, tmp_so):
                try:
                    os.unlink(p)
                except OSError:
                    pass
    try:
        lib = ctypes.CDLL(so)
    except OSError as e:
        _warn(f"cannot load {so!r}: {e}")
        return None
    fn = lib.kernel
    fn.restype = None
    _MEM[h] = fn
    return fn


def fuse_program(prog: Any) -> int:
    """Replace the fusable runs of ``prog.steps`` by compiled steps; the number of kernels made."""
    if cache_dir() is None:
        return 0
    steps = prog.steps
    out_slots = {v for k, v, _ in prog.outs if k == "s"}
    groups = _groups(steps, out_slots)
    if not groups:
        return 0
    from .._backend._jitrun import make_runner
    new: list[Step] = []
    made = 0
    pos = 0
    for a, b in groups:
        later: set = set()
        for s in steps[b:]:
            later.update(v for k, v in s.ins if k == "s")
        em = _emit(steps[a:b], later, out_slots)
        fn = None if em is None else _load(em[0])
        if fn is None:
            continue
        src, ins, outs = em
        new.extend(steps[pos:a])
        shape, d = steps[a].aval[0], steps[a].aval[1]
        st = Step("fused", make_runner(fn, shape, d, len(outs)), tuple(ins), tuple(outs),
                  {"n_ops": b - a, "source": src})
        new.append(st)
        pos = b
        made += 1
    new.extend(steps[pos:])
    prog.steps = new
    return made
