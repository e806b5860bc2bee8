"""The backend contract: the closed set of primitives a backend implements.

The frontend (everything outside ``runetensor._backend``) validates
arguments, normalises axes, broadcasts shapes, promotes dtypes and chooses
result dtypes; it then calls the primitives below on *handles*.  A handle is
the backend's own array object (a NumPy ``ndarray`` view for the NumPy
backend; a CuPy or Dask array for the backends to come).  A handle must
expose ``.shape`` (tuple of ints), ``.ndim`` and ``.size``; everything else
goes through the backend.

What the frontend guarantees every primitive
--------------------------------------------
* dtypes are :class:`runetensor.DType` objects; operands of ``binary`` and
  ``where`` already share one dtype (the promoted one), except that a binary
  operand may be a Python scalar that is representable in the other operand's
  dtype;
* shapes of elementwise operands are broadcast-compatible (NumPy rules) and the
  backend broadcasts them; ``out=`` handles have exactly the broadcast shape;
* axes are non-negative, in range and free of duplicates; permutations are
  permutations; index keys are fully normalised and in range (see
  ``view_index``, ``gather``, ``scatter``);
* ``as_strided`` requests stay inside the buffer (the frontend checks the
  bounds with ``buffer_size``).

What every backend guarantees the frontend
------------------------------------------
* movement primitives (``reshape``, ``expand``, ``permute``, ``view_index``,
  ``flip``, ``as_strided``) never touch data and return views sharing memory;
* every other primitive returns a fresh handle unless it writes into ``out``
  or into its first argument (``assign``, ``scatter``);
* results have the documented dtype (same as the input, ``bool`` for
  predicates, ``int64`` for indices);
* low-precision floats (float16, bfloat16, float8) compute in float32 and
  round back once; integer division or modulo by zero gives 0; integer
  overflow wraps; no primitive prints warnings or reads outside a buffer.

A backend subclasses :class:`Backend` and implements each method.  The test
suite ``tests/backend_contract.py`` checks any backend against these rules:
``run_contract_suite(MyBackend())``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

from .._dtypes import DType

Handle = Any
Shape = tuple[int, ...]

#: Unary elementwise operations (``unary(op, x)``); result dtype = input dtype
#: except the predicates, which give bool, and ``real``/``imag``/``abs`` of a
#: complex input, which give the matching real type.
UNARY_OPS = (
    "neg", "abs", "sign", "square", "sqrt", "recip", "exp", "exp2", "expm1",
    "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "trunc", "ceil", "floor",
    "round",      # half away from zero (the seed's round)
    "rint",       # half to even (the Array API's round)
    "isnan", "isinf", "isfinite", "signbit",   # -> bool
    "bitwise_not", "logical_not",              # logical_not -> bool
    "conj", "real", "imag", "erf",
)
UNARY_PREDICATES = frozenset({"isnan", "isinf", "isfinite", "signbit", "logical_not"})

#: Binary elementwise operations (``binary(op, x, y)``); result dtype = operand
#: dtype except the comparisons and logical ops, which give bool.
BINARY_OPS = (
    "add", "sub", "mul",
    "div",        # true division for inexact types; integers truncate toward zero, x/0 -> 0
    "floordiv",   # floor division (Python //); integers: x//0 -> 0
    "mod",        # remainder with the dividend's sign (C fmod, the seed's mod_); x%0 -> 0
    "pymod",      # remainder with the divisor's sign (Python %); x%0 -> 0
    "pow", "maximum", "minimum",   # maximum/minimum propagate NaN
    "fmax", "fmin",                # ignore NaN
    "atan2", "hypot", "copysign", "nextafter", "logaddexp",
    "eq", "ne", "lt", "le", "gt", "ge",              # -> bool
    "logical_and", "logical_or", "logical_xor",      # -> bool
    "bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift",
)
BINARY_PREDICATES = frozenset({"eq", "ne", "lt", "le", "gt", "ge",
                               "logical_and", "logical_or", "logical_xor"})

#: ``reduce(op, x, axes, keepdims)``; sum/prod keep the dtype (accumulating
#: low-precision floats in float32), max/min propagate NaN, all/any give bool.
REDUCE_OPS = ("sum", "prod", "max", "min", "all", "any")
#: ``arg_reduce(op, x, axis, keepdims)`` -> int64, first occurrence, NaN counts as extreme.
ARG_REDUCE_OPS = ("argmax", "argmin")
#: ``scan(op, x, axis)``: inclusive scans; cummax/cummin propagate NaN.
SCAN_OPS = ("cumsum", "cumprod", "cummax", "cummin")


class Backend(ABC):
    """Base class of backends: every method below is a primitive of the contract."""

    #: short name ("numpy", "cupy", "dask")
    name: str = "abstract"

    # -- introspection -------------------------------------------------
    @abstractmethod
    def dtype(self, h: Handle) -> DType:
        """The runetensor dtype of a handle."""
        ...

    @abstractmethod
    def strides(self, h: Handle) -> Shape:
        """Strides in elements (may be negative or zero)."""
        ...

    @abstractmethod
    def offset(self, h: Handle) -> int:
        """Element offset of the handle's first element in its underlying buffer."""
        ...

    @abstractmethod
    def buffer_size(self, h: Handle) -> int:
        """Number of elements in the underlying buffer."""
        ...

    @abstractmethod
    def is_c_contiguous(self, h: Handle) -> bool:
        ...

    @abstractmethod
    def shares_memory(self, a: Handle, b: Handle) -> bool:
        """Whether two handles view the same underlying buffer."""
        ...

    # -- creation --------------------------------------------------------
    @abstractmethod
    def empty(self, shape: Shape, dtype: DType) -> Handle:
        ...

    @abstractmethod
    def full(self, shape: Shape, value: Any, dtype: DType) -> Handle:
        ...

    @abstractmethod
    def arange(self, start: float, stop: float, step: float, dtype: DType) -> Handle:
        """``start, start+step, ...`` up to (excluding) ``stop``, computed in float64 or int64 and cast."""
        ...

    @abstractmethod
    def asarray(self, obj: Any, dtype: DType | None, copy: bool | None) -> tuple[Handle, DType]:
        """A handle from nested sequences, scalars, buffers or host arrays.

        ``copy=None`` shares memory when the layout and dtype allow, ``True``
        always copies, ``False`` raises ``ValueError`` if a copy is needed.
        Returns the handle and its dtype (inferred when ``dtype`` is None).
        """
        ...

    @abstractmethod
    def random_bits(self, seed: int, n: int) -> Handle:
        """``n`` uint32 words of the counter-based generator for ``seed`` (a 64-bit int).

        Word ``i`` depends only on ``(seed, i)``: Philox4x32-10 with key =
        the seed's two 32-bit halves and counter ``(i // 4, 0, 0, 0)``,
        word ``i % 4`` of the block.
        """
        ...

    # -- movement: views only -----------------------------------------------
    @abstractmethod
    def reshape(self, h: Handle, shape: Shape) -> Handle | None:
        """A view with ``shape`` (same size), or None if the strides cannot express it."""
        ...

    @abstractmethod
    def expand(self, h: Handle, shape: Shape) -> Handle:
        """Broadcast view (zero strides) to ``shape``."""
        ...

    @abstractmethod
    def permute(self, h: Handle, axes: Sequence[int]) -> Handle:
        ...

    @abstractmethod
    def view_index(self, h: Handle, key: tuple) -> Handle:
        """Basic indexing: ``key`` holds, per axis, an in-range int, a ``slice``
        with normalised ``start, stop, step`` (no Nones; step may be negative),
        or ``None`` (a new axis of size 1); it covers every axis."""
        ...

    @abstractmethod
    def flip(self, h: Handle, axes: Sequence[int]) -> Handle:
        ...

    @abstractmethod
    def as_strided(self, h: Handle, shape: Shape, strides: Shape, offset: int) -> Handle:
        """A view of ``h``'s buffer; ``strides``/``offset`` in elements, offset from the buffer start."""
        ...

    # -- elementwise ---------------------------------------------------------
    @abstractmethod
    def unary(self, op: str, x: Handle, out: Handle | None = None) -> Handle:
        ...

    @abstractmethod
    def binary(self, op: str, x: Handle, y: Handle, out: Handle | None = None) -> Handle:
        ...

    @abstractmethod
    def where(self, cond: Handle, x: Handle, y: Handle) -> Handle:
        ...

    @abstractmethod
    def cast(self, x: Handle, dtype: DType) -> Handle:
        """A fresh handle with values converted (C casting; floats to ints truncate, NaN/inf to 0)."""
        ...

    # -- reductions, scans, sorting --------------------------------------------
    @abstractmethod
    def reduce(self, op: str, x: Handle, axes: tuple[int, ...], keepdims: bool) -> Handle:
        ...

    @abstractmethod
    def arg_reduce(self, op: str, x: Handle, axis: int, keepdims: bool) -> Handle:
        ...

    @abstractmethod
    def scan(self, op: str, x: Handle, axis: int) -> Handle:
        ...

    @abstractmethod
    def sort(self, x: Handle, axis: int, descending: bool) -> tuple[Handle, Handle]:
        """Stable sort: (values, int64 indices); NaN last ascending, first descending."""
        ...

    @abstractmethod
    def argsort(self, x: Handle, axis: int, descending: bool) -> Handle:
        ...

    # -- gather / scatter ----------------------------------------------------------
    @abstractmethod
    def gather(self, x: Handle, key: tuple) -> Handle:
        """Advanced indexing with NumPy's rules.  ``key`` covers every axis with
        normalised slices, ints, ``None``, int64 index handles (in range,
        non-negative) or bool handles (matching the axes they cover)."""
        ...

    @abstractmethod
    def scatter(self, x: Handle, key: tuple, values: Handle) -> None:
        """``x[key] = values`` in place (values broadcast); last write wins for duplicates."""
        ...

    @abstractmethod
    def searchsorted(self, sorted_: Handle, values: Handle, side: str) -> Handle:
        """int64 insertion points of ``values`` (any shape) into the 1-d ascending
        ``sorted_`` (same dtype): ``side="left"`` gives the first position where each
        value fits, ``"right"`` the last.  NaN orders after every other value."""
        ...

    @abstractmethod
    def nonzero(self, x: Handle) -> tuple[Handle, ...]:
        """int64 coordinates of non-zero elements, one handle per axis, row-major order."""
        ...

    # -- memory ----------------------------------------------------------------------
    @abstractmethod
    def copy(self, x: Handle) -> Handle:
        """A fresh C-contiguous copy."""
        ...

    @abstractmethod
    def contiguous(self, x: Handle) -> Handle:
        """``x`` itself if C-contiguous, else a C-contiguous copy."""
        ...

    @abstractmethod
    def assign(self, dst: Handle, src: Handle | Any) -> None:
        """Write ``src`` (broadcast to ``dst``'s shape, same dtype, or a scalar) into ``dst``."""
        ...

    # -- products ----------------------------------------------------------------------
    @abstractmethod
    def matmul(self, a: Handle, b: Handle) -> Handle:
        """NumPy ``@`` on operands of one dtype, both with ndim >= 1."""
        ...

    # -- host transfer ---------------------------------------------------------------------
    @abstractmethod
    def to_host(self, x: Handle) -> Any:
        """A NumPy array with the same values (a view where possible)."""
        ...

    @abstractmethod
    def to_list(self, x: Handle) -> Any:
        """Nested Python lists of Python scalars (``float``, ``int``, ``bool``, ``complex``)."""
        ...


def primitive_names() -> list[str]:
    """The names of the contract's primitives, in declaration order."""
    return [n for n, v in Backend.__dict__.items() if getattr(v, "__isabstractmethod__", False)]
