"""One open document's analysis, independent of the protocol: diagnostics
(with project configuration applied when given), the symbol index of the last
text that parsed, and formatting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.lsp.index import FlowIndex
from turnflow.lsp.positions import LineIndex
import turnflow
from turnflow import process
from turnflow.dsl.printer import format_flow, like_source


@dataclass
class Analysis:
    text: str
    lines: LineIndex
    index: Optional[FlowIndex]          # None when the text does not parse
    diagnostics: list[Diagnostic]


def analyse(text: str, path: str, encoding: str = "utf-16",
            policy: Optional[Callable[[list[Diagnostic], str], list[Diagnostic]]] = None) -> Analysis:
    """Check `text` (never raises on any text). `policy` filters and re-grades the
    diagnostics (the project's select/ignore/severity settings)."""
    from turnflow.dsl.parser import parse_source

    flow, _ = parse_source(text, path)
    diags = turnflow.check(flow if flow is not None else text, path=path)
    if policy is not None:
        diags = policy(diags, path)
    index = FlowIndex(flow, text) if flow is not None else None
    return Analysis(text, LineIndex(text, encoding), index, diags)


def diagnose(text: str, path: str) -> list[Diagnostic]:
    """`turnflow check`'s diagnostics of `text`, without the symbol index (what a large
    document's analysis needs, run in a child process by the server)."""
    from turnflow.dsl.parser import parse_source

    flow, _ = parse_source(text, path)
    return turnflow.check(flow if flow is not None else text, path=path)


def diagnose_to(conn, text: str, path: str, switches: tuple[bool, bool] = (False, False)) -> None:
    """`diagnose` in a child process: the result is sent on `conn` (a pipe's end), or the
    error's text when the check itself failed. `switches`: the parent's process switches
    (`turnflow.process.PAUSE_GC`, `TABLE_CACHE`; a spawned child starts without them), so the
    child of `turnflow lsp` checks as `turnflow check` does, the cyclic GC paused (the check of
    a 5,000-block document: 1.29 -> 0.75 s CPU)."""
    from turnflow.dsl.parser import gc_paused

    process.set_switches(switches)
    try:
        with gc_paused():
            result: object = diagnose(text, path)
    except Exception as exc:  # a bug in a check: the parent reports it, the child exits
        result = f"{type(exc).__name__}: {exc}"
    conn.send(result)
    conn.close()


def format_text(text: str, path: str = "<string>") -> Optional[str]:
    """The canonical text, or None when the text does not parse or when its canonical form would
    change its findings (a `# turnflow: ignore` moved to another line): nothing to format safely,
    as `turnflow fmt` leaves such a file as it is."""
    from turnflow.compiler.pipeline import findings_changed
    from turnflow.dsl.parser import parse_source

    flow, _ = parse_source(text, path)
    if flow is None:
        return None
    new = like_source(format_flow(flow), text)  # as `turnflow fmt`: the file's line endings and BOM
    if new != text and findings_changed(text, new, path):
        return None
    return new
