"""The built-in components, registered in one registry."""

from __future__ import annotations

from collections.abc import Iterable

from . import environment, guidance, history, memory, tool_section, workspace
from .component import BUILTIN, ContextComponent, Registry

BUILTINS: tuple[ContextComponent, ...] = (
    *guidance.COMPONENTS,
    *memory.COMPONENTS,
    *environment.COMPONENTS,
    *workspace.COMPONENTS,
    *tool_section.COMPONENTS,
    *history.COMPONENTS,
)


def default_registry(*, plugins: bool = True, disable: Iterable[str] = ()) -> Registry:
    """A fresh registry with every built-in component, plus installed plugins' components
    (except those named in ``disable``, by entry-point or distribution name)."""
    registry = Registry(BUILTINS, origin=BUILTIN)
    if plugins:
        registry.load_entry_points(disable=disable)
    return registry
