"""`turnflow migrate` reads exactly or says so (session 13 QA): settings passed through `**shared`
of a literal dict, GroupChat settings AG2 refuses together, pattern targets the flow cannot
express, and argument forms real code uses (positional, aliases, attributes set after the agent is
built). Each case either migrates to the graph AG2 runs or carries a finding at the construct."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

import turnflow
from turnflow.migrate import MigrateError, migrate
from test_migrate import END, reference_edges


def _run(text: str, name: str = "case.py"):
    result = migrate(text, name)
    assert not [d for d in turnflow.check(result.text) if d.severity == "error"], result.text
    return result


def _edges(result) -> set:
    out: set = set()
    for block in turnflow.parse(result.text).blocks:
        out |= reference_edges(block)
    return out


def _codes(result) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in result.diagnostics if d.code.startswith("TF4")]


# -- 2. allow_repeat_speaker with a transitions dict: AG2 refuses the GroupChat -------------------
REPEAT_AND_DICT = '''from autogen import AssistantAgent, GroupChat, GroupChatManager
a = AssistantAgent(name="a", llm_config=False)
b = AssistantAgent(name="b", llm_config=False)
graph = {a: [b], b: [a]}
chat = GroupChat(agents=[a, b], messages=[], max_round=5, allow_repeat_speaker=REPEAT,
                 allowed_or_disallowed_speaker_transitions=graph, speaker_transitions_type="allowed")
manager = GroupChatManager(groupchat=chat, llm_config=False)
a.initiate_chat(manager, message="go")
'''


def _ag2_builds(*texts: str) -> list[str]:
    """For each of `texts`: 'ok' when ag2 0.9.9 builds its chats (nothing is started), else AG2's
    error as `Type: message`; all in one process of the classic environment (importing AG2 there
    costs ~1 s)."""
    from test_migrate_live import _classic_python

    programs = [t.replace("a.initiate_chat(manager, message=\"go\")", "") for t in texts]
    driver = ("import json, sys\nfor i, src in enumerate(json.loads(sys.stdin.read())):\n"
              "    try:\n        exec(compile(src, f'program{i}', 'exec'), {})\n        print(json.dumps('ok'))\n"
              "    except Exception as exc:\n        print(json.dumps(f'{type(exc).__name__}: {exc}'))\n")
    run = subprocess.run([_classic_python(), "-c", driver], input=json.dumps(programs), capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH="", OPENAI_API_KEY="sk-test"))
    assert run.returncode == 0, run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith('"')]


@pytest.mark.parametrize("repeat", ["False", "True", "[a]"])
def test_allow_repeat_speaker_with_a_transitions_dict_is_refused_as_ag2_refuses_it(repeat):
    """Before: TF409 "the transitions are used" and a flow, for a GroupChat AG2 0.9.9 refuses when
    it is built (`__post_init__`: "Don't provide both allowed_or_disallowed_speaker_transitions and
    allow_repeat_speaker"). Now TF401 at `allow_repeat_speaker`, nothing written."""
    text = REPEAT_AND_DICT.replace("REPEAT", repeat)
    with pytest.raises(MigrateError) as err:
        migrate(text, "chat.py")
    (d,) = err.value.diagnostics
    line = text.splitlines()[4]
    assert d.code == "TF401" and (d.span.line, d.span.column) == (5, line.index(repeat) + 1), d
    assert "Don't provide both allowed_or_disallowed_speaker_transitions and allow_repeat_speaker" in d.message


def test_ag2_itself_refuses_both_and_accepts_none_with_a_dict():
    false, listed, none, tupled = _ag2_builds(*(REPEAT_AND_DICT.replace("REPEAT", r)
                                                for r in ("False", "[a]", "None", "(a,)")))
    assert "Don't provide both" in false and "Don't provide both" in listed, (false, listed)
    assert none == "ok"
    assert tupled.startswith("ValueError: GroupChat allow_repeat_speaker should be"), tupled


def test_allow_repeat_speaker_none_with_a_dict_is_the_dict():
    result = _run(REPEAT_AND_DICT.replace("REPEAT", "None"))
    assert _edges(result) == {("a", "b"), ("b", "a")}
    assert not [c for c in _codes(result) if c[0] in ("TF401", "TF409")]


@pytest.mark.parametrize("value", ["(a,)", "1", "'yes'"])
def test_allow_repeat_speaker_that_is_not_a_bool_or_a_list_is_refused_as_ag2_refuses_it(value):
    """AG2 0.9.9: `isinstance(allow_repeat_speaker, (bool, list))` or ValueError. Before: a tuple was
    read as a list, `1` as False (no self-loops), without a word."""
    text = REPEAT_AND_DICT.replace("REPEAT", value).replace(
        "\n                 allowed_or_disallowed_speaker_transitions=graph, speaker_transitions_type=\"allowed\"", "")
    with pytest.raises(MigrateError) as err:
        migrate(text, "chat.py")
    (d,) = err.value.diagnostics
    assert d.code == "TF401" and d.span.line == 5 and "should be a bool or a list of Agents" in d.message, d


# -- 1. `**shared` of a literal dict ------------------------------------------------------------
SHARED = '''from autogen import AssistantAgent, ConversableAgent, GroupChat, GroupChatManager
cfg = {"config_list": []}
shared = dict(llm_config=cfg, human_input_mode="NEVER")
limits = {"max_consecutive_auto_reply": 3}
a = ConversableAgent("a", **shared)
b = ConversableAgent("b", description="checks", **limits)
c = AssistantAgent(**{"name": "c", "description": "writes"}, **shared)
CHANGE
d = ConversableAgent("d", **shared)
chat = GroupChat(agents=[a, b, c, d], messages=[], max_round=5, speaker_selection_method="round_robin")
manager = GroupChatManager(groupchat=chat, llm_config=False)
a.initiate_chat(manager, message="go")
'''


def test_keywords_of_a_literal_dict_are_read_as_written_at_the_call():
    """Before: TF411 "`**shared` passes keywords known only when the program runs" at each agent, and
    its settings (description, max_consecutive_auto_reply) were not read. Now `**` of a dict literal
    (or `dict(k=v)`) not changed before the call is its keywords: `max_consecutive_auto_reply` is the
    TF405 it is when written out, at the dict's value (line 4)."""
    result = _run(SHARED.replace("CHANGE", "pass"))
    assert not [d for d in result.diagnostics if d.code == "TF411"], result.diagnostics
    assert ("TF405", 4) in _codes(result)
    assert 'participant c "writes"' in result.text and 'participant b "checks"' in result.text
    assert _edges(result) == {("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")}


def test_a_name_in_a_literal_dict_names_the_agent():
    text = SHARED.replace("CHANGE", "pass").replace('ConversableAgent("d", **shared)',
                                                    'ConversableAgent(**{"name": "reviewer"}, **shared)')
    result = _run(text)
    assert "participant reviewer" in result.text and ("c", "reviewer") in _edges(result)


@pytest.mark.parametrize("change", [
    'shared["max_consecutive_auto_reply"] = 1',
    'shared.update(max_consecutive_auto_reply=1)',
    'shared |= {"max_consecutive_auto_reply": 1}',
    'del shared["human_input_mode"]',
    'tune(shared)',
    'alias = shared',
    'if unknown_flag:\n    shared = {"max_consecutive_auto_reply": 1}',
    'for x in load():\n    shared["k"] = x',
    'def tune():\n    shared["max_consecutive_auto_reply"] = 1\ntune()',
    'cfg = {"other": 1}',
    'shared = load()',
])
def test_a_dict_that_may_have_changed_before_the_call_is_still_reported(change):
    """A dict changed (or handed to code that may change it, or whose values' names are bound again)
    between its literal and `**` is known only when the program runs: TF411 at `**shared` of `d`
    (after the change), as before; `a` and `c`, built before the change, are read."""
    text = SHARED.replace("CHANGE", change)
    result = migrate(text, "case.py")
    line = text.splitlines().index('d = ConversableAgent("d", **shared)') + 1
    found = [d.span.line for d in result.diagnostics if d.code == "TF411"]
    # a function that changes the dict may run at any call: the dict is not read anywhere
    assert found == ([5, 7, line] if change.startswith("def ") else [line]), (change, result.diagnostics)


def test_a_module_dict_seen_from_a_function_is_read_when_nothing_changes_it():
    text = ('from autogen import ConversableAgent, GroupChat, GroupChatManager\n'
            'BASE = {"description": "helps", "llm_config": False}\n'
            'def main():\n'
            '    a = ConversableAgent("a", **BASE)\n'
            '    b = ConversableAgent("b", **BASE)\n'
            '    chat = GroupChat(agents=[a, b], messages=[], max_round=4, speaker_selection_method="round_robin")\n'
            '    manager = GroupChatManager(groupchat=chat, llm_config=False)\n'
            '    a.initiate_chat(manager, message="go")\n')
    result = _run(text)
    assert not [d for d in result.diagnostics if d.code == "TF411"]
    assert 'participant a "helps"' in result.text
    changed = text + 'def later():\n    BASE["description"] = "other"\n'
    assert [d.span.line for d in migrate(changed, "case.py").diagnostics if d.code == "TF411"] == [4, 5]


def test_group_chat_settings_through_a_literal_dict_are_read():
    text = ('from autogen import ConversableAgent, GroupChat, GroupChatManager\n'
            'a = ConversableAgent("a", llm_config=False)\n'
            'b = ConversableAgent("b", llm_config=False)\n'
            'c = ConversableAgent("c", llm_config=False)\n'
            'settings = dict(max_round=4, speaker_selection_method="round_robin")\n'
            'chat = GroupChat(agents=[a, b, c], messages=[], **settings)\n'
            'manager = GroupChatManager(groupchat=chat, llm_config=False)\n'
            'a.initiate_chat(manager, message="go")\n')
    result = _run(text)
    assert "max_turns 4" in result.text and _edges(result) == {("a", "b"), ("b", "c"), ("c", "a")}


# -- 3. pattern targets the flow has no word for ---------------------------------------------
TARGETS = '''from autogen import ConversableAgent, UserProxyAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (AskUserTarget, NestedChatTarget, OnCondition, RandomAgentTarget,
                                     StringLLMCondition)
from autogen.agentchat.group.patterns import DefaultPattern
research = StringLLMCondition("research")
triage = ConversableAgent(name="triage")
billing = ConversableAgent(name="billing")
tech = ConversableAgent(name="tech")
user = UserProxyAgent(name="user")
triage.handoffs.add_llm_condition(OnCondition(target=RandomAgentTarget([billing, tech]), condition=StringLLMCondition("any specialist")))
billing.handoffs.add_llm_condition(OnCondition(target=NestedChatTarget(nested_chat_config={"chat_queue": []}), condition=research))
billing.handoffs.set_after_work(AskUserTarget())
tech.handoffs.set_after_work(RandomAgentTarget(agents=[tech, billing]))
triage.handoffs.set_after_work(RandomAgentTarget([billing, tech]))
pattern = DefaultPattern(initial_agent=triage, agents=[triage, billing, tech], user_agent=user)
initiate_group_chat(pattern=pattern, messages="hi", max_rounds=10)
'''


def _at(text: str, line: int, what: str) -> tuple[int, int]:
    return line, text.splitlines()[line - 1].index(what) + 1


def test_targets_the_flow_cannot_express_are_reported_at_the_target_never_replaced():
    """Before: each of RandomAgentTarget, AskUserTarget and NestedChatTarget became the pattern's
    initial agent (`handoff triage -> triage via transfer_to_triage "any specialist"`, `tech ->
    triage`), a TF408 "approximated by the pattern's initial agent". Now, with AG2 0.9.9's meaning
    (autogen/agentchat/group/targets/transition_target.py):
    - RandomAgentTarget draws among its agents but the speaker: with one left it is that agent
      (tech -> billing, exact); with several, as an after-work, routing tools to each (TF404, as
      RandomPattern); as a condition's target, the rule is left out (TF408, kept as a comment);
    - AskUserTarget lets the person pick any agent but the user (AG2's "manual" selection): as an
      after-work, routing tools to each (TF404, as ManualPattern); NestedChatTarget runs nested chats
      in an agent AG2 adds, then returns: not expressible, the rule is left out (TF408)."""
    result = _run(TARGETS, "targets.py")
    diags = {(d.code, d.span.line, d.span.column): d.message for d in result.diagnostics}
    t = TARGETS
    assert ("TF408",) + _at(t, 11, "RandomAgentTarget") in diags
    assert ("TF408",) + _at(t, 12, "NestedChatTarget") in diags
    assert ("TF404",) + _at(t, 13, "AskUserTarget") in diags
    assert ("TF404",) + _at(t, 15, "RandomAgentTarget") in diags
    assert not [k for k in diags if k[1] == 14], diags  # one agent left: exact
    assert "approximated by the pattern's initial agent" not in " ".join(diags.values())
    edges = _edges(result)
    assert ("tech", "billing") in edges and not [e for e in edges if e[0] == "tech" and e[1] != "billing"]
    assert {e[1] for e in edges if e[0] == "triage"} == {"billing", "tech"}  # never itself
    assert {e[1] for e in edges if e[0] == "billing"} == {"triage", "billing", "tech"}  # the person picks
    body = [ln for ln in result.text.splitlines() if not ln.strip().startswith("#")]
    assert not [ln for ln in body if '"any specialist"' in ln or '"research"' in ln], result.text


def test_a_random_target_with_no_agent_but_the_speaker_is_reported_as_ag2_fails_there():
    """`random.choice([])` in RandomAgentTarget.resolve: AG2 raises IndexError when it is reached."""
    text = TARGETS.replace("RandomAgentTarget(agents=[tech, billing])", "RandomAgentTarget(agents=[tech])")
    result = _run(text, "targets.py")
    (d,) = [d for d in result.diagnostics if d.span.line == 14]
    assert d.code == "TF408" and "IndexError" in d.message
    assert not [e for e in _edges(result) if e[0] == "tech" and e[1] != END]


def test_a_group_after_work_the_flow_cannot_express_is_said_once_and_applied_per_agent():
    text = ('from autogen import ConversableAgent\n'
            'from autogen.agentchat import initiate_group_chat\n'
            'from autogen.agentchat.group import AgentTarget, AskUserTarget, RandomAgentTarget, ReplyResult\n'
            'from autogen.agentchat.group.patterns import DefaultPattern\n'
            'def escalate() -> ReplyResult:\n'
            '    return ReplyResult(message="up", target=RandomAgentTarget([a, b]))\n'
            'a = ConversableAgent(name="a", functions=[escalate])\n'
            'b = ConversableAgent(name="b")\n'
            'c = ConversableAgent(name="c")\n'
            'c.handoffs.set_after_work(AgentTarget(a))\n'
            'pattern = DefaultPattern(initial_agent=a, agents=[a, b, c], group_after_work=RandomAgentTarget([a, b, c]))\n'
            'initiate_group_chat(pattern=pattern, messages="hi", max_rounds=8)\n')
    result = _run(text, "group.py")
    notes = [(d.code, d.span.line) for d in result.diagnostics if d.code in ("TF404", "TF408")]
    assert notes == [("TF404", 11)], result.diagnostics  # once, at the group's after-work
    edges = _edges(result)
    assert {e[1] for e in edges if e[0] == "b"} == {"a", "c"} and {e[1] for e in edges if e[0] == "c"} == {"a"}
    assert "a -> b when tool escalate" in result.text  # the tool's draw leaves one agent after `a`: exact


# -- the sweep: argument forms the readers did not look at ------------------------------------
CLASSIC = '''from autogen import ConversableAgent, GroupChat, GroupChatManager
a = ConversableAgent("a", llm_config=False)
b = ConversableAgent("b", llm_config=False)
c = ConversableAgent("c", llm_config=False)
CHAT
manager = MANAGER
a.initiate_chat(manager, message="go"RUN)
'''


def _classic(chat: str, manager: str = "GroupChatManager(groupchat=chat, llm_config=False)", run: str = "") -> str:
    return CLASSIC.replace("CHAT", chat).replace("MANAGER", manager).replace("RUN", run)


def test_a_group_chat_s_settings_given_positionally_are_read():
    """GroupChat is a dataclass: `GroupChat([a, b, c], [], 5, "Admin", True, "round_robin")` is
    round robin. Before: only `agents`, `messages` and `max_round` were read by position, so this
    came out as `auto` (routing tools among all three) without a word."""
    result = _run(_classic('chat = GroupChat([a, b, c], [], 5, "Admin", True, "round_robin")'))
    assert _edges(result) == {("a", "b"), ("b", "c"), ("c", "a")} and "max_turns 5" in result.text
    assert not [c for c in _codes(result) if c[0] in ("TF403", "TF411")]


def test_an_agent_s_is_termination_msg_given_positionally_is_read():
    """`ConversableAgent(name, system_message, is_termination_msg, ...)`: before, the positional test
    was not read (no terminate rule, no word)."""
    text = _classic('chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")')
    text = text.replace('b = ConversableAgent("b", llm_config=False)',
                        'b = ConversableAgent("b", "checks", lambda m: "DONE" in m["content"], llm_config=False)')
    result = _run(text)
    assert 'terminate "is_termination_msg" when text contains "DONE"' in result.text


@pytest.mark.parametrize("chat, manager, run, line", [
    ('chat = GroupChat(agents=[a, b, c], messages=[], **load())', None, "", 5),
    ('chat = GroupChat(agents=[a, b, c], messages=[], max_rounds=5)', None, "", 5),
    ('chat = GroupChat(agents=[a, b, c], messages=[], speaker_selection_method="round_robin")',
     "GroupChatManager(groupchat=chat, **load())", "", 6),
    ('chat = GroupChat(agents=[a, b, c], messages=[], speaker_selection_method="round_robin")', None, ", **load()", 7),
])
def test_settings_a_chat_call_passes_at_run_time_are_reported(chat, manager, run, line):
    """Before: `GroupChat(..., **load())` was read with AG2's defaults (auto, max_round 10), the
    manager's `**load()` (which may hold `is_termination_msg`) and `initiate_chat(..., **load())`
    (`max_turns`) were dropped, all without a word; `max_rounds=5` (AG2's TypeError: an unexpected
    keyword) was ignored. Now TF411 at the argument."""
    text = "from settings import load\n" + _classic(chat, manager or "GroupChatManager(groupchat=chat, llm_config=False)",
                                                    run)
    result = migrate(text, "case.py")
    found = [d for d in result.diagnostics if d.code == "TF411"]
    assert [d.span.line for d in found] == [line + 1], result.diagnostics


def test_a_pattern_run_call_with_settings_known_at_run_time_is_reported():
    """`initiate_group_chat(pattern=p, messages="x", **opts())`: `max_rounds` may be among them.
    Before: AG2's default 20 was used without a word."""
    text = ('from autogen import ConversableAgent\n'
            'from autogen.agentchat import initiate_group_chat\n'
            'from autogen.agentchat.group import AgentTarget\n'
            'from autogen.agentchat.group.patterns import DefaultPattern\n'
            'from settings import opts\n'
            'a = ConversableAgent(name="a")\n'
            'b = ConversableAgent(name="b")\n'
            'a.handoffs.set_after_work(AgentTarget(b))\n'
            'p = DefaultPattern(initial_agent=a, agents=[a, b])\n'
            'initiate_group_chat(pattern=p, messages="x", **opts())\n')
    result = migrate(text, "case.py")
    assert [(d.code, d.span.line) for d in result.diagnostics if d.code == "TF411"] == [("TF411", 10)]


@pytest.mark.parametrize("change, code", [
    ('manager._is_termination_msg = lambda m: "BYE" in m["content"]', "TF405"),
    ('b._is_termination_msg = lambda m: "BYE" in m["content"]', "TF405"),
    ("b.update_max_consecutive_auto_reply(1)", "TF405"),
    ("b.register_reply([Agent, None], lambda recipient, messages, sender, config: (True, None))", "TF404"),
    ("manager.register_reply(Agent, lambda recipient, messages, sender, config: (True, None), position=0)", "TF404"),
    ('b.description = "reviews the code"', "TF409"),
    ('b._name = "reviewer"', "TF409"),
])
def test_an_agent_or_manager_changed_after_it_is_built_is_reported(change, code):
    """AG2 0.9.9 reads these when the chat runs: the manager's `_is_termination_msg` after each
    message, a speaker's reply (a reply function returning None ends the chat: `run_chat`, "No
    reply generated"; on the manager it replaces how the chat runs), its description in the
    selector's prompt, its `_name` as its name. Before: each was dropped without a word."""
    text = _classic('chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")')
    text = text.replace("from autogen import ConversableAgent,", "from autogen import Agent, ConversableAgent,")
    text = text.replace('a.initiate_chat(', change + '\na.initiate_chat(')
    result = migrate(text, "case.py")
    assert (code, 7) in _codes(result), result.diagnostics


ALIASED = {
    "classic": ('from autogen import ConversableAgent as CA, GroupChat as GC, GroupChatManager as GCM\n'
                'a = CA("a", llm_config=False)\n'
                'b = CA("b", llm_config=False, is_termination_msg=lambda m: "DONE" in m["content"])\n'
                'chat = GC(agents=[a, b], messages=[], max_round=6, speaker_selection_method="round_robin")\n'
                'manager = GCM(groupchat=chat, llm_config=False)\n'
                'a.initiate_chat(manager, message="go")\n'),
    "ag2-patterns": ('from autogen import ConversableAgent\n'
                     'from autogen.agentchat import initiate_group_chat as run\n'
                     'from autogen.agentchat.group import AgentTarget as To, OnCondition as When, '
                     'StringLLMCondition as Ask, TerminateTarget as Stop\n'
                     'from autogen.agentchat.group.patterns import DefaultPattern as Pattern\n'
                     'a = ConversableAgent(name="a")\n'
                     'b = ConversableAgent(name="b")\n'
                     'a.handoffs.add_llm_condition(When(target=To(b), condition=Ask("b knows")))\n'
                     'b.handoffs.set_after_work(Stop())\n'
                     'p = Pattern(initial_agent=a, agents=[a, b])\n'
                     'run(pattern=p, messages="x", max_rounds=5)\n'),
    "autogen": ('from autogen_agentchat.agents import AssistantAgent as Assistant\n'
                'from autogen_agentchat.conditions import MaxMessageTermination as Max\n'
                'from autogen_agentchat.teams import RoundRobinGroupChat as Team\n'
                'a = Assistant("a", model_client=None)\n'
                'b = Assistant("b", model_client=None)\n'
                'team = Team([a, b], termination_condition=Max(5))\n'),
}


@pytest.mark.parametrize("family", sorted(ALIASED))
def test_framework_names_imported_under_another_name_are_read_as_the_framework_s(family):
    """`from autogen import GroupChat as GC`: before, TF401 "cannot tell what this file is" (or, for
    the patterns, "no AG2 group pattern ... found"). Now the aliases are the framework's classes,
    and the flow is the one the file without aliases gives."""
    text = ALIASED[family]
    plain = text
    for line in text.splitlines():
        if line.startswith("from "):
            for part in line.split(" import ")[1].split(", "):
                if " as " in part:
                    real, alias = part.split(" as ")
                    plain = plain.replace(f" as {alias}", "").replace(f"{alias}(", f"{real}(")
    assert " as " not in plain
    got, want = _run(text), _run(plain)
    columns = re.compile(r"\(input (\d+):\d+\)")  # the aliases are shorter: the same lines, other columns
    assert columns.sub(r"(input \1)", got.text) == columns.sub(r"(input \1)", want.text)
    assert [(d.code, d.span.line) for d in got.diagnostics] == [(d.code, d.span.line) for d in want.diagnostics]


def test_an_alias_that_the_file_also_binds_is_not_taken_for_the_framework_s():
    text = ALIASED["classic"].replace('a = CA("a", llm_config=False)\n', 'a = CA("a", llm_config=False)\nCA = object\n')
    with pytest.raises(MigrateError):
        migrate(text, "case.py")


PARTIAL = '''from functools import partial
from autogen import ConversableAgent, GroupChat, GroupChatManager
Agent = partial(ConversableAgent, llm_config=False, max_consecutive_auto_reply=2)
a = Agent("a")
b = Agent("b", description="checks", max_consecutive_auto_reply=None)
c = Agent(name="c")
CHANGE
chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")
manager = GroupChatManager(groupchat=chat, llm_config=False)
a.initiate_chat(manager, message="go")
'''


def test_agents_made_through_functools_partial_carry_its_settings():
    """`Agent = partial(ConversableAgent, llm_config=False, max_consecutive_auto_reply=2)`: before,
    `Agent("a")` was read as an agent (its class name ends in Agent) without the partial's settings,
    so `max_consecutive_auto_reply=2` (TF405) was lost without a word. Now `Agent("a")` is
    `ConversableAgent("a", llm_config=False, max_consecutive_auto_reply=2)`; a keyword of the call
    replaces the partial's (b: None, nothing to report), as functools.partial does."""
    result = _run(PARTIAL.replace("CHANGE", "pass"))
    found = [(d.code, d.span.line) for d in result.diagnostics if d.code in ("TF405", "TF411")]
    assert found == [("TF405", 3)], result.diagnostics  # at the partial's value, for a and c
    assert 'participant b "checks"' in result.text
    assert _edges(result) == {("a", "b"), ("b", "c"), ("c", "a")}


def test_a_partial_that_may_change_is_reported_at_each_call():
    """A partial changed (`Agent.keywords[...] = 9`) or bound twice passes what the program decides:
    each call is TF411 (before: read as an agent without the partial's settings, silently)."""
    result = _run(PARTIAL.replace("CHANGE", 'Agent.keywords["max_consecutive_auto_reply"] = 9'))
    assert not [d for d in result.diagnostics if d.code == "TF405" and d.span.line == 3]
    assert [d.span.line for d in result.diagnostics if d.code == "TF411"] == [4, 5, 6], result.diagnostics
    assert _edges(result) == {("a", "b"), ("b", "c"), ("c", "a")}


def test_an_agentchat_team_of_partial_agents_is_read():
    """Before: TF401 "`a` in the participants is not an agent or team created in this file"."""
    text = ('from functools import partial\n'
            'from autogen_agentchat.agents import AssistantAgent\n'
            'from autogen_agentchat.teams import Swarm\n'
            'Make = partial(AssistantAgent, model_client=None)\n'
            'a = Make("a", handoffs=["b"])\n'
            'b = Make("b", handoffs=["a"])\n'
            'team = Swarm([a, b])\n')
    plain = text.replace('Make("a", ', 'AssistantAgent("a", model_client=None, ').replace(
        'Make("b", ', 'AssistantAgent("b", model_client=None, ')
    assert migrate(text, "team.py").text == migrate(plain, "team.py").text


def test_a_selector_s_allow_repeated_speaker_known_at_run_time_is_reported():
    """Before: `allow_repeated_speaker=os.environ.get("R") == "1"` was read as True (the string the
    reader kept for it is truthy): every speaker could follow itself, without a word."""
    text = ('import os\n'
            'from autogen_agentchat.agents import AssistantAgent\n'
            'from autogen_agentchat.teams import SelectorGroupChat\n'
            'a = AssistantAgent("a", model_client=None)\n'
            'b = AssistantAgent("b", model_client=None)\n'
            'team = SelectorGroupChat([a, b], model_client=None, allow_repeated_speaker=os.environ.get("R") == "1",\n'
            '                         max_turns=4)\n')
    result = _run(text, "team.py")
    assert ("TF410", 6) in _codes(result)
    assert ("a", "a") not in _edges(result) and ("b", "b") not in _edges(result)


@pytest.mark.parametrize("change", ["p.group_after_work = AgentTarget(a)", 'p.agents.append(ConversableAgent(name="c"))',
                                    "p.initial_agent = b", "p.context_variables.set('n', 1)"])
def test_a_pattern_changed_after_it_is_built_is_refused_like_a_group_chat(change):
    """AG2 reads the pattern's attributes when the chat starts (`prepare_group_chat`). Before: the
    flow was the constructor's pattern (TerminateTarget after b, two agents) without a word."""
    text = ('from autogen import ConversableAgent\n'
            'from autogen.agentchat import initiate_group_chat\n'
            'from autogen.agentchat.group import AgentTarget, TerminateTarget\n'
            'from autogen.agentchat.group.patterns import DefaultPattern\n'
            'a = ConversableAgent(name="a")\n'
            'b = ConversableAgent(name="b")\n'
            'a.handoffs.set_after_work(AgentTarget(b))\n'
            'p = DefaultPattern(initial_agent=a, agents=[a, b], group_after_work=TerminateTarget())\n'
            f'{change}\n'
            'initiate_group_chat(pattern=p, messages="x", max_rounds=5)\n')
    with pytest.raises(MigrateError) as err:
        migrate(text, "p.py")
    (d,) = err.value.diagnostics
    assert d.code == "TF401" and d.span.line == 9, d


CHANGED_IN_A_FUNCTION = '''from autogen import ConversableAgent, GroupChat, GroupChatManager
a = ConversableAgent("a", llm_config=False)
b = ConversableAgent("b", llm_config=False)
c = ConversableAgent("c", llm_config=False)
METHOD = "round_robin"
team = [a, b]
def adjust():
    CHANGE
adjust()
chat = GroupChat(agents=team, messages=[], max_round=6, speaker_selection_method=METHOD)
manager = GroupChatManager(groupchat=chat, llm_config=False)
a.initiate_chat(manager, message="go")
'''


def test_a_list_a_function_changes_is_not_taken_as_written():
    """`def adjust(): team.append(c)` run before the chat: the chat has a, b and c. Before: the flow
    had a and b, without a word. Now TF401, as for a list changed after a branch changed it."""
    text = CHANGED_IN_A_FUNCTION.replace("CHANGE", "team.append(c)")
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    (d,) = err.value.diagnostics
    assert d.code == "TF401" and d.span.line == 10 and "team.append(c)" in d.message, d


def test_a_function_s_own_list_of_the_same_name_is_its_own():
    text = CHANGED_IN_A_FUNCTION.replace("CHANGE", "team = [c]\n    team.append(a)")
    assert _edges(_run(text)) == {("a", "b"), ("b", "a")}


def test_a_global_a_function_rebinds_is_reported():
    """`def adjust(): global METHOD; METHOD = "auto"` run before the chat: AG2 picks with the LLM.
    Before: the flow followed `METHOD = "round_robin"` without a word. Now TF410 at the rebinding."""
    text = CHANGED_IN_A_FUNCTION.replace("CHANGE", 'global METHOD\n    METHOD = "auto"')
    result = _run(text)
    assert ("TF410", 9) in _codes(result), result.diagnostics


def test_a_subclass_without_its_own_init_binds_like_its_framework_class():
    """`class MyChat(GroupChat): pass` has GroupChat's fields: `MyChat([a, b, c], [], 6, "Admin", True,
    "round_robin")` is round robin (before: auto, without a word)."""
    text = _classic('chat = MyChat([a, b, c], [], 6, "Admin", True, "round_robin")')
    text = text.replace("a = ConversableAgent(", "class MyChat(GroupChat):\n    pass\n\n\na = ConversableAgent(", 1)
    assert _edges(_run(text)) == {("a", "b"), ("b", "c"), ("c", "a")}


def test_a_manager_given_another_chat_after_it_is_built_is_refused():
    text = _classic('chat = GroupChat(agents=[a, b, c], messages=[], speaker_selection_method="round_robin")\n'
                    'other = GroupChat(agents=[c, b, a], messages=[], speaker_selection_method="round_robin")')
    text = text.replace("a.initiate_chat(", "manager._groupchat = other\na.initiate_chat(")
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    (d,) = err.value.diagnostics
    assert d.code == "TF401" and d.span.line == 8, d


# a pattern of a and b whose line 8 (CHANGE) changes one of them after it is built
PATTERN_CHANGED = ('from autogen import Agent, ConversableAgent\n'
                   'from autogen.agentchat import initiate_group_chat\n'
                   'from autogen.agentchat.group import AgentTarget, OnCondition, StringLLMCondition\n'
                   'from autogen.agentchat.group.patterns import DefaultPattern\n'
                   'a = ConversableAgent(name="a")\n'
                   'b = ConversableAgent(name="b")\n'
                   'a.handoffs.set_after_work(AgentTarget(b))\n'
                   'CHANGE\n'
                   'p = DefaultPattern(initial_agent=a, agents=[a, b])\n'
                   'initiate_group_chat(pattern=p, messages="x", max_rounds=5)\n')


@pytest.mark.parametrize("change, code", [
    ("b.register_reply([Agent, None], lambda recipient, messages, sender, config: (True, None))", "TF404"),
    ('b._is_termination_msg = lambda m: "BYE" in m["content"]', "TF405"),
    ("a.handoffs.llm_conditions.append(OnCondition(target=AgentTarget(b), condition=StringLLMCondition('b')))",
     "TF406"),
    ("a.handoffs.after_works.clear()", "TF406"),
])
def test_a_pattern_agent_changed_after_it_is_built_is_reported(change, code):
    """The same changes in a pattern's agents (and their handoffs' lists, changed directly rather
    than through `handoffs.<method>(...)`): before, dropped without a word."""
    text = PATTERN_CHANGED.replace("CHANGE", change)
    result = migrate(text, "p.py")
    assert (code, 8) in _codes(result), result.diagnostics


@pytest.mark.parametrize("change, code", [
    ("team._max_turns = 2", "TF401"),
    ("team._participants.reverse()", "TF401"),
    ('a._handoffs["c"] = None', "TF406"),
    ('b._description = "reviews"', "TF409"),
])
def test_an_agentchat_team_or_agent_changed_after_it_is_built_is_reported(change, code):
    text = ('from autogen_agentchat.agents import AssistantAgent\n'
            'from autogen_agentchat.teams import RoundRobinGroupChat\n'
            'a = AssistantAgent("a", model_client=None)\n'
            'b = AssistantAgent("b", model_client=None)\n'
            'team = RoundRobinGroupChat([a, b], max_turns=6)\n'
            f'{change}\n')
    if code == "TF401":
        with pytest.raises(MigrateError) as err:
            migrate(text, "team.py")
        assert [(d.code, d.span.line) for d in err.value.diagnostics] == [("TF401", 6)]
    else:
        assert (code, 6) in _codes(migrate(text, "team.py"))


def test_an_agentchat_team_with_settings_known_at_run_time_does_not_say_it_fails():
    text = ('from autogen_agentchat.agents import AssistantAgent\n'
            'from autogen_agentchat.teams import RoundRobinGroupChat\n'
            'from cfg import load\n'
            'a = AssistantAgent("a", model_client=None)\n'
            'b = AssistantAgent("b", model_client=None)\n'
            'team = RoundRobinGroupChat([a, b], **load())\n')
    (d,) = [d for d in migrate(text, "team.py").diagnostics if d.code == "TF411"]
    assert "known only when the program runs" in d.message and "the program fails here" not in d.message


TOOLS = {
    "ag2-patterns": ('from autogen import ConversableAgent, register_function\n'
                     'from autogen.agentchat import initiate_group_chat\n'
                     'from autogen.agentchat.group import AgentTarget, ReplyResult\n'
                     'from autogen.agentchat.group.patterns import DefaultPattern\n'
                     'a = ConversableAgent(name="a")\n'
                     'b = ConversableAgent(name="b")\n'
                     'def go_b() -> ReplyResult:\n'
                     '    return ReplyResult(message="x", target=AgentTarget(b))\n'
                     'REGISTER\n'
                     'p = DefaultPattern(initial_agent=a, agents=[a, b])\n'
                     'initiate_group_chat(pattern=p, messages="x", max_rounds=5)\n'),
    "classic": ('from autogen import ConversableAgent, GroupChat, GroupChatManager, register_function\n'
                'a = ConversableAgent("a", llm_config=False)\n'
                'b = ConversableAgent("b", llm_config=False)\n'
                'c = ConversableAgent("c", llm_config=False)\n'
                'def go_b() -> str:\n'
                '    return "x"\n'
                'REGISTER\n'
                'chat = GroupChat(agents=[a, b, c], messages=[], max_round=6)\n'
                'manager = GroupChatManager(groupchat=chat, llm_config=False)\n'
                'a.initiate_chat(manager, message="go")\n'),
}


@pytest.mark.parametrize("family", sorted(TOOLS))
@pytest.mark.parametrize("register", ['register_function(go_b, a, b, "go_b", "go")',
                                      'register_function(go_b, caller=a, executor=b, **extra)'])
def test_a_tool_registration_that_does_not_bind_is_reported(family, register):
    """`register_function(f, a, b, ...)`: AG2's `caller` and `executor` are keyword-only (TypeError).
    Before: the tool (a routing tool in a pattern; who speaks after a tool call in a classic chat)
    was left out without a word. Now TF411 at the argument."""
    text = TOOLS[family].replace("REGISTER", register)
    line = text.splitlines().index(register) + 1
    result = migrate(text, "t.py")
    assert [d.span.line for d in result.diagnostics if d.code == "TF411"] == [line], result.diagnostics


# -- changes written as a subscript or tuple assignment are changes too (review13) ---------------
@pytest.mark.parametrize("change, code", [
    ("a.handoffs.llm_conditions[0] = OnCondition(target=AgentTarget(b), condition=StringLLMCondition('b'))",
     "TF406"),
    ("a.handoffs.after_works[:] = []", "TF406"),
    ('a.description, b.description = "x", "y"', "TF409"),
    ('[b._is_termination_msg, c] = [lambda m: "BYE" in m["content"], 1]', "TF405"),
])
def test_a_pattern_agent_changed_through_a_subscript_or_tuple_is_reported(change, code):
    """`del a.handoffs.llm_conditions[0]` and `+=` were findings; the same change as an assignment
    to an item, or to several targets at once, was dropped without a word."""
    text = PATTERN_CHANGED.replace("CHANGE", change)
    assert (code, 8) in _codes(migrate(text, "p.py")), migrate(text, "p.py").diagnostics


@pytest.mark.parametrize("change, code", [
    ('b.description, c.description = "x", "y"', "TF409"),
    ('(b._name, n) = ("reviewer", 1)', "TF409"),
    ('b._is_termination_msg, *rest = [lambda m: "BYE" in m["content"], 1, 2]', "TF405"),
])
def test_a_classic_agent_changed_through_a_tuple_assignment_is_reported(change, code):
    text = _classic('chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")')
    text = text.replace('a.initiate_chat(', change + '\na.initiate_chat(')
    assert (code, 7) in _codes(migrate(text, "case.py")), migrate(text, "case.py").diagnostics


@pytest.mark.parametrize("change", ["chat.max_round, n = 2, 1", "[chat.agents[0], n] = [c, 1]"])
def test_a_group_chat_changed_through_a_tuple_assignment_is_refused(change):
    text = _classic('chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")')
    text = text.replace('manager = ', change + '\nmanager = ')
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    assert [d.code for d in err.value.diagnostics] == ["TF401"]


def test_an_agentchat_team_changed_through_a_tuple_assignment_is_refused():
    text = ('from autogen_agentchat.agents import AssistantAgent\n'
            'from autogen_agentchat.teams import RoundRobinGroupChat\n'
            'a = AssistantAgent("a", model_client=None)\n'
            'b = AssistantAgent("b", model_client=None)\n'
            'team = RoundRobinGroupChat([a, b], max_turns=6)\n'
            'team._max_turns, n = 2, 1\n')
    with pytest.raises(MigrateError) as err:
        migrate(text, "team.py")
    assert [(d.code, d.span.line) for d in err.value.diagnostics] == [("TF401", 6)]


# -- changes inside a function body are changes too, whether or not it is called (session 13) ------
IN_A_DEF = {
    "classic": ('from autogen import Agent, ConversableAgent, GroupChat, GroupChatManager\n'
                'a = ConversableAgent("a", llm_config=False)\n'
                'b = ConversableAgent("b", llm_config=False)\n'
                'c = ConversableAgent("c", llm_config=False)\n'
                'chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, speaker_selection_method="round_robin")\n'
                'manager = GroupChatManager(groupchat=chat, llm_config=False)\n'
                'def tweak():\n'
                '    CHANGE\n'
                'tweak()\n'
                'a.initiate_chat(manager, message="go")\n'),
    "ag2-patterns": ('from autogen import Agent, ConversableAgent\n'
                     'from autogen.agentchat import initiate_group_chat\n'
                     'from autogen.agentchat.group import AgentTarget, OnCondition, StringLLMCondition, TerminateTarget\n'
                     'from autogen.agentchat.group.patterns import DefaultPattern\n'
                     'a = ConversableAgent(name="a")\n'
                     'b = ConversableAgent(name="b")\n'
                     'p = DefaultPattern(initial_agent=a, agents=[a, b], group_after_work=TerminateTarget())\n'
                     'def tweak():\n'
                     '    CHANGE\n'
                     'tweak()\n'
                     'initiate_group_chat(pattern=p, messages="x", max_rounds=5)\n'),
    "autogen": ('from autogen_agentchat.agents import AssistantAgent\n'
                'from autogen_agentchat.teams import RoundRobinGroupChat\n'
                'a = AssistantAgent("a", model_client=None)\n'
                'b = AssistantAgent("b", model_client=None)\n'
                'team = RoundRobinGroupChat([a, b], max_turns=6)\n'
                'def tweak():\n'
                '    CHANGE\n'),
}


def _in_a_def(family: str, change: str, shape: str = "def") -> tuple[str, int]:
    """The file with `change` in a function body of the given shape, and the change's line."""
    text = IN_A_DEF[family]
    if shape == "nested def":
        change = "def inner():\n        " + change
    elif shape == "method":
        text = text.replace("def tweak():\n    CHANGE\n", "class Tweak:\n    def run(self):\n        CHANGE\n")
        text = text.replace("tweak()\n", "Tweak().run()\n")
    elif shape == "lambda":
        change = "f = lambda: " + change
    elif shape == "not called":
        text = text.replace("tweak()\n", "")
    text = text.replace("CHANGE", change)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip().endswith(change.split("\n")[-1].strip()))
    return text, line


