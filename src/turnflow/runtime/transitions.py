"""TransitionGraph knobs (docs/compiler.md) validated and compiled once per session.

`validate_graph(graph_dict, participant_order)` reads the dict the way AG2 1.2.1's
`TransitionGraph.loads` does, with the models of `turnflow.spec` (every problem is a
`ProtocolError` naming its JSON path), and `CompiledGraph(model, participant_order,
creator_id)` builds a per-speaker dispatch table: for each participant `s`, the rules that
can still fire when `s` was the last speaker, in evaluation order (priority ascending, ties
in list order), with conditions partially evaluated for `s` and the envelope type
(`Condition.partial`), cut after the first rule that always fires, ending with the default
target. Every target but `previous_speaker` resolves to a constant for a given last speaker
(`Target.resolve`), so selecting the next speaker is a short walk over precomputed rows (see `Row`);
a `previous_speaker` row holds `PREVIOUS` and the adapter resolves it from the state's last speaker
(the one before the sender of the envelope being folded). A bare `tool_called` rule (a handoff)
can fire for any speaker: such rules are kept once, by tool, and a packet table reaches the ones
placed between two of its rows through one `TOOLS` row (a bisection on the tool's places), so
no table lists every handoff of the graph and building them all is linear in the rules.

`turnflow.spec` (pydantic) loads when the first graph is validated, not when this module is
imported: a run of consulting, conversation or discussion sessions never loads pydantic.
"""

from __future__ import annotations

import bisect

from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from turnflow.runtime.envelope import EV_PACKET, EV_TEXT
from turnflow.runtime.errors import ProtocolError

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.spec import BaseCondition, TransitionGraph

#: the JSON path of the graph in a session's knobs, for error messages
GRAPH_ROOT = "$.knobs.graph"

Test = Callable[[dict[str, Any], Any], bool]  # (context_vars, envelope) -> fires?

# -- a dispatch table row -------------------------------------------------------------------------
# (op, a, b, next_speaker, close_reason, by_round_robin), one table per (last speaker, text|packet),
# so a `tool_called` test never even appears in the table for text envelopes:
ALWAYS = 0  #: the row fires
CTX = 1     #: context[a] == b
TOOL = 2    #: the packet's routing tool == a
TEST = 3    #: a(context, envelope)
#: the first of the graph's bare `tool_called` rules (shared by every speaker) at a place in
#: evaluation order strictly between a[0] and a[1] whose tool is the packet's; b is the row's
#: memo of those look-ups (`CompiledGraph.tools_hit`), the row's own target fields are unused
TOOLS = 4
#: `next_speaker` of a row whose target is `previous_speaker`: the only target that is not a
#: constant per last speaker; the adapter resolves it with `CompiledGraph.previous`
PREVIOUS = "\x00previous"


def validate_graph(graph: Any, participants: list[str]) -> TransitionGraph:
    """The graph as a model (AG2 `loads` reading); `agent` targets and the initial speaker
    must be participants (a `from_speaker` naming someone else simply never fires)."""
    from turnflow.spec import SpecError, TransitionGraph

    if not isinstance(graph, (dict, TransitionGraph)):
        raise ProtocolError("invalid workflow graph: knob `graph` must be an object (TransitionGraph.to_dict()), "
                            f"got {type(graph).__name__}")
    try:
        model = graph if isinstance(graph, TransitionGraph) else TransitionGraph.loads(graph, GRAPH_ROOT)
        model.check_agents(participants, GRAPH_ROOT, speakers=False)
    except SpecError as exc:
        raise ProtocolError(f"invalid workflow graph: {exc}") from None
    return model


def round_inputs(env: Any) -> tuple[Optional[str], Optional[str]]:
    """(routing tool, body text) of an accepted envelope, as `Condition.holds` reads them."""
    et, data = env.event_type, env.event_data
    if et == EV_TEXT:
        return None, data.get("text")
    if et == EV_PACKET:
        return (data.get("routing") or {}).get("tool"), data.get("body")
    return None, None


