"""The derivative rule: a value that carries a derivative either carries it through a call, or the
call raises a ``TypeError`` naming ``rt.stop_gradient``; nothing turns it into a silent constant.

Every public creation and conversion function (the ``__all__`` of the creation, range and interop
families, of the Array API namespace's creation functions, and the conversion protocols of
``Tensor``) is called with a differentiated argument: its derivative must match central differences
of the same call made eagerly (a non-uniform cotangent, reverse and forward mode), or it must raise
the documented ``TypeError``.  A function added to those families without a case here fails
``test_every_function_has_a_case``.
"""
import copy
import math
import pickle

import numpy as np
import pytest

import runetensor as rt
import runetensor.array_api as xp
from runetensor import _creation, _interop, _ranges
from runetensor.array_api import _creation as _xp_creation

F64 = rt.float64
X0 = np.array([0.7, 2.3])  # the differentiated point (a vector of two float64 values)


def vec(v):
    return rt.asarray(np.asarray(v, dtype=np.float64))


# name -> f(x): x is a float64 vector of 2 values (eager or differentiated); the result depends on it
CARRY = {
    "create": lambda x: rt.create(F64, [2, 2], [x[0], x[1] * 2.0, 3.0, x[0] * x[1]]),
    "create (a tensor as data)": lambda x: rt.create(rt.float32, [2], x * 3.0),
    "init": lambda x: rt.init(F64, [2, 3], lambda i: x[0] * (i[0] + 1) + x[1] * i[1]),
    "full": lambda x: rt.full(F64, [2, 3], x[0] * x[1]),
    "scalar": lambda x: rt.scalar(F64, x[1] ** 2),
    "full_like": lambda x: rt.full_like(rt.zeros(F64, [3]), x[0] - x[1]),
    "scalar_like": lambda x: rt.scalar_like(x[0], x[1] * 5.0),
    "empty_like": lambda x: rt.ones_like(x) * 0.0 + rt.empty_like(x).shape[0],  # constant in x: derivative 0
    "ones_like": lambda x: rt.ones_like(x),
    "zeros_like": lambda x: rt.zeros_like(x),
    "asarray": lambda x: rt.asarray(x, copy=True) * rt.asarray([1.0, -1.0]),
    "asarray (nested lists)": lambda x: rt.asarray([[x[0], 1.0], [x[1], x[0] * x[1]]]),
    "asarray (a list of vectors)": lambda x: rt.asarray([x, x * x, [1.0, 2.0]]),
    "from_numpy": lambda x: rt.from_numpy(x) * 2.0,
    "from_dlpack": lambda x: rt.from_dlpack(x) * 3.0,
    "linspace (start)": lambda x: rt.linspace(F64, x[0], 5.0, 4),
    "linspace (stop)": lambda x: rt.linspace(F64, -1.0, x[1], 5),
    "linspace (both, float32, no endpoint)": lambda x: rt.linspace(rt.float32, x[0], x[1] * 2, 4, endpoint=False),
    "linspace (one value)": lambda x: rt.linspace(F64, x[0], x[1], 1),
    "logspace (start_exp)": lambda x: rt.logspace(F64, x[0], 1.5, 4),
    "logspace (stop_exp, base)": lambda x: rt.logspace(F64, 0.5, x[1], 3, base=x[0] + 1.0),
    "geomspace": lambda x: rt.geomspace(F64, x[0], x[1] * 3.0, 5),
    "diag": lambda x: rt.diag(x, k=1),
    "meshgrid": lambda x: rt.meshgrid(x, x * x)[1],
    "tril": lambda x: rt.tril(rt.reshape(rt.concatenate([x, x * 2.0]), [2, 2])),
    "triu": lambda x: rt.triu(rt.reshape(rt.concatenate([x, x * 2.0]), [2, 2])),
}

