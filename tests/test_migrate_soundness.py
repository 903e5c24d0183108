"""`turnflow migrate` is never silently wrong (issue 23, part 1).

tests/fixtures/migrate/soundness/<case>.py are inputs in the shape of public AG2 / AutoGen code,
one per construct that used to come out as a different speaker graph without a word. For each,
EXPECTED holds the source's speaker graph derived by hand (the comment says how) and the TF4xx
diagnostics the construct must carry, at its line: every edge is read from the source, or the
construct that made it approximate is reported where it is.
"""

from __future__ import annotations

import ast as pyast
from pathlib import Path

import pytest

import turnflow
from turnflow.migrate import migrate
from test_migrate import END, reference_edges

ROOT = Path(__file__).parent / "fixtures" / "migrate" / "soundness"
E = END

# case -> ({block: edges of the source}, [(code, line) the migration must report], [text in the flow])
EXPECTED: dict[str, tuple[dict, list, list]] = {
    # 1. membership decided at run time. --fake picks FakeExecutor or Executor (the flow follows the
    # `else` binding, TF410 at the `if`); --review appends Reviewer (the flow follows the branch
    # that appends, TF410 at the `if`); round robin in `team` order.
    "cli_variants": ({"groupchat": {("Admin", "Coder"), ("Coder", "Executor"), ("Executor", "Reviewer"),
                                    ("Reviewer", "Admin")}},
                     [("TF410", 17), ("TF410", 23)], ["participant Reviewer"]),
    # self.agents set in if / elif / else: the flow follows the `else` one ([user, writer]), TF410.
    "class_branches": ({"chat": {("user", "writer"), ("writer", "user")}}, [("TF410", 11)], []),
    # the termination condition built per branch: the `else` one, MaxMessageTermination(10) ->
    # max_turns 9, no TERMINATE rule; TF410 at the `if`.
    "termination_branch": ({"team": {("primary", "critic"), ("critic", "primary")}}, [("TF410", 16)],
                           ["max_turns 9"]),
    # a name the module binds twice, used in a function called between the two bindings: the flow
    # follows the last one (senior_writer), TF410 at it; round robin with the editor.
    "rebound_after_call": ({"chat": {("senior_writer", "editor"), ("editor", "senior_writer")}}, [("TF410", 19)],
                           ["participant senior_writer"]),
    # 2. agents looked up indirectly: the executor hands back to messages[-2]["name"] (`previous`,
    # i.e. the coder, the only agent that hands over to it); the user's loop finds `planner`.
    "selection_lookup": ({"groupchat": {("user_proxy", "planner"), ("planner", "coder"), ("coder", "executor"),
                                        ("coder", "planner"), ("executor", "coder")}},
                         [], ["executor -> previous", "user_proxy -> planner"]),
    # 3. values in literal containers: names and descriptions from AGENT_SPECS[i][...] in a
    # range(len(...)) loop, round robin and max_round from CHAT_SETUP.
    "literal_containers": ({"groupchat": {("user", "researcher"), ("researcher", "analyst"), ("analyst", "writer"),
                                          ("writer", "user")}},
                           [], ["max_turns 9", 'participant analyst    "Analyses sources."']),
    # 4. which call runs which chat: main() runs the global `pattern` when it is called, i.e. the
    # AutoPattern (max_rounds=7 -> 6 turns; the manager may pick anyone, the last speaker too);
    # the RoundRobinPattern is run by nothing (TF409 at it, and only at it).
    "async_main": ({"pattern": {("planner", "writer"), ("writer", "planner")},
                    "pattern_2": {("critic", "critic"), ("critic", "writer"), ("writer", "critic"),
                                  ("writer", "writer")}},
                   [("TF409", 15)], ["max_turns 6"]),
    # 5. two chats in one scope reusing `groupchat` / `manager`: two blocks with unique names, each
    # with its own initiator.
    "same_scope_chats": ({"groupchat": {("user", "outliner"), ("outliner", "drafter"), ("drafter", "user")},
                          "groupchat_2": {("user", "proofreader"), ("proofreader", "user")}},
                         [], ["start proofreader"]),
    # 6. first-turn guards: `not messages` never holds (the opening message is there); the
    # `len(messages) <= 1` guard picks the first speaker after user_proxy, who is never picked again.
    "first_turn_guard": ({"groupchat": {("user_proxy", "planner"), ("planner", "engineer"), ("engineer", "critic"),
                                        ("critic", "planner")}}, [], []),
    # 7. AG2's group manager after triage's work may pick any agent of the GroupChat, triage itself
    # included (allow_repeat_speaker defaults to None, which AG2 turns into True); billing and tech
    # revert to the user, who returns to the agent that spoke before it.
    "manager_after_work": ({"pattern": {("triage", x) for x in ("triage", "billing", "tech", "user")}
                            | {("billing", "user"), ("tech", "user"), ("user", "triage"), ("user", "billing"),
                               ("user", "tech")}},
                           [("TF403", 14)], []),
    # 8. GraphFlow fan-out writer -> {fact_checker, editor}: run one after the other (TF407 states the
    # order and that they no longer run in parallel); fact_checker's edge back to researcher is lost
    # (TF407 says so at fact_checker).
    "graphflow_diverge": ({"flow": {("researcher", "writer"), ("writer", "fact_checker"), ("fact_checker", "editor"),
                                    ("editor", "publisher"), ("publisher", E)}},
                          [("TF407", 15)], []),
    # 1 (calls). A configuration call under an `if` the chat is not in: the flow reads it as if it
    # always ran, TF410 at the call naming the `if`. triage hands to billing, and to tech only with
    # TECH_SUPPORT; billing's after-work is tech only with --escalate (else the user); tech reverts
    # to the user, who returns to the agent before it; triage without after-work: the group's terminate.
    "conditional_handoffs": ({"pattern": {("triage", "billing"), ("triage", "tech"), ("triage", E),
                                          ("billing", "tech"), ("tech", "user"), ("user", "tech")}},
                             [("TF410", 23), ("TF410", 28)], []),
    # The revision edge exists only with REVISION_LOOP=1: publisher -> writer on "REVISE", else the
    # graph ends at publisher; TF410 at that add_edge.
    "conditional_edges": ({"flow": {("researcher", "writer"), ("writer", "publisher"), ("publisher", "writer"),
                                    ("publisher", E)}}, [("TF410", 20)], []),
    # The transitions dict changed after its literal: engineer -> reviewer always (read), reviewer ->
    # planner / user_proxy only with --strict-review (TF410 at the `if`). `auto` selection: every
    # allowed successor is an edge.
    # banned transitions: the ban added before GroupChat(...) counts, the two after it change nothing
    # (AG2 inverts a disallowed dict when the chat is built): TF409 at each of them
    "disallowed_changed": ({"groupchat": {("user_proxy", "user_proxy"), ("user_proxy", "coder"), ("coder", "coder"),
                                          ("coder", "critic"), ("critic", "user_proxy"), ("critic", "coder"),
                                          ("critic", "critic")}}, [("TF409", 26), ("TF409", 27)], []),
    "transitions_changed": ({"groupchat": {("user_proxy", "planner"), ("planner", "engineer"), ("engineer", "planner"),
                                           ("engineer", "reviewer"), ("reviewer", "engineer"), ("reviewer", "planner"),
                                           ("reviewer", "user_proxy")}}, [("TF410", 27)], []),
}


