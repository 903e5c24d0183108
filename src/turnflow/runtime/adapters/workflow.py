"""The workflow adapter: AG2 1.2.1's `WorkflowAdapter` semantics, decision for decision
(docs/runtime.md, "The four adapters"), on a graph compiled once (`transitions.CompiledGraph`, shared by sessions of one flow).

Documented differences from AG2 1.2.1 (each tested):
- the graph is validated and compiled once, in `initial_state`; no re-parse per envelope;
- an `agent` target that is not a participant is refused at create time, and a packet's
  handoff `target` that is not a participant is refused with `ProtocolError` (AG2 accepts
  both and the session stalls until its TTL);
- every malformed knob is a `ProtocolError` naming its JSON path (AG2 leaks `KeyError` /
  `TypeError`); the graph is read with the `turnflow.spec` models, the way AG2's `loads` reads it,
  but strictly typed (`"1"` is not a priority);
- packet and context-set payloads are shape-checked in `validate_send`;
- the extensions (`all_of`, `any_of`, `not`, `text_contains`, `context_compare`, the target
  `previous_speaker`) are built in; `previous_speaker` resolves to the state's last speaker before
  the envelope being folded (so `hydrate`, which folds the log again, rebuilds it);
- an `expectation.violated` envelope with action `hide` makes `round_robin` targets skip
  that participant until it speaks again, and moves the current turn on when a
  `round_robin` target chose the hidden participant (AG2 has no `hide`).
"""

from __future__ import annotations

import functools
import json

from typing import TYPE_CHECKING, Any, ClassVar, Optional

from turnflow.runtime.adapters.protocol import (NO_CHANGE, AdapterResult, ExpectedTurn, check_knobs,
                                            check_participants, render_substantive, round_to_envelope, text_of)
from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_EXPECTATION_VIOLATED, EV_PACKET, EV_TEXT, Envelope)
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata
from turnflow.runtime.session_spec import known_graph
from turnflow.runtime.transitions import ALWAYS, CTX, PREVIOUS, TEST, TOOL, CompiledGraph

if TYPE_CHECKING:
    from turnflow.runtime.views import WindowedSummary

_EMPTY: frozenset[str] = frozenset()
_NODICT: dict[str, Any] = {}


class WorkflowState:
    __slots__ = ("graph", "expected_next_speaker", "last_speaker_id", "last_envelope_id", "turn_count",
                 "pending_close_reason", "context_vars", "hidden", "via_round_robin")

    def __init__(self, graph: CompiledGraph, expected: Optional[str], last_speaker: Optional[str],
                 last_envelope_id: Optional[str], turn_count: int, pending: str, context: dict[str, Any],
                 hidden: frozenset[str] = _EMPTY, via_round_robin: bool = False) -> None:
        self.graph = graph
        self.expected_next_speaker = expected
        self.last_speaker_id = last_speaker
        self.last_envelope_id = last_envelope_id
        self.turn_count = turn_count
        self.pending_close_reason = pending
        self.context_vars = context  # never mutated in place: a fold that changes it copies it
        self.hidden = hidden
        self.via_round_robin = via_round_robin  # the expected speaker was chosen by a round_robin target

    def snapshot(self) -> dict[str, Any]:
        return {"expected_next_speaker": self.expected_next_speaker, "last_speaker_id": self.last_speaker_id,
                "last_envelope_id": self.last_envelope_id, "turn_count": self.turn_count,
                "pending_close_reason": self.pending_close_reason, "context_vars": self.context_vars,
                "hidden": sorted(self.hidden)}


class _Folded(WorkflowState):
    """A state a fold builds, every slot filled by the fold (`_next`, `_route`). Calling this class
    runs no Python `__init__`, only the C allocation: `object.__new__(WorkflowState)`, which the
    folds used before, goes through a generic wrapper that builds two argument tuples (about 290
    machine instructions a state more; docs/benchmarks.md, issue 36)."""

    __slots__ = ()
    __init__ = object.__init__


