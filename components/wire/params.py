"""Request parameters other than the content (defined with the manifest that records them)."""

from callctx.projection.manifest import Params

__all__ = ["Params"]
