"""`turnflow check PATH...`: parse and analyse files or folders."""

from __future__ import annotations

from turnflow.cli_util import (EXIT_USAGE, FORMATS, add_project_options, discover_flows, exit_status, fail,
                               project_config, report)


def register(sub) -> None:
    c = sub.add_parser("check", help="parse and analyse .flow files or folders")
    c.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                   help="files or folders to check (default: the current folder)")
    c.add_argument("--format", choices=FORMATS, default="text",
                   help="text (default; with carets), json, sarif (code scanning) or github (workflow annotations)")
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    c.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    c.add_argument("--stats", action="store_true",
                   help="also print, per block, participants, rules, reachable participants and the fewest "
                        "and most turns (text and json formats; see docs/analysis.md)")
    c.add_argument("--select", action="append", metavar="CODES",
                   help="only these rules (comma-separated codes, prefixes such as TF2, or names); "
                        "replaces `select` of the configuration")
    c.add_argument("--ignore", action="append", metavar="CODES",
                   help="also turn these rules off (comma-separated codes, prefixes or names)")
    add_project_options(c, "check")
    c.set_defaults(func=run)


def run(args) -> int:
    from turnflow.compiler.pipeline import analyse
    from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
    from turnflow.dsl.parser import gc_paused
    from turnflow.files import load

    if args.stats and args.format not in ("text", "json"):
        return fail("check", f"--stats works with --format text or json, not {args.format}", EXIT_USAGE)
    config = project_config(args, select=args.select, ignore=args.ignore)
    files, problems = discover_flows(args.paths, config)
    stats: list[dict] = []
    diags: list[Diagnostic] = list(problems)
    sources = {}
    unreadable = bool(problems)
    with gc_paused():  # the command's edge: parsing builds many objects and frees none (see gc_paused)
        for path in files:
            loaded = load(path)
            if loaded.error is not None:
                diags.append(loaded.error)
                unreadable = True
                continue
            if path == "-" and args.stdin_filename:
                path = args.stdin_filename
            sources[path] = loaded.source
            flow, found = analyse(loaded.text, path)
            if args.stats and flow is not None:
                _block_stats(flow, path, found, stats)
            diags.extend(config.apply(found, path))
    diags.sort(key=sort_key)
    report(diags, args.format, sources=sources, stats=stats if args.stats else None,
           files=None if args.quiet or args.format != "text" else len(files))
    return exit_status(diags, strict=args.strict, unreadable=unreadable)


def _block_stats(flow, path: str, found: list, stats: list[dict]) -> None:
    """Append one `block_stats` entry per block (with `path`); blocks with errors other than
    speaker-graph findings are not analysed."""
    from turnflow.compiler.graph import block_stats
    from turnflow.diagnostics.codes import CODES

    graph_codes = {c.code for c in CODES if c.stage == "graph"}
    for block in flow.blocks:
        errors = any(d.severity == "error" and d.code not in graph_codes
                     and block.span.start <= d.span.start < block.span.end for d in found)
        stats.append({"path": path, **block_stats(block, analyse=not errors)})
