"""Debugging inside transformations: ``rt.debug_print`` and ``rt.debug_nans``.

``debug_print`` is one primitive of the contract, ``callback(fn, handles)``: the NumPy backend calls
``fn`` with the values now; the tracer backends pass it down (``rt.grad``: the primal values;
``rt.vmap``: once per lane; ``rt.jit``: a step of the program, run at every call with that call's
values).

``debug_nans`` puts checking wrappers on the NumPy backend's instance (``unary``, ``binary``,
``cast``, ``reduce``, ``scan``, ``matmul``, ``linalg``, ``fft``) while it is on, and removes them
when it is off: nothing is installed and nothing is read on the eager path when it is off.  A
primitive is blamed when it makes a NaN or an infinity out of finite inputs (elementwise ops: at an
element whose operands are finite there; the others: when none of their inputs has a NaN or an
infinity), so a value passed in already non-finite is not blamed on the primitives that carry it.
``rt.jit`` checks its outputs and, when one is not finite, re-runs the Python function eagerly with
every primitive checked (see docs/debugging.md).
"""
from __future__ import annotations

import cmath
import linecache
import os
import sys
import threading
import weakref
from typing import Any

from . import _dtypes
from ._backend import _active, get_backend
from ._tensor import Tensor, higher_backend, wrap

__all__ = ["debug_print", "debug_nans"]

#: whether ``debug_nans`` is on (the checking wrappers are installed on the NumPy backend)
ON = False
_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LOCK = threading.Lock()
_CHECKED = ("unary", "binary", "cast", "reduce", "scan", "matmul", "linalg", "fft")
#: reverse-mode tape nodes recorded while debug_nans is on -> (primitive, the user's frame that recorded it)
_NODE_WHERE: "weakref.WeakKeyDictionary[Any, tuple]" = weakref.WeakKeyDictionary()


class _Local(threading.local):
    def __init__(self) -> None:
        self.quiet = 0  # > 0: the wrappers do not check (a jitted call checks its outputs; printing)


_tls = _Local()


def _NonFinite(msg: str) -> FloatingPointError:
    """The error debug_nans raises: a plain ``FloatingPointError``, marked as its own."""
    e = FloatingPointError(msg)
    e._rt_debug_nans = True  # type: ignore[attr-defined]
    return e


# ---------------------------------------------------------------------------------------- debug_print
class _Probe:
    """Stands for an argument while ``debug_print`` checks its format string before any value exists."""

    def __format__(self, spec: str) -> str:
        return ""

    def __getattr__(self, name: str) -> "_Probe":
        return self

    def __getitem__(self, key: Any) -> "_Probe":
        return self


