"""ml_dtypes (bfloat16, float8, int4, uint4) is imported when a low-precision dtype is first needed, not by
``import runetensor``; the low-precision dtypes work the same whichever way their tables were filled.

Each check runs in a fresh interpreter (this process has long imported ml_dtypes)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
LOWP = ["bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4"]


def run_fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON object as its last line."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_and_float32_work_do_not_import_ml_dtypes():
    out = run_fresh("""
        import json, sys
        import runetensor as rt
        after_import = "ml_dtypes" in sys.modules
        x = rt.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=rt.float32)
        y = rt.sum(rt.exp(x @ x) * 2, axes=[1]).astype(rt.float16) + 1.0
        f = rt.jit(lambda a: rt.maximum(a * 2 + 1, 0.0))
        f(x); f(x)
        g = rt.grad(lambda a: rt.sum(a * a))(x)
        print(json.dumps({"after_import": after_import, "after_ops": "ml_dtypes" in sys.modules,
                          "dtypes": [str(d) for d in (y.dtype, g.dtype)]}))
    """)
    assert out == {"after_import": False, "after_ops": False, "dtypes": ["float16", "float32"]}


@pytest.mark.parametrize("name", LOWP)
def test_each_low_precision_dtype_loads_ml_dtypes_on_first_use_and_computes_like_it(name):
    """The first use loads ml_dtypes; the results are ml_dtypes' own (computed in float32 / int8 and rounded once),
    checked against ml_dtypes in the same process."""
    out = run_fresh(f"""
        import json, sys
        import runetensor as rt
        d = rt.{name}
        before = "ml_dtypes" in sys.modules
        vals = [1.0, -2.0, 3.0, 0.5, 7.0] if d.kind == "f" else [1, -2, 3, 0, 7]
        if d.kind != "f" and "uint" in "{name}":
            vals = [1, 2, 3, 0, 7]
        x = rt.asarray(vals, dtype=d)
        y = x * x + x if d.kind != "f" else rt.sqrt(rt.abs(x)) * x + x
        z = rt.zeros(d, (3,))
        s = rt.sum(x)
        got = rt.to_numpy(y)
        import ml_dtypes, numpy as np
        nd = got.dtype
        xs = np.asarray(vals, np.float32 if d.kind == "f" else np.int64)
        if d.kind == "f":
            want = (((np.sqrt(np.abs(xs)).astype(nd).astype(np.float32) * xs).astype(nd).astype(np.float32)
                     + xs).astype(nd))
        else:
            want = (xs * xs + xs).astype(np.int8 if nd.name == "int4" else np.uint8).astype(nd)
        print(json.dumps({{"before": before, "after": "ml_dtypes" in sys.modules, "dtype": str(y.dtype),
                          "np_dtype": nd.name, "same": got.tobytes() == want.tobytes(),
                          "zeros": rt.to_numpy(z).astype(np.float32).tolist(),
                          "sum": float(rt.to_numpy(s).astype(np.float64))}}))
    """)
    assert out["before"] is False and out["after"] is True
    assert out["dtype"] == name
    assert out["np_dtype"] == {"float8_e4m3": "float8_e4m3fn"}.get(name, name)
    assert out["same"], out
    assert out["zeros"] == [0.0, 0.0, 0.0]


def test_arrays_of_ml_dtypes_imported_after_runetensor_are_known():
    """A bfloat16 array made by the user's own ml_dtypes, imported after runetensor, is a bfloat16 tensor, and the
    backend's primitives see it as one (computed in float32 and rounded once, as when ml_dtypes came first)."""
    code = """
        import json, sys
        {first}
        import runetensor as rt
        import ml_dtypes, numpy as np
        from runetensor._backend.numpy_backend import numpy_backend as be
        a = (np.arange(-8, 8, dtype=np.float32) / 3).astype(ml_dtypes.bfloat16)
        b = np.full(16, 3, ml_dtypes.bfloat16)
        t = rt.asarray(a)
        raw = be.binary("div", a, b)
        print(json.dumps({{"dtype": str(t.dtype), "div": rt.to_numpy(t / rt.asarray(b)).view(np.uint16).tolist(),
                          "raw": raw.view(np.uint16).tolist(), "dtype_of": str(be.dtype(a))}}))
    """
    lazy = run_fresh(code.format(first=""))
    eager = run_fresh(code.format(first="import ml_dtypes"))
    assert lazy["dtype"] == lazy["dtype_of"] == "bfloat16"
    assert lazy == eager


def test_bfloat16_from_dlpack_before_any_low_precision_use():
    pytest.importorskip("torch")
    out = run_fresh("""
        import json, sys
        import torch
        import runetensor as rt
        before = "ml_dtypes" in sys.modules
        t = rt.from_dlpack(torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16))
        print(json.dumps({"before": before, "dtype": str(t.dtype), "vals": rt.to_numpy(t.astype(rt.float32)).tolist()}))
    """)
    assert out["dtype"] == "bfloat16"
    assert out["vals"] == [1.5, -2.25, 3.0]


def test_every_dtype_round_trips_through_numpy_in_a_fresh_process():
    out = run_fresh("""
        import json
        import runetensor as rt
        res = {}
        for name in ["bool", "int4", "uint4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                     "uint64", "float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "float64",
                     "complex64", "complex128"]:
            d = getattr(rt, name)
            t = rt.ones(d, (2,))
            back = rt.asarray(rt.to_numpy(t))
            res[name] = [str(back.dtype), str(rt.to_numpy(t).tolist())]
        print(json.dumps(res))
    """)
    for name, (dt, vals) in out.items():
        assert dt == name
        assert vals in ("[True, True]", "[1, 1]", "[1.0, 1.0]", "[(1+0j), (1+0j)]"), (name, vals)


def test_the_tables_agree_with_an_eager_load():
    """Tables filled lazily hold what ml_dtypes gives (the mapping, the compute dtypes)."""
    import ml_dtypes

    from runetensor import _dtypes as D
    from runetensor._backend import numpy_backend as _nb_pkg  # noqa: F401  (the package attribute is the instance)
    nb = sys.modules["runetensor._backend.numpy_backend"]
    assert nb.load_lowp()
    assert nb.NP_DTYPE[D.bfloat16] == np.dtype(ml_dtypes.bfloat16)
    assert nb.NP_DTYPE[D.float8_e4m3] == np.dtype(ml_dtypes.float8_e4m3fn)
    assert nb.RT_DTYPE[np.dtype(ml_dtypes.int4)] is D.int4
    assert nb._COMPUTE[np.dtype(ml_dtypes.uint4)] == np.dtype(np.uint8)
    with pytest.raises(KeyError):
        nb.NP_DTYPE["not a dtype"]


def test_a_thread_importing_ml_dtypes_while_another_needs_bfloat16_does_not_hang():
    """One thread imports ml_dtypes (the finder fills the tables inside that import) while another asks for a
    bfloat16 tensor (which imports it too): both finish, the tables once filled."""
    for _ in range(3):
        out = run_fresh("""
            import json, threading
            import runetensor as rt
            go = threading.Barrier(2)
            res = {}

            def user():
                go.wait()
                import ml_dtypes
                res["user"] = ml_dtypes.bfloat16.__name__

            def lib():
                go.wait()
                res["lib"] = str(rt.zeros(rt.bfloat16, (3,)).dtype)

            ts = [threading.Thread(target=user, daemon=True), threading.Thread(target=lib, daemon=True)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(60)
            print(json.dumps({"alive": any(t.is_alive() for t in ts), **res}))
        """)
        assert out == {"alive": False, "user": "bfloat16", "lib": "bfloat16"}
