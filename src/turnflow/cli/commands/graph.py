"""`turnflow graph FILE [--block NAME] [--format dot|svg|png|mermaid|json] [-o OUT]`:
a picture of the speaker graph, with the analysis drawn on it."""

from __future__ import annotations

import sys

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_block, a_file, err, fail, out, positive_seconds,
                               report, unknown_block)

FORMATS = ("dot", "svg", "png", "mermaid", "json")


def register(sub) -> None:
    g = sub.add_parser("graph", help="draw the speaker graph (Graphviz DOT/SVG/PNG, Mermaid, JSON)")
    g.add_argument("file", metavar="FILE", type=a_file, help="the .flow file to draw")
    g.add_argument("--block", metavar="NAME", type=a_block, help="only this block (default: every block)")
    g.add_argument("--format", choices=FORMATS, default="dot",
                   help="dot (default), svg or png (need Graphviz's dot), mermaid, or json")
    g.add_argument("-o", "--output", metavar="OUT", type=a_file, help="write here instead of standard output")
    g.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
                   help="stop Graphviz's `dot` after this many seconds (svg and png; default 60)")
    g.set_defaults(func=run)


def run(args) -> int:
    from turnflow.workspace.files import load

    loaded = load(args.file)
    if loaded.error is not None:
        report([loaded.error], stream=sys.stderr)
        return EXIT_USAGE
    drawn = _pictures(args, loaded)
    if isinstance(drawn, int):
        return drawn
    pictures, errors = drawn
    result = _render(pictures, args)
    if isinstance(result, int):
        return result
    status = EXIT_OK
    if errors:  # drawn, with the errors marked; still a finding
        report(errors, sources={args.file: loaded.source}, stream=sys.stderr)
        err(f"{args.file}: drawn with {len(errors)} error{'s' if len(errors) != 1 else ''} (marked in red)")
        status = EXIT_FINDINGS
    return _emit(result, args, status)


def _pictures(args, loaded):
    """The pictures of the blocks to draw and the errors to mark on them, or an exit status."""
    from turnflow.compiler.emit.picture import build_picture
    from turnflow.compiler.pipeline import analyse
    from turnflow.dsl.parser import gc_paused

    with gc_paused():  # the command's edge; large flows: see turnflow.dsl.parser.gc_paused
        flow, diags = analyse(loaded.text, args.file)
        errors = [d for d in diags if d.severity == "error"]
        # graph findings (TF2xx: traps, flows that never end) are what the picture shows;
        # only syntax and reference errors leave nothing sound to draw
        blocking = [d for d in errors if d.code not in _graph_codes()]
        if flow is None or blocking:
            report(blocking, sources={args.file: loaded.source}, stream=sys.stderr)
            err(f"{args.file}: not drawn: fix the errors above first")
            return EXIT_FINDINGS
        blocks = list(flow.blocks)
        if args.block is not None:
            blocks = [b for b in flow.blocks if b.name.name == args.block]
            if not blocks:
                raise unknown_block(args.file, args.block, [b.name.name for b in flow.blocks])
        if not blocks:
            return fail("graph", f"{args.file} has no blocks to draw", EXIT_FINDINGS)
        return [build_picture(b, diags) for b in blocks], errors


def _render(pictures, args) -> "str | bytes | int":
    """The picture in `--format`, or the exit status when Graphviz fails."""
    from turnflow.compiler.emit.dot import DotFailed, DotMissing, render as render_dot, to_dot
    from turnflow.compiler.emit.graph_json import to_json
    from turnflow.compiler.emit.mermaid import to_mermaid

    fmt = args.format
    if fmt == "mermaid":
        return to_mermaid(pictures)
    if fmt == "json":
        return to_json(pictures)
    dot = to_dot(pictures, args.file.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    if fmt not in ("svg", "png"):
        return dot
    try:
        return render_dot(dot, fmt, timeout=args.timeout)
    except (DotMissing, DotFailed) as exc:
        return fail("graph", str(exc))


def _emit(result: "str | bytes", args, status: int) -> int:
    from turnflow.workspace.files import write_atomic

    if args.output:
        try:
            write_atomic(args.output, result)
        except OSError as exc:
            from turnflow.workspace.files import write_error

            return fail("graph", write_error(args.output, exc))
        return status
    if isinstance(result, bytes):
        if args.format == "png" and sys.stdout.isatty():
            return fail("graph", "PNG is binary; write it to a file with -o OUT.png")
        sys.stdout.buffer.write(result)
        sys.stdout.flush()
    else:
        out(result)
    return status


def _graph_codes() -> set[str]:
    from turnflow.diagnostics.codes import CODES

    return {c.code for c in CODES if c.stage == "graph"}
