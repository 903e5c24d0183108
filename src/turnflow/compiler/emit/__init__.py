"""Back ends: what the compiler emits from the IR (pictures, session specs)."""
