"""callctx components: the context registry, the layered assembler and the built-in blocks."""

from .assemble import assemble
from .component import ContextComponent, Registry, RegistryError, always
from .context import Context, Problem, Segment
from .defaults import default_registry
from .inputs import AgentInfo, Attachment, Ctx, DeferredTool, Environment, SessionBinding, Skill, ToolSpec, Turn
from .memory_store import FileMemory, MemoryBackend

__all__ = [
    "AgentInfo",
    "Attachment",
    "Context",
    "ContextComponent",
    "Ctx",
    "DeferredTool",
    "Environment",
    "FileMemory",
    "MemoryBackend",
    "Problem",
    "Registry",
    "RegistryError",
    "Segment",
    "SessionBinding",
    "Skill",
    "ToolSpec",
    "Turn",
    "always",
    "assemble",
    "default_registry",
]
