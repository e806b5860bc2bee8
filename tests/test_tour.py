"""``python -m runetensor`` runs and prints the tour."""
import io
import subprocess
import sys

from runetensor.__main__ import main


def test_tour_runs_every_step():
    out = io.StringIO()
    assert main(out) == 0, out.getvalue()
    text = out.getvalue()
    assert "!!" not in text
    assert ">>> rt.geomspace(rt.float32, 1., 1000., 4)\n[1, 10, 100, 1000]" in text
    assert "[0, 1, 2, ..., 999997, 999998, 999999]" in text
    assert "(rt.float32, rt.float64, rt.int16)" in text


def test_python_dash_m_runetensor():
    r = subprocess.run([sys.executable, "-m", "runetensor"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("runetensor ") and "== Views share memory" in r.stdout
