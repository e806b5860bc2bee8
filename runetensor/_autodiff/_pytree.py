"""Pytrees: nested tuples, lists, dicts (and registered classes) whose leaves are tensors.

The transformations take and return pytrees.  ``None`` is an empty subtree (no leaves); dict
keys are visited in sorted order; a namedtuple keeps its class.  Any other object is a leaf.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["register_pytree", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "TreeDef"]

_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree(cls: type, flatten: Callable[[Any], tuple[list, Any]],
                    unflatten: Callable[[Any, list], Any]) -> None:
    """Make instances of ``cls`` pytree nodes for the transformations.

    Args:
        cls: the class.
        flatten: ``obj -> (children, aux)``; ``children`` a list of subtrees, ``aux`` hashable
            static data (compared when structures must match).
        unflatten: ``(aux, children) -> obj``.

    Raises:
        TypeError: if ``cls`` is not a class or a function is not callable.

    >>> import runetensor as rt
    >>> class Point:
    ...     def __init__(self, x, y):
    ...         self.x, self.y = x, y
    >>> rt.register_pytree(Point, lambda p: ([p.x, p.y], None), lambda aux, ch: Point(*ch))
    >>> g = rt.grad(lambda p: rt.sum(p.x * p.y))(Point(rt.asarray([1., 2.]), rt.asarray([3., 4.])))
    >>> print(g.x, g.y)
    [3, 4] [1, 2]
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree: expected a class, got {type(cls).__name__}")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError("register_pytree: flatten and unflatten must be callable")
    _REGISTRY[cls] = (flatten, unflatten)


class TreeDef:
    """The structure of a pytree (without its leaves)."""

    __slots__ = ("kind", "aux", "children", "n")

    def __init__(self, kind: str, aux: Any, children: tuple):
        self.kind = kind
        self.aux = aux
        self.children = children
        self.n = 1 if kind == "leaf" else sum(c.n for c in children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeDef) and self.kind == other.kind and self.aux == other.aux
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.children))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        return f"{getattr(self.aux[0], '__name__', self.kind)}({inner})"


_LEAF = TreeDef("leaf", None, ())
_NONE = TreeDef("none", None, ())


def _flatten(x: Any, leaves: list) -> TreeDef:
    t = type(x)
    if t is tuple or t is list:
        return TreeDef(t.__name__, None, tuple(_flatten(c, leaves) for c in x))
    if t is dict:
        keys = sorted(x)
        return TreeDef("dict", tuple(keys), tuple(_flatten(x[k], leaves) for k in keys))
    if x is None:
        return _NONE
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return TreeDef("namedtuple", (t,), tuple(_flatten(c, leaves) for c in x))
    reg = _REGISTRY.get(t)
    if reg is not None:
        children, aux = reg[0](x)
        return TreeDef("custom", (t, aux), tuple(_flatten(c, leaves) for c in children))
    leaves.append(x)
    return _LEAF


def tree_flatten(x: Any) -> tuple[list, TreeDef]:
    """``(leaves, treedef)`` of a pytree.

    >>> import runetensor as rt
    >>> leaves, tree = rt.tree_flatten({"b": (1, 2), "a": [3]})
    >>> leaves, tree
    ([3, 1, 2], {'a': [*], 'b': (*, *)})
    """
    leaves: list = []
    tree = _flatten(x, leaves)
    return leaves, tree


def _build(tree: TreeDef, it: Any) -> Any:
    k = tree.kind
    if k == "leaf":
        return next(it)
    if k == "none":
        return None
    ch = [_build(c, it) for c in tree.children]
    if k == "tuple":
        return tuple(ch)
    if k == "list":
        return ch
    if k == "dict":
        return dict(zip(tree.aux, ch))
    if k == "namedtuple":
        return tree.aux[0](*ch)
    cls, aux = tree.aux
    return _REGISTRY[cls][1](aux, ch)


def tree_unflatten(tree: TreeDef, leaves: list) -> Any:
    """The pytree of structure ``tree`` with ``leaves`` in order.

    Raises:
        ValueError: if the number of leaves does not match the structure.

    >>> import runetensor as rt
    >>> _, tree = rt.tree_flatten((1, [2, 3]))
    >>> rt.tree_unflatten(tree, ["a", "b", "c"])
    ('a', ['b', 'c'])
    """
    leaves = list(leaves)
    if len(leaves) != tree.n:
        raise ValueError(f"tree_unflatten: the structure {tree!r} has {tree.n} leaves, got {len(leaves)}")
    return _build(tree, iter(leaves))


def tree_leaves(x: Any) -> list:
    """The leaves of a pytree, in order."""
    return tree_flatten(x)[0]


def tree_map(f: Callable, x: Any, *rest: Any) -> Any:
    """``f`` applied leaf by leaf to one or more pytrees of the same structure.

    Raises:
        ValueError: if the structures differ.

    >>> import runetensor as rt
    >>> rt.tree_map(lambda a, b: a + b, (1, {"k": 2}), (10, {"k": 20}))
    (11, {'k': 22})
    """
    leaves, tree = tree_flatten(x)
    others = []
    for r in rest:
        lv, tr = tree_flatten(r)
        if tr != tree:
            raise ValueError(f"tree_map: structures differ: {tree!r} and {tr!r}")
        others.append(lv)
    return tree_unflatten(tree, [f(*a) for a in zip(leaves, *others)])


def argument_names(tree: Any, n: int = 0) -> list[str]:
    """Names of the leaves of vmap's argument tuple: ``argument 0``, ``argument 1['w'][0]``...
    (``tree`` None: ``n`` plain tensor arguments)."""
    if tree is None:
        return [f"argument {i}" for i in range(n)]
    out: list[str] = []
    for i, c in enumerate(tree.children):
        out += leaf_names(c, f"argument {i}")
    return out


def leaf_names(td: Any, path: str) -> list[str]:
    """The leaves of the pytree structure ``td`` named by their path from ``path``."""
    if td.kind == "leaf":
        return [path]
    out: list[str] = []
    for j, c in enumerate(td.children):
        out += leaf_names(c, f"{path}[{td.aux[j]!r}]" if td.kind == "dict" else f"{path}[{j}]")
    return out
