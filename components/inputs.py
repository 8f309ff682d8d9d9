"""``Ctx``: everything a context component may read, typed and immutable.

Components are pure functions of a ``Ctx``: the same ``Ctx`` gives the same bytes. Whatever
varies (the clock, memory, files on disk) comes in through a field here, so tests can pin it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from callctx.projection.view import TreeView

if TYPE_CHECKING:
    from .memory_store import MemoryBackend


class AgentInfo(msgspec.Struct, frozen=True):
    """Who the model is: the agent's name, id, a one-line role and an optional inline prompt."""

    name: str = "agent"
    agent_id: str = "main"
    description: str | None = None
    inline_prompt: str | None = None


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool offered to the model: name, description and JSON schema of its parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})


class DeferredTool(msgspec.Struct, frozen=True):
    """A tool listed by name only; its schema loads when the model asks for it."""

    name: str
    description: str = ""


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str = ""


class SessionBinding(msgspec.Struct, frozen=True):
    """What this conversation is bound to."""

    session_id: str | None = None
    model: str | None = None
    thinking: str | None = None
    tier: str | None = None


class Environment(msgspec.Struct, frozen=True):
    """The machine and the harness running the agent (see ``components.environment.detect``)."""

    os: str = ""
    shell: str = ""
    backend: str = "local"
    harness: str = "callctx"
    state_dir: str = ""


class Attachment(msgspec.Struct, frozen=True):
    """A file handed to this turn: text is inlined, other media go to the wire as they are."""

    name: str
    mime: str = "text/plain"
    text: str | None = None
    data: bytes | None = None


class Sealed(msgspec.Struct, frozen=True):
    """The call-tree blocks one call sent, the index of the block its cache breakpoint closed
    and of the one its second breakpoint closed (None: none): what later calls of the session
    send again, byte for byte, and where they may find its cache entries (``components.sealed``)."""

    blocks: tuple[str, ...]
    breakpoint: int
    parent: int | None = None


class Turn(msgspec.Struct, frozen=True):
    """The turn inputs: what changes on every call and is never cached.

    ``function`` is None outside any agentic call (a top-level conversation turn): then there
    is no situation block.
    """

    function: str | None = None
    doc: str | None = None
    call_path: list[str] = msgspec.field(default_factory=list)
    position: str | None = None
    output_contract: str | None = None
    prefetch: str | None = None  # recalled memory for this turn
    prefetch_failed: bool = False  # recall raised: say so instead of staying silent
    user_input: str = ""
    attachments: list[Attachment] = msgspec.field(default_factory=list)
    output_schema: dict[str, Any] | None = None


WorkspacePolicy = Literal["warn", "block"]


def _now() -> datetime:
    return datetime.now().astimezone()


@dataclass(frozen=True)
class Ctx:
    """The inputs of one assembly."""

    agent: AgentInfo = field(default_factory=AgentInfo)
    provider: str = "openai"
    model: str = ""
    channel: str = "webui"
    channel_limit: int | None = None  # characters, for channels with a hard cap (sms)
    tools: tuple[ToolSpec, ...] = ()
    deferred_tools: tuple[DeferredTool, ...] = ()
    skills: tuple[Skill, ...] = ()
    memory: MemoryBackend | None = None
    workspace: Path | None = None
    workspace_policy: WorkspacePolicy = "warn"
    cwd: Path | None = None
    session: SessionBinding = field(default_factory=SessionBinding)
    environment: Environment | None = None
    clock: Callable[[], datetime] = _now
    call_tree: TreeView | None = None
    sealed: tuple[Sealed, ...] = ()  # the tree blocks earlier calls of this session sent (see sealed.py)
    turn: Turn = field(default_factory=Turn)

    def replace(self, **changes: Any) -> Ctx:
        if type(self) is not Ctx or not _FIELDS.issuperset(changes):
            return dataclasses.replace(self, **changes)  # (it names what is wrong)
        new = object.__new__(Ctx)  # what dataclasses.replace makes, without a call per field
        attrs = new.__dict__
        attrs.update(self.__dict__)
        attrs.update(changes)
        return new


_FIELDS = frozenset(f.name for f in dataclasses.fields(Ctx))
