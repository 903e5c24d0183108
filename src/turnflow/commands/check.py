"""`turnflow check PATH...`: parse and analyse files or folders."""

from __future__ import annotations

from turnflow.cli_util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, out
import turnflow
from turnflow.diagnostics import render
from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
from turnflow.files import discover, load


def register(sub) -> None:
    c = sub.add_parser("check", help="parse and analyse .flow files or folders")
    c.add_argument("paths", nargs="+", metavar="PATH")
    c.add_argument("--format", choices=render.FORMATS, default="text")
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    c.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    c.set_defaults(func=run)


def run(args) -> int:
    files, problems = discover(args.paths)
    diags: list[Diagnostic] = list(problems)
    sources = {}
    unreadable = bool(problems)
    for path in files:
        loaded = load(path)
        if loaded.error is not None:
            diags.append(loaded.error)
            unreadable = True
            continue
        sources[path] = loaded.source
        diags.extend(turnflow.check(loaded.source.text, path=path))
    diags.sort(key=sort_key)
    fmt = args.format
    if fmt == "json":
        out(render.render_json(diags))
    elif fmt == "sarif":
        out(render.render_sarif(diags, turnflow.__version__))
    elif fmt == "github":
        out(render.render_github(diags))
    else:
        out(render.render_text(diags, sources))
        if not args.quiet:
            out(render.summary_line(diags, len(files)) + "\n")
    if unreadable:
        return EXIT_USAGE
    if any(d.severity == "error" for d in diags):
        return EXIT_FINDINGS
    if args.strict and any(d.severity == "warning" for d in diags):
        return EXIT_FINDINGS
    return EXIT_OK
