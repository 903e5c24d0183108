"""`turnflow migrate` on the shapes real code takes (issue 13): family detection by what a
file builds, wrong-guess suggestions, scoping, static unrolling, branch-level degradation of
selection functions, bounded output for huge chats, and bad numeric caps (issue 14 #11)."""

from __future__ import annotations

import math

import pytest

import turnflow
from turnflow.cli import main
from turnflow.migrate import MigrateError, detect, migrate
from test_migrate import END, reference_edges

CLASSIC_HEAD = '''import autogen
llm_config = {"model": "gpt-4o"}
a = autogen.AssistantAgent(name="a", llm_config=llm_config)
b = autogen.AssistantAgent(name="b", llm_config=llm_config)
c = autogen.AssistantAgent(name="c", llm_config=llm_config)
'''


def _edges(text: str, family=None) -> tuple[set, list]:
    result = migrate(text, "case.py", family)
    flow = turnflow.parse(result.text)
    assert not [d for d in turnflow.check(result.text) if d.severity == "error"]
    edges = set()
    for block in flow.blocks:
        edges |= reference_edges(block)
    return edges, result.diagnostics


# -- agents' settings ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["RetrieveUserProxyAgent", "RetrieverAgent", "AssistantAgent"])
def test_settings_passed_as_a_mapping_known_at_run_time_are_reported(cls):
    """`**load_settings()` on an agent: which keywords it passes is known only when the program runs.
    Before, an agent class outside the migrator's table (a contrib agent, the team's own subclass)
    lost its `is_termination_msg` there without a word; AssistantAgent already had TF411."""
    text = ("from autogen import AssistantAgent, ConversableAgent, GroupChat, GroupChatManager\n"
            "from autogen.agentchat.contrib.retrieve_user_proxy_agent import RetrieveUserProxyAgent\n"
            "from settings import load_settings\n"
            "class RetrieverAgent(ConversableAgent):\n"
            "    pass\n"
            f"retriever = {cls}(name='retriever', **load_settings())\n"
            "answerer = AssistantAgent(name='answerer', llm_config={})\n"
            "chat = GroupChat(agents=[retriever, answerer], messages=[], max_round=6,\n"
            "                 speaker_selection_method='round_robin')\n"
            "manager = GroupChatManager(groupchat=chat)\n"
            "retriever.initiate_chat(manager, message='go')\n")
    result = migrate(text, "x.py")
    found = [d for d in result.diagnostics if d.code == "TF411"]
    assert [(d.span.line, d.span.column) for d in found] == [(6, len(f"retriever = {cls}(name='retriever', **") + 1)]
    assert "`**load_settings()` passes keywords known only when the program runs" in found[0].message
    assert "the agent's settings are not read" in found[0].message


@pytest.mark.parametrize("loop", ["for w in workers.values():", "for name, w in workers.items():",
                                  "for w in load_workers():"])
def test_graph_nodes_added_in_a_loop_that_is_not_unrolled_say_so(loop):
    """Before: "`add_node` is given something that is not an agent created in this file" for agents
    that are created in this file, in a dict literal (a public medical-orchestrator GraphFlow)."""
    text = ("from autogen_agentchat.agents import AssistantAgent\n"
            "from autogen_agentchat.teams import DiGraphBuilder, GraphFlow\n"
            "from workers import load_workers\n"
            "boss = AssistantAgent('boss', model_client=None)\n"
            "workers = {'rag': AssistantAgent('rag', model_client=None), 'web': AssistantAgent('web', model_client=None)}\n"
            "builder = DiGraphBuilder()\n"
            "builder.add_node(boss)\n"
            f"{loop}\n"
            "    builder.add_node(w)\n"
            "    builder.add_edge(boss, w)\n"
            "team = GraphFlow(participants=builder.get_participants(), graph=builder.build())\n")
    with pytest.raises(MigrateError) as err:
        migrate(text, "x.py")
    (d,) = err.value.diagnostics
    assert d.code == "TF401" and (d.span.line, d.span.column) == (9, 5), d
    assert "in a loop the migrator cannot unroll" in d.message and "not an agent created" not in d.message, d.message


