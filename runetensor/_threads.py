"""``set_num_threads`` and ``get_num_threads`` for the main namespace.

The thread pool itself lives with the backend that uses it, in
:mod:`runetensor._backend._parallel`; this module only re-exports its two public
functions so that ``runetensor._families`` can load them as a family.  Internals
(the pool, its lock, ``parallel_for``) are read and patched there, not here.
"""
from __future__ import annotations

from ._backend._parallel import get_num_threads, set_num_threads

__all__ = ["set_num_threads", "get_num_threads"]
