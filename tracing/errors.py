"""Every error callctx raises on purpose derives from :class:`CallctxError`.

* :class:`NotFound` (a ``LookupError``) and :class:`BadInput` (a ``ValueError``): a reader's
  contract; ``callctx serve`` and the page answer them 404 and 400.
* :class:`ModelError`: a provider call failed (``status``, ``retryable``; the chat and agentic
  spans are marked as errors).
* :class:`OutputValidationError`: the model's answer did not fit the call's ``schema``, even
  after the retry that showed it the error.

The other errors are named where they are raised: ``LogError`` (``callctx.projection.log``),
``RegistryError`` (``callctx.components``), ``StoreError`` (``callctx.importers``)...
"""

from callctx.engine.execute import OutputValidationError
from callctx.models.base import ModelError
from callctx.projection.errors import BadInput, CallctxError, NotFound

__all__ = ["BadInput", "CallctxError", "ModelError", "NotFound", "OutputValidationError"]
