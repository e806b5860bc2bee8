"""runetensor's benchmark suite: ``python -m benchmarks`` (see ``--help``).

Each workload runs on runetensor and, in the same process and on the same
data, on NumPy, and on PyTorch and JAX when they are importable.  The table
reports the median time over repeated runs after warm-up, and the ratio
NumPy time / runetensor time (above 1: runetensor is faster).
"""
from .harness import Result, run_workloads
from .workloads import WORKLOADS

__all__ = ["Result", "run_workloads", "WORKLOADS"]
