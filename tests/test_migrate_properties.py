"""Properties of `turnflow migrate`.

- Random classic GroupChat configurations (allowed / disallowed dicts, keys
  with empty lists, sinks, allow_repeat_speaker as bool or list, every
  selection method, an initiator inside or outside the group): the migrated
  flow's speaker graph equals the graph computed here directly from AutoGen's
  selection rules, edge for edge.
- Name sanitisation always yields distinct, valid, non-keyword NAMEs.
- Context expressions: `and` → one rule, `or` → several, others refused.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import turnflow
from turnflow.dsl import ast
from turnflow.migrate import migrate
from turnflow.frameworks.ag2.reader_patterns import _Unexpressible, _expression
from turnflow.dsl.lexical import NAME_RE
from turnflow.migrate.common import Names
from test_migrate import END, graph_edges, reference_edges

METHODS = ("auto", "round_robin", "random", "manual")


def expected_edges(names, mode, table, repeat, method, initiator, terminate):
    """AutoGen 0.2 GroupChat semantics, written out independently of the migrator."""
    if mode is None:
        allowed = {x: [y for y in names if y != x] for x in names}
        for x in names:
            if repeat is None or repeat is True or (isinstance(repeat, list) and x in repeat):
                allowed[x].append(x)
    elif mode == "allowed":
        allowed = {k: list(v) for k, v in table.items()}
    else:  # disallowed: invert from the complete graph with self-loops
        allowed = {x: list(names) for x in names}
        for k, v in table.items():
            allowed[k] = [y for y in names if y not in v]
    speakers = list(names) + ([initiator] if initiator is not None and initiator not in names else [])
    edges = set()
    for x in speakers:
        if terminate:
            edges.add((x, END))
        if x in names and x not in allowed:
            edges.add((x, END))  # NoEligibleSpeaker
            continue
        elig = [y for y in names if y in allowed[x]] if x in names else []
        if not elig:
            elig = list(names)
        if method == "round_robin" or len(elig) == 1:
            idx = names.index(x) if x in names else -1
            nxt = next(names[(idx + 1 + i) % len(names)] for i in range(len(names))
                       if names[(idx + 1 + i) % len(names)] in elig)
            edges.add((x, nxt))
        else:
            edges.update((x, y) for y in elig)
    return edges


@st.composite
def configs(draw):
    n = draw(st.integers(2, 5))
    names = [f"A{i}" for i in range(n)]
    mode = draw(st.sampled_from([None, "allowed", "disallowed"]))
    table = {}
    repeat = None
    if mode is not None:
        keys = draw(st.lists(st.sampled_from(names), unique=True, min_size=0 if mode == "disallowed" else 1))
        for k in keys:
            table[k] = draw(st.lists(st.sampled_from(names), unique=True))
    else:
        repeat = draw(st.one_of(st.none(), st.booleans(), st.lists(st.sampled_from(names), unique=True)))
    method = draw(st.sampled_from(METHODS))
    initiator = draw(st.one_of(st.none(), st.sampled_from(names), st.just("Outsider")))
    terminate = draw(st.booleans())
    return names, mode, table, repeat, method, initiator, terminate


def source(names, mode, table, repeat, method, initiator, terminate) -> str:
    var = {n: n.lower() for n in names + ["Outsider"]}
    lines = ["import autogen", "llm_config = {\"model\": \"gpt-4o\"}"]
    for n in names + (["Outsider"] if initiator == "Outsider" else []):
        lines.append(f"{var[n]} = autogen.AssistantAgent(name={n!r}, llm_config=llm_config)")
    args = [f"agents=[{', '.join(var[n] for n in names)}]", "messages=[]", "max_round=7",
            f"speaker_selection_method={method!r}"]
    if mode is not None:
        body = ", ".join(f"{var[k]}: [{', '.join(var[v] for v in vs)}]" for k, vs in table.items())
        lines.append(f"transitions = {{{body}}}")
        args += ["allowed_or_disallowed_speaker_transitions=transitions", f"speaker_transitions_type={mode!r}"]
    elif repeat is not None:
        args.append("allow_repeat_speaker=" + (repr(repeat) if isinstance(repeat, bool)
                                                else f"[{', '.join(var[r] for r in repeat)}]"))
    lines.append(f"chat = autogen.GroupChat({', '.join(args)})")
    term = ", is_termination_msg=lambda m: \"DONE\" in m[\"content\"]" if terminate else ""
    lines.append(f"manager = autogen.GroupChatManager(groupchat=chat, llm_config=llm_config{term})")
    if initiator is not None:
        lines.append(f"{var[initiator]}.initiate_chat(manager, message=\"go\")")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(configs())
def test_classic_speaker_graph_matches_autogen_semantics(cfg):
    text = source(*cfg)
    result = migrate(text, "random.py")
    flow = turnflow.parse(result.text)
    assert not [d for d in turnflow.check(result.text) if d.severity == "error"]
    block = flow.blocks[0]
    want = expected_edges(*cfg)
    assert reference_edges(block) == want, text + result.text
    assert graph_edges(block) == want, text + result.text
    # max_round counts the opening message, sent by the initiator (the start)
    assert block.of_type(ast.MaxTurns)[0].value.value == 7
    start = block.of_type(ast.Start)[0].name.name
    assert start == (cfg[5] if cfg[5] is not None else "A0")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=8))
def test_sanitised_names_are_valid_distinct_and_deterministic(raws):
    a, b = Names(), Names()
    out = [a.add(r)[0] for r in raws]
    assert out == [b.add(r)[0] for r in raws]
    for raw, name in zip(raws, out):
        assert NAME_RE.match(name) and name not in ast.KEYWORDS, (raw, name)
    assert len(set(out)) == len(set(raws))
    for raw, (name, changed) in zip(raws, [Names().add(r) for r in raws]):
        assert changed == (name != raw)


@pytest.mark.parametrize("expr, terms", [
    ("${a} == True and ${b} == 'x'", [("context", "a", True), ("context", "b", "x")]),
    ("${stage} == 'review' or ${stage} == 'revision'",
     [("any", [("context", "stage", "review"), ("context", "stage", "revision")])]),
    ("(${a} == 1 or ${b} == 2) and ${c} == None",
     [("any", [("context", "a", 1), ("context", "b", 2)]), ("context", "c", None)]),
    ("${n} == -3", [("context", "n", -3)]),
    ("${count} > 3", [("compare", "count", ">", 3)]),
    ("3 <= ${count}", [("compare", "count", ">=", 3)]),
    ("${a} != 'x'", [("compare", "a", "!=", "x")]),
    ("len(${items}) > 0", [("compare", "items", ">", 0, True)]),
    ("0 < ${n} <= 5", [("compare", "n", ">", 0), ("compare", "n", "<=", 5)]),
    ("!${a} & ${b} | ${c}", [("any", [("all", [("not", ("context", "a", True)), ("context", "b", True)]),
                                      ("context", "c", True)])]),
    ("${s} == 'a | b & !(c)'", [("context", "s", "a | b & !(c)")]),
])
def test_context_expressions_translate(expr, terms):
    assert _expression(expr)[0] == terms


@pytest.mark.parametrize("expr", ["${a} + 1 == 2", "${a} ==", "${a} < ${b}", "${a} in [1, 2]", "max(${a}) > 1",
                                  "len(${a}) > 'x'"])
def test_context_expressions_that_cannot_be_expressed(expr):
    with pytest.raises(_Unexpressible):
        _expression(expr)


def test_truthiness_and_len_of_unsized_values_are_announced_approximations():
    terms, approx = _expression("not ${logged_in} and ${vip}")
    assert terms == [("not", ("context", "logged_in", True)), ("context", "vip", True)]
    assert "approximated" in approx
    assert "as 0" in _expression("len(${cart}) == 0")[1]
    assert _expression("len(${cart}) > 0")[1] == ""  # exact: a value without length fails both


# The translation holds the same truth value as AG2's ContextExpression (Python semantics on
# the substituted values) on contexts where both are defined: every key set, integers where a
# number is compared, strings, lists for len(), booleans for bare variables.
_EXPRESSIONS = [
    "${n} > 2 or ${m} >= 3", "0 < ${n} <= 5 | len(${xs}) == 0", "${s} != 'open' & !(${n} < 1)",
    "len(${xs}) > 0 and not ${f}", "not (${n} == ${n}) or ${m} != -1", "${s} >= 'b' and len(${s}) < 3",
    "!${f} | (${n} > ${m})", "not (${n} > 1 and (${s} == 'done' or len(${xs}) >= 2))", "2 > ${m}",
]


def _compare(actual, op: str, value, length: bool) -> bool:
    """docs/language.md, "Comparisons", on the values generated here (no booleans compared)."""
    if length:
        if type(actual) not in (str, list, dict):
            return False
        actual = len(actual)
    if op in ("==", "!="):
        return (actual == value) == (op == "==")
    if not (type(actual) is type(value) and type(value) in (int, str)):
        return False
    return {"<": actual < value, "<=": actual <= value, ">": actual > value, ">=": actual >= value}[op]


def _holds(t, ctx) -> bool:
    kind = t[0]
    if kind == "context":
        return ctx.get(t[1]) == t[2]
    if kind == "compare":
        return _compare(ctx.get(t[1]), t[2], t[3], len(t) > 4 and t[4])
    if kind == "any":
        return any(_holds(x, ctx) for x in t[1])
    if kind == "all":
        return all(_holds(x, ctx) for x in t[1])
    return not _holds(t[1], ctx)


def _python_value(expr: str, ctx: dict) -> bool:
    """What AG2 computes: the expression with its symbols as Python keywords, each ${k} bound."""
    import re as _re

    from turnflow.frameworks.ag2.reader_patterns import _python_syntax

    py = _re.sub(r"\$\{(\w+)\}", r"ctx['\1']", _python_syntax(expr))
    return bool(eval(py, {"__builtins__": {}, "len": len}, {"ctx": ctx}))  # test oracle, fixed expressions


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_EXPRESSIONS), st.fixed_dictionaries({
    "n": st.integers(-3, 6), "m": st.integers(-3, 6), "s": st.sampled_from(["open", "done", "", "b", "abc"]),
    "xs": st.lists(st.integers(0, 3), max_size=3), "f": st.booleans()}))
def test_translated_context_expressions_agree_with_python(expr, ctx):
    try:
        terms, _ = _expression(expr)
    except _Unexpressible:
        assert "${n} > ${m}" in expr or "${n} == ${n}" in expr  # a variable against a variable
        return
    assert all(_holds(t, ctx) for t in terms) == _python_value(expr, ctx)


# --------------------------------------------------------------------------
#  Robustness: mangled inputs give a result or a TF401, never a crash
# --------------------------------------------------------------------------
from pathlib import Path  # noqa: E402

from turnflow.migrate import MigrateError  # noqa: E402

_INPUTS = sorted(p for p in (Path(__file__).parent / "fixtures" / "migrate").glob("*/*") if p.suffix in (".py", ".json", ".ipynb"))


def _outcome(text: str, family):
    try:
        result = migrate(text, "mangled", family)
    except MigrateError as exc:
        assert exc.diagnostics and all(d.code == "TF401" for d in exc.diagnostics)
        return None
    turnflow.parse(result.text)  # whatever is produced parses
    return result


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_INPUTS), st.data())
def test_mangled_inputs_never_crash(path, data):
    text = path.read_text(encoding="utf-8")
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, min(len(text), i + 200)))
    junk = data.draw(st.sampled_from(["", "(", "]", "}", "\"", "None", "[]", "{}", "0", "x", "\n", "lambda: 0"]))
    family = data.draw(st.sampled_from([None, "classic", "ag2-patterns", "autogen"]))
    _outcome(text[:i] + junk + text[j:], family)


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda children: st.lists(children, max_size=4)
                    | st.dictionaries(st.sampled_from(["provider", "config", "participants", "name", "graph",
                                                       "nodes", "edges", "target", "handoffs", "components",
                                                       "teams", "termination_condition", "conditions"]),
                                      children, max_size=5), max_leaves=25))
def test_arbitrary_json_never_crashes(value):
    import json as _json

    if isinstance(value, dict) and "provider" in value:
        value["provider"] = "autogen_agentchat.teams.RoundRobinGroupChat"
    _outcome(_json.dumps(value), "autogen")


# --------------------------------------------------------------------------
#  Custom speaker selection functions
# --------------------------------------------------------------------------
_HEAD = '''import autogen
from dataclasses import dataclass
coder = autogen.AssistantAgent(name="Coder")
reviewer = autogen.AssistantAgent(name="Reviewer")
runner = autogen.UserProxyAgent(name="Runner")
'''


def _edges_of(text: str) -> set:
    result = migrate(_HEAD + text, "custom.py", "classic")
    block = turnflow.parse(result.text).blocks[0]
    assert reference_edges(block) == graph_edges(block)
    return reference_edges(block), {d.code for d in result.diagnostics}


def test_selection_function_with_agent_by_name_index_and_method_fallback():
    edges, codes = _edges_of('''
@dataclass
class MyChat(autogen.GroupChat):
    pass

def pick(last_speaker, groupchat):
    if last_speaker.name == "Coder":
        return groupchat.agent_by_name("Runner")
    elif last_speaker.name == "Runner":
        return groupchat.agents[1]
    return "round_robin"

chat = MyChat(agents=[coder, reviewer, runner], messages=[], speaker_selection_method=pick)
''')
    assert edges == {("Coder", "Runner"), ("Runner", "Reviewer"), ("Reviewer", "Runner")}
    assert "TF404" not in codes


def test_selection_function_that_falls_through_ends_the_chat():
    edges, codes = _edges_of('''
def pick(last_speaker, groupchat):
    if last_speaker is coder:
        if "LGTM" in groupchat.messages[-1]["content"]:
            return None
        return reviewer
    if last_speaker is reviewer:
        if "exitcode: 0" in groupchat.messages[-1]["content"]:
            return runner

chat = autogen.GroupChat(agents=[coder, reviewer, runner], messages=[], speaker_selection_method=pick)
''')
    # reviewer: when the text test fails the function returns None (implicitly): the chat ends;
    # runner has no branch: the function falls off its end and returns None
    assert edges == {("Coder", END), ("Coder", "Reviewer"), ("Reviewer", "Runner"), ("Reviewer", END),
                     ("Runner", END)}


def test_selection_function_with_a_loop_is_announced_and_approximated():
    edges, codes = _edges_of('''
def pick(last_speaker, groupchat):
    for agent in groupchat.agents:
        if agent is not last_speaker:
            return agent

chat = autogen.GroupChat(agents=[coder, reviewer, runner], messages=[], speaker_selection_method=pick)
''')
    assert "TF404" in codes and "TF406" in codes  # the unreadable return value, the loop not followed
    # what the loop may return: any eligible agent (routing tools); after the loop the function
    # would fall off its end (None: the chat ends)
    assert edges == {(x, y) for x in ("Coder", "Reviewer", "Runner") for y in ("Coder", "Reviewer", "Runner", END)}


def test_unreadable_selection_function_is_announced():
    edges, codes = _edges_of('''
import random
chat = autogen.GroupChat(agents=[coder, reviewer, runner], messages=[],
                         speaker_selection_method=lambda last, gc: random.choice(gc.agents))
''')
    assert "TF404" in codes
    assert {y for x, y in edges if x == "Coder"} == {"Coder", "Reviewer", "Runner"}


def test_positions_are_character_columns_and_a_bom_is_invisible():
    text = ('\ufeffimport autogen\n'
            'größe = autogen.AssistantAgent(name="Größe Planer")\n'
            'b = autogen.AssistantAgent(name="b")\n'
            'chat = autogen.GroupChat(agents=[größe, b], messages=[], send_introductions=True)\n')
    result = migrate(text, "unicode.py")
    by_code = {d.code: d for d in result.diagnostics}
    assert by_code["TF402"].span.line == 2
    assert by_code["TF402"].span.column == len('größe = autogen.AssistantAgent(name=') + 1
    assert by_code["TF409"].span.column == len('chat = autogen.GroupChat(agents=[größe, b], messages=[], '
                                               'send_introductions=') + 1
    assert "participant Größe_Planer" in result.text  # letters of any script are NAME characters


def test_keyword_tool_names_are_renamed_and_announced():
    text = ('from autogen import ConversableAgent\n'
            'from autogen.agentchat.group import ReplyResult, AgentTarget\n'
            'from autogen.agentchat.group.patterns import DefaultPattern\n'
            'a = ConversableAgent(name="a", functions=[next])\n'
            'b = ConversableAgent(name="b")\n'
            'def next(context_variables) -> ReplyResult:\n'
            '    return ReplyResult(message="ok", target=AgentTarget(b))\n'
            'p = DefaultPattern(initial_agent=a, agents=[a, b])\n')
    result = migrate(text, "kw.py")
    assert "a -> b when tool next_" in result.text
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("TF402", 6), ("TF409", 8)]  # + no max_rounds
    assert not [d for d in turnflow.check(result.text) if d.severity == "error"]


# --------------------------------------------------------------------------
#  AutoGen teams: random Swarms and (sequential) GraphFlows vs their semantics
# --------------------------------------------------------------------------
import json as _json  # noqa: E402


def _agent(name, handoffs=()):
    return {"provider": "autogen_agentchat.agents.AssistantAgent", "component_type": "agent",
            "config": {"name": name, "handoffs": list(handoffs), "tools": []}}


@st.composite
def swarms(draw):
    n = draw(st.integers(2, 4))
    names = [f"s{i}" for i in range(n)]
    outside = ["user", "human"]
    handoffs = {x: draw(st.lists(st.sampled_from(names + outside), unique=True, max_size=4)) for x in names}
    terminations = draw(st.lists(st.sampled_from(outside + names[:1]), unique=True))
    text = draw(st.booleans())
    return names, handoffs, terminations, text


@settings(max_examples=100, deadline=None)
@given(swarms())
def test_swarm_speaker_graph_matches_its_handoffs(cfg):
    names, handoffs, terminations, text = cfg
    conds = [{"provider": "autogen_agentchat.conditions.HandoffTermination", "config": {"target": t}}
             for t in terminations]
    if text:
        conds.append({"provider": "autogen_agentchat.conditions.TextMentionTermination", "config": {"text": "BYE"}})
    team = {"provider": "autogen_agentchat.teams.Swarm", "component_type": "team",
            "config": {"participants": [_agent(x, handoffs[x]) for x in names],
                       "termination_condition": {"provider": "autogen_agentchat.base.OrTerminationCondition",
                                                 "config": {"conditions": conds}}}}
    result = migrate(_json.dumps(team), "swarm.json")
    block = turnflow.parse(result.text).blocks[0]
    # a handoff to a participant goes there, unless a HandoffTermination names it; to anyone else it
    # ends the run; no handoff: the same agent
    want = {(x, t if t in names and t not in terminations else END) for x in names for t in handoffs[x]}
    want |= {(x, x) for x in names}
    if text:
        want |= {(x, END) for x in names}
    assert graph_edges(block) == want == reference_edges(block), result.text
    # a Swarm with no way to end is reported as such (TF201/TF202), like its source would run forever
    errors = {d.code for d in turnflow.check(result.text) if d.severity == "error"}
    assert errors <= {"TF201", "TF202"}
    if not any(y == END for _, y in want):
        assert errors, result.text


@st.composite
def graphflows(draw):
    n = draw(st.integers(2, 5))
    names = [f"g{i}" for i in range(n)]
    nodes = {}
    for x in names:
        kind = draw(st.sampled_from(["leaf", "one", "conditional"]))
        if kind == "leaf":
            edges = []
        elif kind == "one":
            edges = [{"target": draw(st.sampled_from(names)), "condition": None}]
        else:
            targets = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
            edges = [{"target": t, "condition": f"GO_{t.upper()}"} for t in targets]
        nodes[x] = {"name": x, "edges": edges, "activation": "any"}
    return names, nodes


@settings(max_examples=100, deadline=None)
@given(graphflows())
def test_graphflow_speaker_graph_matches_its_edges(cfg):
    names, nodes = cfg
    team = {"provider": "autogen_agentchat.teams.GraphFlow", "component_type": "team",
            "config": {"participants": [_agent(x) for x in names],
                       "graph": {"nodes": nodes, "default_start_node": names[0]}}}
    result = migrate(_json.dumps(team), "graph.json")
    block = turnflow.parse(result.text).blocks[0]
    want = set()
    for x, node in nodes.items():
        if not node["edges"]:
            want.add((x, END))  # leaf: graph complete
        for e in node["edges"]:
            want.add((x, e["target"]))
        if node["edges"] and all(e["condition"] for e in node["edges"]):
            want.add((x, END))  # every condition may fail: no edge matched
    assert graph_edges(block) == want == reference_edges(block), result.text
