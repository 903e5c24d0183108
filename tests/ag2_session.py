"""One AG2 1.2.1 workflow channel driven by hand: the calls AG2's hub makes on its
`WorkflowAdapter` (validate_send, fold, on_accepted), no hub and no network.
The reference side of the differential and interop tests."""

from __future__ import annotations

from typing import Optional


def ag2_missing() -> bool:
    """AG2 is not installed (found without importing it: importing ag2.network costs seconds)."""
    import importlib.util

    return importlib.util.find_spec("ag2") is None


class Ag2Session:
    def __init__(self, spec: dict, creator: Optional[str] = None):
        from ag2.network import ChannelMetadata, ChannelState, Participant, ParticipantRole, WorkflowAdapter

        from turnflow.interop.ag2 import register_extensions

        register_extensions()
        if creator is None:
            creator = next((p["agent_id"] for p in spec["participants"] if p["role"] == "initiator"),
                           spec["knobs"]["graph"]["initial_speaker"])
        self.adapter = WorkflowAdapter()
        self.meta = ChannelMetadata(
            channel_id="ch", manifest=self.adapter.manifest, creator_id=creator,
            participants=[Participant(p["agent_id"], ParticipantRole.INITIATOR if p["agent_id"] == creator
                                      else ParticipantRole.PARTICIPANT, p["order"]) for p in spec["participants"]],
            state=ChannelState.ACTIVE, created_at="2026-01-01T00:00:00+00:00", knobs=spec["knobs"])
        self.adapter.validate_create(self.meta)
        self.state = self.adapter.initial_state(self.meta)
        self.n = 0
        self.closed: Optional[str] = None

    def post(self, sender: str, event_type: str, data: dict) -> None:
        from ag2.network import ChannelState, Envelope

        self.n += 1
        env = Envelope(channel_id="ch", sender_id=sender, audience=None, event_type=event_type,
                       event_data=data, envelope_id=f"e{self.n}")
        self.adapter.validate_send(self.meta, env, self.state)
        self.state = self.adapter.fold(env, self.state)
        result = self.adapter.on_accepted(self.meta, env, self.state)
        if result.next_state == ChannelState.CLOSED:
            self.closed = result.auto_close_reason

    def say(self, sender: str, body: str, tool: Optional[str] = None, context: Optional[dict] = None) -> None:
        """One round by the expected speaker: a packet, with a routing tool and context
        updates when given."""
        from ag2.network import EV_PACKET

        assert self.expected() == sender
        self.post(sender, EV_PACKET, {"body": body, **({"routing": {"kind": "handoff", "tool": tool}} if tool else {}),
                                      **({"context_updates": {"set": context, "delete": []}} if context else {})})

    def expected(self) -> Optional[str]:
        nxt = self.adapter.expected_next(self.meta, self.state)
        return nxt.agent_id if nxt is not None else None