def _test(cond: BaseCondition, speaker: str) -> Test:
    def test(ctx: dict[str, Any], env: Any) -> bool:
        tool, text = round_inputs(env)
        return cond.holds(speaker, ctx, tool, text)
    return test


def _row_test(cond: BaseCondition, speaker: str) -> tuple[Any, ...]:
    """A residual condition → (op, a, b); context and tool comparisons are inlined."""
    from turnflow.spec import ContextEquals, ToolCalled

    if isinstance(cond, ContextEquals):
        return CTX, cond.args.key, cond.args.value
    if isinstance(cond, ToolCalled):
        return TOOL, cond.args.tool_name, None
    return TEST, _test(cond, speaker), None


def speakers_of(cond: Any) -> Optional[frozenset[str]]:
    """The last speakers for which `cond` can hold, when a `from_speaker` decides it: `from_speaker`
    its agent, `all_of` the intersection of its bound parts, `any_of` the union when every part is
    bound; None (any speaker) otherwise. For a speaker outside the set, `cond.partial` is False."""
    from turnflow.spec import AllOf, AnyOf, FromSpeaker

    if isinstance(cond, FromSpeaker):
        return frozenset((cond.args.agent_id,))
    if isinstance(cond, AllOf):
        bound = [b for b in (speakers_of(c) for c in cond.args.conditions) if b is not None]
        return frozenset.intersection(*bound) if bound else None
    if isinstance(cond, AnyOf):
        parts = [speakers_of(c) for c in cond.args.conditions]
        if not parts or any(b is None for b in parts):
            return None
        return frozenset().union(*parts)  # type: ignore[arg-type]
    return None


