"""`turnflow compile FILE [--block NAME] [--knobs] [--profile ag2-builtin] [--target T] [-o OUT]`:
one session spec per block (docs/compiler.md) as canonical JSON, or with `--target` one
workflow block as another framework's code (docs/targets.md)."""

from __future__ import annotations

import sys
from typing import Any

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_block, a_file, a_file_or_stdin, fail, out,
                               report, unknown_block)
from turnflow.diagnostics.codes import PROFILES, TARGETS


def register(sub) -> None:
    c = sub.add_parser("compile", help="compile a .flow file to session specs (JSON)",
                       description="Print a JSON array with one session spec per block, in file order, or "
                                   "with --target one workflow block as LangGraph, classic AG2 GroupChat or AutoGen "
                                   "AgentChat code, or as an AgentChat team component (JSON) "
                                   "(docs/targets.md). A flow with errors is not compiled: its diagnostics are "
                                   "printed on stderr and the exit code is 1.")
    c.add_argument("file", metavar="FILE", type=a_file_or_stdin, help="a .flow file (`-` for stdin)")
    c.add_argument("--block", metavar="NAME", type=a_block, help="print only this block's spec (an object, not an array)")
    c.add_argument("--knobs", action="store_true", help="print only the block's `knobs` "
                   "(with --block, or when the file has one block)")
    c.add_argument("--profile", choices=[p for p in PROFILES if p not in TARGETS], help="refuse what the target cannot load; ag2-builtin: "
                   "rules that need an extension condition (TF301)")
    c.add_argument("--target", choices=TARGETS, default=None,
                   help="write one workflow block as another framework's code instead of session specs "
                        "(default: session specs for turnflow's hub); langgraph: a Python module whose "
                        "build(agents) returns a compiled StateGraph; ag2-groupchat: classic AG2 GroupChat "
                        "Python; autogen: an AgentChat SelectorGroupChat in Python; autogen-json: an AgentChat "
                        "team component (RoundRobinGroupChat, Swarm or GraphFlow JSON for Team.load_component, "
                        "once your agents are bound). What the framework cannot "
                        "express exactly is refused (TF3xx, docs/targets.md)")
    c.add_argument("-o", "--output", metavar="OUT", type=a_file, help="write to OUT (atomically) instead of stdout")
    c.set_defaults(func=run)


def run(args) -> int:
    from turnflow.compiler.emit.spec import compile_block, dumps
    from turnflow.compiler.pipeline import analyse
    from turnflow.workspace.files import load

    loaded = load(args.file)
    if loaded.error is not None:
        report([loaded.error], stream=sys.stderr)
        return EXIT_USAGE
    if args.target is not None:
        return _run_target(args, loaded)
    flow, diags = analyse(loaded.text, args.file, args.profile, compiling=True)  # a silenced error still blocks
    if flow is None or any(d.severity == "error" for d in diags):
        report(diags, sources={args.file: loaded.source}, files=1, stream=sys.stderr)
        return EXIT_FINDINGS
    names = [b.name.name for b in flow.blocks]
    if args.block is not None:
        block = flow.block(args.block)
        if block is None:
            raise unknown_block(args.file, args.block, names)
        result: Any = compile_block(block, args.profile)
    elif args.knobs:
        if len(flow.blocks) != 1:
            return fail("compile", f"--knobs needs --block NAME when {args.file} has {len(flow.blocks)} blocks"
                        + (f" ({', '.join(names)})" if names else ""))
        result = compile_block(flow.blocks[0], args.profile)
    else:
        result = [compile_block(b, args.profile) for b in flow.blocks]
    text = dumps(result["knobs"] if args.knobs and isinstance(result, dict) else result)
    return _write(args, text)


def _write(args, text: str) -> int:
    from turnflow.workspace.files import write_atomic

    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as exc:
            return fail("compile", f"cannot write `{args.output}`: {exc.strerror or exc}")
    else:
        out(text)
    return EXIT_OK


def _run_target(args, loaded) -> int:
    """`--target T`: one workflow block as framework code (compiler/emit/targets.py)."""
    from turnflow.compiler.emit.targets import TargetError, emit, relevant, select, workflow_only
    from turnflow.compiler.pipeline import analyse

    if args.profile is not None or args.knobs:
        return fail("compile", "--target writes framework code: it takes neither --profile nor --knobs")
    flow, diags = analyse(loaded.text, args.file, args.target, compiling=True)
    if flow is not None:
        try:
            block = select(flow, args.block)
        except LookupError:
            if args.block is not None:
                raise unknown_block(args.file, args.block, [b.name.name for b in flow.blocks]) from None
            if not flow.blocks:
                return fail("compile", f"--target {args.target} compiles one block: {args.file} has none")
            return fail("compile", f"--target {args.target} compiles one block: {args.file} has "
                        f"{len(flow.blocks)} ({', '.join(b.name.name for b in flow.blocks)}); name one with --block")
        diags = relevant(diags, block, args.target)
    if flow is None or any(d.severity == "error" for d in diags):
        report(diags, sources={args.file: loaded.source}, files=1, stream=sys.stderr)
        return EXIT_FINDINGS
    try:
        workflow_only(block)
    except LookupError as exc:  # where the block's kind is: the silenced refusal's place
        return fail("compile", f"{args.file}:{block.kind_span.line}:{block.kind_span.column}: {exc}")
    try:
        code = emit(block, args.target, args.file)
    except TargetError as exc:
        at = f"{args.file}:{exc.span.line}:{exc.span.column}" if exc.span is not None else args.file
        return fail("compile", f"{at}: {exc}", EXIT_FINDINGS)
    return _write(args, code)
