"""rt.progress: a redrawn line on terminals, plain periodic lines into files and pipes, silencing."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import runetensor as rt
from runetensor import progress as P


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Clock:
    """A settable time.perf_counter for the module."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(P.time, "perf_counter", c)
    return c


def test_terminal_redraws_one_line_in_place(clock):
    out = FakeTTY()
    p = P.Progress(total=3, desc="epoch 1", file=out)
    for i in range(3):
        clock.t += 0.2
        p.update(1, loss=1.0 / (i + 1))
    p.close()
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert len(frames) == 4 and text.endswith("\n") and text.count("\n") == 1
    assert frames[0].startswith("epoch 1  1/3 [") and "loss 1" in frames[0]
    assert frames[-1].startswith("epoch 1  3/3 [########################] 100%") and "loss 0.3333" in frames[-1]


def test_terminal_throttles_redraws(clock):
    out = FakeTTY()
    p = P.Progress(total=1000, file=out)          # default interval on a terminal: 0.1 s
    for _ in range(1000):
        clock.t += 0.001
        p.update()
    assert 9 <= out.getvalue().count("\r") <= 12


def test_shorter_line_erases_the_longer_one(clock):
    out = FakeTTY()
    p = P.Progress(total=2, file=out, interval=0)
    p.update(1, note="a long, long note")
    p.postfix.clear()
    p.update(1)
    frames = out.getvalue().split("\r")[1:]
    assert len(frames[1]) >= len(frames[0])       # padded with spaces over the old text


def test_file_gets_plain_periodic_lines_and_a_final_one(clock):
    out = io.StringIO()
    p = P.Progress(total=100, desc="train", file=out)   # not a terminal: one line per 10 s
    for _ in range(100):
        clock.t += 0.35
        p.update(1, loss=0.5)
    p.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert len(lines) == 3 + 1                         # at 10.15 s, 20.3 s, 30.1 s, then the final line
    assert all(line.startswith("train  ") for line in lines)
    assert lines[-1].startswith("train  100/100 [") and "35s" in lines[-1]


