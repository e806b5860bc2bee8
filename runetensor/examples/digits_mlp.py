"""Train the MLP on scikit-learn's 8x8 digits: ``python -m runetensor.examples.digits --model mlp``.

The same script as :mod:`runetensor.examples.digits` (all its options), with ``--model mlp``
as the default: dense 64->128, relu, dense 128->10, trained with Adam on minibatches.
"""
from __future__ import annotations

import sys
from typing import Sequence

from runetensor.examples.digits import main as _main

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line of :mod:`runetensor.examples.digits` with the MLP as the default model.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    Returns:
        The exit status, 0.
    """
    return _main(argv, default_model="mlp")


if __name__ == "__main__":
    sys.exit(main())