_SHAPES = ["def", "nested def", "method", "not called"]


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("family, change", [
    ("classic", "chat.max_round = 2"), ("classic", "chat.agents.append(c)"), ("classic", "chat.agents[0] = c"),
    ("classic", "manager.groupchat.speaker_selection_method = 'auto'"), ("classic", "manager._groupchat = None"),
    ("ag2-patterns", "p.group_after_work = AgentTarget(a)"), ("ag2-patterns", "p.agents.append(b)"),
    ("autogen", "team._max_turns = 2"), ("autogen", "team._participants.reverse()"),
])
def test_a_chat_pattern_or_team_changed_inside_a_function_is_refused(family, change, shape):
    """`def tweak(): chat.max_round = 2` (called or not: the migrator cannot know whether it runs).
    Before: the flow was the constructor's chat without a word. Now TF401 there, as at module level."""
    text, line = _in_a_def(family, change, shape)
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", line), d
    assert "inside `" in d.message and "if it runs" in d.message, d.message


@pytest.mark.parametrize("family, change", [("classic", "chat.agents.append(c)"), ("ag2-patterns", "p.agents.append(b)"),
                                            ("autogen", "team._participants.reverse()")])
def test_a_change_in_a_lambda_s_body_is_refused(family, change):
    text, line = _in_a_def(family, change, "lambda")
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", line) and "inside a lambda" in d.message, d


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("family, change, code", [
    ("classic", 'manager._is_termination_msg = lambda m: "BYE" in m["content"]', "TF405"),
    ("classic", "b.update_max_consecutive_auto_reply(1)", "TF405"),
    ("classic", "b.register_reply([Agent, None], lambda recipient, messages, sender, config: (True, None))", "TF404"),
    ("classic", 'b.description = "reviews the code"', "TF409"),
    ("ag2-patterns", "a.handoffs.llm_conditions.append(OnCondition(target=AgentTarget(b), "
     "condition=StringLLMCondition('b')))", "TF406"),
    ("ag2-patterns", "a.handoffs.after_works.clear()", "TF406"),
    ("ag2-patterns", 'b._is_termination_msg = lambda m: "BYE" in m["content"]', "TF405"),
    ("autogen", 'a._handoffs["c"] = None', "TF406"),
    ("autogen", 'b._description = "reviews"', "TF409"),
])
def test_an_agent_or_manager_changed_inside_a_function_is_reported(family, change, code, shape):
    text, line = _in_a_def(family, change, shape)
    found = [d for d in migrate(text, "case.py").diagnostics if (d.code, d.span.line) == (code, line)]
    assert found and "if it runs" in found[0].message, migrate(text, "case.py").diagnostics


