"""Monte-Carlo sessions of a workflow spec with randomised scripted agents (`turnflow simulate`).

Speed: the hub's durable path (SQLite append per envelope, views) is not needed to learn
which speaker comes next, so each simulated session drives the workflow adapter directly
through the same calls `Hub.post` makes to decide — `build_round_envelope` (from a round
collected by a real `SessionTools`), `validate_send`, `fold`, `on_accepted` — on the same
`CompiledGraph`. `tests/test_simulate.py` replays simulated sessions on a real hub and checks
that they end identically. Which rule decided each turn (for "rules never fired") is found by
evaluating the spec's transitions in evaluation order, and checked, turn by turn, against the
adapter's own decision.

A random agent's round, for speaker `s` (one `random.Random` per run, seeded from
`(seed, block, run)`, so a run is reproducible on its own):
- with probability 1/2, one of the routing tools `s` owns (the spec's `tools` with owner
  `s` plus the participant's declared `tools`); when the block declares no tools at all,
  any tool named by a `tool_called` condition;
- with probability 1/3, a context update: a key the graph compares against, set to one of
  the literals it is compared with, the key's initial value, or a value no rule tests;
- a body text that, with probability 1/3, contains one of the `text_contains` strings;
- with probability `finish_p` (default 0.02), a `finish` (close reason `finished`).
A session that has not ended after `cap` turns (only possible without `max_turns`) is cut
off by the simulator with the close reason `<simulation cap>`.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from turnflow.runtime.adapters.workflow import WorkflowAdapter
from turnflow.runtime.agents.contract import SessionTools
from turnflow.runtime.envelope import envelope_id_for
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import SessionMetadata
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.transitions import CompiledGraph, round_inputs
from turnflow.spec import ContextCompare, ContextEquals, TextContains, ToolCalled

SIM_CAP_REASON = "<simulation cap>"
DEFAULT_CAP = 1000
_MISS = "<simulated other value>"
#: the longest string a simulated agent sets to test a `len(context.K) OP N`: a bound beyond it
#: (`len(context.k) >= 100000000000`) is tried with strings of this length, never built to size
LEN_WITNESS_CAP = 4096


@dataclass
class BlockReport:
    name: str
    runs: int
    participants: list[str]
    rule_count: int
    close_reasons: dict[str, int] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)
    fired: list[int] = field(default_factory=list)  # per transition index: how many times it decided
    otherwise_taken: int = 0
    reached: dict[str, int] = field(default_factory=dict)  # participant -> sessions in which it was given the turn
    max_turns: Optional[int] = None

    @property
    def cutoffs(self) -> int:
        return self.close_reasons.get("max_turns", 0)

    def unreached(self) -> list[str]:
        return [p for p in self.participants if not self.reached.get(p)]

    def never_fired(self) -> list[int]:
        return [i for i, n in enumerate(self.fired) if n == 0]

    def turn_stats(self) -> dict[str, Any]:
        if not self.turns:
            return {"min": None, "median": None, "max": None}
        med = statistics.median(self.turns)
        return {"min": min(self.turns), "median": int(med) if med == int(med) else med, "max": max(self.turns)}


class Simulator:
    """Random sessions of one workflow spec (a compiled session spec dict)."""

    def __init__(self, spec: Union[SessionSpec, dict[str, Any]], *, finish_p: float = 0.02,
                 cap: int = DEFAULT_CAP) -> None:
        spec = SessionSpec.parse(spec)
        if spec.kind != "workflow":
            raise ProtocolError(f"only workflow sessions can be simulated, got {spec.kind!r}")
        self.spec = spec
        self.finish_p = finish_p
        self.cap = cap
        self.adapter = WorkflowAdapter()
        parts = spec.participants
        self.md = SessionMetadata(session_id="0" * 32, manifest=self.adapter.manifest,
                                  creator_id=spec.opener or (parts[0].agent_id if parts else ""),
                                  participants=parts, knobs=spec.knobs, created_at=0.0, name=spec.name,
                                  tools=spec.tools)
        self.adapter.validate_create(self.md)
        self.initial = self.adapter.initial_state(self.md)
        self.graph: CompiledGraph = self.initial.graph
        self.ids = tuple(self.md.participant_ids)
        self.transitions = self.graph.model.transitions
        self.evaluation = self.graph.model.evaluation_order()
        self._explore_inputs()

    def _explore_inputs(self) -> None:
        conds = list(self.graph.model.conditions())
        self.context_values = _context_values(conds, self.initial.context_vars)
        self.context_keys = sorted(self.context_values)
        self.texts = sorted({c.args.text for c in conds if isinstance(c, TextContains)})
        declared = [t for t in self.md.tools if isinstance(t, dict) and t.get("name")]
        self.routing_tools = {s: tuple(t for t in declared if t.get("owner") == s) for s in self.ids}
        if declared or any(p.tools for p in self.md.participants):
            self.tool_pool = {p.agent_id: _tool_pool(self.routing_tools[p.agent_id], p.tools)
                              for p in self.md.participants}
            self.any_tool = False
        else:
            named = sorted({c.args.tool_name for c in conds if isinstance(c, ToolCalled)})
            self.tool_pool = {s: tuple(named) for s in self.ids}
            self.any_tool = True

    # -- one random round -----------------------------------------------------------------------
    def random_round(self, rng: random.Random, speaker: str, turn: int) -> dict[str, Any]:
        own = self.routing_tools[speaker]
        pool = self.tool_pool[speaker]
        extra = tuple({"name": n, "description": ""} for n in pool if n not in {t["name"] for t in own})
        tools = SessionTools(speaker, self.ids, own + extra, self.any_tool)
        text = f"turn {turn} by {speaker}"
        if self.texts and rng.random() < 1 / 3:
            text += " " + rng.choice(self.texts)
        tools.send_message(text)
        if pool and rng.random() < 0.5:
            tools.execute_tool_call(rng.choice(pool))
        if self.context_keys and rng.random() < 1 / 3:
            key = rng.choice(self.context_keys)
            tools.set_context(key, rng.choice(self.context_values[key]))
        if rng.random() < self.finish_p:
            tools.finish()
        return tools.round()

    # -- one session ----------------------------------------------------------------------------
    def run_one(self, rng: random.Random, report: Optional[BlockReport] = None,
                rounds: Optional[list[Any]] = None) -> tuple[str, int]:
        """One random session: (close reason, turn count). `rounds` (if given) receives
        `(speaker, round)` for each turn, so the session can be replayed on a hub."""
        adapter, md = self.adapter, self.md
        state = self.initial
        reached: set[str] = {s for s in (state.expected_next_speaker,) if s is not None}
        turn = 0
        reason = SIM_CAP_REASON
        while turn < self.cap:
            speaker = state.expected_next_speaker
            assert speaker is not None  # a session without a next speaker has closed (below)
            turn += 1
            rnd = self.random_round(rng, speaker, turn)
            if rounds is not None:
                rounds.append((speaker, rnd))
            env = adapter.build_round_envelope(md, speaker, rnd)
            assert env is not None  # a scripted round is never empty
            env.envelope_id = envelope_id_for(turn)
            env.seq = turn
            adapter.validate_send(md, env, state)
            new = adapter.fold(env, state)
            if report is not None and rnd["kind"] != "finish" and not rnd.get("target"):
                self._record_rule(report, speaker, new.context_vars, env,
                                  (new.expected_next_speaker, new.pending_close_reason), state.last_speaker_id)
            result = adapter.on_accepted(md, env, new)
            state = new
            if state.expected_next_speaker is not None:
                reached.add(state.expected_next_speaker)
            close = result.close_reason
            if close is not None:
                reason = close
                break
        if report is not None:
            report.close_reasons[reason] = report.close_reasons.get(reason, 0) + 1
            report.turns.append(state.turn_count)
            for p in reached:
                report.reached[p] = report.reached.get(p, 0) + 1
        return reason, state.turn_count

    def _record_rule(self, report: BlockReport, speaker: str, ctx: dict[str, Any], env: Any, decided: tuple[Any, ...],
                     before: Optional[str] = None) -> None:
        """Which rule decided (first match in evaluation order, else the default target),
        checked against the adapter's own decision `decided` = (next speaker, close reason)."""
        tool, text = round_inputs(env)
        for k in self.graph.candidates(speaker, tool):  # the rules that can fire for this speaker and tool, in order
            i = self.evaluation[k]
            tr = self.transitions[i]
            if tr.when.holds(speaker, ctx, tool, text):
                then = tr.then
                report.fired[i] += 1
                break
        else:
            then = self.graph.model.default_target
            report.otherwise_taken += 1
        got = then.resolve(speaker, self.ids, self.md.creator_id, before)[:2]
        if got != decided:
            raise AssertionError(f"simulation bookkeeping ({got}) disagrees with the workflow adapter ({decided})")

    def run(self, runs: int, seed: int, progress: Optional[Callable[[int], None]] = None) -> BlockReport:
        report = BlockReport(self.md.name, runs, list(self.ids), len(self.transitions),
                             fired=[0] * len(self.transitions), max_turns=self.graph.max_turns)
        for i in range(runs):
            self.run_one(run_rng(seed, self.md.name, i), report)
            if progress is not None:
                progress(i + 1)
        return report


