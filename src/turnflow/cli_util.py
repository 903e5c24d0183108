"""The command-line policy, in one place: exit codes, the wording of the failures every
subcommand shares, and how diagnostics are rendered in each `--format`.

Exit codes: 0 clean, 1 findings (errors, or warnings with `--strict`), 2 usage or unreadable
input (a missing path, an unknown `--block`, a file that is not UTF-8 text, a folder where a
file is expected), 3 internal error (a bug; `turnflow.cli.main` catches it). Every subcommand
reports these through the helpers below, so the same failure reads the same everywhere:

    PATH:1:1: TF000 error: no such file or directory: `PATH`      (commands that report diagnostics)
    turnflow CMD: no such file or directory: `PATH`               (run, simulate, inspect)
    turnflow CMD: FILE has no block `NAME` (blocks: a, b)

This module imports nothing heavy: it runs for `turnflow --help`."""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Mapping, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.diagnostics.diagnostic import Diagnostic

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
FORMATS = ("text", "json", "sarif", "github")


class CommandError(Exception):
    """A failure a subcommand reports as one line on stderr, with its exit status
    (`turnflow.cli.main` prints `turnflow CMD: MESSAGE` and returns `status`)."""

    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.message = message
        self.status = status


def out(text: str) -> None:
    sys.stdout.write(text)


def err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")


def fail(command: str, message: str, status: int = EXIT_USAGE) -> int:
    """Say `turnflow COMMAND: MESSAGE` on stderr; returns `status` for the command to return."""
    err(f"turnflow {command}: {message}")
    return status


def unknown_block(file: str, name: str, names: Sequence[str]) -> CommandError:
    """`--block NAME` names no block of FILE: exit 2, the same words in every subcommand."""
    listed = ", ".join(names)
    return CommandError(f"{file} has no block `{name}`" + (f" (blocks: {listed})" if names else " (it has no blocks)"),
                        EXIT_USAGE)


def exit_status(diags: Sequence["Diagnostic"], *, strict: bool = False, unreadable: bool = False) -> int:
    """The exit code of a command that reports diagnostics."""
    if unreadable or any(d.code == "TF000" for d in diags):
        return EXIT_USAGE
    if any(d.severity == "error" for d in diags):
        return EXIT_FINDINGS
    if strict and any(d.severity == "warning" for d in diags):
        return EXIT_FINDINGS
    return EXIT_OK


def json_text(obj) -> str:
    """`json.dumps(obj, indent=2)` keeping non-ASCII text readable, with the lone surrogates of a
    file name that is not UTF-8 written as `\\udcfe` escapes: the output stays valid UTF-8 JSON."""
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def report(diags: Sequence["Diagnostic"], fmt: str = "text", *, sources: Optional[Mapping] = None,
           files: Optional[int] = None, stats: Optional[list[dict]] = None, stream: Optional[IO[str]] = None) -> None:
    """Render `diags` in `fmt` on `stream` (stdout by default).

    text: caret diagnostics, then (when `stats` is given) one line per block, then (when `files`
    is given) the summary line. json: one array; each diagnostic is an object with `path`,
    `line`, `column`, `end_line`, `end_column`, `code`, `name`, `severity`, `message`, `help`
    and `related`; with `stats`, one more object per block follows the diagnostics, holding
    `path`, `line` and `stats` (and no `code`). sarif: a SARIF 2.1.0 log. github: workflow
    annotations. Text is coloured on a terminal (`turnflow.term`: NO_COLOR, FORCE_COLOR)."""
    from turnflow.diagnostics import render

    stream = stream or sys.stdout
    if fmt == "json":
        items: list[dict] = [d.to_json() for d in diags]
        items += [{"path": st["path"], "line": st["line"], "stats": {k: v for k, v in st.items() if k != "path"}}
                  for st in stats or ()]
        stream.write(json_text(items) + "\n")
    elif fmt == "sarif":
        import turnflow

        stream.write(render.render_sarif(diags, turnflow.__version__))
    elif fmt == "github":
        stream.write(render.render_github(diags))
    else:
        text = render.render_text(diags, sources or {})
        if stats:
            text += "".join(render.stats_line(st) + "\n" for st in stats)
        if files is not None:
            text += render.summary_line(diags, files) + "\n"
        from turnflow.term import colourise, use_colour

        stream.write(colourise(text) if use_colour(stream) else text)


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1, with one wording in every command."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return n