def debug_print(fmt: str, *args: Any, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the tensors' actual values, also inside ``rt.jit``,
    ``rt.vmap`` and ``rt.grad``.

    Eagerly it prints now.  Under ``rt.jit`` it prints at every call of the compiled program with
    that call's values (the first call's print happens while tracing, with the first call's values).
    Under ``rt.vmap`` it prints once per lane, in lane order, with that lane's values (a tensor that
    is the same in every lane is shown whole).  Under ``rt.grad``/``rt.vjp``/``rt.jvp`` it prints
    the values (not derivatives) and adds nothing to the derivative.  Arguments that are not tensors
    are formatted as they are when ``debug_print`` is called.

    Args:
        fmt: a ``str.format`` string (``"{}"``, ``"{0:.3f}"``, ``"{x}"``...).
        *args: tensors or Python values for the positional fields.
        **kwargs: tensors or Python values for the named fields.

    Raises:
        TypeError: if ``fmt`` is not a string.
        ValueError: if ``fmt`` is malformed or names a field with no argument.

    >>> import runetensor as rt
    >>> rt.debug_print("x = {}, sum = {s:.1f}", rt.asarray([1., 2.]), s=rt.asarray(3.))
    x = [1, 2], sum = 3.0
    >>> f = rt.jit(lambda x: (rt.debug_print("in f: {}", x * 2), x + 1)[1])
    >>> _ = f(rt.asarray([1., 2.])); _ = f(rt.asarray([5., 6.]))
    in f: [2, 4]
    in f: [10, 12]
    >>> _ = rt.vmap(lambda r: rt.debug_print("lane {}", r))(rt.asarray([[1, 2], [3, 4]]))
    lane [1, 2]
    lane [3, 4]
    """
    if not isinstance(fmt, str):
        raise TypeError(f"debug_print: fmt must be a str.format string, got {type(fmt).__name__}")
    try:
        fmt.format(*[_Probe()] * len(args), **{k: _Probe() for k in kwargs})
    except (IndexError, KeyError, ValueError) as e:
        raise ValueError(f"debug_print: bad format string {fmt!r} for {len(args)} positional and "
                         f"{sorted(kwargs)} keyword arguments: {e}") from None
    items = list(enumerate(args)) + list(kwargs.items())
    ts = [(k, v) for k, v in items if isinstance(v, Tensor)]
    st = _active.stack
    be = st[-1] if st else None  # the innermost transformation: under rt.jit even a print of no tensor is a step
    for _, t in ts:
        be = higher_backend(be, t._backend, "debug_print")
    keys = [k for k, _ in ts]
    dtypes = [t._dtype for _, t in ts]
    plain = {k: v for k, v in items if not isinstance(v, Tensor)}
    npos = len(args)

    def show(*vals: Any) -> None:
        nb = get_backend("numpy")
        got = dict(plain)
        for k, v, d in zip(keys, vals, dtypes):
            got[k] = wrap(nb.asarray(v, d, None)[0], d, nb)
        _tls.quiet += 1  # printing computes (widths, rounding): not the user's primitives
        stack = _active.stack
        saved = list(stack)
        stack[:] = []  # the printed tensors are plain NumPy-backend tensors, whatever transformation runs
        try:
            text = fmt.format(*[got[i] for i in range(npos)], **{k: got[k] for k in kwargs})
        finally:
            stack[:] = saved
            _tls.quiet -= 1
        print(text)

    if be is None:
        show()
        return
    be.callback(show, [t._data for _, t in ts])


# ---------------------------------------------------------------------------------------- debug_nans
class debug_nans:
    """Raise ``FloatingPointError`` at the first primitive that makes a NaN or an infinity, naming
    the primitive and your source line.

    ``with rt.debug_nans():`` turns the check on for the block (process-wide, all threads);
    ``rt.debug_nans(True)`` / ``rt.debug_nans(False)`` switch it now (and, used as a context manager,
    restore the previous setting on exit); the environment variable ``RUNETENSOR_DEBUG_NANS=1`` turns
    it on at import.  Off by default, and then free: nothing is installed on the eager path.

    What is checked: the NumPy backend's computing primitives (elementwise ops, casts, reductions,
    scans, matmul, linear algebra, FFT), forward and backward passes alike (under ``rt.grad`` the
    message also names the forward primitive whose derivative failed and where it was recorded).
    A primitive is blamed only for a NaN or infinity it made from finite inputs: a value passed in
    non-finite is not blamed.  Under ``rt.jit`` the call's outputs are checked; when one is not
    finite, the Python function is re-run eagerly on the same arguments (donated arguments are
    copied first, so donation is off) with every primitive checked, and the error names the
    primitive and the line inside the function.  The source line is the first stack frame outside
    the runetensor package.

    Args:
        enable: None (the default): on inside a ``with`` block; True or False: set it now.

    >>> import runetensor as rt
    >>> with rt.debug_nans():  # doctest: +ELLIPSIS
    ...     rt.log(rt.asarray([1.0, -1.0]))
    Traceback (most recent call last):
    ...
    FloatingPointError: debug_nans: log made a NaN (1 element) from finite inputs, at ...
    >>> print(rt.log(rt.asarray(-1.0)))  # off again
    nan
    """

    def __init__(self, enable: bool | None = None):
        if enable is not None and not isinstance(enable, bool):
            raise TypeError(f"debug_nans: enable must be True, False or None, got {enable!r}")
        self._enable = enable
        self._prev: list[bool] = []
        if enable is not None:
            self._prev.append(ON)
            _set(enable)

    def __enter__(self) -> "debug_nans":
        if self._enable is None:
            self._prev.append(ON)
            _set(True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._prev:
            _set(self._prev.pop())

    def __repr__(self) -> str:
        return f"debug_nans(on={ON})"


def _set(on: bool) -> None:
    global ON
    B = get_backend("numpy")
    with _LOCK:
        if on and not ON:
            for name, w in _wrappers(B).items():
                setattr(B, name, w)
        elif not on and ON:
            for name in _CHECKED:
                B.__dict__.pop(name, None)
        ON = on


def _user_frame() -> tuple[str, int, str] | None:
    """(file, line, function) of the first stack frame outside the runetensor package."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG):
        f = f.f_back
    return None if f is None else (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def _describe(site: tuple[str, int, str] | None) -> str:
    """``file:line in function: source line`` for a frame of :func:`_user_frame`."""
    if site is None:
        return "<unknown>"
    fn, line, func = site
    src = linecache.getline(fn, line).strip()
    return f"{fn}:{line} in {func}" + (f": {src}" if src else "")


def _wrappers(B: Any) -> dict:
    """The checking versions of ``B``'s computing primitives (``B``'s class methods, then a check)."""
    cls = type(B)

    def finite(h: Any) -> Any:
        return cls.unary(B, "isfinite", h)

    def every(m: Any) -> bool:
        return m.size == 0 or bool(cls.to_list(B, cls.reduce(B, "all", m, tuple(range(m.ndim)), False)))

    def count(m: Any) -> int:
        return int(cls.to_list(B, cls.reduce(B, "sum", cls.cast(B, m, _int64()), tuple(range(m.ndim)), False)))

    def inexact(h: Any) -> bool:
        return hasattr(h, "shape") and B.dtype(h).is_inexact

    def scalar_finite(v: Any) -> bool:
        return not isinstance(v, (float, complex)) or cmath.isfinite(v)

    def in_masks(ins: tuple) -> list | None:
        """Per operand: its finite mask (None for an exact operand); None if a scalar is not finite."""
        ms = []
        for x in ins:
            if inexact(x):
                ms.append(finite(x))
            elif not hasattr(x, "shape") and not scalar_finite(x):
                return None
            else:
                ms.append(None)
        return ms

    def check(name: str, res: Any, ins: tuple, masks: list | None = None, elementwise: bool = False) -> None:
        if _tls.quiet or not ON:  # a program traced while on keeps these wrappers: they check only while on
            return
        for r in (res if isinstance(res, tuple) else (res,)):
            if not inexact(r):
                continue
            ok = finite(r)
            if every(ok):
                continue
            bad = cls.unary(B, "logical_not", ok)
            ms = masks if masks is not None else in_masks(ins)
            if ms is None:
                continue  # a non-finite Python scalar operand
            if elementwise:  # blamed where the operands are finite
                for m in ms:
                    if m is not None:
                        bad = cls.binary(B, "logical_and", bad, m)
                if every(cls.unary(B, "logical_not", bad)):
                    continue
            elif not all(m is None or every(m) for m in ms):
                continue
            isnan = cls.binary(B, "logical_and", bad, cls.unary(B, "isnan", r))
            n_nan, n_bad = count(isnan), count(bad)
            what = " and ".join(w for w, c in (("a NaN", n_nan), ("an infinity", n_bad - n_nan)) if c)
            raise _NonFinite(f"debug_nans: {name} made {what} ({n_bad} element{'s' * (n_bad != 1)}) from finite "
                             f"inputs, at {_describe(_user_frame())}")

    def unary(op, x, out=None):
        ms = in_masks((x,)) if out is not None and ON and not _tls.quiet else None  # out= may overwrite x
        r = cls.unary(B, op, x, out)
        check(op, r, (x,), ms, True)
        return r

    def binary(op, x, y, out=None):
        ms = in_masks((x, y)) if out is not None and ON and not _tls.quiet else None
        r = cls.binary(B, op, x, y, out)
        check(op, r, (x, y), ms, True)
        return r

    def cast(x, dtype):
        r = cls.cast(B, x, dtype)
        check(f"cast to {dtype}", r, (x,), None, True)
        return r

    def reduce(op, x, axes, keepdims):
        r = cls.reduce(B, op, x, axes, keepdims)
        check(op, r, (x,))
        return r

    def scan(op, x, axis):
        r = cls.scan(B, op, x, axis)
        check(op, r, (x,))
        return r

    def matmul(a, b):
        r = cls.matmul(B, a, b)
        check("matmul", r, (a, b))
        return r

    def linalg(op, *args, **params):
        r = cls.linalg(B, op, *args, **params)
        check(op, r, args)
        return r

    def fft(op, x, s, axes, norm):
        r = cls.fft(B, op, x, s, axes, norm)
        check(op, r, (x,))
        return r

    return {"unary": unary, "binary": binary, "cast": cast, "reduce": reduce, "scan": scan, "matmul": matmul,
            "linalg": linalg, "fft": fft}


def _int64() -> Any:
    return _dtypes.int64


# ---------------------------------------------------------------------------------------- transformations
def record_node(node: Any, name: str) -> None:
    """(reverse mode, while debug_nans is on) remember which primitive recorded ``node`` and where."""
    _NODE_WHERE[node] = (name, _user_frame())


def in_backward(e: BaseException, node: Any) -> None:
    """Add to a debug_nans error raised by the derivative of ``node`` which primitive that is."""
    if not getattr(e, "_rt_debug_nans", False) or getattr(e, "_rt_noted", False):
        return
    e._rt_noted = True  # type: ignore[attr-defined]
    info = _NODE_WHERE.get(node)
    if info is None:
        e.add_note("debug_nans: raised in the backward pass of a differentiation (rt.grad / rt.vjp)")
    else:
        e.add_note(f"debug_nans: raised in the backward pass, in the derivative of {info[0]} recorded at "
                   f"{_describe(info[1])}")


def _nonfinite_leaves(tree: Any) -> list:
    """(position, tensor) of the NumPy-backend float tensors of ``tree`` with a NaN or an infinity."""
    # deferred: cycle: the transformations (runetensor._autodiff) import this module
    from ._autodiff._pytree import tree_leaves
    nb = get_backend("numpy")
    res = []
    for i, t in enumerate(tree_leaves(tree)):
        if isinstance(t, Tensor) and t._backend is nb and t._dtype.is_inexact and t._data.size:
            h = t._data
            cls = type(nb)
            m = cls.unary(nb, "isfinite", h)
            if not cls.to_list(nb, cls.reduce(nb, "all", m, tuple(range(m.ndim)), False)):
                res.append((i, t))
    return res


def jit_call(st: Any, args: tuple, kwargs: dict) -> Any:
    """A call of the jitted function ``st`` (its ``_Jitted``) while debug_nans is on: run the program
    unchecked, check its outputs, and re-run ``st.f`` eagerly with every primitive checked if one is
    not finite."""
    # deferred: cycle: the transformations (runetensor._autodiff) import this module
    from ._autodiff._pytree import tree_map
    if _active.stack or _tls.quiet:  # inline in a transformation: its primitives are checked as they run
        return st(*args, **kwargs)
    call_args = args
    if st.donate_argnums:  # keep the arguments for a re-run: the program gets copies to donate
        def cp(x: Any) -> Any:
            return wrap(x._backend.copy(x._data), x._dtype, x._backend) if isinstance(x, Tensor) else x
        call_args = tuple(tree_map(cp, a) if i in st.donate_argnums else a for i, a in enumerate(args))
    _tls.quiet += 1
    try:
        out = st(*call_args, **kwargs)
    finally:
        _tls.quiet -= 1
    bad = _nonfinite_leaves(out)
    if not bad:
        return out
    st.f(*args, **kwargs)  # eagerly, step by step: raises at the first primitive to blame
    if _nonfinite_leaves((args, kwargs)):
        return out  # what came in non-finite went out so: nothing to blame
    i, t = bad[0]
    raise _NonFinite(f"debug_nans: jit({st.name}) returned a NaN or an infinity (output leaf {i}, shape "
                     f"{tuple(t.shape)}, {t._dtype}) from finite inputs, but re-running the function eagerly made "
                     f"none (a compiled kernel computed differently), at {_describe(_user_frame())}")


if os.environ.get("RUNETENSOR_DEBUG_NANS", "").strip().lower() in ("1", "true", "yes", "on"):
    _set(True)
