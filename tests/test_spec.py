"""`turnflow.spec`: the one model of what the compiler emits. Each condition's partial
evaluation (what the runtime's dispatch tables are built from) agrees with its full meaning,
AG2's `loads` defaults are filled in only when asked for, and a wrong type is refused with
its JSON path everywhere the model is read (the runtime included)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnflow import spec
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.transitions import validate_graph
from turnflow.spec import SpecError, TransitionGraph

PEOPLE = ["a", "b", "c"]
TOOLS = ["t1", "t2"]
KEYS = ["k"]
VALUES = [0, 1, "x", None, True]


def leaf_conditions():
    return st.one_of(
        st.just(spec.always()),
        st.sampled_from(PEOPLE).map(spec.from_speaker),
        st.sampled_from(TOOLS).map(spec.tool_called),
        st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES)).map(lambda kv: spec.context_equals(*kv)),
        st.sampled_from(["hi", "URGENT"]).map(spec.text_contains),
        st.tuples(st.sampled_from(KEYS), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.sampled_from(VALUES),
                  st.booleans()).map(lambda a: spec.context_compare(*a)),
    )


conditions = st.recursive(leaf_conditions(), lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(spec.all_of), st.lists(inner, max_size=3).map(spec.any_of), inner.map(spec.negate)),
    max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(conditions, st.sampled_from(PEOPLE), st.booleans(), st.dictionaries(st.sampled_from(KEYS),
       st.sampled_from(VALUES), max_size=1), st.sampled_from(TOOLS + [None]), st.sampled_from(["", "URGENT hi", None]))
def test_partial_evaluation_agrees_with_holds(cond, speaker, packet, ctx, tool, text):
    tool = tool if packet else None  # only a packet carries a routing tool
    full = cond.holds(speaker, ctx, tool, text)
    part = cond.partial(speaker, packet)
    if isinstance(part, bool):
        assert part == full
    else:
        assert part.holds(speaker, ctx, tool, text) == full


@settings(max_examples=60, deadline=None)
@given(conditions)
def test_a_condition_round_trips_through_its_dict(cond):
    g = TransitionGraph(initial_speaker="a", transitions=[spec.Transition(when=cond, then=spec.stay(), priority=0)],
                        default_target=spec.terminate(), max_turns=None)
    assert TransitionGraph.model_validate(g.to_dict()) == g


@settings(max_examples=60, deadline=None)
@given(conditions, st.sampled_from([spec.stay(), spec.round_robin(), spec.revert_to_initiator(), spec.agent("b"),
                                    spec.terminate(), spec.terminate("done"), spec.previous_speaker()]))
def test_the_plain_data_constructors_give_the_models_dump(cond, target):
    # the compiler emits with `Kind.data(...)` (no model object per node); it must be the model's own form
    for m in [*cond.walk(), target]:
        assert type(m).data(**m.args.to_dict()) == m.to_dict()
    for c in cond.walk():
        assert spec.CONDITION.validate_python(type(c).data(**c.args.to_dict())) == c


def test_ag2_loads_defaults_only_when_asked():
    bare = {"initial_speaker": "a", "transitions": [{"when": {"name": "always"}, "then": {"name": "terminate"}}]}
    assert TransitionGraph.loads(bare).to_dict() == {
        "initial_speaker": "a",
        "transitions": [{"when": {"name": "always", "args": {}},
                         "then": {"name": "terminate", "args": {"reason": "after_work"}}, "priority": 0}],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}}, "max_turns": None}
    with pytest.raises(SpecError) as exc:
        spec.parse(TransitionGraph, bare)
    assert exc.value.path == "$.transitions[0].when" and exc.value.reason == "'args' is a required property"
    assert TransitionGraph.loads({**bare, "max_turns": 0}).max_turns == 0  # AG2 accepts 0
    with pytest.raises(SpecError, match="minimum of 1"):
        spec.parse(TransitionGraph, TransitionGraph.loads({**bare, "max_turns": 0}).to_dict())


@pytest.mark.parametrize("edit, path, words", [
    (lambda g: g["transitions"][0].update(priority="1"), "$.knobs.graph.transitions[0].priority",
     'must be an integer, got "1"'),
    (lambda g: g["transitions"][0].update(priority=True), "$.knobs.graph.transitions[0].priority",
     "must be an integer, got true"),
    (lambda g: g["transitions"][0]["when"]["args"].update(agent_id=7), "$.knobs.graph.transitions[0].when.args.agent_id",
     "must be a string, got 7"),
    (lambda g: g["transitions"][0]["then"].update(name="elsewhere"), "$.knobs.graph.transitions[0].then.name",
     "no transition target named 'elsewhere'"),
    (lambda g: g.update(colour=1), "$.knobs.graph", "'colour' is not allowed here"),
    # nested conditions: the recursive union keeps its discriminator however lazily the models are built
    (lambda g: g["transitions"][0].update(when={"name": "all_of", "args": {"conditions": [{"name": "sometimes", "args": {}}]}}),
     "$.knobs.graph.transitions[0].when.args.conditions[0].name", "no transition condition named 'sometimes'"),
    (lambda g: g["transitions"][0].update(when={"name": "not", "args": {"condition": {"name": "from_speaker",
                                                                                      "args": {"agent_id": 3}}}}),
     "$.knobs.graph.transitions[0].when.args.condition.args.agent_id", "must be a string, got 3"),
])
def test_the_runtime_names_the_json_path_of_a_bad_graph(edit, path, words):
    g = {"initial_speaker": "a", "transitions": [
        {"when": {"name": "from_speaker", "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": {"agent_id": "b"}},
         "priority": 0}]}
    validate_graph(g, ["a", "b"])
    edit(g)
    with pytest.raises(ProtocolError) as exc:
        validate_graph(g, ["a", "b"])
    assert str(exc.value) .startswith(f"invalid workflow graph: {path}: ")
    assert words in str(exc.value)