def _run(case: str):
    path = ROOT / f"{case}.py"
    result = migrate(path.read_text(encoding="utf-8"), path.name)
    assert not [d for d in turnflow.check(result.text) if d.severity == "error"], result.text
    flow = turnflow.parse(result.text)
    return result, {b.name.name: reference_edges(b) for b in flow.blocks}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_migrated_graph_is_the_sources_or_the_construct_is_reported(case):
    edges, notes, texts = EXPECTED[case]
    result, got = _run(case)
    assert got == edges
    reported = {(d.code, d.span.line) for d in result.diagnostics}
    assert set(notes) <= reported, sorted(reported)
    for text in texts:
        assert text in result.text


def test_every_fixture_of_the_soundness_corpus_is_listed():
    assert sorted(p.stem for p in ROOT.glob("*.py")) == sorted(EXPECTED)


def test_run_time_choices_name_the_branch_and_every_alternative():
    result, _ = _run("cli_variants")
    by_line = {d.span.line: d.message for d in result.diagnostics if d.code == "TF410"}
    assert "`if args.fake:`" in by_line[17] and "FakeExecutor" in by_line[17] and "'Executor'" in by_line[17]
    assert "`if args.review:`" in by_line[23] and "[user_proxy, coder, executor]" in by_line[23]
    assert "# TF410:" in result.text  # also a comment in the flow