_MANAGER_SUBCLASS = """import autogen
a = autogen.AssistantAgent(name="a", llm_config={})
b = autogen.AssistantAgent(name="b", llm_config={})
c = autogen.AssistantAgent(name="c", llm_config={})
class LoggingManager(autogen.GroupChatManager):
BODY
gc = autogen.GroupChat(agents=[a, b, c], messages=[], max_round=5, speaker_selection_method="round_robin")
m = LoggingManager(groupchat=gc, llm_config={})
b.initiate_chat(m, message="go", max_turns=2)
"""


@pytest.mark.parametrize("body", ["    pass", "    def run_chat(self, messages=None, sender=None, config=None):\n"
                                            "        return super().run_chat(messages, sender, config)"])
def test_a_group_chat_manager_subclass_of_the_file_is_the_chat_s_manager(body):
    """Before: "TF408 no call that starts this group chat was found ... assumed the first agent, `a`"
    although `b.initiate_chat(m, ...)` starts it; `max_turns=2` was not reported either."""
    text = _MANAGER_SUBCLASS.replace("BODY", body)
    result = migrate(text, "x.py")
    run_line = text.splitlines().index('b.initiate_chat(m, message="go", max_turns=2)') + 1
    (block,) = turnflow.parse(result.text).blocks
    start = next(st.name.name for st in block.statements if type(st).__name__ == "Start")
    assert start == "b" and [p.name.name for p in block.participants if p.role == "initiator"] == ["b"]
    codes = {(d.code, d.span.line) for d in result.diagnostics}
    assert not any(code == "TF408" for code, _ in codes), result.diagnostics
    assert ("TF405", run_line) in codes  # max_turns=2: the group chat runs again
    if "def run_chat" in body:  # what the override changes is not read: said at the method
        assert any(code.startswith("TF4") and line == 6 for code, line in codes), result.diagnostics


def test_a_file_cut_before_its_chat_reports_the_syntax_error_where_it_is():
    """A source truncated before its GroupChat (a partial copy, a bad merge) does not parse. Before:
    "1:1: cannot tell what this file is ... (use --from to say which)", which hides the syntax error;
    38 of 54 truncations of public AG2 / AutoGen files read that way. The same in a notebook's cells."""
    import json

    text = 'import autogen\na = autogen.AssistantAgent(name="a", llm_config={}\nb = 1\n'
    with pytest.raises(MigrateError) as err:
        migrate(text, "cut.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("TF401", 2, 27) and "Python syntax error" in d.message, d
    notebook = json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# a team"]},
                                     {"cell_type": "code", "metadata": {}, "source": ["import autogen\n", "x = ("]}],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    with pytest.raises(MigrateError) as err:
        migrate(notebook, "cut.ipynb")
    (d,) = err.value.diagnostics
    assert "Python syntax error" in d.message and d.cell is not None and (d.cell.cell, d.cell.line) == (2, 2), d
    # a file that parses and builds nothing still says so
    with pytest.raises(MigrateError) as err:
        migrate("import autogen\n", "empty.py")
    assert "cannot tell what this file is" in err.value.diagnostics[0].message


@pytest.mark.parametrize("cls", ["AssistantAgent", "UserProxyAgent"])
def test_a_setting_of_an_agent_subclass_is_explained_like_conversable_agents(cls):
    """Before: "`2` as `max_consecutive_auto_reply` of `AssistantAgent`: as ConversableAgent's", a
    pointer into the migrator's table instead of what AG2 does with the setting."""
    text = (f"import autogen\na = autogen.{cls}(name='a', max_consecutive_auto_reply=2)\n"
            "b = autogen.AssistantAgent(name='b', llm_config={})\n"
            "gc = autogen.GroupChat(agents=[a, b], messages=[], max_round=4, speaker_selection_method='round_robin')\n"
            "m = autogen.GroupChatManager(groupchat=gc)\na.initiate_chat(m, message='go')\n")
    (d,) = [d for d in migrate(text, "x.py").diagnostics if "max_consecutive_auto_reply" in d.message]
    assert d.message.endswith("the flow has no such limit") and "as ConversableAgent's" not in d.message, d.message
    assert f"of `{cls}`" in d.message


