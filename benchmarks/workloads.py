"""The workloads: each builds the same computation on the same data for every library.

Per-operation workloads loop ``per`` times inside one timed call and the table
reports the time per operation.  Results are computed, never checked here
(``tests/test_fast_paths.py`` checks that runetensor's fast paths agree with
its plain paths); the callables return their result so nothing is optimised
away.
"""
from __future__ import annotations

from typing import Any, Callable

from .harness import Context, Workload

WORKLOADS: dict[str, Workload] = {}


def workload(name: str, description: str, per: int = 1, target: float | None = None,
             target_kind: str = "ratio") -> Callable:
    def deco(setup: Callable[[Context], dict[str, Callable[[], Any]]]):
        WORKLOADS[name] = Workload(name, description, setup, per, target, target_kind)
        return setup
    return deco


def loaded(base: str, target: float = 1.0) -> None:
    """Workload ``base + "_loaded"``: ``base`` measured while a CPU-bound process per core competes
    for the cores; its target compares runetensor's slowdown with PyTorch's."""
    w = WORKLOADS[base]
    WORKLOADS[base + "_loaded"] = Workload(
        base + "_loaded", f"{base} with a CPU-bound competitor process on every core; slowdown = this row's "
        f"time over {base}'s, per library", w.setup, w.per, target, "slowdown_vs_torch", loaded=True, baseline=base)


def _jax(ctx: Context, fn):
    """A JAX callable that waits for the (asynchronous) result."""
    def run():
        r = fn()
        for x in (r if isinstance(r, (tuple, list)) else (r,)):
            x.block_until_ready()
        return r
    return run


def _f32(ctx: Context, *shape: int):
    return ctx.rng.standard_normal(shape, dtype=ctx.np.float32)


def _all(ctx: Context, arrays, np_fn, rt_fn, torch_fn=None, jax_fn=None) -> dict[str, Callable[[], Any]]:
    """Wrap NumPy ``arrays`` for each library and close the per-library functions over them."""
    rt = ctx.rt
    impls: dict[str, Callable[[], Any]] = {}
    na = list(arrays)
    impls["numpy"] = lambda: np_fn(*na)
    ra = [rt.asarray(a) for a in arrays]
    impls["runetensor"] = lambda: rt_fn(*ra)
    if ctx.torch is not None and torch_fn is not None:
        ta = [_to_torch(ctx, a) for a in arrays]
        impls["torch"] = lambda: torch_fn(*ta)
    if ctx.jnp is not None and jax_fn is not None:
        ja = [ctx.jnp.asarray(a) for a in arrays]
        for a in ja:
            a.block_until_ready()
        impls["jax"] = _jax(ctx, lambda: jax_fn(*ja))
    return impls


def _to_torch(ctx: Context, a):
    torch, np = ctx.torch, ctx.np
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


# ---------------------------------------------------------------------------
# Per-operation overhead
# ---------------------------------------------------------------------------
K = 1000


def _loop(fn):
    def run(*args):
        r = None
        for _ in range(K):
            r = fn(*args)
        return r
    return run


@workload("add_tiny", "a + b on 8 float32 elements (time per op)", per=K, target=1.5e-6, target_kind="max_time")
def _add_tiny(ctx):
    a, b = _f32(ctx, 8), _f32(ctx, 8)
    f = _loop(lambda x, y: x + y)
    return _all(ctx, [a, b], f, f, f, f)


@workload("mul_scalar_tiny", "a * 2.0 on 8 float32 elements (time per op)", per=K, target=1.5e-6,
          target_kind="max_time")
def _mul_scalar_tiny(ctx):
    f = _loop(lambda x: x * 2.0)
    return _all(ctx, [_f32(ctx, 8)], f, f, f, f)


@workload("bcast_tiny", "(4, 8) + (8,) float32 broadcast (time per op)", per=K, target=1.5e-6,
          target_kind="max_time")
def _bcast_tiny(ctx):
    f = _loop(lambda x, y: x + y)
    return _all(ctx, [_f32(ctx, 4, 8), _f32(ctx, 8)], f, f, f, f)


def _chain10(a, b, c):
    x = a + b          # 1
    x = x * c          # 2
    x = x - a          # 3
    x = x * 0.5        # 4
    x = x + 1.0        # 5
    x = -x             # 6
    x = x * x          # 7
    x = x + b          # 8
    x = x / 3.0        # 9
    return x - c       # 10


@workload("chain10_tiny", "10-op chain (+ * - scalar ops, neg) on 8 float32 (time per op)", per=K,
          target=1.5e-6, target_kind="max_time")
