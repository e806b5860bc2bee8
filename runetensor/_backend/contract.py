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
  round back once, except ``neg``/``abs``, which flip / clear the sign bit
  (IEEE 754: a NaN keeps its payload); integer division or modulo by zero gives 0; integer
  overflow wraps; no primitive prints warnings or reads outside a buffer;
* one return type per primitive: a handle (``reshape``: a handle or None when the strides
  cannot express the view), a tuple of handles (``sort``, ``nonzero``, the multi-output
  ``linalg`` ops), None for the writes (``assign``, ``scatter``), Python values for the host
  primitives (``to_list``, ``to_bytes``, ``value_range``...);
* broadcast views (``expand``, zero strides from ``as_strided``) are read-only: writing into
  one raises ``ValueError``;
* the exceptions a primitive raises are: ``ValueError`` for a write the buffer refuses
  (read-only), ``TypeError`` for an op a dtype does not support, ``OverflowError`` for a
  Python scalar operand out of the dtype's range, :class:`NumericalFailure` from ``linalg``,
  ``BufferError`` from the DLPack primitives and ``MemoryError`` when an allocation fails;
  the frontend turns each into its own message naming the user's function.

Backends and levels
-------------------
A backend that computes (NumPy; CuPy and Dask to come) has ``level`` 0.  Transformations
(``rt.grad``, ``rt.jvp``...) are backends too (``runetensor._autodiff``): their handles wrap
the handles of a *parent* backend, ``level`` is the parent's + 1, and their primitives take
any lower level's handle as a constant.  When tensors of different levels meet, the frontend
computes on the highest one (``_tensor.common_backend``).  The derivative rules of each
primitive are in ``runetensor._primitives``, one entry per primitive.

Capabilities
------------
Some primitives need the strided memory model to hold all the way down (a byte buffer, raw
pointers).  A backend lists what it supports in :attr:`Backend.capabilities`, names from
``CAPABILITIES``; the NumPy backend has them all, the Dask backend (whose arrays are immutable
graphs) has no ``"buffer"`` and no ``"dlpack"``.  The frontend checks a capability once, before
calling the primitives that need it (:meth:`Backend.require`), and raises ``TypeError`` naming
the user's function and the backend; the contract suite skips, with the reason, exactly the
checks of the capabilities a backend leaves out.

A backend subclasses :class:`Backend` and implements each method.  The test
suite ``tests/backend_contract.py`` checks any backend against these rules:
``run_contract_suite(MyBackend())``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

from .. import _dtypes as D
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
    "floordiv",   # floor division (Python //; floats with an infinite operand: floor(x/y)); integers: x//0 -> 0
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

#: ``linalg(op, *handles, **params)``: dense linear algebra on stacks of
#: matrices (leading axes are batch axes, broadcast where two operands meet).
#: The frontend guarantees: operands share one dtype among float32, float64,
#: complex64, complex128 (``einsum`` also takes integer and bool operands);
#: matrices have ndim >= 2 and are square where the op needs it.
#:
#: ======================  ===============================  =====================================
#: op (handles)            params                           result
#: ======================  ===============================  =====================================
#: cholesky (a)            upper: bool                      L (a = L L^H) or U (a = U^H U)
#: qr (a)                  mode: "reduced" | "complete"     (q, r)
#: svd (a)                 full_matrices: bool              (u, s, vh), s real, descending
#: svdvals (a)                                              s (real dtype)
#: eig (a)                                                  (w, v), always complex
#: eigvals (a)                                              w, always complex
#: eigh (a)                uplo: "L" | "U"                  (w real ascending, v)
#: eigvalsh (a)            uplo: "L" | "U"                  w (real dtype, ascending)
#: det (a)                                                  d, shape a.shape[:-2]
#: slogdet (a)                                              (sign, log|det|), log|det| real
#: inv (a)                                                  a^-1
#: pinv (a)                rtol: float | None, hermitian    Moore-Penrose pseudo-inverse
#: solve (a, b)            (b is (..., M, K))               x with a x = b
#: lstsq (a, b)            rcond: float | None              (x, residuals, rank, sv): for 2-D
#:                                                          a, rank is an int, else an int64 handle
#: einsum (*ops)           subscripts: str (validated)      the contraction
#: ======================  ===============================  =====================================
#:
#: Numerical failure (singular matrix, not positive definite, no convergence)
#: raises :class:`NumericalFailure`; the frontend names the operation.
LINALG_OPS = ("cholesky", "qr", "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "det",
              "slogdet", "inv", "pinv", "solve", "lstsq", "einsum")
