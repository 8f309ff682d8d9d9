"""The ``callctx`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _demo(args: argparse.Namespace) -> int:
    from . import demo

    demo.main()
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="callctx", description="Build what each LLM call sees from the agent's trace.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run the research agent offline and show the call tree as it grows")
    p.set_defaults(run=_demo)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
