"""Timing, library detection, the results table and the JSON file."""
from __future__ import annotations

import dataclasses
import datetime
import gc
import json
import os
import platform
import statistics
import time
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
    #                              "vs_jax": the same against JAX's time


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


class Context:
    """What a workload's setup gets: sizes (``quick``), random data and the importable libraries."""

    def __init__(self, quick: bool, frameworks: list[str]):
        import numpy as np
        self.quick = quick
        self.rng = np.random.default_rng(1234)
        self.np = np
        import runetensor
        self.rt = runetensor
        # PyTorch's OpenMP threads spin after each parallel region and would slow the other
        # libraries measured in the same process on a small machine: ask them to sleep instead.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.torch = _import("torch") if "torch" in frameworks else None
        self.jax = _import("jax") if "jax" in frameworks else None
        self.jnp = None
        if self.jax is not None:
            self.jax.config.update("jax_enable_x64", True)  # float64 workloads stay float64
            import jax.numpy as jnp
            self.jnp = jnp

    def n(self, full: int, quick: int | None = None) -> int:
        return (quick if quick is not None else max(1, full // 10)) if self.quick else full


def _import(name: str):
    try:
        return __import__(name)
    except Exception:  # not installed or broken: skip it
        return None


def _version(name: str) -> str | None:
    m = _import(name)
    return getattr(m, "__version__", "?") if m is not None else None


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
    fw = [f for f in (frameworks if frameworks is not None else ["torch", "jax"]) if _import(f) is not None]
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


def run_workloads(names: list[str], quick: bool = False, repeats: int | None = None,
                  frameworks: list[str] | None = None, progress: Callable[[str], None] | None = None
                  ) -> list[Result]:
    from .workloads import WORKLOADS
    ctx = Context(quick, frameworks if frameworks is not None else ["torch", "jax"])
    reps = repeats or (5 if quick else 15)
    budget = 0.5 if quick else 3.0
    out: list[Result] = []
    for name in names:
        w = WORKLOADS[name]
        errors: dict[str, str] = {}
        try:
            impls = w.setup(ctx)
        except Exception as e:  # a workload that cannot run here (e.g. harpie missing) is reported, not fatal
            errors["setup"] = f"{type(e).__name__}: {e}"
            impls = {}
        ordered = {lib: impls[lib] for lib in LIBS if impls.get(lib) is not None}
        med, spreads, errs = measure(ordered, reps, budget)
        errors.update(errs)
        times = {lib: t / w.per for lib, t in med.items()}
        impls.clear()
        gc.collect()
        ratio = times["numpy"] / times["runetensor"] if "numpy" in times and "runetensor" in times else None
        met = None
        if w.target is not None and "runetensor" in times:
            if w.target_kind == "max_time":
                met = times["runetensor"] <= w.target
            elif w.target_kind in ("vs_torch", "vs_jax"):
                ref = w.target_kind[3:]
                met = times["runetensor"] <= w.target * times[ref] if ref in times else None
            else:
                met = ratio is not None and ratio >= w.target
        r = Result(w.name, w.description, w.per, times, spreads, ratio, w.target, w.target_kind, met, errors)
        out.append(r)
        if progress:
            progress(format_row(r))
    return out


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