def _chain10_tiny(ctx):
    def f(a, b, c):
        r = None
        for _ in range(K // 10):
            r = _chain10(a, b, c)
        return r
    return _all(ctx, [_f32(ctx, 8), _f32(ctx, 8), _f32(ctx, 8)], f, f, f, f)


# ---------------------------------------------------------------------------
# Large elementwise
# ---------------------------------------------------------------------------
@workload("add_1e7", "a + b, 1e7 float32, fresh result", target=1.5)
def _add_1e7(ctx):
    n = ctx.n(10_000_000)
    f = lambda a, b: a + b  # noqa: E731
    return _all(ctx, [_f32(ctx, n), _f32(ctx, n)], f, f, f, f)


@workload("fma_sin_1e7", "a*b + c*sin(d), 1e7 float32", target=0.95)
def _fma_sin(ctx):
    n = ctx.n(10_000_000)
    np, rt = ctx.np, ctx.rt
    arrays = [_f32(ctx, n) for _ in range(4)]
    return _all(ctx, arrays, lambda a, b, c, d: a * b + c * np.sin(d),
                lambda a, b, c, d: a * b + c * rt.sin(d),
                lambda a, b, c, d: a * b + c * ctx.torch.sin(d),
                lambda a, b, c, d: a * b + c * ctx.jnp.sin(d))


@workload("bf16_add_1e7", "a + b, 1e7 bfloat16 (NumPy: ml_dtypes)", target=4.0)
def _bf16_add(ctx):
    import ml_dtypes
    n = ctx.n(10_000_000)
    a, b = (_f32(ctx, n).astype(ml_dtypes.bfloat16) for _ in range(2))
    f = lambda x, y: x + y  # noqa: E731
    return _all(ctx, [a, b], f, f, f, f)


@workload("f8_add_1e7", "a + b, 1e7 float8_e4m3fn (NumPy: ml_dtypes)", target=4.0)
def _f8_add(ctx):
    import ml_dtypes
    n = ctx.n(10_000_000)
    a, b = (_f32(ctx, n).astype(ml_dtypes.float8_e4m3fn) for _ in range(2))
    f = lambda x, y: x + y  # noqa: E731
    return _all(ctx, [a, b], f, f, None, f)  # PyTorch has no float8 add on the CPU


@workload("f16_add_1e7", "a + b, 1e7 float16 (NumPy's own float16 loops)", target=4.0)
def _f16_add(ctx):
    n = ctx.n(10_000_000)
    a, b = (_f32(ctx, n).astype(ctx.np.float16) for _ in range(2))
    f = lambda x, y: x + y  # noqa: E731
    return _all(ctx, [a, b], f, f, f, f)


@workload("bf16_exp_1e7", "exp of 1e7 bfloat16 (NumPy: ml_dtypes)", target=4.0)
def _bf16_exp(ctx):
    import ml_dtypes
    n = ctx.n(10_000_000)
    a = _f32(ctx, n).astype(ml_dtypes.bfloat16)
    return _all(ctx, [a], lambda x: ctx.np.exp(x), lambda x: ctx.rt.exp(x),
                lambda x: ctx.torch.exp(x), lambda x: ctx.jnp.exp(x))


@workload("where_1e7", "where(a > 0, a, b), 1e7 float32 (condition given)")
def _where(ctx):
    n = ctx.n(10_000_000)
    a, b = _f32(ctx, n), _f32(ctx, n)
    c = a > 0
    impls = _all(ctx, [c, a, b], lambda c_, x, y: ctx.np.where(c_, x, y), lambda c_, x, y: ctx.rt.where(c_, x, y),
                 lambda c_, x, y: ctx.torch.where(c_, x, y), lambda c_, x, y: ctx.jnp.where(c_, x, y))
    return impls


@workload("rand_1e7", "uniform random float32, 1e7 values (NumPy: default_rng().random)")
def _rand(ctx):
    n = ctx.n(10_000_000)
    np, rt = ctx.np, ctx.rt
    g = np.random.default_rng(5)
    impls = {"numpy": lambda: g.random(n, dtype=np.float32), "runetensor": lambda: rt.rand(rt.float32, [n], seed=5)}
    if ctx.torch is not None:
        gen = ctx.torch.Generator().manual_seed(5)
        impls["torch"] = lambda: ctx.torch.rand(n, generator=gen)
    if ctx.jax is not None:
        key = ctx.jax.random.PRNGKey(5)
        impls["jax"] = _jax(ctx, lambda: ctx.jax.random.uniform(key, (n,), dtype=ctx.jnp.float32))
    return impls


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------
@workload("sum_1e7", "sum of 1e7 float32", target=2.0)
def _sum(ctx):
    n = ctx.n(10_000_000)
    return _all(ctx, [_f32(ctx, n)], lambda a: a.sum(), lambda a: ctx.rt.sum(a),
                lambda a: a.sum(), lambda a: ctx.jnp.sum(a))


def _sum_axis(axis: int):
    def setup(ctx):
        shape = (4000, 2500) if not ctx.quick else (400, 2500)
        return _all(ctx, [_f32(ctx, *shape)], lambda a: a.sum(axis=axis),
                    lambda a: ctx.rt.sum(a, axes=[axis]), lambda a: a.sum(dim=axis),
                    lambda a: ctx.jnp.sum(a, axis=axis))
    return setup


workload("sum_axis0", "sum of a (4000, 2500) float32 along axis 0", target=2.0)(_sum_axis(0))
workload("sum_axis1", "sum of a (4000, 2500) float32 along axis 1", target=2.0)(_sum_axis(1))


# ---------------------------------------------------------------------------
# Products, sorting, copies, indexing, views
# ---------------------------------------------------------------------------
def _matmul(dtype: str):
    def setup(ctx):
        n = 2048 if not ctx.quick else 512
        a = ctx.rng.standard_normal((n, n)).astype(dtype)
        b = ctx.rng.standard_normal((n, n)).astype(dtype)
        f = lambda x, y: x @ y  # noqa: E731
        return _all(ctx, [a, b], f, lambda x, y: ctx.rt.matmul(x, y), f, f)
    return setup


workload("matmul_f32", "2048 x 2048 @ 2048 x 2048 float32", target=0.95)(_matmul("float32"))
workload("matmul_f64", "2048 x 2048 @ 2048 x 2048 float64", target=0.95)(_matmul("float64"))


@workload("sort_1e7", "sort with indices (stable), 1e7 float32", target=1.3)
def _sort(ctx):
    np = ctx.np
    n = ctx.n(10_000_000)

    def np_sort(a):
        i = np.argsort(a, kind="stable")
        return a[i], i
    return _all(ctx, [_f32(ctx, n)], np_sort, lambda a: ctx.rt.sort(a),
                lambda a: ctx.torch.sort(a, stable=True), lambda a: (ctx.jnp.sort(a), ctx.jnp.argsort(a, stable=True)))


@workload("argsort_1e7", "stable argsort, 1e7 float32", target=1.3)
def _argsort(ctx):
    np = ctx.np
    n = ctx.n(10_000_000)
    return _all(ctx, [_f32(ctx, n)], lambda a: np.argsort(a, kind="stable"), lambda a: ctx.rt.argsort(a),
                lambda a: ctx.torch.argsort(a, stable=True), lambda a: ctx.jnp.argsort(a, stable=True))


@workload("transpose_copy", "contiguous copy of a transposed (4096, 4096) float32", target=2.0)
def _transpose_copy(ctx):
    np, rt = ctx.np, ctx.rt
    n = 4096 if not ctx.quick else 1024
    return _all(ctx, [_f32(ctx, n, n)], lambda a: np.ascontiguousarray(a.T),
                lambda a: rt.contiguous(rt.transpose(a)), lambda a: a.t().contiguous(),
                lambda a: ctx.jnp.transpose(a) * 1)


@workload("gather_1e6", "fancy-index gather: 1e6 random int64 indices into 1e7 float32")
def _gather(ctx):
    np, rt = ctx.np, ctx.rt
    n = ctx.n(10_000_000)
    src = _f32(ctx, n)
    idx = ctx.rng.integers(0, n, ctx.n(1_000_000), dtype=np.int64)
    impls = {"numpy": lambda: src[idx]}
    rs, ri = rt.asarray(src), rt.asarray(idx)
    impls["runetensor"] = lambda: rs[ri]
    if ctx.torch is not None:
        ts, ti = _to_torch(ctx, src), _to_torch(ctx, idx)
        impls["torch"] = lambda: ts[ti]
    if ctx.jnp is not None:
        js, ji = ctx.jnp.asarray(src), ctx.jnp.asarray(idx)
        impls["jax"] = _jax(ctx, lambda: js[ji])
    return impls


def _view(kind: str):
    def setup(ctx):
        a = _f32(ctx, 1000, 10_000) if not ctx.quick else _f32(ctx, 100, 10_000)
        rt = ctx.rt
        shape = (a.shape[0] * 10, a.shape[1] // 10)
        if kind == "reshape":
            npf, rtf = (lambda x: x.reshape(shape)), (lambda x: rt.reshape(x, shape))
            tf, jf = npf, npf
        elif kind == "slice":
            npf = rtf = tf = (lambda x: x[1:-1, ::2])  # noqa: E731
            jf = None  # JAX slicing copies: not a view
        else:
            npf, rtf, tf, jf = (lambda x: x.T), (lambda x: rt.transpose(x)), (lambda x: x.t()), None
        return _all(ctx, [a], _loop(npf), _loop(rtf), _loop(tf), _loop(jf) if jf else None)
    return setup


workload("view_reshape", "reshape view of a 1e7-element tensor (time per op)", per=K, target=3e-6,
         target_kind="max_time")(_view("reshape"))
workload("view_slice", "basic slice t[1:-1, ::2] of a 1e7-element tensor (time per op)", per=K, target=3e-6,
         target_kind="max_time")(_view("slice"))
workload("view_transpose", "transpose view of a 1e7-element tensor (time per op)", per=K, target=3e-6,
         target_kind="max_time")(_view("transpose"))


@workload("hp_reduces", "harpie reduces with rt.sum, keeping axis 0 of a (2000, 5000) float32 "
                        "(NumPy: a.sum(axis=1))")
def _hp_reduces(ctx):
    import importlib
    hp = importlib.import_module("runetensor.harpie")  # skipped (reported) when harpie is missing
    reduces = getattr(hp, "reduces")
    rt = ctx.rt
    a = _f32(ctx, 2000, 5000) if not ctx.quick else _f32(ctx, 200, 5000)
    ra = rt.asarray(a)
    return {"numpy": lambda: a.sum(axis=1), "runetensor": lambda: reduces(ra, [0], rt.sum)}


# ---------------------------------------------------------------------------
# Automatic differentiation (no NumPy column: the target is against PyTorch eager)
# ---------------------------------------------------------------------------
KG = 200


@workload("grad_tiny", "rt.grad(lambda x: sum(x * x))(x) on 8 float32 (PyTorch: (x*x).sum().backward(); "
                       "JAX: jax.grad, eager) (time per gradient)", per=KG, target=1.0, target_kind="vs_torch")
def _grad_tiny(ctx):
    rt = ctx.rt
    a = _f32(ctx, 8)
    impls: dict[str, Callable[[], Any]] = {}
    ra = rt.asarray(a)
    g = rt.grad(lambda x: rt.sum(x * x))

    def run_rt():
        r = None
        for _ in range(KG):
            r = g(ra)
        return r
    impls["runetensor"] = run_rt
    if ctx.torch is not None:
        t = _to_torch(ctx, a).requires_grad_(True)

        def run_torch():
            for _ in range(KG):
                t.grad = None
                (t * t).sum().backward()
            return t.grad
        impls["torch"] = run_torch
    if ctx.jnp is not None:
        import jax
        ja = ctx.jnp.asarray(a)
        jg = jax.grad(lambda x: (x * x).sum())

        def run_jax():
            r = None
            for _ in range(KG):
                r = jg(ja)
            r.block_until_ready()
            return r
        impls["jax"] = run_jax
    return impls


def _mlp_data(ctx):
    np = ctx.np
    rng = np.random.default_rng(7)
    x = rng.standard_normal((128, 784), dtype=np.float32)
    labels = rng.integers(0, 10, 128)
    onehot = np.zeros((128, 10), np.float32)
    onehot[np.arange(128), labels] = 1
    w1 = (rng.standard_normal((784, 256), dtype=np.float32) * 0.05).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10), dtype=np.float32) * 0.05).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    return x, onehot, (w1, b1, w2, b2)


