"""The context debugger page: a store's sessions, call trees and model calls, each call as the
segments the model saw with their cache use, what changed since the previous call, and the
request as sent. Served by ``callctx ui LOG`` and at ``/ui`` by ``callctx serve``; it reads
through the read model (``callctx.store``), like every other reader.
"""

from .routes import respond
from .views import Views

__all__ = ["Views", "respond"]
