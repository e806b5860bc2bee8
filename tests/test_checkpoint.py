"""rt.io.save_checkpoint / load_checkpoint: any pytree in one safetensors file, checked against ``like``;
resuming a training run from a checkpoint reproduces the uninterrupted run bit for bit."""
from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
import pytest

import runetensor as rt
import runetensor.io as rio
import runetensor.nn as nn


class Pair(NamedTuple):
    a: object
    b: object


class Net(nn.Module):
    l1: nn.Linear
    l2: nn.Linear
    drop: nn.Dropout

    def __init__(self, *, key, hidden=16):
        k1, k2 = rt.random.split(key)
        self.l1 = nn.Linear(4, hidden, key=k1)
        self.l2 = nn.Linear(hidden, 1, key=k2)
        self.drop = nn.Dropout(0.2)

    def __call__(self, x, *, key=None):
        return self.l2(self.drop(rt.tanh(self.l1(x)), key=key))


def _bits(t):
    a = np.asarray(rt.to_array(t)) if not hasattr(rt, "to_numpy") else np.asarray(rt.to_numpy(t))
    return a.dtype.str, a.shape, a.tobytes()


def _assert_identical(a, b):
    la, ta = rt.tree_flatten(a)
    lb, tb = rt.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        if isinstance(x, rt.Tensor):
            assert isinstance(y, rt.Tensor) and x.dtype is y.dtype and _bits(x) == _bits(y)
        else:
            assert type(x) is type(y) and x == y


def test_round_trip_of_models_states_keys_and_scalars(tmp_path):
    net = Net(key=rt.random.key(0))
    opt = rt.optim.adamw(1e-3)
    tree = {"model": net, "opt": opt.init(net), "key": rt.random.key(7), "step": 12, "lr": 0.1 + 0.2,
            "done": False, "name": "run-α", "nothing": None,
            "misc": Pair(rt.asarray(np.arange(6, dtype=np.int16).reshape(2, 3)), [rt.ones(rt.bfloat16, [0, 2]), -3])}
    p = str(tmp_path / "ck.safetensors")
    rio.save_checkpoint(p, tree, metadata={"note": "hello"})
    like = {"model": Net(key=rt.random.key(1)), "opt": opt.init(Net(key=rt.random.key(1))), "key": rt.random.key(0),
            "step": 0, "lr": 0.0, "done": True, "name": "", "nothing": None,
            "misc": Pair(rt.zeros(rt.int16, [2, 3]), [rt.zeros(rt.bfloat16, [0, 2]), 0])}
    back = rio.load_checkpoint(p, like=like)
    _assert_identical(back, tree)
    assert type(back["model"]) is Net and back["model"].drop.p == 0.2
    assert type(back["opt"]) is type(tree["opt"]) and type(back["misc"]) is Pair
    # the file is a plain safetensors file with the tree's paths as names
    tensors, meta = rio.load_safetensors(p, return_metadata=True)
    assert {"model.l1.weight", "model.l2.bias", "opt.mu.l1.weight", "key", "misc.a", "misc.b.0"} <= set(tensors)
    assert meta["note"] == "hello"


def test_resuming_reproduces_the_uninterrupted_run_bit_for_bit(tmp_path):
    x = rt.random.normal(rt.random.key(1), [32, 4])
    y = rt.sum(rt.sin(x), [1], keepdims=True)
    opt = rt.optim.chain(rt.optim.clip_by_global_norm(1.0), rt.optim.adamw(
        rt.optim.warmup_cosine_decay_schedule(0.0, 0.05, 2, 10)))

    def step(model, state, key):
        key, sub = rt.random.split(key)
        loss, g = rt.value_and_grad(lambda m: rt.mean((m(x, key=sub) - y) ** 2))(model)
        u, state = opt.update(g, state, model)
        return rt.optim.apply_updates(model, u), state, key, loss

    def fresh():
        m = Net(key=rt.random.key(0))
        return m, opt.init(m), rt.random.key(3)

    m, s, k = fresh()
    losses = []
    for _ in range(8):
        m, s, k, loss = step(m, s, k)
        losses.append(loss)
    full = {"model": m, "opt": s, "key": k, "step": 8}

    m, s, k = fresh()
    for _ in range(3):
        m, s, k, _ = step(m, s, k)
    p = str(tmp_path / "resume.safetensors")
    rio.save_checkpoint(p, {"model": m, "opt": s, "key": k, "step": 3})
    del m, s, k
    m0, s0, k0 = fresh()
    ck = rio.load_checkpoint(p, like={"model": m0, "opt": s0, "key": k0, "step": 0})
    m, s, k = ck["model"], ck["opt"], ck["key"]
    resumed = []
    for _ in range(ck["step"], 8):
        m, s, k, loss = step(m, s, k)
        resumed.append(loss)
    _assert_identical({"model": m, "opt": s, "key": k, "step": 8}, full)
    assert [_bits(a) for a in resumed] == [_bits(a) for a in losses[3:]]