class CompiledGraph:
    """A validated TransitionGraph with one dispatch table per (last speaker, envelope type)."""

    __slots__ = ("model", "initial_speaker", "max_turns", "order", "creator", "_rules", "text_tables",
                 "packet_tables", "_previous", "evaluation", "_bound", "_unbound", "_tool_at", "_tools",
                 "_tool_targets")

    def __init__(self, graph: Union[dict[str, Any], TransitionGraph], order: list[str], creator: str) -> None:
        from turnflow.spec import PreviousSpeaker

        self.model = validate_graph(graph, order)
        self._previous = PreviousSpeaker.resolve_previous
        self.initial_speaker: str = self.model.initial_speaker
        self.max_turns: Optional[int] = self.model.max_turns
        self.order = tuple(order)
        self.creator = creator
        trs = self.model.transitions
        self.evaluation = self.model.evaluation_order()  # transition indices, in evaluation order
        self._rules = [(trs[i].when, trs[i].then) for i in self.evaluation]
        # which rules can fire for which last speaker: a rule whose condition requires `from_speaker`
        # is listed under those speakers only, so building every table is linear in the rules
        # (not participants × rules); a bare `tool_called` rule (a handoff) fires for any speaker:
        # those are kept once, by tool, and every packet table reaches them through TOOLS rows
        from turnflow.spec import ToolCalled

        self._bound: dict[str, list[int]] = {}
        self._unbound: list[int] = []  # places of the other rules bound to no speaker
        self._tool_at: list[int] = []  # places of the bare `tool_called` rules
        self._tools: dict[str, list[int]] = {}  # tool name → places of its bare `tool_called` rules
        self._tool_targets: dict[tuple[int, str], tuple[Any, ...]] = {}  # (place, speaker) → resolved target
        for k, (when, _then) in enumerate(self._rules):
            speakers = speakers_of(when)
            if type(when) is ToolCalled:
                self._tool_at.append(k)
                self._tools.setdefault(when.args.tool_name, []).append(k)
            elif speakers is None:
                self._unbound.append(k)
            else:
                for sp in speakers:
                    self._bound.setdefault(sp, []).append(k)
        self.text_tables: dict[str, tuple[Any, ...]] = {}
        self.packet_tables: dict[str, tuple[Any, ...]] = {}
        for s in self.order:
            self.text_tables[s] = self._table(s, False)
            self.packet_tables[s] = self._table(s, True)

    def candidates(self, speaker: str, tool: Optional[str] = None) -> list[int]:
        """The places (in evaluation order, ascending) of the rules that can fire when `speaker`
        spoke last with routing tool `tool`: those bound to `speaker` by `from_speaker`, those
        bound to no speaker, and the bare `tool_called` rules of `tool`."""
        import heapq

        parts = [p for p in (self._bound.get(speaker), self._unbound, self._tools.get(tool) if tool else None) if p]
        return list(heapq.merge(*parts)) if len(parts) > 1 else list(parts[0]) if parts else []

    def tool_rule(self, between: tuple[int, int], tool: Optional[str], speaker: str) -> Optional[tuple[Any, ...]]:
        """A TOOLS row's look-up: (next speaker, close reason, by round robin) of the first bare
        `tool_called` rule of `tool` placed strictly between `between`, or None."""
        places = self._tools.get(tool) if tool is not None else None
        if not places:
            return None
        i = bisect.bisect_right(places, between[0])
        if i == len(places) or places[i] >= between[1]:
            return None
        k = places[i]
        found = self._tool_targets.get((k, speaker))
        if found is None:
            found = self._tool_targets[k, speaker] = self._resolve(self._rules[k][1], speaker)
        return found

    def tools_hit(self, between: tuple[int, int], seen: dict[Any, tuple[Any, ...]], tool: Any,
                  speaker: str) -> tuple[Any, ...]:
        """`tool_rule` for a TOOLS row, `()` when no rule fires, remembered in the row's `seen`
        for the graph's own tools (so a row holds at most one entry per tool the graph names):
        the next packet calling that tool finds its target with one dict look-up."""
        hit = self.tool_rule(between, tool, speaker) or ()
        if tool in self._tools:
            seen[tool] = hit
        return hit

    def _table(self, speaker: str, packet: bool) -> tuple[Any, ...]:
        import heapq

        rows: list[tuple[Any, ...]] = []
        tool_at = self._tool_at if packet else []  # a text envelope calls no tool

        def tools_between(lo: int, hi: int) -> None:
            i = bisect.bisect_right(tool_at, lo)
            if i < len(tool_at) and tool_at[i] < hi:
                rows.append((TOOLS, (lo, hi), {}, None, "", False))

        last = -1
        for k in heapq.merge(self._bound.get(speaker) or (), self._unbound):
            when, then = self._rules[k]
            t = when.partial(speaker, packet)
            if t is False:
                continue
            tools_between(last, k)
            last = k
            nxt, reason, rr = self._resolve(then, speaker)
            if t is True:
                rows.append((ALWAYS, None, None, nxt, reason, rr))
                return tuple(rows)
            rows.append((*_row_test(t, speaker), nxt, reason, rr))
        tools_between(last, len(self._rules))
        nxt, reason, rr = self._resolve(self.model.default_target, speaker)
        rows.append((ALWAYS, None, None, nxt, reason, rr))
        return tuple(rows)

    def _resolve(self, then: Any, speaker: str) -> tuple[Any, ...]:
        if then.uses_previous:
            return PREVIOUS, "", False
        resolved: tuple[Any, ...] = then.resolve(speaker, self.order, self.creator)
        return resolved

    def previous(self, speaker: str, before: Optional[str]) -> tuple[Optional[str], str, bool]:
        """A `previous_speaker` target after `speaker` spoke; `before` spoke the turn before
        (None on the first turn: round robin)."""
        return self._previous(speaker, self.order, before)

    def table(self, speaker: str, packet: bool) -> tuple[Any, ...]:
        """The dispatch table (built on first use for a speaker that is not a participant)."""
        tables = self.packet_tables if packet else self.text_tables
        t = tables.get(speaker)
        if t is None:
            t = tables[speaker] = self._table(speaker, packet)
        return t

    def next_visible(self, speaker: str, hidden: frozenset[str]) -> Optional[str]:
        order = self.order
        start = order.index(speaker) + 1 if speaker in order else 0
        for k in range(len(order)):
            cand = order[(start + k) % len(order)]
            if cand not in hidden:
                return cand
        return order[start % len(order)]  # everyone hidden: plain round robin
