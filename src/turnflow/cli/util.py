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
import os
import re
import sys
from typing import IO, TYPE_CHECKING, Callable, Mapping, Optional, Sequence, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.diagnostics.diagnostic import Diagnostic

T = TypeVar("T")
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
FORMATS = ("text", "full", "concise", "grouped", "json", "sarif", "github", "junit", "gitlab")
FORMAT_HELP = ("text (default; with carets; `full` is its ruff name), concise (one line each), grouped (by file), "
               "json, sarif (code scanning), github (workflow annotations), junit (JUnit XML) or gitlab "
               "(Code Quality report)")


class CommandError(Exception):
    """A failure a subcommand reports as one line on stderr, with its exit status
    (`turnflow.cli.main` prints `turnflow CMD: MESSAGE` and returns `status`)."""

    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.message = message
        self.status = status


def out(text: str) -> None:
    _write(sys.stdout, text)


def err(text: str) -> None:
    """One message on stderr, with every secret in it masked (`turnflow.masking.mask`: URL
    passwords, libpq's `password=`, anything shaped like an API key) and the foreign text it
    quotes made visible (`term.visible`: control and bidi characters, lone surrogates as
    escapes), whichever command says it."""
    from turnflow.masking import mask
    from turnflow.term import visible

    text = visible(mask(text))
    _write(sys.stderr, text if text.endswith("\n") else text + "\n")


def write_text(stream, text: str) -> None:
    """Write `text` on `stream` so that the write cannot fail on what the text holds (`_write`)."""
    _write(stream, text)


def _write(stream, text: str) -> None:
    """Write `text`; a file name that is not UTF-8 (its surrogate escapes) or a lone surrogate of
    an agent's text, on a stream that refuses them (a strict UTF-8 locale), and any character
    the stream's encoding cannot write, are written escaped (`\\udcfe`), as `compile` and `graph`
    name such a file.

    A stream whose reader went away (`turnflow fmt --check . | head -1`) takes the rest of the
    output to the null device, and the command goes on to its own exit status (docs/cli.md):
    a closed pipe is not taken for "nothing to report"."""
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(stream, "encoding", None) or "utf-8"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    except BrokenPipeError:
        _to_null(stream)


