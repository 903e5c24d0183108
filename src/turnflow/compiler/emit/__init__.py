"""Back ends: what the compiler emits — session specs and AG2 knobs (`spec`,
`knobs`), and pictures (`picture`, `dot`, `mermaid`, `graph_json`)."""