@pytest.mark.parametrize("family, change", [
    ("classic", "chat = GroupChat(agents=[a, b], messages=[])\n    chat.max_round = 2\n    return chat"),
    ("classic", "b = ConversableAgent('b', llm_config=False)\n    b.description = 'x'\n    return b"),
    ("classic", "def inner(chat):\n        chat.max_round = 2"),
    ("ag2-patterns", "for p in []:\n        p.agents.append(b)"),
    ("autogen", "team = object()\n    team._max_turns = 2"),
])
def test_a_function_s_own_object_of_the_same_name_is_its_own(family, change):
    """A change of the function's own local (or parameter) of the same name is not the module's object."""
    text, _ = _in_a_def(family, change)
    try:
        diagnostics = migrate(text, "case.py").diagnostics
    except MigrateError as err:  # (a chat the function builds and changes is its own chat's business)
        diagnostics = err.diagnostics
    assert not [d for d in diagnostics if "if it runs" in d.message], diagnostics


def test_a_global_declared_in_the_function_is_the_module_s():
    text, line = _in_a_def("classic", "global chat\n    chat.max_round = 2\n    chat = None")
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    assert [(d.code, d.span.line) for d in err.value.diagnostics] == [("TF401", line - 1)]


TRANSITIONS_IN_A_DEF = '''from autogen import ConversableAgent, GroupChat, GroupChatManager
a = ConversableAgent("a", llm_config=False)
b = ConversableAgent("b", llm_config=False)
c = ConversableAgent("c", llm_config=False)
graph = {a: [b], b: [a], c: [a]}
chat = GroupChat(agents=[a, b, c], messages=[], max_round=6, allowed_or_disallowed_speaker_transitions=graph,
                 speaker_transitions_type="allowed")
manager = GroupChatManager(groupchat=chat, llm_config=False)
def tweak():
    CHANGE
tweak()
a.initiate_chat(manager, message="go")
'''


