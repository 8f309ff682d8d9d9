"""The exec engine: ``setup()`` and the ``Runtime`` it returns (``runtime``), one model call
and its tool loop (``execute``: the steps without IO, run by a blocking and an async driver),
the runtime's configuration (``config``), Python functions, memory and MCP servers as tools
(``tools``, ``memory_tools``, ``mcp``), and the ``opentelemetry-instrument`` hook (``hook``).
"""
