"""Settings read from environment variables: a bad value never breaks an import or a call, it is
ignored with one ``RuntimeWarning`` naming the variable and the value, and the default is used
(``rt.jit``'s ``RUNETENSOR_JIT_MAX_PROGRAMS``, the kernel cache's ``RUNETENSOR_JIT_CACHE_MAX_MB``:
docs/jit.md, "Configuration")."""
from __future__ import annotations

import math
import os
import warnings
from typing import Any, Callable

_BAD_SETTINGS: set = set()


def env_setting(name: str, default: Any, parse: Callable[[str], Any], expected: str) -> Any:
    """The value of environment variable ``name`` read by ``parse`` (which returns None or raises
    ``ValueError`` for a bad value), or ``default`` when it is unset, empty or bad.  A bad value
    warns once (``RuntimeWarning`` naming the variable, the value and what was expected).

    >>> import os
    >>> os.environ["RT_DOC_EXAMPLE"] = "12"
    >>> env_setting("RT_DOC_EXAMPLE", 5, positive_int, "an integer >= 1")
    12
    >>> del os.environ["RT_DOC_EXAMPLE"]
    """
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        v = parse(raw.strip())
    except (ValueError, OverflowError):
        v = None
    if v is None:
        if (name, raw) not in _BAD_SETTINGS:
            _BAD_SETTINGS.add((name, raw))
            warnings.warn(f"runetensor: ignoring {name}={raw!r} (expected {expected}); using the default "
                          f"{default}", RuntimeWarning, stacklevel=3)
        return default
    return v


def positive_int(s: str) -> int | None:
    """``s`` as an integer >= 1, else None."""
    v = int(s)
    return v if v >= 1 else None


def megabytes(s: str) -> float | None:
    """``s`` as a finite number of megabytes >= 0 (whose byte count is finite), else None."""
    v = float(s)
    return v if v >= 0 and math.isfinite(v * 1e6) else None
