"""Readable paths of pytree leaves (``['w']``, ``[0]``, ``.count``) for error messages."""
from __future__ import annotations

from typing import Any

from ._autodiff._pytree import TreeDef

__all__ = ["leaf_paths"]


def leaf_paths(tree: TreeDef, prefix: str = "") -> list[str]:
    """The path of each leaf of ``tree``, in ``tree_flatten`` order: ``prefix['key']`` for dict
    entries, ``prefix[i]`` for list/tuple items, ``prefix.field`` for namedtuple fields (and for
    registered classes whose flatten data carries the field names), ``prefix.<i>`` otherwise.

    >>> import runetensor as rt
    >>> from runetensor._treepaths import leaf_paths
    >>> leaf_paths(rt.tree_flatten({"w": [1, 2], "b": 3})[1], "params")
    ["params['b']", "params['w'][0]", "params['w'][1]"]
    """
    out: list[str] = []
    _walk(tree, prefix, out)
    return out


def _names(tree: TreeDef) -> Any:
    if tree.kind == "namedtuple":
        return getattr(tree.aux[0], "_fields", None)
    if tree.kind == "custom":
        aux = tree.aux[1]
        for cand in (aux, aux[0] if isinstance(aux, tuple) and aux else None):
            if isinstance(cand, tuple) and len(cand) == len(tree.children) and all(isinstance(n, str) for n in cand):
                return cand
    return None


def _walk(tree: TreeDef, prefix: str, out: list) -> None:
    k = tree.kind
    if k == "leaf":
        out.append(prefix)
        return
    if k == "none":
        return
    if k == "dict":
        for key, c in zip(tree.aux, tree.children):
            _walk(c, f"{prefix}[{key!r}]", out)
        return
    names = _names(tree)
    for i, c in enumerate(tree.children):
        if names is not None:
            _walk(c, f"{prefix}.{names[i]}", out)
        elif k in ("list", "tuple"):
            _walk(c, f"{prefix}[{i}]", out)
        else:
            _walk(c, f"{prefix}.<{i}>", out)
