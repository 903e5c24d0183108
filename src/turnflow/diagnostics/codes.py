"""The catalogue of diagnostic codes as data: one row per code (code, kebab-case name, default
severity, stage, profile, home) and one constructor, `diagnostic()`.

`stage` says who emits the code:

| stage | emitted by | runs in |
|---|---|---|
| `read` | `turnflow.files` (TF000) | every command that reads a file |
| `parse` | `turnflow.dsl.parser` (TF001, and TF002 for values the grammar accepts but the type does not) | parse |
| `file` | a check over the whole file (`compiler/checks/`) | `turnflow check`, compile |
| `graph` | a check over one workflow block's speaker graph, only on blocks without errors | `turnflow check`, compile |
| `profile` | a check of one compile profile (`profile`) | `turnflow compile --profile P` only |
| `migrate` | `turnflow migrate` (positions in the migrated input) | migrate |
| `suppress` | the suppression pass (`diagnostics/suppress.py`) | `turnflow check`, compile |

`home` is the module that documents the code: for a check, the module whose `check` function
carries it (its docstring is the rule's documentation); for the others, a module-level `DOCS`
mapping of code to text in the stage's own module. Reading a name or severity never imports a
home; only the documentation (`turnflow rule`, SARIF) does. This module imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover  (this table is read by `turnflow --help`: no pydantic here)
    from turnflow.diagnostics.diagnostic import Diagnostic, Related
    from turnflow.source import Span

STAGES = ("read", "parse", "file", "graph", "profile", "migrate", "suppress")
CHECK_STAGES = ("file", "graph", "profile")


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: str
    stage: str
    home: str
    profile: Optional[str] = None


_C = "turnflow.compiler.checks."

CODES: tuple[Code, ...] = (
    Code("TF000", "unreadable-file", "error", "read", "turnflow.files"),
    Code("TF001", "syntax-error", "error", "parse", "turnflow.dsl.codes"),
    Code("TF002", "invalid-value", "error", "file", _C + "invalid_value"),
    Code("TF101", "duplicate-participant", "error", "file", _C + "duplicate_participant"),
    Code("TF102", "undeclared-participant", "error", "file", _C + "undeclared_participant"),
    Code("TF103", "missing-start", "error", "file", _C + "missing_start"),
    Code("TF104", "repeated-statement", "error", "file", _C + "repeated_statement"),
    Code("TF105", "participant-roles", "error", "file", _C + "participant_roles"),
    Code("TF106", "statement-not-allowed", "error", "file", _C + "statement_not_allowed"),
    Code("TF107", "conflicting-handoff", "error", "file", _C + "conflicting_handoff"),
    Code("TF110", "initiator-undeclared", "warning", "file", _C + "initiator_undeclared"),
    Code("TF111", "context-type-mismatch", "warning", "file", _C + "context_type"),
    Code("TF201", "never-ends", "error", "graph", _C + "never_ends"),
    Code("TF202", "trap", "error", "graph", _C + "trap"),
    Code("TF203", "unreachable-participant", "warning", "graph", _C + "unreachable_participant"),
    Code("TF204", "shadowed-rule", "warning", "graph", _C + "shadowed_rule"),
    Code("TF205", "unused-otherwise", "info", "graph", _C + "unused_otherwise"),
    Code("TF206", "unbounded-cycle", "warning", "graph", _C + "unbounded_cycle"),
    Code("TF207", "undeclared-tool", "warning", "graph", _C + "undeclared_tool"),
    Code("TF208", "uninitialised-context", "warning", "graph", _C + "uninitialised_context"),
    Code("TF209", "ends-only-by-cap", "warning", "graph", _C + "ends_only_by_cap"),
    Code("TF210", "cap-too-small", "warning", "graph", _C + "cap_too_small"),
    Code("TF211", "cap-never-binds", "info", "graph", _C + "cap_never_binds"),
    Code("TF301", "needs-ag2-extension", "error", "profile", _C + "ag2_builtin_profile", profile="ag2-builtin"),
    Code("TF401", "migrate-unsupported-input", "error", "migrate", "turnflow.migrate.codes"),
    Code("TF402", "migrate-renamed", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF403", "migrate-llm-selection", "info", "migrate", "turnflow.migrate.codes"),
    Code("TF404", "migrate-selection-method", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF405", "migrate-termination", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF406", "migrate-condition-approximated", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF407", "migrate-parallel-branches", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF408", "migrate-target-approximated", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF409", "migrate-ignored-setting", "info", "migrate", "turnflow.migrate.codes"),
    Code("TF410", "migrate-run-time-choice", "warning", "migrate", "turnflow.migrate.codes"),
    Code("TF901", "unused-suppression", "warning", "suppress", "turnflow.diagnostics.suppress"),
    Code("TF902", "unknown-suppression-code", "warning", "suppress", "turnflow.diagnostics.suppress"),
)

BY_CODE: dict[str, Code] = {c.code: c for c in CODES}
PROFILES: tuple[str, ...] = tuple(sorted({c.profile for c in CODES if c.profile}))


def lookup(code: str) -> Optional[Code]:
    """The row of `code` (case-insensitive), or None."""
    return BY_CODE.get(code.upper())


def diagnostic(code: str, message: str, span: Span, path: str = "<string>", *,
               related: tuple[Related, ...] = (), help: Optional[str] = None) -> Diagnostic:  # noqa: A002
    """The one constructor: name and severity come from the table; an unknown code is a bug."""
    from turnflow.diagnostics.diagnostic import Diagnostic

    row = BY_CODE[code]
    return Diagnostic(code=row.code, severity=row.severity, message=message, span=span, path=path,
                      name=row.name, related=tuple(related), help=help)
