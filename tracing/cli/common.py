"""Exit codes, the command line's error, and checks of its arguments shared by the commands."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from callctx.projection.errors import CallctxError
from callctx.projection.events import decode

EXIT_OK, EXIT_MISMATCH, EXIT_INPUT = 0, 1, 2


class CliError(CallctxError):
    def __init__(self, message: str, code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.code = code


def check_event_log(path: str) -> Path:
    """``path`` as an event log, or a :class:`CliError` (exit 2) saying why it is not one."""
    p = Path(path)
    if not p.is_file():
        raise CliError(f"no event log at {p}")
    try:
        with open(p, "rb") as f:
            first = f.readline(1 << 20)
    except OSError as e:
        raise CliError(f"cannot read {p}: {e.strerror}") from None
    if not first.strip():
        raise CliError(f"{p} is not a callctx event log (it is empty)")
    try:
        decode(first)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise CliError(f"{p} is not a callctx event log (its first line is not a callctx record: {e})") from None
    return p


def program() -> str:
    """How to run this command line again as the user can type it: ``callctx`` when it is on
    the PATH, else its path (``.venv/bin/callctx`` after ``make demo``)."""
    import os
    import shutil

    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    on_path = shutil.which("callctx")
    if here is None or here.name != "callctx" or (on_path and Path(on_path).resolve() == here):
        return "callctx"
    try:
        return os.path.relpath(here)
    except ValueError:
        return str(here)
