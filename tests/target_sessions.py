"""Differential sessions for the `--target` writers on inputs nobody wrote for them:
`turnflow simulate`'s own sessions (tests/test_target_sessions.py).

The hub's side is `turnflow.runtime.simulate.Simulator` (the workflow adapter's own decisions,
which tests/test_simulate.py holds to the real hub), with a random agent widened here: besides
simulate's text, routing tool, context update and finish, it hands off to a participant (for the
targets whose agents can), deletes context keys, calls a routing tool without any text (an LLM's
bare tool call: no content for classic AG2), and writes texts that hold the flow's `text contains`
strings among others. Each session's rounds become the compiled module's script,
turn by turn: the i-th turn's speaker in the module takes the hub's i-th round (so the two agree
on every step for as long as they agree on who speaks); a module that wants more turns than the
hub took runs out of script (`script_end`).

A flow here is a workflow's text; `wide_workflow_blocks` draws flows from a vocabulary the
other strategies leave out: participant and tool names that are Python keywords, builtins, the
generated modules' own names, LangGraph's state keys and AG2's manager name; condition texts
of any Unicode; context values of every JSON scalar kind, large and fractional numbers;
priorities far apart.
"""

from __future__ import annotations

import random
from typing import Any, Optional

from hypothesis import strategies as st

import strategies as generic
from flow_strategies import SPAN, _block, _participant, ident, literal, string
from turnflow.dsl import ast
from turnflow.runtime.simulate import DEFAULT_CAP, SIM_CAP_REASON, Simulator, run_rng

SCRIPT_END = "script_end"

#: names that meet something in a generated module or a framework (kept when the DSL takes them)
HOSTILE_NAMES = [n for n in [
    "a", "b", "user", "bot-1", "_x", "None", "True", "def", "class", "str", "len", "isinstance", "float",
    "ctx", "tool", "text", "before", "state", "State", "END", "START", "task", "speaker", "reason", "turns",
    "transcript", "agents", "build", "run", "manager", "groupchat", "chat_manager", "select_speaker",
    "content", "messages", "last_speaker", "AGENTS", "INITIATOR", "_route_0", "agent_0", "agent_1", "Ab-c1",
    "OUTCOME", "TOOLS", "ROUTERS", "StepError", "Any", "initial_state", "team", "selector", "source",
] if n not in ast.KEYWORDS]
HOSTILE_TOOLS = [t for t in ["t1", "t2", "t-1", "None", "text", "tool", "transfer_to_user", "handoff_x"]
                 if t not in ast.KEYWORDS]
HOSTILE_TEXTS = ["None", "", "\\", "'", '"""', "\n", "turn", "by", "a", "TERMINATE", "{}", 'é "q"', "\x00",
                 "\u2028", "\r\n", "%s", "{0}"]
KEYS = ["k1", "status", "None", "k-1", "ctx"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(-10**18, 10**18),
                   st.sampled_from([0.5, -2.25, 1e16, 2.0 ** 53 + 1, 1e-300]),
                   st.sampled_from(["x", "", "y z", "None", "é"]), generic.texts)

names = st.sampled_from(HOSTILE_NAMES) | generic.names
texts = st.sampled_from(HOSTILE_TEXTS) | generic.texts


@st.composite
def _targets(draw, names_: list[str]):
    kind = draw(st.sampled_from(["participant", "participant", "terminate", "stay", "next", "initiator",
                                 "previous"]))
    if kind == "participant":
        return ast.Target(span=SPAN, kind=kind, name=ident(draw(st.sampled_from(names_))))
    if kind == "terminate":
        reason = draw(st.none() | texts)
        return ast.Target(span=SPAN, kind=kind, reason=string(reason) if reason is not None else None)
    return ast.Target(span=SPAN, kind=kind)