def test_mismatches_name_the_first_differing_path(tmp_path):
    p = str(tmp_path / "m.safetensors")
    tree = {"a": rt.ones(rt.float32, [2, 3]), "b": [rt.zeros(rt.int32, [4]), 5]}
    rio.save_checkpoint(p, tree)
    with pytest.raises(ValueError, match=r"at 'a': the file has a float32 tensor of shape \(2, 3\), like has a "
                                         r"float32 tensor of shape \(3, 2\)"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [3, 2]), "b": [rt.zeros(rt.int32, [4]), 5]})
    with pytest.raises(ValueError, match=r"at 'b.0': the file has a int32 tensor .* like has a float32"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [2, 3]), "b": [rt.zeros(rt.float32, [4]), 5]})
    with pytest.raises(ValueError, match=r"at 'b.1': the file has a Python int, like has a Python float"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [2, 3]), "b": [rt.zeros(rt.int32, [4]), 5.0]})
    with pytest.raises(ValueError, match=r"at 'b.2': the file has no such leaf"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [2, 3]), "b": [rt.zeros(rt.int32, [4]), 5, 6]})
    with pytest.raises(ValueError, match=r"at 'b.1': like has no such leaf"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [2, 3]), "b": [rt.zeros(rt.int32, [4])]})
    with pytest.raises(ValueError, match=r"at 'c.0': the file has 'b.0' there"):
        rio.load_checkpoint(p, like={"a": rt.ones(rt.float32, [2, 3]), "c": [rt.zeros(rt.int32, [4]), 5]})
    # a model of another size
    rio.save_checkpoint(p, Net(key=rt.random.key(0)))
    with pytest.raises(ValueError, match=r"at 'l1.weight': the file has a float32 tensor of shape \(16, 4\), "
                                         r"like has a float32 tensor of shape \(8, 4\)"):
        rio.load_checkpoint(p, like=Net(key=rt.random.key(0), hidden=8))


def test_other_files_and_bad_leaves_are_refused(tmp_path):
    p = str(tmp_path / "plain.safetensors")
    rio.save_safetensors(p, {"w": rt.ones(rt.float32, [2])})
    with pytest.raises(ValueError, match="not a runetensor checkpoint"):
        rio.load_checkpoint(p, like={"w": rt.ones(rt.float32, [2])})
    rio.save_safetensors(p, {"w": rt.ones(rt.float32, [2])}, metadata={"runetensor_checkpoint": "{not json"})
    with pytest.raises(ValueError, match="damaged"):
        rio.load_checkpoint(p, like={"w": rt.ones(rt.float32, [2])})
    with pytest.raises(TypeError, match=r"'opt.fn' is builtin_function"):
        rio.save_checkpoint(p, {"opt": {"fn": len}})
    with pytest.raises(TypeError, match="save_checkpoint: complex128"):
        rio.save_checkpoint(p, {"z": rt.zeros(rt.complex128, [2])})
    with pytest.raises(ValueError, match="same path|path 'a.b'"):
        rio.save_checkpoint(p, {"a.b": rt.ones(rt.float32, [1]), "a": {"b": rt.ones(rt.float32, [1])}})


def test_a_failed_save_leaves_the_previous_checkpoint(tmp_path):
    p = str(tmp_path / "ck.safetensors")
    good = {"w": rt.ones(rt.float32, [3]), "step": 1}
    rio.save_checkpoint(p, good)
    with pytest.raises(TypeError):
        rio.save_checkpoint(p, {"w": rt.ones(rt.float32, [3]), "step": object()})
    _assert_identical(rio.load_checkpoint(p, like=good), good)
    assert os.listdir(tmp_path) == ["ck.safetensors"]       # no temporary file left behind


def test_save_safetensors_points_nested_trees_to_save_checkpoint(tmp_path):
    p = str(tmp_path / "n.safetensors")
    with pytest.raises(TypeError, match=r"'layer1' is a dict, not a tensor.*save_checkpoint"):
        rio.save_safetensors(p, {"layer1": {"w": rt.ones(rt.float32, [2])}})
    with pytest.raises(TypeError, match=r"'m' is a Linear, not a tensor.*save_checkpoint"):
        rio.save_safetensors(p, {"m": nn.Linear(2, 2, key=rt.random.key(0))})
    assert not os.path.exists(p)
