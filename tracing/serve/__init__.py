"""``callctx serve``: spans from other processes in over OTLP (HTTP and gRPC) into an event
log (``ingest``), read back through the local store (``read_api``, the page at ``/ui``) on a
bounded HTTP server (``http_server``) and a bounded gRPC server (``grpc_server``)."""

from .grpc_server import GrpcServer, serve_grpc
from .handler import serve_http
from .ingest import Receiver, Stats

__all__ = ["GrpcServer", "Receiver", "Stats", "serve_grpc", "serve_http"]
