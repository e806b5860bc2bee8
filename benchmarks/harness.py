"""Timing, library detection, the results table and the JSON file."""
from __future__ import annotations

import dataclasses
import datetime
import gc
import importlib.metadata
import importlib.util
import json
import multiprocessing
import os
import platform
import statistics
import time
import zlib
from typing import Any, Callable

LIBS = ("numpy", "runetensor", "torch", "jax")


@dataclasses.dataclass
class Workload:
    """One benchmark: ``setup(ctx)`` returns ``{library: callable}`` (the same computation on the same data).

    ``per`` is how many operations one call performs (the table reports time per
    operation); ``target`` is the speed-up over NumPy runetensor aims for, or a
    time limit in seconds when ``target_kind`` is ``"max_time"``.
    """
    name: str
    description: str
    setup: Callable[["Context"], dict[str, Callable[[], Any]]]
    per: int = 1
    target: float | None = None
    target_kind: str = "ratio"   # "ratio": numpy/runetensor >= target; "max_time": runetensor time <= target;
    #                              "vs_torch": runetensor time <= target * PyTorch's time (no NumPy column);
    #                              "vs_jax": the same against JAX's time;
    #                              "slowdown_vs_torch": runetensor's slowdown (this row's time over the
    #                              ``baseline`` row's) <= target * PyTorch's slowdown
    #: measured while CPU-bound competitor processes (one per core) run
    loaded: bool = False
    #: the quiet workload a loaded one is compared with (run too, before it, when not asked for)
    baseline: str | None = None
    #: the peer libraries that have a column in this row (the others' processes skip its setup)
    peers: tuple[str, ...] = ("torch", "jax")


@dataclasses.dataclass
class Result:
    name: str
    description: str
    per: int
    times: dict[str, float]        # library -> median seconds per operation
    spreads: dict[str, float]      # library -> (max - min) / median of the timed runs
    ratio: float | None            # numpy / runetensor
    target: float | None
    target_kind: str
    met: bool | None
    error: dict[str, str]
    #: loaded rows: library -> this row's time over its baseline row's
    slowdowns: dict[str, float] = dataclasses.field(default_factory=dict)


class Context:
    """What a workload's setup gets: sizes (``quick``), random data and the importable libraries."""

    def __init__(self, quick: bool, frameworks: list[str]):
        import numpy as np
        self.quick = quick
        self.rng = np.random.default_rng(1234)
        self.np = np
        import runetensor
        self.rt = runetensor
        # peers run at their own defaults (no OMP_WAIT_POLICY or thread settings of ours)
        self.torch = _import("torch") if "torch" in frameworks else None
        self.jax = _import("jax") if "jax" in frameworks else None
        self.jnp = None
        if self.jax is not None:
            self.jax.config.update("jax_enable_x64", True)  # float64 workloads stay float64
            import jax.numpy as jnp
            self.jnp = jnp

    def reseed(self, name: str) -> None:
        """The same random data for workload ``name`` in every process, whatever ran before it."""
        self.rng = self.np.random.default_rng(zlib.crc32(name.encode()))

    def n(self, full: int, quick: int | None = None) -> int:
        return (quick if quick is not None else max(1, full // 10)) if self.quick else full


def _import(name: str):
    try:
        return __import__(name)
    except Exception:  # not installed or broken: skip it
        return None


def _available(name: str) -> bool:
    """Whether ``name`` is installed, without importing it (its threads would join this process)."""
    return importlib.util.find_spec(name) is not None


def _version(name: str) -> str | None:
    if not _available(name):
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    import numpy  # noqa: F401  (loads NumPy's BLAS)
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
                     f"threads={i.get('num_threads')}" for i in infos) or "none found"


def metadata(frameworks: list[str] | None) -> dict[str, Any]:
    import ml_dtypes
    import numpy
    import runetensor
    fw = [f for f in (frameworks if frameworks is not None else ["torch", "jax"]) if _available(f)]
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(), "numpy": numpy.__version__, "ml_dtypes": ml_dtypes.__version__,
        "runetensor": runetensor.__version__, "torch": _version("torch") if "torch" in fw else None,
        "jax": _version("jax") if "jax" in fw else None, "machine": platform.machine(),
        "processor": _cpu_name(), "cpus": os.cpu_count(), "runetensor_threads": runetensor.get_num_threads(),
        "blas": blas_info(), "frameworks": fw,
    }
    env = [v for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in os.environ]
    if env:
        meta["warning"] = (f"{' and '.join(env)} set: NumPy's BLAS may use a slower kernel; run as "
                           "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks`")
    return meta


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measure(impls: dict[str, Callable[[], Any]], repeats: int, budget: float, block: int = 3
            ) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """Median time and relative spread of each library's callable.

    Warm-up: each callable runs at least twice (and for ~10% of ``budget``).
    Then rounds: in each round every library, in turn, runs one untimed call
    (its data back in cache after the other libraries ran; with PyTorch or JAX in
    the run, untimed calls for 50 ms, until their spinning threads are quiet) and
    ``block`` timed calls, so that all libraries see the same background load over the run.
    Up to ``repeats`` timed calls per library; rounds stop early (after 3
    timed calls) once ``budget`` seconds per library are spent.  The garbage
    collector is off while timing.  A library whose callable raises is dropped
    and reported.
    """
    errors: dict[str, str] = {}
    live: dict[str, Callable[[], Any]] = {}
    for lib, fn in impls.items():
        try:
            t0 = time.perf_counter()
            fn()
            fn()
            while time.perf_counter() - t0 < 0.1 * budget:
                fn()
            live[lib] = fn
        except Exception as e:
            errors[lib] = f"{type(e).__name__}: {e}"
    times: dict[str, list[float]] = {lib: [] for lib in live}
    # PyTorch's and JAX's worker threads keep spinning for 20-30 ms after an operation; on a small
    # machine that takes a core from whatever runs next.  Each library first runs untimed for
    # `settle` seconds (busy: a sleep instead lets the cores idle down and slowed every library
    # by ~40% on this VM, measured), so their threads have gone quiet before its timed calls.
    settle = 0.05 if any(lib in ("torch", "jax") for lib in live) else 0.0
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        done = 0
        while done < repeats:
            k = min(block, repeats - done)
            for lib, fn in live.items():
                t_settle = time.perf_counter()
                fn()  # untimed: this library's data back in cache
                while time.perf_counter() - t_settle < settle:
                    fn()
                for _ in range(k):
                    s = time.perf_counter()
                    fn()
                    times[lib].append(time.perf_counter() - s)
            done += k
            if done >= 3 and time.perf_counter() - start > budget * max(1, len(live)):
                break
    finally:
        if gc_was:
            gc.enable()
    med = {lib: statistics.median(ts) for lib, ts in times.items()}
    spread = {lib: (max(ts) - min(ts)) / med[lib] if med[lib] > 0 else 0.0 for lib, ts in times.items()}
    return med, spread, errors


