"""``callctx serve``: spans from other processes in over OTLP (HTTP and gRPC), folded into
call trees, and read back through an HTTP API."""

from .grpc_server import GrpcServer, serve_grpc
from .http_server import serve_http
from .receiver import Receiver, Stats

__all__ = ["GrpcServer", "Receiver", "Stats", "serve_grpc", "serve_http"]