@pytest.mark.parametrize("change", ["graph[a].append(c)", "graph[a] = [c]", "graph.update({a: [c]})", "del graph[c]",
                                    "graph[a] += [c]"])
def test_a_transitions_dict_changed_inside_a_function_is_refused(change):
    """`def tweak(): graph[a].append(c)`: an allowed dict stays the chat's own, so the change counts
    if the function runs. Before: the flow had the literal's transitions without a word."""
    with pytest.raises(MigrateError) as err:
        migrate(TRANSITIONS_IN_A_DEF.replace("CHANGE", change), "case.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", 10) and "inside `tweak` (line 9): if it runs" in d.message, d


def test_a_function_s_own_transitions_dict_of_the_same_name_is_its_own():
    text = TRANSITIONS_IN_A_DEF.replace("CHANGE", "graph = {}\n    graph[a] = [c]")
    assert _edges(_run(text)) == {("a", "b"), ("b", "a"), ("c", "a")}


def test_many_changes_of_a_function_s_own_objects_stay_linear():
    """Each change in a function body asks whether its variable is the function's own: the names
    of a function are gathered once (before: once per change, 30 s of CPU for 1,000 changes)."""
    import time

    body = "".join(f"    x{i} = object()\n    x{i}.v = {i}\n" for i in range(1000))
    text = IN_A_DEF["classic"].replace("    CHANGE\n", body)
    started = time.process_time()
    migrate(text, "case.py")
    assert time.process_time() - started < 5


