"""``setup()`` and the ``Runtime`` it returns.

``setup`` joins the TracerProvider the program already has (so spans from other
instrumentations fold into the same tree) or creates one, and adds the projection processor
to it: synchronous, never behind a batch processor. When an OTLP endpoint is configured it
also adds a batch exporter, whose network work never runs on the caller's thread, and
bounds how long the program waits for it at exit.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from callctx import environ
from callctx.components import Registry, default_registry, tokens
from callctx.components.assemble import prepare
from callctx.components.environment import detect
from callctx.components.inputs import (
    AgentInfo,
    Attachment,
    Ctx,
    DeferredTool,
    Sealed,
    SessionBinding,
    Skill,
    WorkspacePolicy,
)
from callctx.components.memory_store import MemoryBackend, MemoryTools
from callctx.engine.config import Config
from callctx.engine.execute import CallRecord, aexecute, execute, write_blobs
from callctx.engine.memory_tools import MemoryTool, memory_tools
from callctx.engine.tools import Tool, as_tools
from callctx.export import otel
from callctx.export.shaping import Shaper, ShapingExporter, ShapingProcessor
from callctx.instrument import active
from callctx.instrument.processor import ProjectionProcessor
from callctx.instrument.threads import check_uncarried
from callctx.models import Model, resolve
from callctx.projection import Projection, TreeView
from callctx.projection.fold import DEFAULT_OUTPUT_LIMIT
from callctx.projection.log import EventLog, FsyncPolicy
from callctx.projection.log_reader import blob_hashes

log = logging.getLogger(__name__)

COLLAPSE_TO = 0.6  # a collapse leaves the tree at this share of its budget
SEALED_PER_SESSION = 8  # the tree blocks of this many recent calls per session are reused
SEALED_SESSIONS = 256
LOG_BUFFER = 64 * 1024  # bytes of records the event log batches into one write (0: one write per record)


def _now() -> datetime:
    return datetime.now().astimezone()


class Runtime:
    """One agent program's view of its own execution: the live call tree, its log, its model."""

    def __init__(
        self,
        provider: TracerProvider,
        projection: Projection,
        processor: ProjectionProcessor,
        config: Config,
        *,
        session_id: str | None = None,
        owns_provider: bool = False,
        exit_timeout: float = 2.0,
    ) -> None:
        self.provider = provider
        self.projection = projection
        self.processor = processor
        self.config = config
        self.session_id = session_id
        self.owns_provider = owns_provider
        self.exit_timeout = exit_timeout
        self.tracer = provider.get_tracer(active.SCOPE)
        self.observers: list[Callable[[CallRecord], None]] = []
        self._calls = 0
        self._calls_lock = threading.Lock()
        self._blobs = blob_hashes(processor.log.path) if processor.log is not None else set()
        self._sent: set[str] = set()
        self.send_texts = False  # attach recorded texts to chat spans (set when spans are exported)
        self._closed = False
        self._sealed: OrderedDict[str, deque[Sealed]] = OrderedDict()  # per session: tree blocks sent
        self._memory_tools: tuple[object, dict[str, MemoryTool]] | None = None  # (backend, its tools by name)
        self._models: dict[str, Model] = {}  # provider:model specs named by calls and agents, resolved once
        # The one-time work of model calls (the tokenizer, the workspace files), done now, not in the first call.
        prepare(config.base.replace(model=config.model.params.model), config.registry)

    # ---- the call tree ---------------------------------------------------------------------
    @property
    def log_path(self) -> Path | None:
        return self.processor.log.path if self.processor.log is not None else None

    def current_span_id(self) -> str | None:
        """Hex id of the current span, or None outside any span."""
        ctx = trace.get_current_span().get_span_context()
        return format(ctx.span_id, "016x") if ctx.is_valid else None

    def start_span(self, name: str, attributes: dict[str, Any], context: Context | None = None) -> trace.Span:
        """Start a span of this runtime's tracer with attributes callctx built (a fresh dict of
        strings and numbers), as a child of ``context``'s span (default: the current one)."""
        check_uncarried(name, context, self.processor.running)
        return self.processor.start_span(self.tracer, name, context, attributes)

    def view(self, span_id: str, model: Model | None = None) -> TreeView:
        """The call tree ``span_id`` sees, within the tree budget (in the tokens of ``model``,
        default the runtime's): over it, the oldest finished calls collapse into one summary
        line each (recorded in the log, so replay agrees), down to ``COLLAPSE_TO`` of the budget
        so the next calls share their prefix again."""
        view = self.projection.view(span_id)
        budget = self.config.tree_budget
        if not budget:
            return view
        counter = tokens.counter(tokens.encoding_name_for((model or self.config.model).params.model))
        if counter.count_chunks(view.chunks) <= budget:
            return view
        for record in self.projection.plan_collapse(span_id, int(budget * COLLAPSE_TO), counter.count):
            self.processor.record(record)
        return self.projection.view(span_id)

    def call_tree(self, *, render_range: int | None = None) -> str:
        """The call tree (YAML) as the current call sees it.

        Outside any call: the tree of this runtime's session, or ``""`` when there is none.
        """
        span_id = self.current_span_id()
        if span_id is not None and span_id in self.projection.nodes:
            return self.projection.view(span_id, render_range=render_range).text
        if self.session_id is not None and self.session_id in self.projection.trees:
            return self.projection.session_tree(self.session_id, render_range=render_range)
        return ""

    # ---- model calls -----------------------------------------------------------------------
    def exec(
        self,
        prompt: str,
        *,
        schema: Any = None,
        tools: Sequence[Callable[..., Any]] = (),
        position: str | None = None,
        output: str | None = None,
        attachments: Sequence[Attachment] = (),
        agent: Any = None,
        stream: Callable[[str], Any] | None = None,
        model: Model | str | None = None,
    ) -> Any:
        """Ask the model from inside the current agentic call; returns its (validated) output.

        The context is assembled from the live call tree; ``tools`` are Python functions the
        model may call (an ``@agentic`` function is never offered to itself); ``schema`` (a
        msgspec type or Struct) validates the output, with one retry that shows the model the
        error. ``position`` / ``output`` override the call's declared position and output
        contract. ``stream`` receives the text as it arrives (what is recorded is the same).
        ``model`` (a client or ``provider:model``) asks another model for this call than the
        agent's (``Agent.model``) or the runtime's; the chat span records the model and who chose
        it (``callctx.model_choice``).
        Outside any agentic call, the call is a top-level conversation turn. From async code,
        use :meth:`aexec`: called inside a running event loop, ``exec`` raises.
        """
        return execute(
            self, prompt, schema=schema, tools=tools, position=position, output=output,
            attachments=attachments, agent=agent, stream=stream, model=model,
        )  # fmt: skip

    async def aexec(
        self,
        prompt: str,
        *,
        schema: Any = None,
        tools: Sequence[Callable[..., Any]] = (),
        position: str | None = None,
        output: str | None = None,
        attachments: Sequence[Attachment] = (),
        agent: Any = None,
        stream: Callable[[str], Any] | None = None,
        model: Model | str | None = None,
    ) -> Any:
        """:meth:`exec` for async code: the provider's async client; the tool calls of one
        model turn run concurrently (async tools awaited, sync ones in threads); ``stream``
        may be a coroutine function."""
        return await aexecute(
            self, prompt, schema=schema, tools=tools, position=position, output=output,
            attachments=attachments, agent=agent, stream=stream, model=model,
        )  # fmt: skip

    def model_of(self, spec: Model | str) -> Model:
        """A model client: ``spec`` itself, or the client for a ``provider:model`` spec (made
        once per runtime and spec, then shared by every call that names it). ``ValueError``
        for an unknown provider or a spec without a model, as :func:`setup` gives."""
        if not isinstance(spec, str):
            return spec
        with self._calls_lock:
            made = self._models.get(spec)
        if made is None:
            made = resolve(spec)
            with self._calls_lock:
                made = self._models.setdefault(spec, made)
        return made

    def on_call(self, observer: Callable[[CallRecord], None]) -> Callable[[CallRecord], None]:
        """Call ``observer`` after every model call (progress displays, tests)."""
        self.observers.append(observer)
        return observer

    def notify(self, call: CallRecord) -> None:
        for observer in list(self.observers):
            try:
                observer(call)
            except Exception:
                log.exception("callctx: a call observer failed")

    def next_call_index(self) -> int:
        with self._calls_lock:
            self._calls += 1
            return self._calls

    def deferred(self) -> dict[str, Tool]:
        """The tools listed by name only, runnable when the model asks for one: the memory tools
        (when memory is on and can run them) and the callables given as ``deferred_tools``."""
        out: dict[str, Tool] = {t.name: t for t in self.config.deferred}
        memory = self.config.base.memory
        if memory is not None:
            made = self._memory_tools
            if made is None or made[0] is not memory:  # built once per backend
                tools = {t.name: t for t in memory_tools(memory)} if isinstance(memory, MemoryTools) else {}
                made = self._memory_tools = (memory, tools)
            out.update(made[1])
        return out

    def sealed(self, key: str) -> tuple[Sealed, ...]:
        """The call-tree blocks the latest calls of session (or trace) ``key`` sent, newest first."""
        with self._calls_lock:
            kept = self._sealed.get(key)
            return tuple(reversed(kept)) if kept else ()

    def seal(self, key: str, sent: Sealed) -> None:
        """Remember the tree blocks a call sent, so the next calls send them again as they were."""
        with self._calls_lock:
            kept = self._sealed.get(key)
            if kept is None:
                kept = self._sealed[key] = deque(maxlen=SEALED_PER_SESSION)
                while len(self._sealed) > SEALED_SESSIONS:
                    self._sealed.popitem(last=False)
            self._sealed.move_to_end(key)
            kept.append(sent)

    def texts_to_send(self, blobs: dict[str, str]) -> dict[str, str]:
        """The texts an exporter has not carried yet (each goes out once per process)."""
        if not self.send_texts:
            return {}
        with self._calls_lock:
            new = {h: t for h, t in blobs.items() if h not in self._sent}
            self._sent.update(new)
        return new

    def store_blobs(self, blobs: dict[str, str]) -> None:
        """Write the texts of a recorded context the log does not hold yet."""
        event_log = self.processor.log
        if event_log is None or event_log.closed:
            return
        known = self._blobs
        if all(h in known for h in blobs):  # the usual case: a call sends again what the log holds
            return
        with self.projection.lock:
            try:
                write_blobs(event_log, known, blobs)
            except OSError as e:
                log.error("callctx: cannot record a context in %s: %s", event_log.path, e)

    # ---- lifecycle -------------------------------------------------------------------------
    def flush(self) -> bool:
        """Write the records the event log holds in memory (it batches them; see ``log_buffer``
        in :func:`setup`). ``True``: nothing waits (or there is no log)."""
        event_log = self.processor.log
        return event_log.flush() if event_log is not None and not event_log.closed else True

    def close(self) -> None:
        """Flush and close the log (and the exporter, within ``exit_timeout`` seconds)."""
        if self._closed:
            return
        self._closed = True
        active.deactivate(self)
        for server in self.config.mcp:
            try:
                server.close()
            except Exception:
                log.exception("callctx: closing an MCP server failed")
        if self.owns_provider:
            otel.shutdown_within(self.provider, self.exit_timeout)
        self.processor.shutdown()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def setup(
    log_path: str | os.PathLike[str] | None = None,
    *,
    model: Model | str | None = None,
    provider: TracerProvider | None = None,
    session_id: str | None = None,
    agent: AgentInfo | None = None,
    registry: Registry | None = None,
    channel: str = "webui",
    channel_limit: int | None = None,
    tools: Sequence[Callable[..., Any]] = (),
    skills: Sequence[Skill] = (),
    deferred_tools: Sequence[DeferredTool | Callable[..., Any]] = (),
    mcp: Sequence[Any] = (),
    memory: MemoryBackend | None = None,
    workspace: str | os.PathLike[str] | None = None,
    workspace_policy: WorkspacePolicy = "warn",
    cwd: str | os.PathLike[str] | None = None,
    clock: Callable[[], datetime] | None = None,
    endpoint: str | None = None,
    exit_timeout: float = 2.0,
    shape: Shaper | bool = True,
    send_texts: bool | None = None,
    capture_content: bool | None = None,
    max_tool_rounds: int = 8,
    tree_budget: int | None = None,
    fsync: FsyncPolicy = "never",
    log_buffer: int = LOG_BUFFER,
    output_limit: int | None = DEFAULT_OUTPUT_LIMIT,
    disable_plugins: Sequence[str] = (),
    exporters: Sequence[SpanExporter] = (),
    service_name: str | None = None,
) -> Runtime:
    """Start recording agentic calls; returns the active :class:`Runtime`.

    ``log_path`` (default ``$CALLCTX_LOG``, else no log) is the append-only event log the
    tree and every model call can be rebuilt from. ``model``: a client or ``provider:model``
    (default: the offline scripted model). ``provider``: the TracerProvider to join; by
    default the global one when it is an SDK provider, else a new one that becomes global;
    ``service_name`` names the service on a provider callctx creates, unless
    ``OTEL_SERVICE_NAME`` (or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``) names it.
    ``endpoint`` (or ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``) adds a batch OTLP exporter
    (``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf`` or ``grpc``); the program waits at
    most ``exit_timeout`` seconds for it at exit; ``shape`` redacts secrets and bounds sizes
    in everything that leaves the process: the exporter it adds, ``exporters`` (your own, added
    behind a batch processor) and, when it joins a provider, the processors already on it (the
    local log keeps everything); ``send_texts`` attaches the recorded texts of model calls to
    the chat spans so a remote ``callctx serve`` can rebuild them (default: when callctx itself
    exports, through an endpoint or ``exporters``; never by default to a provider it joined).
    ``cwd`` (default: the process's working directory) is the working directory the context
    names. ``session_id`` groups every root call of this runtime into one tree
    (``gen_ai.conversation.id``). ``clock`` returns the current time (the date block reads it;
    tests pin it). ``disable_plugins`` (and ``$CALLCTX_DISABLE_PLUGINS``) names
    context-component plugins not to load, by entry-point or distribution name. Every
    variable callctx reads is listed in :mod:`callctx.environ`. ``log_buffer``: bytes of
    records the log batches into one write (0: each record written at once); a batch is written
    when a model call starts and ends, when a record has waited a second, and at exit, so a
    killed process loses at most the records of its last second, never a sent request's (see
    the durability contract in :mod:`callctx.projection.log`).
    """
    env = environ.read()
    path = log_path if log_path is not None else env.log_path
    event_log = EventLog(path, fsync=fsync, buffer_bytes=log_buffer) if path else None
    projection = Projection(output_limit=output_limit)
    projection.source = path
    processor = ProjectionProcessor(projection, event_log)

    provider, owns = _provider(provider, service_name)
    shaper = shape if isinstance(shape, Shaper) else (Shaper() if shape else None)
    if not owns and shaper is not None:
        _shape_joined(provider, shaper)
    provider.add_span_processor(processor)
    exporting = False
    if owns:
        exporting = _add_exporter(provider, otel.exporter_from_settings(env, endpoint), shaper)
    for exporter in exporters:
        exporting = _add_exporter(provider, exporter, shaper) or exporting

    chosen = resolve(model)
    if registry is None:
        registry = default_registry(disable=(*env.disable_plugins, *disable_plugins))
    base = Ctx(
        agent=agent or AgentInfo(),
        channel=channel,
        channel_limit=channel_limit,
        skills=tuple(skills),
        deferred_tools=tuple(_catalog_entry(d) for d in deferred_tools),
        memory=memory,
        workspace=Path(workspace).resolve() if workspace is not None else None,
        workspace_policy=workspace_policy,
        cwd=Path(cwd).resolve() if cwd is not None else Path.cwd(),
        session=SessionBinding(session_id=session_id, model=chosen.params.model),
        environment=detect(env.home),
        clock=clock or _now,
    )
    runnable = tuple(as_tools([d for d in deferred_tools if not isinstance(d, DeferredTool)]))
    servers = tuple(mcp)
    config = Config(
        model=chosen,
        base=base,
        registry=registry,
        tools=(*tools, *_listed(servers)),
        deferred=runnable,
        mcp=servers,
        max_tool_rounds=max_tool_rounds,
        tree_budget=tree_budget,
        capture_content=env.capture_content if capture_content is None else capture_content,
    )
    rt = Runtime(
        provider, projection, processor, config, session_id=session_id, owns_provider=owns, exit_timeout=exit_timeout
    )
    rt.send_texts = exporting if send_texts is None else send_texts
    if owns:
        otel.close_at_exit(rt)
    active.activate(rt)
    return rt


