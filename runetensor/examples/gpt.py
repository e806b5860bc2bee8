"""Train a small character-level GPT on Shakespeare's sonnets, end to end: ``python -m runetensor.examples.gpt``.

Run it::

    python -m runetensor.examples.gpt                                # the documented run (docs/examples.md)
    python -m runetensor.examples.gpt --steps 300 --layers 1         # a short one
    python -m runetensor.examples.gpt --checkpoint gpt.safetensors --checkpoint-every 200
    python -m runetensor.examples.gpt --checkpoint gpt.safetensors --resume      # continue where it stopped

The text (``runetensor/examples/data/sonnets.txt``, public domain) ships with the package: the
first 90% of its characters train, the last 10% validate.  The model is a decoder-only
transformer built from :mod:`runetensor.nn` modules: token and position embeddings, ``--layers``
pre-norm blocks (layer norm, causal :class:`~runetensor.nn.MultiheadAttention`, residual; layer
norm, a 4x MLP with GELU, residual; dropout on the embeddings and both residual branches), a
final layer norm and a linear head.  Training is ONE ``rt.jit``-compiled step (loss, gradient,
global-norm clipping, AdamW with linear warm-up and cosine decay, update) whose model and
optimizer state are donated; it compiles once for the whole run.  Batches and dropout keys are
functions of ``(seed, step)``, so a run resumed from a checkpoint continues exactly as the
uninterrupted one would (the checkpoint holds the model, the optimizer state and the step).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any, NamedTuple, Sequence, TextIO

import numpy as np

import runetensor as rt
import runetensor.io as rio
import runetensor.nn as nn
from runetensor import optim

__all__ = ["Config", "GPT", "Block", "load_text", "Vocab", "train", "sample", "main", "DATA_PATH"]

#: the training text shipped with the package
DATA_PATH = os.path.join(os.path.dirname(__file__), "data", "sonnets.txt")


class Config(NamedTuple):
    """The model's and the run's sizes (the command line's flags)."""

    block_size: int = 64
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    dropout: float = 0.1
    batch_size: int = 32
    steps: int = 1000
    lr: float = 3e-3
    warmup: int = 50
    weight_decay: float = 0.1
    clip: float = 1.0
    seed: int = 0


class Vocab(NamedTuple):
    """The characters of the text, sorted; a character's index is its token."""

    chars: str

    def encode(self, s: str) -> np.ndarray:
        table = {c: i for i, c in enumerate(self.chars)}
        return np.asarray([table[c] for c in s], dtype=np.int32)

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def load_text(path: str = DATA_PATH) -> tuple[Vocab, np.ndarray, np.ndarray]:
    """The vocabulary and the training and validation token arrays (90% / 10%) of a text file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    vocab = Vocab("".join(sorted(set(text))))
    ids = vocab.encode(text)
    n = int(len(ids) * 0.9)
    return vocab, ids[:n], ids[n:]


class Block(nn.Module):
    """A pre-norm transformer block: ``x + drop(attn(ln1(x)))`` then ``x + drop(mlp(ln2(x)))``."""

    ln1: nn.LayerNorm
    attn: nn.MultiheadAttention
    ln2: nn.LayerNorm
    fc: nn.Linear
    proj: nn.Linear
    drop: nn.Dropout

    def __init__(self, d: int, heads: int, dropout: float, *, key: Any):
        k1, k2, k3 = rt.random.split(key, 3)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, key=k1)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d, key=k2)
        self.proj = nn.Linear(4 * d, d, key=k3)
        self.drop = nn.Dropout(dropout)

    def __call__(self, x: Any, *, key: Any = None) -> Any:
        k1 = k2 = None
        if key is not None:
            k1, k2 = rt.random.split(key)
        h = self.ln1(x)
        x = x + self.drop(self.attn(h, h, h, mask="causal"), key=k1)
        h = self.proj(nn.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x + self.drop(h, key=k2)

    def decode(self, x: Any, cache: nn.KVCache) -> tuple[Any, nn.KVCache]:
        """The block on new positions ``x`` after those in ``cache`` (inference): ``(output, cache)``."""
        h = self.ln1(x)
        a, cache = self.attn(h, h, h, mask="causal", cache=cache)
        x = x + a
        return x + self.proj(nn.gelu(self.fc(self.ln2(x)), approximate="tanh")), cache


class GPT(nn.Module):
    """A character-level decoder-only transformer: ``logits = gpt(tokens)`` for ``(B, T)`` int32 tokens."""

    tok: nn.Embedding
    pos: nn.Embedding
    blocks: tuple
    ln_f: nn.LayerNorm
    head: nn.Linear
    drop: nn.Dropout

    def __init__(self, vocab_size: int, cfg: Config, *, key: Any):
        keys = rt.random.split(key, cfg.layers + 3)
        # GPT-2's small-normal embeddings instead of PyTorch's N(0, 1) default (trains faster)
        tok = nn.Embedding(vocab_size, cfg.d_model, key=keys[0])
        pos = nn.Embedding(cfg.block_size, cfg.d_model, key=keys[1])
        self.tok = tok.replace(weight=tok.weight * 0.02)
        self.pos = pos.replace(weight=pos.weight * 0.02)
        self.blocks = tuple(Block(cfg.d_model, cfg.heads, cfg.dropout, key=keys[3 + i]) for i in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, vocab_size, key=keys[2])
        self.drop = nn.Dropout(cfg.dropout)

    def __call__(self, idx: Any, *, key: Any = None) -> Any:
        T = idx.shape[-1]
        if T > self.pos.num_embeddings:
            raise ValueError(f"GPT: {T} tokens exceed the block size {self.pos.num_embeddings}")
        keys: list = [None] * (len(self.blocks) + 1)
        if key is not None:
            ks = rt.random.split(key, len(self.blocks) + 1)
            keys = [ks[i] for i in range(len(self.blocks) + 1)]
        x = self.tok(idx) + self.pos.weight[:T]
        x = self.drop(x, key=keys[0])
        for blk, k in zip(self.blocks, keys[1:]):
            x = blk(x, key=k)
        return self.head(self.ln_f(x))

    def decode(self, idx: Any, caches: Sequence[nn.KVCache] | None = None) -> tuple[Any, list]:
        """Logits of new tokens ``idx (B, t)`` following the positions in ``caches`` (one KV cache per
        block; None: none yet), and the grown caches.  Equal to ``gpt(all tokens)[:, -t:]``."""
        if caches is None:
            caches = [blk.attn.init_cache(idx.shape[0]) for blk in self.blocks]
        start = caches[0].k.shape[2]
        t = idx.shape[-1]
        if start + t > self.pos.num_embeddings:
            raise ValueError(f"GPT.decode: {start + t} positions exceed the block size {self.pos.num_embeddings}")
        x = self.tok(idx) + self.pos.weight[start:start + t]
        out = []
        for blk, c in zip(self.blocks, caches):
            x, c = blk.decode(x, c)
            out.append(c)
        return self.head(self.ln_f(x)), out


def loss_fn(model: GPT, x: Any, y: Any, key: Any = None) -> Any:
    """The mean next-character cross-entropy (nats) of ``model`` on tokens ``x`` with targets ``y``."""
    return nn.softmax_cross_entropy(model(x, key=key), y)


def make_optimizer(cfg: Config) -> optim.GradientTransformation:
    """Global-norm clipping, then AdamW with a linear warm-up to ``lr`` and a cosine decay to ``lr / 10``."""
    sched = optim.warmup_cosine_decay_schedule(0.0, cfg.lr, cfg.warmup, max(cfg.steps, cfg.warmup + 1),
                                               cfg.lr / 10)
    return optim.chain(optim.clip_by_global_norm(cfg.clip),
                       optim.adamw(sched, b1=0.9, b2=0.99, weight_decay=cfg.weight_decay))


def batch(data: np.ndarray, cfg: Config, step: int, stream: int = 0) -> tuple[Any, Any]:
    """The ``(inputs, targets)`` of ``step``: ``batch_size`` random windows, a function of ``(seed, stream, step)``."""
    rng = np.random.default_rng((cfg.seed, stream, step))
    starts = rng.integers(0, len(data) - cfg.block_size - 1, size=cfg.batch_size)
    win = data[starts[:, None] + np.arange(cfg.block_size + 1)]
    return rt.asarray(np.ascontiguousarray(win[:, :-1])), rt.asarray(np.ascontiguousarray(win[:, 1:]))


def make_step(opt: optim.GradientTransformation) -> Any:
    """The jitted step ``(model, opt_state, x, y, key) -> (model, opt_state, loss)``; model and state donated."""

    def step(model: GPT, state: Any, x: Any, y: Any, key: Any) -> tuple[GPT, Any, Any]:
        loss, grads = rt.value_and_grad(loss_fn)(model, x, y, key)
        updates, state = opt.update(grads, state, model)
        return optim.apply_updates(model, updates), state, loss

    return rt.jit(step, donate_argnums=(0, 1))


def evaluate(eval_fn: Any, model: GPT, data: np.ndarray, cfg: Config, batches: int) -> float:
    """The mean loss over ``batches`` fixed validation batches (no dropout)."""
    total = 0.0
    for i in range(batches):
        x, y = batch(data, cfg, i, stream=1)
        total += float(eval_fn(model, x, y))
    return total / batches


def sample(model: GPT, vocab: Vocab, prompt: str, length: int, *, key: Any, temperature: float = 0.8) -> str:
    """``prompt`` followed by ``length`` characters drawn from the model.

    Decoding uses the attention layers' KV caches: one new position per character.  When the
    context reaches the block size, the caches restart from the last half block of characters."""
    ids = list(vocab.encode(prompt)) if prompt else [0]
    T = model.pos.num_embeddings
    out = []
    caches = None
    fresh = ids[-T:]
    for i in range(length):
        if caches is not None and caches[0].k.shape[2] >= T:
            caches, fresh = None, ids[-(T // 2):]
        logits, caches = model.decode(rt.asarray(np.asarray(fresh, dtype=np.int32)[None]), caches)
        nxt = int(rt.random.categorical(rt.random.fold_in(key, i), logits[0, -1] / temperature))
        ids.append(nxt)
        out.append(nxt)
        fresh = [nxt]
    return prompt + vocab.decode(out)


def _config_tree(cfg: Config) -> dict:
    return {k: v for k, v in cfg._asdict().items() if k != "steps"}


class TrainResult(NamedTuple):
    """What :func:`train` returns: the model, the optimizer state, the last step, the losses logged."""

    model: GPT
    opt_state: Any
    step: int
    train_losses: list
    val_loss: float
    vocab: Vocab
    seconds: float


def train(cfg: Config, *, data_path: str = DATA_PATH, checkpoint: str | None = None, checkpoint_every: int = 0,
          resume: bool = False, eval_every: int = 250, eval_batches: int = 8, progress: TextIO | None = sys.stdout,
          log_every: int = 50) -> TrainResult:
    """Train a :class:`GPT` as the command line does.

    Args:
        cfg: sizes and hyperparameters.
        data_path: the text.
        checkpoint: where checkpoints go (and, with ``resume``, where the run continues from).
        checkpoint_every: save every this many steps (0: only at the end, when ``checkpoint`` is set).
        resume: continue from ``checkpoint`` (its configuration must be ``cfg``'s, ``steps`` aside).
        eval_every: validation loss every this many steps (and at the end).
        eval_batches: validation batches per evaluation.
        progress: where progress goes (redrawn in place on a terminal, one line per ``log_every`` steps
            otherwise); None for none.
        log_every: steps between progress lines when ``progress`` is not a terminal.
    Returns:
        A :class:`TrainResult`.
    Raises:
        ValueError: a checkpoint of another configuration, or ``resume`` without a checkpoint file.
    """
    vocab, train_ids, val_ids = load_text(data_path)
    model = GPT(len(vocab.chars), cfg, key=rt.random.key(cfg.seed))
    opt = make_optimizer(cfg)
    state = opt.init(model)
    start = 0
    if resume:
        if not checkpoint or not os.path.exists(checkpoint):
            raise ValueError(f"gpt: --resume needs an existing --checkpoint file, got {checkpoint!r}")
        like = {"model": model, "opt": state, "step": 0, "config": _config_tree(cfg), "vocab": vocab.chars}
        try:
            ck = rio.load_checkpoint(checkpoint, like=like)
        except ValueError as e:
            raise ValueError(f"gpt: cannot resume from {checkpoint!r} with these flags: {e}") from None
        if ck["config"] != _config_tree(cfg) or ck["vocab"] != vocab.chars:
            diff = {k: v for k, v in ck["config"].items() if _config_tree(cfg)[k] != v}
            raise ValueError(f"gpt: {checkpoint!r} was trained with {diff or 'another text'}; pass the same flags "
                             "to resume")
        model, state, start = ck["model"], ck["opt"], ck["step"]
    step_fn = make_step(opt)
    eval_fn = rt.jit(loss_fn)
    drop_key = rt.random.key(cfg.seed + 1)
    tty = progress is not None and hasattr(progress, "isatty") and progress.isatty()
    losses: list = []
    t0 = time.perf_counter()
    val = math.nan

    def save(step: int) -> None:
        rio.save_checkpoint(checkpoint, {"model": model, "opt": state, "step": step, "config": _config_tree(cfg),
                                         "vocab": vocab.chars})

    if start < cfg.steps:
        # one call on copies first: a jitted function's first call (the trace) may round differently
        # from its compiled program, and every step of a run, resumed or not, should be the program's
        x, y = batch(train_ids, cfg, start)
        step_fn(*rt.tree_map(rt.copy, (model, state)), x, y, rt.random.fold_in(drop_key, start))
    for step in range(start, cfg.steps):
        x, y = batch(train_ids, cfg, step)
        model, state, loss = step_fn(model, state, x, y, rt.random.fold_in(drop_key, step))
        done = step + 1
        last = done == cfg.steps
        if progress is not None and (tty or done % log_every == 0 or last or done == start + 1):
            lv = float(loss)
            losses.append((done, lv))
            rate = (done - start) / (time.perf_counter() - t0)
            line = f"step {done}/{cfg.steps}  loss {lv:.3f}  {rate:.1f} steps/s"
            if tty:
                progress.write("\r" + line + " " * 8)
            else:
                progress.write(line + "\n")
            progress.flush()
        if checkpoint and checkpoint_every and done % checkpoint_every == 0 and not last:
            save(done)
        if (eval_every and done % eval_every == 0) or last:
            val = evaluate(eval_fn, model, val_ids, cfg, eval_batches)
            if progress is not None:
                progress.write(("\r" if tty else "") + f"step {done}/{cfg.steps}  validation loss {val:.3f}"
                               + (" " * 20 if tty else "") + "\n")
    if checkpoint and cfg.steps > start:
        save(cfg.steps)
    if math.isnan(val):
        val = evaluate(eval_fn, model, val_ids, cfg, eval_batches)
    return TrainResult(model, state, max(start, cfg.steps), losses, val, vocab, time.perf_counter() - t0)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``--help`` lists the flags).

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    Returns:
        The exit status, 0.
    """
    d = Config()
    ap = argparse.ArgumentParser(prog="python -m runetensor.examples.gpt", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=d.steps, help="training steps")
    ap.add_argument("--batch-size", type=int, default=d.batch_size)
    ap.add_argument("--block-size", type=int, default=d.block_size, help="context length (characters)")
    ap.add_argument("--d-model", type=int, default=d.d_model, help="embedding width")
    ap.add_argument("--layers", type=int, default=d.layers, help="transformer blocks")
    ap.add_argument("--heads", type=int, default=d.heads, help="attention heads")
    ap.add_argument("--dropout", type=float, default=d.dropout)
    ap.add_argument("--lr", type=float, default=d.lr, help="peak learning rate")
    ap.add_argument("--warmup", type=int, default=d.warmup, help="warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=d.weight_decay)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--eval-every", type=int, default=250, help="steps between validation losses")
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--checkpoint", metavar="PATH", help="checkpoint file (safetensors)")
    ap.add_argument("--checkpoint-every", type=int, default=0, metavar="N", help="save every N steps")
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    ap.add_argument("--sample-length", type=int, default=300, help="characters to sample at the end")
    ap.add_argument("--prompt", default="Shall I compare thee")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--data", default=DATA_PATH, help="a UTF-8 text file to train on")
    ap.add_argument("--quiet", action="store_true", help="no progress")
    args = ap.parse_args(argv)
    for name in ("steps", "batch_size", "block_size", "d_model", "layers", "heads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.d_model % args.heads:
        ap.error("--d-model must be a multiple of --heads")
    if args.resume and not args.checkpoint:
        ap.error("--resume needs --checkpoint PATH")
    cfg = Config(block_size=args.block_size, d_model=args.d_model, layers=args.layers, heads=args.heads,
                 dropout=args.dropout, batch_size=args.batch_size, steps=args.steps, lr=args.lr, warmup=args.warmup,
                 weight_decay=args.weight_decay, seed=args.seed)
    print(f"training a GPT ({cfg.layers} layers, d_model {cfg.d_model}, {cfg.heads} heads, context "
          f"{cfg.block_size}) for {cfg.steps} steps on {os.path.basename(args.data)}", flush=True)
    r = train(cfg, data_path=args.data, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
              resume=args.resume, eval_every=args.eval_every, eval_batches=args.eval_batches,
              progress=None if args.quiet else sys.stdout)
    n_params = sum(t.size for t in rt.tree_leaves(r.model))
    print(f"{n_params:,} parameters, {r.seconds:.1f} s, validation loss {r.val_loss:.3f} nats/char")
    if args.checkpoint:
        print(f"checkpoint: {args.checkpoint} (step {r.step})")
    if args.sample_length > 0:
        prompt = "".join(c for c in args.prompt if c in r.vocab.chars)
        text = sample(r.model, r.vocab, prompt, args.sample_length, key=rt.random.key(args.seed + 2),
                      temperature=args.temperature)
        print("--- sample ---")
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
