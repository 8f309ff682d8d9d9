"""The ``callctx`` command line run in-process, as a test reads it."""

from __future__ import annotations

import io

from callctx.cli.main import main


def cli(*args: object) -> tuple[int, str, str]:
    """(exit code, standard output, standard error) of ``callctx ARGS...``."""
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in args], out, err)
    return code, out.getvalue(), err.getvalue()


def cli_ok(*args: object) -> str:
    """The standard output of a ``callctx`` command that must succeed."""
    code, out, err = cli(*args)
    assert code == 0, err
    return out