# -- family detection -------------------------------------------------------------------------
@pytest.mark.parametrize("forced", [None, "classic", "ag2-patterns", "autogen"])
def test_a_hand_written_langgraph_graph_is_refused_saying_migrate_does_not_read_it(forced):
    """Before: "cannot tell what this file is ... (use --from to say which)", at 1:1, and every
    --from then failed with "nothing to migrate" and no hint."""
    from pathlib import Path

    case = Path(__file__).parent / "fixtures" / "migrate" / "errors" / "langgraph_handwritten.py"
    with pytest.raises(MigrateError) as err:
        migrate(case.read_text(encoding="utf-8"), case.name, forced)
    d = err.value.diagnostics[0]
    assert d.code == "TF401" and "LangGraph `StateGraph`, which `turnflow migrate` does not read" in d.message
    if forced is None:
        assert (d.span.line, d.span.column) == (22, 9)


def test_a_classic_chat_that_imports_pattern_classes_is_classic():
    text = ("from autogen.agentchat.group.patterns import DefaultPattern, AutoPattern  # imported, unused\n"
            "from autogen.agentchat import initiate_group_chat\n" + CLASSIC_HEAD
            + "chat = autogen.GroupChat(agents=[a, b], messages=[], speaker_selection_method='round_robin')\n")
    assert detect(text) == "classic"
    edges, _ = _edges(text)
    assert edges == {("a", "b"), ("b", "a")}


def test_autogen_python_is_detected_by_the_team_it_builds():
    text = ("from autogen_agentchat.teams import RoundRobinGroupChat, GroupChat\n"
            "from autogen_agentchat.agents import AssistantAgent\n"
            "x = AssistantAgent('x', model_client=m)\ny = AssistantAgent('y', model_client=m)\n"
            "team = RoundRobinGroupChat([x, y], max_turns=4)\n")
    assert detect(text) == "autogen"
    edges, _ = _edges(text)
    assert edges == {("x", "y"), ("y", "x")}


@pytest.mark.parametrize("forced, built, hint", [
    ("autogen", "classic", "try --from classic"),
    ("ag2-patterns", "classic", "try --from classic"),
])
def test_a_wrong_from_suggests_the_family_the_file_builds(forced, built, hint):
    text = CLASSIC_HEAD + "chat = autogen.GroupChat(agents=[a, b], messages=[])\n"
    assert detect(text) == built
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py", forced)
    assert hint in err.value.diagnostics[0].message


def test_json_given_to_a_python_front_end_suggests_autogen(capsys):
    from pathlib import Path

    case = Path(__file__).parent / "fixtures" / "migrate" / "autogen" / "round_robin_reflection.json"
    assert main(["migrate", str(case), "--from", "classic"]) == 1
    assert "try --from autogen" in capsys.readouterr().err


# -- scoping, factories, literal lists and loops ------------------------------------------------
def test_same_names_in_two_functions_resolve_per_function():
    text = CLASSIC_HEAD + '''
def first():
    x = autogen.AssistantAgent(name="x1")
    chat = autogen.GroupChat(agents=[a, x], messages=[], speaker_selection_method="round_robin")
    mgr = autogen.GroupChatManager(groupchat=chat)
    x.initiate_chat(mgr, message="hi")

def second():
    x = autogen.AssistantAgent(name="x2")
    chat = autogen.GroupChat(agents=[x, b, c], messages=[], speaker_selection_method="round_robin")
    mgr = autogen.GroupChatManager(groupchat=chat)
    c.initiate_chat(mgr, message="hi")
'''
    result = migrate(text, "case.py")
    flow = turnflow.parse(result.text)
    blocks = {blk.name.name: blk for blk in flow.blocks}
    assert set(blocks) == {"chat_first", "chat_second"}
    assert reference_edges(blocks["chat_first"]) == {("a", "x1"), ("x1", "a")}
    assert [s.name.name for s in blocks["chat_second"].statements if type(s).__name__ == "Start"] == ["c"]
    assert reference_edges(blocks["chat_second"]) == {("x2", "b"), ("b", "c"), ("c", "x2")}


