"""The built-in components, registered in one registry."""

from __future__ import annotations

from . import environment, guidance, history, memory, tools, workspace
from .component import ContextComponent, Registry

BUILTINS: tuple[ContextComponent, ...] = (
    *guidance.COMPONENTS,
    *memory.COMPONENTS,
    *environment.COMPONENTS,
    *workspace.COMPONENTS,
    *tools.COMPONENTS,
    *history.COMPONENTS,
)


def default_registry(*, plugins: bool = True) -> Registry:
    """A fresh registry with every built-in component, plus installed plugins' components."""
    registry = Registry(BUILTINS)
    if plugins:
        registry.load_entry_points()
    return registry
