"""The errors callctx raises on purpose: one base class, and the two a reader answers with.

Every exception callctx defines derives from :class:`CallctxError`, so ``except
CallctxError`` catches what callctx raises and nothing a caller's own code raised. Two of them
are a reader's contract: :class:`NotFound` (a ``LookupError``: a call, trace, span or text
that does not exist; a server answers 404) and :class:`BadInput` (a ``ValueError``: a
parameter or a body that is malformed or out of range; a server answers 400). Their message
is one line, meant for the person who asked.
"""

from __future__ import annotations


class CallctxError(Exception):
    """Base of every error callctx raises on purpose."""


class NotFound(CallctxError, LookupError):
    """What was asked for does not exist (a reader answers 404)."""

    def __str__(self) -> str:  # LookupError's subclass KeyError quotes; this one never does
        return str(self.args[0]) if self.args else "not found"


class BadInput(CallctxError, ValueError):
    """A parameter or a body that is malformed or out of range (a reader answers 400)."""


__all__ = ["BadInput", "CallctxError", "NotFound"]
