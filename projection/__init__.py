"""callctx projection: span events, the event log, the fold and the call-tree rendering."""

from .events import Event, SpanEnded, SpanStarted
from .fold import Projection
from .log import EventLog, LogError
from .log_reader import read_log
from .view import CallInfo, TreeView

__all__ = [
    "CallInfo",
    "Event",
    "EventLog",
    "LogError",
    "Projection",
    "SpanEnded",
    "SpanStarted",
    "TreeView",
    "read_log",
]