def _mlp_loss(rt):
    """The mean softmax cross-entropy of the 784-256-10 relu MLP, in runetensor."""
    def loss(p, x, y):
        w1, b1, w2, b2 = p
        h = rt.maximum(x @ w1 + b1, 0.0)
        z = h @ w2 + b2
        m = rt.max(z, axes=[1], keepdims=True)
        lse = rt.log(rt.sum(rt.exp(z - m), axes=[1], keepdims=True)) + m
        return rt.mean(lse - rt.sum(z * y, axes=[1], keepdims=True))
    return loss


def _mlp_jax_loss(jax, jnp):
    """The same loss in JAX."""
    def jloss(p, x, y):
        w1, b1, w2, b2 = p
        h = jnp.maximum(x @ w1 + b1, 0.0)
        z = h @ w2 + b2
        lse = jax.nn.logsumexp(z, axis=1, keepdims=True)
        return jnp.mean(lse - jnp.sum(z * y, axis=1, keepdims=True))
    return jloss


@workload("mlp_step", "forward + backward of a 784-256-10 float32 MLP (relu, softmax cross-entropy), "
                      "batch 128 (PyTorch eager; JAX: jit of grad)", target=1.2, target_kind="vs_torch")
def _mlp_step(ctx):
    rt = ctx.rt
    x, onehot, params = _mlp_data(ctx)
    impls: dict[str, Callable[[], Any]] = {}
    rx, ry = rt.asarray(x), rt.asarray(onehot)
    rp = tuple(rt.asarray(p) for p in params)

    loss = _mlp_loss(rt)
    g = rt.grad(loss)
    impls["runetensor"] = lambda: g(rp, rx, ry)
    if ctx.torch is not None:
        torch = ctx.torch
        tx, ty = torch.from_numpy(x), torch.from_numpy(onehot)
        tp = [torch.from_numpy(p.copy()).requires_grad_(True) for p in params]

        def run_torch():
            for p in tp:
                p.grad = None
            w1, b1, w2, b2 = tp
            h = torch.relu(tx @ w1 + b1)
            z = h @ w2 + b2
            lse = torch.logsumexp(z, dim=1, keepdim=True)
            (lse - (z * ty).sum(dim=1, keepdim=True)).mean().backward()
            return [p.grad for p in tp]
        impls["torch"] = run_torch
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, jy = jnp.asarray(x), jnp.asarray(onehot)
        jp = tuple(jnp.asarray(p) for p in params)

        jloss = _mlp_jax_loss(jax, jnp)
        jg = jax.jit(jax.grad(jloss))
        impls["jax"] = _jax(ctx, lambda: jg(jp, jx, jy))
    return impls


# ---------------------------------------------------------------------------
# conv2d forward + backward
# ---------------------------------------------------------------------------
@workload("conv2d_fwd_bwd", "conv2d forward + backward (input and weight gradients of sum(conv**2)), "
                            "N=32, 16->32 channels, 32x32, 3x3, padding 1, float32 (PyTorch eager; "
                            "JAX: jit of grad)", target=2.0, target_kind="vs_torch")
def _conv2d_fwd_bwd(ctx):
    rt = ctx.rt
    from runetensor import nn
    x = _f32(ctx, 32, 16, 32, 32)
    w = _f32(ctx, 32, 16, 3, 3) * ctx.np.float32(0.1)
    impls: dict[str, Callable[[], Any]] = {}
    rx, rw = rt.asarray(x), rt.asarray(w)
    g = rt.grad(lambda x, w: rt.sum(nn.conv2d(x, w, padding=1) ** 2), argnums=(0, 1))
    impls["runetensor"] = lambda: g(rx, rw)
    if ctx.torch is not None:
        torch = ctx.torch
        tx = torch.from_numpy(x.copy()).requires_grad_(True)
        tw = torch.from_numpy(w.copy()).requires_grad_(True)

        def run_torch():
            tx.grad = None
            tw.grad = None
            (torch.nn.functional.conv2d(tx, tw, padding=1) ** 2).sum().backward()
            return tx.grad, tw.grad
        impls["torch"] = run_torch
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, jw = jnp.asarray(x), jnp.asarray(w)

        def jloss(x, w):
            y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return jnp.sum(y ** 2)
        jg = jax.jit(jax.grad(jloss, argnums=(0, 1)))
        impls["jax"] = _jax(ctx, lambda: jg(jx, jw))
    return impls


# ---------------------------------------------------------------------------
# vmap (the NumPy column is the same computation written batched by hand)
# ---------------------------------------------------------------------------
def _small_mlp(ctx):
    rng = ctx.np.random.default_rng(11)
    f32 = ctx.np.float32
    x = rng.standard_normal((1024, 32), dtype=f32)
    w1 = (rng.standard_normal((32, 64), dtype=f32) * 0.2).astype(f32)
    w2 = (rng.standard_normal((64, 8), dtype=f32) * 0.2).astype(f32)
    return x, w1, w2


@workload("vmap_mlp_1024", "rt.vmap of a per-example 32-64-8 tanh MLP forward over 1024 examples "
                           "(compare with mlp_batched_1024: the same computation batched by hand)")
def _vmap_mlp(ctx):
    rt = ctx.rt
    x, w1, w2 = _small_mlp(ctx)
    rx, r1, r2 = rt.asarray(x), rt.asarray(w1), rt.asarray(w2)
    per = rt.vmap(lambda e, a, b: rt.tanh(rt.tanh(e @ a) @ b), in_axes=(0, None, None))
    impls: dict[str, Callable[[], Any]] = {"runetensor": lambda: per(rx, r1, r2)}
    if ctx.torch is not None:
        torch = ctx.torch
        tx, t1, t2 = (torch.from_numpy(a) for a in (x, w1, w2))
        tv = torch.func.vmap(lambda e: torch.tanh(torch.tanh(e @ t1) @ t2))
        impls["torch"] = lambda: tv(tx)
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, j1, j2 = (jnp.asarray(a) for a in (x, w1, w2))
        jv = jax.jit(jax.vmap(lambda e: jnp.tanh(jnp.tanh(e @ j1) @ j2)))
        impls["jax"] = _jax(ctx, lambda: jv(jx))
    return impls