#: ``fft(op, x, s, axes, norm)``: discrete Fourier transforms over ``axes``
#: (distinct, normalised, at least one; ``hfft``/``ihfft`` exactly one) with
#: transform lengths ``s`` (positive ints, one per axis: the input is cropped
#: or zero-padded to them; for ``irfft``/``hfft`` they are the real output
#: lengths).  ``norm`` is "backward", "forward" or "ortho".  Input dtypes:
#: complex64/complex128 for fft, ifft, irfft, hfft; float32/float64 for rfft,
#: ihfft.  Results keep the precision (complex64 <-> float32).
FFT_OPS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


#: What a backend may support beyond the primitives every backend has (``Backend.capabilities``):
#:
#: =================  ==================================================================================
#: name               primitives (and frontend functions) that need it
#: =================  ==================================================================================
#: ``strides``        ``strides``, ``offset``, ``buffer_size``: the strided layout of a view over its buffer
#: ``as_strided``     ``as_strided`` (``rt.as_strided``, diagonals, sliding windows)
#: ``buffer``         ``from_buffer``: a handle viewing a foreign byte buffer (``rt.io`` readers, pickling)
#: ``dlpack``         ``dlpack``, ``dlpack_device``, ``from_dlpack`` (``__dlpack__``, ``rt.from_dlpack``)
#: ``inplace_views``  writes (``assign``, ``scatter``, ``out=``) through a view reach its base
#: ``fusion``         ``Backend.fusion()`` gives a :class:`Fuser`: ``rt.jit`` compiles its programs' elementwise
#:                    chains into kernels and reuses donated buffers (without it, programs replay step by step)
#: =================  ==================================================================================
CAPABILITIES = frozenset({"strides", "as_strided", "buffer", "dlpack", "inplace_views", "fusion"})

#: the primitives each capability gates (the contract suite skips their checks when it is missing)
CAPABILITY_PRIMITIVES = {
    "strides": ("strides", "offset", "buffer_size"),
    "as_strided": ("as_strided",),
    "buffer": ("from_buffer",),
    "dlpack": ("dlpack", "dlpack_device", "from_dlpack"),
    "inplace_views": (),
    "fusion": (),
}


class BatchedValueError(ValueError):
    """Raised by a backend asked for one value where it holds one per lane (under ``rt.vmap``):
    ``to_list``, ``to_host``... of a batched handle."""


class TracedValueError(TypeError, BatchedValueError):
    """Raised by the tracer backend of ``rt.jit`` asked for a value while tracing (``to_list``,
    ``value_range``...): a ``TypeError``; also a :class:`BatchedValueError`, so that ``rt.cond``,
    ``rt.switch`` and 0-d index tensors take the same data-parallel path as under ``rt.vmap``.
    ``backend`` and ``handle`` name the traced value (index validation defers its check to run
    time through them)."""

    def __init__(self, msg: str, backend: Any = None, handle: Any = None):
        super().__init__(msg)
        self.backend = backend
        self.handle = handle


class NumericalFailure(ArithmeticError):
    """Raised by ``Backend.linalg`` when the input is numerically unusable
    (singular, not positive definite, no convergence); the frontend turns it
    into :class:`runetensor.LinAlgError` naming the operation."""


