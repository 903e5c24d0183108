"""Back ends: session specs and AG2 TransitionGraph knobs (`spec`, `knobs`)."""