@workload("mlp_batched_1024", "the same 32-64-8 tanh MLP forward written batched in runetensor "
                              "(the reference for vmap_mlp_1024)")
def _mlp_batched(ctx):
    np, rt = ctx.np, ctx.rt
    x, w1, w2 = _small_mlp(ctx)
    rx, r1, r2 = rt.asarray(x), rt.asarray(w1), rt.asarray(w2)
    return {"numpy": lambda: np.tanh(np.tanh(x @ w1) @ w2),
            "runetensor": lambda: rt.tanh(rt.tanh(rx @ r1) @ r2)}


@workload("per_example_grads", "rt.vmap(rt.grad(loss), in_axes=(None, 0, 0)) for the 784-256-10 MLP, batch 128 "
                               "(PyTorch: torch.func.vmap(grad); JAX: jit(vmap(grad)); compare with mlp_step)")
def _per_example(ctx):
    rt = ctx.rt
    x, onehot, params = _mlp_data(ctx)
    rx, ry = rt.asarray(x), rt.asarray(onehot)
    rp = tuple(rt.asarray(p) for p in params)

    def loss(p, x, y):
        w1, b1, w2, b2 = p
        h = rt.maximum(x @ w1 + b1, 0.0)
        z = h @ w2 + b2
        m = rt.max(z, axes=[-1], keepdims=True)
        lse = rt.log(rt.sum(rt.exp(z - m), axes=[-1], keepdims=True)) + m
        return rt.sum(lse - rt.sum(z * y, axes=[-1], keepdims=True))
    pe = rt.vmap(rt.grad(loss), in_axes=(None, 0, 0))
    impls: dict[str, Callable[[], Any]] = {"runetensor": lambda: pe(rp, rx, ry)}
    if ctx.torch is not None:
        torch = ctx.torch
        tx, ty = torch.from_numpy(x), torch.from_numpy(onehot)
        tp = tuple(torch.from_numpy(p.copy()) for p in params)

        def tloss(p, x, y):
            w1, b1, w2, b2 = p
            z = torch.relu(x @ w1 + b1) @ w2 + b2
            return (torch.logsumexp(z, dim=-1) - (z * y).sum(-1)).sum()
        tv = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        impls["torch"] = lambda: tv(tp, tx, ty)
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, jy = jnp.asarray(x), jnp.asarray(onehot)
        jp = tuple(jnp.asarray(p) for p in params)

        def jloss(p, x, y):
            w1, b1, w2, b2 = p
            z = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
            return jnp.sum(jax.nn.logsumexp(z, axis=-1) - jnp.sum(z * y, axis=-1))
        jv = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        impls["jax"] = _jax(ctx, lambda: jv(jp, jx, jy))
    return impls


# ---------------------------------------------------------------------------
# one training step of the digits CNN (runetensor/examples/digits.py)
# ---------------------------------------------------------------------------
def _digits_cnn_data(ctx, batch: int = 64):
    """A batch of random 8x8 images and labels, and the CNN's parameters (the example's shapes)."""
    np = ctx.np
    rng = np.random.default_rng(16)
    f32 = np.float32
    x = rng.random((batch, 1, 8, 8), dtype=f32)
    labels = rng.integers(0, 10, batch).astype(np.int32)

    def he(shape, fan_in):
        return (rng.uniform(-1, 1, shape) * np.sqrt(6 / fan_in)).astype(f32)
    params = {"conv1_w": he((16, 1, 3, 3), 9), "conv1_b": np.zeros(16, f32),
              "conv2_w": he((32, 16, 3, 3), 144), "conv2_b": np.zeros(32, f32),
              "dense_w": he((10, 512), 512 + 10), "dense_b": np.zeros(10, f32)}
    return x, labels, params


@workload("digits_cnn_step", "one training step of the digits CNN (conv 1->16, max-pool, conv 16->32, dense "
                             "512->10; softmax cross-entropy; forward + backward + Adam update), batch 64 of "
                             "1x8x8 float32 (PyTorch eager + torch.optim.Adam; JAX: jit of the whole step)",
          target=1.5, target_kind="vs_torch")
def _digits_cnn_step(ctx):
    rt = ctx.rt
    from runetensor import optim
    from runetensor.examples.digits import cnn, loss_fn
    x, labels, params = _digits_cnn_data(ctx)
    lr = 1e-3
    impls: dict[str, Callable[[], Any]] = {}

    rx, ry = rt.asarray(x), rt.asarray(labels)
    rstate = {"params": {k: rt.asarray(v) for k, v in params.items()}}
    opt = optim.adam(lr)
    rstate["opt"] = opt.init(rstate["params"])
    vg = rt.value_and_grad(lambda p, x, y: loss_fn(p, cnn, x, y))

    def run_rt():
        loss, grads = vg(rstate["params"], rx, ry)
        updates, rstate["opt"] = opt.update(grads, rstate["opt"], rstate["params"])
        rstate["params"] = optim.apply_updates(rstate["params"], updates)
        return loss
    impls["runetensor"] = run_rt

    if ctx.torch is not None:
        torch = ctx.torch
        F = torch.nn.functional
        tx, ty = torch.from_numpy(x), torch.from_numpy(labels.astype(ctx.np.int64))
        tp = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in params.items()}
        topt = torch.optim.Adam(list(tp.values()), lr=lr)

        def run_torch():
            topt.zero_grad(set_to_none=True)
            h = F.max_pool2d(F.relu(F.conv2d(tx, tp["conv1_w"], tp["conv1_b"], padding=1)), 2)
            h = F.relu(F.conv2d(h, tp["conv2_w"], tp["conv2_b"], padding=1))
            loss = F.cross_entropy(F.linear(h.reshape(h.shape[0], -1), tp["dense_w"], tp["dense_b"]), ty)
            loss.backward()
            topt.step()
            return loss.detach()
        impls["torch"] = run_torch

    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, jy = jnp.asarray(x), jnp.asarray(labels)

        def jconv(h, w, b):
            y = jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)),
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return y + b[None, :, None, None]

        def jloss(p, x, y):
            h = jax.nn.relu(jconv(x, p["conv1_w"], p["conv1_b"]))
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            h = jax.nn.relu(jconv(h, p["conv2_w"], p["conv2_b"]))
            z = h.reshape(h.shape[0], -1) @ p["dense_w"].T + p["dense_b"]
            return jnp.mean(jax.nn.logsumexp(z, axis=-1) - jnp.take_along_axis(z, y[:, None], axis=-1)[:, 0])

        def jstep(p, m, v, t, x, y):   # Adam (PyTorch's rule), hand-written: optax is not a dependency
            loss, g = jax.value_and_grad(jloss)(p, x, y)
            m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
            v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
            c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
            p = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + 1e-8), p, m, v)
            return loss, p, m, v
        jit_step = jax.jit(jstep)
        jstate = {"p": {k: jnp.asarray(v) for k, v in params.items()},
                  "m": {k: jnp.zeros(v.shape, jnp.float32) for k, v in params.items()},
                  "v": {k: jnp.zeros(v.shape, jnp.float32) for k, v in params.items()}, "t": 0}

        def run_jax():
            jstate["t"] += 1
            loss, jstate["p"], jstate["m"], jstate["v"] = jit_step(
                jstate["p"], jstate["m"], jstate["v"], jnp.float32(jstate["t"]), jx, jy)
            loss.block_until_ready()
            return loss
        impls["jax"] = run_jax
    return impls


def _fma_sin_data(ctx):
    n = 10_000_000 if not ctx.quick else 1_000_000
    return [_f32(ctx, n) for _ in range(4)]


