"""Blocks → session specs (docs/compiler.md): one JSON object per block.

    specs = turnflow.compile(text_or_flow, path="support.flow")

A flow with errors (any `turnflow check` error, or with a profile, a profile
error such as TF301) is not compiled: `CompileError` carries its diagnostics.
`dumps()` is the one serialisation used everywhere: sorted keys, 2-space
indent, trailing newline, so the same input gives byte-identical output.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

from turnflow.compiler.emit import knobs as _knobs
from turnflow.diagnostics.codes import PROFILES  # noqa: F401  (re-exported)
from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.dsl import ast
from turnflow.frameworks.ag2.writer_builtin import builtin_graph



class CompileError(Exception):
    """The flow has errors; `.diagnostics` holds every diagnostic of the flow
    (errors first by position, warnings too), sorted."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
        first = errors[0]
        more = f" (and {len(errors) - 1} more error{'s' if len(errors) != 2 else ''})" if len(errors) > 1 else ""
        super().__init__(f"{first.path}:{first.span.line}:{first.span.column}: {first.code} "
                         f"{first.message}{more}")


def dumps(obj: Any) -> str:
    """Canonical JSON text: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def diagnostics(flow: Union[str, ast.FlowFile], path: str = "<string>",
                profile: Optional[str] = None) -> tuple[Optional[ast.FlowFile], list[Diagnostic]]:
    """Parse (if text) and check `flow`, plus the profile's checks; returns
    (AST or None on a syntax error, sorted diagnostics). See `turnflow.compiler.pipeline`.
    An `ignore` comment silences warnings, infos and a profile's refusal (TF301) here, never
    an error of the checks: a silenced error still blocks compiling."""
    from turnflow.compiler.pipeline import analyse

    return analyse(flow, path, profile, compiling=True)


def compile(flow: Union[str, ast.FlowFile], path: str = "<string>",  # noqa: A001 (the API name)
            profile: Optional[str] = None, *, builtin_where_exact: bool = False) -> list[dict[str, Any]]:
    """One session spec per block, in file order. Raises `CompileError` when
    the flow has errors (with `profile="ag2-builtin"`, also TF301).
    `builtin_where_exact`: each workflow graph in AG2's built-in conditions wherever they express
    its rules exactly (as `profile="ag2-builtin"`), else with turnflow's extension conditions,
    never refused for it (what a served workflow uses: docs/serve.md)."""
    parsed, diags = diagnostics(flow, path, profile)
    if parsed is None or any(d.severity == "error" for d in diags):
        raise CompileError(diags)
    emit_profile = "ag2-builtin" if builtin_where_exact else profile
    return [compile_block(b, emit_profile) for b in parsed.blocks]


# --------------------------------------------------------------------------
#  One block → one spec (assumes the block has no errors)
#
#  Emitted as plain JSON data in the shape of `turnflow.spec.SessionSpec`
#  (`turnflow.spec.parse_spec(compile_block(b)).to_dict() == compile_block(b)`,
#  tested on every example and on generated flows): the compiler's output is
#  trusted, so it builds no model object per node (that made the emit step
#  several times slower, docs/benchmarks.md); the runtime, decompile and the
#  tests validate with the models.
# --------------------------------------------------------------------------
def compile_block(block: ast.Block, profile: Optional[str] = None) -> dict[str, Any]:
    """The session spec of one block, as plain JSON data (for `profile="ag2-builtin"`, with
    built-in conditions only where they express the rules exactly: frameworks/ag2/writer_builtin.py)."""
    tools_of = _knobs.participant_tools(block)
    participants = [
        {"agent_id": p.name.name, "role": p.role or "participant", "order": i,
         "description": p.description.value if p.description is not None else "",
         "tools": list(tools_of.get(p.name.name, []))}
        for i, p in enumerate(block.participants)]
    return {
        "kind": block.kind,
        "name": block.name.name,
        "title": block.title.value if block.title is not None else None,
        "participants": participants,
        "knobs": block_knobs(block, profile),
        "expectations": [expectation(e) for e in block.of_type(ast.Expect)],
        "ttl_seconds": _ttl(block),
        "tools": tools(block, tools_of),
    }


def block_knobs(block: ast.Block, profile: Optional[str] = None) -> dict[str, Any]:
    if block.kind == "workflow":
        graph = None
        if profile == "ag2-builtin":
            graph = builtin_graph(block)
        return {"graph": graph if graph is not None else _knobs.transition_graph(block),
                "context_vars": {c.key.name: c.value.value for c in block.of_type(ast.ContextInit)}}
    if block.kind == "discussion":
        ordering = block.of_type(ast.Ordering)
        return {"ordering": ordering[0].value.name if ordering else "round_robin"}
    return {}  # consulting and conversation have no knobs


def expectation(e: ast.Expect) -> dict[str, Any]:
    return {"name": e.name.name, "params": {"seconds": e.duration.seconds}, "on_violation": e.action.name}


def _ttl(block: ast.Block) -> Optional[float]:
    ttl = block.of_type(ast.Ttl)
    return ttl[0].duration.seconds if ttl else None


def tools(block: ast.Block, tools_of: Optional[dict[str, list[str]]] = None) -> list[dict[str, Any]]:
    """Every declared tool once per owner, owners in participant order, each
    owner's tools in its `participants[].tools` order. A handoff's tool has
    the first such handoff's description and target; a tool declared only in
    `tools [...]` has description "" and target null."""
    tools_of = tools_of if tools_of is not None else _knobs.participant_tools(block)
    first: dict[tuple[str, str], ast.Handoff] = {}
    for handoff in block.of_type(ast.Handoff):
        first.setdefault((handoff.source.name, handoff.tool.name), handoff)
    out = []
    for owner, names in tools_of.items():
        for name in names:
            h = first.get((owner, name))
            out.append({
                "owner": owner,
                "name": name,
                "description": h.description.value if h is not None and h.description is not None else "",
                "target": _knobs.tool_target(h.target) if h is not None else None,
            })
    return out
