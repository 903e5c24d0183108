"""An exhaustive exploration of a workflow's runs, through the runtime's own reading of the compiled
flow (no `turnflow.compiler`): the oracle of tests/test_dead_rules.py and tests/test_graph_exhaustive.py.

`Simulator` (turnflow.runtime.simulate) gives the spec models' `holds` / `resolve`, the evaluation
order, each participant's tool pool; the exploration tries EVERY choice an agent has on a turn —
no tool or each tool it may call, a body text containing any set of the conditions' strings, and a
value for every context key the conditions read, from a generous set of values around every
literal the flow names — and every run, state by state ((speaker, who spoke before), breadth-first,
cut at `max_turns`). The first rule that holds decides a turn; a block that marks no `initiator` may
be opened by any participant, so the target `initiator` may name any of them.
"""

from __future__ import annotations

import itertools
import math
from collections import deque

from turnflow.runtime.simulate import Simulator

#: the session closes (a move to no speaker)
END = "<END>"


def _leaves(cond, out):
    name = cond.name
    if name in ("all_of", "any_of"):
        for c in cond.args.conditions:
            _leaves(c, out)
    elif name == "not":
        _leaves(cond.args.condition, out)
    else:
        out.append(cond)


def _values(literals):
    """Values around every literal: the literals, numbers just below / above / between them,
    strings around them, strings and arrays of many lengths, null and the booleans."""
    nums = sorted({float(v) for v in literals if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(v)} | {-1.0, 0.0, 1.0})
    out = [None, True, False, [], {}]
    for v in nums:
        out += [v, v - 1, v + 1, v - 0.125, v + 0.125]
    for a, b in zip(nums, nums[1:]):
        out.append((a + b) / 2)
    strs = {"", "x", "y"} | {v for v in literals if isinstance(v, str)}
    for v in sorted(strs):
        out += [v, v + "\x00", v + "~", v[:-1], v + "a", "\x00" + v]
    for n in range(0, 7):
        out += ["x" * n, "\x00" * n, "~" * n, [0] * n, {str(i): i for i in range(n)}]
        for v in sorted(strs):
            out += [(v + "\x00" * n)[:n], (v + "~" * n)[:n]]
    return out


def _distinct(values, conds, key):
    """The values with distinct outcomes on `conds` (two values every condition reads alike
    are interchangeable: keeping one is still exhaustive)."""
    seen, out = set(), []
    for v in values:
        outcome = tuple(c.holds("", {key: v}, None, None) for c in conds)
        if outcome not in seen:
            seen.add(outcome)
            out.append(v)
    return out


class Exploration:
    def __init__(self, spec):
        self.sim = sim = Simulator(spec)
        leaves = []
        for tr in sim.transitions:
            _leaves(tr.when, leaves)
        by_key = {}
        for c in leaves:
            if c.name in ("context_equals", "context_compare"):
                by_key.setdefault(c.args.key, []).append(c)
        self.contexts = [dict(zip(by_key, combo)) for combo in itertools.product(
            *[_distinct(_values([c.args.value for c in cs]), cs, k) for k, cs in by_key.items()])]
        texts = sorted({c.args.text for c in leaves if c.name == "text_contains"})
        self.texts = ["\x01".join(sub) for n in range(len(texts) + 1) for sub in itertools.combinations(texts, n)]
        self.fires = {s: self._fires(s) for s in sim.ids}
        # who opened the session: the `initiator`; a flow that marks none may be opened by anyone
        marked = [p.agent_id for p in sim.md.participants if p.role == "initiator"]
        self.creators = marked or list(sim.ids)
        self.states = self._runs(sim.graph.max_turns)
        self.speaks = {s for s, _ in self.states}

    def _fires(self, s):
        """(transition indexes that decide some turn of `s`, whether the default target can)."""
        sim = self.sim
        fired, default = set(), False
        trs = [(i, sim.transitions[i].when) for i in sim.evaluation]
        for tool, text, ctx in self.inputs(s):
            for i, when in trs:
                if when.holds(s, ctx, tool, text):
                    fired.add(i)
                    break
            else:
                default = True
        return fired, default

    def inputs(self, s):
        """Every (tool, text, context) a turn of `s` can have, up to interchangeable values."""
        return itertools.product((None, *self.sim.tool_pool[s]), self.texts, self.contexts)

    def holds_on_some_turn(self, s, i):
        """Does transition `i`'s condition hold on some turn of `s` (earlier rules aside)?"""
        when = self.sim.transitions[i].when
        return any(when.holds(s, ctx, tool, text) for tool, text, ctx in self.inputs(s))

    def moves(self, state):
        """The states one turn after `state` (speaker, who spoke before), END for a turn that
        ends the session: every target the fired rules (or the default) resolve to, for every
        creator."""
        sim = self.sim
        s, before = state
        fired, default = self.fires[s]
        targets = [sim.transitions[i].then for i in fired] + ([sim.graph.model.default_target] if default else [])
        out = set()
        for t, creator in itertools.product(targets, self.creators):
            nxt = t.resolve(s, sim.ids, creator, before)[0]
            out.add(END if nxt is None else (nxt, s))
        return out

    def _runs(self, cap=None):
        """State -> the first turn a run is in it, breadth-first from (start, nobody), cut at `cap`."""
        start = (self.sim.graph.initial_speaker, None)
        first = {start: 1}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            if cap is not None and first[state] >= cap:
                continue
            for nxt in self.moves(state):
                if nxt is not END and nxt not in first:
                    first[nxt] = first[state] + 1
                    queue.append(nxt)
        return first

    def ends_after(self, state):
        """Can the turn of `state` (speaker, who spoke before) end the session?"""
        return END in self.moves(state)

    def uncapped_states(self):
        """The states (speaker, who spoke before) of some run when `max_turns` is ignored."""
        return set(self._runs(None))

    def uncapped_speakers(self):
        """Who gets the turn on some run when `max_turns` is ignored."""
        return {s for s, _ in self._runs(None)}

    def layers(self, upto):
        """layers[t - 1]: the states a run can be in on turn t, for t = 1 .. upto (no cap)."""
        out = [{(self.sim.graph.initial_speaker, None)}]
        while len(out) < upto:
            out.append({n for state in out[-1] for n in self.moves(state) if n is not END})
        return out

    def longest_run(self, cap):
        """(does some run take more than `cap` turns, the most turns a run that ends takes within them)."""
        layers = self.layers(cap + 1)
        ending = [t for t, layer in enumerate(layers[:cap], start=1)
                  if any(END in self.moves(state) for state in layer)]
        return bool(layers[cap]), max(ending, default=None)

    def is_run(self, speakers):
        """Is `speakers` (then END) the sequence of speakers of some run?"""
        state = (speakers[0], None)
        if state[0] != self.sim.graph.initial_speaker:
            return False
        for nxt in speakers[1:]:
            if (nxt, state[0]) not in self.moves(state):
                return False
            state = (nxt, state[0])
        return END in self.moves(state)

    def fired_on_some_run(self, i):
        return any(i in self.fires[s][0] for s in self.speaks)




