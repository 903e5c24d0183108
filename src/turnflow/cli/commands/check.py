"""`turnflow check [PATH...]`: parse and analyse files or folders, with the flags a ruff user
types (docs/cli.md has the table): `--fix` / `--unsafe-fixes` / `--diff`, `--exit-zero`,
`--statistics`, `--show-settings`, `--extend-select` / `--extend-ignore`, `--output-format`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FORMAT_HELP, FORMATS, a_path_or_stdin,
                               add_project_options, discover_flows, err, exit_status, fail, out, project_config,
                               report, unified_diff)

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.cli.fixes import Fix


def register(sub) -> None:
    c = sub.add_parser("check", help="parse and analyse .flow files or folders")
    c.add_argument("paths", nargs="*", default=[], metavar="PATH", type=a_path_or_stdin,
                   help="files or folders to check (default: the current folder)")
    c.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text", help=FORMAT_HELP)
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    c.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings "
                   "(an unreadable path or a bad command line is still exit 2)")
    c.add_argument("--fix", action="store_true",
                   help="apply the safe fixes (the language server's did-you-mean quick fixes for keywords, "
                        "participants, tools and context keys) and report what remains")
    c.add_argument("--unsafe-fixes", action="store_true",
                   help="with --fix or --diff, also apply fixes that change what a condition means (TF111)")
    c.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff instead of writing them; exit 1 if there are any")
    c.add_argument("--statistics", action="store_true",
                   help="print the number of findings per code instead of the findings (text or json)")
    c.add_argument("--show-settings", action="store_true",
                   help="print the resolved configuration, where each value came from, and the files it "
                        "selects; then exit")
    c.add_argument("--graph-stats", "--stats", dest="stats", action="store_true",
                   help="also print, per block, participants, rules, reachable participants and the fewest "
                        "and most turns (text and json formats; see docs/analysis.md); `--stats` is the old "
                        "name (not --statistics, which counts findings per code)")
    c.add_argument("--select", action="append", metavar="CODES",
                   help="only these rules (comma-separated codes, prefixes such as TF2, or names); "
                        "replaces `select` of the configuration")
    c.add_argument("--extend-select", action="append", metavar="CODES",
                   help="these rules on top of `select` (comma-separated codes, prefixes or names)")
    c.add_argument("--ignore", "--extend-ignore", dest="ignore", action="append", metavar="CODES",
                   help="also turn these rules off (comma-separated codes, prefixes or names)")
    add_project_options(c, "check")
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output: auto (default: on a terminal, NO_COLOR / FORCE_COLOR), "
                        "always or never")
    c.add_argument("--no-cache", action="store_true",
                   help="accepted for ruff-style command lines; turnflow keeps no results between runs")
    c.set_defaults(func=run)


def run(args) -> int:
    from turnflow.dsl.parser import gc_paused

    problem = _refuse(args)
    if problem:
        return fail("check", problem, EXIT_USAGE)
    config = project_config(args, select=args.select, ignore=args.ignore, extend_select=args.extend_select)
    if args.show_settings:
        from turnflow.cli.commands.check_settings import show_settings

        return show_settings(args, config)
    files, problems = discover_flows(args.paths, config)
    run_ = Checked(problems)
    with gc_paused():  # the command's edge: parsing builds many objects and frees none (see gc_paused)
        for path in files:
            run_.check(path, args, config)
    if args.diff:
        return _report_diff(run_)
    return _report(args, run_, files)


def _refuse(args) -> str:
    """A combination of flags that means nothing, as one sentence (empty: fine)."""
    if args.stats and args.format not in ("text", "full", "json"):
        return f"--graph-stats works with --format text or json, not {args.format}"
    if args.statistics and args.format not in ("text", "full", "json"):
        return f"--statistics works with --format text or json, not {args.format}"
    if args.unsafe_fixes and not (args.fix or args.diff):
        return "--unsafe-fixes goes with --fix or --diff"
    return ""


class Checked:
    """The findings of a run, and the fixes applied on the way."""

    def __init__(self, problems) -> None:
        self.diags = list(problems)
        self.unreadable = bool(problems)
        self.sources: dict = {}
        self.stats: list[dict] = []
        self.fixed: list[tuple[str, Fix]] = []   # (path, Fix)
        self.diffs: list[str] = []
        self.fixable = 0
        self.fixable_codes: set[str] = set()  # codes with at least one finding --fix would fix

    def check(self, path: str, args, config) -> None:
        from turnflow.compiler.pipeline import analyse
        from turnflow.workspace.files import load

        loaded = load(path)
        if loaded.error is not None:
            self.diags.append(loaded.error)
            self.unreadable = True
            return
        shown = args.stdin_filename if path == "-" and args.stdin_filename else path
        text = loaded.text
        if args.fix or args.diff:
            text = self._fix(path, shown, text, args, config)
        source = loaded.source if text == loaded.text else _source(text)
        self.sources[shown] = source
        flow, found = analyse(text, shown)
        if args.stats and flow is not None:
            _block_stats(flow, shown, found, self.stats)
        kept = config.apply(found, shown)
        if not args.fix:
            from turnflow.cli.fixes import fixable

            can = fixable(kept, text, verify=lambda t: analyse(t, shown)[1])
            self.fixable += len(can)
            self.fixable_codes.update(kept[i].code for i in can)
        self.diags.extend(kept)

    def _fix(self, path: str, shown: str, text: str, args, config) -> str:
        from turnflow.compiler.pipeline import analyse
        from turnflow.workspace.files import write_atomic, write_error
        from turnflow.cli.fixes import fix_text

        new, applied = fix_text(text, lambda t: config.apply(analyse(t, shown)[1], shown), args.unsafe_fixes,
                                verify=lambda t: analyse(t, shown)[1])
        if not applied:
            return text
        self.fixed.extend((shown, f) for f in applied)
        if args.diff:
            self.diffs.append(unified_diff(text, new, shown))
            return text
        if path == "-":
            return new  # printed instead of the findings (a filter: fixed text out)
        try:
            write_atomic(path, new)
        except OSError as exc:
            err(f"turnflow check: {write_error(path, exc)}")
            self.unreadable = True
            return text
        return new


def _source(text: str):
    from turnflow.source import SourceText

    return SourceText(text)


def _report_diff(run_: Checked) -> int:
    for diff in run_.diffs:
        out(diff)
    n = len(run_.fixed)
    err(f"Would fix {n} finding{'s' if n != 1 else ''}." if n else "No fixes available.")
    if run_.unreadable:
        return EXIT_USAGE
    return EXIT_FINDINGS if n else EXIT_OK


def _fix_lines(run_: Checked) -> str:
    lines = [f"fixed {path}:{f.line}:{f.column}: {f.code} `{f.original}` -> `{f.replacement}`\n"
             for path, f in run_.fixed]
    n = len(run_.fixed)
    if n:
        lines.append(f"Fixed {n} finding{'s' if n != 1 else ''}.\n")
    return "".join(lines)


def _extra(args, run_: Checked) -> str:
    """The lines before the summary: what --fix changed, or how many findings it could fix."""
    extra = _fix_lines(run_) if args.fix and args.format in ("text", "full") else ""
    if run_.fixable and not args.fix:
        extra += f"[*] {run_.fixable} fixable with the `--fix` option.\n"
    return extra


def _report(args, run_: Checked, files: list[str]) -> int:
    from turnflow.diagnostics.diagnostic import sort_key

    diags = sorted(run_.diags, key=sort_key)
    colour = None if args.color == "auto" else args.color == "always"
    stdin_fixed = args.fix and files == ["-"] and not run_.unreadable
    if stdin_fixed:  # as ruff: the fixed text on stdout, the findings on stderr
        shown = args.stdin_filename or "-"
        out(run_.sources[shown].text)
    stream = sys.stderr if stdin_fixed else sys.stdout
    if args.fix and run_.fixed and args.format not in ("text", "full"):
        err(_fix_lines(run_))  # machine formats keep stdout for the findings
    if args.statistics:
        _statistics(diags, args.format, stream, run_.fixable_codes)
    else:
        counted = len(set(files) | {d.path for d in run_.diags if d.code == "TF000"})
        report(diags, args.format, sources=run_.sources, stats=run_.stats if args.stats else None,
               files=None if args.quiet or args.format not in ("text", "full", "concise", "grouped") else counted,
               stream=stream, colour=colour, extra=_extra(args, run_))
    status = exit_status(diags, strict=args.strict, unreadable=run_.unreadable)
    return EXIT_OK if args.exit_zero and status == EXIT_FINDINGS else status


def _statistics(diags, fmt: str, stream, fixable_codes: set[str]) -> None:
    """Findings per code; a code is fixable when one of its findings here is (not when its rule can
    sometimes be fixed), as the summary's `[*] N fixable` counts them."""
    import json
    from collections import Counter

    from turnflow.diagnostics.codes import lookup
    from turnflow.diagnostics.render import render_statistics

    def name(code: str) -> str:
        row = lookup(code)
        return row.name if row is not None else ""

    counts = Counter(d.code for d in diags)
    rows = [(code, name(code), n, code in fixable_codes) for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if fmt == "json":
        stream.write(json.dumps([{"code": c, "name": name, "count": n, "fixable": fix} for c, name, n, fix in rows],
                                indent=2) + "\n")
    else:
        stream.write(render_statistics(rows))


def _block_stats(flow, path: str, found: list, stats: list[dict]) -> None:
    """Append one `block_stats` entry per block (with `path`); blocks with errors other than
    speaker-graph findings are not analysed."""
    from turnflow.compiler.speaker_graph import block_stats
    from turnflow.diagnostics.codes import CODES

    graph_codes = {c.code for c in CODES if c.stage == "graph"}
    for block in flow.blocks:
        errors = any(d.severity == "error" and d.code not in graph_codes
                     and block.span.start <= d.span.start < block.span.end for d in found)
        stats.append({"path": path, **block_stats(block, analyse=not errors)})
