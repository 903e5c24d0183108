"""`turnflow migrate` reads exactly or says so (session 13 QA): settings passed through `**shared`
of a literal dict, GroupChat settings AG2 refuses together, pattern targets the flow cannot
express, and argument forms real code uses (positional, aliases, attributes set after the agent is
built). Each case either migrates to the graph AG2 runs or carries a finding at the construct."""

from __future__ import annotations

import os
import subprocess

import pytest

import turnflow
from turnflow.migrate import MigrateError, migrate
from test_migrate import reference_edges


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


def _ag2_builds(text: str) -> str:
    """'ok' when ag2 0.9.9 builds the chats of `text` (nothing is started), else AG2's error."""
    from test_migrate_live import _classic_python

    python = _classic_python()
    program = text.replace("a.initiate_chat(manager, message=\"go\")", "") + "print('ok')\n"
    run = subprocess.run([python, "-c", program], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH="", OPENAI_API_KEY="sk-test"))
    return run.stdout.strip() if run.returncode == 0 else run.stderr.strip().splitlines()[-1]


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
    for repeat in ("False", "[a]"):
        assert "Don't provide both" in _ag2_builds(REPEAT_AND_DICT.replace("REPEAT", repeat))
    assert _ag2_builds(REPEAT_AND_DICT.replace("REPEAT", "None")) == "ok"
    assert _ag2_builds(REPEAT_AND_DICT.replace("REPEAT", "(a,)")).startswith("ValueError: GroupChat "
                                                                            "allow_repeat_speaker should be")


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
