"""Runnable examples that train small models end to end (``python -m runetensor.examples.digits``).

* :mod:`runetensor.examples.digits`: a small CNN (conv, pool, conv, dense) on scikit-learn's
  bundled 8x8 handwritten digits; ``--model mlp`` trains a multilayer perceptron instead.
* :mod:`runetensor.examples.digits_mlp`: the same script with ``--model mlp`` as the default.

They need scikit-learn for the data set only (``pip install 'runetensor[examples]'``); the
data ship with scikit-learn, nothing is downloaded.  See ``docs/examples.md``.
"""