def _next(graph: CompiledGraph, expected: Optional[str], last_speaker: Optional[str], last_envelope_id: Optional[str],
          turn_count: int, pending: str, context: dict[str, Any], hidden: frozenset[str],
          via_round_robin: bool) -> WorkflowState:
    """`WorkflowState(...)` for the folds (every field given): filling the slots of a `_Folded`
    here rather than calling `WorkflowState` costs about a third less per state on CPython 3.11,
    where calling a class with a Python `__init__` is not specialised (docs/benchmarks.md)."""
    s: WorkflowState = _Folded()
    s.graph = graph
    s.expected_next_speaker = expected
    s.last_speaker_id = last_speaker
    s.last_envelope_id = last_envelope_id
    s.turn_count = turn_count
    s.pending_close_reason = pending
    s.context_vars = context
    s.hidden = hidden
    s.via_round_robin = via_round_robin
    return s


def _check_context_vars(v: Any) -> None:
    if not isinstance(v, dict):
        raise ProtocolError(f"workflow session: knob `context_vars` must be an object, got {type(v).__name__}")
    for k in v:
        if not isinstance(k, str):
            raise ProtocolError(f"workflow session: context variable names must be strings, got {k!r}")


def _graph_later(graph: Any) -> None:
    """The graph is validated (with the `turnflow.spec` models) and compiled once, in
    `initial_state`, which the hub calls right after `validate_create`, before storing anything."""


def _check_updates(u: Any, what: str) -> None:
    if type(u) is not dict:
        if not isinstance(u, dict):
            raise ProtocolError(f"{what} must be an object with `set` and `delete`, got {u!r}")
    s = u.get("set")
    if s is not None and type(s) is not dict and not isinstance(s, dict):
        raise ProtocolError(f"{what}.set must be an object, got {s!r}")
    d = u.get("delete")
    if d:
        if not isinstance(d, list):
            raise ProtocolError(f"{what}.delete must be a list of names, got {d!r}")
        for k in d:
            if type(k) is not str:
                raise ProtocolError(f"{what}.delete must be a list of names, got {d!r}")
    elif d is not None and not isinstance(d, list):
        raise ProtocolError(f"{what}.delete must be a list of names, got {d!r}")


def _unhide(hidden: frozenset[str], sender: str) -> frozenset[str]:
    return hidden - {sender} if hidden and sender in hidden else hidden