def test_loop_over_a_literal_list_is_unrolled_and_other_loops_are_refused_with_the_reason():
    text = CLASSIC_HEAD + '''
members = [a]
for extra in (b, c):
    members.append(extra)
chat = autogen.GroupChat(agents=members, messages=[], speaker_selection_method="round_robin")
'''
    edges, _ = _edges(text)
    assert edges == {("a", "b"), ("b", "c"), ("c", "a")}
    text = CLASSIC_HEAD + '''
members = []
for i in range(int(os.environ["N_AGENTS"])):
    members.append(autogen.AssistantAgent(name=f"agent_{i}"))
chat = autogen.GroupChat(agents=members, messages=[])
'''
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    message = err.value.diagnostics[0].message
    assert "filled in a loop" in message and "two agents" not in message


def test_agents_written_inline_in_the_list_and_tuple_unpacking():
    text = '''import autogen
user, helper = autogen.UserProxyAgent(name="user"), autogen.AssistantAgent(name="helper")
chat = autogen.GroupChat(agents=[user, helper, autogen.AssistantAgent(name="checker")], messages=[],
                         speaker_selection_method="round_robin")
'''
    edges, _ = _edges(text)
    assert edges == {("user", "helper"), ("helper", "checker"), ("checker", "user")}


# -- selection functions: an unreadable branch degrades alone ----------------------------------------
def test_an_unreadable_branch_degrades_only_itself():
    text = CLASSIC_HEAD + '''
import random
def pick(last_speaker, groupchat):
    if last_speaker is a:
        return b
    if last_speaker is b:
        if random.random() > 0.5:
            return a
        return c
    return None
chat = autogen.GroupChat(agents=[a, b, c], messages=[], speaker_selection_method=pick)
'''
    edges, diags = _edges(text)
    assert edges == {("a", "b"), ("b", "a"), ("b", "c"), ("c", END)}
    tf406 = [d for d in diags if d.code == "TF406"]
    assert len(tf406) == 1 and tf406[0].span.line == text.splitlines().index(
        "        if random.random() > 0.5:") + 1
    assert not [d for d in diags if d.code == "TF404"]  # the function as a whole is read


def test_or_of_text_tests_gives_one_rule_per_alternative_and_case_folding_is_noted():
    text = CLASSIC_HEAD + '''
def pick(last_speaker, groupchat):
    msg = groupchat.messages[-1]["content"]
    if last_speaker.name == "a" and ("DONE" in msg or "FINISHED" in msg.lower()):
        return c
    if last_speaker.name in ["a", "c"]:
        return b
    return a
chat = autogen.GroupChat(agents=[a, b, c], messages=[], speaker_selection_method=pick)
'''
    result = migrate(text, "case.py")
    assert 'a -> c when text contains "DONE"' in result.text
    assert 'a -> c when text contains "FINISHED"' in result.text
    assert any(d.code == "TF406" and "case-folded" in d.message for d in result.diagnostics)
    edges, _ = _edges(text)
    assert edges == {("a", "c"), ("a", "b"), ("c", "b"), ("b", "a")}


# -- bounded output ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["classic", "ag2"])
def test_a_huge_chat_is_bounded_and_says_so(kind):
    n = 300
    if kind == "classic":
        text = "import autogen\n" + "".join(f"a{i} = autogen.AssistantAgent(name='agent_{i}')\n" for i in range(n))
        text += "chat = autogen.GroupChat(agents=[" + ", ".join(f"a{i}" for i in range(n)) + "], messages=[])\n"
    else:
        text = ("from autogen import ConversableAgent\nfrom autogen.agentchat.group.patterns import AutoPattern\n"
                + "".join(f"a{i} = ConversableAgent(name='agent_{i}')\n" for i in range(n))
                + "p = AutoPattern(initial_agent=a0, agents=[" + ", ".join(f"a{i}" for i in range(n)) + "])\n")
    result = migrate(text, "big.py")
    from turnflow.migrate.common import MAX_ROUTES

    assert result.text.count("handoff ") <= n * MAX_ROUTES
    assert len(result.text) < 3_000_000  # uncapped: every speaker routes to all others (~n² lines)
    assert any(d.code == "TF403" and f"only the first {MAX_ROUTES}" in d.message for d in result.diagnostics)