def test_no_false_statement_about_runs_and_parallel_branches():
    result, _ = _run("async_main")
    assert [(d.code, d.span.line) for d in result.diagnostics if d.code == "TF409"] == [("TF409", 15)]
    result, _ = _run("graphflow_diverge")
    messages = [d.message for d in result.diagnostics if d.code == "TF407"]
    assert any("writer -> fact_checker -> editor" in m and "no longer run in parallel" in m for m in messages)
    assert any("fact_checker" in m and "researcher are not in the flow" in m for m in messages)
    assert "taken by the last branch" not in result.text


def test_selection_lookups_leave_nothing_to_routing_tools():
    result, _ = _run("selection_lookup")
    assert not [d for d in result.diagnostics if d.code in ("TF404", "TF406")]
    result, _ = _run("first_turn_guard")
    assert not [d for d in result.diagnostics if d.code in ("TF404", "TF406")]


def test_a_transition_set_under_a_condition_is_reported_at_the_branch():
    text = '''import autogen
a = autogen.AssistantAgent(name="a")
b = autogen.AssistantAgent(name="b")
c = autogen.AssistantAgent(name="c")
graph = {a: [b]}
if args.allow_review:
    graph[b] = [c]
graph[c] = [a]
chat = autogen.GroupChat(agents=[a, b, c], messages=[], allowed_or_disallowed_speaker_transitions=graph,
                         speaker_transitions_type="allowed")
'''
    result = migrate(text, "case.py")
    assert [(d.code, d.span.line) for d in result.diagnostics if d.code == "TF410"] == [("TF410", 6)]


def test_a_configuration_call_under_a_condition_names_the_condition_and_its_line():
    result, _ = _run("conditional_handoffs")
    by_line = {d.span.line: d.message for d in result.diagnostics if d.code == "TF410"}
    assert "`if '--escalate' in sys.argv:` (line 27)" in by_line[28] and "as if it always ran" in by_line[28]
    assert "billing.handoffs.set_after_work(AgentTarget(tech))" in by_line[28]
    # the same call in the branch that also builds and runs the chat is certain there: no TF410
    text = (ROOT / "conditional_handoffs.py").read_text(encoding="utf-8").replace(
        'if "--escalate" in sys.argv:\n    billing', 'billing').replace("\npattern = ", "\nif True:\n    pattern = ")
    certain = migrate(text.replace("\nresult, context", "\n    result, context").replace(
        "\n                         group_after_work", "\n                             group_after_work"), "x.py")
    assert [d.span.line for d in certain.diagnostics if d.code == "TF410"] == [23]


def test_a_call_in_the_main_guard_of_a_script_is_not_reported():
    """`if __name__ == "__main__":` always runs when the script runs: no TF410 for it."""
    text = (ROOT / "conditional_handoffs.py").read_text(encoding="utf-8").replace(
        'if "--escalate" in sys.argv:', 'if __name__ == "__main__":')
    result = migrate(text, "x.py")
    assert [d.span.line for d in result.diagnostics if d.code == "TF410"] == [23]
    assert "billing -> tech" in result.text


