"""Where the agent runs: the machine and harness (first layer), then the project's working
directory, git flag, session binding and the date (second layer, the date last of all).

Nothing here runs a subprocess: the environment is read once per process, the git flag once
per directory (a walk up to the nearest ``.git``).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from .component import ContextComponent
from .inputs import Ctx, Environment

HARNESS = "callctx"


@functools.cache
def detect(state_dir: str | None = None) -> Environment:
    """This machine and harness, read once; ``state_dir`` defaults to ``~/.callctx`` (the
    runtime passes ``$CALLCTX_HOME`` here when it is set)."""
    system = platform.system() or "unknown"
    release = platform.release()
    shell = Path(os.environ.get("SHELL", "")).name or ("cmd" if os.name == "nt" else "sh")
    backend = "Docker" if Path("/.dockerenv").exists() else "local"
    state = state_dir or str(Path.home() / ".callctx")
    return Environment(os=f"{system} {release}".strip(), shell=shell, backend=backend, harness=HARNESS, state_dir=state)


def environment(ctx: Ctx) -> str:
    env = ctx.environment or detect()
    return (
        "<environment>\n"
        f"- OS: {env.os}  ·  Shell: {env.shell}\n"
        f"- Runtime: {env.backend}\n"
        f"- Harness: {env.harness}; its state lives in {env.state_dir} and belongs to the harness running "
        "you, not to the project you work on\n"
        "</environment>"
    )


def cwd(ctx: Ctx) -> str | None:
    """The working directory (the runtime always sets one: the process's, by default)."""
    path = ctx.cwd or ctx.workspace
    return f"<cwd>{path}</cwd>" if path else None


@functools.lru_cache(maxsize=256)
def in_git_repo(directory: str) -> bool:
    """Is ``directory`` inside a git work tree? A walk up to the nearest ``.git``, memoized."""
    p = Path(directory).resolve()
    return any((d / ".git").exists() for d in (p, *p.parents))


def git_repo_flag(ctx: Ctx) -> str:
    return "<git_repo>true</git_repo>"


def _git_condition(ctx: Ctx) -> bool:
    path = ctx.cwd or ctx.workspace
    return path is not None and in_git_repo(str(path))


def session_binding(ctx: Ctx) -> str | None:
    b = ctx.session
    fields = [
        f"{k}={v}"
        for k, v in (("session_id", b.session_id), ("model", b.model), ("thinking", b.thinking), ("tier", b.tier))
        if v
    ]
    return f"<session>\n{', '.join(fields)}\n</session>" if fields else None


def current_date(ctx: Ctx) -> str:
    """Day granularity: the only block that changes by itself, so it sits last before the tree."""
    d = ctx.clock()
    return f"Today is {_DAYS[d.weekday()]}, {_MONTHS[d.month - 1]} {d.day}, {d.year}."


# English names whatever the process locale: the model reads English prompts.
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


COMPONENTS = [
    ContextComponent("environment", "L0", 10, environment),
    ContextComponent("cwd", "L1", 6, cwd),
    ContextComponent("git_repo_flag", "L1", 7, git_repo_flag, condition=_git_condition),
    ContextComponent("session_binding", "L1", 8, session_binding),
    ContextComponent("current_date", "L1", 85, current_date),
]