@workload("jit_fma_sin_1e7", "rt.jit of a*b + c*sin(d) on 1e7 float32 (compare with jit_fma_sin_1e7_eager; "
                             "one compiled loop, sin through glibc's vector math in double)", target=3.0)
def _jit_fma_sin(ctx):
    rt = ctx.rt
    a, b, c, d = _fma_sin_data(ctx)
    ra, rb, rc, rd = (rt.asarray(x) for x in (a, b, c, d))
    f = rt.jit(lambda a, b, c, d: a * b + c * rt.sin(d))
    f(ra, rb, rc, rd)  # trace and compile outside the timing
    impls: dict[str, Callable[[], Any]] = {"numpy": lambda: a * b + c * ctx.np.sin(d),
                                           "runetensor": lambda: f(ra, rb, rc, rd)}
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        ja, jb, jc, jd = (jnp.asarray(x) for x in (a, b, c, d))
        jf = jax.jit(lambda a, b, c, d: a * b + c * jnp.sin(d))
        impls["jax"] = _jax(ctx, lambda: jf(ja, jb, jc, jd))
    return impls


@workload("jit_fma_sin_1e7_eager", "the same a*b + c*sin(d) in eager runetensor (the reference for jit_fma_sin_1e7)")
def _eager_fma_sin(ctx):
    rt = ctx.rt
    a, b, c, d = _fma_sin_data(ctx)
    ra, rb, rc, rd = (rt.asarray(x) for x in (a, b, c, d))
    return {"numpy": lambda: a * b + c * ctx.np.sin(d), "runetensor": lambda: ra * rb + rc * rt.sin(rd)}


def _rows_data(ctx):
    shape = (4096, 1024) if not ctx.quick else (512, 1024)
    return ctx.np.random.default_rng(5).standard_normal(shape).astype(ctx.np.float32)


def _softmax(m, x):
    e = m.exp(x - m.max(x, -1, keepdims=True))
    return e / m.sum(e, -1, keepdims=True)


def _layernorm(m, x):
    mu = m.mean(x, -1, keepdims=True)
    xc = x - mu
    return xc / m.sqrt(m.mean(xc * xc, -1, keepdims=True) + 1e-5)


def _rt_rows(rt):
    class M:
        exp, sqrt = rt.exp, rt.sqrt
        max = staticmethod(lambda x, a, keepdims: rt.max(x, [a], keepdims=keepdims))
        sum = staticmethod(lambda x, a, keepdims: rt.sum(x, [a], keepdims=keepdims))
        mean = staticmethod(lambda x, a, keepdims: rt.mean(x, [a], keepdims=keepdims))
    return M


def _rows_workload(ctx, fn, jit: bool):
    rt, np = ctx.rt, ctx.np
    x = _rows_data(ctx)
    rx = rt.asarray(x)
    M = _rt_rows(rt)
    def f(t):
        return fn(M, t)
    if jit:
        f = rt.jit(f)
        f(rx)  # trace and compile outside the timing
    impls: dict[str, Callable[[], Any]] = {"numpy": lambda: fn(np, x), "runetensor": lambda: f(rx)}
    if jit and ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx = jnp.asarray(x)
        jf = jax.jit(lambda t: fn(jnp, t))
        impls["jax"] = _jax(ctx, lambda: jf(jx))
    return impls


@workload("jit_softmax_4096x1024", "rt.jit of softmax over the last axis, (4096, 1024) float32 (compare with "
                                   "jit_softmax_4096x1024_eager: the target is 2x eager)")
def _jit_softmax(ctx):
    return _rows_workload(ctx, _softmax, True)


@workload("jit_softmax_4096x1024_eager", "the same softmax in eager runetensor")
def _eager_softmax(ctx):
    return _rows_workload(ctx, _softmax, False)


@workload("jit_layernorm_4096x1024", "rt.jit of layer norm (no affine) over the last axis, (4096, 1024) float32 "
                                     "(compare with jit_layernorm_4096x1024_eager: the target is 2x eager)")
def _jit_layernorm(ctx):
    return _rows_workload(ctx, _layernorm, True)


@workload("jit_layernorm_4096x1024_eager", "the same layer norm in eager runetensor")
def _eager_layernorm(ctx):
    return _rows_workload(ctx, _layernorm, False)


# ---------------------------------------------------------------------------
# The Dask backend vs plain dask.array on the same 2-worker LocalCluster.
# The "numpy" column holds plain dask.array's time, so numpy/rt reads "dask.array / runetensor".
# Sizes: RUNETENSOR_BENCH_DASK_BYTES (bytes per float32 tensor, default 128 MB; a larger-than-memory run: 4e9)
# and RUNETENSOR_BENCH_DASK_CHUNK_BYTES (default 16 MiB).  Both libraries compute from the same
# chunks, persisted in the workers before timing; elementwise results are persisted (not fetched).
# ---------------------------------------------------------------------------
_DASK: dict[str, Any] = {}


def _dask_cluster(ctx: Context):
    """The shared LocalCluster (2 worker processes, 1 thread each), closed at exit."""
    if "client" not in _DASK:
        import atexit

        from distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=50)
        client = Client(cluster)

        def close():
            client.close(timeout=10)
            cluster.close(timeout=10)
        atexit.register(close)
        _DASK["client"] = client
    return _DASK["client"]