class _Peer:
    """One peer library measured in a process of its own, so that its threads (PyTorch's OpenMP
    pool, XLA's) neither slow nor are slowed by the other libraries' threads, and it runs at its
    own defaults.  The process builds each workload itself (same seed, same data) and measures
    only its library's callable; the parent asks the peers in turn, never at once."""

    def __init__(self, lib: str, quick: bool):
        self.lib = lib
        mp = multiprocessing.get_context("spawn")
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_peer_main, args=(child, lib, quick), daemon=True)
        self.proc.start()
        child.close()

    def wait_ready(self) -> None:
        """Until its library is imported (an import takes the cores for seconds: not during a timed call)."""
        try:
            self.conn.recv()
        except (EOFError, OSError):
            pass

    def measure(self, name: str, repeats: int, budget: float
                ) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
        try:
            self.conn.send((name, repeats, budget))
            return self.conn.recv()
        except (EOFError, OSError) as e:
            return {}, {}, {self.lib: f"its benchmark process died ({type(e).__name__})"}

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


def _peer_main(conn: Any, lib: str, quick: bool) -> None:
    from .workloads import WORKLOADS
    ctx = Context(quick, [lib])
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        name, repeats, budget = msg
        ctx.reseed(name)
        try:
            impls = WORKLOADS[name].setup(ctx)
        except Exception as e:
            conn.send(({}, {}, {lib: f"setup: {type(e).__name__}: {e}"}))
            continue
        fn = impls.get(lib)
        res = measure({lib: fn}, repeats, budget) if fn is not None else ({}, {}, {})
        if fn is not None:
            time.sleep(0.1)  # its worker threads spin for a while after the last call: not on the next library's time
        conn.send(res)
        impls.clear()
        gc.collect()


