"""`turnflow compile --target autogen`: the generated SelectorGroupChat, run by AutoGen AgentChat
0.7 with scripted agents, makes the decisions turnflow's hub makes (docs/targets.md).

Generated flows (tests/flow_strategies.py) lose their context statements and the rules that test
context (TF304 refuses those: AgentChat teams share no context), then run with the same scripted
plan (text and tool calls) on the hub and as an AgentChat team; speakers and the close reason
must be equal. The suite runs 40 flows; the larger run:

    TURNFLOW_TARGET_EXAMPLES=500 python3 -m pytest -q -p no:cacheprovider tests/test_target_autogen.py
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.replay")

import turnflow  # noqa: E402
from flow_strategies import workflow_blocks  # noqa: E402
from target_harness import DIFF_TOOLS, SCRIPT_END, load_module, plans, run_hub, step, without_context  # noqa: E402
from turnflow.compiler.emit.spec import CompileError  # noqa: E402
from turnflow.compiler.emit.targets import compile_target  # noqa: E402
from turnflow.dsl import ast  # noqa: E402
from turnflow.dsl.printer import print_flow  # noqa: E402

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted(ROOT.glob("examples/*.flow"))
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "40"))


class ScriptEnd(Exception):
    pass


def run_autogen(source: str, plan: list):
    """The compiled module's team run by scripted AgentChat agents following `plan`:
    (speakers, close reason)."""
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage, ToolCallRequestEvent
    from autogen_core import FunctionCall
    from autogen_ext.models.replay import ReplayChatCompletionClient

    mod = load_module(source)
    order = list(mod.PARTICIPANTS)
    owned = {p: list(mod.TOOLS[p]) for p in order}
    taken = itertools.count()
    speakers: list = []

    class Scripted(BaseChatAgent):
        @property
        def produced_message_types(self):
            return (TextMessage,)

        async def on_messages(self, messages, cancellation_token):
            speakers.append(self.name)
            s = step(plan, next(taken), self.name, order, owned, classic=True)
            if s.get("finish") == SCRIPT_END:
                raise ScriptEnd
            inner = [ToolCallRequestEvent(source=self.name, content=[
                FunctionCall(id="c", name=s["tool"], arguments="{}")])] if s.get("tool") else []
            return Response(chat_message=TextMessage(source=self.name, content=s.get("say", "")),
                            inner_messages=inner)

        async def on_reset(self, cancellation_token):
            pass

    team = mod.build({p: Scripted(p, "scripted") for p in order}, ReplayChatCompletionClient([]))
    try:
        _result, reason = asyncio.run(mod.run(team, "task"))
    except Exception as exc:  # the agent's ScriptEnd, as AgentChat re-raises it
        assert "ScriptEnd" in f"{type(exc).__name__} {exc}", exc
        reason = SCRIPT_END
    return speakers, reason


def same_decisions(text: str, plan: list) -> None:
    spec = turnflow.compile(text)[0]
    speakers, _ctx, reason = run_hub(spec, plan, classic=True)
    got = run_autogen(compile_target(text, "autogen"), plan)
    assert got == (speakers, reason), (text, plan)
    event(f"closed by {reason}")


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_blocks(tools=DIFF_TOOLS), plans)
def test_generated_flows_decide_alike_in_autogen_and_on_the_hub(block, plan):
    block = without_context(block)
    assume(all(p.name.name.isidentifier() for p in block.participants))  # else TF304 (AgentChat's names)
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    same_decisions(text, plan)


WORKFLOWS = [(p, b) for p in EXAMPLES for b in turnflow.parse(p.read_text(encoding="utf-8")).blocks
             if b.kind == "workflow"]


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b.name.name}" for p, b in WORKFLOWS])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans)
def test_every_examples_routing_decides_alike_in_autogen_and_on_the_hub(path, block, plan):
    """The examples keep state in the context (refused, below); their routing without it runs alike."""
    block = without_context(block)
    same_decisions(print_flow(ast.FlowFile(span=block.span, blocks=[block])), plan)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_refused_where_it_uses_context(path):
    text = path.read_text(encoding="utf-8")
    for spec in turnflow.compile(text):
        if spec["kind"] != "workflow" or not spec["knobs"]["context_vars"]:
            continue  # (examples/helpdesk.flow keeps no context: it compiles, tests/test_target_autogen_json.py)
        with pytest.raises(CompileError) as exc:
            compile_target(text, "autogen", block=spec["name"])
        errors = [d for d in exc.value.diagnostics if d.severity == "error"]
        assert errors and {d.code for d in errors} == {"TF304"} and any("context" in d.message for d in errors)


def test_build_checks_the_agents_it_is_given():
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.replay import ReplayChatCompletionClient

    text = ("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 3\n"
            "    a -> b\n    b -> a\n}\n")
    mod = load_module(compile_target(text, "autogen"))
    client = ReplayChatCompletionClient([])
    with pytest.raises(ValueError, match="missing: b"):
        mod.build({"a": AssistantAgent("a", client)}, client)
    with pytest.raises(ValueError, match="named 'c'"):
        mod.build({"a": AssistantAgent("a", client), "b": AssistantAgent("c", client)}, client)
    assert compile_target(text, "autogen") == compile_target(text, "autogen")


def test_two_teams_of_one_module_run_at_once_keep_their_own_close_reasons():
    """`build` twice, `run` both at once (a server answering two requests): each run reports its
    own team's close reason, and a team whose participant is named `user` does not take the other
    team's task message for its turn."""
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    text = ("workflow w {\n    participant user\n    participant b\n    start b\n    max_turns 6\n"
            "    b -> terminate \"quick\" when text contains \"STOP\"\n    b -> user\n"
            "    user -> terminate \"slow\" when text contains \"STOP\"\n    user -> b\n}\n")
    mod = load_module(compile_target(text, "autogen"))

    class Says(BaseChatAgent):
        def __init__(self, name, replies):
            super().__init__(name, "scripted")
            self.replies = iter(replies)

        @property
        def produced_message_types(self):
            return (TextMessage,)

        async def on_messages(self, messages, cancellation_token):
            await asyncio.sleep(0.01)  # let the other team's run interleave
            return Response(chat_message=TextMessage(source=self.name, content=next(self.replies)))

        async def on_reset(self, cancellation_token):
            pass

    def team(b_says, user_says):
        return mod.build({"user": Says("user", user_says), "b": Says("b", b_says)}, ReplayChatCompletionClient([]))

    async def both():
        return await asyncio.gather(mod.run(team(["STOP"], []), "STOP now"),
                                    mod.run(team(["go", "go", "go"], ["wait", "STOP"]), "STOP later"))

    (quick, quick_reason), (slow, slow_reason) = asyncio.run(both())
    assert [m.source for m in quick.messages] == ["user", "b"] and quick_reason == "quick"
    assert [m.source for m in slow.messages] == ["user", "b", "user", "b", "user"] and slow_reason == "slow"
