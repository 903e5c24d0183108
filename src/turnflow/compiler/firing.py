"""Which rules can fire and which speakers get the turn, decided per input (docs/analysis.md,
"Dead rules").

The speaker graph (`graph.py`) reads a guard as "may hold or not". This module decides more:
for a last speaker `s` and a rule `r` of `s`, whether some turn of `s` fires `r`, i.e. whether
some input of that turn makes `r`'s condition hold while no rule before `r` (in `s`'s
evaluation order) holds. The inputs of a turn are what the speaking agent chooses:

- the routing tool: none, or one it owns (any tool named by a condition when the block
  declares no tools);
- the body text: any string (a `text contains X` term is one boolean per X, constrained only
  by substrings: a text that contains `"DONE"` contains `"DON"`);
- the context: any JSON value per key (an agent may set or delete every key in its round,
  before the round is routed), so a guard is read over every value, never over the initial
  ones.

A key's values are finitely many witnesses (null, the booleans, the numbers and strings the
conditions name and those just around and between them, strings and arrays of the lengths
`len(...)` names), one per distinct outcome of the conditions on that key; a search over
tool, text and key witnesses (three-valued evaluation, pruning as soon as a condition is
decided) finds an input or proves there is none.

Who gets the turn is then exact too: states (speaker, who spoke before) explored from
(`start`, nobody) over the targets of the rules that fire, each resolved as the runtime
resolves it (`previous`: who spoke before; `initiator`: the participant marked so),
and cut at `max_turns` (turn `t` happens only when `t <= max_turns`). A rule fires on some run
iff one of its speakers gets the turn and some turn of it fires the rule. A block that marks no
`initiator` may be opened by any participant (TF110), so `initiator` may then name any of them. Handoffs made by
naming a participant (`handoff(to)`, a model's dynamic handoff) bypass the rules and are not
agent choices here, as in `turnflow simulate`.

Per speaker, its rules split into groups that share no variable (`_group_ids`); whether rule `i`
fires is searched over its own group only (the earlier rules of the other groups need only be
false together, which is kept per group as `i` grows), so a speaker with `k` rules costs about
`k` small searches, not `k` searches over up to `k` goals each.

Bounded: a speaker with more than `MAX_RULES` rules it can take or a rule reading a context key
that more than `MAX_KEY_CONDITIONS` distinct conditions compare, or a search past `BUDGET`
steps or `WORK` variables read (per group), is read as the speaker graph reads it (every rule it can take may fire), so
the analysis never reports a rule it has not proved dead.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional

from turnflow.compiler import digraph as dg
from turnflow.compiler.lower import RuleInfo
from turnflow.compiler.speaker_graph import END
from turnflow.spec.meaning import compare

if TYPE_CHECKING:
    from turnflow.compiler.speaker_graph import SpeakerGraph

#: per speaker, the rules beyond which the exact analysis gives up (the graph's reading stands)
MAX_RULES = 64
#: "who spoke before" for a speaker whose moves do not depend on it
ANY = "\x00any"
#: distinct conditions on one context key beyond which its values are not enumerated (`Firing.wide`)
MAX_KEY_CONDITIONS = 256
#: search steps per question before it gives up (the answer is then "can fire")
BUDGET = 20000
#: and the work per question: each step evaluates the goals still open, so a step costs about the
#: variables they read (a rule reading thousands of keys costs that many per step, and as many
#: steps: without this bound, 4,000 keys read by one `and` took minutes)
WORK = 250_000

Var = tuple[str, str]  # ("tool", "") | ("text", X) | ("ctx", KEY)
TOOL: Var = ("tool", "")


def atoms(c: Any, out: dict[Var, list[Any]]) -> None:
    """The variables `c` reads, each with the leaf conditions that read it."""
    name = c.name
    if name in ("all_of", "any_of"):
        for x in c.args.conditions:
            atoms(x, out)
    elif name == "not":
        atoms(c.args.condition, out)
    elif name == "tool_called":
        out.setdefault(TOOL, []).append(c)
    elif name == "text_contains":
        if c.args.text:
            out.setdefault(("text", c.args.text), []).append(c)
    elif name in ("context_equals", "context_compare"):
        out.setdefault(("ctx", c.args.key), []).append(c)


def evaluate(c: Any, s: str, asg: dict[Var, Any]) -> Optional[bool]:
    """`c` for last speaker `s` under a partial input `asg`: True / False, or None when it
    depends on a variable not yet assigned."""
    name = c.name
    if name == "always":
        return True
    if name == "from_speaker":
        return bool(c.args.agent_id == s)
    if name == "all_of":
        return _all(c.args.conditions, s, asg)
    if name == "any_of":
        out: Optional[bool] = False
        for x in c.args.conditions:
            v = evaluate(x, s, asg)
            if v:
                return True
            if v is None:
                out = None
        return out
    if name == "not":
        v = evaluate(c.args.condition, s, asg)
        return None if v is None else not v
    return _leaf(c, asg)


def _all(conds: Iterable[Any], s: str, asg: dict[Var, Any]) -> Optional[bool]:
    out: Optional[bool] = True
    for x in conds:
        v = evaluate(x, s, asg)
        if v is False:
            return False
        if v is None:
            out = None
    return out


def _leaf(c: Any, asg: dict[Var, Any]) -> Optional[bool]:
    name, a = c.name, c.args
    if name == "tool_called":
        return (asg[TOOL] == a.tool_name) if TOOL in asg else None
    if name == "text_contains":
        if not a.text:
            return True  # every body is a string, and every string contains ""
        return asg.get(("text", a.text))
    var = ("ctx", a.key)
    if var not in asg:
        return None
    value = asg[var]
    if name == "context_equals":
        return compare(value, "==", a.value)
    return compare(value, a.op, a.value, a.len)


#: a search goal: a condition, the value wanted, the variables the condition reads (in order)
Goal = tuple[Any, bool, list[Var]]


# ---------------------------------------------------------------------------------------------
#  Witnesses: the values of one context key worth trying
# ---------------------------------------------------------------------------------------------
def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _numbers(literals: list[Any]) -> list[Any]:
    nums = sorted({float(v) for v in literals if _number(v)} | {0.0, 1.0})
    out: list[Any] = [nums[0] - 1, nums[-1] + 1]
    for i, v in enumerate(nums):
        out.append(int(v) if v.is_integer() else v)
        if i + 1 < len(nums):
            out.append((v + nums[i + 1]) / 2)
    return out


def _lengths(conds: list[Any]) -> list[int]:
    out = {0, 1, 2}  # `len(...) != true` holds for a length of 2 (0 == false, 1 == true)
    for c in conds:
        if c.name == "context_compare" and c.args.len and (_number(c.args.value) or isinstance(c.args.value, bool)):
            v = float(c.args.value)
            for n in (math.floor(v) - 1, math.floor(v), math.ceil(v), math.ceil(v) + 1):
                if 0 <= n <= 10_000:
                    out.add(int(n))
    return sorted(out)


def _strings(literals: list[Any], lengths: list[int]) -> list[str]:
    base = {""} | {v for v in literals if isinstance(v, str)}
    grown = set(base)
    for v in base:
        grown.update((v + "\x00", v + "\U0010ffff", v[:-1]))
        if v:
            grown.add(v[:-1] + chr(min(ord(v[-1]) + 1, 0x10FFFF)))
    out = set(grown)
    for v in grown:
        for n in lengths:
            out.update((v[:n], v + "\x00" * (n - len(v)), v + "\U0010ffff" * (n - len(v))))
    return sorted(out)


def witnesses(conds: list[Any]) -> list[Any]:
    """One value per distinct outcome of `conds` (leaf conditions on one context key)."""
    conds = list({id(c): c for c in conds}.values())  # equal leaves are one shared object
    literals = [c.args.value for c in conds]
    lengths = _lengths(conds)
    cands: list[Any] = [None, True, False]
    cands += _numbers(literals)
    cands += _strings(literals, lengths)
    cands += [[0] * n for n in lengths]
    seen: set[tuple[bool, ...]] = set()
    out: list[Any] = []
    for v in cands:
        asg: dict[Var, Any] = {("ctx", conds[0].args.key): v}
        key = tuple(bool(_leaf(c, asg)) for c in conds)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


# ---------------------------------------------------------------------------------------------
#  The search
# ---------------------------------------------------------------------------------------------
class _Search:
    """Is there an input for speaker `s` on which each goal (a condition, its wanted value, the
    variables it reads) has its wanted value?"""

    def __init__(self, s: str, goals: list[Goal], domains: dict[Var, list[Any]]) -> None:
        self.s = s
        self.goals = goals
        self.domains = domains
        self.steps = 0
        self.work = 0  # the variables read by the goals evaluated so far (`WORK`)
        #: after `run` answered True: the (partial) input found, on which every goal is decided
        self.found: dict[Var, Any] = {}

    def run(self) -> Optional[bool]:
        """True: an input exists; False: none does; None: gave up (BUDGET)."""
        try:
            return self._go(self.goals, {})
        except _GiveUp:
            return None

    def _go(self, goals: list[Goal], asg: dict[Var, Any]) -> bool:
        """A depth-first search over the variables the goals read, one level per variable assigned
        (a loop over a stack of levels, not a recursion: a condition reading a thousand context
        keys is a thousand levels deep). At each level, `goals` are those still undecided by the
        levels above: a decided goal stays decided as `asg` grows. `asg` is as it was on return."""
        levels: list[tuple[list[Goal], Var, Iterator[Any]]] = []  # open goals, variable, values left
        while True:
            self.steps += 1
            self.work += sum(len(goal[2]) for goal in goals)
            if self.steps > BUDGET or self.work > WORK:
                for _, var, _ in levels:
                    asg.pop(var, None)
                raise _GiveUp
            open_goals: list[Goal] = []
            failed = False
            for goal in goals:
                v = evaluate(goal[0], self.s, asg)
                if v is None:
                    open_goals.append(goal)
                elif v is not goal[1]:
                    failed = True
                    break
            if not failed:
                if not open_goals:
                    self.found = dict(asg)
                    for _, var, _ in levels:
                        asg.pop(var, None)
                    return True
                for open_var in open_goals[0][2]:  # the first variable it reads that is not assigned yet
                    if open_var not in asg:
                        break
                levels.append((open_goals, open_var, iter(self.domains.get(open_var, _BOOLS))))
            # the next value of the deepest level that has one left
            while levels:
                goals, var, values = levels[-1]
                asg.pop(var, None)
                for value in values:
                    if var[0] == "text" and not _consistent(asg, var[1], value):
                        continue
                    asg[var] = value
                    break
                else:
                    levels.pop()
                    continue
                break
            else:
                return False


_BOOLS = (True, False)  # a `text contains X` variable


class _GiveUp(Exception):
    pass


def _consistent(asg: dict[Var, Any], text: str, value: bool) -> bool:
    """A body contains `text` (value True) or not, given the other `text contains` choices:
    containing X means containing every substring of X."""
    for (kind, other), v in asg.items():
        if kind != "text":
            continue
        if value and not v and other in text:
            return False
        if not value and v and text in other:
            return False
    return True


def _group_ids(conds: list[Any], reads: Callable[[Any], list[Var]]) -> list[int]:
    """A group number per condition such that conditions of different groups read no common
    variable and no two `text contains` strings one of which contains the other (the only
    constraint between variables, `_consistent`): an input exists for goals on several groups
    iff one exists for each group's goals."""
    if len(conds) < 2:
        return [0] * len(conds)
    parent = list(range(len(conds)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = i = parent[parent[i]]
        return i

    owner: dict[Var, int] = {}
    texts: list[tuple[str, int]] = []
    for i, c in enumerate(conds):
        for v in reads(c):
            first = owner.setdefault(v, i)
            if first != i:
                parent[root(i)] = root(first)
            elif v[0] == "text":
                for other, j in texts:
                    if other in v[1] or v[1] in other:
                        parent[root(i)] = root(j)
                texts.append((v[1], i))
    return [root(i) for i in range(len(conds))]


def _shape(c: Any, s: str, tools: dict[str, int], domain: Optional[set[str]]) -> Any:
    """`c` as the search for last speaker `s` sees it: `from_speaker` as its truth value for
    `s`, a tool by its number in order of first mention among `s`'s rules (`tools`), or -1 when
    `s` cannot call it (not in its `domain`, when the block declares tools), every other leaf by
    identity (equal leaves are one object per block, `lower.py`)."""
    name = c.name
    if name == "from_speaker":
        return c.args.agent_id == s
    if name == "tool_called":
        tool = c.args.tool_name
        if domain is not None and tool not in domain:
            return ("tool", -1)
        return ("tool", tools.setdefault(tool, len(tools)))
    if name in ("all_of", "any_of"):
        return (name, *[_shape(x, s, tools, domain) for x in c.args.conditions])
    if name == "not":
        return ("not", _shape(c.args.condition, s, tools, domain))
    return id(c)


# ---------------------------------------------------------------------------------------------
#  Per block
# ---------------------------------------------------------------------------------------------
class Firing:
    """Per speaker, the rules that fire on some turn of it, whether the default target can be
    taken, and who gets the turn on some run (`speaks`), for one workflow block's graph."""

    def __init__(self, graph: SpeakerGraph, share: bool = True) -> None:
        """`share`: answer a speaker whose rules have the shape of one already analysed by
        that analysis's answers (`_shape_of`); False analyses every speaker (tests compare)."""
        self.graph = graph
        self._read: dict[int, list[Var]] = {}
        leaves: dict[Var, list[Any]] = {}
        for c in graph.leaves:
            atoms(c, leaves)
        #: the context keys compared with more than MAX_KEY_CONDITIONS distinct conditions: their values
        #: are not enumerated (each witness is read against every condition), and a question that
        #: reads one gets no answer (the graph's reading stands)
        self.wide = {v for v, cs in leaves.items()
                     if v[0] == "ctx" and len({id(c) for c in cs}) > MAX_KEY_CONDITIONS}
        self.key_domains = {v: witnesses(cs) for v, cs in leaves.items() if v[0] == "ctx" and v not in self.wide}
        self.named_tools = sorted({c.args.tool_name for c in leaves.get(TOOL, ())})
        #: speaker -> its rules in evaluation order that it can take (decide is not False)
        self.takes: dict[str, list[RuleInfo]] = {}
        #: speaker -> the evaluation positions of the rules that fire on some turn of it
        self.fires: dict[str, set[int]] = {}
        #: speaker -> can the default (`otherwise`) target be taken
        self.default: dict[str, bool] = {}
        #: speakers analysed exactly (the others: the graph's reading)
        self.exact: set[str] = set()
        self._cache: dict[str, Any] = {}
        self._order = tuple(graph.participants)
        self._domain_of: tuple[Optional[str], dict[Var, list[Any]]] = (None, {})
        # speakers whose rules have one shape (`_shape`) answer alike: the answers are kept by
        # position in `takes` (which rules fire, can the default be taken, was it exact)
        done: dict[tuple[Any, ...], tuple[list[int], bool, bool]] = {}
        for s in graph.participants:
            takes = self.takes[s] = graph.takes[s]
            key = self._shape_of(s, takes) if share else (s,)
            known = done.get(key)
            if known is None:
                self._speaker(s)
                positions = {r.order: i for i, r in enumerate(takes)}
                done[key] = ([positions[o] for o in self.fires[s]], self.default[s], s in self.exact)
                continue
            fired, self.default[s], exact = known
            self.fires[s] = {takes[i].order for i in fired}
            if exact:
                self.exact.add(s)
        self.first_turn = self._explore(graph.max_turns)
        self.speaks = {s for s, _ in self.first_turn}
        #: the evaluation positions of the rules that fire on some run
        self.fired = {o for s in self.speaks for o in self.fires[s]}

    def reads(self, c: Any) -> list[Var]:
        """The variables `c` reads, in order of first reading (computed once per condition)."""
        found = self._read.get(id(c))
        if found is None:
            by_var: dict[Var, list[Any]] = {}
            atoms(c, by_var)
            found = self._read[id(c)] = list(by_var)
        return found

    def _shape_of(self, s: str, takes: list[RuleInfo]) -> tuple[Any, ...]:
        """What the answers for `s` depend on: its rules' conditions in evaluation order, each
        as `_shape` reads it for `s`, and whether a rule decides. Two speakers with one shape
        are the same search problem up to renaming tools, so they get the same answers."""
        g = self.graph
        domain = g.owned.get(s, set()) if g.declares_tools else None
        tools: dict[str, int] = {}
        return (g.first_always[s] is not None, *[_shape(r.when, s, tools, domain) for r in takes])

    def _domains(self, s: str) -> dict[Var, list[Any]]:
        if self._domain_of[0] != s:
            g = self.graph
            tools = sorted(g.owned.get(s, ())) if g.declares_tools else self.named_tools
            self._domain_of = (s, {TOOL: [None, *tools], **self.key_domains})
        return self._domain_of[1]

    def _speaker(self, s: str) -> None:
        takes = self.takes[s]
        decided = self.graph.first_always[s] is not None
        if len(takes) > MAX_RULES or (self.wide and any(v in self.wide for r in takes for v in self.reads(r.when))):
            self.fires[s] = {r.order for r in takes}
            self.default[s] = not decided
            return
        self.exact.add(s)
        # Rule i fires on some turn iff some input makes it hold and none of takes[:i] hold. The
        # rules split into groups that share no variable (`_group_ids`), so that question is
        # "rule i holds and its group's earlier rules do not" and "the earlier rules of every
        # other group can all be false together", which `quiet` keeps per group as i grows.
        fires: set[int] = set()
        earlier: dict[int, list[Goal]] = {}  # group -> (rule's condition, False, its reads) so far
        quiet: dict[int, Optional[bool]] = {}  # group -> can its rules so far all be false
        witness: dict[int, Optional[dict[Var, Any]]] = {}  # group -> an input on which they are
        stuck = 0  # groups whose rules so far cannot all be false: no later rule fires
        domains = self._domains(s)
        for r, group in zip(takes, _group_ids([r.when for r in takes], self.reads)):
            goals = earlier.setdefault(group, [])
            reads = self.reads(r.when)
            answer: Optional[bool]
            if not reads:  # a group of its own, with one value on every turn of `s`: no search
                holds = evaluate(r.when, s, {})
                can_fire, answer = holds is True, holds is False
                witness[group] = {} if answer else None
            else:
                can_fire = _Search(s, [(r.when, True, reads), *goals], domains).run() is not False
                goals.append((r.when, False, reads))
                known = witness.get(group)
                if known is not None and evaluate(r.when, s, known) is False:
                    answer = True  # the input that kept the group's earlier rules false
                else:
                    search = _Search(s, goals, domains)
                    answer = search.run()
                    witness[group] = search.found if answer else None
            if can_fire:
                fires.add(r.order)
            stuck += (answer is False) - (quiet.get(group) is False)
            quiet[group] = answer
            if stuck:
                break
        self.fires[s] = fires
        self.default[s] = not decided and not stuck

    def can(self, s: str, when: Any, before: list[RuleInfo], also: Any = None) -> Optional[bool]:
        """Is there a turn of `s` on which `when` holds (None: no condition), `also` too (if
        given) and no rule of `before` holds? None: gave up."""
        goals: list[Goal] = [(r.when, False, self.reads(r.when)) for r in before]
        for c in (when, also):
            if c is not None:
                goals.insert(0, (c, True, self.reads(c)))
        if self.wide and any(v in self.wide for goal in goals for v in goal[2]):
            return None
        return _Search(s, goals, self._domains(s)).run()

    def _targets(self, s: str) -> list[Any]:
        g = self.graph
        out = [r.then for r in self.takes[s] if r.order in self.fires[s]]
        if self.default[s]:
            out.append(g.otherwise_target)
        return out

    def uncapped_speakers(self) -> set[str]:
        """Who gets the turn on some run when `max_turns` is ignored (computed once)."""
        if "uncapped" not in self._cache:
            self._cache["uncapped"] = {s for s, _ in self._explore(None)} if self.graph.max_turns is not None \
                else self.speaks
        found: set[str] = self._cache["uncapped"]
        return found

    def _moves(self) -> tuple[dict[str, list[str]], dict[str, list[Any]]]:
        """Per speaker: the next speakers its firing targets other than `previous` give
        (participants only, sorted), and its firing `previous` targets."""
        g = self.graph
        order, index = tuple(g.participants), g.index
        fixed: dict[str, list[str]] = {}
        previous: dict[str, list[Any]] = {}
        for s in g.participants:
            ts = self._targets(s)
            previous[s] = [t for t in ts if t.uses_previous]
            fixed[s] = sorted({n for t in ts if not t.uses_previous for n in t.successors(s, order, g._initiator)
                               if n is not None and n in index})
        return fixed, previous

    def _explore(self, cap: Optional[int]) -> dict[tuple[str, Optional[str]], int]:
        """(speaker, who spoke before) -> the first turn it happens on, for every state a run
        reaches within `cap` turns (None: no cap). Who spoke before is kept only for a speaker
        with a `previous` target (for the others it is `ANY`: their moves do not depend on it)."""
        g = self.graph
        if g.start is None:
            return {}
        moves = self._moves()
        start = self._start_state(moves)
        first: dict[tuple[str, Optional[str]], int] = {start: 1}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            turn = first[state]
            if cap is not None and turn + 1 > cap:
                continue
            for key in self._next_states(state, moves):
                if key not in first:
                    first[key] = turn + 1
                    queue.append(key)
        return first

    def _start_state(self, moves: tuple[dict[str, list[str]], dict[str, list[Any]]]) -> tuple[str, Optional[str]]:
        start = self.graph.start
        assert start is not None
        return (start, None) if moves[1][start] else (start, ANY)

    def _next_states(self, state: tuple[str, Optional[str]],
                     moves: tuple[dict[str, list[str]], dict[str, list[Any]]]) -> list[tuple[str, Optional[str]]]:
        """The states a run can be in one turn after `state` (sorted by next speaker)."""
        g = self.graph
        fixed, previous = moves
        s, before = state
        nexts = fixed[s]
        if previous[s]:
            more = set(nexts)
            for t in previous[s]:
                more.update(n for n in t.successors(s, self._order, g._initiator, (before,))
                            if n is not None and n in g.index)
            nexts = sorted(more)
        return [(nxt, s) if previous[nxt] else (nxt, ANY) for nxt in nexts]

    def _can_end(self, s: str) -> bool:
        """Does some turn of `s` end the session (a firing target, or the default one, terminates)?"""
        g = self.graph
        return any(None in t.successors(s, self._order, g._initiator) for t in self._targets(s) if not t.uses_previous)

    def longest_run(self) -> Optional[list[str]]:
        """The speakers of a longest run, in order, then `END` (docs/analysis.md, TF211): over the
        moves runs make (the rules that fire, the default target when it can be taken, `previous`
        read from who spoke before), `max_turns` ignored. None when some run can repeat a state
        (a cycle: runs of any length) or no run ends by a terminate."""
        if "longest" in self._cache:
            known: Optional[list[str]] = self._cache["longest"]
            return known
        path: Optional[list[str]] = None
        if self._moves_are_the_graph():
            path = self.graph.longest_path_to_end()  # the same path, without a second graph
        elif self.graph.start is not None:
            moves = self._moves()
            start = self._start_state(moves)
            succ: dict[Any, list[Any]] = {}  # every state a run reaches -> the states after it
            todo = [start]
            while todo:
                state = todo.pop()
                if state not in succ:
                    succ[state] = nexts = self._next_states(state, moves)
                    todo.extend(nexts)
            ends = {s: self._can_end(s) for s in {s for s, _ in succ}}
            runs: dg.DiGraph[Any] = dg.DiGraph()
            states = sorted(succ, key=self._state_key)
            runs.add_nodes_from(states)
            runs.add_node(END)
            for state in states:
                out: dict[Any, dg.EdgeData] = {nxt: {} for nxt in succ[state]}
                if ends[state[0]]:
                    out[END] = {}
                runs.add_out_edges(state, out)
            found = dg.longest_path(runs, start, END, self._state_key)
            if found is not None:
                path = [s for s, _ in found[:-1]] + [END]
        self._cache["longest"] = path
        return path

    def _moves_are_the_graph(self) -> bool:
        """Are the moves of the runs the speaker graph's edges: no `previous` target (the graph
        over-approximates it) and, for every speaker, every rule it can take fires on some turn
        and the default target is taken exactly when no rule decides (`takes`, `first_always`)?"""
        g = self.graph
        if g.otherwise_target.uses_previous or any(r.then.uses_previous for r in g.rules):
            return False
        return all(len(self.fires[s]) == len(self.takes[s]) and self.default[s] == (g.first_always[s] is None)
                   for s in g.participants)

    def _state_key(self, state: Any) -> tuple[int, int]:
        """States in declaration order of the speaker, then of who spoke before (`END` last)."""
        g = self.graph
        if not isinstance(state, tuple):
            return (len(g.participants), 0)
        before = state[1]
        return (g.order_key(state[0]), -1 if before is None or before == ANY else g.order_key(before))

    # -- answers --------------------------------------------------------------------------------
    def fires_for(self, r: RuleInfo, s: str) -> bool:
        """Does `r` fire on some turn of `s` (whether or not `s` gets the turn)?"""
        return r.order in self.fires.get(s, ())

    def fires_on_some_run(self, r: RuleInfo) -> bool:
        return r.order in self.fired


def firing(graph: SpeakerGraph) -> Firing:
    """The graph's `Firing`, computed once."""
    cached = graph._cache.get("firing")
    if not isinstance(cached, Firing):  # None: not computed yet
        cached = graph._cache["firing"] = Firing(graph)
    return cached
