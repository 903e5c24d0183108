"""The catalogue of diagnostic codes as data: one row per code (code, kebab-case name, default
severity, stage, profile, home) and one constructor, `diagnostic()`.

`severity` is a `Severity`, `stage` a `Stage` (enums of plain words: they compare, print and
encode as the strings `"error"`, `"graph"`, ...). `stage` says who emits the code:

| stage | emitted by | runs in |
|---|---|---|
| `read` | `turnflow.workspace.files` (TF000) | every command that reads a file |
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
from enum import Enum
from typing import TYPE_CHECKING, Optional
from turnflow.diagnostics.diagnostic import Diagnostic

if TYPE_CHECKING:  # pragma: no cover  (this table is read by `turnflow --help`: no pydantic here)
    from turnflow.diagnostics.diagnostic import Diagnostic, Related
    from turnflow.source import Span

class _Word(str, Enum):
    """An enum whose members are their words: equal to, hashed, printed, formatted and
    JSON-encoded as the plain string (so output that shows them does not change)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Severity(_Word):
    """A code's default severity (`turnflow.toml` may change it per project)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Stage(_Word):
    """Who emits a code (the table in this module's documentation)."""

    READ = "read"
    PARSE = "parse"
    FILE = "file"
    GRAPH = "graph"
    PROFILE = "profile"
    MIGRATE = "migrate"
    SUPPRESS = "suppress"


STAGES: tuple[Stage, ...] = tuple(Stage)
CHECK_STAGES: tuple[Stage, ...] = (Stage.FILE, Stage.GRAPH, Stage.PROFILE)


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: Severity
    stage: Stage
    home: str
    profile: Optional[str] = None


_C = "turnflow.compiler.checks."

CODES: tuple[Code, ...] = (
    Code("TF000", "unreadable-file", Severity.ERROR, Stage.READ, "turnflow.workspace.files"),
    Code("TF001", "syntax-error", Severity.ERROR, Stage.PARSE, "turnflow.dsl.syntax_rule"),
    Code("TF002", "invalid-value", Severity.ERROR, Stage.FILE, _C + "invalid_value"),
    Code("TF101", "duplicate-participant", Severity.ERROR, Stage.FILE, _C + "duplicate_participant"),
    Code("TF102", "undeclared-participant", Severity.ERROR, Stage.FILE, _C + "undeclared_participant"),
    Code("TF103", "missing-start", Severity.ERROR, Stage.FILE, _C + "missing_start"),
    Code("TF104", "repeated-statement", Severity.ERROR, Stage.FILE, _C + "repeated_statement"),
    Code("TF105", "participant-roles", Severity.ERROR, Stage.FILE, _C + "participant_roles"),
    Code("TF106", "statement-not-allowed", Severity.ERROR, Stage.FILE, _C + "statement_not_allowed"),
    Code("TF107", "conflicting-handoff", Severity.ERROR, Stage.FILE, _C + "conflicting_handoff"),
    Code("TF110", "initiator-undeclared", Severity.WARNING, Stage.FILE, _C + "initiator_undeclared"),
    Code("TF111", "context-type-mismatch", Severity.WARNING, Stage.FILE, _C + "context_type"),
    Code("TF201", "never-ends", Severity.ERROR, Stage.GRAPH, _C + "never_ends"),
    Code("TF202", "trap", Severity.ERROR, Stage.GRAPH, _C + "trap"),
    Code("TF203", "unreachable-participant", Severity.WARNING, Stage.GRAPH, _C + "unreachable_participant"),
    Code("TF204", "shadowed-rule", Severity.WARNING, Stage.GRAPH, _C + "shadowed_rule"),
    Code("TF205", "unused-otherwise", Severity.INFO, Stage.GRAPH, _C + "unused_otherwise"),
    Code("TF206", "unbounded-cycle", Severity.WARNING, Stage.GRAPH, _C + "unbounded_cycle"),
    Code("TF207", "undeclared-tool", Severity.WARNING, Stage.GRAPH, _C + "undeclared_tool"),
    Code("TF208", "uninitialised-context", Severity.WARNING, Stage.GRAPH, _C + "uninitialised_context"),
    Code("TF209", "ends-only-by-cap", Severity.WARNING, Stage.GRAPH, _C + "ends_only_by_cap"),
    Code("TF210", "cap-too-small", Severity.WARNING, Stage.GRAPH, _C + "cap_too_small"),
    Code("TF211", "cap-never-binds", Severity.INFO, Stage.GRAPH, _C + "cap_never_binds"),
    Code("TF212", "impossible-condition", Severity.WARNING, Stage.GRAPH, _C + "impossible_condition"),
    Code("TF213", "initiator-never-speaks", Severity.INFO, Stage.GRAPH, _C + "initiator_never_speaks"),
    Code("TF301", "needs-ag2-extension", Severity.ERROR, Stage.PROFILE, "turnflow.frameworks.ag2.check_builtin", profile="ag2-builtin"),
    Code("TF302", "langgraph-cannot-express", Severity.ERROR, Stage.PROFILE, "turnflow.frameworks.langgraph.check", profile="langgraph"),
    Code("TF303", "ag2-groupchat-cannot-express", Severity.ERROR, Stage.PROFILE, "turnflow.frameworks.ag2.check_groupchat",
         profile="ag2-groupchat"),
    Code("TF304", "autogen-cannot-express", Severity.ERROR, Stage.PROFILE, "turnflow.frameworks.autogen.check", profile="autogen"),
    Code("TF305", "autogen-json-cannot-express", Severity.ERROR, Stage.PROFILE, "turnflow.frameworks.autogen.check_json",
         profile="autogen-json"),
    Code("TF401", "migrate-unsupported-input", Severity.ERROR, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF402", "migrate-renamed", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF403", "migrate-llm-selection", Severity.INFO, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF404", "migrate-selection-method", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF405", "migrate-termination", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF406", "migrate-condition-approximated", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF407", "migrate-parallel-branches", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF408", "migrate-target-approximated", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF409", "migrate-ignored-setting", Severity.INFO, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF410", "migrate-run-time-choice", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF411", "migrate-call-does-not-bind", Severity.WARNING, Stage.MIGRATE, "turnflow.migrate.rules"),
    Code("TF901", "unused-suppression", Severity.WARNING, Stage.SUPPRESS, "turnflow.diagnostics.suppress"),
    Code("TF902", "unknown-suppression-code", Severity.WARNING, Stage.SUPPRESS, "turnflow.diagnostics.suppress"),
)

BY_CODE: dict[str, Code] = {c.code: c for c in CODES}
PROFILES: tuple[str, ...] = tuple(sorted({c.profile for c in CODES if c.profile}))
#: the profiles that are `turnflow compile --target` frameworks (each has a writer in
#: `compiler/emit/targets.py`); the others are `--profile` choices
TARGETS: tuple[str, ...] = ("langgraph", "ag2-groupchat", "autogen", "autogen-json")


def lookup(code: str) -> Optional[Code]:
    """The row of `code` (case-insensitive), or None."""
    return BY_CODE.get(code.upper())


def diagnostic(code: str, message: str, span: Span, path: str = "<string>", *,
               related: tuple[Related, ...] = (), help: Optional[str] = None) -> Diagnostic:  # noqa: A002
    """The one constructor: name and severity come from the table; an unknown code is a bug."""

    row = BY_CODE[code]
    return Diagnostic(code=row.code, severity=row.severity.value, message=message, span=span, path=path,
                      name=row.name, related=tuple(related), help=help)
