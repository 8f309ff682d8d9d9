"""The context debugger page: an event log's sessions, call trees and model calls, each call
as the segments the model saw with their cache use, what changed since the previous call,
and the request as sent. Served by ``callctx ui LOG`` and at ``/ui`` by ``callctx serve``.
"""

from .routes import respond
from .store import LogStore
from .views import Views

__all__ = ["LogStore", "Views", "respond"]