@pytest.mark.parametrize("change", ['ctx["is_vip"] = True', 'ctx.set("is_vip", True)', 'ctx.update({"is_vip": True})',
                                    'data["is_vip"] = True'])
def test_a_pattern_context_changed_inside_a_function_is_reported(change):
    """`def promote(): ctx["is_vip"] = True`: if it runs before the chat, the context condition sees
    True. Before: the flow's initial context said false without a word. Now TF406 at the change, as
    a change at module level the migrator does not follow; a function's own `ctx` is its own."""
    text = ('from autogen import ConversableAgent\n'
            'from autogen.agentchat import initiate_group_chat\n'
            'from autogen.agentchat.group import (AgentTarget, ContextExpression, ContextVariables,\n'
            '                                     ExpressionContextCondition, OnContextCondition)\n'
            'from autogen.agentchat.group.patterns import DefaultPattern\n'
            'triage = ConversableAgent(name="triage")\n'
            'vip = ConversableAgent(name="vip")\n'
            'data = {"is_vip": False}\n'
            'ctx = ContextVariables(data=data)\n'
            'def promote():\n'
            '    CHANGE\n'
            'triage.handoffs.add_context_condition(OnContextCondition(\n'
            '    target=AgentTarget(vip), condition=ExpressionContextCondition(ContextExpression("${is_vip} == True"))))\n'
            'p = DefaultPattern(initial_agent=triage, agents=[triage, vip], context_variables=ctx)\n'
            'initiate_group_chat(pattern=p, messages="hi", max_rounds=5)\n')
    found = [d for d in _run(text.replace("CHANGE", change)).diagnostics if (d.code, d.span.line) == ("TF406", 11)]
    assert found and "inside `promote` (line 10): if it runs" in found[0].message, found
    own = text.replace("CHANGE", "ctx = ContextVariables(data={})\n    " + change.replace("data[", "ctx["))
    assert not [d for d in _run(own).diagnostics if "if it runs" in d.message]


