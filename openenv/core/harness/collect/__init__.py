"""``openenv.core.harness.collect``: upstream's names for ``openenv.harness.collect``
(the same names: the list is that package's ``__all__``)."""

from ....harness import collect as _collect
from ....harness.collect import *  # noqa: F403

__all__ = _collect.__all__
