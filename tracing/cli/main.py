"""The ``callctx`` command line: one module per command group registers its commands.

Exit codes: 0 done; 1 a recorded request could not be rebuilt or did not verify; 2 bad
input (no such log, not an event log, a call number out of range, an unknown provider).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TextIO

from . import cache, demo, guard, read, servers, transfer
from .common import EXIT_OK, CliError

COMMANDS = (demo, read, cache, guard, servers, transfer)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="callctx", description="Build what each LLM call sees from the agent's trace.")
    sub = ap.add_subparsers(dest="command", required=True)
    for group in COMMANDS:
        group.register(sub)
    return ap


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    # damage and unknown models are reported here, once, not by the reader and the simulator too
    quiet = [logging.getLogger("callctx.projection.log"), logging.getLogger("callctx.components.cache")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        return args.run(args, out, err)
    except CliError as e:
        err.write(f"callctx: {e}\n")
        return e.code
    except BrokenPipeError:  # `callctx ... | head`
        return EXIT_OK
    finally:
        for q, level in zip(quiet, levels, strict=True):
            q.setLevel(level)
