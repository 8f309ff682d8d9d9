"""Context components and the registry that holds them.

A feature adds what the model should see by registering a component: a layer, an order
within the layer (more stable = smaller), a condition and a build function. The assembler
only applies the rules; it never changes to make room for a new component. Third-party
packages register theirs through the ``callctx.components`` entry-point group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Literal

from .ctx import Ctx

log = logging.getLogger("callctx.components")

Layer = Literal["L0", "L1", "L2"]
LAYERS: tuple[Layer, ...] = ("L0", "L1", "L2")
ENTRY_POINT_GROUP = "callctx.components"


def always(ctx: Ctx) -> bool:
    return True


@dataclass(frozen=True)
class ContextComponent:
    """One block of context.

    ``layer``: L0 is stable for the whole session (identity, guidance, tools), L1 changes
    with the project and grows with the call tree, L2 is this turn only. ``build`` returns
    the block's text, or None when there is nothing to say this time. ``cacheable=False``
    keeps the block out of the cached prefix: the cache breakpoint of its section moves in
    front of it. ``history=True`` marks the second layer's history (the call tree): it opens
    the messages instead of joining the system part, so the project part above it can be
    cached on its own while the history grows.
    """

    name: str
    layer: Layer
    order: int
    build: Callable[[Ctx], str | None]
    condition: Callable[[Ctx], bool] = always
    cacheable: bool = True
    history: bool = False

    def __post_init__(self) -> None:
        if self.layer not in LAYERS:
            raise ValueError(f"component {self.name!r}: layer must be one of {LAYERS}, not {self.layer!r}")
        if not self.name:
            raise ValueError("a component needs a name")


class RegistryError(ValueError):
    pass


class Registry:
    """The three layers of components, each kept in (order, name) order."""

    def __init__(self, components: Iterable[ContextComponent] = ()) -> None:
        self._by_name: dict[str, ContextComponent] = {}
        self._sorted: dict[Layer, list[ContextComponent]] | None = None
        for c in components:
            self.register(c)

    def register(self, component: ContextComponent, *, replace: bool = False) -> ContextComponent:
        if not isinstance(component, ContextComponent):
            raise TypeError(f"expected a ContextComponent, got {type(component).__name__}")
        if component.name in self._by_name and not replace:
            raise RegistryError(f"a component named {component.name!r} is already registered (pass replace=True)")
        self._by_name[component.name] = component
        self._sorted = None
        return component

    def unregister(self, name: str) -> ContextComponent:
        try:
            component = self._by_name.pop(name)
        except KeyError:
            raise RegistryError(f"no component named {name!r}") from None
        self._sorted = None
        return component

    def layer(self, layer: Layer) -> list[ContextComponent]:
        """The components of a layer, by order then name."""
        if self._sorted is None:
            self._sorted = {
                ly: sorted((c for c in self._by_name.values() if c.layer == ly), key=lambda c: (c.order, c.name))
                for ly in LAYERS
            }
        return self._sorted[layer]

    def get(self, name: str) -> ContextComponent | None:
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[ContextComponent]:
        for ly in LAYERS:
            yield from self.layer(ly)

    def __len__(self) -> int:
        return len(self._by_name)

    def copy(self) -> Registry:
        return Registry(self._by_name.values())

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[str]:
        """Register components published by installed packages; returns the names added.

        An entry point may name a component, an iterable of components, or a function taking
        the registry. A broken plugin is logged and skipped: it must not stop the agent.
        """
        added: list[str] = []
        for ep in entry_points(group=group):
            try:
                obj = ep.load()
                before = set(self._by_name)
                if isinstance(obj, ContextComponent):
                    self.register(obj)
                elif callable(obj):
                    obj(self)
                else:
                    for c in obj:
                        self.register(c)
                added.extend(sorted(set(self._by_name) - before))
            except Exception:
                log.exception("callctx: could not load context components from entry point %r", ep.value)
        return added
