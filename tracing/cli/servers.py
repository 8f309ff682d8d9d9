"""``callctx serve`` and ``callctx ui``: the OTLP receiver with its read API, and the debugger page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from callctx.projection.errors import CallctxError

from .common import EXIT_OK, CliError, add_source, check_event_log, open_source


def cmd_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os
    import signal
    import threading

    from callctx.serve import Receiver, Receiving, TableReceiver, serve_grpc, serve_http
    from callctx.serve.ingest import tune_collector

    token = args.token or os.environ.get("CALLCTX_TOKEN") or None
    for name in ("max_body", "max_connections", "max_traces"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1")
    if not args.read_timeout > 0:
        raise CliError("--read-timeout must be a positive number of seconds")
    rx: Receiving
    if args.store:
        from callctx.store.clickhouse import ClickHouseStore
        from callctx.store.connection import parse

        try:
            store = ClickHouseStore.open(parse(args.store), create=True, max_trees=args.max_traces)
        except CallctxError as e:
            raise CliError(str(e)) from None
        try:
            rx = TableReceiver(store, max_body=args.max_body, token=token, allow_hosts=args.allow_host,
                               ack=args.ack, spool=args.spool)  # fmt: skip
        except CallctxError as e:
            store.close()
            raise CliError(str(e)) from None
        except OSError as e:
            store.close()
            raise CliError(f"cannot use the spool {args.spool}: {e.strerror or e}") from None
    else:
        try:
            rx = Receiver(
                args.log, max_body=args.max_body, token=token, max_trees=args.max_traces, allow_hosts=args.allow_host
            )
        except (CallctxError, OSError) as e:
            raise CliError(f"cannot use the event log {args.log}: {getattr(e, 'strerror', None) or e}") from None
    try:
        limits = {"read_timeout": args.read_timeout, "max_connections": args.max_connections}
        http = serve_http(rx, args.host, args.port, **limits)
    except OSError as e:
        rx.close()
        raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    out.write(f"callctx serve: OTLP/HTTP and the read API on http://{args.host}:{http.server_port}\n")
    grpc_server = None
    if args.grpc_port >= 0:
        try:
            if args.grpc_port:
                _check_free(args.host, args.grpc_port)  # gRPC's own failure is a log line of its C core, then ours
            grpc_server = serve_grpc(rx, args.host, args.grpc_port, max_concurrent_rpcs=args.max_connections)
        except (OSError, RuntimeError) as e:
            http.shutdown()
            rx.close()
            raise CliError(
                f"cannot listen for OTLP/gRPC on {args.host}:{args.grpc_port}: {getattr(e, 'strerror', None) or e}"
            ) from None
        out.write(f"callctx serve: OTLP/gRPC on {args.host}:{grpc_server.port}\n")
    if isinstance(rx, TableReceiver):
        answered = f"the spool {rx.spool}" if rx.spool is not None else "the table"
        kept = f"store: {rx.store.state().source}, requests answered once in {answered}"
    else:
        kept = f"event log: {args.log}"
    out.write(f"{kept}{' (bearer token required)' if token else ''}\n")
    out.flush()
    tune_collector()  # this process is a server from here on
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    http.shutdown()
    if grpc_server is not None:
        grpc_server.stop(1.0)
    rx.close()
    out.write("callctx serve: stopped\n")
    return EXIT_OK


def _check_free(host: str, port: int) -> None:
    """``OSError`` when ``host:port`` cannot be listened on (another process holds it)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    socket.create_server((host, port), family=family).close()