def _dask_data(ctx: Context, k: int, bf16: bool = False):
    """``k`` persisted chunked tensors (float32, or bfloat16 chunks of ml_dtypes), as dask arrays."""
    import os

    import dask.array as da
    client = _dask_cluster(ctx)
    nbytes = int(float(os.environ.get("RUNETENSOR_BENCH_DASK_BYTES", 128e6)))
    chunk = int(float(os.environ.get("RUNETENSOR_BENCH_DASK_CHUNK_BYTES", 16 * 2 ** 20)))
    n = ctx.n(nbytes // 4)
    rng = da.random.default_rng(7)
    arrs = [rng.standard_normal(n, dtype=ctx.np.float32, chunks=max(1, chunk // 4)) for _ in range(k)]
    if bf16:
        import ml_dtypes
        arrs = [a.astype(ml_dtypes.bfloat16) for a in arrs]
    arrs = client.persist(arrs)
    from distributed import wait
    wait(arrs, timeout=600)
    return client, arrs


def _persisted(client, arr, inputs, fetch: bool = False):
    """Compute ``arr`` into the workers' memory (and fetch it: a scalar).  Its graph, down to the
    persisted ``inputs``, is cloned to fresh keys first, so no call finds the previous call's result."""
    from dask.graph_manipulation import clone
    from distributed import wait
    r = client.persist(clone(arr, omit=inputs))
    wait(r, timeout=600)
    return r.compute() if fetch else r


@workload("dask_sum", "sum of a chunked float32 tensor (128 MB, 16 MiB chunks; RUNETENSOR_BENCH_DASK_BYTES) on a "
                      "2-worker LocalCluster; the numpy column is plain dask.array (numpy/rt = dask.array / "
                      "runetensor)", target=0.9)
def _dask_sum(ctx):
    rt = ctx.rt
    client, (a,) = _dask_data(ctx, 1)
    ra = rt.asarray(a, backend="dask")
    return {"numpy": lambda: float(_persisted(client, a.sum(), [a], True)),
            "runetensor": lambda: float(_persisted(client, rt.sum(ra)._data.arr, [a], True))}


@workload("dask_fma_sin", "a*b + c*sin(d) on chunked float32 tensors (128 MB each, 16 MiB chunks) on a 2-worker "
                          "LocalCluster, result persisted; the numpy column is plain dask.array (numpy/rt = "
                          "dask.array / runetensor)", target=0.9)
def _dask_fma_sin(ctx):
    rt = ctx.rt
    import dask.array as da
    client, (a, b, c, d) = _dask_data(ctx, 4)
    ra, rb, rc, rd = (rt.asarray(x, backend="dask") for x in (a, b, c, d))
    return {"numpy": lambda: _persisted(client, a * b + c * da.sin(d), [a, b, c, d]),
            "runetensor": lambda: _persisted(client, (ra * rb + rc * rt.sin(rd))._data.arr, [a, b, c, d])}


@workload("dask_bf16_add", "bfloat16 add of chunked tensors (64 MB each, 8 MiB chunks) on a 2-worker LocalCluster, "
                           "result persisted; the numpy column is plain dask.array with ml_dtypes bfloat16 chunks "
                           "(numpy/rt = dask.array / runetensor)", target=2.0)
def _dask_bf16_add(ctx):
    rt = ctx.rt
    client, (a, b) = _dask_data(ctx, 2, bf16=True)
    ra, rb = (rt.asarray(x, backend="dask") for x in (a, b))
    return {"numpy": lambda: _persisted(client, a + b, [a, b]),
            "runetensor": lambda: _persisted(client, (ra + rb)._data.arr, [a, b])}


# File-backed and persisted rows: a float32 .npy file (RUNETENSOR_BENCH_DASK_BYTES, 2-D, 1024 columns) read
# lazily by both, runetensor with rt.io.load_npy(backend="dask") and dask.array with da.map_blocks over a
# read-only memory map of the same chunks (each task reads its own slice, as runetensor's reader does); and
# RUNETENSOR_BENCH_DASK_MATMUL_N square float32 matrices (default 2048; a full-size run: 4096) in 4 x 4 blocks.
def _dask_npy(ctx: Context, name: str, shape: tuple, chunks: tuple):
    """The path of a float32 .npy file of ``shape`` (written once per run, removed at exit)."""
    import atexit
    import shutil
    import tempfile
    key = ("npy", name, shape)
    if key not in _DASK:
        d = _DASK.setdefault("dir", tempfile.mkdtemp(prefix="rt-bench-dask-"))
        if "dir-cleanup" not in _DASK:
            _DASK["dir-cleanup"] = True
            atexit.register(shutil.rmtree, d, True)
        path = f"{d}/{name}.npy"
        mm = ctx.np.lib.format.open_memmap(path, mode="w+", dtype=ctx.np.float32, shape=shape)
        rng = ctx.np.random.default_rng(11)
        for lo in range(0, shape[0], chunks[0]):
            hi = min(shape[0], lo + chunks[0])
            mm[lo:hi] = rng.standard_normal((hi - lo,) + shape[1:], dtype=ctx.np.float32)
        mm.flush()
        del mm
        _DASK[key] = path
    return _DASK[key]


def _np_block(path, block_info=None):
    """dask.array's side of the file rows: one chunk of a .npy file through a read-only memory map."""
    import numpy as np
    a = np.load(path, mmap_mode="r")
    return np.array(a[tuple(slice(lo, hi) for lo, hi in block_info[None]["array-location"])])


def _dask_file_pair(ctx: Context, name: str, shape: tuple, chunks: tuple):
    import dask.array as da
    import runetensor.io as rio
    path = _dask_npy(ctx, name, shape, chunks)
    a = da.map_blocks(_np_block, path, chunks=da.core.normalize_chunks(chunks, shape), dtype=ctx.np.float32,
                      meta=ctx.np.empty((0, 0), ctx.np.float32))
    return a, rio.load_npy(path, backend="dask", chunks=chunks)


def _dask_file_shape(ctx: Context):
    import os
    nbytes = int(float(os.environ.get("RUNETENSOR_BENCH_DASK_BYTES", 128e6)))
    chunk = int(float(os.environ.get("RUNETENSOR_BENCH_DASK_CHUNK_BYTES", 16 * 2 ** 20)))
    rows = max(1, ctx.n(nbytes // 4) // 1024)
    return (rows, 1024), (max(1, chunk // 4 // 1024), 1024)


def _fetch(client, arr):
    from distributed import wait
    f = client.compute(arr)
    wait(f, timeout=600)
    return f.result()


@workload("dask_file_sum", "sum of a float32 .npy file (128 MB, 2-D, 16 MiB chunks) read lazily by both on a "
                           "2-worker LocalCluster; numpy column: dask.array over the file's memory map (numpy/rt = "
                           "dask.array / runetensor)", target=1.0)
def _dask_file_sum(ctx):
    rt = ctx.rt
    client = _dask_cluster(ctx)
    a, x = _dask_file_pair(ctx, "sum", *_dask_file_shape(ctx))
    return {"numpy": lambda: float(_fetch(client, a.sum())), "runetensor": lambda: float(_fetch(client, rt.sum(x)))}


@workload("dask_file_argmax", "argmax over a flattened 2-D float32 .npy file (128 MB, 16 MiB chunks) read lazily by "
                              "both on a 2-worker LocalCluster; numpy column: dask.array (numpy/rt = dask.array / "
                              "runetensor)", target=1.0)
def _dask_file_argmax(ctx):
    rt = ctx.rt
    client = _dask_cluster(ctx)
    a, x = _dask_file_pair(ctx, "argmax", *_dask_file_shape(ctx))
    return {"numpy": lambda: int(_fetch(client, a.argmax())), "runetensor": lambda: int(_fetch(client, rt.argmax(x)))}


@workload("dask_persisted_argmax", "argmax over a flattened 2-D float32 tensor (128 MB, 16 MiB chunks) persisted in "
                                   "the workers (rt.persist / client.persist) on a 2-worker LocalCluster (numpy/rt = "
                                   "dask.array / runetensor)", target=1.0)
def _dask_persisted_argmax(ctx):
    rt = ctx.rt
    client = _dask_cluster(ctx)
    a, x = _dask_file_pair(ctx, "argmax", *_dask_file_shape(ctx))
    with _dask_client(client):
        a = client.persist(a)
        (x,) = rt.persist(x)
    return {"numpy": lambda: int(_fetch(client, a.argmax())), "runetensor": lambda: int(_fetch(client, rt.argmax(x)))}


def _dask_client(client):
    import dask
    return dask.config.set(scheduler=client)


def _matmul_pair(ctx: Context):
    import os
    n = ctx.n(int(os.environ.get("RUNETENSOR_BENCH_DASK_MATMUL_N", 2048)), 512)
    return (n, n), (max(1, n // 4), max(1, n // 4))


def _matmul_rows(ctx: Context, persisted: bool):
    rt = ctx.rt
    client = _dask_cluster(ctx)
    shape, chunks = _matmul_pair(ctx)
    a, x = _dask_file_pair(ctx, "matmul", shape, chunks)
    if persisted:
        with _dask_client(client):
            a = client.persist(a)
            (x,) = rt.persist(x)
    # the product is kept in the workers (persisted, not fetched); each call's graph is cloned to fresh keys
    # (down to persisted inputs) so no call finds the previous call's result
    return {"numpy": lambda: _persisted(client, a @ a.T, [a] if persisted else []),
            "runetensor": lambda: _persisted(client, (x @ x.T)._data.arr, [x._data.arr] if persisted else [])}


@workload("dask_file_matmul", "x @ x.T of a square float32 .npy file (2048^2, RUNETENSOR_BENCH_DASK_MATMUL_N; 4 x 4 "
                              "blocks) read lazily by both on a 2-worker LocalCluster, result persisted (numpy/rt = "
                              "dask.array / runetensor)", target=1.0)
def _dask_file_matmul(ctx):
    return _matmul_rows(ctx, False)


@workload("dask_persisted_matmul", "x @ x.T of a square float32 tensor (2048^2; 4 x 4 blocks) persisted in the "
                                   "workers first, result persisted (numpy/rt = dask.array / runetensor)", target=1.0)
def _dask_persisted_matmul(ctx):
    return _matmul_rows(ctx, True)


@workload("mlp_jit_step", "the mlp_step workload's gradient under rt.jit(rt.grad(loss)) vs jax.jit(jax.grad(loss)) "
                          "(784-256-10 float32 MLP, batch 128; the target is <= JAX)")
def _mlp_jit_step(ctx):
    rt = ctx.rt
    x, onehot, params = _mlp_data(ctx)
    rx, ry = rt.asarray(x), rt.asarray(onehot)
    rp = tuple(rt.asarray(p) for p in params)

    loss = _mlp_loss(rt)
    g = rt.jit(rt.grad(loss))
    impls: dict[str, Callable[[], Any]] = {"runetensor": lambda: g(rp, rx, ry)}
    if ctx.jnp is not None:
        jax_impl = _mlp_step(ctx).get("jax")
        if jax_impl is not None:
            impls["jax"] = jax_impl
    return impls


@workload("jit_dispatch_tiny", "one call of a cached rt.jit(lambda a, b: a * b + a) on 8 float32 elements "
                               "(NumPy: the same expression eager; JAX: jax.jit of it) (time per call)",
          per=K, target=10e-6, target_kind="max_time")
def _jit_dispatch_tiny(ctx):
    rt = ctx.rt
    a, b = _f32(ctx, 8), _f32(ctx, 8)
    f = rt.jit(lambda x, y: x * y + x)
    f(rt.asarray(a), rt.asarray(b))  # trace (and compile) outside the timing
    jf = None
    if ctx.jax is not None:
        jf = ctx.jax.jit(lambda x, y: x * y + x)
    return _all(ctx, [a, b], _loop(lambda x, y: x * y + x), _loop(f), None, _loop(jf) if jf is not None else None)


@workload("jit_compile_w3", "first call (trace + C compile) of a fresh rt.jit of a*b + c*sin(d) on 1000 float32, "
                            "with a cold kernel cache (a fresh RUNETENSOR_JIT_CACHE folder and the in-memory "
                            "kernels forgotten each call); JAX: first call of jax.jit of a fresh lambda, "
                            "new shape each call", target=1.0, target_kind="max_time")
def _jit_compile_w3(ctx):
    import os
    import tempfile

    from runetensor._backend.fusion import _fuse
    rt = ctx.rt
    n = 1000
    arrays = [_f32(ctx, n) for _ in range(4)]
    ra, rb, rc, rd = (rt.asarray(x) for x in arrays)

    def run_rt():
        old = os.environ.get("RUNETENSOR_JIT_CACHE")
        with tempfile.TemporaryDirectory(prefix="rt-bench-jit-") as d:
            os.environ["RUNETENSOR_JIT_CACHE"] = d
            _fuse.clear_memory_cache()
            try:
                f = rt.jit(lambda a, b, c, d: a * b + c * rt.sin(d))
                r = f(ra, rb, rc, rd)
                if not any(name.endswith(".so") for name in os.listdir(d)):
                    raise RuntimeError("no kernel was compiled (is a C compiler on PATH?)")
            finally:
                if old is None:
                    os.environ.pop("RUNETENSOR_JIT_CACHE", None)
                else:
                    os.environ["RUNETENSOR_JIT_CACHE"] = old
        return r
    impls: dict[str, Callable[[], Any]] = {"runetensor": run_rt}
    if ctx.jax is not None:
        import jax
        jnp = ctx.jnp
        big = [_f32(ctx, n + 4096) for _ in range(4)]
        count = [0]

        def run_jax():
            count[0] += 1
            m = n + count[0] % 4096  # a shape not compiled before (a fresh lambda would retrace anyway)
            ja, jb, jc, jd = (jnp.asarray(x[:m]) for x in big)
            r = jax.jit(lambda a, b, c, d: a * b + c * jnp.sin(d))(ja, jb, jc, jd)
            r.block_until_ready()
            return r
        impls["jax"] = run_jax
    return impls


@workload("mlp_jit_train_step", "a full training step (forward + backward + SGD, lr 0.1) of the mlp_step MLP "
                                "(784-256-10 float32, batch 128) as rt.jit(step, donate_argnums=(0,)) vs "
                                "jax.jit(step, donate_argnums=(0,)); the new parameters feed the next call",
          target=1.0, target_kind="vs_jax")
def _mlp_jit_train_step(ctx):
    rt = ctx.rt
    x, onehot, params = _mlp_data(ctx)
    lr = 0.1
    rx, ry = rt.asarray(x), rt.asarray(onehot)

    loss = _mlp_loss(rt)

    def step(p, x, y):
        g = rt.grad(loss)(p, x, y)
        return tuple(w - lr * gw for w, gw in zip(p, g))
    f = rt.jit(step, donate_argnums=(0,))
    # own copies: a donated buffer's contents are undefined after the call
    rstate = {"p": tuple(rt.asarray(p.copy()) for p in params)}

    def run_rt():
        rstate["p"] = f(rstate["p"], rx, ry)
        return rstate["p"]
    impls: dict[str, Callable[[], Any]] = {"runetensor": run_rt}
    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        jx, jy = jnp.asarray(x), jnp.asarray(onehot)

        jloss = _mlp_jax_loss(jax, jnp)

        def jstep(p, x, y):
            g = jax.grad(jloss)(p, x, y)
            return tuple(w - lr * gw for w, gw in zip(p, g))
        jf = jax.jit(jstep, donate_argnums=(0,))
        jstate = {"p": tuple(jnp.array(p) for p in params)}

        def run_jax():
            jstate["p"] = jf(jstate["p"], jx, jy)
            for w in jstate["p"]:
                w.block_until_ready()
            return jstate["p"]
        impls["jax"] = run_jax
    if ctx.torch is not None:   # PyTorch eager (no jit): what a PyTorch user runs
        torch = ctx.torch
        tx, ty = torch.from_numpy(x), torch.from_numpy(onehot)
        tp = [torch.from_numpy(p.copy()).requires_grad_(True) for p in params]

        def run_torch():
            w1, b1, w2, b2 = tp
            z = torch.relu(tx @ w1 + b1) @ w2 + b2
            loss = torch.mean(torch.logsumexp(z, dim=1, keepdim=True) - torch.sum(z * ty, dim=1, keepdim=True))
            gs = torch.autograd.grad(loss, tp)
            with torch.no_grad():
                for w, gw in zip(tp, gs):
                    w.sub_(lr * gw)
            return loss
        impls["torch"] = run_torch
    return impls


loaded("mlp_jit_train_step")
loaded("digits_cnn_step")


# ---------------------------------------------------------------------------
# Data-parallel training (rt.pmap on the shared 2-worker LocalCluster).  The "numpy" column holds
# the same step under rt.jit in this one process, so numpy/rt reads "single-process jit / pmap":
# the scaling efficiency of two single-thread workers against one process (the target is >= 0.7).
# ---------------------------------------------------------------------------
@workload("pmap_digits_step", "digits CNN Adam step, global batch 512 in 8 shards, rt.pmap on a 2-worker "
                              "LocalCluster (1 thread each); the numpy column is the same step under rt.jit in one "
                              "process (numpy/rt = scaling efficiency)", target=0.7)
def _pmap_digits_step(ctx):
    rt = ctx.rt
    from runetensor import optim
    from runetensor.examples.digits import init_cnn
    from runetensor.examples.digits_dp import make_step
    client = _dask_cluster(ctx)
    S, B = 8, 512
    x = rt.asarray(ctx.rng.uniform(0, 1, (S, B // S, 1, 8, 8)).astype(ctx.np.float32))
    y = rt.asarray(ctx.rng.integers(0, 10, (S, B // S)).astype(ctx.np.int32))
    w = rt.ones(rt.float32, [S, B // S])
    count = rt.scalar(rt.float32, float(B))
    opt = optim.adam(1e-3)
    params = init_cnn(rt.random.key(0))
    state = opt.init(params)
    step = make_step("cnn", opt)
    axes = (None, None, 0, 0, 0, None)
    dp = rt.pmap(step, "batch", in_axes=axes, out_axes=None, client=client)
    one = rt.jit(rt.pmap(step, "batch", in_axes=axes, out_axes=None))  # one shard of 512: the plain step
    x1, y1, w1 = rt.reshape(x, [1, B, 1, 8, 8]), rt.reshape(y, [1, B]), rt.reshape(w, [1, B])
    return {"numpy": lambda: one(params, state, x1, y1, w1, count),
            "runetensor": lambda: dp(params, state, x, y, w, count)}


# ---------------------------------------------------------------------------
# one training step of the character-level GPT (runetensor/examples/gpt.py's default sizes)
# ---------------------------------------------------------------------------
@workload("gpt_jit_train_step", "one training step of the example GPT (vocab 60, context 64, d_model 64, 2 pre-norm "
                                "blocks of 4-head causal attention + 4x GELU MLP, batch 32; cross-entropy, global-norm "
                                "clipping, AdamW; no dropout): rt.jit of the whole step (model and state donated) vs "
                                "PyTorch eager (torch.nn modules, clip_grad_norm_, torch.optim.AdamW) and jax.jit "
                                "(hand-written AdamW)", target=1.25, target_kind="vs_jax")
def _gpt_jit_train_step(ctx):
    rt = ctx.rt
    np = ctx.np
    from runetensor.examples import gpt as G
    cfg = G.Config(dropout=0.0, steps=10_000)
    V, T, B, d, L, H = 60, cfg.block_size, cfg.batch_size, cfg.d_model, cfg.layers, cfg.heads
    rng = np.random.default_rng(24)
    data = rng.integers(0, V, T * B * 4).astype(np.int32)
    win = data[rng.integers(0, len(data) - T - 1, B)[:, None] + np.arange(T + 1)]
    x, y = np.ascontiguousarray(win[:, :-1]), np.ascontiguousarray(win[:, 1:])
    impls: dict[str, Callable[[], Any]] = {}

    model = G.GPT(V, cfg, key=rt.random.key(0))
    opt = G.make_optimizer(cfg)
    step = G.make_step(opt)
    rx, ry = rt.asarray(x), rt.asarray(y)
    rstate = {"m": model, "s": opt.init(model), "k": rt.random.key(1)}

    def run_rt():
        rstate["m"], rstate["s"], loss = step(rstate["m"], rstate["s"], rx, ry, rstate["k"])
        return loss
    impls["runetensor"] = run_rt

    if ctx.torch is not None:
        torch = ctx.torch
        F = torch.nn.functional

        class TBlock(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
                self.attn = torch.nn.MultiheadAttention(d, H, batch_first=True)
                self.fc, self.proj = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

            def forward(self, h, mask):
                a = self.ln1(h)
                h = h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
                return h + self.proj(F.gelu(self.fc(self.ln2(h)), approximate="tanh"))

        class TGPT(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tok, self.pos = torch.nn.Embedding(V, d), torch.nn.Embedding(T, d)
                self.blocks = torch.nn.ModuleList([TBlock() for _ in range(L)])
                self.ln_f, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, V)

            def forward(self, idx, mask):
                h = self.tok(idx) + self.pos.weight[:idx.shape[1]]
                for b in self.blocks:
                    h = b(h, mask)
                return self.head(self.ln_f(h))

        torch.manual_seed(0)
        tm = TGPT()
        topt = torch.optim.AdamW(tm.parameters(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=cfg.weight_decay)
        tx, ty = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
        tmask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)

        def run_torch():
            topt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(tm(tx, tmask).reshape(-1, V), ty.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(tm.parameters(), cfg.clip)
            topt.step()
            return loss.detach()
        impls["torch"] = run_torch

    if ctx.jnp is not None:
        import jax
        jnp = ctx.jnp
        keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))

        def lin(i, o):
            b = 1 / np.sqrt(i)
            return {"w": jax.random.uniform(next(keys), (o, i), minval=-b, maxval=b), "b": jnp.zeros(o)}

        def ln():
            return {"w": jnp.ones(d), "b": jnp.zeros(d)}
        jp = {"tok": jax.random.normal(next(keys), (V, d)) * 0.02, "pos": jax.random.normal(next(keys), (T, d)) * 0.02,
              "blocks": [{"ln1": ln(), "ln2": ln(), "qkv": lin(d, 3 * d), "out": lin(d, d), "fc": lin(d, 4 * d),
                          "proj": lin(4 * d, d)} for _ in range(L)], "ln_f": ln(), "head": lin(d, V)}

        def jln(p, h):
            m = h.mean(-1, keepdims=True)
            v = ((h - m) ** 2).mean(-1, keepdims=True)
            return (h - m) / jnp.sqrt(v + 1e-5) * p["w"] + p["b"]

        def jlin(p, h):
            return h @ p["w"].T + p["b"]
        causal = jnp.tril(jnp.ones((T, T), bool))

        def jloss(p, x, y):
            h = p["tok"][x] + p["pos"][:T]
            for b in p["blocks"]:
                a = jln(b["ln1"], h)
                q, k, v = jnp.split(jlin(b["qkv"], a), 3, axis=-1)
                q, k, v = (t.reshape(B, T, H, d // H).transpose(0, 2, 1, 3) for t in (q, k, v))
                s = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // H), -jnp.inf)
                o = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
                h = h + jlin(b["out"], o)
                h = h + jlin(b["proj"], jax.nn.gelu(jlin(b["fc"], jln(b["ln2"], h)), approximate=True))
            z = jlin(p["head"], jln(p["ln_f"], h))
            return jnp.mean(jax.nn.logsumexp(z, -1) - jnp.take_along_axis(z, y[..., None], -1)[..., 0])

        tm_ = jax.tree_util.tree_map

        def jstep(p, m, v, t, x, y):
            loss, g = jax.value_and_grad(jloss)(p, x, y)
            norm = jnp.sqrt(sum(jnp.sum(a * a) for a in jax.tree_util.tree_leaves(g)))
            g = tm_(lambda a: a * jnp.minimum(1.0, cfg.clip / (norm + 1e-6)), g)
            t = t + 1
            m = tm_(lambda m, g: 0.9 * m + 0.1 * g, m, g)
            v = tm_(lambda v, g: 0.99 * v + 0.01 * g * g, v, g)
            c1, c2 = 1 - 0.9 ** t, 1 - 0.99 ** t
            p = tm_(lambda p, m, v: p * (1 - cfg.lr * cfg.weight_decay) - cfg.lr * (m / c1) / (jnp.sqrt(v / c2) + 1e-8),
                    p, m, v)
            return loss, p, m, v, t
        jit_step = jax.jit(jstep, donate_argnums=(0, 1, 2))
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jstate = {"p": jp, "m": tm_(jnp.zeros_like, jp), "v": tm_(jnp.zeros_like, jp), "t": jnp.zeros((), jnp.float32)}

        def run_jax():
            loss, jstate["p"], jstate["m"], jstate["v"], jstate["t"] = jit_step(
                jstate["p"], jstate["m"], jstate["v"], jstate["t"], jx, jy)
            loss.block_until_ready()
            return loss
        impls["jax"] = run_jax
    return impls


# rows with no PyTorch or JAX column: their peer processes skip the setup (which would start a cluster)
for _w in WORKLOADS.values():
    if _w.name.startswith(("dask_", "pmap_")):
        _w.peers = ()
