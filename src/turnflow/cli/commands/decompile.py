"""`turnflow decompile SPEC.json [--name NAME] [--participants A,B,...] [-o OUT]`:
session specs, knobs or a bare AG2 TransitionGraph → canonical `.flow` text."""

from __future__ import annotations

import sys

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_block, a_file, a_file_or_stdin, err, fail, out,
                               report, text_type)


def register(sub) -> None:
    d = sub.add_parser("decompile", help="turn session specs, knobs or a TransitionGraph (JSON) into .flow text",
                       description="Accepts what `turnflow compile` prints (a list of specs), one spec, "
                                   "`--knobs` output, or a bare AG2 TransitionGraph dict. The result compiles "
                                   "back to the input; anything .flow cannot express is an error at its line and column, naming its "
                                   "JSON path.")
    d.add_argument("file", metavar="SPEC.json", type=a_file_or_stdin, help="a JSON file (`-` for stdin)")
    d.add_argument("--name", default="main", type=a_block, help="block name for bare knobs or a bare graph (default: main)")
    d.add_argument("--participants", metavar="A,B,...", type=text_type("participant names, comma-separated"),
                   help="participants of bare knobs or a bare graph, in order (default: the agent ids the graph "
                        "mentions, initial speaker first)")
    d.add_argument("-o", "--output", metavar="OUT", type=a_file, help="write to OUT (atomically) instead of stdout")
    d.set_defaults(func=run)


def run(args) -> int:
    from turnflow.compiler.decompile import DecompileError, decompile_text
    from turnflow import json_input
    from turnflow.workspace.files import load, write_atomic

    loaded = load(args.file)
    if loaded.error is not None:
        report([loaded.error], stream=sys.stderr)
        return EXIT_USAGE
    try:
        data = json_input.loads(loaded.text)
    except json_input.JSONInputError as exc:
        err(json_input.invalid(args.file, exc))
        return EXIT_FINDINGS
    participants = None
    if args.participants is not None:
        participants = [p.strip() for p in args.participants.split(",") if p.strip()]
    try:
        text = decompile_text(data, name=args.name, participants=participants)
    except DecompileError as exc:
        line, column = json_path_position(loaded.text, exc.path)
        err(f"{args.file}:{line}:{column}: {exc.path}: {exc.reason}")
        return EXIT_FINDINGS
    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as exc:
            return fail("decompile", f"cannot write `{args.output}`: {exc.strerror or exc}")
    else:
        out(text)
    return EXIT_OK


def json_path_position(text: str, path: str) -> tuple[int, int]:
    """The line and column (1-based) of the value a JSON path (`$`, `.key`, `[i]`) names in `text`;
    where a step names nothing (a key with a dot in it), the last value the path did reach."""
    import re

    from turnflow.migrate import MigrateError
    from turnflow.migrate.jsonpos import load as load_positions
    from turnflow.source import SourceText

    try:
        value, positions = load_positions(text, "<json>", SourceText(text, "<json>"))
    except MigrateError:
        return 1, 1
    where = positions.of(value)
    for key, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path[1:]):
        if key and isinstance(value, dict) and key in value:
            where, value = positions.of(value, key), value[key]
        elif index and isinstance(value, list) and int(index) < len(value):
            where, value = positions.of(value, f"#{index}"), value[int(index)]
        else:
            break
    return where.line, where.column
