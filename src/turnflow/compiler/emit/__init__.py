"""Back ends: what the compiler emits — session specs and AG2 knobs (`spec`,
`knobs`), pictures (`picture`, `dot`, `mermaid`, `graph_json`), and other frameworks' code
(`targets`, with `constructs` and `pyroute`, which the writers in `turnflow/frameworks/<name>/` share)."""
