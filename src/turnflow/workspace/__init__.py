"""What turnflow reads from the user's workspace: `files` (finding `.flow` files, reading any
input with one size limit, atomic writes), `config` (`turnflow.toml` / `pyproject.toml` settings),
`ignore` (`.gitignore`-style exclusion) and `globs` (the patterns both use)."""
