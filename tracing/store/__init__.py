"""The read model: what every reader (the CLI, ``callctx serve``'s read API, the page) asks
of a trace, and where it is answered from."""
