"""`turnflow migrate INPUT [-o OUT.flow] [--from FAMILY]`: existing orchestration → `.flow`.

Prints the migration's TF4xx diagnostics (positions in INPUT) and the
diagnostics `turnflow check` reports on the migrated flow, like `turnflow check`.
Exit 0 when the flow was written and has no errors, 1 when the input cannot
be migrated (nothing is written) or the migrated flow has errors, 2 when INPUT
cannot be read or OUT exists and is not a file we may replace.
"""

from __future__ import annotations

import sys

from turnflow.cli.util import EXIT_FINDINGS, EXIT_USAGE, FORMATS, a_file, exit_status, fail, out, report

FAMILIES = ("classic", "ag2-patterns", "autogen", "compiled")  # turnflow.migrate.FAMILIES (tests/test_cli.py keeps them equal)


def register(sub) -> None:
    m = sub.add_parser("migrate", help="turn a GroupChat, AG2 pattern or AutoGen team config into a .flow file",
                       description="Translate existing orchestration into a .flow file; every approximation is "
                                   "reported (TF4xx) and commented in the output.")
    m.add_argument("input", metavar="INPUT", nargs="?", type=a_file,
                   help="a Python source (.py), a notebook, or an AutoGen component JSON file")
    m.add_argument("--import", dest="import_", metavar="MODULE:ATTRIBUTE",
                   help="IMPORTS (runs) MODULE and migrates the object ATTRIBUTE names (a GroupChat, "
                        "GroupChatManager, AG2 pattern or AutoGen team), exactly; instead of INPUT")
    m.add_argument("-o", "--output", metavar="OUT.flow", type=a_file, help="write the flow here instead of standard output")
    m.add_argument("--from", dest="family", choices=FAMILIES,
                   help="the input family (default: detected from the content)")
    m.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text",
                   help="how to print diagnostics (`--output-format` is ruff's name, as in check)")
    m.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    m.set_defaults(func=run)


def _print(diags, sources, fmt: str, stream) -> None:
    report(diags, fmt, sources=sources, stream=stream)


def run(args) -> int:
    from turnflow.diagnostics.diagnostic import sort_key
    from turnflow.dsl.parser import gc_paused
    from turnflow.workspace.files import load
    from turnflow.migrate import MigrateError, migrate
    from turnflow.source import SourceText

    if args.import_ is not None or args.input is None:
        return _run_import(args)
    loaded = load(args.input)
    # diagnostics go to stderr when the flow itself goes to stdout
    stream = sys.stdout if args.output else sys.stderr
    if loaded.error is not None:
        _print([loaded.error], {}, args.format, stream)
        return EXIT_USAGE
    text = loaded.text
    sources = {args.input: SourceText(text[1:] if text.startswith("\ufeff") else text, args.input)}
    try:
        with gc_paused():  # as `check`: reading the source builds many objects and frees few (see gc_paused)
            result = migrate(loaded.text, args.input, args.family)
    except MigrateError as exc:
        _print(sorted(exc.diagnostics, key=sort_key), sources, args.format, stream)
        if args.format == "text" and not args.quiet:
            stream.write("Nothing written: the input cannot be migrated.\n")
        return EXIT_FINDINGS
    return _emit(args, result, sources, stream, f"{args.input} ({result.family})")


def _emit(args, result, sources: dict, stream, what: str) -> int:
    """Check the migrated flow, print every diagnostic, write the flow (`-o`) or print it, and
    say what was migrated; the exit status is the migrated flow's check."""
    from turnflow.compiler.pipeline import check
    from turnflow.diagnostics import render
    from turnflow.workspace.files import write_atomic
    from turnflow.source import SourceText

    from turnflow.dsl.parser import gc_paused

    out_path = args.output or "<migrated>"
    # the command needs the text alone: the migrated tree and model are let go before the check
    # reads the text again (20,000 agents: hundreds of MB held for nothing)
    result.flow, result.teams = None, []
    with gc_paused():
        flow_diags = check(result.text, path=out_path)
    sources[out_path] = SourceText(result.text, out_path)
    diags = list(result.diagnostics) + list(flow_diags)
    _print(diags, sources, args.format, stream)
    if args.output:
        try:
            write_atomic(args.output, result.text)
        except OSError as exc:
            return fail("migrate", f"cannot write `{args.output}`: {exc.strerror or exc}")
    else:
        out(result.text)
    if args.format == "text" and not args.quiet:
        counts = render.summary_line(diags, 1)
        where = f"wrote {args.output}" if args.output else "flow on standard output"
        stream.write(f"Migrated {what}; {where}. {counts}\n")
    return exit_status(flow_diags)


def _run_import(args) -> int:
    """`--import module:attribute`: import (run) the module, migrate the live object."""
    from turnflow.migrate import MigrateError
    from turnflow.migrate.live_objects import import_object, migrate_object

    if args.import_ is None or args.input is not None:
        return fail("migrate", "give either INPUT or --import MODULE:ATTRIBUTE (exactly one)")
    stream = sys.stdout if args.output else sys.stderr
    try:
        obj, attr = import_object(args.import_)
    except ValueError as exc:  # a bad spec, a failed import, a missing attribute: the reason, no traceback
        return fail("migrate", str(exc))
    where = f"<{args.import_}>"
    try:
        result = migrate_object(obj, name=attr.rsplit(".", 1)[-1], path=where)
    except MigrateError as exc:
        _print(exc.diagnostics, {}, args.format, stream)
        if args.format == "text" and not args.quiet:
            stream.write("Nothing written: the object cannot be migrated.\n")
        return EXIT_FINDINGS
    return _emit(args, result, {}, stream, f"{args.import_} ({result.family}, live object)")
