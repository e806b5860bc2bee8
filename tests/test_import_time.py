"""``import runetensor`` loads only the core: the submodules and functions a program may never use are
imported on first use (checked in fresh interpreters; structural, never timed)."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAZY_MODULES = ["runetensor.nn", "runetensor.io", "runetensor.random", "runetensor.optim", "runetensor.datasets",
                "runetensor.metrics", "runetensor.progress", "runetensor._jit", "runetensor._pmap",
                "runetensor._optim_extra", "runetensor._checkpoint"]


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_runetensor_leaves_the_optional_submodules_unimported():
    got = _run("import json, sys, runetensor\n"
               f"print(json.dumps([m for m in {LAZY_MODULES!r} if m in sys.modules]))")
    assert got == []


def test_import_runetensor_imports_no_other_array_library():
    got = _run("import json, sys, runetensor\n"
               "print(json.dumps([m for m in ('torch', 'jax', 'scipy', 'dask', 'sklearn', 'matplotlib', 'PIL')"
               " if m in sys.modules]))")
    assert got == []


def test_lazy_submodules_are_attributes_imported_on_first_use():
    got = _run("import json, sys, types, runetensor as rt\n"
               "names = ['io', 'random', 'optim', 'datasets', 'metrics', 'progress', 'nn']\n"
               "listed = [n in dir(rt) for n in names]\n"
               "mods = [getattr(rt, n) for n in names]\n"
               "print(json.dumps([listed, [isinstance(m, types.ModuleType) and m.__name__ == 'runetensor.' + n"
               " for m, n in zip(mods, names)], [('runetensor.' + n) in sys.modules for n in names]]))")
    assert got == [[True] * 7, [True] * 7, [True] * 7]


def test_lazy_functions_work_and_are_bound_after_first_use():
    got = _run("import json, runetensor as rt\n"
               "before = 'jit' in vars(rt)\n"
               "f = rt.jit(lambda x: x * 2)\n"
               "y = f(rt.ones(rt.float32, [3])).tolist()\n"
               "from runetensor import pmap, psum, jit_stats\n"
               "print(json.dumps([before, 'jit' in vars(rt), y, pmap.__module__, callable(jit_stats),"
               " 'pmap' in dir(rt)]))")
    assert got == [False, True, [2.0, 2.0, 2.0], "runetensor._pmap", True, True]


def test_star_import_still_gives_the_lazy_functions():
    got = _run("import json\nfrom runetensor import *\nprint(json.dumps([jit.__module__, pmap.__module__]))")
    assert got == ["runetensor._jit", "runetensor._pmap"]


def test_unknown_attribute_still_raises_attribute_error():
    got = _run("import json, runetensor as rt\n"
               "try:\n    rt.no_such_thing\n    r = 'no error'\n"
               "except AttributeError as e:\n    r = str(e)\nprint(json.dumps(r))")
    assert "no_such_thing" in got
