"""`turnflow fmt PATH... [--check] [--diff]`: rewrite in canonical form."""

from __future__ import annotations

import sys

from turnflow.cli_util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, err, out, report


def register(sub) -> None:
    f = sub.add_parser("fmt", help="rewrite .flow files in canonical form (`-` for stdin)")
    f.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to format; `-` formats standard input to standard output")
    f.add_argument("--check", action="store_true", help="list files that would change; exit 1 if any")
    f.add_argument("--diff", action="store_true", help="print a unified diff instead of writing")
    f.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    f.add_argument("--stdin-filename", metavar="NAME", help="the name to report errors in `-` (standard input) under")
    f.set_defaults(func=run)


def run(args) -> int:
    from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
    from turnflow.dsl.parser import parse_source
    from turnflow.dsl.printer import format_flow, like_source
    from turnflow.files import discover, load, write_atomic, write_error

    files, problems = discover(args.paths)
    status = EXIT_OK
    sources = {}
    errors: list[Diagnostic] = list(problems)
    changed: list[str] = []
    write_failures: list[str] = []
    for path in files:
        loaded = load(path)
        if loaded.error is not None:
            errors.append(loaded.error)
            continue
        text = loaded.text
        shown = args.stdin_filename if path == "-" and args.stdin_filename else path
        sources[shown] = loaded.source
        flow, diags = parse_source(text, shown)
        if flow is None:
            errors.extend(diags)
            continue
        new = like_source(format_flow(flow), text)  # keeps the file's line endings and BOM
        if new != text and not (args.check or args.diff) and findings_changed(text, new, path):
            # the safety net of "fmt never changes the findings": keep the file as it is
            write_failures.append(f"turnflow fmt: {path}: not reformatted: its canonical form would change "
                                  "its findings (a `# turnflow: ignore` comment would end up on another "
                                  "statement's line); give each statement its own line and comment, then run fmt again")
            if path == "-":
                out(text)
            continue
        if path == "-" and not (args.check or args.diff):
            out(new)
            continue
        if new == text:
            continue
        changed.append(path)
        if args.diff:
            import difflib

            out("".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                              fromfile=path, tofile=path)))
        elif args.check:
            out(f"would reformat {path}\n")
        else:
            try:
                write_atomic(path, new)
            except OSError as exc:  # say so, keep the file as it was, go on with the others
                changed.pop()
                write_failures.append(f"turnflow fmt: {write_error(path, exc)}")
                continue
            out(f"reformatted {path}\n")
    for line in write_failures:
        err(line)
    if errors or write_failures:
        if errors:
            report(sorted(errors, key=sort_key), sources=sources, stream=sys.stderr)
        status = EXIT_USAGE
    elif (args.check or args.diff) and changed:
        status = EXIT_FINDINGS
    if not args.quiet and files and not (args.check or args.diff) and "-" not in files:
        err(f"{len(changed)} file{'s' if len(changed) != 1 else ''} reformatted, "
             f"{len(files) - len(changed) - len([e for e in errors if e.path in files]) - len(write_failures)} "
            "left unchanged" + (f", {len(write_failures)} not written" if write_failures else ""))
    elif not args.quiet and (args.check or args.diff) and not changed and not errors:
        err(f"{len(files)} file{'s' if len(files) != 1 else ''} already formatted")
    return status


def findings_changed(before: str, after: str, path: str) -> bool:
    """Whether `after` has another set of findings (code and severity, with multiplicity) than `before`."""
    from collections import Counter

    import turnflow

    def findings(text: str) -> Counter:
        return Counter((d.code, d.severity) for d in turnflow.check(text, path=path))

    return findings(before) != findings(after)
