"""runetensor tensors in the scientific Python ecosystem through the Array API standard.

``array_api_compat`` resolves a runetensor tensor to ``runetensor.array_api``
via ``__array_namespace__``; SciPy functions that support the standard (with
``SCIPY_ARRAY_API=1``, which must be set before SciPy is first imported, so
they run in a subprocess) compute on runetensor tensors and return them.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import runetensor as rt
import runetensor.array_api as xp

compat = pytest.importorskip("array_api_compat")


def test_array_api_compat_resolves_the_namespace():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert compat.is_array_api_obj(x)
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x, xp.asarray([1])) is xp
    assert compat.array_namespace(x, api_version="2024.12") is xp
    assert compat.device(x) == "cpu"
    assert compat.size(x) == 4
    assert compat.to_device(x, "cpu") is x


def test_generic_array_api_code_runs_on_runetensor():
    """A function written only against the standard (as library code is) gives NumPy's answers."""
    def standardize(x):
        ns = compat.array_namespace(x)
        mu = ns.mean(x, axis=0, keepdims=True)
        sd = ns.std(x, axis=0, correction=1, keepdims=True)
        z = (x - mu) / sd
        return ns.where(ns.isnan(z), ns.zeros_like(z), z)

    a = np.array([[1.0, 2.0, 5.0], [3.0, 2.0, 7.0], [8.0, 2.0, 9.0]])
    got = standardize(xp.asarray(a))
    with np.errstate(invalid="ignore"):
        want = standardize(a)
    assert type(got) is rt.Tensor
    np.testing.assert_allclose(rt.to_numpy(got), want)


SCIPY_SCRIPT = textwrap.dedent("""
    import numpy as np
    import runetensor as rt
    import runetensor.array_api as xp
    import scipy.special as special
    import scipy.stats as stats
    import scipy.signal as signal
    import scipy.fft as sfft
    from scipy.cluster.vq import whiten

    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0], [0.5, -1.0, 2.0]])
    x = xp.asarray(a)
    checks = [
        (special.logsumexp(x, axis=1), special.logsumexp(a, axis=1)),
        (special.softmax(x, axis=0), special.softmax(a, axis=0)),
        (special.xlogy(x, x + 10), special.xlogy(a, a + 10)),
        (stats.zscore(x, axis=1), stats.zscore(a, axis=1)),
        (stats.moment(x, order=3, axis=0), stats.moment(a, order=3, axis=0)),
        (stats.skew(x, axis=1), stats.skew(a, axis=1)),
        (stats.variation(x, axis=1), stats.variation(a, axis=1)),
        (stats.pearsonr(x[0], x[1]).statistic, stats.pearsonr(a[0], a[1]).statistic),
        (stats.ttest_1samp(x, 0.0, axis=1).pvalue, stats.ttest_1samp(a, 0.0, axis=1).pvalue),
        (signal.convolve(x[0], x[1]), signal.convolve(a[0], a[1])),
        (sfft.dct(x), sfft.dct(a)),
        (whiten(x), whiten(a)),
    ]
    for i, (got, want) in enumerate(checks):
        assert type(got) is rt.Tensor, (i, type(got))
        np.testing.assert_allclose(rt.to_numpy(got), want, rtol=1e-10, atol=1e-12, err_msg=str(i))
    print("OK", len(checks))
""")


def test_scipy_functions_accept_runetensor_tensors():
    pytest.importorskip("scipy")
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", SCIPY_SCRIPT], env=env, capture_output=True, text=True,
                       timeout=120, cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "OK 12"