def _context_values(conds: list[Any], ctx0: dict[str, Any]) -> dict[str, list[Any]]:
    """Per context key the conditions test, the values a simulated agent may set: each literal
    of a `context_equals`, the witnesses around a `context_compare` literal, the initial value,
    and `_MISS` (the key deleted) — in first-seen order, so a seed replays the same run."""
    values: dict[str, list[Any]] = {}
    for c in conds:
        if isinstance(c, ContextEquals):
            _add_new(values.setdefault(c.args.key, []), [c.args.value])
        elif isinstance(c, ContextCompare):
            _add_new(values.setdefault(c.args.key, []), _compare_witnesses(c.args.value, c.args.len))
    for k, vs in values.items():
        if k in ctx0:
            _add_new(vs, [ctx0[k]])
        vs.append(_MISS)
    return values


def _add_new(seen: list[Any], candidates: list[Any]) -> None:
    for v in candidates:
        if v not in seen:
            seen.append(v)


def _tool_pool(own: tuple[Any, ...], declared: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tools one participant may call: its routing tools, then the others it declares."""
    names = [t["name"] for t in own]
    names += [t for t in declared if t not in names]
    return tuple(names)


def _compare_witnesses(value: Any, length: bool) -> list[Any]:
    """Context values on both sides of a `context_compare` literal (so simulated agents make it
    hold and fail): the value itself, one below and one above (numbers), a smaller and a larger
    string; with `len`, strings of those lengths (at most LEN_WITNESS_CAP characters)."""
    if length:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            n = max(int(value), 0)
            return ["x" * k for k in sorted({min(k, LEN_WITNESS_CAP) for k in (max(n - 1, 0), n, n + 1)})]
        return [""]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [value - 1, value, value + 1]
    if isinstance(value, str):
        return ["", value, value + "~"]
    return [value]


def run_rng(seed: int, block: str, run: int) -> random.Random:
    """The random source of one simulated run (string seeds hash the same in every process)."""
    return random.Random(f"turnflow-simulate:{seed}:{block}:{run}")
