"""The family modules whose public names make up the main namespace.

Each family module defines ``__all__``; :func:`load_families` imports them in
order and copies their names into the package namespace.
"""
from __future__ import annotations

import importlib
from typing import Any

FAMILIES = (
    "_seeded_random",                            # rand randn randint dropout (a seed argument; rt.random: keys)
    "_ranges",                                   # eye identity diag linspace logspace geomspace meshgrid tril triu
    "_views", "_combine", "_indexing",           # shape, combine, conversion and indexing functions
    "_elementwise", "_reduction", "_sorting", "_products",   # math
    "_linalg", "_fft", "_interop",               # linear algebra, FFT, ecosystem interop
    "_windows",                                  # extract/combine_patches correlate convolve *_filter
    "_special",                                  # erf erfc sigmoid relu logsumexp softmax one_hot real imag conj ...
    "_bridge",                                   # to_bigarray(_ext) of_bigarray(_ext)
    "_threads",                                  # set_num_threads get_num_threads (the pool: _backend/_parallel)
    "_array_api_methods",                        # __array_namespace__ device to_device mT T
    "_numpy_methods",                            # NumPy manners: axis=, reshape(4, 3), tolist, in, __array_interface__
    "_dask_collection",                          # Dask collection protocol, chunks, persist rechunk map_blocks
    "_debug",                                    # debug_print debug_nans
)


def load_families(namespace: dict[str, Any]) -> list[str]:
    """Import each module of :data:`FAMILIES` and copy its ``__all__`` into ``namespace``.

    Returns:
        The names copied, in order.
    Raises:
        ImportError: naming the family, if a module of the list is missing.

    >>> ns = {}
    >>> "add" in load_families(ns) and ns["add"].__module__
    'runetensor._elementwise'
    """
    names: list[str] = []
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"runetensor.{fam}")
        except ModuleNotFoundError as e:
            if e.name == f"runetensor.{fam}":
                raise ImportError(f"load_families: the family module runetensor.{fam} listed in FAMILIES "
                                  f"(runetensor/_families.py) is missing; add runetensor/{fam}.py or remove "
                                  f"it from the list", name=e.name) from None
            raise
        for n in mod.__all__:
            namespace[n] = getattr(mod, n)
        names += list(mod.__all__)
    return names
