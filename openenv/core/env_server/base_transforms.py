"""Two ready-made transforms: a chain of transforms, and one that changes nothing."""

from ...server._upstream_env import CompositeTransform, NullTransform

__all__ = ["CompositeTransform", "NullTransform"]
