"""The reading surface of `turnflow migrate` (issue 31): every parameter of every framework call
the front ends recognise is classified — read, irrelevant to speaker order, or not modelled (a
TF4xx finding at the argument) — and the table matches `inspect.signature` of the installed
frameworks: autogen-agentchat 0.7 in this environment, AG2 0.9 (the classic `autogen` package)
under the classic environment (`bash .ci/classic-env`; skipped without it). A release that adds,
removes, reorders or changes a parameter fails here instead of being read wrongly."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnflow.migrate import surface
from turnflow.migrate.rules import DOCS

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from surface_signatures import signatures  # noqa: E402


def _table(family: str) -> dict[str, list]:
    return {a.target: [[p.kind, p.name, p.required] for p in a.params]
            for a in surface.API.values() if a.family == family}


def _differences(table: dict[str, list], real: dict) -> list[str]:
    out = []
    for target, want in table.items():
        got = real.get(target)
        if got != want:
            missing = [p for p in (got or []) if isinstance(got, list) and p not in want]
            out.append(f"{target}: the framework has {got}, the table {want}"
                       + (f"; unclassified: {[p[1] for p in missing]}" if missing else ""))
    return out


def test_every_agentchat_parameter_is_classified_as_the_installed_release_has_it():
    pytest.importorskip("autogen_agentchat")
    table = _table("agentchat")
    assert len(table) >= 25
    assert not _differences(table, signatures(list(table)))


def test_every_classic_ag2_parameter_is_classified_as_ag2_0_9_has_it():
    from test_migrate_live import _classic_python

    python = _classic_python()
    table = _table("ag2")
    assert len(table) >= 35
    run = subprocess.run([python, str(HERE / "surface_signatures.py"), *table], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=""))
    assert run.returncode == 0, run.stderr[-2000:]
    assert not _differences(table, json.loads(run.stdout))


def test_every_row_says_how_and_why_and_findings_have_a_documented_code():
    for a in surface.API.values():
        assert a.params or a.note, a.name
        for p in a.params:
            assert p.how in (surface.READ, surface.IRRELEVANT, surface.NOT_MODELLED), (a.name, p.name)
            assert len(p.why) > 8, (a.name, p.name)
            assert (p.how == surface.NOT_MODELLED) == bool(p.code), (a.name, p.name)
            assert not p.code or p.code in DOCS, (a.name, p.name, p.code)


def test_docs_migrate_md_holds_the_table_generated_from_the_same_data():
    docs = (HERE.parent / "docs" / "migrate.md").read_text(encoding="utf-8")
    assert surface.markdown() in docs, "docs/migrate.md: paste `python -c 'from turnflow.migrate.surface import " \
        "markdown; print(markdown())'` into the section 'What is read'"


def _call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


@pytest.mark.parametrize("positional, keyword", [
    ("RoundRobinGroupChat([a, b], termination_condition=t)", "RoundRobinGroupChat(participants=[a, b], "
                                                              "termination_condition=t)"),
    ("h.add_llm_condition(OnCondition(target=x, condition=y))", "h.add_llm_condition(condition=OnCondition("
                                                                "target=x, condition=y))"),
    ("GroupChat([a, b], [], 5)", "GroupChat(agents=[a, b], messages=[], max_round=5)"),
])
def test_positional_and_keyword_forms_bind_alike(positional, keyword):
    def bound(text):
        call = _call(text)
        name = call.func.id if isinstance(call.func, ast.Name) else f"Handoffs.{call.func.attr}"
        a = surface.api("ag2", name) or surface.api("agentchat", name)
        b = surface.bind(call, a)
        assert b.problem is None
        return {k: ast.unparse(v) for k, v in b.args.items()}

    assert bound(positional) == bound(keyword)


@pytest.mark.parametrize("text, args", [
    ("RoundRobinGroupChat([a, b], t)", ([], None)),
    ("RoundRobinGroupChat()", ()),
    ("RoundRobinGroupChat([a], max_turn=3)", ([],)),
    ("TextMentionTermination()", ()),
    ("MaxMessageTermination(3, False, 1)", (3, False, 1)),
    ("RoundRobinGroupChat([a], t, max_turns=3)", ([], None)),
])
def test_a_call_that_does_not_bind_gets_the_frameworks_own_error(text, args):
    pytest.importorskip("autogen_agentchat")
    import autogen_agentchat.conditions as conditions
    import autogen_agentchat.teams as teams

    call = _call(text)
    name = call.func.id
    b = surface.bind(call, surface.api("agentchat", name))
    assert b.problem is not None
    cls = getattr(teams, name, None) or getattr(conditions, name)
    kwargs = {"max_turn": 3} if "max_turn=" in text else {"max_turns": 3} if "max_turns=" in text else {}
    with pytest.raises(TypeError) as err:
        cls(*args, **kwargs)
    assert b.problem[1] == str(err.value)


@pytest.mark.parametrize("text", ["RoundRobinGroupChat(*members)", "RoundRobinGroupChat([a], **settings)"])
def test_arguments_known_only_at_run_time_are_a_problem_at_the_argument(text):
    call = _call(text)
    b = surface.bind(call, surface.api("agentchat", "RoundRobinGroupChat"))
    assert b.problem is not None and "known only when the program runs" in b.problem[1]
    assert b.problem[0] in call.args or b.problem[0] in [k.value for k in call.keywords]


POSITIONAL_TEAM = '''from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="sk-test")
primary = AssistantAgent("primary", model_client=client)
critic = AssistantAgent("critic", model_client=client)
termination = TextMentionTermination("APPROVE")
team = RoundRobinGroupChat([primary, critic], termination, max_turns=6)
'''


def test_autogen_0_4s_positional_team_call_is_tf411_with_the_error_0_7_raises():
    """Issue 31 (4): `RoundRobinGroupChat([a, b], termination)` (AutoGen 0.4's signature) raises a
    TypeError under 0.7; the migrator says so at the argument, with the framework's words."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.teams import RoundRobinGroupChat

    from turnflow.migrate import migrate

    result = migrate(POSITIONAL_TEAM, "team.py")
    (d,) = [d for d in result.diagnostics if d.code == "TF411"]
    assert (d.span.line, d.span.column) == (10, 47)  # at `termination`
    with pytest.raises(TypeError) as err:
        RoundRobinGroupChat([], None, max_turns=6)  # type: ignore[misc]
    assert str(err.value) in d.message


def test_an_agentchat_setting_the_flow_does_not_model_is_a_finding_at_the_argument():
    text = POSITIONAL_TEAM.replace('TextMentionTermination("APPROVE")',
                                   'TextMentionTermination("APPROVE") | MaxMessageTermination(9, include_agent_event=True)')
    text = text.replace("import TextMentionTermination", "import MaxMessageTermination, TextMentionTermination")
    text = text.replace("termination, max_turns=6)", "termination_condition=termination, max_turns=6)")
    from turnflow.migrate import migrate

    result = migrate(text, "team.py")
    (d,) = [d for d in result.diagnostics if d.code == "TF405"]
    assert "include_agent_event" in d.message and d.span.line == 9
    assert not [d for d in result.diagnostics if d.code == "TF411"]


PATTERN = '''from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (AgentTarget, ExpressionContextCondition, ContextExpression, OnCondition,
                                     OnContextCondition, StringAvailableCondition, StringLLMCondition)
from autogen.agentchat.group.patterns import DefaultPattern

a = ConversableAgent(name="a")
b = ConversableAgent(name="b")
a.handoffs.add_context_condition(OnContextCondition(
    target=AgentTarget(b), condition=ExpressionContextCondition(ContextExpression("${ready} == True")),
    available=StringAvailableCondition("enabled")))
a.handoffs.add_llm_condition(OnCondition(AgentTarget(b), StringLLMCondition("when b is needed")))
pattern = DefaultPattern(initial_agent=a, agents=[a, b])
initiate_group_chat(pattern=pattern, messages="x", max_rounds=5)
'''


def test_condition_calls_are_bound_and_their_availability_is_a_finding():
    from turnflow.migrate import migrate

    diags = migrate(PATTERN, "p.py").diagnostics
    assert [(d.code, d.span.line) for d in diags if d.code in ("TF406", "TF411")] == [("TF406", 11), ("TF411", 12)]
    (bad,) = [d for d in diags if d.code == "TF411"]
    assert "BaseModel.__init__() takes 1 positional argument but 3 were given" in bad.message  # AG2 0.9's words


def test_graph_builder_calls_are_bound_and_conditional_edges_are_a_finding():
    """`add_node(agent=x)` is `add_node(x)` (it was refused: the reader asked for `node=`), and
    `add_conditional_edges`, which the reader does not follow, is a finding, not silence."""
    from turnflow.migrate import migrate

    head = POSITIONAL_TEAM.split("termination = ")[0].replace(
        "from autogen_agentchat.teams import RoundRobinGroupChat", "from autogen_agentchat.teams import DiGraphBuilder, GraphFlow")
    text = head + '''builder = DiGraphBuilder()
builder.add_node(agent=primary).add_node(critic)
builder.add_edge(primary, critic)
builder.add_conditional_edges(critic, {"again": primary})
flow = GraphFlow(participants=builder.get_participants(), graph=builder.build())
'''
    result = migrate(text, "graph.py")
    assert "primary -> critic" in result.text
    (d,) = [d for d in result.diagnostics if d.code == "TF406"]
    assert d.span.line == 12 and "not read" in d.message


CLASSIC = '''from autogen import AssistantAgent, ConversableAgent, GroupChat, GroupChatManager, UserProxyAgent
user = UserProxyAgent(name="user", code_execution_config=False)
a = {agent}
b = AssistantAgent(name="b")
chat = GroupChat(agents=[a, b], messages=[], max_round=6, speaker_selection_method="round_robin")
manager = GroupChatManager(groupchat=chat)
user.initiate_chat(manager, message="go"{run})
'''
PATTERN_SRC = '''from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, OnCondition, OnContextCondition, StringLLMCondition
from autogen.agentchat.group import StringAvailableCondition, StringContextCondition
from autogen.agentchat.group.patterns import DefaultPattern
a = ConversableAgent(name="a", {agent})
b = ConversableAgent(name="b")
a.handoffs.{handoff}
pattern = DefaultPattern(initial_agent=a, agents=[a, b])
initiate_group_chat(pattern=pattern, messages="x", max_rounds=5)
'''
AGENTCHAT = POSITIONAL_TEAM.replace("termination, max_turns=6)", "termination_condition=termination, max_turns=6)")
# each not-modelled parameter, in a source that gives it: (source, the argument's text)
NOT_MODELLED_CASES = {
    ("ag2", "ConversableAgent", "is_termination_msg"): (PATTERN_SRC.format(
        agent='is_termination_msg=lambda m: "DONE" in m["content"]', handoff="set_after_work(AgentTarget(b))"),
        'lambda m: "DONE"'),
    ("ag2", "ConversableAgent", "max_consecutive_auto_reply"): (CLASSIC.format(
        agent='ConversableAgent(name="a", max_consecutive_auto_reply=2)', run=""), "2)"),
    ("ag2", "ConversableAgent", "handoffs"): (CLASSIC.format(agent='ConversableAgent(name="a", handoffs=prepared)',
                                                             run=""), "prepared)"),
    ("ag2", "AssistantAgent", "is_termination_msg"): (PATTERN_SRC.replace("a = ConversableAgent", "a = AssistantAgent")
                                                      .replace("from autogen import ConversableAgent",
                                                               "from autogen import AssistantAgent, ConversableAgent")
                                                      .format(agent='is_termination_msg=lambda m: False',
                                                              handoff="set_after_work(AgentTarget(b))"),
                                                      "lambda m: False"),
    ("ag2", "AssistantAgent", "max_consecutive_auto_reply"): (CLASSIC.format(
        agent='AssistantAgent(name="a", max_consecutive_auto_reply=3)', run=""), "3)"),
    ("ag2", "UserProxyAgent", "is_termination_msg"): (PATTERN_SRC.replace("a = ConversableAgent", "a = UserProxyAgent")
                                                      .replace("from autogen import ConversableAgent",
                                                               "from autogen import ConversableAgent, UserProxyAgent")
                                                      .format(agent='is_termination_msg=lambda m: True',
                                                              handoff="set_after_work(AgentTarget(b))"),
                                                      "lambda m: True"),
    ("ag2", "UserProxyAgent", "max_consecutive_auto_reply"): (CLASSIC.format(
        agent='UserProxyAgent(name="a", max_consecutive_auto_reply=4)', run=""), "4)"),
    ("ag2", "ConversableAgent.initiate_chat", "max_turns"): (CLASSIC.format(
        agent='AssistantAgent(name="a")', run=", max_turns=2"), "2)"),
    ("ag2", "OnCondition", "available"): (PATTERN_SRC.format(agent="", handoff=(
        'add_llm_condition(OnCondition(target=AgentTarget(b), condition=StringLLMCondition("b"), '
        'available=StringAvailableCondition("ok")))')), 'StringAvailableCondition("ok")'),
    ("ag2", "OnContextCondition", "available"): (PATTERN_SRC.format(agent="", handoff=(
        'add_context_condition(OnContextCondition(target=AgentTarget(b), condition=StringContextCondition('
        'variable_name="go"), available=StringAvailableCondition("ok")))')), 'StringAvailableCondition("ok")'),
    ("agentchat", "DiGraphBuilder.add_conditional_edges", "condition_to_target"): (
        AGENTCHAT.split("termination = ")[0].replace("import RoundRobinGroupChat", "import DiGraphBuilder, GraphFlow")
        + '''builder = DiGraphBuilder()
builder.add_node(primary).add_node(critic)
builder.add_edge(primary, critic)
builder.add_conditional_edges(critic, {"again": primary})
flow = GraphFlow(participants=builder.get_participants(), graph=builder.build())
''', '{"again": primary}'),
    ("agentchat", "MaxMessageTermination", "include_agent_event"): (
        AGENTCHAT.replace('TextMentionTermination("APPROVE")', 'MaxMessageTermination(5, include_agent_event=True)')
        .replace("import TextMentionTermination", "import MaxMessageTermination"), "True)"),
}


def test_every_not_modelled_parameter_has_a_case():
    rows = {(a.family, a.name, p.name) for a in surface.API.values() for p in a.params
            if p.how == surface.NOT_MODELLED}
    assert rows == set(NOT_MODELLED_CASES)


@pytest.mark.parametrize("row", sorted(NOT_MODELLED_CASES), ids=lambda r: f"{r[1]}.{r[2]}")
def test_a_not_modelled_argument_is_a_finding_at_the_argument(row):
    """The table's promise, kept by the front ends: an argument given to a not-modelled parameter
    is its TF4xx at the argument, never silence."""
    from turnflow.migrate import migrate

    source, needle = NOT_MODELLED_CASES[row]
    code = next(p.code for p in surface.API[row[:2]].params if p.name == row[2])
    line_no = next(i for i, ln in enumerate(source.splitlines(), 1) if needle in ln)
    column = source.splitlines()[line_no - 1].index(needle) + 1
    diags = migrate(source, "case.py").diagnostics
    assert any(d.code == code and (d.span.line, d.span.column) == (line_no, column) for d in diags), \
        [(d.code, d.span.line, d.span.column, d.message[:80]) for d in diags]