def test_pipe_of_a_child_process_gets_no_carriage_returns():
    code = ("import runetensor as rt\n"
            "for _ in rt.progress.progress(range(5), desc='x', interval=0): pass\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "RUNETENSOR_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and r.stderr.count("\n") == 5 and "x  5/5 [" in r.stderr


def test_environment_switch_silences_everything():
    code = "import runetensor as rt\nfor _ in rt.progress.progress(range(5), interval=0): pass\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "RUNETENSOR_PROGRESS": "0"})
    assert r.returncode == 0 and r.stderr == ""


def test_silenced_globally_and_per_use():
    out = io.StringIO()
    with P.silenced():
        assert not P.enabled()
        list(P.progress(range(3), file=out, interval=0))
    assert P.enabled() and out.getvalue() == ""
    list(P.progress(range(3), file=out, interval=0, disable=True))
    assert out.getvalue() == ""
    old = P.set_enabled(False)
    try:
        p = P.Progress(total=2, file=out, interval=0)
        p.update(2)
        p.close()
        assert out.getvalue() == "" and p.n == 2            # still counts
    finally:
        P.set_enabled(old)
    with pytest.raises(TypeError, match="set_enabled"):
        P.set_enabled("no")


def test_delay_hides_short_work(clock):
    out = io.StringIO()
    p = P.Progress(total=3, file=out, interval=0, delay=2.0)
    clock.t += 1.0
    p.update()
    p.close()
    assert out.getvalue() == ""                   # done within the delay: no trace
    p = P.Progress(total=3, file=out, interval=0, delay=2.0)
    clock.t += 1.0
    p.update()
    clock.t += 1.5
    p.update()
    p.close()
    assert out.getvalue().splitlines()[0].startswith("2/3 [")


def test_unknown_total_shows_count_and_rate(clock):
    out = io.StringIO()
    p = P.Progress(iter(range(10)), desc="stream", unit="batch", file=out, interval=0)
    for _ in p:
        clock.t += 0.5
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("stream  10 batch  5.0s  2 batch/s")


def test_iterator_closes_on_break_and_len_gives_total(clock):
    out = io.StringIO()
    p = P.progress(list(range(10)), file=out, interval=0)
    assert p.total == 10
    for i in p:
        if i == 3:
            break
    assert p.closed and out.getvalue().splitlines()[-1].startswith(" 3/10 [")   # 3 items finished


def test_tensor_values_are_read_only_when_written(clock):
    out = io.StringIO()
    p = P.Progress(total=2, file=out, interval=0)
    p.update(1, loss=rt.scalar(rt.float32, 0.25))
    p.close()
    assert "loss 0.25" in out.getvalue()


def test_broken_stream_stops_reporting_without_failing():
    class Broken(io.StringIO):
        def write(self, s):
            raise OSError("broken pipe")

    p = P.Progress(total=3, file=Broken(), interval=0)
    for _ in range(3):
        p.update()
    p.close()
    assert p.disable


def test_errors():
    with pytest.raises(ValueError, match="total must be >= 0"):
        P.Progress(total=-1)
    with pytest.raises(TypeError, match="total must be an integer"):
        P.Progress(total=2.5)
    with pytest.raises(ValueError, match="interval"):
        P.Progress(interval=-1)
    with pytest.raises(TypeError, match="write"):
        P.Progress(file=object())
    with pytest.raises(TypeError, match="nothing to iterate"):
        list(P.Progress(total=3))


def test_large_io_reports_progress(tmp_path, monkeypatch, capsys):
    import runetensor.io as rio
    monkeypatch.setattr(rio, "PROGRESS_BYTES", 1 << 20)
    monkeypatch.setattr(rio, "PROGRESS_DELAY", 0.0)
    t = rt.rand(rt.float32, [5_000_000], seed=0)                 # 20 MB: two 16 MiB chunks
    rio.save_npy(str(tmp_path / "t.npy"), t)
    back = rio.load_npy(str(tmp_path / "t.npy"))
    rio.save_safetensors(str(tmp_path / "t.safetensors"), {"t": t})
    back2 = rio.load_safetensors(str(tmp_path / "t.safetensors"))["t"]
    assert bool(rt.all(back == t)) and bool(rt.all(back2 == t))
    err = capsys.readouterr().err
    assert err.count("writing 0.02 GiB  2/2 [") == 2 and err.count("reading 0.02 GiB  2/2 [") == 2
    assert "\r" not in err
    monkeypatch.setattr(rio, "PROGRESS_DELAY", 60.0)            # the default waits: quick work is silent
    rio.save_npy(str(tmp_path / "t.npy"), t)
    assert capsys.readouterr().err == ""


def test_dask_persist_on_the_local_scheduler():
    pytest.importorskip("dask")
    with rt.use_backend("dask", chunks=(100, 50)):
        x = rt.rand(rt.float32, [400, 100], seed=0)
    out = io.StringIO()
    (y,) = P.persist(rt.sqrt(x * x + 1.0), desc="sqrt", file=out, interval=0)
    ref = rt.sqrt(x.to_backend("numpy") * x.to_backend("numpy") + 1.0)
    assert bool(rt.all(y.to_backend("numpy") == ref))
    last = out.getvalue().splitlines()[-1]
    total = int(last.split("/")[1].split(" ")[0])
    assert last.startswith(f"sqrt  {total}/{total} [") and total >= 8      # one line per task, 8 chunks


def test_dask_persist_on_a_cluster_counts_its_chunks():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with rt.use_backend("dask", chunks=(100, 50)):
            x = rt.rand(rt.float32, [400, 100], seed=0)
        out = io.StringIO()
        a, b = P.persist(x * 2.0, rt.sum(x, axes=[1]), desc="cluster", file=out, interval=0)
        np_x = x.to_backend("numpy")
        assert bool(rt.all(a.to_backend("numpy") == np_x * 2.0))
        assert float(rt.max(rt.abs(b.to_backend("numpy") - rt.sum(np_x, axes=[1])))) < 1e-4
        lines = out.getvalue().splitlines()
        assert lines[-1].startswith("cluster  12/12 [")                      # 8 + 4 chunks
        assert "\r" not in out.getvalue()


def test_reachable_from_rt():
    assert rt.progress is P