# -- bad numeric caps (issue 14 #11) ---------------------------------------------------------------------
@pytest.mark.parametrize("value, used, words", [
    ("-3", 1, "lets no agent speak"), ("0", 1, "lets no agent speak"), ("2.5", 10, "not a whole number"),
    ("1e999", 10, "infinite"), ("float('nan')", 10, "cannot evaluate"), ("'12'", 10, "str"),
    ("config['rounds']", 10, "cannot evaluate"),
])
def test_bad_max_round_is_a_tf405_with_the_value_used(value, used, words):
    text = CLASSIC_HEAD + f"chat = autogen.GroupChat(agents=[a, b], messages=[], max_round={value})\n"
    result = migrate(text, "case.py")
    assert f"max_turns {used}\n" in result.text
    notes = [d for d in result.diagnostics if d.code == "TF405" and "max_round" in d.message]
    assert notes and words in notes[0].message


@pytest.mark.parametrize("value, words", [
    ("-1", "not a positive whole number"), ("2.5", "not a whole number"), ('"ten"', "not a whole number"),
    ("true", "not a whole number")])
def test_bad_max_turns_and_max_messages_in_json_are_reported(value, words):
    import json

    team = {"provider": "autogen_agentchat.teams.RoundRobinGroupChat", "config": {
        "participants": [{"provider": "x.AssistantAgent", "config": {"name": "p"}},
                         {"provider": "x.AssistantAgent", "config": {"name": "q"}}],
        "max_turns": "MAX",
        "termination_condition": {"provider": "autogen_agentchat.conditions.MaxMessageTermination",
                                  "config": {"max_messages": "MAX"}}}}
    text = json.dumps(team).replace('"MAX"', value)
    result = migrate(text, "team.json")
    notes = [d for d in result.diagnostics if d.code == "TF405"]
    assert len(notes) == 2 and all(words in d.message for d in notes)
    import re

    assert not re.search(r"^\s*max_turns \d", result.text, re.M)  # nothing usable: no cap is invented


def test_nan_and_infinity_are_not_numbers_the_migrator_uses():
    assert math.isinf(float("1e999"))
    text = CLASSIC_HEAD + "chat = autogen.GroupChat(agents=[a, b], messages=[], max_round=1e999)\n"
    assert "inf" not in migrate(text, "case.py").text.split("max_turns")[1].splitlines()[0]


def test_a_selection_function_with_exponentially_many_paths_is_bounded():
    import time

    tests = "".join(f"    if 'm{i}' in groupchat.messages[-1]['content']:\n        n{i} = 1\n" for i in range(40))
    text = CLASSIC_HEAD + f"def pick(last_speaker, groupchat):\n{tests}    return b\n" \
        + "chat = autogen.GroupChat(agents=[a, b, c], messages=[], speaker_selection_method=pick)\n"
    started = time.process_time()
    result = migrate(text, "case.py")
    assert time.process_time() - started < 20
    assert any(d.code == "TF404" and "too many paths" in d.message for d in result.diagnostics)


# -- AutoGen teams written in Python: details ----------------------------------------------------------
AUTOGEN_HEAD = '''from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import FunctionCallTermination, MaxMessageTermination
from autogen_agentchat.base import TerminationCondition
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, SelectorGroupChat
p = AssistantAgent("p", model_client=m)
q = AssistantAgent("q", model_client=m, tools=[approve])
r = AssistantAgent("r", model_client=m)
'''


def test_custom_termination_condition_is_dropped_with_a_tf405_and_function_calls_end():
    text = AUTOGEN_HEAD + '''
class BudgetTermination(TerminationCondition):
    pass

team = RoundRobinGroupChat([p, q], termination_condition=BudgetTermination() | FunctionCallTermination("approve"))
'''
    result = migrate(text, "team.py")
    assert any(d.code == "TF405" and "BudgetTermination" in d.message for d in result.diagnostics)
    edges, _ = _edges(text)
    assert edges == {("p", "q"), ("q", "p"), ("q", END)}


