"""`turnflow.interop.ag2`: the two extension conditions on AG2 1.2.1's own
registry, adapter and in-process hub."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

import turnflow

from ag2_session import ag2_missing
from turnflow.interop.ag2 import AllOf, TextContains, bind_agents, register_extensions

pytestmark = pytest.mark.skipif(ag2_missing(), reason="ag2 is not installed (pip install -e '.[test]')")

# AG2's names, bound by `_ag2` below when the first test of this module runs: importing
# ag2.network costs seconds, which collecting the suite (or running other tests) should not pay
ag2 = EV_CHANNEL_INVITE = EV_CHANNEL_INVITE_ACK = EV_CONTEXT_SET = EV_PACKET = EV_TEXT = None
Envelope = TransitionGraph = TransitionRegistry = AutoAck = None


@pytest.fixture(autouse=True, scope="module")
def _ag2():
    import ag2.network as net

    class Acker(net.BaseHubListener):
        """Acknowledges every channel invitation on AG2's hub at once (the invitees are not live agents)."""

        def __init__(self, hub):
            self.hub = hub

        async def on_envelope_posted(self, envelope, metadata):
            if envelope.event_type == net.EV_CHANNEL_INVITE:
                for invitee in envelope.audience:
                    await self.hub.post_envelope(net.Envelope(envelope.channel_id, invitee, [envelope.sender_id],
                                                              net.EV_CHANNEL_INVITE_ACK, {}))
    globals().update(ag2=net, AutoAck=Acker, **{n: getattr(net, n) for n in (
        "EV_CHANNEL_INVITE", "EV_CHANNEL_INVITE_ACK", "EV_CONTEXT_SET", "EV_PACKET", "EV_TEXT", "Envelope",
        "TransitionGraph", "TransitionRegistry")})


async def open_workflow(hub, spec, creator="user"):
    """The spec's participants registered on AG2's hub (their invitations acked at once) and its
    workflow channel opened by `creator`: (agent ids by name, the channel's metadata)."""
    from ag2.network import Passport, Resume

    hub.register_listener(AutoAck(hub))
    names = [p["agent_id"] for p in spec["participants"]]
    ids = {n: (await hub.register_identity(Passport(name=n), Resume())).agent_id for n in names}
    meta = await hub.create_channel(creator_id=ids[creator], manifest_type="workflow",
                                    participants=[ids[n] for n in names], knobs=bind_agents(spec["knobs"], ids))
    return ids, meta


SUPPORT = (Path(__file__).parent / "fixtures" / "compile" / "support.flow").read_text()


def test_importing_turnflow_does_not_import_ag2():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent / "src")}
    code = ("import sys, turnflow, turnflow.interop.ag2, turnflow.compiler.decompile\n"
            "turnflow.compile(open(sys.argv[1]).read())\n"
            "assert not any(m == 'ag2' or m.startswith('ag2.') for m in sys.modules), 'ag2 imported'\n")
    path = str(Path(__file__).parent / "fixtures" / "compile" / "support.flow")
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def test_register_extensions_is_idempotent():
    assert register_extensions() == ("all_of", "text_contains", "context_compare", "any_of", "not",
                                     "previous_speaker")
    registry = TransitionRegistry.default()
    first, first_targets = dict(registry._conditions), dict(registry._targets)
    from ag2.network.adapters.workflow import WorkflowAdapter
    fold = WorkflowAdapter.fold
    register_extensions()
    assert registry._conditions == first and registry._targets == first_targets
    assert WorkflowAdapter.fold is fold  # the fold is wrapped once
    assert registry._conditions["all_of"] is AllOf and registry._conditions["text_contains"] is TextContains


def test_without_the_installer_ag2_refuses_the_knobs():
    graph = turnflow.compile(SUPPORT)[0]["knobs"]["graph"]
    with pytest.raises(ag2.WorkflowGraphError, match="all_of"):
        TransitionGraph.loads(graph, registry=TransitionRegistry())  # a fresh registry: built-ins only
    register_extensions()
    assert TransitionGraph.loads(graph).to_dict() == graph


def _env(event_type, data, sender="a"):
    return Envelope("ch", sender, None, event_type, data, envelope_id="e1")


def test_text_contains_reads_the_round_body():
    cond = TextContains("DONE")
    assert cond.evaluate(None, _env(EV_TEXT, {"text": "all DONE"}))
    assert not cond.evaluate(None, _env(EV_TEXT, {"text": "all done"}))  # case-sensitive
    assert cond.evaluate(None, _env(EV_PACKET, {"body": "DONE", "routing": {"kind": "text"}}))
    assert not cond.evaluate(None, _env(EV_PACKET, {"routing": {"kind": "text"}}))
    assert not cond.evaluate(None, _env(EV_CONTEXT_SET, {"set": {"text": "DONE"}}))