def _apply(ctx: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    dels, sets = updates.get("delete"), updates.get("set")
    if not dels:  # nearly every update: one display builds the copy (half the cost of dict() + update())
        return {**ctx, **sets} if sets else ctx
    new = dict(ctx)
    for k in dels:
        new.pop(k, None)
    if sets:
        new.update(sets)
    return new


def compiled_graph(graph: Any, order: list[str], creator: str) -> CompiledGraph:
    """The compiled graph of a session, shared by every session with the same graph, participants
    and creator (a `CompiledGraph` never changes once built): thousands of sessions of one flow
    validate and compile it once, and hold one copy."""
    try:
        key = json.dumps(graph, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON (a model object, say): compiled on its own
        return CompiledGraph(graph, order, creator)
    return _compiled(key, tuple(order), creator)


@functools.lru_cache(maxsize=256)
def _compiled(key: str, order: tuple[str, ...], creator: str) -> CompiledGraph:
    model = known_graph(key)  # the model the session's spec read, if it did (read once)
    return CompiledGraph(model if model is not None else json.loads(key), list(order), creator)


def _check_packet(metadata: SessionMetadata, d: dict[str, Any]) -> None:
    """A packet's routing and context updates (`validate_send`)."""
    routing = d.get("routing")
    if routing:
        if type(routing) is not dict and not isinstance(routing, dict):
            raise ProtocolError(f"packet routing must be an object, got {routing!r}")
        if routing.get("kind") == "handoff":
            target = routing.get("target")
            if target and (type(target) is not str or target not in metadata.pset):
                raise ProtocolError(
                    f"workflow {metadata.session_id!r}: handoff target {target!r} is not a "
                    f"participant ({', '.join(metadata.participant_ids)})")
    elif routing is not None and not isinstance(routing, dict):
        raise ProtocolError(f"packet routing must be an object, got {routing!r}")
    cu = d.get("context_updates")
    if cu and (type(cu) is not dict or type(cu.get("set", _NODICT)) is not dict or cu.get("delete")):
        _check_updates(cu, "packet context_updates")


def _fold_packet(envelope: Envelope, state: WorkflowState) -> WorkflowState:
    """A packet: its context updates, then its routing (finish, handoff) or the graph's."""
    sender = envelope.sender_id
    ctx = state.context_vars
    graph = state.graph
    data = envelope.event_data
    cu = data.get("context_updates")
    if cu:
        ctx = _apply(ctx, cu)
    routing = data.get("routing")
    tool = None
    if routing:
        kind = routing.get("kind")
        if kind == "finish":
            return _next(graph, None, sender, envelope.envelope_id, state.turn_count + 1,
                         routing.get("reason") or "finished", ctx, _unhide(state.hidden, sender), False)
        if kind == "handoff":
            target = routing.get("target")
            if target:
                return _next(graph, target, sender, envelope.envelope_id, state.turn_count + 1,
                             "", ctx, _unhide(state.hidden, sender), False)
        tool = routing.get("tool")
    return _route(state, envelope, sender, graph.packet_tables.get(sender) or graph.table(sender, True), ctx, tool)


def _route(state: WorkflowState, envelope: Envelope, sender: str, table: tuple[Any, ...], ctx: dict[str, Any],
           tool: Optional[str]) -> WorkflowState:
    """The next state of a turn the graph routes: the first row of the sender's dispatch table that holds."""
    graph = state.graph
    hidden = state.hidden
    if hidden and sender in hidden:
        hidden = hidden - {sender}
    for op, a, b, nxt, reason, rr in table:
        # the row's test, the commonest ops first; `not x == y` rather than `x != y`: the rules say `==`
        if op == ALWAYS:
            pass
        elif op == CTX:
            if not ctx.get(a) == b:
                continue
        elif op == TOOL:
            if not tool == a:
                continue
        elif op == TEST:
            if not a(ctx, envelope):
                continue
        else:  # TOOLS: the graph's bare `tool_called` rules placed here, shared by every speaker
            if tool is None:  # a packet that calls no tool: none of them fires
                continue
            hit = b.get(tool)  # the row's memo: tool -> (next speaker, reason, rr), () for none
            if hit is None:
                hit = graph.tools_hit(a, b, tool, sender)
            if not hit:
                continue
            nxt, reason, rr = hit
        if nxt is PREVIOUS:
            nxt, reason, rr = graph.previous(sender, state.last_speaker_id)
        if rr and hidden:
            nxt = graph.next_visible(sender, hidden)
        # the next state, filled here as `_next` does: every routed turn comes here, and the call
        # (nine arguments) was about a twelfth of an envelope's time (docs/benchmarks.md, issue 36)
        new: WorkflowState = _Folded()
        new.graph = graph
        new.expected_next_speaker = nxt
        new.last_speaker_id = sender
        new.last_envelope_id = envelope.envelope_id
        new.turn_count = state.turn_count + 1
        new.pending_close_reason = reason
        new.context_vars = ctx
        new.hidden = hidden
        new.via_round_robin = rr
        return new
    raise AssertionError("dispatch table without a default row")  # pragma: no cover


class WorkflowAdapter:
    manifest = SessionManifest(
        type="workflow", version=1, min_participants=2, max_participants=None,
        roles=("initiator", "respondent", "participant"),
        knobs_schema={"graph": "TransitionGraph", "context_vars": "object"},
        default_view="named_windowed_summary",
        default_expectations=(Expectation("turn_within", 120.0, "warn"),
                               Expectation("turn_within", 600.0, "auto_close")))
    membership: ClassVar[bool] = False  # the graph fixes the roster: participant.added / .removed are refused

    # -- creation -------------------------------------------------------------------------------
    def validate_create(self, metadata: SessionMetadata) -> None:
        check_participants(metadata, self.manifest)
        if "graph" not in (metadata.knobs if isinstance(metadata.knobs, dict) else {}):
            raise ProtocolError("workflow session: knob `graph` is required")
        check_knobs(metadata, {"graph": _graph_later, "context_vars": _check_context_vars})

    def initial_state(self, metadata: SessionMetadata) -> WorkflowState:
        graph = compiled_graph(metadata.knobs["graph"], metadata.participant_ids, metadata.creator_id)
        ctx = metadata.knobs.get("context_vars") or {}
        _check_context_vars(ctx)
        return WorkflowState(graph, graph.initial_speaker, None, None, 0, "", dict(ctx))

    # -- sends ----------------------------------------------------------------------------------
    def validate_send(self, metadata: SessionMetadata, envelope: Envelope, state: WorkflowState) -> None:
        et = envelope.event_type
        if et == EV_PACKET or et == EV_TEXT:
            exp = state.expected_next_speaker
            if exp and envelope.sender_id != exp:
                raise ProtocolError(f"workflow {metadata.session_id!r} expects {exp!r} to speak, "
                                    f"got {envelope.sender_id!r}")
            if et == EV_PACKET:
                _check_packet(metadata, envelope.event_data)
            return
        if et == EV_CONTEXT_SET:
            if envelope.sender_id not in metadata.pset:
                raise ProtocolError(f"workflow {metadata.session_id!r} only accepts context sets from "
                                    f"participants, got {envelope.sender_id!r}")
            _check_updates(envelope.event_data, "context.set data")

    def fold(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
        et = envelope.event_type
        if et == EV_TEXT:
            sender = envelope.sender_id
            graph = state.graph
            return _route(state, envelope, sender, graph.text_tables.get(sender) or graph.table(sender, False),
                          state.context_vars, None)
        if et == EV_PACKET:
            return _fold_packet(envelope, state)
        if et == EV_CONTEXT_SET:
            return _next(state.graph, state.expected_next_speaker, state.last_speaker_id,
                         state.last_envelope_id, state.turn_count, state.pending_close_reason,
                         _apply(state.context_vars, envelope.event_data), state.hidden, state.via_round_robin)
        return self._fold_other(envelope, state)

    def _fold_other(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
        if envelope.event_type == EV_EXPECTATION_VIOLATED and envelope.event_data.get("action") == "hide":
            who = envelope.event_data.get("agent_id")
            if isinstance(who, str) and who in state.graph.order and who not in state.hidden:
                hidden = state.hidden | {who}
                expected = state.expected_next_speaker
                if expected == who and state.via_round_robin and state.last_speaker_id is not None:
                    expected = state.graph.next_visible(state.last_speaker_id, hidden)  # the turn moves on
                return WorkflowState(state.graph, expected, state.last_speaker_id, state.last_envelope_id,
                                     state.turn_count, state.pending_close_reason, state.context_vars, hidden,
                                     state.via_round_robin)
        return state

    def on_accepted(self, metadata: SessionMetadata, envelope: Envelope, state: WorkflowState) -> AdapterResult:
        et = envelope.event_type
        if et != EV_PACKET and et != EV_TEXT:
            return NO_CHANGE
        if state.expected_next_speaker is None:
            return AdapterResult(next_state="closed", auto_close_reason=state.pending_close_reason or "workflow_terminated")
        mt = state.graph.max_turns
        if mt is not None and state.turn_count >= mt:
            return AdapterResult(next_state="closed", auto_close_reason="max_turns")
        return NO_CHANGE

    # -- reading --------------------------------------------------------------------------------
    def expected_next(self, metadata: SessionMetadata, state: WorkflowState) -> Optional[ExpectedTurn]:
        if state.expected_next_speaker is None:
            return None
        return ExpectedTurn(state.expected_next_speaker, state.last_envelope_id)

    def turn_count(self, state: WorkflowState) -> int:
        return state.turn_count

    def turn_key(self, state: WorkflowState) -> tuple[Optional[str], int]:
        """`(expected_next(...).agent_id or None, turn_count(state))`, cheaply (called on every fold)."""
        return (state.expected_next_speaker, state.turn_count)

    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> WindowedSummary:
        from turnflow.runtime.views import NamedWindowedSummary

        return NamedWindowedSummary(recent_n=max(2 * len(metadata.participants), 4))

    def extract_turn_input(self, envelope: Envelope) -> Optional[str]:
        return render_substantive(envelope) or None

    def build_round_envelope(self, metadata: SessionMetadata, sender_id: str, rnd: dict[str, Any]) -> Optional[Envelope]:
        return round_to_envelope(metadata, sender_id, rnd)

    def render_envelope(self, envelope: Envelope) -> Optional[str]:
        return render_substantive(envelope) if envelope.event_type in (EV_TEXT, EV_PACKET) else text_of(envelope)

