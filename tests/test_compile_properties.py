"""Properties over generated flows (tests/flow_strategies.py):
compile ∘ decompile is the identity on compiled specs, decompile ∘ compile
gives a flow with the identical compiled spec (and canonical text is a fixed
point), every compiled spec validates against the shipped schemas, and every
compiled graph round-trips through AG2 1.2.1's TransitionGraph."""

from hypothesis import HealthCheck, assume, given, settings

import turnflow
from flow_strategies import flows, workflow_blocks
from turnflow import schemas
from turnflow.compiler.decompile import decompile_text
from turnflow.compiler.emit.spec import CompileError, compile_block
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow
from turnflow.spec import parse_spec

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def unchecked(text: str):
    """Compile without the checks: bare knobs and graphs carry no tool
    declarations, so the speaker-graph analysis of the decompiled flow may
    differ from the original's (e.g. more `maybe` edges)."""
    return [compile_block(b) for b in turnflow.parse(text).blocks]


def compiled(flow: ast.FlowFile):
    """The flow's text and specs; a flow with an error is no example. `compile` raises exactly
    when the checks find an error (the printed flow has no `ignore` comment that could tell its
    reading from `check`'s), so the text is analysed once, not by `check` and again by `compile`."""
    text = print_flow(flow)
    try:
        specs = turnflow.compile(text)
    except CompileError as err:
        assert any(d.severity == "error" for d in err.diagnostics)
        assume(False)
    return text, specs


@SETTINGS
@given(flows())
def test_compile_decompile_round_trip(flow):
    _text, specs = compiled(flow)
    schemas.validate("session-specs", specs)
    for spec in specs:
        schemas.validate_spec(spec)
        assert parse_spec(spec).to_dict() == spec  # the emitted data is exactly the model's dump
    back = turnflow.decompile(specs)
    # `tools []` and "no clause" compile alike, so the speaker-graph analysis
    # (TF2xx) of `back` may differ; everything else must be clean
    assert not [d for d in turnflow.check(back) if d.severity == "error" and not d.code.startswith("TF2")]
    assert unchecked(back) == specs  # decompile ∘ compile keeps the spec
    assert turnflow.decompile(unchecked(back)) == back  # canonical text is a fixed point
    for spec in specs:  # one spec at a time, and bare knobs
        assert unchecked(turnflow.decompile(spec)) == [spec]
        if spec["kind"] == "workflow":
            names = [p["agent_id"] for p in spec["participants"]]
            knobs_text = decompile_text(spec["knobs"], name=spec["name"], participants=names)
            assert unchecked(knobs_text)[0]["knobs"] == spec["knobs"]


@SETTINGS
@given(workflow_blocks())
def test_bare_graph_round_trip_and_ag2(block):
    from ag2.network import TransitionGraph

    from turnflow.interop.ag2 import register_extensions

    _text, specs = compiled(ast.FlowFile(span=block.span, blocks=[block]))
    spec = specs[0]
    graph = spec["knobs"]["graph"]
    schemas.validate("transition-graph", graph)
    register_extensions()
    assert TransitionGraph.loads(graph).to_dict() == graph
    names = [p["agent_id"] for p in spec["participants"]]
    text = decompile_text(graph, participants=names)
    assert unchecked(text)[0]["knobs"]["graph"] == graph
