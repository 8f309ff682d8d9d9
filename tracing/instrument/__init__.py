"""Instrumentation: what turns an agent's calls into spans and the spans into the live tree.

``@agentic`` and ``Agent`` (``decorator``, ``agent``), a call's arguments and result as span
attributes (``payload``), the span processor that feeds the projection synchronously
(``processor``), ``carry`` for threads (``threads``), and the one active runtime the
decorators report to (``active``).
"""
