"""runetensor.harpie: harpie's hyperrectangular array combinators over runetensor Tensors.

``from runetensor import harpie as hp``.  This is the Haskell library harpie's
``Harpie.Array`` (seed ``004``) with the names and argument order of
``docs/conventions.md``: camelCase becomes snake_case (``findNoOverlap`` ->
``find_no_overlap``), ``!`` is :func:`index`, ``!?`` :func:`index_safe`,
``><`` :func:`array`; array arguments come first, then the rest in harpie's
order (``reduces [0] sum a`` -> ``hp.reduces(a, [0], sum)``); ``*_safe``
variants return None where harpie returns ``Nothing``.

A harpie array is a :class:`runetensor.Tensor` (typed for numbers,
``rt.object`` for tuples, lists and arrays).  :func:`pretty` and :func:`show`
print harpie's formats.  See ``docs/harpie.md`` for the differences from
harpie.

>>> from runetensor import harpie as hp
>>> a = hp.range([2, 3, 4])
>>> print(hp.pretty(hp.reduces(a, [0, 2], sum)))
[[12,15,18,21],
 [48,51,54,57]]
"""
from . import _apply, _base, _core, _math, _shape
from ._apply import *  # noqa: F401,F403
from ._base import UnsafeArray as UnsafeArray, equal as equal, pretty as pretty, show as show
from ._core import *  # noqa: F401,F403
from ._math import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403

reshape = _shape.reshape_  # an assignment, so that type checkers see it exported
reshape.__name__ = reshape.__qualname__ = "reshape"

#: harpie's ``Dim`` (a dimension index) and ``Dims`` (a list of them), as type aliases
Dim = int
Dims = list[int]

__all__ = ["Dim", "Dims"] + sorted(set(_base.__all__ + _core.__all__ + [n for n in _shape.__all__ if n != "reshape_"] +
                     ["reshape"] + _apply.__all__ + _math.__all__))
# ``hp.range`` and ``hp.slice`` stay attributes but out of ``__all__``: ``from runetensor.harpie import *``
# does not shadow the builtins
__all__ = [n for n in __all__ if n not in ("range", "slice")]