GIVEN_AS_ARGUMENT = '''from autogen import ConversableAgent, GroupChat, GroupChatManager
a = ConversableAgent("a", llm_config=False)
b = ConversableAgent("b", llm_config=False)
chat = GroupChat(agents=[a, b], messages=[], max_round=6, speaker_selection_method="round_robin")
manager = GroupChatManager(groupchat=chat, llm_config=False)
def tweak(PARAM):
    CHANGE
CALL
a.initiate_chat(manager, message="go")
'''


@pytest.mark.parametrize("param, change, call", [
    ("gc", "gc.max_round = 2", "tweak(chat)"), ("gc", "gc.agents.append(a)", "tweak(gc=chat)"),
    ("chat", "chat.max_round = 2", "tweak(chat)"), ("gc", "gc.max_round = 2", "def main():\n    tweak(chat)\nmain()"),
    ("m", "m.groupchat.max_round = 2", "tweak(manager)"),
])
def test_a_chat_given_to_a_function_that_changes_it_is_refused(param, change, call):
    """`def tweak(gc): gc.max_round = 2` called as `tweak(chat)`. Before: read as the constructor's chat."""
    text = GIVEN_AS_ARGUMENT.replace("PARAM", param).replace("CHANGE", change).replace("CALL", call)
    with pytest.raises(MigrateError) as err:
        migrate(text, "case.py")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("TF401", 7) and "inside `tweak` (line 6): if it runs" in d.message, d


def test_an_agent_given_to_a_function_that_changes_it_is_reported():
    text = GIVEN_AS_ARGUMENT.replace("PARAM", "x").replace("CHANGE", 'x.description = "other"').replace("CALL", "tweak(b)")
    assert ("TF409", 7) in _codes(migrate(text, "case.py"))


@pytest.mark.parametrize("call", ["", "def main():\n    chat = object()\n    tweak(chat)", "tweak(*[chat])", "tweak(a)"])
def test_a_function_given_something_else_is_not_taken_for_a_change_of_the_chat(call):
    """Not called, called with a local of another function of the same name, or with what the
    migrator cannot bind (`*[chat]`), or with an agent (that change is the agent's: TF409): no change
    of the chat is read."""
    text = GIVEN_AS_ARGUMENT.replace("PARAM", "gc").replace("CHANGE", "gc.max_round = 2").replace("CALL", call)
    found = [d for d in migrate(text, "case.py").diagnostics if "inside `tweak`" in d.message]
    assert [d.code for d in found] == (["TF409"] if call == "tweak(a)" else []), found
