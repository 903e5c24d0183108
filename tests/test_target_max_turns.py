"""`max_turns` survives compile → migrate for every target `turnflow migrate` reads back
(docs/targets.md): `langgraph` and `autogen` (their `MAX_TURNS`, `migrate/compiled.py`),
`autogen-json` (the team's `max_turns`, `frameworks/autogen/reader_json.py`) and `ag2-groupchat`
(the `GroupChat`'s `max_round`, `frameworks/ag2/reader_groupchat.py`).

AG2's `GroupChatManager.run_chat` appends one message per round, the opening one included, and
stops after `max_round` of them (`for i in range(groupchat.max_round)`): the start speaker's
opening message is the flow's first turn, so `max_round` N is `max_turns N`, both ways. The
GroupChat target once wrote `max_round` N + 1 (a backstop behind its own `is_termination_msg`)
and migrated back as `max_turns N+1`.

Generated flows (tests/flow_strategies.py, the routing alone where a target refuses context;
component-shaped ones for `autogen-json`, tests/component_flows.py) with any whole `max_turns`
from 1 to 10**9, 40 per target in the suite; the larger run:

    TURNFLOW_TARGET_EXAMPLES=500 python3 -m pytest -q -p no:cacheprovider tests/test_target_max_turns.py
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import turnflow
from component_flows import component_blocks
from flow_strategies import workflow_blocks
from target_harness import DIFF_TOOLS, without_context
from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import compile_target
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow
from turnflow.migrate import migrate

N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "40"))
#: target → the name the emitted code is migrated under
READ_BACK = {"langgraph": "graph.py", "autogen": "team.py", "autogen-json": "team.json", "ag2-groupchat": "chat.py"}


def with_max_turns(block: ast.Block, n: int) -> ast.Block:
    """`block` with `max_turns n` (in place of its own, or added after `start`)."""
    cap = ast.MaxTurns(span=block.span, value=ast.Number(span=block.span, value=n, raw=str(n)))
    stmts = [s for s in block.statements if not isinstance(s, ast.MaxTurns)]
    at = next(i for i, s in enumerate(stmts) if isinstance(s, ast.Start)) + 1
    return dataclasses.replace(block, statements=[*stmts[:at], cap, *stmts[at:]])


def read_back_max_turns(text: str, target: str) -> int | None:
    """`max_turns` of the flow migrate reads from what `target` wrote for `text`."""
    back = migrate(compile_target(text, target), READ_BACK[target])
    [block] = turnflow.parse(back.text).blocks
    caps = block.of_type(ast.MaxTurns)
    return caps[0].value.value if caps else None


def flow_text(block: ast.Block, target: str) -> str:
    if target in ("ag2-groupchat", "autogen"):  # no shared context there (TF303, TF304): the routing
        block = without_context(block)
    return print_flow(ast.FlowFile(span=block.span, blocks=[block]))


@pytest.mark.parametrize("target", sorted(READ_BACK))
@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), n=st.integers(1, 10**9) | st.integers(1, 30))
def test_max_turns_round_trips_through_every_target_migrate_reads(target, data, n):
    blocks = component_blocks() if target == "autogen-json" else workflow_blocks(tools=DIFF_TOOLS)
    text = flow_text(with_max_turns(data.draw(blocks), n), target)
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    try:
        compile_target(text, target)
    except CompileError:  # a construct the target refuses (TF302, TF305)
        assume(False)
    assert read_back_max_turns(text, target) == n


def test_the_groupchat_writes_max_round_as_max_turns():
    """The cap itself, not only its reading: `max_round=N` (AG2 counts the opening message, the
    start speaker's first turn), and `is_termination_msg` still says `max_turns` on the N-th turn
    (it runs before AG2's own last-round check; tests/test_target_ag2_groupchat.py runs it)."""
    text = "workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 5\n    a -> b\n    b -> a\n}\n"
    source = compile_target(text, "ag2-groupchat")
    assert "    max_round=5,\n" in source and "MAX_TURNS: Optional[int] = 5\n" in source
    assert read_back_max_turns(text, "ag2-groupchat") == 5


def test_a_flow_without_max_turns_reads_back_with_the_groupchats_backstop():
    """A classic GroupChat has no unbounded chat: a flow without `max_turns` is written with
    `max_round=100000` and reads back as `max_turns 100000` (docs/targets.md); the other targets
    keep "no cap" (`MAX_TURNS = None`, the team's `max_turns` null)."""
    text = "workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate \"done\"\n}\n"
    assert read_back_max_turns(text, "ag2-groupchat") == 100_000
    for target in ("langgraph", "autogen", "autogen-json"):
        assert read_back_max_turns(text, target) is None, target