STOP_GRADIENT = "rt.stop_gradient"
# name -> (f(x), what the TypeError says)
REFUSE = {
    "to_numpy": (lambda x: rt.to_numpy(x * 2.0), STOP_GRADIENT),
    "memoryview": (lambda x: rt.memoryview(x * 2.0), STOP_GRADIENT),
    "arange_f": (lambda x: rt.arange_f(F64, x[0], 5.0, 1.0), STOP_GRADIENT),
    "to_backend": (lambda x: rt.to_backend(x, "numpy"), STOP_GRADIENT),
    "to_backend (dask)": (lambda x: rt.to_backend(x, "dask"), STOP_GRADIENT),
    "__array__": (lambda x: (x * 2.0).__array__(), STOP_GRADIENT),
    "np.asarray": (lambda x: np.asarray(x * 2.0), STOP_GRADIENT),
    "np.array": (lambda x: np.array(x * 2.0, dtype=np.float32), STOP_GRADIENT),
    "__array_interface__": (lambda x: (x * 2.0).__array_interface__, STOP_GRADIENT),
    "__dlpack__": (lambda x: (x * 2.0).__dlpack__(), STOP_GRADIENT),
    "np.from_dlpack": (lambda x: np.from_dlpack(x * 2.0), STOP_GRADIENT),
    "pickle": (lambda x: pickle.dumps(x * 2.0), STOP_GRADIENT),
    "tobytes": (lambda x: (x * 2.0).tobytes(), STOP_GRADIENT),
    "copy.copy": (lambda x: copy.copy(x * 2.0), STOP_GRADIENT),
    "copy.deepcopy": (lambda x: copy.deepcopy([x * 2.0]), STOP_GRADIENT),
    # arguments that are sizes, counts or integers: a float tensor is refused whatever it carries
    "arange": (lambda x: rt.arange(F64, x[0], 5, 1), "must be an integer"),
    "eye": (lambda x: rt.eye(F64, x[0]), "must be an integer"),
    "identity": (lambda x: rt.identity(F64, x[0]), "must be an integer"),
    "empty": (lambda x: rt.empty(F64, [x[0]]), "must be an integer"),
    "ones": (lambda x: rt.ones(F64, [x[0]]), "must be an integer"),
    "zeros": (lambda x: rt.zeros(F64, [x[0]]), "must be an integer"),
    "linspace (count)": (lambda x: rt.linspace(F64, 0.0, 1.0, x[0]), "must be an integer"),
}
# the same walk over the Array API namespace's creation functions
XP_CARRY = {
    "asarray": lambda x: xp.asarray([[x[0], 1.0], [x[1], x[0] * x[1]]]),
    "empty_like": lambda x: rt.ones_like(x) * 0.0 + xp.empty_like(x).shape[0],
    "from_dlpack": lambda x: xp.from_dlpack(x) * 3.0,
    "full": lambda x: xp.full((2, 3), x[0] * x[1]),
    "full_like": lambda x: xp.full_like(xp.zeros(3, dtype=xp.float64), x[0] - x[1]),
    "linspace": lambda x: xp.linspace(x[0], x[1] * 4.0, 5),
    "meshgrid": lambda x: xp.meshgrid(x, x * x, x[0:1])[1],
    "ones_like": lambda x: xp.ones_like(x),
    "tril": lambda x: xp.tril(xp.reshape(xp.concat([x, x * 2.0]), (2, 2))),
    "triu": lambda x: xp.triu(xp.reshape(xp.concat([x, x * 2.0]), (2, 2))),
    "zeros_like": lambda x: xp.zeros_like(x),
}
XP_REFUSE = {
    "arange": (lambda x: xp.arange(x[0], 5.0), STOP_GRADIENT),
    "empty": (lambda x: xp.empty((x[0],)), "integer"),
    "eye": (lambda x: xp.eye(x[0]), "integer"),
    "ones": (lambda x: xp.ones((x[0],)), "integer"),
    "zeros": (lambda x: xp.zeros((x[0],)), "integer"),
}
CARRY.update({f"xp.{k}": f for k, f in XP_CARRY.items()})
REFUSE.update({f"xp.{k}": f for k, f in XP_REFUSE.items()})

# public names that take no tensor and no number a derivative could flow from
NO_VALUE_ARGUMENT = {"use_backend": "a context manager selecting a backend by name"}

# conversions of Tensor (protocols, not family functions) the walk must cover
PROTOCOLS = ["__array__", "__array_interface__", "__dlpack__", "memoryview", "pickle", "copy.copy", "tobytes"]


def _base(name):
    return name.split(" (")[0]


