"""``Module``: a base class whose instances are pytrees, so models go through ``grad``, ``jit``, ``vmap``,
``tree_map`` and the optimizers as they are.

A subclass declares its fields with annotations and assigns them in ``__init__``::

    class Net(rt.nn.Module):
        l1: rt.nn.Linear
        l2: rt.nn.Linear
        act: str = rt.nn.static_field()

        def __init__(self, *, key):
            k1, k2 = rt.random.split(key)
            self.l1 = rt.nn.Linear(4, 8, key=k1)
            self.l2 = rt.nn.Linear(8, 1, key=k2)
            self.act = "relu"

The fields are the instance's attributes, in the order ``__init__`` assigned them.  Each is a subtree
(its tensors are leaves) unless it is marked with :func:`static_field`; Python functions and classes
held in a field are always static.  Static values are part of the tree's structure: two models
whose static fields differ have different structures (``jit`` compiles each once).  After
``__init__`` an instance is frozen: ``m.replace(name=value)`` returns a changed copy.
"""
from __future__ import annotations

import functools
import types
from typing import Any, ClassVar, get_origin

from .._autodiff._pytree import register_pytree, tree_flatten
from .._tensor import Tensor

__all__ = ["Module", "static_field"]

_FROZEN = "_Module__frozen"
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, type)


class _Static:
    """The marker :func:`static_field` returns (a class attribute replaced at class creation)."""

    __slots__ = ("default",)

    def __init__(self, default: Any):
        self.default = default


_NO_DEFAULT = object()


def static_field(default: Any = _NO_DEFAULT) -> Any:
    """Mark a :class:`Module` field as static: part of the tree's structure, never a leaf.

    Use it for hyperparameters (sizes, flags, names): ``grad`` and the optimizers see only the
    leaves, and ``jit`` treats a static value as a constant of the compiled program.

    Args:
        default: an optional value the field has when ``__init__`` does not assign it.
    Returns:
        A marker to assign to the annotated class attribute.

    >>> import runetensor as rt
    >>> class Scale(rt.nn.Module):
    ...     w: rt.Tensor
    ...     name: str = rt.nn.static_field(default="scale")
    ...     def __init__(self):
    ...         self.w = rt.ones(rt.float32, [2])
    >>> rt.tree_leaves(Scale())
    [tensor([1, 1], dtype=float32)]
    """
    return _Static(default)


