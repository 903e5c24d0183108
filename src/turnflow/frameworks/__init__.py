"""What turnflow knows about each agent framework, one folder per framework: `ag2/`, `autogen/`,
`langgraph/` (ARCHITECTURE.md, "frameworks"). A folder keeps both directions side by side, as a SQL
dialect keeps its parser and generator together, so a round trip reads in one folder and a new
framework is one new folder (plus one row in each stage's dispatcher). Its modules, by part:

- `reader*.py`: `turnflow migrate` of the framework's own code into `.flow` (the migrate stage:
  `turnflow.migrate`'s shared machinery, the DSL's AST and printer);
- `writer*.py`: `turnflow compile --target` (or `--profile`) into the framework's code, from the
  compiled session spec (the compiler stage: `compiler.emit`'s shared parts, `turnflow.spec`);
- `check*.py`: the TF3xx check refusing, at the construct, what a writer cannot express exactly
  (the compiler stage; imported by `compiler.checks`);
- `participant.py`: `kind: <framework>` in an agents file, the framework's own agent loop taking a
  turn, and `history.py`, the transcript as its messages (the runtime stage: `turnflow.runtime` only);
- `interop.py`: what a framework's own process loads to run turnflow's output (`turnflow.spec` only).

Each part is loaded by its stage's dispatcher, only when named: `migrate.detect` / `migrate.migrate`
(readers), `compiler.emit.targets.WRITERS` (writers), `compiler.checks` (checks),
`runtime.agents.config.FRAMEWORKS` (participants). The packages themselves import nothing.
tests/test_boundaries.py holds every part to its stage, forbids imports between frameworks, and
checks that each folder has its parts and that its docstring names each of its modules."""
