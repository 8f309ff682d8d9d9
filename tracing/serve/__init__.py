"""``callctx serve``: spans from other processes in over OTLP (HTTP and gRPC) into an event
log (``ingest``) or a ClickHouse traces table (``table_ingest``), read back through the store
(``read_api``, the page at ``/ui``) on a bounded HTTP server (``http_server``) and a bounded
gRPC server (``grpc_server``)."""

from .grpc_server import GrpcServer, serve_grpc
from .handler import serve_http
from .ingest import Receiver, Receiving, Stats
from .table_ingest import TableReceiver

__all__ = ["GrpcServer", "Receiver", "Receiving", "Stats", "TableReceiver", "serve_grpc", "serve_http"]
