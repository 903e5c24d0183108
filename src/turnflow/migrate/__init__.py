"""`turnflow migrate`: front ends that turn existing orchestration into a `.flow` AST.

- `classic`: AutoGen 0.2 / AG2 ≤ 0.9 `GroupChat` in a Python source;
- `ag2_patterns`: AG2 group patterns (`DefaultPattern`, handoffs, ...) in a Python source;
- `autogen`: AutoGen 0.4+ team component JSON (`dump_component()`, Studio and gallery files).

Each front end reads its input without importing or running it and returns a
`Migration`: the printed flow, its AST and the TF4xx diagnostics (positions in
the input). `migrate(text, path, family=None)` detects the family from the content.
"""

from __future__ import annotations

from typing import Optional

from turnflow.migrate.common import MigrateError, Migration, Pos, fail
from turnflow.source import SourceText

FAMILIES = ("classic", "ag2-patterns", "autogen")

__all__ = ["migrate", "detect", "FAMILIES", "Migration", "MigrateError"]

_AG2_MARKERS = ("DefaultPattern(", "AutoPattern(", "RoundRobinPattern(", "RandomPattern(", "ManualPattern(",
                "initiate_group_chat(", "run_group_chat(", ".handoffs.")


def detect(text: str) -> Optional[str]:
    """The input family from the content, or None."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{") or stripped.startswith("["):
        return "autogen"
    if any(m in text for m in _AG2_MARKERS):
        return "ag2-patterns"
    if "GroupChat(" in text:
        return "classic"
    return None


def migrate(text: str, path: str = "<string>", family: Optional[str] = None) -> Migration:
    """Migrate one input; raises `MigrateError` (TF401) when it cannot be migrated."""
    if text.startswith("\ufeff"):  # a byte order mark is invisible: columns count from after it
        text = text[1:]
    src = SourceText(text, path)
    family = family or detect(text)
    if family is None:
        raise fail("TF401", "cannot tell what this file is: expected a Python source with a `GroupChat(...)` or "
                   "an AG2 group pattern, or an AutoGen team component JSON (use --from to say which)",
                   Pos(1, 1), path, src)
    if family == "classic":
        from turnflow.migrate import classic

        return classic.migrate(text, path, src)
    if family == "ag2-patterns":
        from turnflow.migrate import ag2_patterns

        return ag2_patterns.migrate(text, path, src)
    if family == "autogen":
        from turnflow.migrate import autogen

        return autogen.migrate(text, path, src)
    raise ValueError(f"unknown family {family!r}")