def test_every_function_has_a_case():
    public = set(_creation.__all__) | set(_ranges.__all__) | set(_interop.__all__)
    covered = {_base(n) for n in CARRY} | {_base(n) for n in REFUSE} | set(NO_VALUE_ARGUMENT)
    missing = sorted(public - covered)
    assert not missing, f"creation/conversion functions without a derivative case here: {missing}"
    for p in PROTOCOLS:
        assert p in REFUSE, p
    missing = sorted(set(_xp_creation.__all__) - set(XP_CARRY) - set(XP_REFUSE))
    assert not missing, f"array_api creation functions without a derivative case here: {missing}"


def _eval(f, x):
    out = f(vec(x))
    return np.asarray(rt.to_numpy(rt.astype(out, F64)), dtype=np.float64)


def _cotangent(shape):
    n = int(np.prod(shape)) if shape else 1
    return (np.linspace(-1.3, 2.1, n) ** 2 + np.arange(n) * 0.37 - 0.5).reshape(shape)


def _central(f, x, h):
    """d<W, f(x)>/dx by central differences, and the directional derivative along V."""
    w = _cotangent(_eval(f, x).shape)
    g = np.zeros_like(x)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (np.sum(w * _eval(f, x + e)) - np.sum(w * _eval(f, x - e))) / (2 * h)
    return w, g


@pytest.mark.parametrize("name", sorted(CARRY))
def test_creation_carries_the_derivative(name):
    f = CARRY[name]
    low = "float32" in name or "tensor as data" in name
    w, fd = _central(f, X0, 1e-2 if low else 1e-6)  # the float32 cases are linear in x: a wide step is exact
    tol = 1e-4 if low else 1e-6

    def loss(x):
        return rt.sum(rt.astype(f(x), F64) * vec(w))
    g = rt.to_numpy(rt.grad(loss)(vec(X0)))
    np.testing.assert_allclose(g, fd, rtol=tol, atol=tol, err_msg=f"{name}: reverse mode")
    v = np.array([0.6, -1.7])
    _, t = rt.jvp(loss, (vec(X0),), (vec(v),))
    np.testing.assert_allclose(float(t), float(fd @ v), rtol=tol, atol=tol, err_msg=f"{name}: forward mode")
    # the values inside the transformation are the eager values, bit for bit
    seen = []
    rt.grad(lambda x: (seen.append(rt.to_numpy(rt.stop_gradient(rt.astype(f(x), F64)))), loss(x))[1])(vec(X0))
    np.testing.assert_array_equal(seen[0], _eval(f, X0), err_msg=f"{name}: values differ inside grad")


@pytest.mark.parametrize("name", sorted(REFUSE))
def test_conversion_refuses_a_differentiated_value(name):
    f, words = REFUSE[name]
    with pytest.raises(TypeError, match=words.replace(".", r"\.")):
        rt.grad(lambda x: rt.sum(f(x)))(vec(X0))
    with pytest.raises(TypeError, match=words.replace(".", r"\.")):
        rt.jvp(lambda x: rt.sum(f(x)), (vec(X0),), (vec([1.0, 0.0]),))


def test_python_scalar_reads_and_constants_stay_allowed():
    seen = {}

    def f(x):
        y = x * 2.0
        seen["float"], seen["int"], seen["item"], seen["tolist"] = float(y[0]), int(y[1]), y[0].item(), y.tolist()
        c = rt.ones(F64, [2])  # created inside, carries nothing: converts
        seen["const"] = np.asarray(c).tolist()
        seen["stopped"] = np.asarray(rt.stop_gradient(y)).tolist()
        return rt.sum(y)
    g = rt.grad(f)(vec(X0))
    np.testing.assert_array_equal(rt.to_numpy(g), [2.0, 2.0])
    assert seen == {"float": 1.4, "int": 4, "item": 1.4, "tolist": [1.4, 4.6], "const": [1.0, 1.0],
                    "stopped": [1.4, 4.6]}
    # outside any transformation nothing changes
    t = vec(X0)
    a = np.asarray(t)
    a[0] = 9.0
    assert float(t[0]) == 9.0


