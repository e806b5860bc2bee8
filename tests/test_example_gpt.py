"""Shortened runs of runetensor/examples/gpt.py: it learns, samples, checkpoints and resumes bit for bit."""
from __future__ import annotations

import io

import numpy as np
import pytest

import runetensor as rt
import runetensor.io as rio
from runetensor.examples import gpt as G

TINY = ["--steps", "24", "--layers", "1", "--d-model", "16", "--heads", "2", "--block-size", "16",
        "--batch-size", "8", "--eval-batches", "2", "--warmup", "4", "--lr", "1e-2"]


def _cfg(steps):
    return G.Config(block_size=16, d_model=16, layers=1, heads=2, batch_size=8, steps=steps, warmup=2, lr=1e-2)


def test_the_text_ships_with_the_package():
    vocab, tr, va = G.load_text()
    assert 20_000 < len(tr) + len(va) < 60_000 and len(tr) == int(0.9 * (len(tr) + len(va)))
    assert "Shall I compare thee to a summer's day?" in vocab.decode(tr)
    assert vocab.decode(vocab.encode("Love is not love")) == "Love is not love"


def test_command_line_learns_samples_and_checkpoints(capsys, tmp_path):
    p = str(tmp_path / "ck.safetensors")
    assert G.main(TINY + ["--eval-every", "12", "--sample-length", "20", "--prompt", "Love", "--checkpoint", p,
                          "--checkpoint-every", "10"]) == 0
    out = capsys.readouterr().out
    meta = rio.load_safetensors(p, return_metadata=True)[1]
    assert '["step","int","24"]' in meta["runetensor_checkpoint"] and f"checkpoint: {p} (step 24)" in out
    assert "\r" not in out                               # not a terminal: plain lines
    lines = [ln for ln in out.splitlines() if ln.startswith("step ") and "loss" in ln and "validation" not in ln]
    first, last = float(lines[0].split("loss ")[1].split()[0]), float(lines[-1].split("loss ")[1].split()[0])
    assert first > 3.5 and last < first - 0.4, (first, last)      # ln(60) = 4.09 at the start
    assert out.count("validation loss") == 3
    sample = out.split("--- sample ---\n")[1].rstrip("\n")
    assert sample.startswith("Love") and len(sample) == 24


def test_progress_redraws_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    buf = Tty()
    G.train(_cfg(5), progress=buf, eval_every=0, eval_batches=1)
    text = buf.getvalue()
    assert text.count("\r") >= 5 and "step 5/5" in text


def test_the_step_compiles_once():
    cfg = _cfg(4)
    vocab, tr, _ = G.load_text()
    model = G.GPT(len(vocab.chars), cfg, key=rt.random.key(0))
    opt = G.make_optimizer(cfg)
    state = opt.init(model)
    step = G.make_step(opt)
    for i in range(4):
        x, y = G.batch(tr, cfg, i)
        model, state, loss = step(model, state, x, y, rt.random.fold_in(rt.random.key(1), i))
    st = rt.jit_stats(step)
    assert st["traces"] == 1 and st["cache_hits"] == 3


def test_resume_from_a_checkpoint_is_bit_identical(tmp_path):
    full, part = str(tmp_path / "full.safetensors"), str(tmp_path / "part.safetensors")
    a = G.train(_cfg(6), checkpoint=full, progress=None, eval_every=0, eval_batches=1)
    G.train(_cfg(3), checkpoint=part, progress=None, eval_every=0, eval_batches=1)      # interrupted at 3
    b = G.train(_cfg(6), checkpoint=part, resume=True, progress=None, eval_every=0, eval_batches=1)
    assert b.step == 6 and a.val_loss == b.val_loss
    ta, tb = rio.load_safetensors(full), rio.load_safetensors(part)
    assert sorted(ta) == sorted(tb) and "model.blocks.0.attn.in_proj_weight" in ta and "opt.1.mu.head.weight" in ta
    for k in ta:
        assert np.array_equal(np.asarray(rt.to_array(ta[k])), np.asarray(rt.to_array(tb[k]))), k


def test_resume_with_other_flags_is_refused(tmp_path):
    p = str(tmp_path / "ck.safetensors")
    G.train(_cfg(2), checkpoint=p, progress=None, eval_every=0, eval_batches=1)
    with pytest.raises(ValueError, match="cannot resume"):
        G.train(_cfg(4)._replace(d_model=32), checkpoint=p, resume=True, progress=None)
    with pytest.raises(ValueError, match="lr"):
        G.train(_cfg(4)._replace(lr=0.5), checkpoint=p, resume=True, progress=None)
    with pytest.raises(ValueError, match="existing --checkpoint"):
        G.train(_cfg(4), checkpoint=str(tmp_path / "none.safetensors"), resume=True, progress=None)


def test_cached_decoding_gives_the_full_pass_logits():
    cfg = _cfg(1)._replace(layers=2)
    vocab, tr, _ = G.load_text()
    model = G.GPT(len(vocab.chars), cfg, key=rt.random.key(4))
    ids = rt.asarray(tr[None, :16])
    full = rt.to_numpy(model(ids))
    logits, caches = model.decode(ids[:, :10])
    parts = [rt.to_numpy(logits)]
    for i in range(10, 16):
        logits, caches = model.decode(ids[:, i:i + 1], caches)
        parts.append(rt.to_numpy(logits))
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="block size"):
        model.decode(ids[:, :1], caches)
    text = G.sample(model, vocab, "Love", 40, key=rt.random.key(0))     # crosses the block size twice
    assert text.startswith("Love") and len(text) == 44 and set(text) <= set(vocab.chars)
