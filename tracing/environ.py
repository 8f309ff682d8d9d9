"""The environment variables callctx reads, all of them, in one place.

Read once per :func:`read` call (``setup()`` and the command line call it); nothing else in
callctx looks at ``os.environ`` for ``CALLCTX_*`` or ``OTEL_*`` names. The official OTLP
exporter and the SDK's ``Resource`` also read their own variables themselves
(``OTEL_EXPORTER_OTLP_HEADERS``, ``..._TIMEOUT``, ``..._COMPRESSION``, ``..._CERTIFICATE``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``); callctx passes them through untouched.

* ``CALLCTX_LOG`` (none): the event log ``setup()`` writes when no ``log_path`` is given.
* ``CALLCTX_TOKEN`` (none): the bearer token ``callctx serve`` requires when no ``--token``
  is given.
* ``CALLCTX_DISABLE_PLUGINS`` (none): comma-separated entry-point or distribution names of
  context-component plugins not to load.
* ``CALLCTX_HOME`` (``~/.callctx``): the harness's state directory, named in the
  environment block.
* ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` (none): where spans
  are exported; unset, nothing is exported.
* ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, ``OTEL_EXPORTER_OTLP_PROTOCOL``
  (``http/protobuf``): ``http/protobuf`` or ``grpc``.
* ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (false): also write
  ``gen_ai.input.messages`` etc. on chat spans.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

LOG = "CALLCTX_LOG"
TOKEN = "CALLCTX_TOKEN"
DISABLE_PLUGINS = "CALLCTX_DISABLE_PLUGINS"
HOME = "CALLCTX_HOME"
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = ("1", "true", "yes", "span_only", "span_and_event")


class Settings(msgspec.Struct, frozen=True):
    """What the environment says (see the module docstring for each variable)."""

    log_path: str | None = None
    token: str | None = None
    disable_plugins: tuple[str, ...] = ()
    home: str = ""
    otlp_endpoint: str | None = None  # the base endpoint (the exporter appends /v1/traces)
    otlp_traces_endpoint: str | None = None  # the full traces URL
    otlp_protocol: str = "http/protobuf"
    capture_content: bool = False

    @property
    def exporting(self) -> bool:
        """Is an OTLP endpoint configured?"""
        return bool(self.otlp_endpoint or self.otlp_traces_endpoint)


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def read(env: Mapping[str, str] | None = None) -> Settings:
    """The settings from ``env`` (default: the process environment)."""
    env = os.environ if env is None else env
    plugins = tuple(p.strip() for p in env.get(DISABLE_PLUGINS, "").split(",") if p.strip())
    return Settings(
        log_path=env.get(LOG) or None,
        token=env.get(TOKEN) or None,
        disable_plugins=plugins,
        home=env.get(HOME) or str(Path.home() / ".callctx"),
        otlp_endpoint=_first(env, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        otlp_traces_endpoint=_first(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        otlp_protocol=_first(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf",
        capture_content=env.get(CAPTURE_CONTENT, "").strip().lower() in _TRUE,
    )
