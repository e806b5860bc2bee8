"""A small progress reporter (``rt.progress``): a redrawn line on a terminal, plain lines elsewhere.

:class:`Progress` counts steps towards a ``total`` (known or not) and shows the count, a bar,
the elapsed and remaining time and any values you give it (``loss=0.31``):

* on a terminal (``file.isatty()``) it redraws one line in place with ``\\r``, at most every
  ``interval`` seconds (default 0.1), and ends it with a newline when closed;
* into a file or a pipe (a log, CI output) it writes a plain line at most every ``interval``
  seconds (default 10) and a final line when closed: never a ``\\r`` frame.

It can be used as an iterator wrapper (``for batch in rt.progress.progress(batches, desc="epoch 1")``)
or by hand (``p.update(1, loss=...)``, ``p.close()``, or ``with Progress(...) as p:``).
:func:`persist` computes Dask collections (Dask tensors included) with such a line, on a
``distributed`` cluster when a client exists, else on Dask's local scheduler.
Silence it per use (``disable=True``), globally (:func:`set_enabled`, or the context manager
:func:`silenced`), or from the environment (``RUNETENSOR_PROGRESS=0`` before the import).  The
library's own long operations (``rt.io`` writes of large tensors) report through it too; a
silenced reporter costs one check per update.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Any, Iterable, Iterator, TextIO

__all__ = ["Progress", "progress", "persist", "set_enabled", "enabled", "silenced"]

_ENABLED = os.environ.get("RUNETENSOR_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")
_LOCK = threading.Lock()


def set_enabled(flag: bool) -> bool:
    """Turn every progress reporter on or off (they check at each update); returns the previous setting.

    >>> import runetensor as rt
    >>> old = rt.progress.set_enabled(False)
    >>> rt.progress.enabled()
    False
    >>> _ = rt.progress.set_enabled(old)
    """
    global _ENABLED
    if not isinstance(flag, bool):
        raise TypeError(f"set_enabled: flag must be a bool, got {type(flag).__name__}")
    old, _ENABLED = _ENABLED, flag
    return old


def enabled() -> bool:
    """Whether progress reporters may write (the global switch; ``RUNETENSOR_PROGRESS=0`` starts it off)."""
    return _ENABLED


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """A ``with`` block in which no progress reporter writes (the switch is restored after it).

    >>> import io, runetensor as rt
    >>> out = io.StringIO()
    >>> with rt.progress.silenced():
    ...     for _ in rt.progress.progress(range(3), file=out):
    ...         pass
    >>> out.getvalue()
    ''
    """
    old = set_enabled(False)
    try:
        yield
    finally:
        set_enabled(old)


def _duration(s: float) -> str:
    s = int(s + 0.5) if s >= 10 else s
    if isinstance(s, float):
        return f"{s:.1f}s"
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}" if m else f"{s}s"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    try:
        return f"{float(v):.4g}" if hasattr(v, "__float__") and not isinstance(v, int) else str(v)
    except (TypeError, ValueError):
        return str(v)


class Progress:
    """A progress line: ``desc  37/100 [#########...............]  37%  1.2s<2.0s  loss 0.3102``.

    Args:
        iterable: what to iterate over (optional: without it, call :meth:`update`).
        total: the number of steps (default: ``len(iterable)`` when it has one; None: unknown,
            then the line shows the count and the rate instead of a bar).
        desc: a label at the start of the line.
        unit: the name of a step in the rate (``"it"``: ``12.5 it/s``).
        file: where to write (default: ``sys.stderr`` at construction).
        interval: the least seconds between two writes (default 0.1 on a terminal, 10 elsewhere;
            0 writes at every update).
        disable: True: write nothing; False/None: write unless silenced globally.
        leave: keep the final line (True, default) or, on a terminal, erase it.
        width: the bar's width in characters.
        delay: write nothing (not even the final line) until this many seconds have passed since
            the start: work that ends sooner leaves no trace (default 0).
    Raises:
        TypeError: for a ``total`` that is not an integer, or a ``file`` without ``write``.
        ValueError: for a negative ``total`` or ``interval``.

    >>> import io, runetensor as rt
    >>> log = io.StringIO()                    # not a terminal: plain lines
    >>> with rt.progress.Progress(total=4, desc="train", file=log, interval=0) as p:
    ...     for step in range(4):
    ...         p.update(1, loss=1.0 / (step + 1))
    >>> print(log.getvalue().splitlines()[-1].split("  ")[:2])
    ['train', '4/4 [########################] 100%']
    >>> "\\r" in log.getvalue()
    False
    """

    def __init__(self, iterable: Iterable[Any] | None = None, total: int | None = None, desc: str = "", *,
                 unit: str = "it", file: TextIO | None = None, interval: float | None = None,
                 disable: bool | None = None, leave: bool = True, width: int = 24, delay: float = 0.0) -> None:
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        if total is not None:
            if isinstance(total, bool) or not hasattr(total, "__index__"):
                raise TypeError(f"Progress: total must be an integer or None, got {type(total).__name__}")
            total = int(total)
            if total < 0:
                raise ValueError(f"Progress: total must be >= 0, got {total}")
        self.file: Any = sys.stderr if file is None else file
        if not hasattr(self.file, "write"):
            raise TypeError(f"Progress: file must have a write method, got {type(self.file).__name__}")
        try:
            self.tty = bool(self.file.isatty())
        except (AttributeError, ValueError, OSError):
            self.tty = False
        if interval is None:
            interval = 0.1 if self.tty else 10.0
        if not interval >= 0:
            raise ValueError(f"Progress: interval must be >= 0 seconds, got {interval}")
        if not delay >= 0:
            raise ValueError(f"Progress: delay must be >= 0 seconds, got {delay}")
        self.delay = float(delay)
        self.iterable, self.total, self.desc, self.unit = iterable, total, str(desc), str(unit)
        self.interval, self.disable, self.leave, self.width = float(interval), bool(disable), leave, int(width)
        self.n = 0
        self.postfix: dict[str, Any] = {}
        self.start = time.perf_counter()
        self._last = -float("inf") if self.tty else self.start   # a log's first line comes after `interval`
        self._drawn = 0          # characters of the line now on the terminal
        self._written = -1       # the count of the last plain line written (no repeat at close)
        self.closed = False

    # -- the line ---------------------------------------------------------------------------
    def format(self, now: float | None = None) -> str:
        """The progress line as text (no ``\\r``, no newline)."""
        elapsed = (time.perf_counter() if now is None else now) - self.start
        parts = [self.desc] if self.desc else []
        if self.total:
            frac = min(1.0, self.n / self.total)
            done = int(self.width * frac)
            w = len(str(self.total))
            parts.append(f"{self.n:>{w}}/{self.total} [{'#' * done}{'.' * (self.width - done)}] {100 * frac:3.0f}%")
            left = elapsed * (self.total - self.n) / self.n if 0 < self.n < self.total else 0.0
            parts.append(f"{_duration(elapsed)}<{_duration(left)}" if self.n < self.total else _duration(elapsed))
        else:
            rate = self.n / elapsed if elapsed > 0 else 0.0
            parts.append(f"{self.n} {self.unit}  {_duration(elapsed)}  {rate:.3g} {self.unit}/s")
        parts += [f"{k} {_value(v)}" for k, v in self.postfix.items()]
        return "  ".join(parts)

    def _active(self) -> bool:
        return not self.disable and _ENABLED and not self.closed

    def _write(self, final: bool = False) -> None:
        line = self.format()
        with _LOCK:
            try:
                if self.tty:
                    pad = max(0, self._drawn - len(line))
                    self.file.write("\r" + line + " " * pad + ("\n" if final else ""))
                    self._drawn = 0 if final else len(line)
                elif final and self._written == self.n:
                    return       # that line is already there
                else:
                    self.file.write(line + "\n")
                    self._written = self.n
                self.file.flush()
            except (OSError, ValueError):    # a closed or broken stream: stop reporting, never fail the work
                self.disable = True

    # -- updating ---------------------------------------------------------------------------
    def update(self, n: int = 1, **values: Any) -> None:
        """Count ``n`` more steps and set the values shown after the bar (``loss=0.3``); redraw if due.

        Values are shown with 4 significant digits; a 0-d tensor is read (``float``) only when a
        line is written.
        """
        self.n += n
        if values:
            self.postfix.update(values)
        if not self._active():
            return
        now = time.perf_counter()
        if now - self._last >= self.interval and now - self.start >= self.delay:
            self._last = now
            self._write()

    def set(self, **values: Any) -> None:
        """Set the values shown after the bar without counting a step (written at the next update or close)."""
        self.postfix.update(values)

    def close(self) -> None:
        """Write the final line (on a terminal: redraw it and end it with a newline, or erase it)."""
        if self.closed:
            return
        if not self.disable and _ENABLED and time.perf_counter() - self.start >= self.delay:
            if self.tty and not self.leave:
                with _LOCK:
                    try:
                        self.file.write("\r" + " " * self._drawn + "\r")
                        self.file.flush()
                    except (OSError, ValueError):
                        pass
            else:
                self._write(final=True)
        self.closed = True

    def __iter__(self) -> Iterator[Any]:
        if self.iterable is None:
            raise TypeError("Progress: nothing to iterate over; pass an iterable, or call update()")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Progress({self.format()!r})"


def progress(iterable: Iterable[Any] | None = None, total: int | None = None, desc: str = "",
             **options: Any) -> Progress:
    """A :class:`Progress` over ``iterable`` (or a manual one): ``for x in rt.progress.progress(data): ...``.

    Args:
        iterable: what to iterate over (None for a manual reporter).
        total: the number of steps (default ``len(iterable)`` where it has one).
        desc: the line's label.
        **options: :class:`Progress`'s keyword options (``file``, ``interval``, ``disable``...).
    Returns:
        A :class:`Progress`.

    >>> import io, runetensor as rt
    >>> out = io.StringIO()
    >>> sum(x for x in rt.progress.progress([1, 2, 3], desc="sum", file=out))
    6
    >>> out.getvalue().startswith("sum  3/3 [")
    True
    """
    return Progress(iterable, total, desc, **options)


def persist(*collections: Any, desc: str = "dask", client: Any = None, **options: Any) -> tuple[Any, ...]:
    """Persist Dask collections (Dask-backend tensors, ``dask.array`` arrays...) with a progress line.

    On a ``distributed`` cluster (``client``, or the current client when one exists) the line
    counts the finished chunks (futures) as they complete on the workers; without a client, the
    tasks of Dask's local scheduler.  Anything else passes through unchanged.

    Args:
        *collections: the collections to compute and keep in memory (as ``rt.persist``).
        desc: the line's label.
        client: a ``distributed.Client`` (default: the current one, if any).
        **options: :class:`Progress`'s keyword options (``file``, ``interval``, ``disable``...).
    Returns:
        The persisted collections, a tuple (their chunks computed: in the workers' memory on a
        cluster, local otherwise).
    Raises:
        ModuleNotFoundError: if Dask is not installed.
        Exception: the first error of a failed task, as Dask raises it.

    >>> import io, runetensor as rt
    >>> with rt.use_backend("dask", chunks=(2,)):
    ...     x = rt.arange(rt.float32, 0, 6, 1)
    >>> out = io.StringIO()
    >>> (y,) = rt.progress.persist(x * 2, file=out, interval=0)
    >>> rt.to_array(y), out.getvalue().splitlines()[-1].startswith("dask  ")
    ([0.0, 2.0, 4.0, 6.0, 8.0, 10.0], True)
    """
    # deferred: optional dependency, loaded on first use (and a heavy import)
    import dask
    if client is None:
        try:
            # deferred: optional dependency, loaded on first use (and a heavy import)
            from distributed import get_client
            client = get_client()
        except (ImportError, ValueError):
            client = None
    if client is not None:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        from distributed import as_completed, futures_of
        out = client.persist(list(collections))
        futures = futures_of(out)
        with Progress(total=len(futures), desc=desc, unit="chunk", **options) as bar:
            for f in as_completed(futures):
                if f.status == "error":
                    f.result()          # raises the task's error
                bar.update(1)
        return tuple(out)
    # deferred: optional dependency, loaded on first use (and a heavy import)
    from dask.callbacks import Callback
    bar = Progress(total=None, desc=desc, unit="task", **options)

    def start_state(dsk: Any, state: Any) -> None:
        bar.total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))

    def posttask(key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        bar.update(1)

    try:
        with Callback(start_state=start_state, posttask=posttask):
            out = dask.persist(*collections)
    finally:
        bar.close()
    return tuple(out)
