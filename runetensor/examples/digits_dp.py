"""Train the digits CNN data-parallel with ``rt.pmap`` on a Dask cluster.

Run it::

    python -m runetensor.examples.digits_dp                       # a LocalCluster of 2 worker processes
    python -m runetensor.examples.digits_dp --workers 4 --shards 8
    python -m runetensor.examples.digits_dp --workers 0           # no cluster: pmap as a vmap
    python -m runetensor.examples.digits_dp --scheduler tcp://10.0.0.5:8786   # an existing cluster

The training is :func:`runetensor.examples.digits.train`'s (same data, split, initialisation,
batch order, Adam with the cosine schedule), with every batch of ``--batch-size`` images cut
into ``--shards`` shards.  Each shard computes the gradient of its share of the batch's loss
(``sum of its examples' losses / examples in the batch``), ``rt.psum`` adds the shards' gradients
in shard order, and every shard applies the same update.  The last batch of an epoch is padded
to the full size with examples of weight 0, so the shapes never change (one compiled program)
and the update is the single-process one up to rounding: the test accuracy is the same as
``python -m runetensor.examples.digits`` reports.  The parameters after any number of steps are
bit-identical whatever ``--workers`` is (see ``docs/distributed.md``).
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, NamedTuple, Sequence

import runetensor as rt
from runetensor import nn, optim
from runetensor.examples.digits import MODELS, N_TEST, Data, accuracy, load_data

__all__ = ["DPResult", "make_step", "train_dp", "main"]


class DPResult(NamedTuple):
    """What :func:`train_dp` returns."""

    params: dict[str, rt.Tensor]
    losses: list[float]            # the training loss of every step (the whole batch's), in order
    test_accuracy: float
    seconds: float                 # wall time of the training loop


def make_step(model: str, opt: Any) -> Any:
    """The per-shard training step ``step(params, state, x, y, w, count) -> (params, state, loss)``.

    ``x``, ``y``, ``w``: the shard's images, labels and example weights (1 real, 0 padding);
    ``count``: the number of real examples in the whole batch (a 0-d float32 tensor, the same
    for every shard).  Collectives: one ``rt.psum`` of the gradients and the loss together.

    Args:
        model: ``"cnn"`` or ``"mlp"``.
        opt: an optimizer of ``rt.optim``.
    Returns:
        The step function, to be mapped by ``rt.pmap(step, "batch", in_axes=(None, None, 0, 0, 0, None),
        out_axes=None)``.
    """
    apply = MODELS[model][1]

    def shard_loss(p: dict, x: rt.Tensor, y: rt.Tensor, w: rt.Tensor, count: rt.Tensor) -> rt.Tensor:
        per = nn.softmax_cross_entropy(apply(p, x), y, reduction="none")
        return rt.sum(per * w) / count

    def step(p: dict, state: Any, x: rt.Tensor, y: rt.Tensor, w: rt.Tensor, count: rt.Tensor) -> tuple:
        loss, g = rt.value_and_grad(shard_loss)(p, x, y, w, count)
        g, loss = rt.psum((g, loss), "batch")      # the whole batch's gradient and loss, in shard order
        updates, state = opt.update(g, state, p)
        return optim.apply_updates(p, updates), state, loss
    return step


def train_dp(model: str = "cnn", *, client: Any = None, shards: int = 8, epochs: int | None = None,
             batch_size: int = 64, lr: float | None = None, seed: int = 0, train_size: int | None = None,
             data: Data | None = None, progress: Any = sys.stderr) -> DPResult:
    """Train a digits model data-parallel over ``shards`` shards and report its test accuracy.

    Args:
        model: ``"cnn"`` or ``"mlp"``.
        client: a ``distributed.Client`` (``None``: no cluster, the shards are a ``vmap``).
        shards: shards per batch; ``batch_size`` must be a multiple of it.
        epochs, batch_size, lr, seed, train_size, data: as :func:`runetensor.examples.digits.train`.
        progress: where one line per epoch goes (default stderr); ``None`` for none.
    Returns:
        A :class:`DPResult`.
    Raises:
        ValueError: for an unknown model, non-positive sizes, or a batch size that is not a
            multiple of ``shards``.
    """
    if model not in MODELS:
        raise ValueError(f"train_dp: unknown model {model!r}, expected one of {sorted(MODELS)}")
    if shards < 1 or batch_size < 1 or batch_size % shards:
        raise ValueError(f"train_dp: batch_size ({batch_size}) must be a positive multiple of shards ({shards})")
    init, apply, default_epochs, default_lr = MODELS[model]
    epochs = default_epochs if epochs is None else epochs
    lr = default_lr if lr is None else lr
    if epochs < 1:
        raise ValueError(f"train_dp: epochs must be >= 1, got {epochs}")
    data = load_data() if data is None else data
    x_train, y_train = data.x_train, data.y_train
    if train_size is not None:
        x_train, y_train = x_train[:train_size], y_train[:train_size]
    n = x_train.shape[0]
    steps = -(-n // batch_size)

    k_init, k_shuffle = rt.random.split(rt.random.key(seed), 2)
    params = init(k_init)
    opt = optim.adam(optim.cosine_decay_schedule(lr, epochs * steps))
    state = opt.init(params)
    pstep = rt.pmap(make_step(model, opt), "batch", in_axes=(None, None, 0, 0, 0, None), out_axes=None,
                    client=client)
    per = batch_size // shards
    losses: list[float] = []
    start = time.perf_counter()
    for epoch in range(epochs):
        order = rt.random.permutation(rt.random.fold_in(k_shuffle, epoch), n)
        for step in range(steps):
            idx = order[step * batch_size:(step + 1) * batch_size]
            m = idx.shape[0]
            w = rt.ones(rt.float32, [m])
            if m < batch_size:   # pad with weight-0 copies of the first example: fixed shapes
                pad = rt.zeros(rt.int64, [batch_size - m]) + idx[0]
                idx = rt.concatenate([idx, rt.cast(pad, idx.dtype)])
                w = rt.concatenate([w, rt.zeros(rt.float32, [batch_size - m])])
            xb = rt.reshape(x_train[idx], [shards, per, *x_train.shape[1:]])
            yb = rt.reshape(y_train[idx], [shards, per])
            params, state, loss = pstep(params, state, xb, yb, rt.reshape(w, [shards, per]),
                                        rt.scalar(rt.float32, float(m)))
            losses.append(float(loss))
        if progress is not None:
            progress.write(f"epoch {epoch + 1}/{epochs}  loss {losses[-1]:.4f}  "
                           f"{time.perf_counter() - start:.1f}s\n")
            progress.flush()
    seconds = time.perf_counter() - start
    return DPResult(params, losses, accuracy(params, apply, data.x_test, data.y_test), seconds)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: start (or join) a cluster, train, print the test accuracy.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    Returns:
        The exit status, 0.
    """
    p = argparse.ArgumentParser(prog="python -m runetensor.examples.digits_dp",
                                description="Train the digits CNN data-parallel with rt.pmap on a Dask cluster.")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes, one thread each "
                   "(default 2; 0: no cluster)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="use an existing cluster (tcp://host:8786) instead")
    p.add_argument("--shards", type=int, default=8, help="shards per batch (default 8)")
    p.add_argument("--model", choices=sorted(MODELS), default="cnn", help="the model (default cnn)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    p.add_argument("--epochs", type=int, default=None, help="passes over the training set (default: the model's)")
    p.add_argument("--batch-size", type=int, default=64, help="images per step, all shards (default 64)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the model's)")
    p.add_argument("--train-size", type=int, default=None, help="use only the first N training images")
    p.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    args = p.parse_args(argv)
    if args.workers < 0:
        p.error(f"--workers must be >= 0, got {args.workers}")

    cluster = client = None
    if args.scheduler or args.workers:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        from distributed import Client, LocalCluster
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
    try:
        where = (f"the cluster at {args.scheduler}" if args.scheduler else
                 f"a LocalCluster of {args.workers} workers" if args.workers else "one process (no cluster)")
        print(f"training the {args.model} data-parallel in {args.shards} shards on {where}")
        res = train_dp(args.model, client=client, shards=args.shards, epochs=args.epochs,
                       batch_size=args.batch_size, lr=args.lr, seed=args.seed, train_size=args.train_size,
                       progress=None if args.quiet else sys.stderr)
        print(f"test accuracy {100 * res.test_accuracy:.2f}% ({round(res.test_accuracy * N_TEST)}/{N_TEST}), "
              f"final training loss {res.losses[-1]:.4f}, trained in {res.seconds:.1f}s")
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
