"""`turnflow fmt [PATH...] [--check] [--diff]`: rewrite in canonical form.

Files are chosen as `check` chooses them (the project configuration's `exclude`,
`extend-exclude`, `force-exclude`, `--config`, `--stdin-filename`; no path: the current folder).
Exit codes follow docs/cli.md: a file with a syntax error (TF001/TF002), or one whose canonical
form would change its findings, could not be formatted: exit 1, the other files are still
formatted; an unreadable path or a file that cannot be written: exit 2."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_path_or_stdin, add_project_options,
                               discover_flows, err, out, project_config, report, unified_diff)


def register(sub) -> None:
    f = sub.add_parser("fmt", help="rewrite .flow files in canonical form (`-` for stdin)")
    f.add_argument("paths", nargs="*", default=[], metavar="PATH", type=a_path_or_stdin,
                   help="files or folders to format (default: the current folder); "
                        "`-` formats standard input to standard output")
    f.add_argument("--check", action="store_true", help="list files that would change; exit 1 if any")
    f.add_argument("--diff", action="store_true", help="print a unified diff instead of writing")
    f.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    add_project_options(f, "fmt")
    f.set_defaults(func=run)


@dataclass
class Outcome:
    """What `fmt` did to each file, for the summary line and the exit code."""
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    errors: list = field(default_factory=list)         # diagnostics: TF000 (exit 2), syntax errors (exit 1)
    failed: list[str] = field(default_factory=list)    # files that could not be formatted
    refusals: list[str] = field(default_factory=list)  # messages: canonical form would change findings (exit 1)
    write_failures: list[str] = field(default_factory=list)  # messages (exit 2)
    sources: dict = field(default_factory=dict)

    def status(self, preview: bool) -> int:
        if any(d.code == "TF000" for d in self.errors) or self.write_failures:
            return EXIT_USAGE
        if self.errors or self.refusals or (preview and self.changed):
            return EXIT_FINDINGS
        return EXIT_OK


def run(args) -> int:
    from turnflow.dsl.parser import gc_paused

    config = project_config(args)  # also settles args.paths (`.` by default, `-` with --stdin-filename)
    files, problems = discover_flows(args.paths, config)
    result = Outcome(errors=list(problems))
    with gc_paused():
        for path in files:
            _format_file(path, args, result)
    _report(args, files, result)
    return result.status(args.check or args.diff)


def _format_file(path: str, args, result: Outcome) -> None:
    from turnflow.compiler.pipeline import findings_changed
    from turnflow.dsl.parser import parse_source
    from turnflow.dsl.printer import format_flow, like_source
    from turnflow.workspace.files import load

    loaded = load(path)
    if loaded.error is not None:
        result.errors.append(loaded.error)
        result.failed.append(path)
        return
    text = loaded.text
    shown = args.stdin_filename if path == "-" and args.stdin_filename else path
    result.sources[shown] = loaded.source
    flow, diags = parse_source(text, shown)
    if flow is None:
        result.errors.extend(diags)
        result.failed.append(path)
        return
    new = like_source(format_flow(flow), text)  # keeps the file's line endings and BOM
    preview = args.check or args.diff
    if new != text and findings_changed(text, new, path):
        # the safety net of "fmt never changes the findings": keep the file as it is (a preview
        # says so too, rather than "would reformat")
        result.refusals.append(f"turnflow fmt: {shown}: not reformatted: its canonical form would change "
                               "its findings (a `# turnflow: ignore` comment would end up on another "
                               "statement's line); give each statement its own line and comment, then run fmt again")
        result.failed.append(path)
        if path == "-" and not preview:
            out(text)
        return
    if path == "-" and not preview:
        out(new)
        return
    if new == text:
        result.unchanged += 1
        return
    _apply(path, text, new, args, result)


def _apply(path: str, text: str, new: str, args, result: Outcome) -> None:
    from turnflow.workspace.files import write_atomic, write_error

    if args.diff:
        out(unified_diff(text, new, path))
    elif args.check:
        out(f"would reformat {path}\n")
    else:
        try:
            write_atomic(path, new)
        except OSError as exc:  # say so, keep the file as it was, go on with the others
            result.write_failures.append(f"turnflow fmt: {write_error(path, exc)}")
            result.failed.append(path)
            return
        out(f"reformatted {path}\n")
    result.changed.append(path)


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def _report(args, files: list[str], result: Outcome) -> None:
    from turnflow.diagnostics.diagnostic import sort_key

    for line in result.refusals + result.write_failures:
        err(line)
    if result.errors:
        report(sorted(result.errors, key=sort_key), sources=result.sources, stream=sys.stderr)
    if args.quiet or not files or "-" in files:
        return
    preview = args.check or args.diff
    parts = []
    if result.changed:
        parts.append(f"{_files(len(result.changed))} {'would be reformatted' if preview else 'reformatted'}")
    if result.unchanged:
        parts.append(f"{_files(result.unchanged)} {'already formatted' if preview else 'left unchanged'}")
    if result.failed:
        parts.append(f"{_files(len(result.failed))} could not be formatted")
    err(", ".join(parts))
