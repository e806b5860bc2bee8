"""``python -m runetensor``: a short printed tour on the default backend.

Each step shows a line of code and what it prints, as in an interactive session:
creation, views that share memory, math with broadcasting and promotion,
reductions, gradients, seeded random numbers and the printing rules.  Each value is
shown as ``str`` shows it (``print(t)``); the last step shows a ``repr``.
"""
from __future__ import annotations

import sys
from typing import Any

import runetensor as rt

TOUR: list[tuple[str, list[str]]] = [
    ("Creation: the dtype comes first, as in the seed", [
        "t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])",
        "t",
        "rt.arange(rt.int32, 0, 10, 2)",
        "rt.linspace(rt.float32, 0., 10., 5)",
        "rt.geomspace(rt.float32, 1., 1000., 4)",
        "rt.eye(rt.int32, 3, k=1)",
        "rt.asarray([[1, 2], [3, 4]])",
    ]),
    ("Views share memory: no copies, strides in bytes, offsets in elements", [
        "v = rt.transpose(t)",
        "v",
        "v.shape, v.strides, rt.is_c_contiguous(v)",
        "row = t[1]",
        "row[0] = 40.",
        "t",
        "rt.slice(t, [rt.R(0, 2), rt.L([0, 2])])",
        "w = t[:, ::-1]",
        "w",
        "w.strides, rt.offset(w)",
        "rt.reshape(rt.arange(rt.int32, 0, 6, 1), [3, 2])",
    ]),
    ("Math: broadcasting, promotion, reductions", [
        "t + rt.create(rt.float32, [3], [10., 20., 30.])",
        "(t * 2).dtype, (rt.ones(rt.int8, [2]) + 1.5).dtype, rt.promote_types(rt.int8, rt.uint8)",
        "rt.sum(t, axes=[0])",
        "rt.mean(t)",
        "rt.matmul(t, rt.transpose(t))",
        "rt.exp(rt.linspace(rt.float64, 0., 1., 3))",
        "rt.where(t > 3., t, rt.zeros_like(t))",
    ]),
    ("Gradients: rt.grad, rt.jvp, rt.vjp work on anything built from these ops, and nest", [
        "loss = lambda w: rt.sum(rt.tanh(t @ w) ** 2)",
        "w = rt.create(rt.float32, [3], [0.1, -0.2, 0.3])",
        "rt.grad(loss)(w)",
        "rt.grad(rt.grad(lambda x: x ** 3))(rt.scalar(rt.float64, 2.))",
        "rt.jvp(rt.sin, (rt.scalar(rt.float64, 0.),), (rt.scalar(rt.float64, 1.),))",
        "rt.jacrev(lambda x: x * x)(rt.create(rt.float32, [2], [1., 2.]))",
    ]),
    ("Random numbers: counter-based (Philox), reproducible by seed", [
        "rt.rand(rt.float32, [2, 3], seed=42)",
        "rt.randint(rt.int32, [8], 0, seed=7, high=100)",
        "rt.to_array(rt.randn(rt.float64, [3], seed=1)) == rt.to_array(rt.randn(rt.float64, [3], seed=1))",
        "rt.dropout(rt.ones(rt.float32, [8]), seed=3, rate=0.5)",
    ]),
    ("Printing: %g floats, true/false, complex, nan/inf, 19 dtypes, summaries", [
        "rt.create(rt.float64, [5], [0.1, -0., float('nan'), float('inf'), 1e20])",
        "rt.create(rt.bool, [2], [False, True])",
        "rt.create(rt.complex64, [2], [1 + 2j, 3 - 4j])",
        "rt.create(rt.bfloat16, [3], [0.1, 1., 300.])",
        "rt.create(rt.int4, [3], [-8, 0, 7])",
        "rt.scalar(rt.float32, 2.5)",
        "rt.arange(rt.int64, 0, 1_000_000, 1)",
        "repr(rt.create(rt.uint8, [2, 2], [1, 2, 3, 4]))",
    ]),
]


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, (str, rt.Tensor)):
        return str(value)
    return repr(value)


def main(out: Any = None) -> int:
    """Print the tour; return 0 (1 if a step failed, after printing the error)."""
    out = out or sys.stdout
    ns: dict[str, Any] = {"rt": rt}
    failed = 0
    print(f"runetensor {rt.__version__} on the {rt.get_backend().name} backend", file=out)
    for title, steps in TOUR:
        print(f"\n== {title} ==", file=out)
        for line in steps:
            print(f">>> {line}", file=out)
            try:
                try:
                    code = compile(line, "<tour>", "eval")
                except SyntaxError:
                    exec(compile(line, "<tour>", "exec"), ns)  # noqa: S102  (our own fixed lines)
                    continue
                value = eval(code, ns)  # noqa: S307
            except Exception as e:  # noqa: BLE001  (the tour reports and goes on)
                failed += 1
                print(f"   !! {type(e).__name__}: {e}", file=out)
                continue
            if value is not None:
                print(_show(value), file=out)
    print("\nMore: README.md, docs/, and help(rt.<function>) for each function's examples.", file=out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