def test_ranges_under_vmap_and_nested():
    starts = vec([0.0, 1.0, -2.5])
    got = rt.to_numpy(rt.vmap(lambda s: rt.linspace(F64, s, 4.0, 5))(starts))
    np.testing.assert_array_equal(got, np.stack([np.linspace(s, 4.0, 5) for s in [0.0, 1.0, -2.5]]))
    got = rt.to_numpy(rt.vmap(lambda s: rt.logspace(F64, 0.0, s, 3))(vec([1.0, 2.0])))
    np.testing.assert_allclose(got, np.stack([np.logspace(0.0, s, 3) for s in [1.0, 2.0]]), rtol=1e-15)
    # per-lane gradients: d/ds sum(w * linspace(s, 4, 5)) = sum(w * (1 - i/4))
    w = vec([1.0, 2.0, 3.0, 4.0, 5.0])
    g = rt.vmap(rt.grad(lambda s: rt.sum(rt.linspace(F64, s, 4.0, 5) * w)))(starts)
    np.testing.assert_allclose(rt.to_numpy(g), [np.sum(np.arange(1, 6) * (1 - np.arange(5) / 4))] * 3)
    # second derivative of logspace in its start: d2/da2 10**a = ln(10)**2 10**a
    a = rt.scalar(F64, 0.5)
    h = rt.grad(rt.grad(lambda s: rt.sum(rt.logspace(F64, s, 1.0, 2)[0:1])))(a)
    assert math.isclose(float(h), math.log(10) ** 2 * 10 ** 0.5, rel_tol=1e-12)
    # asarray of a list of batched values keeps the lanes
    got = rt.to_numpy(rt.vmap(lambda s: rt.asarray([s, s * s, 1.0]))(starts))
    np.testing.assert_array_equal(got, [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [-2.5, 6.25, 1.0]])


def test_ranges_match_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy  # float32 (the process-wide x64 switch is left alone)
    w = np.array([0.5, -1.0, 2.0, 0.25])
    for fr, fj in [(lambda a, b: rt.linspace(F64, a, b, 4), lambda a, b: jnp.linspace(a, b, 4)),
                   (lambda a, b: rt.linspace(F64, a, b, 4, endpoint=False),
                    lambda a, b: jnp.linspace(a, b, 4, endpoint=False)),
                   (lambda a, b: rt.logspace(F64, a, b, 4), lambda a, b: jnp.logspace(a, b, 4))]:
        gr = rt.grad(lambda a, b: rt.sum(fr(a, b) * vec(w)), argnums=(0, 1))(rt.scalar(F64, 0.3), rt.scalar(F64, 1.1))
        gj = jax.grad(lambda a, b: jnp.sum(fj(a, b) * w), argnums=(0, 1))(0.3, 1.1)
        np.testing.assert_allclose([float(v) for v in gr], [float(v) for v in gj], rtol=1e-5)
    gr = rt.grad(lambda a: rt.sum(rt.asarray([[a, 2.0 * a], [a * a, 1.0]]) * vec([[1.0, 2.0], [3.0, 4.0]])))(
        rt.scalar(F64, 1.5))
    wj = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    gj = jax.grad(lambda a: jnp.sum(jnp.asarray([[a, 2.0 * a], [a * a, 1.0]]) * wj))(1.5)
    assert math.isclose(float(gr), float(gj), rel_tol=1e-6)


# ---------------------------------------------------------------------------
# custom_vjp: what bwd returns is checked
# ---------------------------------------------------------------------------
def _custom(bwd_result):
    @rt.custom_vjp
    def scaled(x):
        return x * 2.0
    scaled.defvjp(lambda x: (x * 2.0, None), lambda res, g: bwd_result(g))
    return scaled


