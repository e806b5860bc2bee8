"""Rune's ``?out`` argument: writing a family's result into a tensor the caller passed.

It sits above ``_tensor`` (it needs :class:`Tensor` and the level helpers), so that ``_validate``,
which ``_tensor`` imports, stays free of ``_tensor``.
"""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor, as_level, higher_backend
from ._validate import shape_str

__all__ = ["write_out"]


def write_out(r: Tensor, out: Any, fname: str) -> Tensor:
    """Rune's ``?out``: write ``r`` into ``out`` (same shape and dtype) and return ``out``; ``r`` when None.

    Raises:
        TypeError: if ``out`` is not a Tensor or its dtype differs.
        ValueError: if its shape differs.
    """
    if out is None:
        return r
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}: out must be a Tensor, got {type(out).__name__}")
    if out.shape != r.shape:
        raise ValueError(f"{fname}: out has shape {shape_str(out.shape)}, the result has shape {shape_str(r.shape)}")
    if out._dtype is not r._dtype:
        raise TypeError(f"{fname}: out has dtype {out._dtype}, the result has dtype {r._dtype}")
    if r._backend is not out._backend:
        if higher_backend(out._backend, r._backend, fname) is not out._backend:
            r = as_level(r, out._backend, fname)
    try:
        out._backend.assign(out._data, r._data)
    except ValueError as e:
        raise ValueError(f"{fname}: cannot write into out ({e})") from None
    return out
