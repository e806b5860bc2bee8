"""Shortened runs of the examples in runetensor/examples (the digits CNN and MLP, saving and loading)."""
from __future__ import annotations

import pytest

pytest.importorskip("sklearn")

import runetensor as rt  # noqa: E402
import runetensor.io as rio  # noqa: E402
from runetensor.examples import digits as D  # noqa: E402
from runetensor.examples import digits_mlp  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return D.load_data()


def _same(a, b):
    return sorted(a) == sorted(b) and all(rt.to_array(a[k]) == rt.to_array(b[k]) for k in a)


def test_data_split(data):
    assert tuple(data.x_train.shape) == (1437, 1, 8, 8) and tuple(data.x_test.shape) == (360, 1, 8, 8)
    assert data.x_train.dtype == rt.float32 and data.y_train.dtype == rt.int32
    assert 0.0 <= float(rt.min(data.x_train)) and float(rt.max(data.x_train)) <= 1.0
    assert sorted(set(rt.to_array(data.y_test))) == list(range(10))
    again = D.load_data()   # the split is fixed
    assert rt.to_array(again.y_test) == rt.to_array(data.y_test)


@pytest.mark.parametrize("model, epochs", [("cnn", 2), ("mlp", 3)])
def test_short_training_learns(data, model, epochs):
    r = D.train(model, epochs=epochs, train_size=512, batch_size=32, data=data, progress=None)
    assert len(r.losses) == epochs * 16
    first, last = sum(r.losses[:3]) / 3, sum(r.losses[-3:]) / 3
    assert last < 0.6 * first, (first, last)               # seeds 0-3 give 0.21-0.26 (cnn), 0.39-0.45 (mlp)
    assert r.test_accuracy > 0.6, r.test_accuracy          # chance is 0.1; seeds 0-3 give 0.81-0.91
    shapes = {k: tuple(v.shape) for k, v in D.MODELS[model][0](rt.random.key(0)).items()}
    assert {k: tuple(v.shape) for k, v in r.params.items()} == shapes


def test_reproducible_for_a_seed(data):
    a = D.train("cnn", epochs=1, train_size=192, batch_size=64, data=data, progress=None, seed=3)
    b = D.train("cnn", epochs=1, train_size=192, batch_size=64, data=data, progress=None, seed=3)
    c = D.train("cnn", epochs=1, train_size=192, batch_size=64, data=data, progress=None, seed=4)
    assert a.losses == b.losses and _same(a.params, b.params)
    assert a.losses != c.losses


def test_save_load_same_accuracy(data, tmp_path):
    r = D.train("cnn", epochs=1, train_size=256, batch_size=32, data=data, progress=None)
    path = str(tmp_path / "cnn.safetensors")
    D.save_params(path, r.params, "cnn", seed=0)
    params, model, meta = D.load_params(path)
    assert model == "cnn" and meta["seed"] == "0"
    assert _same(params, r.params)
    assert D.accuracy(params, D.cnn, data.x_test, data.y_test) == r.test_accuracy


def test_command_line_save_and_load(tmp_path, capsys):
    path = str(tmp_path / "mlp.safetensors")
    assert digits_mlp.main(["--epochs", "2", "--train-size", "256", "--save", path]) == 0
    out, err = capsys.readouterr()
    assert "training the mlp" in out and "saved the parameters" in out
    # the progress line (rt.progress): into a pipe or file, plain lines (one per epoch here), no \r frames
    assert "\r" not in err and "epoch 2/2  4/4 [" in err and err.endswith("\n")
    trained = out.split("test accuracy ")[1].split("%")[0]
    assert D.main(["--load", path]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("mlp from ") and f"test accuracy {trained}%" in out


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown model"):
        D.train("resnet", progress=None)
    with pytest.raises(ValueError, match=">= 1"):
        D.train("mlp", epochs=0, progress=None)
    path = str(tmp_path / "other.safetensors")
    rio.save_safetensors(path, {"w": rt.zeros(rt.float32, [2])})
    with pytest.raises(ValueError, match="no known model"):
        D.load_params(path)
    rio.save_safetensors(path, {"w": rt.zeros(rt.float32, [2])}, metadata={"model": "mlp"})
    with pytest.raises(ValueError, match="the mlp model needs"):
        D.load_params(path)


def test_history_per_epoch(data):
    r = D.train("mlp", epochs=3, train_size=256, batch_size=32, data=data, progress=None)
    assert sorted(r.history) == ["loss", "test_accuracy", "train_accuracy"]
    assert all(len(v) == 3 for v in r.history.values())
    assert r.history["loss"][0] == pytest.approx(sum(r.losses[:8]) / 8)
    assert r.history["test_accuracy"][-1] == r.test_accuracy
    assert r.history["loss"][-1] < r.history["loss"][0]


def test_plot_writes_the_curves(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "curves.png"
    assert digits_mlp.main(["--epochs", "2", "--train-size", "128", "--quiet", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    assert f"wrote the training curves to {path}" in capsys.readouterr().out


def test_plot_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(SystemExit):
        D.main(["--epochs", "1", "--plot", str(tmp_path / "x.png")])
    assert "pip install 'runetensor[plot]'" in capsys.readouterr().err
    with pytest.raises(ModuleNotFoundError, match="runetensor\\[plot\\]"):
        D.plot_history({"loss": [1.0]}, str(tmp_path / "y.png"))
