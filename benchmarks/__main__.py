"""Command line: ``python -m benchmarks [--quick] [--only NAME ...] [--json FILE]``."""
from __future__ import annotations

import argparse
import sys

from .harness import format_table, metadata, run_workloads, write_json
from .workloads import WORKLOADS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks",
                                description="Benchmark runetensor against NumPy (and PyTorch/JAX when installed).")
    p.add_argument("--quick", action="store_true", help="smaller inputs and fewer repeats (a smoke run)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these workloads (see --list)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per workload and library")
    p.add_argument("--frameworks", nargs="*", default=None, metavar="LIB",
                   help="libraries to compare besides runetensor and numpy (default: torch jax when importable)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="runetensor's thread count (rt.set_num_threads; default: the machine's cores)")
    p.add_argument("--same-process", action="store_true",
                   help="measure PyTorch and JAX in this process too (default: each in a process of its own, so "
                        "that no library's threads disturb another's); shows what a user who imports them all gets")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = p.parse_args(argv)
    if args.list:
        for w in WORKLOADS.values():
            print(f"{w.name:18s} {w.description}")
        return 0
    names = args.only or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; choose from: {', '.join(WORKLOADS)}")
    if args.threads is not None:
        import runetensor
        runetensor.set_num_threads(args.threads)
    meta = metadata(args.frameworks)
    print(f"# {meta['date']}  python {meta['python']}  numpy {meta['numpy']}  runetensor {meta['runetensor']}  "
          f"torch {meta['torch']}  jax {meta['jax']}  threads {meta['runetensor_threads']}  "
          f"cpus {meta['cpus']}  blas {meta['blas']}", file=sys.stderr)
    if meta.get("warning"):
        print(f"# warning: {meta['warning']}", file=sys.stderr)
    results = run_workloads(names, quick=args.quick, repeats=args.repeats, frameworks=meta["frameworks"],
                            progress=lambda s: print(s, file=sys.stderr, flush=True), isolate=not args.same_process)
    print(format_table(results, markdown=args.markdown))
    if args.json:
        write_json(args.json, meta, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
