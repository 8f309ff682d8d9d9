"""``callctx guard``: which context components move bytes inside the cached prefix."""

from __future__ import annotations

import argparse
from typing import TextIO

from .common import EXIT_MISMATCH, EXIT_OK, CliError


def cmd_guard(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import importlib

    from callctx.components.guard import check

    registry = None
    if args.registry:
        module, _, attr = args.registry.partition(":")
        try:
            obj = getattr(importlib.import_module(module), attr or "registry")
        except (ImportError, AttributeError) as e:
            raise CliError(f"cannot load the registry {args.registry!r}: {e}") from None
        registry = obj() if callable(obj) else obj
    report = check(registry)
    for note in report.notes:
        out.write(f"ok: {note}\n")
    for finding in report.findings:
        out.write(f"UNSTABLE: {finding}\n")
    out.write("the cached prefix is stable\n" if report.ok else f"{len(report.findings)} finding(s)\n")
    return EXIT_OK if report.ok else EXIT_MISMATCH


def register(sub: argparse._SubParsersAction) -> None:
    """The guard command."""
    p = sub.add_parser("guard", help="check that no context component moves bytes inside the cached prefix")
    p.add_argument("--registry", help="module:attribute of your Registry (or a function returning one)")
    p.set_defaults(run=cmd_guard)