def _catalog_entry(d: Any) -> DeferredTool:
    """A deferred tool as the catalog lists it (a callable or Tool: by its name and description)."""
    if isinstance(d, DeferredTool):
        return d
    t = as_tools([d])[0]
    return DeferredTool(t.name, t.spec.description)


def _listed(servers: Sequence[Any]) -> list[Tool]:
    """The tools of the MCP servers, for the tools block: sorted, a dead server skipped."""
    out: list[Tool] = []
    for server in servers:
        try:
            out.extend(server.tools())
        except Exception as e:  # noqa: BLE001 - a server that is down costs its tools, not the agent
            log.warning("callctx: MCP server %s is not reachable; its tools are not offered: %s", server, e)
    return sorted(out, key=lambda t: t.name)


def _provider(given: TracerProvider | None, service_name: str | None) -> tuple[TracerProvider, bool]:
    """The provider to add the projection to, and whether callctx created it: the one given,
    else the global SDK provider (unless it is one of ours), else a new one made global
    (named ``service_name`` unless the environment names the service)."""
    if given is not None:
        return given, False
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider) and not otel.owned(current):
        return current, False
    provider = otel.new_provider(service_name)
    if not isinstance(current, TracerProvider):
        trace.set_tracer_provider(provider)
    return provider, True


def _add_exporter(provider: TracerProvider, exporter: SpanExporter | None, shaper: Shaper | None) -> bool:
    """Add ``exporter`` (shaped) behind a batch processor; returns whether there was one."""
    if exporter is None:
        return False
    otel.add_batch_exporter(provider, ShapingExporter(exporter, shaper) if shaper is not None else exporter)
    return True


def _shape_joined(provider: TracerProvider, shaper: Shaper) -> None:
    """The processors a joined provider already has get shaped copies of spans from now on."""

    def wrap(p: SpanProcessor) -> SpanProcessor | None:
        return None if isinstance(p, (ProjectionProcessor, ShapingProcessor)) else ShapingProcessor(p, shaper)

    try:
        otel.wrap_processors(provider, wrap)
    except TypeError as e:
        log.warning("callctx: %s: its exporters get unshaped spans; pass them to setup(exporters=...) instead", e)