@st.composite
def _leaf(draw, tools: list[str], context: bool):
    kind = draw(st.sampled_from(["tool", "text", "text"] + (["context", "compare"] if context else [])))
    if kind == "tool":
        return ast.ToolTerm(span=SPAN, tool=ident(draw(st.sampled_from(tools))))
    if kind == "context":
        return ast.ContextTerm(span=SPAN, key=ident(draw(st.sampled_from(KEYS))), value=literal(draw(VALUES)))
    if kind == "compare":
        length = draw(st.booleans())
        op = draw(st.sampled_from(ast.COMPARE_OPS if length else ast.COMPARE_OPS[1:]))
        value = draw(st.integers(-1, 4) | st.sampled_from([0.5, "x", None]) if length else VALUES)
        return ast.CompareTerm(span=SPAN, key=ident(draw(st.sampled_from(KEYS))), op=op,
                               value=literal(value), length=length)
    return ast.TextTerm(span=SPAN, text=string(draw(texts)))


@st.composite
def _term(draw, tools: list[str], context: bool, depth: int = 2):
    if depth <= 0 or draw(st.integers(0, 3)) > 0:
        return draw(_leaf(tools, context))
    if draw(st.booleans()):
        return ast.NotTerm(span=SPAN, term=draw(_term(tools, context, depth - 1)))
    alts = draw(st.lists(_term(tools, context, depth - 1).filter(lambda t: not isinstance(t, ast.AnyTerm)),
                         min_size=2, max_size=3))
    if draw(st.booleans()):
        alts[0] = ast.AllTerm(span=SPAN, terms=(alts[0], draw(_leaf(tools, context))))
    return ast.AnyTerm(span=SPAN, terms=tuple(alts))


@st.composite
def wide_workflow_blocks(draw, context: bool = True, identifiers: bool = False):
    """A workflow from the wide vocabulary (without `expect` / `ttl`, which every Python target
    refuses; without context statements and context tests when `context` is false; participant
    names that are Python identifiers only, as AgentChat requires, with `identifiers`)."""
    pool = names.filter(str.isidentifier) if identifiers else names
    parts_names = draw(st.lists(pool, min_size=2, max_size=4, unique=True))
    tools = draw(st.lists(st.sampled_from(HOSTILE_TOOLS), min_size=1, max_size=3, unique=True))
    init = draw(st.none() | st.integers(0, len(parts_names) - 1))
    stmts: list = []
    for i, n in enumerate(parts_names):
        declared = draw(st.none() | st.lists(st.sampled_from(tools), max_size=2, unique=True))
        stmts.append(_participant(n, "initiator" if i == init else None, draw(st.none() | texts), declared))
    stmts.append(ast.Start(span=SPAN, name=ident(draw(st.sampled_from(parts_names)))))
    if draw(st.integers(0, 5)) > 0:
        n = draw(st.integers(1, 12))
        stmts.append(ast.MaxTurns(span=SPAN, value=ast.Number(span=SPAN, value=n, raw=str(n))))
    if context:
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)):
            stmts.append(ast.ContextInit(span=SPAN, key=ident(key), value=literal(draw(VALUES))))
    handoffs: dict = {}
    for _ in range(draw(st.integers(0, 7))):
        if draw(st.integers(0, 3)) == 0:
            source, tool = draw(st.sampled_from(parts_names)), draw(st.sampled_from(tools))
            target = handoffs.setdefault((source, tool), draw(_targets(parts_names)))
            stmts.append(ast.Handoff(span=SPAN, source=ident(source), target=target, tool=ident(tool),
                                     description=None))
        else:
            source = draw(st.none() | st.sampled_from(parts_names))
            prio = draw(st.none() | st.integers(-3, 3) | st.integers(-10**6, 10**6))
            stmts.append(ast.Rule(span=SPAN, source=ident(source) if source else None, source_span=SPAN,
                                  target=draw(_targets(parts_names)),
                                  terms=draw(st.lists(_term(tools, context), max_size=3)),
                                  priority=ast.Number(span=SPAN, value=prio, raw=str(prio)) if prio is not None
                                  else None))
    if draw(st.booleans()):
        stmts.append(ast.Otherwise(span=SPAN, target=draw(_targets(parts_names))))
    return _block("workflow", "w", draw(st.none() | texts), stmts)


