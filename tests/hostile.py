"""Running hostile inputs in child processes: a crash (signal, abort) or a hang is a test
failure with the child's output, not a lost test run.

``run_child(code)`` runs ``code`` (Python source) in a fresh interpreter with runetensor
importable and returns the finished process; ``assert_survives(code)`` also asserts that it
exited normally (code 0) within the time limit.  The child prints what the parent should
check (e.g. ``print("ok")``), or raises ``AssertionError`` itself.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(code: str, timeout: float = 120.0, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a child interpreter; ``AssertionError`` if it hangs past ``timeout`` seconds."""
    e = dict(os.environ)
    e["PYTHONPATH"] = _ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.setdefault("PYTHONFAULTHANDLER", "1")
    if env:
        e.update(env)
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=timeout, env=e, cwd=_ROOT)
    except subprocess.TimeoutExpired as ex:
        raise AssertionError(f"child process hung (> {timeout} s); output so far:\n{ex.stdout}\n{ex.stderr}") from None


def assert_survives(code: str, timeout: float = 120.0, env: dict | None = None) -> str:
    """Run ``code`` in a child; assert it exited with code 0 (no crash, no uncaught error). Returns stdout."""
    p = run_child(code, timeout, env)
    if p.returncode != 0:
        how = f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit code {p.returncode}"
        raise AssertionError(f"child process failed ({how}):\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    return p.stdout
