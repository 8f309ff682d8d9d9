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

from callctx.projection.errors import CallctxError

from .context import TreeText
from .inputs import Ctx

log = logging.getLogger(__name__)

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
    build: Callable[[Ctx], str | TreeText | None]
    condition: Callable[[Ctx], bool] = always
    cacheable: bool = True
    history: bool = False

    def __post_init__(self) -> None:
        if self.layer not in LAYERS:
            raise ValueError(f"component {self.name!r}: layer must be one of {LAYERS}, not {self.layer!r}")
        if not self.name:
            raise ValueError("a component needs a name")


class RegistryError(CallctxError, ValueError):
    pass


BUILTIN = "callctx"
"""The origin of the built-in components."""


class Registry:
    """The three layers of components, each kept in (order, name) order.

    Every change validates first and then mutates: a registration that fails leaves the
    registry as it was. Each component remembers where it came from (``origin``: the
    distribution that published it, ``callctx`` for the built-ins, None for ones registered
    by hand), so a failing component is reported with its source. Not thread-safe: build a
    registry, then share it read-only.
    """

    def __init__(self, components: Iterable[ContextComponent] = (), *, origin: str | None = None) -> None:
        self._by_name: dict[str, ContextComponent] = {}
        self._origins: dict[str, str] = {}
        self._sorted: dict[Layer, list[ContextComponent]] | None = None
        for c in components:
            self.register(c, origin=origin)

    def register(
        self, component: ContextComponent, *, replace: bool = False, origin: str | None = None
    ) -> ContextComponent:
        if not isinstance(component, ContextComponent):
            raise TypeError(f"expected a ContextComponent, got {type(component).__name__}")
        if component.name in self._by_name and not replace:
            raise RegistryError(f"a component named {component.name!r} is already registered (pass replace=True)")
        self._by_name[component.name] = component
        if origin is not None:
            self._origins[component.name] = origin
        else:
            self._origins.pop(component.name, None)
        self._sorted = None
        return component

    def unregister(self, name: str) -> ContextComponent:
        try:
            component = self._by_name.pop(name)
        except KeyError:
            raise RegistryError(f"no component named {name!r}") from None
        self._origins.pop(name, None)
        self._sorted = None
        return component

    def origin(self, name: str) -> str | None:
        """Where the component ``name`` came from (a distribution, ``callctx``, or None)."""
        return self._origins.get(name)

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
        new = Registry()
        new._by_name = dict(self._by_name)
        new._origins = dict(self._origins)
        return new

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP, *, disable: Iterable[str] = ()) -> list[str]:
        """Register components published by installed packages; returns the names added.

        An entry point may name a component, an iterable of components, or a function taking
        the registry. Loading one is all-or-nothing: a plugin that raises (or names a
        component twice) leaves nothing of its own registered, is logged with its
        distribution, and the agent goes on. ``disable`` skips plugins by entry-point name or
        by distribution name.
        """
        blocked = set(disable)
        added: list[str] = []
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            dist_name = dist.name if dist is not None else None
            if ep.name in blocked or (dist_name is not None and dist_name in blocked):
                log.info("callctx: context-component plugin %r (%s) disabled", ep.name, dist_name or "?")
                continue
            origin = f"{dist_name} {dist.version}" if dist is not None else ep.value
            try:
                staged = self._staged(ep.load(), origin)
            except Exception:
                log.exception("callctx: plugin %r (%s) failed; none of its components registered", ep.name, origin)
                continue
            self._by_name, self._origins, self._sorted = staged._by_name, staged._origins, None
            added.extend(n for n in staged._by_name if staged._origins.get(n) == origin)
        return sorted(set(added))

    def _staged(self, obj: object, origin: str) -> Registry:
        """This registry with a plugin's components added, or an exception (self untouched)."""
        staged = self.copy()
        if isinstance(obj, ContextComponent):
            staged.register(obj, origin=origin)
        elif callable(obj):
            before = dict(staged._by_name)
            obj(staged)
            for name, c in staged._by_name.items():
                if before.get(name) is not c:
                    staged._origins[name] = origin
        else:
            for c in obj:  # type: ignore[attr-defined]
                staged.register(c, origin=origin)
        return staged