@pytest.mark.parametrize("result, shape, error, words", [
    (lambda g: (5.0,), (2,), TypeError, r"custom_vjp scaled: .*argument 0 is float 5\.0; expected a tensor of shape "
                                        r"\(2,\).*0-d argument"),
    (lambda g: ("x",), (), TypeError, r"custom_vjp scaled: .*argument 0 is str 'x'; expected a tensor"),
    (lambda g: ("x",), (2,), TypeError, r"custom_vjp scaled: .*argument 0 is str"),
    (lambda g: (np.ones(2),), (2,), TypeError, r"custom_vjp scaled: .*argument 0 is ndarray"),
    (lambda g: (True,), (), TypeError, r"custom_vjp scaled: .*argument 0 is bool"),
    (lambda g: (1j,), (), TypeError, r"custom_vjp scaled: .*complex one only for a complex argument"),
    (lambda g: 5.0, (2,), TypeError, r"custom_vjp scaled: bwd must return a tuple of 1 cotangents"),
    (lambda g: (g, g), (2,), TypeError, r"custom_vjp scaled: bwd must return a tuple of 1 cotangents"),
    (lambda g: ((g,),), (2,), TypeError, r"custom_vjp scaled: .*argument 0 has structure"),
    (lambda g: (rt.ones(F64, [3]),), (2,), ValueError, r"custom_vjp scaled: .*shape \(3,\); expected the "
                                                       r"argument's shape \(2,\)"),
])
def test_custom_vjp_bwd_result_is_checked(result, shape, error, words):
    f = _custom(result)
    x = rt.ones(F64, list(shape))
    with pytest.raises(error, match=words):
        rt.grad(lambda a: rt.sum(f(a)))(x)
    with pytest.raises(error, match=words):
        rt.jvp(lambda a: rt.sum(f(a)), (x,), (rt.ones_like(x),))


def test_custom_vjp_python_number_for_a_scalar_argument():
    f = _custom(lambda g: (float(g) * 3.0,))  # a Python number: taken as the 0-d cotangent
    assert float(rt.grad(f)(rt.scalar(F64, 1.0))) == 3.0
    f = _custom(lambda g: (None,))  # None: a zero cotangent, on purpose
    np.testing.assert_array_equal(rt.to_numpy(rt.grad(lambda a: rt.sum(f(a)))(rt.ones(F64, [2]))), [0.0, 0.0])
    f = _custom(lambda g: (g * 3.0,))
    np.testing.assert_array_equal(rt.to_numpy(rt.grad(lambda a: rt.sum(f(a) * vec([1.0, 2.0])))(rt.ones(F64, [2]))),
                                  [3.0, 6.0])


# ---------------------------------------------------------------------------
# std / var where the variance is 0
# ---------------------------------------------------------------------------
def test_std_of_a_constant_has_derivative_zero():
    torch = pytest.importorskip("torch")
    cases = [([2.0], 0, None), ([3.0, 3.0], 0, None), ([3.0, 3.0], 1, None), ([1.0, 1.0, 1.0], 0, None),
             ([[1.0, 2.0], [5.0, 5.0]], 0, [1]), ([[4.0], [7.0]], 0, [1])]
    for vals, ddof, axes in cases:
        x = vec(vals)
        w = vec(_cotangent(np.std(np.asarray(vals), axis=None if axes is None else tuple(axes)).shape))
        g = rt.to_numpy(rt.grad(lambda a: rt.sum(rt.std(a, axes=axes, ddof=ddof) * w))(x))
        assert np.all(np.isfinite(g)), (vals, ddof, axes, g)
        tx = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        s = torch.std(tx, dim=None if axes is None else tuple(axes), correction=ddof)
        (s * torch.tensor(rt.to_numpy(w))).sum().backward()
        np.testing.assert_allclose(g, tx.grad.numpy(), atol=1e-15, err_msg=str((vals, ddof, axes)))
        _, t = rt.jvp(lambda a: rt.sum(rt.std(a, axes=axes, ddof=ddof) * w), (x,), (rt.ones_like(x),))
        assert math.isfinite(float(t))
    # one element: the function is constant, so every derivative is 0 (second order too)
    one = rt.scalar(F64, 2.0)
    assert float(rt.grad(lambda s: rt.std(rt.reshape(s, [1])))(one)) == 0.0
    assert float(rt.grad(rt.grad(lambda s: rt.std(rt.reshape(s, [1]))))(one)) == 0.0
    assert float(rt.grad(lambda s: rt.var(rt.reshape(s, [1])))(one)) == 0.0
    # elsewhere std's derivative is unchanged: central differences
    x = np.array([1.0, 2.5, 4.0, 4.5])
    w = 1.7
    g = rt.to_numpy(rt.grad(lambda a: rt.std(a, ddof=1) * w)(vec(x)))
    h = 1e-6
    fd = [(np.std(x + h * e, ddof=1) - np.std(x - h * e, ddof=1)) * w / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)
