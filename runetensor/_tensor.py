"""The :class:`Tensor` type and the elementwise dispatch every family shares.

A ``Tensor`` is a strided view over a flat buffer that a backend holds.  It holds
three things: the backend's handle (``_data``: for the NumPy backend, an
``ndarray`` view that already carries shape, strides and offset), the
runetensor :class:`DType` and the backend.  Creating one is a few attribute
stores; the hot operators go straight to one backend primitive.

Family modules (``_views``, ``_indexing``, ``_elementwise``...) attach their
functions as methods with :func:`attach`, so every function is also a method
where that reads naturally (``t.reshape(...)``, ``t.sum(axes=[0])``).
"""
from __future__ import annotations

import builtins
from typing import Any, Callable, TypeVar

from . import _dtypes as D
from ._backend import get_backend
from ._dtype_rules import DTypeRule, numeric
from ._dtypes import DType, weak_result
from ._primitives import BINARY_DERIVS, UNARY_DERIVS
from ._validate import broadcast_shapes

__all__ = ["Tensor", "wrap", "as_tensor", "binary_op", "unary_op", "inplace_op", "attach", "is_tensor",
           "common_backend"]

_bool = D.bool
_PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


class Tensor:
    """An n-dimensional strided tensor.

    Build tensors with the creation functions (``rt.create``, ``rt.zeros``,
    ``rt.asarray``...).  ``Tensor(obj, dtype=None)`` is ``rt.asarray(obj, dtype)``.

    Attributes:
        shape: tuple of dimension sizes.
        dtype: the element :class:`DType`.
        ndim, size, itemsize, nbytes: rank, element count, bytes per element, total bytes.
        strides: byte strides per dimension (as the seed's ``strides``).

    >>> import runetensor as rt
    >>> t = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> t.shape, t.dtype, t.strides
    ((2, 3), rt.float32, (12, 4))
    >>> print(t + 1)
    [[2, 3, 4],
     [5, 6, 7]]
    """

    __slots__ = ("_data", "_dtype", "_backend", "__weakref__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators

    def __new__(cls, obj: Any = None, dtype: Any = None):
        t = object.__new__(cls)
        if obj is None and dtype is None:
            raise TypeError("Tensor: expected data, as in Tensor([1, 2, 3]) or rt.asarray(...)")
        src = as_tensor(obj, "Tensor", dtype=dtype)
        t._data, t._dtype, t._backend = src._data, src._dtype, src._backend
        return t

    # -- properties ------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.size * self._dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides (the seed's ``strides``)."""
        isz = self._dtype.itemsize
        return tuple(s * isz for s in self._backend.strides(self._data))

    @property
    def offset(self) -> int:
        """Element offset of the first element in the underlying buffer."""
        return self._backend.offset(self._data)

    @property
    def backend(self):
        """The backend that owns this tensor's buffer."""
        return self._backend

    # -- Python protocol ------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len: a 0-d tensor has no length")
        return self._data.shape[0]

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(f"bool: the truth value of a tensor with {self._data.size} elements is ambiguous; "
                             "use rt.any(t) or rt.all(t)")
        return builtins.bool(self._scalar())

    def _scalar(self) -> Any:
        v = self._backend.to_list(self._data)
        while isinstance(v, list):
            v = v[0]
        return v

    def __float__(self) -> float:
        if self._data.size != 1:
            raise TypeError(f"float: only a one-element tensor converts to a Python scalar, this has {self._data.size}")
        return builtins.float(self._scalar())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise TypeError(f"int: only a one-element tensor converts to a Python scalar, this has {self._data.size}")
        return builtins.int(self._scalar())

    def __complex__(self) -> complex:
        if self._data.size != 1:
            raise TypeError(f"complex: only a one-element tensor converts to a Python scalar, "
                            f"this has {self._data.size}")
        return builtins.complex(self._scalar())

    def __index__(self) -> int:
        if self._dtype.kind not in "iu" or self._data.ndim != 0:
            raise TypeError(f"index: only a 0-d integer tensor can be used as an index, got "
                            f"{self._dtype} tensor of shape {self._data.shape}")
        return builtins.int(self._scalar())

    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    def __format__(self, spec: str) -> str:
        if spec and self._data.ndim == 0:
            return format(self._scalar(), spec)
        return str(self)

    def __pos__(self) -> "Tensor":
        return self

    def __neg__(self) -> "Tensor":
        d = self._dtype
        if d.kind in "fiuc":  # the dtype is kept (bool is a TypeError, object goes the general way)
            try:
                return wrap(self._backend.unary("neg", self._data), d, self._backend)
            except TypeError:
                pass  # unary_op words it
        return unary_op("neg", self, "neg")

    def __abs__(self) -> "Tensor":
        return unary_op("abs", self, "abs")

    def __invert__(self) -> "Tensor":
        return unary_op("logical_not" if self._dtype is _bool else "bitwise_not", self, "invert")


def wrap(data: Any, dtype: DType, backend: Any) -> Tensor:
    """A Tensor around a backend handle (no checks: the caller knows the dtype)."""
    t = object.__new__(Tensor)
    t._data = data
    t._dtype = dtype
    t._backend = backend
    return t


def is_tensor(x: Any) -> bool:
    return type(x) is Tensor or isinstance(x, Tensor)


def as_tensor(x: Any, fname: str, dtype: Any = None, backend: Any = None, copy: bool | None = None) -> Tensor:
    """``x`` itself if it is a Tensor (cast to ``dtype`` if given), else a new tensor from it.

    Raises:
        TypeError / ValueError: naming ``fname``, if ``x`` cannot become a tensor.
    """
    if isinstance(x, Tensor):
        if dtype is not None:
            d = D.dtype_of(dtype)
            if d is not x._dtype:
                return wrap(x._backend.cast(x._data, d), d, x._backend)
        return x
    be = backend or get_backend()
    d = None if dtype is None else D.dtype_of(dtype)
    if isinstance(x, (list, tuple)):
        if be.level > 0:
            # deferred: cycle: runetensor._creation builds on this module's Tensor
            from ._creation import _holds_traced, _stack_nested
            if _holds_traced(x):  # tensors of a transformation: stacked, so that derivatives flow through
                return _stack_nested(x, d, fname)
        if any(isinstance(e, Tensor) for e in x):
            x = [e._backend.to_host(e._data) if isinstance(e, Tensor) else e for e in x]
    try:
        h, got = be.asarray(x, d, copy)
    except TypeError as e:
        raise TypeError(f"{fname}: cannot make a tensor from {type(x).__name__}: {e}") from None
    except ValueError as e:
        msg = str(e)
        if msg.startswith("asarray:"):
            msg = msg[len("asarray:"):].strip()
        raise ValueError(f"{fname}: cannot make a tensor from {type(x).__name__}: {msg}") from None
    return wrap(h, got, be)


_F = TypeVar("_F", bound=Callable[..., Any])


def attach(*names: str) -> Callable[[_F], _F]:
    """Decorator: also make the function a ``Tensor`` method under ``names`` (default: its own name).

    The function itself is returned unchanged (its signature stays visible to type checkers);
    ``scripts/gen_stubs.py`` writes the methods into ``_tensor.pyi``."""
    def deco(fn: _F) -> _F:
        for n in names or (fn.__name__,):
            setattr(Tensor, n, fn)
        return fn
    return deco


# ---------------------------------------------------------------------------
# Elementwise dispatch: each op's dtype rule (``_dtype_rules``: ``numeric``, ``true_division``,
# ``comparison``, ``bitwise``...) read off the primitive table (``_primitives.BINARY_DERIVS``,
# ``UNARY_DERIVS``)
# ---------------------------------------------------------------------------
BINARY_RULES: dict[str, DTypeRule] = {op: rule for op, (rule, _) in BINARY_DERIVS.items()}
UNARY_RULES: dict[str, DTypeRule] = {op: rule for op, (rule, _, _) in UNARY_DERIVS.items()}
_UNARY_RESULTS = {op: rule.results for op, rule in UNARY_RULES.items()}  # one lookup less per call


def higher_backend(a: Any, b: Any, fname: str) -> Any:
    """Of two backends on one chain of transformations, the higher level (see ``Backend.level``).

    Raises:
        ValueError: if they are not on one chain (NumPy and Dask meet on Dask: NumPy handles are taken
            as constants there).
    """
    if a is b or b is None:
        return a
    if a is None:
        return b
    if a.level == 0 == b.level and {a.name, b.name} == {"numpy", "dask"}:
        return a if a.name == "dask" else b  # NumPy operands join a Dask computation (as NumPy arrays in dask.array)
    hi, lo = (b, a) if b.level > a.level else (a, b)
    p = hi
    while p.level > lo.level:
        p = p.parent
    if p is not lo:
        raise ValueError(f"{fname}: operands live on different backends ({a.name} and {b.name})")
    return hi


def common_backend(fname: str, *xs: Any) -> Any:
    """The backend to compute on when tensors of several backends meet: the highest
    transformation level (``Backend.level``), whose primitives take the lower levels' handles as
    constants.  Non-tensors are ignored; None if there is no tensor.

    Raises:
        ValueError: if two backends are not on one chain of transformations (NumPy with Dask is Dask).
    """
    be = None
    for x in xs:
        if isinstance(x, Tensor) and x._backend is not be:
            be = higher_backend(be, x._backend, fname)
    return be


def on_common(fname: str, *xs: Any) -> tuple[Any, list]:
    """``(backend, xs)`` with every tensor among ``xs`` on :func:`common_backend` (a tensor of a lower
    level is re-wrapped, without a copy: the higher level takes its handle as a constant)."""
    be = common_backend(fname, *xs)
    return be, [(_moved(x, be) if x._backend.level == be.level else wrap(x._data, x._dtype, be))
                if isinstance(x, Tensor) and x._backend is not be else x for x in xs]


def _moved(x: "Tensor", be: Any) -> "Tensor":
    """``x`` (a NumPy-backend tensor meeting Dask tensors) as a tensor of ``be``."""
    h, d = be.asarray(x._backend.to_host(x._data), x._dtype, None)
    return wrap(h, d, be)


def as_level(t: "Tensor", be: Any, fname: str) -> "Tensor":
    """``t`` as a tensor of ``be``, a level at or below its own, for values that carry no derivative
    (indices, masks, constants of a transformation written into a tensor created outside it).

    Raises:
        ValueError: if ``be`` is not below ``t``'s backend on its chain, or ``t`` carries a derivative.
    """
    b, h = t._backend, t._data
    if b is be:
        return t
    while b is not be:
        if b.level <= be.level or not hasattr(b, "constant_value"):
            raise ValueError(f"{fname}: operands live on different backends ({t._backend.name} and {be.name})")
        try:
            h = b.constant_value(h)
        except ValueError as e:
            raise ValueError(f"{fname}: {e}") from None
        b = b.parent
    return wrap(h, t._dtype, be)


def _to_operand(x: Any, fname: str, backend: Any) -> Any:
    if isinstance(x, Tensor) or type(x) in _PY_SCALARS:
        return x
    return as_tensor(x, fname, backend=backend)


def _cast(t: Tensor, d: DType) -> Tensor:
    if t._dtype is d:
        return t
    return wrap(t._backend.cast(t._data, d), d, t._backend)


def binary_op(op: str, x: Any, y: Any, fname: str, rule: DTypeRule | None = None) -> Tensor:
    """Apply binary primitive ``op`` with promotion and broadcasting; either side may be a scalar.

    ``op`` is a contract op name, or ``"truediv"`` (true division).  ``rule``
    overrides the op's dtype rule (see ``BINARY_RULES``).
    """
    be = x._backend if isinstance(x, Tensor) else y._backend if isinstance(y, Tensor) else get_backend()
    x = _to_operand(x, fname, be)
    y = _to_operand(y, fname, be)
    xt = isinstance(x, Tensor)
    yt = isinstance(y, Tensor)
    if not xt and not yt:
        x = as_tensor(x, fname, backend=be)
        xt = True
    if xt and yt:
        if x._backend is not y._backend:
            be = common_backend(fname, x, y)
        d = x._dtype if x._dtype is y._dtype else D.promote_types(x._dtype, y._dtype)
    elif xt:
        d = weak_result(x._dtype, y)
    else:
        d = weak_result(y._dtype, x)
    rule = rule or BINARY_RULES[op]
    if op == "truediv":
        op = "div"  # the primitive (Python objects divide with their own / operator)
    dd = rule.results.get(d)
    if dd is not None:
        d, out_d = dd
        if rule.count_operand:
            _check_shift(y, fname)
    elif d.kind == "O":  # Python objects: no dtype rule, the objects' own operators decide
        out_d = _bool if rule.returns_bool else d
    else:
        rule(d, fname)  # raises the rule's TypeError
    if xt:
        x = _cast(x, d)
        xd = x._data
    else:
        xd = x
    if yt:
        y = _cast(y, d)
        yd = y._data
    else:
        yd = y
    if xt and yt and xd.shape != yd.shape:
        key = (xd.shape, yd.shape)
        if key not in _BROADCAST_OK:
            broadcast_shapes(xd.shape, yd.shape, fname=fname)
            _remember_broadcast(key)
    try:
        r = be.binary(op, xd, yd)
    except OverflowError:
        s = yd if not yt else xd
        raise ValueError(f"{fname}: scalar {s!r} is out of range for {d}") from None
    except TypeError as e:
        raise TypeError(f"{fname}: not supported for {d} tensors ({e})") from None
    return wrap(r, out_d, be)


#: shape pairs already checked to broadcast (a set lookup instead of ``broadcast_shapes`` on every
#: op; bounded: cleared when it grows past ``_BROADCAST_CACHE`` pairs)
_BROADCAST_OK: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
_BROADCAST_CACHE = 4096


def _remember_broadcast(key: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    if len(_BROADCAST_OK) >= _BROADCAST_CACHE:
        _BROADCAST_OK.clear()
    _BROADCAST_OK.add(key)


def _check_shift(s: Any, fname: str) -> None:
    """Shift counts must be non-negative (as Python's ``<<``; NumPy leaves them undefined)."""
    if isinstance(s, Tensor):
        if s._dtype.kind == "i" and s._data.size:
            from ._guards import check_values  # (imports this module)

            def check(lo: Any, hi: Any) -> None:
                if lo < 0:
                    raise ValueError(f"{fname}: shift counts must be >= 0, got a negative count")

            check_values(s, check)  # a run-time guard under rt.jit
    elif s < 0:
        raise ValueError(f"{fname}: shift count must be >= 0, got {s}")


def inplace_op(op: str, target: Any, value: Any, fname: str, rule: DTypeRule | None = None) -> Tensor:
    """``target op= value`` in place; returns ``target``.

    ``value`` broadcasts to ``target``'s shape; the result must be storable in
    ``target``'s dtype without a lossy promotion (``int32 += float`` is a TypeError).

    Raises:
        TypeError: if ``target`` is not a tensor or the result dtype does not fit it.
        ValueError: if ``value`` does not broadcast to ``target``'s shape, or the target is read-only.
    """
    if not isinstance(target, Tensor):
        raise TypeError(f"{fname}: the target must be a Tensor, got {type(target).__name__}")
    d = target._dtype
    be = target._backend
    rule = rule or BINARY_RULES[op]
    td = target._data
    # a target of a kind the rule keeps (result dtype = the operands' dtype, no check of values) and an
    # operand of the target's dtype go straight to the primitive, writing into the target (no
    # temporary, no second pass)
    if not rule.returns_bool and d.kind in rule.kinds_kept:
        if type(value) is Tensor and value._dtype is d and value._backend is be:
            vd = value._data
            ok = vd.shape == td.shape or broadcast_shapes(td.shape, vd.shape, fname=fname) == td.shape
        else:
            vd = value
            ok = type(value) in _PY_SCALARS and weak_result(d, value) is d
        if ok:
            try:
                be.binary("div" if op == "truediv" else op, td, vd, out=td)
            except OverflowError:
                raise ValueError(f"{fname}: scalar {value!r} is out of range for {d}") from None
            except ValueError as e:
                raise ValueError(f"{fname}: cannot write into the target: {e}") from None
            except TypeError:
                pass  # not defined for this dtype: the general path reports it
            else:
                return target
    r = binary_op(op, target, value, fname, rule)
    if r._backend is not be:
        be = common_backend(fname, target, r)
    if r._data.shape != td.shape:
        raise ValueError(f"{fname}: result shape {r._data.shape} does not match the target's {td.shape}")
    if r._dtype is not d:
        if D.promote_types(d, r._dtype) is not d:
            raise TypeError(f"{fname}: result dtype {r._dtype} cannot be stored in-place into {d}")
        r = _cast(r, d)
    try:
        be.assign(td, r._data)
    except ValueError as e:
        raise ValueError(f"{fname}: cannot write into the target: {e}") from None
    return target


def unary_op(op: str, x: Any, fname: str) -> Tensor:
    """Apply unary primitive ``op`` with its dtype rule (see ``UNARY_RULES``)."""
    x = as_tensor(x, fname)
    d = x._dtype
    k = d.kind
    dd = _UNARY_RESULTS.get(op, numeric.results).get(d)
    if dd is not None:
        d, out_d = dd
    elif k == "O":  # Python objects: no dtype rule
        out_d = d
    else:
        UNARY_RULES.get(op, numeric)(d, fname)  # raises the rule's TypeError
    if op in ("isnan", "isinf") and k in "biu":
        return wrap(x._backend.full(x._data.shape, False, _bool), _bool, x._backend)
    if op == "isfinite" and k in "biu":
        return wrap(x._backend.full(x._data.shape, True, _bool), _bool, x._backend)
    if op in ("real", "imag") and k != "c":
        if op == "real":
            return wrap(x._backend.copy(x._data), d, x._backend)
        return wrap(x._backend.full(x._data.shape, 0, d), d, x._backend)
    x = _cast(x, d)
    try:
        r = x._backend.unary(op, x._data)
    except TypeError as e:
        raise TypeError(f"{fname}: not supported for {d} tensors ({e})") from None
    return wrap(r, out_d, x._backend)


# ---------------------------------------------------------------------------
# Python operators (Array API semantics: / is true division, // floors, % takes
# the divisor's sign).  Generated from one table.
# ---------------------------------------------------------------------------
_new = object.__new__


_float = builtins.float
_int = builtins.int

#: operators with a shortcut past binary_op: (contract op, bool result?, dtype kinds).  Within
#: those kinds, an operand of the tensor's own dtype, or a Python int/float the dtype absorbs
#: (weak typing: float kinds take both, integer kinds take ints), leaves the result dtype as
#: binary_op would compute it, with no cast; anything else, and any error, goes through
#: binary_op, which computes the same result or words the error.
_SHORTCUT = {
    "add": ("add", False, "biufc"), "sub": ("sub", False, "iufc"), "mul": ("mul", False, "biufc"),
    "truediv": ("div", False, "fc"), "lt": ("lt", True, "biuf"), "le": ("le", True, "biuf"),
    "gt": ("gt", True, "biuf"), "ge": ("ge", True, "biuf"), "eq": ("eq", True, "biufc"),
    "ne": ("ne", True, "biufc"),
}


def _binary_dunder(op: str, fname: str, reflected: bool) -> Callable[[Tensor, Any], Tensor]:
    sc = _SHORTCUT.get(op)
    if sc is None:
        if reflected:
            def method(self: Tensor, other: Any) -> Tensor:
                return binary_op(op, other, self, fname)
        else:
            def method(self: Tensor, other: Any) -> Tensor:
                return binary_op(op, self, other, fname)
        method.__name__ = fname
        return method
    prim, to_bool, kinds = sc
    tkinds = kinds if prim == "div" else kinds + "O"  # object true division: binary_op's way
    fkinds = "".join(k for k in kinds if k in "f")   # kinds a Python float keeps
    ikinds = "".join(k for k in kinds if k in "fiu")  # kinds a Python int keeps
    if reflected:
        def method(self: Tensor, other: Any) -> Tensor:
            t = type(other)
            if t is _float or t is _int:
                d = self._dtype
                if d.kind in (fkinds if t is _float else ikinds):
                    try:
                        r = _new(Tensor)
                        r._data = self._backend.binary(prim, other, self._data)
                        r._dtype = _bool if to_bool else d
                        r._backend = self._backend
                        return r
                    except (TypeError, ValueError, OverflowError):
                        pass  # binary_op reports it
            return binary_op(op, other, self, fname)
    else:
        def method(self: Tensor, other: Any) -> Tensor:
            t = type(other)
            d = self._dtype
            if t is Tensor:
                if other._dtype is d and other._backend is self._backend and d.kind in tkinds:
                    try:  # same dtype; the backend broadcasts (a shape mismatch falls to binary_op)
                        r = _new(Tensor)  # wrap(), inlined: this is the hottest path
                        r._data = self._backend.binary(prim, self._data, other._data)
                        r._dtype = _bool if to_bool else d
                        r._backend = self._backend
                        return r
                    except (TypeError, ValueError, OverflowError):
                        pass  # binary_op reports it
            elif t is _float or t is _int:
                if d.kind in (fkinds if t is _float else ikinds):
                    try:
                        r = _new(Tensor)
                        r._data = self._backend.binary(prim, self._data, other)
                        r._dtype = _bool if to_bool else d
                        r._backend = self._backend
                        return r
                    except (TypeError, ValueError, OverflowError):
                        pass
            return binary_op(op, self, other, fname)
    method.__name__ = fname
    return method


def _inplace_dunder(op: str, fname: str) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        return inplace_op(op, self, other, fname)
    method.__name__ = fname
    return method


for _dunder, _op in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"),
                     ("floordiv", "floordiv"), ("mod", "pymod"), ("pow", "pow"),
                     ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                     ("lshift", "lshift"), ("rshift", "rshift")):
    setattr(Tensor, f"__{_dunder}__", _binary_dunder(_op, f"__{_dunder}__", False))
    setattr(Tensor, f"__r{_dunder}__", _binary_dunder(_op, f"__r{_dunder}__", True))
    setattr(Tensor, f"__i{_dunder}__", _inplace_dunder(_op, f"__i{_dunder}__"))

for _dunder, _op in (("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"), ("eq", "eq"), ("ne", "ne")):
    setattr(Tensor, f"__{_dunder}__", _binary_dunder(_op, f"__{_dunder}__", False))
del _dunder, _op


def _install_c_operators() -> None:
    """The common cases of the operators above in C (``runetensor/_backend/_fastops.py``: two tensors of
    one plain NumPy dtype, or a tensor and a Python number it keeps, small); the Python methods stay
    the fallback for everything else, and the path when the extension is not built."""
    from ._backend import _fastops  # deferred: only this installer, run once below, uses it
    ops: list[tuple[str, str, Any, str, bool, bool]] = []
    for op, (prim, to_bool, kinds) in _SHORTCUT.items():
        res = _bool if to_bool else None
        ops.append((f"__{op}__", prim, res, kinds, False, False))
        if not to_bool:
            ops.append((f"__r{op}__", prim, res, kinds, True, False))
    ops.append(("__neg__", "neg", None, "fiu", False, True))
    if _fastops.install(Tensor, ops) and _fastops.WRAP is not None:
        global wrap
        wrap = _fastops.WRAP  # the same Tensor, built in C (modules importing wrap from here get this one)


_install_c_operators()
del _install_c_operators