def test_configuration_in_a_function_runs_where_the_function_is_called():
    """A function that wires handoffs is inlined where it is called: under an `if` there, its calls
    are reported; one that nothing calls configures nothing."""
    text = """import os
from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, RevertToUserTarget
from autogen.agentchat.group.patterns import DefaultPattern

triage = ConversableAgent(name="triage")
billing = ConversableAgent(name="billing")
tech = ConversableAgent(name="tech")
user = ConversableAgent(name="user")


def wire(first, second, escalate):
    first.handoffs.set_after_work(AgentTarget(second))
    if escalate:
        target = AgentTarget(tech)
        second.handoffs.set_after_work(target)


def legacy_wiring():
    tech.handoffs.set_after_work(AgentTarget(triage))


wire(triage, billing, os.environ.get("ESCALATE") == "1")
tech.handoffs.set_after_work(RevertToUserTarget())
pattern = DefaultPattern(initial_agent=triage, agents=[triage, billing, tech], user_agent=user)
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=8)
"""
    result = migrate(text, "case.py")
    assert "triage -> billing" in result.text and "billing -> tech" in result.text
    assert "tech -> initiator" in result.text and "tech -> triage" not in result.text
    (message,) = [d.message for d in result.diagnostics if d.code == "TF410" and d.span.line == 17]
    assert message.startswith("`billing.handoffs.set_after_work(target)` (through `wire(triage, billing, ")
    assert ", line 24) runs only in the branch of `if os.environ.get('ESCALATE') == '1':` (line 15)" in message


def test_a_call_in_a_loop_of_unknown_length_says_it_may_run_never():
    text = (ROOT / "conditional_edges.py").read_text(encoding="utf-8").replace(
        """if os.environ.get("REVISION_LOOP") == "1":""", "for _ in range(int(os.environ['LOOPS'])):")
    result = migrate(text, "x.py")
    (message,) = [d.message for d in result.diagnostics if d.code == "TF410" and d.span.line == 20]
    assert "in the loop `for _ in range(int(os.environ['LOOPS'])):` (line 19)" in message
    assert "perhaps never" in message


def test_the_transitions_dict_changed_in_a_way_not_followed_is_refused():
    from turnflow.migrate import MigrateError

    text = (ROOT / "transitions_changed.py").read_text(encoding="utf-8").replace(
        "allowed_transitions[reviewer] = [engineer]", "allowed_transitions.update({reviewer: [engineer]})")
    with pytest.raises(MigrateError) as err:
        migrate(text, "x.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", 26) and "allowed_transitions.update(" in d.message
    text = (ROOT / "transitions_changed.py").read_text(encoding="utf-8").replace(
        "allowed_transitions[reviewer] = [engineer]\n", "")
    with pytest.raises(MigrateError) as err:
        migrate(text, "x.py")
    assert "KeyError" in err.value.diagnostics[0].message


