"""rt.debug_print and rt.debug_nans: values printed at run time inside jit, vmap and grad; the first
primitive making a NaN or an infinity named with the user's source line, eagerly and under jit."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import runetensor as rt

HERE = os.path.abspath(__file__)
_CHECKED = ("unary", "binary", "cast", "reduce", "scan", "matmul", "linalg", "fft")


def line_of(marker: str) -> int:
    """The line number of the (only) line of this file that holds ``marker``."""
    with open(HERE) as f:
        hits = [i + 1 for i, s in enumerate(f) if marker in s and "line_of(" not in s]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def N(t) -> np.ndarray:
    return rt.to_numpy(t)


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def no_wrappers() -> bool:
    return not any(n in vars(rt.get_backend("numpy")) for n in _CHECKED)


@pytest.fixture(autouse=True)
def _off_after():
    yield
    rt.debug_nans(False)
    assert no_wrappers()


# ------------------------------------------------------------------------------------------- debug_print
def test_print_eager_formats_values(capsys):
    x = rt.asarray([1.5, -2.0])
    rt.debug_print("x={0} n={1} s={s:.3f} {0}", x, 7, s=rt.sum(x))
    assert lines(capsys) == [f"x={x} n=7 s={-0.5:.3f} {x}"]


def test_print_bad_format_and_arguments():
    with pytest.raises(TypeError, match="debug_print: fmt must be"):
        rt.debug_print(3, rt.asarray(1.0))
    with pytest.raises(ValueError, match="debug_print: bad format string"):
        rt.debug_print("{} {}", rt.asarray(1.0))
    with pytest.raises(ValueError, match="debug_print: bad format string"):
        rt.debug_print("{missing}", rt.asarray(1.0))


def test_print_under_grad_shows_values_and_leaves_the_gradient(capsys):
    def f(x):
        y = rt.sin(x)
        rt.debug_print("x={} y={}", x, y)
        return rt.sum(y * y)

    xs = np.array([0.3, 1.1, -0.7])
    g = rt.grad(f)(rt.asarray(xs))
    np.testing.assert_allclose(N(g), 2 * np.sin(xs) * np.cos(xs), rtol=1e-12)
    assert lines(capsys) == [f"x={rt.asarray(xs)} y={rt.asarray(np.sin(xs))}"]


def test_print_under_vmap_once_per_lane(capsys):
    a = np.arange(12.0).reshape(3, 4)   # batched along axis 1: 4 lanes of 3 values
    c = rt.asarray([10.0, 20.0])       # the same in every lane

    def f(col, c):
        rt.debug_print("lane {} sum {:.1f} c {}", col, rt.sum(col), c)
        return col * 2

    rt.vmap(f, in_axes=(1, None))(rt.asarray(a), c)
    want = [f"lane {rt.asarray(a[:, i])} sum {a[:, i].sum():.1f} c {c}" for i in range(4)]
    assert lines(capsys) == want


def test_print_under_nested_vmap_lane_order(capsys):
    a = np.arange(6.0).reshape(2, 3)
    rt.vmap(rt.vmap(lambda v: rt.debug_print("{:.0f}", v)))(rt.asarray(a))
    assert lines(capsys) == [f"{v:.0f}" for v in a.ravel()]


def test_print_under_jit_each_call_with_its_values(capsys):
    def f(x):
        y = rt.exp(x) * 2.0 + 1.0
        rt.debug_print("sum={:.6f}", rt.sum(y))
        rt.debug_print("tick")                     # no tensor: still printed at every call
        rt.debug_print("dead {:.3f}", rt.sum(x * 3.0))  # a value nothing else uses
        return y * 3.0

    jf = rt.jit(f)
    outs = []
    for k in range(3):
        xs = np.linspace(-1.0, 1.0, 4096) + k
        outs.append(lines(capsys))
        r = jf(rt.asarray(xs))
        y = np.exp(xs) * 2.0 + 1.0
        np.testing.assert_allclose(N(r), y * 3.0, rtol=1e-12)
        got = lines(capsys)
        assert len(got) == 3, got
        assert got[0].startswith("sum=") and abs(float(got[0][4:]) - y.sum()) <= 1e-9 * abs(y.sum()), got
        assert got[1] == "tick"
        assert abs(float(got[2][5:]) - 3 * xs.sum()) < 1e-3, got
    assert rt.jit_stats(jf)["traces"] == 1 and rt.jit_stats(jf)["cache_hits"] == 2


def test_print_under_jit_vmap_grad(capsys):
    def loss(w, x):
        p = rt.tanh(x * w)
        rt.debug_print("w={:.4f} p={:.4f}", w, p)
        return p * p

    f = rt.jit(rt.vmap(rt.grad(loss), in_axes=(None, 0)))
    for w in (0.5, -1.25):
        xs = np.array([0.1, 0.7, -2.0])
        g = f(rt.asarray(w), rt.asarray(xs))
        p = np.tanh(xs * w)
        np.testing.assert_allclose(N(g), 2 * p * (1 - p * p) * xs, rtol=1e-12)
        assert lines(capsys) == [f"w={w:.4f} p={v:.4f}" for v in p]
    assert rt.jit_stats(f)["traces"] == 1


def test_print_dask_backend(capsys):
    pytest.importorskip("dask.array")
    x = rt.asarray([1.0, 2.0, 3.0]).to_backend("dask")
    rt.debug_print("dask {:.1f}", rt.sum(x * 2.0))
    assert lines(capsys) == ["dask 12.0"]


# ------------------------------------------------------------------------------------------- debug_nans
def test_nans_off_by_default_costs_nothing():
    assert no_wrappers()
    r = rt.log(rt.asarray([-1.0]))
    assert np.isnan(N(r)).all()


def test_nans_eager_names_the_primitive_and_line():
    x = rt.asarray([1.0, -1.0, 4.0])
    with rt.debug_nans():
        assert not no_wrappers()
        with pytest.raises(FloatingPointError) as ei:
            rt.log(x)  # MARK-eager-log
        assert rt.sqrt(x * x).shape == (3,)  # finite results pass
    msg = str(ei.value)
    assert "log made a NaN (1 element)" in msg and f"{HERE}:{line_of('MARK-eager-log')}" in msg
    assert no_wrappers()


def test_nans_infinity_from_division_and_reduction_overflow():
    with rt.debug_nans():
        with pytest.raises(FloatingPointError, match=r"div made an infinity"):
            rt.asarray([1.0, 2.0]) / rt.asarray([1.0, 0.0])
        big = rt.asarray([60000.0, 60000.0], dtype=rt.float16)
        with pytest.raises(FloatingPointError, match=r"sum made an infinity"):
            rt.sum(big)
        with pytest.raises(FloatingPointError, match="cast to float16 made an infinity"):
            rt.asarray([1e6]).astype(rt.float16)


def test_nans_passed_in_are_not_blamed():
    nan = float("nan")
    with rt.debug_nans():
        r = rt.asarray([nan, 1.0, float("inf")]) * 2.0 + 1.0
        assert np.isnan(N(r)[0]) and np.isinf(N(r)[2])
        assert np.isnan(N(rt.sum(rt.asarray([nan, 1.0]))))
        assert np.isnan(N(rt.asarray([1.0]) * nan)).all()   # a NaN Python scalar operand
        # a new NaN at an element whose input was finite is blamed, even next to a passed-in one
        with pytest.raises(FloatingPointError, match=r"log made a NaN \(1 element\)"):
            rt.log(rt.asarray([nan, -1.0, 2.0]))


def test_nans_global_switch_and_nesting():
    rt.debug_nans(True)
    with pytest.raises(FloatingPointError):
        rt.sqrt(rt.asarray(-1.0))
    with rt.debug_nans(False):
        assert no_wrappers()
        assert np.isnan(N(rt.sqrt(rt.asarray(-1.0))))
    with pytest.raises(FloatingPointError):
        rt.sqrt(rt.asarray(-1.0))
    rt.debug_nans(False)
    assert no_wrappers()
    with pytest.raises(TypeError, match="debug_nans: enable must be"):
        rt.debug_nans("yes")


def test_nans_in_the_backward_pass_names_the_forward_primitive():
    def f(x):
        return rt.sum(rt.sqrt(x))  # MARK-grad-sqrt

    x = rt.asarray([0.0, 4.0])
    assert np.isinf(N(rt.grad(f)(x))[0])  # off: inf, as the derivative of sqrt at 0 is
    with rt.debug_nans():
        rt.sqrt(x)  # forward: finite
        with pytest.raises(FloatingPointError) as ei:
            rt.grad(f)(x)  # MARK-grad-call
    e = ei.value
    assert "made an infinity" in str(e) and f"{HERE}:{line_of('MARK-grad-call')}" in str(e)
    note = "\n".join(getattr(e, "__notes__", []))
    assert "derivative of sqrt" in note and f"{HERE}:{line_of('MARK-grad-sqrt')}" in note


def test_nans_under_vmap():
    with rt.debug_nans():
        with pytest.raises(FloatingPointError, match="log made a NaN"):
            rt.vmap(rt.log)(rt.asarray([[1.0, 2.0], [3.0, -4.0]]))


def _jitted_body(x, y):
    z = x * y + 1.0
    w = rt.log(z)  # MARK-jit-log
    return w * 2.0, rt.sum(z)


def test_nans_under_jit_first_and_cached_calls():
    f = rt.jit(_jitted_body)
    good = (rt.asarray(np.linspace(0.5, 2.0, 1000)), rt.asarray(2.0))
    bad = (rt.asarray(np.linspace(-2.0, 2.0, 1000)), rt.asarray(2.0))
    where = f"{HERE}:{line_of('MARK-jit-log')}"
    with rt.debug_nans():
        with pytest.raises(FloatingPointError) as ei:
            f(*bad)  # traced now
        assert "log made a NaN" in str(ei.value) and where in str(ei.value)
        w, s = f(*good)
        xs = np.linspace(0.5, 2.0, 1000)
        np.testing.assert_allclose(N(w), 2 * np.log(xs * 2 + 1), rtol=1e-12)
        with pytest.raises(FloatingPointError) as ei:
            f(*bad)  # replayed
        assert "log made a NaN" in str(ei.value) and where in str(ei.value)
    assert rt.jit_stats(f)["traces"] >= 1 and rt.jit_stats(f)["cache_hits"] >= 1
    w, _ = f(*bad)  # off: NaN, no error
    assert np.isnan(N(w)).any()


def test_nans_under_jit_with_donation_and_passed_in_nan():
    f = rt.jit(lambda a: rt.sqrt(a - 1.0), donate_argnums=0)
    with rt.debug_nans():
        a = rt.asarray(np.array([2.0, 0.5, 5.0]))
        with pytest.raises(FloatingPointError, match="sqrt made a NaN"):
            f(a)
        np.testing.assert_array_equal(N(a), [2.0, 0.5, 5.0])  # the argument was not donated over
        r = f(rt.asarray(np.array([float("nan"), 2.0])))  # a NaN passed in: returned, not blamed
        assert np.isnan(N(r)[0]) and N(r)[1] == 1.0


def test_nans_environment_variable():
    code = ("import runetensor as rt\n"
            "try:\n    rt.log(rt.asarray(-1.0))\nexcept FloatingPointError as e:\n    print('raised', e)\n")
    env = dict(os.environ, RUNETENSOR_DEBUG_NANS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "raised debug_nans: log made a NaN" in out.stdout


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the BLAS path's own, not checked here
def test_nans_program_traced_while_on_checks_only_while_on():
    f = rt.jit(lambda a, b: rt.matmul(a, b) + 1.0)
    with rt.debug_nans():
        f(rt.asarray([[1.0, 2.0]]), rt.asarray([[3.0], [4.0]]))  # traced while on
    big = rt.asarray([[1e200, 1e200]])
    r = f(big, rt.asarray([[1e200], [1e200]]))  # the overflow replayed while off: no error
    assert np.isinf(N(r)).all()
    with rt.debug_nans():
        with pytest.raises(FloatingPointError, match="matmul made an infinity"):
            f(big, rt.asarray([[1e200], [1e200]]))


def test_print_while_checking_nans_prints_non_finite_values(capsys):
    with rt.debug_nans():
        rt.debug_print("{}", rt.asarray([float("nan"), float("inf")]))
    assert lines(capsys) == [str(rt.asarray([float("nan"), float("inf")]))]