class WideSimulator(Simulator):
    """`turnflow simulate`'s random agent, widened: handoffs (`handoffs`), context deletes, tool
    calls without text, and texts made of the flow's `text contains` strings and others."""

    def __init__(self, spec: Any, *, handoffs: bool, finish_p: float, cap: int = DEFAULT_CAP) -> None:
        super().__init__(spec, finish_p=finish_p, cap=cap)
        self.handoffs = handoffs

    def random_round(self, rng: random.Random, speaker: str, turn: int) -> dict[str, Any]:
        from turnflow.runtime.agents.contract import SessionTools

        own = self.routing_tools[speaker]
        pool = self.tool_pool[speaker]
        extra = tuple({"name": n, "description": ""} for n in pool if n not in {t["name"] for t in own})
        tools = SessionTools(speaker, self.ids, own + extra, self.any_tool)
        pieces = [f"turn {turn}"] + [rng.choice(self.texts) for _ in range(rng.randint(0, 2)) if self.texts]
        if rng.random() < 0.2:
            pieces.append(rng.choice(HOSTILE_TEXTS))
        tool = rng.choice(pool) if pool and rng.random() < 0.5 else None
        if tool is None or rng.random() < 0.75:  # a tool call alone: a turn without text
            tools.send_message(rng.choice(["", " "]).join(pieces))
        if tool is not None:
            tools.execute_tool_call(tool)
        if self.context_keys and rng.random() < 0.4:
            key = rng.choice(self.context_keys)
            tools.set_context(key, rng.choice(self.context_values[key]))
        if self.context_keys and rng.random() < 0.15:
            tools.delete_context(rng.choice(self.context_keys))
        if self.handoffs and rng.random() < 0.1:
            tools.handoff(rng.choice(self.ids))
        if rng.random() < self.finish_p:
            tools.finish(rng.choice(["", "approved"]))
        return tools.round()


def sessions(spec: dict[str, Any], runs: int, *, handoffs: bool, finish_p: float, cap: int = 40,
             seed: int = 0) -> list[dict[str, Any]]:
    """`runs` sessions of the workflow `spec` as `turnflow simulate` runs them with the widened
    agent: each {"speakers", "rounds", "contexts" (after each turn), "reason"}; a session cut at
    `cap` turns (no `max_turns`) ends with `script_end`, as the module then runs out of script."""
    sim = WideSimulator(spec, handoffs=handoffs, finish_p=finish_p, cap=cap)
    out = []
    for i in range(runs):
        rounds: list = []
        reason, _n = sim.run_one(run_rng(seed, sim.md.name, i), rounds=rounds)
        ctx, contexts = dict(spec["knobs"]["context_vars"]), []
        for _s, r in rounds:
            for k in r["delete"]:
                ctx.pop(k, None)
            ctx.update(r["set"])
            contexts.append(dict(ctx))
        out.append({"speakers": [s for s, _r in rounds], "rounds": [r for _s, r in rounds], "contexts": contexts,
                    "reason": SCRIPT_END if reason == SIM_CAP_REASON else reason})
    return out


def step_of(r: dict[str, Any]) -> dict[str, Any]:
    """A simulated round as the step mapping a generated LangGraph module's agent returns."""
    out: dict[str, Any] = {"say": r["body"]}
    if r.get("tool"):
        out["tool"] = r["tool"]
    if r["set"]:
        out["set"] = dict(r["set"])
    if r["delete"]:
        out["delete"] = list(r["delete"])
    if r["kind"] == "finish":
        out["finish"] = r.get("reason") or ""
    elif r.get("target"):
        out["handoff"] = r["target"]
    return out


def classic_step(r: dict[str, Any]) -> dict[str, Optional[str]]:
    """A simulated round as a classic reply (`tests/classic_target_runner.py`): its text and its
    tool call; a tool call without text has no content (None), as an LLM's tool call reply."""
    return {"say": None if r["body"] == "" and r.get("tool") else r["body"], "tool": r.get("tool")}
