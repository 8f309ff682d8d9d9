"""callctx components: the context registry and assembler (built on the projection's call tree)."""
