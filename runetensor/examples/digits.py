"""Train a small CNN (or an MLP) on scikit-learn's 8x8 handwritten digits, end to end.

Run it::

    python -m runetensor.examples.digits                 # CNN, seed 0
    python -m runetensor.examples.digits --model mlp     # the MLP (or: -m runetensor.examples.digits_mlp)
    python -m runetensor.examples.digits --save digits.safetensors
    python -m runetensor.examples.digits --load digits.safetensors   # evaluate saved parameters
    python -m runetensor.examples.digits --plot curves.png           # loss/accuracy curves (matplotlib)

The data are the 1797 8x8 grey-level images bundled with scikit-learn
(``sklearn.datasets.load_digits``: nothing is downloaded), scaled to ``[0, 1]``
and split once into 1437 training and 360 test images (a permutation under a
fixed key, the same for every ``--seed``).  The model is a pure function of a
dict of parameters; training is ``rt.value_and_grad`` of the mean softmax
cross-entropy, ``rt.optim.adam`` with a cosine-decayed learning rate, and
minibatches from ``rt.datasets.batches`` shuffled by one fresh key per epoch
(``rt.random.fold_in``); progress goes through ``rt.progress`` and the test accuracy
through ``rt.metrics.accuracy``.  For a fixed ``--seed`` the run is reproducible:
initialisation and batch order depend only on the seed, and every operation is
deterministic.

Models (PyTorch's NCHW layout, see ``docs/examples.md``):

* ``cnn``: conv 3x3 1->16 (padding 1), relu, max-pool 2 -> (16, 4, 4), conv 3x3
  16->32 (padding 1), relu, flatten (512), dense 512->10.  12,810 parameters.
* ``mlp``: dense 64->128, relu, dense 128->10.  9,610 parameters.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, NamedTuple, Sequence, TextIO

import runetensor as rt
from runetensor import nn, optim
import runetensor.io as rio

__all__ = ["MODELS", "Data", "TrainResult", "load_data", "init_cnn", "cnn", "init_mlp", "mlp",
           "loss_fn", "accuracy", "train", "save_params", "load_params", "plot_history", "main"]

#: the key of the fixed train/test split (independent of the training seed)
SPLIT_SEED = 0
#: the number of test images (20% of 1797, rounded)
N_TEST = 360


class Data(NamedTuple):
    """The digits as runetensor tensors: images ``(N, 1, 8, 8)`` float32 in ``[0, 1]``, labels int32."""

    x_train: rt.Tensor
    y_train: rt.Tensor
    x_test: rt.Tensor
    y_test: rt.Tensor


def load_data() -> Data:
    """Load scikit-learn's 8x8 digits and split them into 1437 training and 360 test images.

    Returns:
        A :class:`Data` of float32 images ``(N, 1, 8, 8)`` scaled to ``[0, 1]`` and int32 labels.
        The split is a permutation under ``rt.random.key(SPLIT_SEED)``: the same on every run.
    Raises:
        ModuleNotFoundError: if scikit-learn is not installed (``pip install 'runetensor[examples]'``).
    """
    try:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        from sklearn.datasets import load_digits
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("the digits examples need scikit-learn for the data set: "
                                  "pip install 'runetensor[examples]' (or pip install scikit-learn)",
                                  name=e.name) from e
    digits = load_digits()
    images = rt.asarray(digits.images)                      # (1797, 8, 8) float64, values 0..16
    x = rt.reshape(rt.cast(images / 16.0, rt.float32), [-1, 1, 8, 8])
    y = rt.cast(rt.asarray(digits.target), rt.int32)
    order = rt.random.permutation(rt.random.key(SPLIT_SEED), x.shape[0])
    test, train_ = order[:N_TEST], order[N_TEST:]
    return Data(x[train_], y[train_], x[test], y[test])


# ---------------------------------------------------------------------------
# models: pure functions of a dict of parameters
# ---------------------------------------------------------------------------
def init_cnn(key: rt.Tensor) -> dict[str, rt.Tensor]:
    """Initial parameters of the CNN (He-uniform convolutions, Glorot-uniform dense layer, zero biases).

    Args:
        key: a key of ``rt.random``.
    Returns:
        A dict name -> float32 tensor: ``conv1_w (16, 1, 3, 3)``, ``conv1_b (16,)``,
        ``conv2_w (32, 16, 3, 3)``, ``conv2_b (32,)``, ``dense_w (10, 512)``, ``dense_b (10,)``.
    """
    k1, k2, k3 = rt.random.split(key, 3)
    return {"conv1_w": nn.he_uniform(k1, (16, 1, 3, 3)), "conv1_b": rt.zeros(rt.float32, [16]),
            "conv2_w": nn.he_uniform(k2, (32, 16, 3, 3)), "conv2_b": rt.zeros(rt.float32, [32]),
            "dense_w": nn.glorot_uniform(k3, (10, 32 * 4 * 4)), "dense_b": rt.zeros(rt.float32, [10])}


def cnn(params: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    """The CNN's logits: conv, relu, max-pool, conv, relu, flatten, dense.

    Args:
        params: the dict of :func:`init_cnn`.
        x: images ``(N, 1, 8, 8)``.
    Returns:
        Logits ``(N, 10)``.
    """
    h = nn.relu(nn.conv2d(x, params["conv1_w"], params["conv1_b"], padding=1))   # (N, 16, 8, 8)
    h = nn.max_pool2d(h, 2)                                                        # (N, 16, 4, 4)
    h = nn.relu(nn.conv2d(h, params["conv2_w"], params["conv2_b"], padding=1))   # (N, 32, 4, 4)
    h = rt.reshape(h, [h.shape[0], -1])                                            # (N, 512)
    return nn.linear(h, params["dense_w"], params["dense_b"])


def init_mlp(key: rt.Tensor) -> dict[str, rt.Tensor]:
    """Initial parameters of the MLP (He-uniform hidden layer, Glorot-uniform output, zero biases).

    Args:
        key: a key of ``rt.random``.
    Returns:
        A dict name -> float32 tensor: ``hidden_w (128, 64)``, ``hidden_b (128,)``,
        ``out_w (10, 128)``, ``out_b (10,)``.
    """
    k1, k2 = rt.random.split(key, 2)
    return {"hidden_w": nn.he_uniform(k1, (128, 64)), "hidden_b": rt.zeros(rt.float32, [128]),
            "out_w": nn.glorot_uniform(k2, (10, 128)), "out_b": rt.zeros(rt.float32, [10])}


def mlp(params: dict[str, rt.Tensor], x: rt.Tensor) -> rt.Tensor:
    """The MLP's logits: flatten, dense, relu, dense.

    Args:
        params: the dict of :func:`init_mlp`.
        x: images ``(N, 1, 8, 8)`` (or already flat, ``(N, 64)``).
    Returns:
        Logits ``(N, 10)``.
    """
    h = rt.reshape(x, [x.shape[0], -1])
    h = nn.relu(nn.linear(h, params["hidden_w"], params["hidden_b"]))
    return nn.linear(h, params["out_w"], params["out_b"])


#: model name -> (initialiser, apply function, default epochs, default peak learning rate)
MODELS: dict[str, tuple[Callable[..., Any], Callable[..., Any], int, float]] = {
    "cnn": (init_cnn, cnn, 15, 5e-3),
    "mlp": (init_mlp, mlp, 50, 3e-3),
}


def loss_fn(params: dict[str, rt.Tensor], apply: Callable[..., rt.Tensor], x: rt.Tensor,
            y: rt.Tensor) -> rt.Tensor:
    """The mean softmax cross-entropy of a model on a batch.

    Args:
        params: the model's parameters.
        apply: the model (:func:`cnn` or :func:`mlp`).
        x: images ``(N, 1, 8, 8)``.
        y: int32 labels ``(N,)``.
    Returns:
        A 0-d float32 tensor.
    """
    return nn.softmax_cross_entropy(apply(params, x), y)


def accuracy(params: dict[str, rt.Tensor], apply: Callable[..., rt.Tensor], x: rt.Tensor,
             y: rt.Tensor) -> float:
    """The fraction of images whose largest logit is the label.

    Args:
        params: the model's parameters.
        apply: the model (:func:`cnn` or :func:`mlp`).
        x: images ``(N, 1, 8, 8)``.
        y: int32 labels ``(N,)``.
    Returns:
        A Python float in ``[0, 1]``.
    """
    return float(rt.metrics.accuracy(y, apply(params, x)))     # the logits' argmax against the labels


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------
class TrainResult(NamedTuple):
    """What :func:`train` returns."""

    params: dict[str, rt.Tensor]
    losses: list[float]            # the training loss of every step, in order
    test_accuracy: float
    seconds: float                 # wall time of the training loop (data loading excluded)
    #: per epoch: "loss" (mean training loss), "train_accuracy" (on the epoch's batches, before
    #: each step), "test_accuracy" (after the epoch)
    history: dict[str, list[float]]


def train(model: str = "cnn", *, epochs: int | None = None, batch_size: int = 64, lr: float | None = None,
          seed: int = 0, train_size: int | None = None, data: Data | None = None,
          progress: TextIO | None = sys.stderr) -> TrainResult:
    """Train a model on the digits with Adam and report its test accuracy.

    Args:
        model: ``"cnn"`` or ``"mlp"``.
        epochs: passes over the training images (default: the model's, see :data:`MODELS`).
        batch_size: images per step (the last batch of an epoch may be smaller).
        lr: the peak learning rate, cosine-decayed to 0 over the run (default: the model's).
        seed: the training seed: initialisation and batch order depend on it alone.
        train_size: train on the first ``train_size`` training images only (default: all 1437).
        data: the data set (default: :func:`load_data`).
        progress: where the progress line goes (default stderr; ``rt.progress``: redrawn on a
            terminal, a plain line per epoch in a file or pipe); ``None`` for none.
    Returns:
        A :class:`TrainResult`.
    Raises:
        ValueError: for an unknown model or non-positive sizes.
    """
    if model not in MODELS:
        raise ValueError(f"train: unknown model {model!r}, expected one of {sorted(MODELS)}")
    init, apply, default_epochs, default_lr = MODELS[model]
    epochs = default_epochs if epochs is None else epochs
    lr = default_lr if lr is None else lr
    if epochs < 1 or batch_size < 1 or (train_size is not None and train_size < 1):
        raise ValueError(f"train: epochs, batch_size and train_size must be >= 1, "
                         f"got {epochs}, {batch_size}, {train_size}")
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

    def loss_and_logits(p: dict[str, rt.Tensor], x: rt.Tensor, y: rt.Tensor) -> tuple[rt.Tensor, rt.Tensor]:
        logits = apply(p, x)
        return nn.softmax_cross_entropy(logits, y), logits
    value_and_grad = rt.value_and_grad(loss_and_logits, has_aux=True)   # the logits come back as aux

    losses: list[float] = []
    history: dict[str, list[float]] = {"loss": [], "train_accuracy": [], "test_accuracy": []}
    start = time.perf_counter()
    for epoch in range(epochs):
        # the epoch's batches: rt.random.permutation(fold_in(k_shuffle, epoch), n), cut in order
        batches = rt.datasets.batches((x_train, y_train), batch_size, key=rt.random.fold_in(k_shuffle, epoch))
        seen = correct = 0
        bar = rt.progress.Progress(total=steps, desc=f"epoch {epoch + 1:>{len(str(epochs))}}/{epochs}",
                                   file=progress, disable=progress is None)
        for xb, yb in batches:
            (loss, logits), grads = value_and_grad(params, xb, yb)
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
            losses.append(float(loss))
            # the batch's accuracy before the step, from the aux logits
            seen += xb.shape[0]
            correct += int(rt.sum(rt.equal(rt.cast(rt.argmax(logits, axis=-1), rt.int32), yb)))
            bar.update(1, loss=f"{losses[-1]:.4f}", train_acc=f"{100 * correct / seen:5.1f}%")
        bar.close()
        history["loss"].append(sum(losses[-steps:]) / steps)
        history["train_accuracy"].append(correct / seen)
        history["test_accuracy"].append(accuracy(params, apply, data.x_test, data.y_test))
    seconds = time.perf_counter() - start
    return TrainResult(params, losses, history["test_accuracy"][-1], seconds, history)


# ---------------------------------------------------------------------------
# saving and loading (safetensors)
# ---------------------------------------------------------------------------
def save_params(path: str, params: dict[str, rt.Tensor], model: str, **metadata: Any) -> None:
    """Save a model's parameters to a safetensors file (``runetensor.io``).

    Args:
        path: the file to write (replaced atomically).
        params: the parameters, a dict name -> tensor.
        model: the model's name, stored in the file's metadata so :func:`load_params` knows it.
        **metadata: more metadata (values are stored as strings).
    Raises:
        ValueError: for an unknown model.
    """
    if model not in MODELS:
        raise ValueError(f"save_params: unknown model {model!r}, expected one of {sorted(MODELS)}")
    meta = {"model": model, **{k: str(v) for k, v in metadata.items()}}
    rio.save_safetensors(path, params, metadata=meta)


def load_params(path: str) -> tuple[dict[str, rt.Tensor], str, dict[str, str]]:
    """Load parameters saved by :func:`save_params`.

    Args:
        path: the safetensors file.
    Returns:
        ``(params, model, metadata)``.
    Raises:
        ValueError: if the file is not a valid safetensors file, names no known model, or its
            tensors are not the model's (names or shapes).
        OSError: if the file cannot be read.
    """
    params, meta = rio.load_safetensors(path, return_metadata=True)
    model = meta.get("model")
    if model not in MODELS:
        raise ValueError(f"load_params: {path} names no known model (metadata model={model!r})")
    expected = MODELS[model][0](rt.random.key(0))
    got = {k: tuple(v.shape) for k, v in params.items()}
    want = {k: tuple(v.shape) for k, v in expected.items()}
    if got != want:
        raise ValueError(f"load_params: {path} holds {got}, the {model} model needs {want}")
    return dict(params), model, dict(meta)


# ---------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------
def plot_history(history: dict[str, list[float]], path: str, title: str = "") -> None:
    """Write the loss and accuracy curves of a training history to an image file (matplotlib).

    Args:
        history: per-epoch lists, as :class:`TrainResult`'s ``history`` (``"loss"`` and any
            ``"*accuracy"`` keys).
        path: the image file (its extension picks the format: ``.png``, ``.pdf``, ``.svg``...).
        title: the figure's title.
    Raises:
        ModuleNotFoundError: if matplotlib is not installed (``pip install 'runetensor[plot]'``).
    """
    try:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        import matplotlib
    except ModuleNotFoundError:
        raise ModuleNotFoundError("plot_history: --plot needs matplotlib, an optional extra: "
                                  "pip install 'runetensor[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")   # files only: no window, no display needed
    # deferred: optional dependency, loaded on first use (and a heavy import)
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    epochs = range(1, len(history["loss"]) + 1)
    ax_loss.plot(epochs, history["loss"], marker="o", label="training loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("mean cross-entropy")
    ax_loss.legend()
    for key, values in history.items():
        if key.endswith("accuracy"):
            ax_acc.plot(epochs, [100 * v for v in values], marker="o", label=key.replace("_", " "))
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None, default_model: str = "cnn") -> int:
    """The command line: train (or ``--load``) a model and print its test accuracy.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        default_model: the ``--model`` default (``digits_mlp`` passes ``"mlp"``).
    Returns:
        The exit status, 0.
    """
    p = argparse.ArgumentParser(
        prog=f"python -m runetensor.examples.{'digits' if default_model == 'cnn' else 'digits_mlp'}",
        description="Train a small CNN (or MLP) on scikit-learn's 8x8 digits with runetensor.")
    p.add_argument("--model", choices=sorted(MODELS), default=default_model,
                   help=f"the model (default {default_model})")
    p.add_argument("--seed", type=int, default=0, help="training seed: initialisation and batch order (default 0)")
    p.add_argument("--epochs", type=int, default=None, help="passes over the training set "
                   f"(default: cnn {MODELS['cnn'][2]}, mlp {MODELS['mlp'][2]})")
    p.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate, cosine-decayed "
                   f"(default: cnn {MODELS['cnn'][3]:g}, mlp {MODELS['mlp'][3]:g})")
    p.add_argument("--train-size", type=int, default=None, help="use only the first N training images")
    p.add_argument("--save", metavar="PATH", help="save the trained parameters (safetensors)")
    p.add_argument("--load", metavar="PATH", help="evaluate saved parameters instead of training")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--plot", metavar="FILE", help="write the loss and accuracy curves to FILE (.png, .pdf, .svg; "
                   "needs matplotlib: pip install 'runetensor[plot]')")
    args = p.parse_args(argv)
    if args.plot and not args.load:
        try:
            import matplotlib  # noqa: F401  (checked before training, not after)
        except ModuleNotFoundError:
            p.error("--plot needs matplotlib, an optional extra: pip install 'runetensor[plot]'")

    data = load_data()
    if args.load:
        params, model, meta = load_params(args.load)
        acc = accuracy(params, MODELS[model][1], data.x_test, data.y_test)
        print(f"{model} from {args.load} (seed {meta.get('seed', '?')}): "
              f"test accuracy {100 * acc:.2f}% ({round(acc * N_TEST)}/{N_TEST})")
        return 0
    print(f"training the {args.model} on {data.x_train.shape[0] if args.train_size is None else args.train_size} "
          f"digits (seed {args.seed}), testing on {N_TEST}")
    res = train(args.model, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                train_size=args.train_size, data=data, progress=None if args.quiet else sys.stderr)
    print(f"test accuracy {100 * res.test_accuracy:.2f}% ({round(res.test_accuracy * N_TEST)}/{N_TEST}), "
          f"final training loss {res.losses[-1]:.4f}, trained in {res.seconds:.1f}s")
    if args.save:
        save_params(args.save, res.params, args.model, seed=args.seed,
                    test_accuracy=f"{res.test_accuracy:.6f}")
        print(f"saved the parameters to {args.save}")
    if args.plot:
        plot_history(res.history, args.plot, title=f"{args.model} on the digits (seed {args.seed})")
        print(f"wrote the training curves to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