def test_all_of_nests_registered_conditions():
    register_extensions()
    cond = AllOf([{"name": "from_speaker", "args": {"agent_id": "a"}},
                  {"name": "text_contains", "args": {"text": "go"}}])
    assert cond.evaluate(None, _env(EV_TEXT, {"text": "go"}))
    assert not cond.evaluate(None, _env(EV_TEXT, {"text": "go"}, sender="b"))
    assert not cond.evaluate(None, _env(EV_TEXT, {"text": "stop"}))
    assert AllOf([]).evaluate(None, _env(EV_TEXT, {"text": ""}))


def test_bind_agents_rewrites_every_speaker_reference():
    knobs = turnflow.compile(SUPPORT)[0]["knobs"]
    ids = {n: f"id-{n}" for n in ("user", "triage", "billing", "tech")}
    bound = bind_agents(knobs, ids)
    assert knobs["graph"]["initial_speaker"] == "triage"  # not mutated
    graph = bound["graph"]
    assert graph["initial_speaker"] == "id-triage"
    assert graph["transitions"][0]["then"]["args"]["agent_id"] == "id-billing"
    assert graph["transitions"][4]["when"]["args"]["conditions"][0]["args"]["agent_id"] == "id-user"
    assert bound["context_vars"] == knobs["context_vars"]
    with pytest.raises(KeyError, match="tech"):
        bind_agents(knobs, {k: v for k, v in ids.items() if k != "tech"})


def test_compiled_support_flow_runs_on_the_ag2_hub():
    """The language reference's example, compiled, on AG2's own hub: triage
    hands off by tool, billing answers, the user sets `resolved` and the
    all_of rule ends the channel with the reason "resolved"."""
    from ag2.knowledge import MemoryKnowledgeStore
    from ag2.network import Hub

    register_extensions()
    spec = turnflow.compile(SUPPORT)[0]

    async def main():
        hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0, expectation_sweep_interval=0)
        try:
            ids, meta = await open_workflow(hub, spec)
            cid = meta.channel_id
            by_id = {v: k for k, v in ids.items()}
            seen = []

            async def post(name, event_type, data):
                await hub.post_envelope(Envelope(cid, ids[name], None, event_type, data))
                nxt = hub.adapter_state(cid).expected_next_speaker
                seen.append(by_id.get(nxt))

            await post("triage", EV_PACKET, {"routing": {"kind": "handoff", "tool": "transfer_to_billing"},
                                             "body": "billing question"})
            await post("billing", EV_TEXT, {"text": "refunded"})
            await post("user", EV_PACKET, {"routing": {"kind": "text"}, "body": "thanks",
                                           "context_updates": {"set": {"resolved": True}}})
            closed = await hub.get_channel(cid)
            return seen, closed.state.value, closed.close_reason
        finally:
            await hub.close()

    seen, state, reason = asyncio.run(main())
    assert seen == ["billing", "user", None]
    assert (state, reason) == ("closed", "resolved")


PREVIOUS_FLOW = """
workflow w {
    participant user initiator
    participant planner
    participant coder
    start planner
    max_turns 20
    planner -> user when text contains "?"
    planner -> coder
    coder   -> planner when text contains "done"
    coder   -> user
    user    -> previous
}
"""


def test_previous_runs_on_the_ag2_hub_and_survives_reopening():
    """`user -> previous` on AG2's own hub: the user answers whoever asked (coder, then
    planner), and a hub reopened on the same store, which folds the log again, agrees."""
    from ag2.knowledge import MemoryKnowledgeStore
    from ag2.network import Hub

    register_extensions()
    spec = turnflow.compile(PREVIOUS_FLOW)[0]

    store = MemoryKnowledgeStore()

    async def first():
        hub = await Hub.open(store, ttl_sweep_interval=0, expectation_sweep_interval=0)
        try:
            ids, meta = await open_workflow(hub, spec)
            by_id = {v: k for k, v in ids.items()}
            seen = []
            for name, text in [("planner", "plan"), ("coder", "which lib"), ("user", "numpy"), ("coder", "done"),
                               ("planner", "ship?"), ("user", "yes")]:
                await hub.post_envelope(Envelope(meta.channel_id, ids[name], None, EV_TEXT, {"text": text}))
                seen.append(by_id.get(hub.adapter_state(meta.channel_id).expected_next_speaker))
            return seen, meta.channel_id, by_id
        finally:
            await hub.close()

    seen, cid, by_id = asyncio.run(first())
    assert seen == ["coder", "user", "coder", "planner", "user", "planner"]

    async def reopened():
        hub = await Hub.open(store, ttl_sweep_interval=0, expectation_sweep_interval=0)
        try:
            return by_id.get(hub.adapter_state(cid).expected_next_speaker)
        finally:
            await hub.close()

    assert asyncio.run(reopened()) == "planner"