def _to_null(stream) -> None:
    """Point a broken stream's descriptor at the null device, so that what is still buffered and
    later writes (the interpreter's last flush included) go nowhere instead of failing again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # no descriptor (a test's stream): each write is dropped
        pass


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
           files: Optional[int] = None, stats: Optional[list[dict]] = None, stream: Optional[IO[str]] = None,
           colour: Optional[bool] = None, extra: str = "") -> None:
    """Render `diags` in `fmt` on `stream` (stdout by default).

    text (`full`): caret diagnostics, then (when `stats` is given) one line per block, then
    `extra`, then (when `files` is given) the summary line. concise and grouped: the same without
    source lines. json: one array; each diagnostic is an object with `path`, `line`, `column`,
    `end_line`, `end_column`, `code`, `name`, `severity`, `message`, `help` and `related`; with
    `stats`, one more object per block follows the diagnostics, holding `path`, `line` and
    `stats` (and no `code`). sarif: a SARIF 2.1.0 log. github: workflow annotations. junit: JUnit
    XML. gitlab: a GitLab Code Quality report. Text is coloured on a terminal (`turnflow.term`:
    NO_COLOR, FORCE_COLOR), or as `colour` says when it is not None (`--color`)."""
    from turnflow.diagnostics import render

    stream = stream or sys.stdout
    machine = {"github": render.render_github, "junit": render.render_junit, "gitlab": render.render_gitlab}
    if fmt == "json":
        items: list[dict] = [d.to_json() for d in diags]
        items += [{"path": st["path"], "line": st["line"], "stats": {k: v for k, v in st.items() if k != "path"}}
                  for st in stats or ()]
        _write(stream, json_text(items) + "\n")
    elif fmt == "sarif":
        import turnflow

        _write(stream, render.render_sarif(diags, turnflow.__version__, sources))
    elif fmt in machine:
        _write(stream, machine[fmt](diags))
    else:
        if fmt == "concise":
            text = render.render_concise(diags)
        elif fmt == "grouped":
            text = render.render_grouped(diags)
        else:
            text = render.render_text(diags, sources or {})
        if stats:
            text += "".join(render.stats_line(st) + "\n" for st in stats)
        text += extra
        if files is not None:
            text += render.summary_line(diags, files) + "\n"
        from turnflow.term import colourise, use_colour, visible

        text = visible(text)  # a message quoting the source (a string literal holding ESC) acts on no terminal

        _write(stream, colourise(text) if (use_colour(stream) if colour is None else colour) else text)


def add_project_options(parser, verb: str) -> None:
    """The options `check` and `fmt` share to choose files the way a project says (docs/configuration.md)."""
    parser.add_argument("--exclude", action="append", metavar="GLOBS",
                        help="also skip these files or folders inside folders (comma-separated globs)")
    parser.add_argument("--force-exclude", action="store_true",
                        help="apply the excludes (and .gitignore) to files named on the command line too, "
                             "as pre-commit passes them")
    parser.add_argument("--stdin-filename", metavar="NAME", type=text_type("a file name"),
                        help=f"read standard input (as `-`; a path given too is ignored, as in ruff) and report it "
                             f"under NAME, which the configuration is matched against "
                             f"(e.g. from an editor: turnflow {verb} --stdin-filename flows/a.flow < a.flow)")
    parser.add_argument("--config", metavar="FILE", type=a_file,
                        help="read this turnflow.toml or pyproject.toml instead of searching upwards "
                             "(docs/configuration.md)")


def project_config(args, **overrides):
    """The configuration of a run over `args.paths` (`--config`, else found upwards), with the
    command line's `--exclude` / `--force-exclude` (and `overrides` for `Config.with_cli`:
    `select`, `ignore`, `extend_select`) applied. Raises CommandError (exit 2) when the
    configuration cannot be used."""
    from turnflow.workspace.config import ConfigError, load as load_config

    _settle_paths(args)
    named = [args.stdin_filename if p == "-" and args.stdin_filename else p for p in args.paths]
    try:
        return load_config(named, args.config).with_cli(exclude=args.exclude, force_exclude=args.force_exclude,
                                                        **overrides)
    except ConfigError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _settle_paths(args) -> None:
    """No path: the current folder. `--stdin-filename NAME` reads standard input, as in ruff (an
    editor pipes its buffer with only the name): `-` is implied, and a path given with it is
    ignored with a warning."""
    if args.stdin_filename is not None:
        for p in args.paths:
            if p != "-":
                err(f"warning: ignoring `{p}`: --stdin-filename reads standard input")
        args.paths = ["-"]
    elif not args.paths:
        args.paths = ["."]


def discover_flows(paths: Sequence[str], config) -> tuple[list[str], list["Diagnostic"]]:
    """`turnflow.workspace.files.discover`, with ruff's rule for folders that hold no `.flow` file (or only
    excluded ones): a warning on stderr, not a finding — a CI job over a repository without flows
    passes, and no such result reaches a SARIF upload. A missing path stays a TF000 error."""
    import os

    from turnflow.workspace.files import discover

    files, problems = discover(list(paths), config)
    empty = [d for d in problems if d.code == "TF000" and os.path.isdir(d.path)]
    for d in empty:
        err(f"warning: No .flow files found under `{d.path}`")
    if not files and not problems and paths:  # every file named was force-excluded
        err("warning: No .flow files found (every path given is excluded)")
    return files, [d for d in problems if d not in empty]


# -- the types of number and duration flags: one wording in every command --------------------------
# A flag's value is handed to its type even when it starts with `-` (`--timeout -5s`, `--lease -1e3`:
# turnflow.cli.app.Parser), so the type names what it expects: argparse prints
# `turnflow CMD: error: argument --timeout: expected a positive duration ..., got '-5s'`, exit 2.

def _whole(text: str) -> Optional[int]:
    return int(text)


def _seconds(text: str) -> Optional[float]:
    import math

    value = float(text)
    return value if math.isfinite(value) else None  # nan, inf: no number of seconds


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def _duration(text: str) -> Optional[float]:
    """`90`, `90s`, `250ms`, `5m`, `1h`, `1d` -> seconds."""
    import math

    m = _DURATION.match(text)
    if m is None:
        return None
    value = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}[m.group(2)]
    return value if math.isfinite(value) else None


def number_type(parse: Callable[[str], Optional[T]], accept: Callable[[T], bool], expected: str) -> Callable[[str], T]:
    """An argparse type: `parse(text)` (None or ValueError: not such a number), kept when `accept`
    says so, else `expected EXPECTED, got 'TEXT'`."""

    def convert(text: str) -> T:
        import argparse

        try:
            value = parse(text)
        except (ValueError, OverflowError):  # (int() of 5,000 digits is a ValueError too)
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    convert.__doc__ = f"An argparse type: {expected}."
    return convert


positive_int = number_type(_whole, lambda n: n >= 1, "a positive whole number")
whole_number = number_type(_whole, lambda n: True, "a whole number")
positive_seconds = number_type(_seconds, lambda v: v > 0, "a positive number of seconds")
duration = number_type(_duration, lambda v: v > 0, "a positive duration such as 90, 90s, 250ms, 5m or 1h")


def non_negative_int(zero: str) -> Callable[[str], int]:
    """A whole number >= 0, where 0 means `zero` (`expected 0 (no limit) or a positive whole number`)."""
    return number_type(_whole, lambda n: n >= 0, f"0 ({zero}) or a positive whole number")


def non_negative_seconds(zero: str) -> Callable[[str], float]:
    """A number of seconds >= 0, where 0 means `zero`."""
    return number_type(_seconds, lambda v: v >= 0, f"0 ({zero}) or a positive number of seconds")


# -- the types of text arguments: an empty one is a usage error, never a blank name ----------------
def text_type(expected: str) -> Callable[[str], str]:
    """An argparse type for a path or a name: the empty string (an unset `"$VAR"`, a stray `''`) is
    refused, `argument STORE: expected a SQLite file path or a postgresql:// URL, got '' (an empty
    string)`, exit 2, instead of being taken for no path, a file named nothing or the default."""

    def convert(text: str) -> str:
        import argparse

        if text == "":
            raise argparse.ArgumentTypeError(f"expected {expected}, got '' (an empty string)")
        return text

    convert.__doc__ = f"An argparse type: {expected}."
    return convert


a_file = text_type("a file path")
a_file_or_stdin = text_type("a file path, or - for standard input")
a_path_or_stdin = text_type("a file or folder path, or - for standard input")
a_block = text_type("a block name")
a_store = text_type("a SQLite file path or a postgresql:// URL")


def _diff_lines(text: str) -> list[str]:
    """`text`'s lines as `diff` and `patch` cut them: at `\n` only (a `\r` stays in its line; not
    at the other characters `str.splitlines` knows, U+0085, U+2028, a form feed...)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def unified_diff(text: str, new: str, path: str) -> str:
    """`fmt --diff`'s output: a unified diff `patch` applies (a last line with no line end is
    marked `\\ No newline at end of file`, as `diff -u` marks it)."""
    import difflib

    parts = []
    for line in difflib.unified_diff(_diff_lines(text), _diff_lines(new), fromfile=path, tofile=path):
        parts.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(parts)