class Fuser(ABC):
    """What a backend with the ``"fusion"`` capability offers ``rt.jit`` (:meth:`Backend.fusion`):
    compiled kernels for the programs it traces over this backend, and reuse of donated buffers.

    A program (``runetensor._jit._program.Program``) gives ``steps`` (``runetensor._tracers._jit.Step``:
    ``name``, ``fn``, ``ins`` of ``Slot``/``Const``, ``outs``, ``params``, ``aval``), ``avals`` (per slot:
    shape, dtype, C-contiguous, strides, or None), ``out_slots`` and ``P`` (this backend).  Every step
    a fuser makes computes what the steps it replaces computed (docs/jit.md: bit for bit, or within the
    documented bounds) and falls back to them for operands of an unexpected layout.
    """

    @abstractmethod
    def fuse(self, program: Any) -> int:
        """Replace groups of ``program.steps`` by compiled steps (named ``"fused"``); the number of
        kernels made (0: the steps are left as they were)."""

    @abstractmethod
    def recycle(self, program: Any) -> int:
        """Let steps of ``program`` write their results into buffers they keep between calls (reused
        once nothing refers to them); the number of steps changed."""

    @abstractmethod
    def fused_donation(self, step: Any, slot: int, avals: list, alias: set, out_slots: Any,
                       taken: set) -> tuple | None:
        """For a ``"fused"`` step this fuser made, ``(result index, kernel or None)`` when its result may
        be written into the buffer of donated input ``slot`` (``alias``: the slots that are ``slot`` or
        views of it; ``taken``: outputs already given to another input), else None."""

    @abstractmethod
    def can_donate(self, h: Handle, others: list, consts: list) -> bool:
        """Whether handle ``h`` may receive a result in place at this call: nothing else (``others``:
        the other arguments; ``consts``: the program's captured handles) shares its memory."""


