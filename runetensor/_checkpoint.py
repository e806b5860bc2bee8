"""Checkpoints: any pytree (models, optimizer states, random keys, Python scalars) in one safetensors file.

Each tensor leaf is stored under its path in the tree (``model.l1.weight``, ``opt.mu.l1.weight``,
``step``...); Python scalars (bool, int, float, str) and the list of paths go into the file's
metadata.  Loading needs a tree of the same structure (``like``): the file's paths, dtypes and
shapes are checked against it and the first difference is named.  Static parts of the tree
(module hyperparameters, namedtuple classes) come from ``like``.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

from ._autodiff._pytree import _REGISTRY, tree_flatten, tree_unflatten
from ._tensor import Tensor
from ._views import copy

__all__ = ["save_checkpoint", "load_checkpoint"]

_FORMAT = "runetensor.checkpoint"
_VERSION = "1"
_KEY = "runetensor_checkpoint"


def _module_fields(x: Any) -> list[str] | None:
    """The dynamic field names of a registered class whose flatten rule reports them (``rt.nn.Module``)."""
    try:
        # deferred: rt.nn is a lazy submodule (a checkpoint without modules does not load it)
        from .nn._module import Module, _flatten
    except ImportError:  # pragma: no cover
        return None
    if isinstance(x, Module):
        return list(_flatten(x)[1][1])
    return None


def _walk(x: Any, path: str, out: list[tuple[str, Any]]) -> None:
    """Append ``(path, leaf)`` pairs in the order of :func:`runetensor.tree_flatten`."""
    t = type(x)
    sep = "." if path else ""
    if x is None:
        return
    if t is tuple or t is list:
        for i, c in enumerate(x):
            _walk(c, f"{path}{sep}{i}", out)
        return
    if t is dict:
        for k in sorted(x):
            _walk(x[k], f"{path}{sep}{k}", out)
        return
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        for name, c in zip(t._fields, x):
            _walk(c, f"{path}{sep}{name}", out)
        return
    reg = _REGISTRY.get(t)
    if reg is not None:
        children, _ = reg[0](x)
        names = _module_fields(x) or [str(i) for i in range(len(children))]
        for name, c in zip(names, children):
            _walk(c, f"{path}{sep}{name}", out)
        return
    out.append((path or "<root>", x))


def _paths(tree: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    _walk(tree, "", out)
    return out


def _describe(v: Any) -> str:
    if isinstance(v, Tensor):
        return f"a {v.dtype} tensor of shape {tuple(v.shape)}"
    return f"a Python {type(v).__name__}"


def _scalar_entry(v: Any, path: str, fname: str) -> list:
    if isinstance(v, bool):
        return [path, "bool", v]
    if isinstance(v, int):
        return [path, "int", str(v)]
    if isinstance(v, float):
        return [path, "float", v.hex()]
    if isinstance(v, str):
        return [path, "str", v]
    raise TypeError(f"{fname}: the leaf at {path!r} is {type(v).__name__}; a checkpoint holds tensors and Python "
                    "bool/int/float/str (convert it, or keep it out of the tree)")


def save_checkpoint(path: Any, tree: Any, metadata: Mapping[str, str] | None = None) -> None:
    """Save a pytree (models, optimizer states, keys, Python scalars) to one safetensors file, atomically.

    Tensors are stored under their paths in the tree (``"model.l1.weight"``, dict keys, list
    indices and field names joined by dots); scalars and the list of leaves go into the metadata.
    The file is written beside the target and renamed into place, as the other savers.

    Args:
        path: the file path.
        tree: the pytree.
        metadata: optional extra string -> string metadata (e.g. a description of the run).
    Raises:
        TypeError: for a leaf that is neither a tensor nor a bool/int/float/str, or a tensor dtype
            safetensors cannot hold (complex128, int4, uint4, object).
        ValueError: if two leaves get the same path (dict keys containing dots can collide).

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "run.safetensors")
    >>> state = {"w": rt.ones(rt.float32, [2]), "step": 3, "key": rt.random.key(1)}
    >>> rio.save_checkpoint(p, state)
    >>> back = rio.load_checkpoint(p, like=state)
    >>> print(back["w"], back["step"])
    [1, 1] 3
    """
    # deferred: cycle by design: runetensor.io imports this module (rt.io re-exports the checkpoint functions)
    from .io import save_safetensors
    fname = "save_checkpoint"
    leaves = _paths(tree)
    tensors: dict[str, Tensor] = {}
    entries: list[list] = []
    seen: set[str] = set()
    for p, v in leaves:
        if p in seen:
            raise ValueError(f"{fname}: two leaves have the path {p!r} (a dict key with a dot?); rename the key")
        seen.add(p)
        if isinstance(v, Tensor):
            tensors[p] = v
            entries.append([p, "tensor"])
        else:
            entries.append(_scalar_entry(v, p, fname))
    meta = {} if metadata is None else dict(metadata)
    if _KEY in meta:
        raise ValueError(f"{fname}: the metadata key {_KEY!r} is reserved")
    meta[_KEY] = json.dumps({"format": _FORMAT, "version": _VERSION, "leaves": entries},
                            separators=(",", ":"), ensure_ascii=False)
    try:
        save_safetensors(path, tensors, metadata=meta)
    except TypeError as e:
        raise TypeError(str(e).replace("save_safetensors", fname, 1)) from None


def _decode(entry: list, fname: str, where: str) -> Any:
    p, kind, value = entry
    try:
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "int" and isinstance(value, str):
            return int(value)
        if kind == "float" and isinstance(value, str):
            return float.fromhex(value)
        if kind == "str" and isinstance(value, str):
            return value
    except ValueError:
        pass
    raise ValueError(f"{fname}: {where}: the leaf at {p!r} has a bad {kind!r} value {value!r:.60}")


def load_checkpoint(path: Any, like: Any, *, max_bytes: int | None = None) -> Any:
    """Load a checkpoint written by :func:`save_checkpoint` into the structure of ``like``.

    ``like`` is a tree of the same structure (a freshly built model and ``opt.init(model)``, say):
    its static parts are kept and its leaves replaced by the file's.  Paths, the kind of each leaf
    (tensor or scalar type), dtypes and shapes must all match; the first difference is named.

    Args:
        path: the file path.
        like: the pytree the checkpoint must match.
        max_bytes: the most bytes of tensor data to read (None: the file's size).
    Returns:
        A pytree of ``like``'s structure with the saved values (fresh tensors).
    Raises:
        ValueError: a file that is not a runetensor checkpoint (or is damaged), or a structure,
            dtype or shape that differs from ``like``.
        OSError: a missing or unreadable file.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> rio.save_checkpoint(p, {"w": rt.ones(rt.float32, [2])})
    >>> try:
    ...     rio.load_checkpoint(p, like={"w": rt.zeros(rt.float32, [3])})
    ... except ValueError as e:
    ...     print(str(e).split(" differs from like ")[1])
    at 'w': the file has a float32 tensor of shape (2,), like has a float32 tensor of shape (3,)
    """
    # deferred: cycle by design: runetensor.io imports this module (rt.io re-exports the checkpoint functions)
    from .io import load_safetensors
    fname = "load_checkpoint"
    where = repr(str(path))
    tensors, meta = load_safetensors(path, return_metadata=True, max_bytes=max_bytes)
    raw = meta.get(_KEY)
    if raw is None:
        raise ValueError(f"{fname}: {where} is a safetensors file but not a runetensor checkpoint (no {_KEY!r} "
                         "metadata); read it with load_safetensors")
    try:
        info = json.loads(raw)
        ok = (isinstance(info, dict) and info.get("format") == _FORMAT and isinstance(info.get("leaves"), list)
              and all(isinstance(e, list) and len(e) in (2, 3) and isinstance(e[0], str) for e in info["leaves"]))
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{fname}: {where}: the checkpoint metadata is damaged")
    if info.get("version") != _VERSION:
        raise ValueError(f"{fname}: {where}: checkpoint format version {info.get('version')!r} is not supported "
                         f"(this runetensor reads version {_VERSION})")
    entries = info["leaves"]
    want = _paths(like)
    _, treedef = tree_flatten(like)
    for i, (p, lv) in enumerate(want):
        if i >= len(entries):
            raise ValueError(f"{fname}: {where} differs from like at {p!r}: the file has no such leaf "
                             f"(it has {len(entries)} leaves, like has {len(want)})")
        if entries[i][0] != p:
            raise ValueError(f"{fname}: {where} differs from like at {p!r}: the file has {entries[i][0]!r} there")
    if len(entries) != len(want):
        raise ValueError(f"{fname}: {where} differs from like at {entries[len(want)][0]!r}: like has no such leaf "
                         f"(the file has {len(entries)} leaves, like has {len(want)})")
    names = {e[0] for e in entries if e[1] == "tensor"}
    if set(tensors) != names:
        raise ValueError(f"{fname}: {where}: the tensors in the file do not match its list of leaves")
    out = []
    for (p, lv), e in zip(want, entries):
        if e[1] == "tensor":
            t = tensors[p]
            if not isinstance(lv, Tensor) or lv.dtype is not t.dtype or tuple(lv.shape) != tuple(t.shape):
                raise ValueError(f"{fname}: {where} differs from like at {p!r}: the file has {_describe(t)}, "
                                 f"like has {_describe(lv)}")
            out.append(copy(t) if math.prod(t.shape) else t)
        else:
            v = _decode(e, fname, where)
            if isinstance(lv, Tensor) or type(lv) is not type(v):
                raise ValueError(f"{fname}: {where} differs from like at {p!r}: the file has {_describe(v)}, "
                                 f"like has {_describe(lv)}")
            out.append(v)
    return tree_unflatten(treedef, out)