class _ModuleMeta(type):
    """Freezes an instance once the outermost ``__init__`` returns and checks the declared fields."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__call__(*args, **kwargs)
        if not obj.__dict__.get(_FROZEN, False):
            d = obj.__dict__
            for name, default in cls._static_defaults.items():
                if name not in d and default is not _NO_DEFAULT:
                    object.__setattr__(obj, name, default)
            missing = [n for n in cls._declared if n not in d]
            if missing:
                raise TypeError(f"{cls.__name__}.__init__ did not assign the declared field(s) "
                                f"{', '.join(map(repr, missing))}; assign every annotated field in __init__ "
                                "(or give it a static_field default)")
            object.__setattr__(obj, _FROZEN, True)
        return obj


def _is_classvar(ann: Any) -> bool:
    if ann is ClassVar or get_origin(ann) is ClassVar:
        return True
    return isinstance(ann, str) and (ann.startswith("ClassVar") or ann.startswith("typing.ClassVar"))


class Module(metaclass=_ModuleMeta):
    """Base class of models and layers: instances are pytrees of their fields.

    Fields are assigned in ``__init__`` (annotated at class level); a field is a leaf or a subtree
    unless marked with :func:`static_field` (or holding a function or class).  Instances are
    frozen after ``__init__``; :meth:`replace` makes changed copies.  ``repr`` shows the tree with
    each tensor's dtype and shape and the parameter counts (elements of floating tensors).

    >>> import runetensor as rt
    >>> class Affine(rt.nn.Module):
    ...     w: rt.Tensor
    ...     b: rt.Tensor
    ...     def __init__(self, n):
    ...         self.w = rt.ones(rt.float32, [n])
    ...         self.b = rt.zeros(rt.float32, [n])
    ...     def __call__(self, x):
    ...         return x * self.w + self.b
    >>> m = Affine(3)
    >>> g = rt.grad(lambda m, x: rt.sum(m(x)))(m, rt.asarray([1., 2., 3.]))
    >>> print(g.w, g.b)
    [1, 2, 3] [1, 1, 1]
    >>> m
    Affine  # 6 parameters
      w: float32[3]
      b: float32[3]
    """

    _static_names: ClassVar[frozenset[str]] = frozenset()
    _static_defaults: ClassVar[dict[str, Any]] = {}
    _declared: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        static = set()
        defaults: dict[str, Any] = {}
        declared: list[str] = []
        for base in reversed(cls.__mro__[1:]):
            if issubclass(base, Module):
                static |= base._static_names
                defaults.update(base._static_defaults)
                declared += [n for n in base._declared if n not in declared]
        for name, value in list(vars(cls).items()):
            if isinstance(value, _Static):
                static.add(name)
                defaults[name] = value.default
                delattr(cls, name)
        for name, ann in vars(cls).get("__annotations__", {}).items():
            if _is_classvar(ann) or name.startswith("_"):
                continue
            if name not in declared and name not in defaults and name not in vars(cls):
                declared.append(name)
        cls._static_names = frozenset(static)
        cls._static_defaults = defaults
        cls._declared = tuple(declared)
        register_pytree(cls, _flatten, functools.partial(_unflatten, cls))

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get(_FROZEN, False):
            raise AttributeError(f"{type(self).__name__} is frozen after __init__ (a pytree); cannot set {name!r}: "
                                 f"use m.replace({name}=...) for a changed copy")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; cannot delete {name!r}")

    def replace(self, **changes: Any) -> Any:
        """A copy with the given fields replaced (the instance itself is unchanged).

        Raises:
            AttributeError: for a name that is not a field.

        >>> import runetensor as rt
        >>> lin = rt.nn.Linear(2, 1, key=rt.random.key(0))
        >>> print(lin.replace(bias=rt.zeros(rt.float32, [1])).bias)
        [0]
        """
        fields = _fields(self)
        for k in changes:
            if k not in fields:
                raise AttributeError(f"{type(self).__name__}.replace: {k!r} is not a field "
                                     f"(fields: {', '.join(fields)})")
        new = object.__new__(type(self))
        for k in fields:
            object.__setattr__(new, k, changes.get(k, self.__dict__[k]))
        object.__setattr__(new, _FROZEN, True)
        return new

    def __repr__(self) -> str:
        return "\n".join(_describe(self, None, 0))


def _fields(m: Module) -> list[str]:
    return [k for k in m.__dict__ if k != _FROZEN]


def _is_static(cls: type, name: str, value: Any) -> bool:
    return name in cls._static_names or isinstance(value, _FUNCTION_TYPES)


def _flatten(m: Module) -> tuple[list, Any]:
    cls = type(m)
    dyn, children, static = [], [], []
    for k in _fields(m):
        v = m.__dict__[k]
        if _is_static(cls, k, v):
            static.append((k, v))
        else:
            dyn.append(k)
            children.append(v)
    return children, (tuple(_fields(m)), tuple(dyn), tuple(static))


def _unflatten(cls: type, aux: Any, children: list) -> Any:
    order, dyn, static = aux
    new = object.__new__(cls)
    vals = dict(static)
    vals.update(zip(dyn, children))
    for k in order:
        object.__setattr__(new, k, vals[k])
    object.__setattr__(new, _FROZEN, True)
    return new


# ---------------------------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------------------------
def _nparams(tree: Any) -> int:
    return sum(x.size for x in tree_flatten(tree)[0] if isinstance(x, Tensor) and x.dtype.is_inexact)


def _leaf_text(v: Any) -> str:
    if isinstance(v, Tensor):
        return f"{v.dtype}[{', '.join(map(str, v.shape))}]"
    if isinstance(v, _FUNCTION_TYPES):
        return getattr(v, "__qualname__", None) or getattr(v, "__name__", None) or repr(v)
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _count(n: int) -> str:
    return f"  # {n:,} parameter{'' if n == 1 else 's'}"


def _describe(v: Any, label: str | None, depth: int) -> list[str]:
    pad = "  " * depth
    head = f"{pad}{label}: " if label is not None else pad
    if isinstance(v, Module):
        cls = type(v)
        statics = [(k, v.__dict__[k]) for k in _fields(v) if _is_static(cls, k, v.__dict__[k])]
        args = ", ".join(f"{k}={_leaf_text(x)}" for k, x in statics)
        title = f"{cls.__name__}({args})" if statics else cls.__name__
        n = _nparams(v)
        lines = [head + title + (_count(n) if n else "")]
        for k in _fields(v):
            x = v.__dict__[k]
            if not _is_static(cls, k, x):
                lines += _describe(x, k, depth + 1)
        return lines
    if type(v) in (list, tuple) or (isinstance(v, tuple) and hasattr(type(v), "_fields")):
        named = hasattr(type(v), "_fields")
        n = _nparams(v)
        lines = [head + (type(v).__name__ if named else type(v).__name__ + f"[{len(v)}]") + (_count(n) if n else "")]
        labels = type(v)._fields if named else [f"[{i}]" for i in range(len(v))]
        for lab, x in zip(labels, v):
            lines += _describe(x, lab, depth + 1)
        return lines
    if type(v) is dict:
        n = _nparams(v)
        lines = [head + f"dict[{len(v)}]" + (_count(n) if n else "")]
        for k in sorted(v):
            lines += _describe(v[k], repr(k), depth + 1)
        return lines
    return [head + _leaf_text(v)]