def _spin(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


class _Load:
    """CPU-bound competitor processes, one per core, for the rows measured on a loaded machine."""

    def __enter__(self) -> "_Load":
        mp = multiprocessing.get_context("spawn")
        self.stop = mp.Event()
        self.procs = [mp.Process(target=_spin, args=(self.stop,), daemon=True) for _ in range(os.cpu_count() or 1)]
        for p in self.procs:
            p.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()


def run_workloads(names: list[str], quick: bool = False, repeats: int | None = None,
                  frameworks: list[str] | None = None, progress: Callable[[str], None] | None = None,
                  isolate: bool = True) -> list[Result]:
    """Measure ``names`` (loaded rows' baselines are added before them).  With ``isolate`` (the
    default) NumPy and runetensor are measured here and each peer (PyTorch, JAX) in a process of
    its own; without it, every library in this process (what a user who imports them all gets)."""
    from .workloads import WORKLOADS
    fws = frameworks if frameworks is not None else ["torch", "jax"]
    order: list[str] = []
    for name in names:
        base = WORKLOADS[name].baseline
        if base is not None and base not in order:
            order.append(base)
        if name not in order:
            order.append(name)
    ctx = Context(quick, [] if isolate else fws)
    peers = [_Peer(f, quick) for f in fws if _available(f)] if isolate else []
    for peer in peers:
        peer.wait_ready()
    reps = repeats or (5 if quick else 15)
    budget = 0.5 if quick else 3.0
    out: list[Result] = []
    by_name: dict[str, Result] = {}
    try:
        for name in order:
            w = WORKLOADS[name]
            errors: dict[str, str] = {}
            ctx.reseed(name)
            try:
                impls = w.setup(ctx)
            except Exception as e:  # a workload that cannot run here (e.g. harpie missing) is reported, not fatal
                errors["setup"] = f"{type(e).__name__}: {e}"
                impls = {}
            ordered = {lib: impls[lib] for lib in LIBS if impls.get(lib) is not None}
            with _Load() if w.loaded else _nothing():
                med, spreads, errs = measure(ordered, reps, budget)
                for peer in (p for p in peers if p.lib in w.peers):
                    pm, ps, pe = peer.measure(name, reps, budget)
                    med.update(pm)
                    spreads.update(ps)
                    errs.update(pe)
            errors.update(errs)
            times = {lib: t / w.per for lib, t in med.items()}
            impls.clear()
            ordered.clear()
            gc.collect()
            r = _result(w, times, spreads, errors, by_name.get(w.baseline or ""))
            by_name[name] = r
            if name in names:
                out.append(r)
                if progress:
                    progress(format_row(r))
    finally:
        for peer in peers:
            peer.close()
    return out


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _result(w: Workload, times: dict[str, float], spreads: dict[str, float], errors: dict[str, str],
            base: Result | None) -> Result:
    ratio = times["numpy"] / times["runetensor"] if "numpy" in times and "runetensor" in times else None
    slow = {lib: t / base.times[lib] for lib, t in times.items() if base is not None and base.times.get(lib)}
    met = None
    if w.target is not None and "runetensor" in times:
        if w.target_kind == "max_time":
            met = times["runetensor"] <= w.target
        elif w.target_kind in ("vs_torch", "vs_jax"):
            ref = w.target_kind[3:]
            met = times["runetensor"] <= w.target * times[ref] if ref in times else None
        elif w.target_kind == "slowdown_vs_torch":
            met = slow["runetensor"] <= w.target * slow["torch"] if "runetensor" in slow and "torch" in slow else None
        else:
            met = ratio is not None and ratio >= w.target
    return Result(w.name, w.description, w.per, times, spreads, ratio, w.target, w.target_kind, met, errors, slow)


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _target(r: Result) -> str:
    if r.target is None:
        return ""
    if r.target_kind == "slowdown_vs_torch":
        sl = ", ".join(f"{lib} {x:.2f}x" for lib, x in r.slowdowns.items())
        t = f"slowdown ({sl}) <= {r.target:g}x torch's"
    else:
        t = f"<= {fmt_time(r.target)}" if r.target_kind == "max_time" else \
            f"<= {r.target:g}x {r.target_kind[3:]}" if r.target_kind in ("vs_torch", "vs_jax") else f">= {r.target:g}x"
    return t + (" ok" if r.met else " MISS" if r.met is False else "")


_HEAD = ("workload", "numpy", "runetensor", "numpy/rt", "torch", "jax", "target")


def _cells(r: Result) -> tuple[str, ...]:
    return (r.name, fmt_time(r.times.get("numpy")), fmt_time(r.times.get("runetensor")),
            f"{r.ratio:.2f}x" if r.ratio is not None else "-", fmt_time(r.times.get("torch")),
            fmt_time(r.times.get("jax")), _target(r))


def format_row(r: Result) -> str:
    c = _cells(r)
    err = f"  errors: {r.error}" if r.error else ""
    return f"{c[0]:18s} numpy {c[1]:>10s}  rt {c[2]:>10s}  {c[3]:>7s}  torch {c[4]:>10s}  jax {c[5]:>10s}  {c[6]}{err}"


def format_table(results: list[Result], markdown: bool = False) -> str:
    rows = [_HEAD] + [_cells(r) for r in results]
    if markdown:
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in rows[1:]]
        notes = [f"- {r.name}: {r.description}" for r in results]
        return "\n".join(lines + [""] + notes)
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEAD))]
    lines = ["  ".join(c.ljust(w) if i == 0 or i == len(c) - 1 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def write_json(path: str, meta: dict[str, Any], results: list[Result]) -> None:
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": [dataclasses.asdict(r) for r in results]}, f, indent=1)
