"""Tools as the model sees them: full schemas in the tools section, and a catalog of deferred
tools listed by name only (their schemas load when the model asks for them)."""

from __future__ import annotations

from typing import Any

from .component import ContextComponent
from .inputs import Ctx


def schemas(ctx: Ctx) -> list[dict[str, Any]]:
    """Provider-neutral tool schemas, in the order given."""
    return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in ctx.tools]


def deferred_names(ctx: Ctx) -> list[str]:
    names = [t.name for t in ctx.deferred_tools]
    if ctx.memory is not None:
        names.extend(n for n in ctx.memory.tools if n not in names)
    return names


def deferred_catalog(ctx: Ctx) -> str | None:
    names = deferred_names(ctx)
    if not names:
        return None
    described = {t.name: t.description for t in ctx.deferred_tools if t.description}
    lines = [f"Available on request (their schemas load when you call them): {', '.join(names)}"]
    lines.extend(f"- {name}: {desc}" for name, desc in described.items())
    return "<deferred_tools>\n" + "\n".join(lines) + "\n</deferred_tools>"


COMPONENTS = [
    ContextComponent("deferred_catalog", "L1", 25, deferred_catalog),
]
