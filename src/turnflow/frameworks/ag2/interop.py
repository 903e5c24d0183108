"""Run turnflow's compiled knobs on AG2's own hub (the `ag2` extra: `turnflow.extras.pip_install`).

    from turnflow.interop.ag2 import register_extensions
    register_extensions()          # once per process, before any graph is loaded
    TransitionGraph.loads(spec["knobs"]["graph"])   # now understands turnflow's extensions

The extensions: the conditions `all_of`, `any_of`, `not`, `text_contains`,
`context_compare`, and the target `previous_speaker`.

AG2 1.2.1's `WorkflowAdapter` always loads graphs with the process-wide default
`TransitionRegistry`, and `Hub.open` re-loads every stored channel, so call
this before `create_channel`, `fold` and `Hub.open`. Calling it again is a
no-op. Importing `turnflow` never imports AG2; this module imports it only
when `register_extensions()` runs.

`previous_speaker` needs one thing AG2's extension interface does not give a
target: AG2 resolves targets against the state *after* the fold's bookkeeping,
whose `last_speaker_id` is already the sender, so who spoke before is gone.
The speaker before is the `last_speaker_id` of the state `fold` receives, so
`register_extensions()` wraps `ag2.network.adapters.workflow.WorkflowAdapter.fold`
(once, for every instance) to make that value visible to the target while the
fold runs (a `contextvars.ContextVar`, reset when the fold returns). The fold
stays a pure function of (envelope, state): `Hub.open`, which folds the log
again, rebuilds the same decisions. Nothing else about the adapter changes.

What each extension means is not written here: `evaluate` / `resolve` read AG2's
state and envelope into the turn `turnflow.spec.meaning` reads and call the kind's
`holds` / `resolve` (nested conditions of `all_of`, `any_of` and `not` stay AG2's,
resolved through its registry, so a nested builtin keeps AG2's own meaning).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, ClassVar

from turnflow.spec import EXTENSION_CONDITIONS, EXTENSION_TARGETS
from turnflow.spec.meaning import plain, resolve_previous

#: the extension conditions and targets this module registers
EXTENSIONS = EXTENSION_CONDITIONS + EXTENSION_TARGETS

_UNSET = object()
#: the last speaker before the envelope the (wrapped) `WorkflowAdapter.fold` is folding
_BEFORE: contextvars.ContextVar = contextvars.ContextVar("turnflow_previous_speaker", default=_UNSET)


class _Nested:
    """A nested condition as AG2's registry reads it, for a junction's meaning to test
    (`holds`, on the turn it was made for)."""

    __slots__ = ("data", "state", "envelope")

    def __init__(self, data: dict[str, Any], state: Any, envelope: Any) -> None:
        self.data, self.state, self.envelope = data, state, envelope

    def holds(self, speaker: Any, context: Any, tool: Any, text: Any) -> bool:
        from ag2.network import TransitionRegistry

        return bool(TransitionRegistry.default().condition_from_dict(self.data).evaluate(self.state, self.envelope))


def _nested(conditions: list[dict[str, Any]], state: Any, envelope: Any) -> list[_Nested]:
    return [_Nested(c, state, envelope) for c in conditions]


def _body(envelope: Any) -> Any:
    """The round's body `text_contains` reads: `event_data["text"]` of an `ag2.msg.text`,
    `event_data["body"]` of an `ag2.packet`, None for other events."""
    from ag2.network import EV_PACKET, EV_TEXT

    data = envelope.event_data or {}
    if envelope.event_type == EV_TEXT:
        return data.get("text")
    if envelope.event_type == EV_PACKET:
        return data.get("body")
    return None


@dataclass(slots=True)
class AllOf:
    """`all_of {conditions: [...]}`: every nested condition holds (each is a
    `{"name", "args"}` dict, resolved through the default registry, so any
    registered condition may be nested). An empty list holds."""

    conditions: list[dict[str, Any]] = field(default_factory=list)
    name: ClassVar[str] = "all_of"

    def evaluate(self, state, envelope) -> bool:
        return plain("all_of", conditions=_nested(self.conditions, state, envelope)).holds(None, {}, None, None)


@dataclass(slots=True)
class AnyOf:
    """`any_of {conditions: [...]}`: some nested condition holds (resolved like
    `all_of`'s). An empty list never holds."""

    conditions: list[dict[str, Any]] = field(default_factory=list)
    name: ClassVar[str] = "any_of"

    def evaluate(self, state, envelope) -> bool:
        return plain("any_of", conditions=_nested(self.conditions, state, envelope)).holds(None, {}, None, None)


@dataclass(slots=True)
class Not:
    """`not {condition: {...}}`: the nested condition does not hold."""

    condition: dict[str, Any] = field(default_factory=dict)
    name: ClassVar[str] = "not"

    def evaluate(self, state, envelope) -> bool:
        return plain("not", condition=_Nested(self.condition, state, envelope)).holds(None, {}, None, None)


@dataclass(slots=True)
class ContextCompare:
    """`context_compare {key, op, value, len}`: `state.context_vars[key] op value`
    (a missing key reads as null), or with `len` the length of the value
    (strings, arrays, objects; anything else has none: false). `<` `<=` `>` `>=`
    hold between two numbers (booleans are not numbers) or two strings; any
    other pair is false. `==` / `!=` are `context_equals`' equality and its negation."""

    key: str
    op: str
    value: Any = None
    len: bool = False
    name: ClassVar[str] = "context_compare"

    def __post_init__(self) -> None:
        if self.op not in ("==", "!=", "<", "<=", ">", ">="):
            raise ValueError(f"context_compare: unknown op {self.op!r} (one of == != < <= > >=)")

    def evaluate(self, state, envelope) -> bool:
        kind = plain("context_compare", key=self.key, op=self.op, value=self.value, len=self.len)
        return kind.holds(None, state.context_vars, None, None)


@dataclass(slots=True)
class TextContains:
    """`text_contains {text}`: the body of the round just accepted contains
    `text` (case-sensitive): `event_data["text"]` of an `ag2.msg.text`
    envelope, `event_data["body"]` of an `ag2.packet`; never for other events."""

    text: str
    name: ClassVar[str] = "text_contains"

    def evaluate(self, state, envelope) -> bool:
        return plain("text_contains", text=self.text).holds(None, {}, None, _body(envelope))


@dataclass(slots=True)
class PreviousSpeaker:
    """`previous_speaker {}`: the participant who spoke before the last speaker.
    On the first turn nobody did: then the participant after the last speaker in
    participant order (AG2's `round_robin`)."""

    name: ClassVar[str] = "previous_speaker"

    def resolve(self, state, envelope):
        from ag2.network import TransitionDecision

        before = _BEFORE.get()
        if before is _UNSET:
            raise RuntimeError("previous_speaker resolved outside WorkflowAdapter.fold: call "
                               "turnflow.interop.ag2.register_extensions() before creating or opening the hub")
        anchor = state.last_speaker_id or envelope.sender_id
        nxt, reason, _ = resolve_previous(anchor, tuple(state.participant_order), before)
        if nxt is None:
            return TransitionDecision(next_speaker=None, close_reason=reason)
        return TransitionDecision(next_speaker=nxt)


def _wrap_fold() -> None:
    """Let `previous_speaker` see the state's last speaker before the fold (see the module doc)."""
    from ag2.network.adapters.workflow import WorkflowAdapter

    if getattr(WorkflowAdapter.fold, "_turnflow_previous", False):
        return
    original = WorkflowAdapter.fold

    def fold(self, envelope, state):
        token = _BEFORE.set(state.last_speaker_id)
        try:
            return original(self, envelope, state)
        finally:
            _BEFORE.reset(token)

    fold._turnflow_previous = True  # type: ignore[attr-defined]
    fold.__doc__ = original.__doc__
    WorkflowAdapter.fold = fold  # type: ignore[method-assign]


def register_extensions() -> tuple[str, ...]:
    """Register turnflow's extension conditions (`all_of`, `any_of`, `not`,
    `text_contains`, `context_compare`) and target (`previous_speaker`) with
    AG2's default transition registry (`ag2.network.register_condition` /
    `register_target`), and wrap `WorkflowAdapter.fold` so `previous_speaker`
    can see who spoke before (module doc); idempotent. Returns the registered
    names. Raises ImportError with an install hint without AG2."""
    try:
        from ag2.network import TransitionRegistry, register_condition, register_target
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        # (worded as turnflow.extras.pip_install words it: this module imports only turnflow.spec)
        raise ImportError("turnflow.interop.ag2 needs AG2 1.2.1: "
                          "pip install 'turnflow[ag2] @ git+https://github.com/turnflow/turnflow' "
                          "(in a checkout: pip install -e '.[ag2]')") from exc
    registry = TransitionRegistry.default()
    for cls in (AllOf, AnyOf, Not, TextContains, ContextCompare):
        if getattr(registry, "_conditions", {}).get(cls.name) is not cls:  # no public lookup in 1.2.1
            register_condition(cls)
    if getattr(registry, "_targets", {}).get(PreviousSpeaker.name) is not PreviousSpeaker:
        register_target(PreviousSpeaker)
    _wrap_fold()
    return EXTENSIONS


def extensions_needed(knobs: dict[str, Any]) -> list[str]:
    """The conditions and targets of a workflow's knobs (or bare graph) that AG2 1.2.1 does not
    ship, in the order first used: an AG2 process loads such a graph (its participants' own
    adapters do, to answer their turns) only after `register_extensions()`. Empty when AG2's
    unchanged client can take part."""
    graph = knobs.get("graph", knobs) if isinstance(knobs, dict) else None
    extension = set(EXTENSION_CONDITIONS) | set(EXTENSION_TARGETS)
    found: list[str] = []
    stack: list[Any] = [graph]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            name = item.get("name")
            if isinstance(name, str) and name in extension and name not in found:
                found.append(name)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def bind_agents(knobs: dict[str, Any], agent_ids: dict[str, str]) -> dict[str, Any]:
    """Compiled workflow knobs with participant names replaced by AG2 agent ids.

    AG2's hub mints an `agent_id` per registered identity and its graphs name
    speakers by id, so `spec["knobs"]` must be bound before `create_channel`:

        ids = {name: (await hub.register_identity(Passport(name=name), Resume())).agent_id
               for name in ...}
        await hub.create_channel(..., knobs=bind_agents(spec["knobs"], ids))

    Rewrites `initial_speaker`, every `from_speaker` (also inside `all_of`) and
    every `agent` target; a name missing from `agent_ids` raises KeyError.
    Returns a new dict; `knobs` is not changed.
    """
    from turnflow.spec import TransitionGraph

    def ident(name: str) -> str:
        if name not in agent_ids:
            raise KeyError(f"no agent id for participant {name!r}")
        return agent_ids[name]

    graph = TransitionGraph.model_validate(knobs["graph"]).with_agents(ident)
    return {**{k: v for k, v in knobs.items() if k != "graph"}, "graph": graph.to_dict()}
