"""The ``callctx`` command line (``callctx.cli.main``)."""

from .main import main

__all__ = ["main"]