def cmd_ui(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os
    import signal
    import threading
    import webbrowser

    from callctx.export.shaping import Shaper
    from callctx.serve.http_server import Access
    from callctx.store.clickhouse import ClickHouseStore
    from callctx.store.local import LocalStore
    from callctx.ui import Views
    from callctx.ui.server import serve_page

    store: LocalStore | ClickHouseStore
    if args.store:
        store = open_source(args, err)
        where, waiting = store.state().source, ""
    else:
        if not args.log:
            raise CliError("say what to show: an event log, or --store URL")
        path = Path(args.log)
        if path.is_dir():
            raise CliError(f"{path} is a folder, not an event log")
        if path.exists() and path.stat().st_size:
            check_event_log(args.log)
        elif not path.parent.is_dir():
            raise CliError(f"no folder {path.parent} for the event log {path}")
        store = LocalStore(path)
        store.refresh()
        where, waiting = str(path), "" if path.exists() else " (waiting for the log to appear)"
    store.follow()  # the page's cache ledger is ready before it is asked for
    shape = None if args.raw else Shaper().redact
    token = args.token or os.environ.get("CALLCTX_TOKEN") or None
    access = Access.of(token, args.allow_host, served=args.host)
    try:
        server = serve_page(Views(store, wait_for_cache=False), args.host, args.port, shape=shape, access=access)
    except OSError as e:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror}") from None
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{server.server_port}/ui/"
    opened = f"{url}?token=…" if token else url
    out.write(f"callctx ui: {opened}  ({where}{waiting}; Ctrl-C stops)\n")
    if args.host not in ("127.0.0.1", "localhost", "::1") and not token:
        err.write(f"warning: the page is open to anyone who can reach {args.host}; give it a --token\n")
    out.flush()
    if args.open:
        webbrowser.open(url)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.shutdown()
    store.close()
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    """The serve, ui commands."""
    p = sub.add_parser("serve", help="receive OTLP spans (HTTP and gRPC) and serve the call trees they fold into")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=4318, help="OTLP/HTTP and read API port (default 4318)")
    p.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (default 4317; -1 to turn off)")
    p.add_argument("--log", default="callctx-received.jsonl", help="the receiver's event log")
    p.add_argument("--store", metavar="URL",
                   help="keep spans in a ClickHouse traces table instead of a log, as the Collector's clickhouse "
                        "exporter writes them, and serve reads from it (no state of its own): chdb:PATH or "
                        "clickhouse://[user:password@]host:8123/database?table=otel_traces")  # fmt: skip
    p.add_argument(
        "--ack",
        choices=("spool", "table"),
        default="spool",
        help="with --store, answer a request once its spans are in the local spool (default; the "
        "writer moves them to the table, a restart finishes what a kill left), or only once "
        "they are in the table (nothing kept on this machine; each sender waits for an insert)",
    )
    p.add_argument("--spool", default="callctx-spool", metavar="DIR",
                   help="with --store --ack spool, the folder of spans acknowledged and not yet in the table "
                        "(default: callctx-spool)")  # fmt: skip
    p.add_argument("--token", help="require 'Authorization: Bearer TOKEN' (default: $CALLCTX_TOKEN)")
    p.add_argument("--max-body", type=int, default=16 << 20, help="largest request body in bytes, decompressed")
    p.add_argument("--read-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="time for a whole HTTP request (headers and body) to arrive, idle keep-alive included; "
                        "slower connections are closed (default 10)")  # fmt: skip
    p.add_argument("--max-connections", type=int, default=256, metavar="N",
                   help="HTTP connections served at once (more get 503 with Retry-After) and gRPC calls "
                        "in progress (more get RESOURCE_EXHAUSTED) (default 256)")  # fmt: skip
    p.add_argument("--max-traces", type=int, default=1000, metavar="N",
                   help="call trees kept folded in memory for reads; the least recently read leave first "
                        "(every tree is folded again from the log when asked for) (default 1000)")  # fmt: skip
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name to answer besides this machine's (loopback names and addresses); "
                        "repeat for more (every other name is refused: DNS rebinding)")  # fmt: skip
    p.set_defaults(run=cmd_serve)
    p = sub.add_parser("ui", help="the debugger page for an event log or a store (live while it grows)")
    add_source(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=4320, help="port (default 4320; 0 picks a free one)")
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    p.add_argument("--raw", action="store_true", help="show texts as recorded (default: secrets redacted)")
    p.add_argument("--token", help="require this token: open the page once as /ui?token=TOKEN (default: "
                   "$CALLCTX_TOKEN)")  # fmt: skip
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides this machine's; repeat for more",
    )
    p.set_defaults(run=cmd_ui)
