"""Issue 25, item 7: a message that names agents names a bounded number of them, then says how
many more, in `check` and in `migrate` (diagnostics and the comments written into the flow).
A 100,000-agent input once produced messages naming every agent, each repeated per agent."""

from __future__ import annotations

from turnflow.compiler.pipeline import check
from turnflow.migrate import migrate

N = 300
LONGEST = 2_000  # characters: twenty names and the rest counted fit easily


def _loop_flow(n: int) -> str:
    # (a cap above n: every speaker gets the turn, so the `*` rule is shadowed for each of them)
    lines = ["workflow w {", *(f"    participant a{i}" for i in range(n)), "    start a0", f"    max_turns {n + 10}",
             *(f"    a{i} -> a{(i + 1) % n}" for i in range(n)), "    * -> terminate", "}"]
    return "\n".join(lines) + "\n"


def test_check_messages_name_a_bounded_number_of_speakers():
    diags = {d.code: d for d in check(_loop_flow(N), path="loop.flow")}
    loop, shadowed = diags["TF209"], diags["TF204"]  # the loop a0 -> ... -> a299 -> a0; `*` shadowed 300 times
    assert "a0 -> a1 -> " in loop.message and f"… and {N + 1 - 20} more" in loop.message
    assert "`a0 -> a1` (line" in shadowed.message and f"… and {N - 20} more" in shadowed.message
    for d in (loop, shadowed):
        assert len(d.message) < LONGEST, (d.code, len(d.message))
    assert len(shadowed.related) <= 20


def _shared_termination_chat(n: int) -> str:
    lines = ["from autogen import ConversableAgent, GroupChat, GroupChatManager",
             "done = lambda m: 'DONE' in m['content']"]
    lines += [f"a{i} = ConversableAgent(name='agent_{i}', llm_config=False, is_termination_msg=done)"
              for i in range(n)]
    lines += ["gc = GroupChat(agents=[" + ", ".join(f"a{i}" for i in range(n)) + "], messages=[], max_round=5,",
              "               speaker_selection_method='round_robin')",
              "a0.initiate_chat(GroupChatManager(groupchat=gc), message='go')"]
    return "\n".join(lines) + "\n"


def test_migrate_notes_name_a_bounded_number_of_agents():
    result = migrate(_shared_termination_chat(N), "chat.py")
    shared = [d for d in result.diagnostics if d.code == "TF405" and "is_termination_msg` of" in d.message]
    assert shared, [d.message[:100] for d in result.diagnostics]
    assert all(len(d.message) < LONGEST for d in result.diagnostics), max(len(d.message) for d in result.diagnostics)
    assert "`agent_0`, `agent_1`" in shared[0].message and f"… and {N - 20} more" in shared[0].message
    # the same note as a comment in the flow, with the input positions it concerns: bounded too
    assert max(len(line) for line in result.text.splitlines()) < LONGEST
    assert f"… and {N - 20} more" in result.text