class MayHoldRuns:
    """The runs of the speaker graph's reading (docs/analysis.md), through the runtime's spec: every
    guard may hold or not, each on its own, except that a rule without a condition always holds and
    a `tool t` term of the rule's conjunction never holds for a speaker that cannot call `t` (the
    block declares tools and `t` is not in its pool). Per speaker, every combination of guard
    outcomes is tried in the runtime's evaluation order (the first rule that holds decides, else the
    default target). Not for flows with a `previous` target (`uses_previous`): the graph reads it
    from the graph, not from the run."""

    def __init__(self, spec):
        self.sim = sim = Simulator(spec)
        marked = [p.agent_id for p in sim.md.participants if p.role == "initiator"]
        self.creators = marked or list(sim.ids)
        self.uses_previous = any(tr.then.uses_previous for tr in sim.transitions) or \
            sim.graph.model.default_target.uses_previous
        self.default_taken = set()  # speakers for which the default target decides some turn
        self.succ = {s: self._moves(s) for s in sim.ids}
        self.start = sim.graph.initial_speaker

    def _decide(self, c, s):
        """True: holds on every turn of `s`; False: on none; None: may hold or not."""
        sim = self.sim
        verdict = True
        for x in (c.args.conditions if c.name == "all_of" else [c]):
            if x.name == "from_speaker":
                if x.args.agent_id != s:
                    return False
            elif x.name == "tool_called" and not sim.any_tool and x.args.tool_name not in sim.tool_pool[s]:
                return False
            elif x.name != "always":
                verdict = None
        return verdict

    def _moves(self, s):
        sim = self.sim
        rules = [(i, self._decide(sim.transitions[i].when, s)) for i in sim.evaluation]
        rules = [(i, v) for i, v in rules if v is not False]
        free = [k for k, (_, v) in enumerate(rules) if v is None]
        out = set()
        for combo in itertools.product([False, True], repeat=len(free)):
            holds = dict(zip(free, combo))
            decided = next((i for k, (i, v) in enumerate(rules) if holds.get(k, v)), None)
            if decided is None:
                self.default_taken.add(s)
                target = sim.graph.model.default_target
            else:
                target = sim.transitions[decided].then
            for creator in self.creators:
                nxt = target.resolve(s, sim.ids, creator, None)[0]
                out.add(END if nxt is None else nxt)
        return out

    def restricted(self, among):
        """These runs through the participants of `among` only (the start among them)."""
        copy = object.__new__(MayHoldRuns)
        copy.__dict__.update(self.__dict__)
        copy.succ = {s: {v for v in vs if v is END or v in among} for s, vs in self.succ.items() if s in among}
        return copy

    def reachable(self):
        seen, todo = {self.start}, [self.start]
        while todo:
            for v in self.succ[todo.pop()]:
                if v is not END and v not in seen:
                    seen.add(v)
                    todo.append(v)
        return seen

    def can_end(self):
        ok = set()
        changed = True
        while changed:
            changed = False
            for s in self.succ:
                if s not in ok and any(v is END or v in ok for v in self.succ[s]):
                    ok.add(s)
                    changed = True
        return ok

    def layers(self, upto):
        """layers[t - 1]: the speakers that can hold turn t (no cap)."""
        out = [{self.start}]
        while len(out) < upto:
            out.append({v for s in out[-1] for v in self.succ[s] if v is not END})
        return out

    def fewest(self):
        """The fewest turns of a run that ends by a terminate (no cap), or None."""
        for t, layer in enumerate(self.layers(len(self.sim.ids) + 1), start=1):
            if any(END in self.succ[s] for s in layer):
                return t
        return None

    def unbounded(self):
        """Can a run go on forever (a run of n + 1 turns repeats a speaker)?"""
        return bool(self.layers(len(self.sim.ids) + 1)[-1])
