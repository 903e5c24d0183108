"""`turnflow compile --target T`: the writers by target name, one module in each framework's folder
(`turnflow/frameworks/<name>/writer*.py`), and what they share.

    text = compile_target(flow_text, "langgraph", block="support", path="support.flow")

A target compiles one workflow block (named, or the file's only block). The flow is checked
first, with the target's profile (its TF3xx check refuses what the framework cannot express
exactly, `emit/constructs.py`); a flow with errors raises `CompileError`. The writer reads the
compiled session spec as the typed model (`turnflow.spec.parse_spec`), never the AST.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional, Protocol, Union, cast

from turnflow.compiler.emit.constructs import BY_KEY, uses
from turnflow.compiler.emit.spec import CompileError
from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.dsl import ast
from turnflow.diagnostics.codes import lookup
import ast as pyast
from turnflow.compiler.emit.spec import compile_block
from turnflow.source import Span
import os

#: target name → writer module (`write(spec, source) -> str`, `TABLE`, `FRAMEWORK`; `FORMAT` "json" when
#: it writes JSON, not Python)
WRITERS: dict[str, str] = {"langgraph": "turnflow.frameworks.langgraph.writer",
                           "ag2-groupchat": "turnflow.frameworks.ag2.writer_groupchat",
                           "autogen": "turnflow.frameworks.autogen.writer_python",
                           "autogen-json": "turnflow.frameworks.autogen.writer_json"}
TARGETS: tuple[str, ...] = tuple(WRITERS)


class TargetError(ValueError):
    """The block passed every check, yet the target's code cannot be written for it (a condition
    nested deeper than the spec model or Python's parser accepts, or a refusal silenced on a rule
    the target has no way to carry). `span`: where in the source, when one construct is the cause;
    `rule`: the writer's index of that rule in the block (None: the block, or its `otherwise`)."""

    def __init__(self, message: str, span: Optional[Span] = None, rule: Optional[int] = None) -> None:
        super().__init__(message)
        self.span = span
        self.rule = rule


#: refused constructs a silenced refusal does not make writable: the framework rejects the module built
#: with them (LangGraph's reserved node names, AgentChat's non-identifier agent names)
NEVER_WRITTEN = ("reserved_name", "non_identifier")


class Writer(Protocol):
    """What a writer module holds (`frameworks/langgraph/writer.py` and the others)."""

    FRAMEWORK: str
    #: construct key → (what it becomes, exact?)
    TABLE: dict[str, tuple[str, bool]]

    def write(self, spec: Any, source: str = "<string>") -> str: ...

    # `write` may raise a ValueError with a `rule` attribute (the index of the rule it cannot carry,
    # or None: the block): a refusal silenced on a rule the target has no way to write (autogen-json)


def writer(target: str) -> Writer:
    if target not in WRITERS:
        raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    return cast(Writer, importlib.import_module(WRITERS[target]))  # imported by name: lazily


def select(flow: ast.FlowFile, block: Optional[str]) -> ast.Block:
    """The block a target compiles: `block` by name, or the file's only block (`LookupError`
    with the reason otherwise)."""
    names = [b.name.name for b in flow.blocks]
    if block is not None:
        found = flow.block(block)
        if found is None:
            raise LookupError(f"no block named {block!r} (blocks: {', '.join(names)})")
        return found
    if len(flow.blocks) != 1:
        raise LookupError(f"the file has {len(flow.blocks)} blocks ({', '.join(names)}): name one with --block")
    return flow.blocks[0]


def workflow_only(block: ast.Block) -> None:
    """`LookupError` unless `block` is a workflow (a target's refusal of another kind, TF302-TF304,
    may have been silenced; there is still no speaker graph to write)."""
    if block.kind != "workflow":
        raise LookupError(f"block `{block.name.name}` is a {block.kind}: a target compiles a workflow block")


def in_block(block: ast.Block, d: Diagnostic) -> bool:
    return block.span.start <= d.span.start < block.span.end


def relevant(diags: list[Diagnostic], block: ast.Block, target: str) -> list[Diagnostic]:
    """The diagnostics that matter to compiling `block` for `target`: every check's, and the
    target profile's inside the block (a discussion elsewhere in the file does not stop it)."""

    out = []
    for d in diags:
        row = lookup(d.code)
        if row is not None and row.profile == target and not in_block(block, d):
            continue
        out.append(d)
    return out


def emit(block: ast.Block, target: str, path: str = "<string>") -> str:
    """The target's code for one checked block (no errors); `TargetError` when it cannot be written."""

    from turnflow.spec import SpecError, parse_spec

    name = block.name.name
    try:
        model = parse_spec(compile_block(block))
    except (SpecError, RecursionError) as exc:  # pydantic refuses a condition nested some 130 deep
        raise TargetError(f"cannot write `{name}` for {target}: its compiled spec does not validate "
                          f"({str(exc)[-160:]})") from None
    w = writer(target)
    for key, span in uses(block):  # a name the framework itself refuses: silencing its TF30x cannot help
        if key in NEVER_WRITTEN and not w.TABLE[key][1]:
            raise TargetError(f"cannot write `{name}` for {target}: {BY_KEY[key].written} cannot be used: "
                              f"{w.TABLE[key][0]}, so the module could never run, refusal silenced or not; "
                              "rename the participant", span)
    try:
        source = w.write(model, _display(path))
    except ValueError as exc:  # a refusal silenced on a rule the target cannot carry (autogen-json)
        if not hasattr(exc, "rule"):
            raise
        raise TargetError(f"cannot write `{name}` for {target}: {exc}", _rule_span(block, exc.rule)) from None
    if getattr(w, "FORMAT", "python") != "python":
        return source  # component JSON (`--target autogen-json`): nothing nests, nothing to parse
    try:
        pyast.parse(source)  # parsed, never run: Python refuses expressions nested some 100 deep
    except (SyntaxError, RecursionError, MemoryError) as exc:
        raise TargetError(f"cannot write `{name}` for {target}: a condition nests deeper than Python's "
                          f"parser accepts ({exc.__class__.__name__}: {getattr(exc, 'msg', exc)}); "
                          "split it into several rules") from None
    return source


def compile_target(flow: Union[str, ast.FlowFile], target: str, block: Optional[str] = None,
                   path: str = "<string>") -> str:
    """`flow` (text or AST) compiled for `target`; `CompileError` when it has errors, `LookupError`
    when no single workflow block is chosen."""
    from turnflow.compiler.pipeline import analyse

    writer(target)
    parsed, diags = analyse(flow, path, target, compiling=True)
    if parsed is None:
        raise CompileError(diags)
    chosen = select(parsed, block)
    diags = relevant(diags, chosen, target)
    if any(d.severity == "error" for d in diags):
        raise CompileError(diags)
    workflow_only(chosen)
    return emit(chosen, target, path)


def _rule_span(block: ast.Block, index: Optional[int]) -> Span:
    """The `index`-th rule of `block` (the order the writers read them in), else its `otherwise`,
    else its name."""
    if index is not None and index < len(block.rules):
        return block.rules[index].span
    other = next((s for s in block.statements if isinstance(s, ast.Otherwise)), None)
    return other.span if other is not None else block.name.span


def _display(path: str) -> str:
    """The source's name as the generated code mentions it (the file name, not the folder:
    output does not depend on where the compile ran)."""

    return os.path.basename(path) if path not in ("-", "<string>") else "<stdin>" if path == "-" else path
