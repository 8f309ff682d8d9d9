"""callctx projection: span events, the event log, the fold and the call-tree rendering."""

from .events import Event, SpanEnded, SpanStarted
from .fold import CallInfo, Projection
from .log import EventLog, LogError, read_log

__all__ = ["CallInfo", "Event", "EventLog", "LogError", "Projection", "SpanEnded", "SpanStarted", "read_log"]