def test_a_transitions_key_that_is_not_in_agents_is_refused_as_ag2_refuses_it():
    """AG2 checks an allowed-transitions dict when the GroupChat is built: a key that is not one of
    `agents` is `ValueError: allowed_speaker_transitions_dict has keys not in agents` (graph_utils,
    check_graph_validity), so the program never runs. Before, the key was dropped without a word and
    the flow was a -> b -> c -> a."""
    from turnflow.migrate import MigrateError

    text = ("import autogen\n"
            "a = autogen.AssistantAgent(name='a', llm_config={})\n"
            "b = autogen.AssistantAgent(name='b', llm_config={})\n"
            "c = autogen.AssistantAgent(name='c', llm_config={})\n"
            "d = autogen.AssistantAgent(name='d', llm_config={})\n"
            "gc = autogen.GroupChat(agents=[a, b, c], messages=[], max_round=6,\n"
            "    allowed_or_disallowed_speaker_transitions={a: [b, d], b: [c], c: [a], d: [a]},\n"
            "    speaker_transitions_type='allowed')\n"
            "m = autogen.GroupChatManager(groupchat=gc, llm_config={})\n"
            "a.initiate_chat(m, message='go')\n")
    with pytest.raises(MigrateError) as err:
        migrate(text, "x.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("TF401", 7, 75), d
    assert "has keys not in agents" in d.message
    # a value that is not in `agents` is only filtered out by AG2 (a -> d never happens): read as such
    result = migrate(text.replace(", d: [a]}", "}"), "x.py")
    (block,) = turnflow.parse(result.text).blocks
    assert reference_edges(block) == {("a", "b"), ("b", "c"), ("c", "a")}
    # a disallowed dict is inverted over `agents` first: a key outside them changes nothing
    result = migrate(text.replace("'allowed'", "'disallowed'"), "x.py")
    assert result.text


def test_transitions_set_item_by_item_on_self_in_a_method_are_followed():
    """`self.graph = {}` then `self.graph[self.a] = [self.b]` in a method of the class (a public quiz
    generator builds its FSM so): followed like `graph[a] = [b]` at the top level. Before, only a plain
    variable's items were looked for, so the chat read as `{}`: every agent ended the chat
    ("no_eligible_speaker") with no diagnostic about the four transitions it dropped."""
    text = ("import autogen\n"
            "class Quiz:\n"
            "    def __init__(self):\n"
            "        self.user = autogen.UserProxyAgent('user', human_input_mode='NEVER', code_execution_config=False)\n"
            "        self.writer = autogen.AssistantAgent('writer', llm_config={})\n"
            "        self.editor = autogen.AssistantAgent('editor', llm_config={})\n"
            "    def _graph(self):\n"
            "        self.graph = {}\n"
            "        self.graph[self.user] = [self.writer]\n"
            "        self.graph[self.writer] = [self.editor]\n"
            "        self.graph[self.editor].append(self.writer) if False else None\n"
            "    def _chat(self):\n"
            "        self.chat = autogen.GroupChat(agents=[self.user, self.writer, self.editor], messages=[],\n"
            "            max_round=8, allowed_or_disallowed_speaker_transitions=self.graph,\n"
            "            speaker_transitions_type='allowed')\n"
            "        self.manager = autogen.GroupChatManager(groupchat=self.chat)\n"
            "    def __call__(self, q):\n"
            "        self._graph()\n"
            "        self._chat()\n"
            "        return self.user.initiate_chat(self.manager, message=q)\n")
    from turnflow.migrate import MigrateError

    with pytest.raises(MigrateError) as err:  # a change of the dict the migrator does not follow: refused
        migrate(text, "x.py")
    assert err.value.diagnostics[0].code == "TF401" and err.value.diagnostics[0].span.line == 11
    result = migrate(text.replace("        self.graph[self.editor].append(self.writer) if False else None\n", ""), "x.py")
    (block,) = turnflow.parse(result.text).blocks
    assert reference_edges(block) == {("user", "writer"), ("writer", "editor"), ("editor", END)}


_TEAM = """import autogen
a = autogen.AssistantAgent(name="a", llm_config={})
b = autogen.AssistantAgent(name="b", llm_config={})
c = autogen.AssistantAgent(name="c", llm_config={})
team = [a, b, c]
CHANGE
gc = autogen.GroupChat(agents=team, messages=[], max_round=6, speaker_selection_method="round_robin")
m = autogen.GroupChatManager(groupchat=gc)
a.initiate_chat(m, message="go")
"""


@pytest.mark.parametrize("change, truth", [
    ("team.pop()", {("a", "b"), ("b", "a")}),
    ("del team[2]", {("a", "b"), ("b", "a")}),
    ("team[2] = autogen.AssistantAgent(name='d', llm_config={})", {("a", "b"), ("b", "d"), ("d", "a")}),
    ("team.reverse()", {("c", "b"), ("b", "a"), ("a", "c")}),
    ("team.clear()", None),  # AG2 refuses an empty chat
    ("team.remove(c)", {("a", "b"), ("b", "a")}),
    ("team += load_more_agents()", None),  # known only when the program runs
    ("team.insert(0, autogen.AssistantAgent(name='d', llm_config={}))",
     {("d", "a"), ("a", "b"), ("b", "c"), ("c", "d")}),
])
def test_an_agents_list_changed_in_place_is_followed_or_refused(change, truth):
    """`agents=team` where `team` was changed in place after it was written: the chat holds what the
    list holds when the chat is built. Before, `pop()`, `del team[i]`, `team[i] = x`, `reverse()`
    and `clear()` were ignored without a word (round robin a -> b -> c -> a); remove / insert were
    refused "after a branch that changes it" although no branch did."""
    from turnflow.migrate import MigrateError

    text = _TEAM.replace("CHANGE", change)
    try:
        result = migrate(text, "x.py")
    except MigrateError as err:
        (d,) = err.diagnostics
        assert d.code == "TF401" and (d.span.line, d.span.column) == (7, 31), d
        assert f"`team` is changed by `{change.split('(')[0]}" in d.message and "after a branch" not in d.message, d.message
        return
    (block,) = turnflow.parse(result.text).blocks
    assert reference_edges(block) == truth, (change, result.text)


def test_an_agents_list_on_self_changed_after_it_is_written_is_not_read_as_first_written():
    """`self.members = [self.a, self.b]; self.members.append(self.c)`: before, the chat held a and b
    only, without a word (changes were looked for on plain variables alone)."""
    from turnflow.migrate import MigrateError

    text = ("import autogen\n"
            "class Team:\n"
            "    def __init__(self):\n"
            "        self.a = autogen.AssistantAgent('a', llm_config={})\n"
            "        self.b = autogen.AssistantAgent('b', llm_config={})\n"
            "        self.c = autogen.AssistantAgent('c', llm_config={})\n"
            "        self.members = [self.a, self.b]\n"
            "        self.members.append(self.c)\n"
            "    def run(self, q):\n"
            "        chat = autogen.GroupChat(agents=self.members, messages=[], max_round=6,\n"
            "                                 speaker_selection_method='round_robin')\n"
            "        manager = autogen.GroupChatManager(groupchat=chat)\n"
            "        return self.a.initiate_chat(manager, message=q)\n")
    try:
        result = migrate(text, "x.py")
    except MigrateError as err:
        (d,) = err.diagnostics
        assert d.code == "TF401" and "self.members.append(self.c)` (line 8)" in d.message, d
        return
    (block,) = turnflow.parse(result.text).blocks
    assert reference_edges(block) == {("a", "b"), ("b", "c"), ("c", "a")}


_SPECIALISTS = """from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget
from autogen.agentchat.group.patterns import DefaultPattern
import sys
llm = {"model": "gpt-4o-mini"}
triage = ConversableAgent(name="triage", llm_config=llm)
billing = ConversableAgent(name="billing", llm_config=llm)
support = ConversableAgent(name="support", llm_config=llm)
specialists = [billing, support]
CHANGE
"""
_WIRE = """for s in specialists:
    s.handoffs.set_after_work(AgentTarget(triage))
triage.handoffs.set_after_work(AgentTarget(billing))
pattern = DefaultPattern(initial_agent=triage, agents=[triage, billing, support])
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=10)
"""
_TRIAGE_ONLY_BILLING = {("triage", "billing"), ("billing", "triage"), ("support", END)}


@pytest.mark.parametrize("change, truth", [
    # the list is changed in place before the loop that configures its agents: the loop must not be
    # unrolled over the list as first written (support's after-work would be invented)
    ("specialists.remove(support)", _TRIAGE_ONLY_BILLING),
    ("specialists.pop()", _TRIAGE_ONLY_BILLING),
    ("last = specialists.pop()", _TRIAGE_ONLY_BILLING),
    ("print(specialists.pop())", _TRIAGE_ONLY_BILLING),
    ("del specialists[1]", _TRIAGE_ONLY_BILLING),
    ("specialists[1] = triage", _TRIAGE_ONLY_BILLING),
    ("specialists.clear()", {("triage", "billing"), ("billing", END), ("support", END)}),
    ("specialists += sys.modules['plugins'].more", None),  # decided at run time
    ("specialists.extend(sys.argv)", None),
    ("for arg in sys.argv:\n    specialists.append(triage)", None),
    ("while not specialists:\n    specialists.append(triage)", {("triage", "billing"), ("billing", "triage"),
                                                             ("support", "triage")}),
    ("if sys.argv[1:]:\n    specialists.remove(support)", None),
])
@pytest.mark.parametrize("scope", ["function", "top level"])
def test_a_list_changed_in_place_is_not_unrolled_as_first_written(change, truth, scope):
    """A loop over a literal list (here from a function, `wire()`) is unrolled only over what the list
    holds when the loop runs: changed in a way the migrator does not follow, it is refused (TF401) or
    reported, never read as first written. Before, every case here gave `support -> triage` silently."""
    from turnflow.migrate import MigrateError

    text = _SPECIALISTS.replace("CHANGE", change)
    if scope == "function":  # `def wire(): ...` called at the end
        text += "def wire():\n" + "".join(f"    {line}\n" for line in _WIRE.splitlines()) + "wire()\n"
    else:
        text += _WIRE
    pyast.parse(text)  # the case itself is valid Python
    changed = text.splitlines().index(change.splitlines()[0]) + 1
    try:
        result = migrate(text, "x.py")
    except MigrateError as err:
        assert err.diagnostics[0].code == "TF401" and err.diagnostics[0].span.line >= 1
        return
    (block,) = turnflow.parse(result.text).blocks
    if truth is not None and reference_edges(block) == truth:
        return
    assert any(d.code.startswith("TF4") and d.span.line == changed for d in result.diagnostics), \
        (change, sorted(reference_edges(block)))


@pytest.mark.parametrize("change", ["groupchat.max_round = 3", "groupchat.agents.append(reviewer)",
                                    "groupchat.allowed_or_disallowed_speaker_transitions[engineer].append(planner)",
                                    "groupchat.speaker_selection_method = 'random'",
                                    # through its manager (inserted after the manager is built)
                                    "manager.groupchat.max_round = 3", "manager.groupchat.agents.remove(reviewer)",
                                    "manager.groupchat.speaker_selection_method = 'round_robin'"])
def test_a_group_chat_changed_after_it_is_built_is_refused_at_the_change(change):
    from turnflow.migrate import MigrateError

    original = (ROOT / "transitions_changed.py").read_text(encoding="utf-8")
    before = "user_proxy.initiate_chat(" if change.startswith("manager.") else "manager = GroupChatManager("
    text = original.replace(before, f"{change}\n{before}")
    line = text.splitlines().index(change) + 1
    with pytest.raises(MigrateError) as err:
        migrate(text, "x.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", line) and "after it is built" in d.message
    # reading it is no change, and another object's `groupchat` is not this chat
    same = text.replace(change, "print(groupchat.agents, groupchat.max_round)")
    assert migrate(same, "x.py").text == migrate(original, "x.py").text
    if change.startswith("manager."):
        other = text.replace(change, "other_" + change)
        assert migrate(other, "x.py").text == migrate(original, "x.py").text


def test_the_pattern_context_changed_after_it_is_built_is_followed():
    text = """import sys
from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (AgentTarget, ContextExpression, ContextVariables, ExpressionContextCondition,
                                     OnContextCondition)
from autogen.agentchat.group.patterns import DefaultPattern

triage = ConversableAgent(name="triage")
vip_desk = ConversableAgent(name="vip_desk")
user = ConversableAgent(name="user")
ctx = ContextVariables(data={"is_vip": False, "tier": 1})
ctx["tier"] = 2
ctx.set("region", "eu")
if "--vip" in sys.argv:
    ctx["is_vip"] = True
ctx.update({"lang": "en"})
ctx.refresh_from(sys.argv)
triage.handoffs.add_context_condition(OnContextCondition(
    target=AgentTarget(vip_desk), condition=ExpressionContextCondition(ContextExpression("${is_vip} == True"))))
pattern = DefaultPattern(initial_agent=triage, agents=[triage, vip_desk], user_agent=user, context_variables=ctx)
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=5)
"""
    result = migrate(text, "case.py")
    for line in ("context is_vip = true", "context tier   = 2", 'context region = "eu"', 'context lang   = "en"'):
        assert line in result.text
    found = {(d.code, d.span.line): d.message for d in result.diagnostics}
    assert "`if '--vip' in sys.argv:` (line 14)" in found[("TF410", 15)]
    assert "ctx.refresh_from(sys.argv)" in found[("TF406", 17)]


# -- the typed model (issue 23, part 3) ---------------------------------------------------------
def test_the_typed_model_carries_provenance_and_typed_targets():
    from turnflow.migrate import model

    result, _ = _run("cli_variants")
    team = result.teams[0]
    assert [code for code, _ in team.run_time] == ["TF410", "TF410"]
    assert [p.name for p in team.participants] == ["Admin", "Coder", "Executor", "Reviewer"]
    result, _ = _run("selection_lookup")
    routing = result.teams[0].routing
    assert all(r.provenance.kind == "read" for r in routing)
    assert model.Rule in {type(r) for r in routing}
    assert any(isinstance(r, model.Rule) and r.target == model.Builtin("previous") for r in routing)
    path = Path(__file__).parent / "fixtures" / "migrate" / "ag2-patterns" / "auto_pattern.py"
    auto = migrate(path.read_text(encoding="utf-8"), path.name).teams[0]
    handoffs = [r for r in auto.routing if isinstance(r, model.Handoff)]
    first = handoffs[0]
    assert first.provenance.kind == "approximated" and first.provenance.notes[0][0] == "TF403"
    assert first.target == model.AgentTarget(first.source)  # the speaker itself may be picked again


def test_one_lowering_gives_the_printed_flow():
    from turnflow.dsl.printer import format_flow
    from turnflow.dsl import ast as flow_ast
    from turnflow.migrate.model import GENERATED, lower

    result, _ = _run("same_scope_chats")
    blocks = tuple(lower(t) for t in result.teams)
    again = format_flow(flow_ast.FlowFile(GENERATED, blocks, ()))
    assert again.split("workflow", 1)[1] == result.text.split("workflow", 1)[1]


def test_a_conditional_return_is_read_branch_by_branch():
    """`return b if "REVIEW" in msg else c` in a selection function: both branches, exactly (was: a
    binding picked through `a if c else b`)."""
    text = '''import autogen
a = autogen.AssistantAgent(name="a")
b = autogen.AssistantAgent(name="b")
c = autogen.AssistantAgent(name="c")
def pick(last_speaker, groupchat):
    msg = groupchat.messages[-1]["content"]
    if last_speaker is a:
        return b if "REVIEW" in msg else c
    return a
chat = autogen.GroupChat(agents=[a, b, c], messages=[], speaker_selection_method=pick)
mgr = autogen.GroupChatManager(groupchat=chat)
a.initiate_chat(mgr, message="go")
'''
    result = migrate(text, "case.py")
    assert 'a -> b when text contains "REVIEW"' in result.text and "    a -> c\n" in result.text
    assert not [d for d in result.diagnostics if d.code in ("TF404", "TF406", "TF410")]


def test_a_tool_target_chosen_inside_agent_target_keeps_one_routing_tool_per_target():
    text = '''from autogen import ConversableAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, ReplyResult
from autogen.agentchat.group.patterns import DefaultPattern

def route(urgent: bool) -> ReplyResult:
    """Route the request."""
    return ReplyResult(message="ok", target=AgentTarget(fast if urgent else slow))

triage = ConversableAgent(name="triage", functions=[route])
fast = ConversableAgent(name="fast")
slow = ConversableAgent(name="slow")
pattern = DefaultPattern(initial_agent=triage, agents=[triage, fast, slow])
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=10)
'''
    result = migrate(text, "case.py")
    assert "handoff triage -> fast via route_to_fast" in result.text
    assert "handoff triage -> slow via route_to_slow" in result.text