def test_graph_builder_with_keyword_arguments_and_an_any_join():
    text = AUTOGEN_HEAD + '''
builder = DiGraphBuilder()
builder.add_node(node=p).add_node(q).add_node(r, activation="any")
builder.add_edge(source=p, target=q)
builder.add_edge(p, r, condition="SKIP")
builder.add_edge(q, r)
flow = GraphFlow(participants=builder.get_participants(), graph=builder.build())
'''
    edges, diags = _edges(text)
    assert edges == {("p", "r"), ("p", "q"), ("q", "r"), ("r", END)}
    assert not [d for d in diags if d.code == "TF407"]  # r runs after either parent: exact


def test_candidate_func_alone_narrows_the_model_choice():
    text = AUTOGEN_HEAD + '''
def only_next(messages):
    if messages[-1].source == "p":
        return ["q"]
    if messages[-1].source == "q":
        return ["p", "r"]
    return [p.name, q.name, r.name]

team = SelectorGroupChat([p, q, r], model_client=m, candidate_func=only_next, max_turns=6)
'''
    edges, _ = _edges(text)
    # candidate_func replaces the no-repeat filter (AutoGen SelectorGroupChat): r may follow itself
    assert edges == {("p", "q"), ("q", "p"), ("q", "r"), ("r", "p"), ("r", "q"), ("r", "r")}


def test_manual_pattern_lets_the_user_nominate_any_agent_but_itself():
    text = """from autogen import ConversableAgent, UserProxyAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import ManualPattern
a = ConversableAgent(name="a")
b = ConversableAgent(name="b")
user = UserProxyAgent(name="user")
pattern = ManualPattern(initial_agent=a, agents=[a, b], user_agent=user)
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=6)
"""
    edges, diags = _edges(text)
    # AskUserTarget (AG2 patterns/manual.py): any agent, the speaker included, never the user; the user
    # never takes a turn of its own, so nothing returns from it
    assert {(x, y) for x, y in edges if x != "user"} == {("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")}
    assert any(d.code == "TF404" and "AskUserTarget" in d.message for d in diags)


def test_negated_text_tests_become_not_text_contains_and_run_on_ag2():
    text = CLASSIC_HEAD + '''
def pick(last_speaker, groupchat):
    content = groupchat.messages[-1]["content"]
    if last_speaker is a:
        if "APPROVED" not in content:
            return a
        return b
    if last_speaker is b:
        if not (content.startswith("OK") or "LGTM" in content):
            return a
        return c
    return None
chat = autogen.GroupChat(agents=[a, b, c], messages=[], speaker_selection_method=pick)
'''
    result = migrate(text, "case.py")
    assert 'a -> a when not text contains "APPROVED"' in result.text
    assert 'b -> a when not (text contains "OK" or text contains "LGTM")' in result.text
    assert "handoff" not in result.text  # no branch degraded to routing tools
    assert [d.code for d in result.diagnostics if d.code == "TF406"] == ["TF406"]  # startswith only
    edges, _ = _edges(text)
    assert edges == {("a", "a"), ("a", "b"), ("b", "a"), ("b", "c"), ("c", END)}
    pytest.importorskip("ag2.network")
    from ag2_session import Ag2Session

    s = Ag2Session(turnflow.compile(result.text)[0], creator="a")
    s.say("a", "draft")
    assert s.expected() == "a"  # not approved yet
    s.say("a", "APPROVED draft")
    s.say("b", "needs work")
    assert s.expected() == "a"
    s.say("a", "APPROVED v2")
    s.say("b", "Fine, LGTM")
    assert s.expected() == "c"


def test_graphflow_lambda_with_not_in_becomes_not_text_contains():
    text = '''from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
writer = AssistantAgent("writer", model_client=None)
critic = AssistantAgent("critic", model_client=None)
builder = DiGraphBuilder()
builder.add_node(writer).add_node(critic)
builder.add_edge(writer, critic)
builder.add_edge(critic, writer, condition=lambda msg: "APPROVE" not in msg.to_model_text())
builder.set_entry_point(writer)
flow = GraphFlow(participants=builder.get_participants(), graph=builder.build())
'''
    result = migrate(text, "case.py")
    assert 'critic -> writer when not text contains "APPROVE"' in result.text
    assert not [d for d in result.diagnostics if d.code == "TF406"]
    edges, _ = _edges(text)
    assert edges == {("writer", "critic"), ("critic", "writer"), ("critic", END)}