class Backend(ABC):
    """Base class of backends: every method below is a primitive of the contract."""

    #: short name ("numpy", "cupy", "dask")
    name: str = "abstract"
    #: transformation level: 0 for a backend that computes (NumPy, ...); a tracer backend of a
    #: transformation (``rt.grad``, ``rt.jvp``...) has its parent's level + 1.  Where operands of
    #: different levels meet, the frontend computes on the highest one (see ``_tensor.common_backend``),
    #: whose primitives take the lower levels' handles as constants.
    level: int = 0
    #: the capabilities (``CAPABILITIES``) this backend supports; the frontend checks them with
    #: :meth:`require` before calling the primitives that need them (``"fusion"``: a backend that has it
    #: lists it and overrides :meth:`fusion`)
    capabilities: frozenset = CAPABILITIES - {"fusion"}

    def require(self, capability: str, fname: str) -> None:
        """Raise ``TypeError`` naming ``fname`` and this backend if it lacks ``capability``.

        >>> import runetensor as rt
        >>> rt.get_backend("numpy").require("dlpack", "__dlpack__")  # the NumPy backend has them all
        """
        if capability not in self.capabilities:
            raise TypeError(f"{fname}: the {self.name} backend does not support this (it has no {capability!r} "
                            f"capability; its tensors are not strided memory buffers); convert the tensor first "
                            f"with t.to_backend('numpy')")

    def fusion(self) -> Fuser | None:
        """The :class:`Fuser` that compiles ``rt.jit`` programs over this backend, or None (the
        programs replay their steps one by one).  Not a primitive: ``rt.jit`` asks a backend with the
        ``"fusion"`` capability once per traced program.  Not abstract: the default is None.

        >>> import runetensor as rt
        >>> rt.get_backend("numpy").fusion() is not None
        True
        """
        return None

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

    def random_uniform(self, seed: int, n: int, dtype: DType) -> Handle:
        """``n`` uniform values in ``[0, 1)`` (a 1-d handle) of ``dtype`` float32 or float64,
        defined on the ``random_bits`` stream: float32 value ``i`` is ``(word i >> 8) * 2**-24``;
        float64 value ``i`` is ``((word 2i >> 5) * 2**26 + (word 2i+1 >> 6)) * 2**-53`` (every
        step exact).

        Not abstract: this default composes ``random_bits``, ``binary`` and ``cast``; a
        backend may fuse it, with the same values bit for bit.
        """
        if dtype is D.float64:
            w = self.reshape(self.random_bits(seed, 2 * n), (n, 2))
            col = lambda j: self.view_index(w, (slice(0, n, 1), j))  # noqa: E731
            hi = self.cast(self.binary("rshift", col(0), 5), D.float64)
            lo = self.cast(self.binary("rshift", col(1), 6), D.float64)
            return self.binary("mul", self.binary("add", self.binary("mul", hi, 67108864.0), lo), 2.0 ** -53)
        if dtype is not D.float32:
            raise TypeError(f"random_uniform: dtype must be float32 or float64, got {dtype}")
        return self.binary("mul", self.cast(self.binary("rshift", self.random_bits(seed, n), 8), D.float32),
                           2.0 ** -24)

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
        or ``None`` (a new axis of size 1); it covers every axis.  Slices mean
        what they mean in Python, so a negative-step slice that runs past index
        0 (``slice.indices`` gives ``stop == -1``) arrives with ``stop=None``."""
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
    def clip(self, x: Handle, lo: Handle | None, hi: Handle | None) -> Handle:
        """``minimum(maximum(x, lo), hi)`` in one pass (NumPy's ``clip``).

        ``lo`` and ``hi`` are handles of ``x``'s dtype (real, not complex),
        broadcast-compatible with ``x``, or None for no bound (not both None).
        NaN in any operand propagates.  The result has the broadcast shape.
        """
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
    def scatter(self, x: Handle, key: tuple, values: Handle, mode: str = "set") -> None:
        """``x[key] = values`` in place (values broadcast, a handle of ``x``'s dtype or a scalar).

        ``mode="set"``: last write wins for duplicate positions; ``mode="add"``: ``x[key] += values``
        with every duplicate position accumulated (NumPy's ``np.add.at``; the transpose of ``gather``).
        """
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

    def value_range(self, x: Handle) -> tuple[Any, Any] | None:
        """``(min, max)`` of a real or bool handle as Python scalars, None if it is empty.

        The one value read that only validates or chooses a path (index bounds, shift counts, the
        zero test in ``prod``'s derivative): a tracer backend answers it from its values, a lazy
        backend computes it.  NaN propagates.  Not abstract: the default reduces and reads.
        """
        if x.size == 0:
            return None
        axes = tuple(range(x.ndim))
        if self.dtype(x).kind == "b":
            return (bool(self.to_list(self.reduce("all", x, axes, False))),
                    bool(self.to_list(self.reduce("any", x, axes, False))))
        return self.to_list(self.reduce("min", x, axes, False)), self.to_list(self.reduce("max", x, axes, False))

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

    # -- functional composites: a backend may replace them, a tracer backend gives them rules --
    def concatenate(self, hs: Sequence[Handle], axis: int) -> Handle:
        """A fresh handle: ``hs`` (at least one; one dtype and rank, equal shapes off ``axis``)
        joined along ``axis``.

        Not abstract: the default copies each into a fresh buffer with ``assign``.
        """
        first = hs[0].shape
        total = sum(h.shape[axis] for h in hs)
        out = self.empty(first[:axis] + (total,) + first[axis + 1:], self.dtype(hs[0]))
        pre = tuple(slice(0, n, 1) for n in first[:axis])
        post = tuple(slice(0, n, 1) for n in first[axis + 1:])
        pos = 0
        for h in hs:
            n = h.shape[axis]
            if n:
                self.assign(self.view_index(out, pre + (slice(pos, pos + n, 1),) + post), h)
            pos += n
        return out

    def pad(self, h: Handle, widths: Sequence[tuple[int, int]], value: Any) -> Handle:
        """A fresh handle: ``h`` with ``widths[i] = (before, after)`` elements (non-negative ints)
        of ``value`` (a scalar storable in ``h``'s dtype, or a 0-d handle of it) around dimension ``i``.

        Not abstract: the default fills a fresh buffer and assigns ``h`` into its middle.
        """
        shape = tuple(b + n + a for (b, a), n in zip(widths, h.shape))
        out = self.empty(shape, self.dtype(h))
        self.assign(out, value)
        if h.size:
            self.assign(self.view_index(out, tuple(slice(b, b + n, 1) for (b, _), n in zip(widths, h.shape))), h)
        return out

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

    # -- effects -------------------------------------------------------------------------
    def callback(self, fn: Callable[..., None], hs: Sequence[Handle]) -> None:
        """Call ``fn(*values)`` for its effect (``rt.debug_print``), ``values`` the handles ``hs`` as
        host NumPy arrays (what ``to_host`` gives: ``fn`` reads them and must not keep or write them);
        returns None.

        A backend that computes calls ``fn`` now.  A transformation passes it down with its handles'
        values: differentiation with the primal values (no derivative); ``rt.vmap`` once per lane
        with that lane's slices; ``rt.jit`` records it as a step that calls ``fn`` at every run of
        the program with that run's values (never pruned, never fused).  Not abstract: the default
        reads each handle with ``to_host``.
        """
        fn(*[self.to_host(h) for h in hs])

    # -- linear algebra and FFT -----------------------------------------------------------
    @abstractmethod
    def linalg(self, op: str, *args: Handle, **params: Any) -> Any:
        """Dense linear algebra: see ``LINALG_OPS`` for the ops, params and results.

        Raises:
            NumericalFailure: singular / not positive definite / no convergence.
        """
        ...

    @abstractmethod
    def fft(self, op: str, x: Handle, s: tuple[int, ...], axes: tuple[int, ...], norm: str) -> Handle:
        """A discrete Fourier transform: see ``FFT_OPS``."""
        ...

    # -- raw bytes and foreign buffers (I/O, pickling, DLPack) ---------------------------------
    @abstractmethod
    def to_bytes(self, x: Handle) -> bytes:
        """The elements of ``x`` in C order, native byte order, ``itemsize`` bytes each
        (int4/uint4 one byte per element, value in the low nibble; bool 0/1)."""
        ...

    @abstractmethod
    def from_buffer(self, buf: Any, dtype: DType, shape: Shape, offset: int) -> Handle:
        """A C-contiguous handle viewing ``buf`` (bytes, bytearray, mmap, any buffer)
        from byte ``offset``, without copying; read-only if ``buf`` is.

        The frontend guarantees that ``buf`` holds ``offset + prod(shape) * itemsize``
        bytes; the bytes are taken as they are (native byte order).
        """
        ...

    @abstractmethod
    def dlpack(self, x: Handle, stream: Any, max_version: Any, dl_device: Any, copy: bool | None) -> Any:
        """A DLPack capsule for ``x`` (the producer side of ``__dlpack__``).

        Raises:
            BufferError: if the dtype or device cannot be exported, or ``copy=False``
                cannot be honoured.
        """
        ...

    @abstractmethod
    def dlpack_device(self, x: Handle) -> tuple[int, int]:
        """``(device_type, device_id)`` as DLPack's ``__dlpack_device__`` (CPU is ``(1, 0)``)."""
        ...

    @abstractmethod
    def from_dlpack(self, obj: Any, copy: bool | None) -> tuple[Handle, DType]:
        """A handle from an object with ``__dlpack__`` (shared memory unless ``copy``).

        Raises:
            BufferError: if the data cannot be imported (device, dtype).
            ValueError: if ``copy=False`` and a copy would be needed.
        """
        ...


def primitive_names() -> list[str]:
    """The names of the contract's primitives, in declaration order (the abstract ones and those
    with a default a backend may replace, such as ``random_uniform``; not ``fusion``, a service the
    backend offers ``rt.jit``)."""
    return [n for n, v in Backend.__dict__.items() if callable(v) and not n.startswith("_") and n != "fusion"]


class Signature:
    """What a transformation does with one primitive's arguments: a row of :data:`SIGNATURES`.

    ``kind`` says what the primitive is:

    ========  ===================================================================================
    query     introspection of handles (``dtype``, ``strides``...), answered on unwrapped handles
    read      a read of values to the host (``to_list``...): a transformation may refuse it
    create    a new handle from parameters (creation, random words, imported foreign data)
    move      a view of its first argument
    compute   a fresh result from its operands (``callback``: an effect, no result)
    write     writes into its first argument and returns None
    ========  ===================================================================================

    ``roles`` names each argument (after ``self``), in order:

    ========  ===================================================================================
    h         an operand: a handle of any level, or a Python scalar where the contract allows one
    h?        an operand or None
    hs        a sequence of operands;  ``*hs``: operands as separate arguments
    op        the op name: the table entry is ``op`` for ``unary``/``binary``, ``method.op`` else
    p         a parameter (shape, axes, dtype, flag...);  ``**p``: keyword parameters
    key       an index key whose entries may be operands (``gather``, ``scatter``)
    obj       a foreign object to import (it may itself be an operand)
    out       an optional handle the result is written into
    ========  ===================================================================================
    """

    __slots__ = ("kind", "roles")

    def __init__(self, kind: str, roles: str):
        self.kind = kind
        self.roles = tuple(roles.split())

    def __repr__(self) -> str:
        return f"Signature({self.kind!r}, {' '.join(self.roles)!r})"


_S = Signature
#: one :class:`Signature` per contract primitive (``tests/test_tracers.py`` checks it against the
#: methods' parameters); the tracer backends of the transformations are generated from it
#: (``runetensor/_tracers/_base.py``)
SIGNATURES: dict[str, Signature] = {
    "require": _S("query", "p p"),
    "dtype": _S("query", "h"), "strides": _S("query", "h"), "offset": _S("query", "h"),
    "buffer_size": _S("query", "h"), "is_c_contiguous": _S("query", "h"), "shares_memory": _S("query", "h h"),
    "value_range": _S("query", "h"), "dlpack_device": _S("query", "h"),
    "empty": _S("create", "p p"), "full": _S("create", "p p p"), "arange": _S("create", "p p p p"),
    "asarray": _S("create", "obj p p"), "random_bits": _S("create", "p p"),
    "random_uniform": _S("create", "p p p"), "from_buffer": _S("create", "obj p p p"),
    "from_dlpack": _S("create", "obj p"),
    "reshape": _S("move", "h p"), "expand": _S("move", "h p"), "permute": _S("move", "h p"),
    "view_index": _S("move", "h p"), "flip": _S("move", "h p"), "as_strided": _S("move", "h p p p"),
    "unary": _S("compute", "op h out"), "binary": _S("compute", "op h h out"), "where": _S("compute", "h h h"),
    "clip": _S("compute", "h h? h?"), "cast": _S("compute", "h p"),
    "reduce": _S("compute", "op h p p"), "arg_reduce": _S("compute", "op h p p"), "scan": _S("compute", "op h p"),
    "sort": _S("compute", "h p p"), "argsort": _S("compute", "h p p"),
    "gather": _S("compute", "h key"), "scatter": _S("write", "h key h p"),
    "searchsorted": _S("compute", "h h p"), "nonzero": _S("compute", "h"),
    "copy": _S("compute", "h"), "contiguous": _S("compute", "h"), "assign": _S("write", "h h"),
    "concatenate": _S("compute", "hs p"), "pad": _S("compute", "h p h"), "matmul": _S("compute", "h h"),
    "to_host": _S("read", "h"), "to_list": _S("read", "h"), "to_bytes": _S("read", "h"),
    "dlpack": _S("read", "h p p p p"),
    "callback": _S("compute", "p hs"),
    "linalg": _S("compute", "op *hs **p"), "fft": _S("compute", "op h p p p"),
}
del _S
