"""What the `--target` differential tests share: a generated module loaded without a file,
scripted turn plans, and one run of a flow on turnflow's hub with those plans.

A plan is a list of per-turn choices that do not name anyone; `step(choice, speaker, ...)`
turns the i-th choice into the step the i-th turn's speaker takes (a tool it owns, a context
update, a handoff, a finish, text). Both sides of a differential call it with the same turn
index and speaker, so they take the same decisions for as long as they agree on who speaks;
a plan that runs out finishes the run (`script_end`)."""

from __future__ import annotations

import asyncio
import functools
import itertools
import sys
import types
from typing import Any, Optional

from hypothesis import strategies as st

from flow_strategies import KEYS, TEXTS, VALUES
from turnflow.dsl import ast

_counter = itertools.count()
DIFF_TOOLS = ["t1", "t2"]
SCRIPT_END = "script_end"


@functools.lru_cache(maxsize=16)
def _code(source: str) -> types.CodeType:
    """The generated module's code, compiled once per text (an example's module runs for each of its plans)."""
    return compile(source, "<turnflow target>", "exec")


def load_module(source: str) -> types.ModuleType:
    """The generated module, executed as a fresh module (registered in `sys.modules`, which
    LangGraph's type-hint reading of the state needs)."""
    name = f"_turnflow_target_{next(_counter)}"
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    exec(_code(source), mod.__dict__)  # noqa: S102 - the test runs the code it generated
    return mod


#: one turn's choice: (kind, text index, tool index, set, delete, handoff index, finish reason)
choices = st.tuples(st.sampled_from(["text", "text", "tool", "tool", "tool", "tool", "context", "context", "handoff",
                                     "finish"]),
                    st.integers(0, len(TEXTS)), st.integers(0, 5),
                    st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2),
                    st.lists(st.sampled_from(KEYS), max_size=1, unique=True),
                    st.integers(0, 5), st.sampled_from(["", "approved"]))
plans = st.lists(choices, min_size=8, max_size=30)


def step(plan: list, i: int, speaker: str, order: list[str], owned: dict[str, list[str]],
         classic: bool = False) -> dict[str, Any]:
    """The step the `i`-th turn's speaker takes under `plan` (a scripted step mapping). With
    `classic`, only what a classic GroupChat reply carries: text and a tool call."""
    if i >= len(plan):
        return {"finish": SCRIPT_END}
    kind, text_i, tool_i, sets, dels, who_i, reason = plan[i]
    if classic and kind in ("context", "handoff", "finish"):
        kind = "text"
    out: dict[str, Any] = {}
    if text_i < len(TEXTS) and TEXTS[text_i]:
        out["say"] = TEXTS[text_i]
    tools = owned[speaker] if any(owned.values()) else DIFF_TOOLS
    if kind == "tool" and tools:
        out["tool"] = tools[tool_i % len(tools)]
    elif kind == "context" and (sets or dels):
        out["set"], out["delete"] = dict(sets), list(dels)
    elif kind == "handoff":
        out["handoff"] = order[who_i % len(order)]
    elif kind == "finish":
        out["finish"] = reason
    if not out:  # never an empty step: the hub retries one (with the plan's next step), LangGraph raises
        out["say"] = "ok"
    return out


def replay(initial: dict[str, Any], turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The context after each turn of a hub run (its turn records' set / delete applied)."""
    ctx, out = dict(initial), []
    for t in turns:
        for k in t["delete"]:
            ctx.pop(k, None)
        ctx.update(t["set"])
        out.append(dict(ctx))
    return out


def run_hub(spec: dict[str, Any], plan: list, classic: bool = False
            ) -> tuple[list[str], list[dict[str, Any]], Optional[str]]:
    """`spec` run on turnflow's hub (in-memory store) by function agents following `plan`:
    (speakers, context after each turn, close reason)."""
    from turnflow.runtime.agents.function import FunctionAgent
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.runner import run_session
    from turnflow.runtime.store import SQLiteStore

    order = [p["agent_id"] for p in spec["participants"]]
    owned = {p["agent_id"]: list(p["tools"]) for p in spec["participants"]}
    taken = itertools.count()

    def agent(name: str) -> FunctionAgent:
        async def take(msg, tools):  # on the event loop: no worker thread per turn
            return step(plan, next(taken), name, order, owned, classic)
        return FunctionAgent(take, name)

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"))
        try:
            return await run_session(hub, spec, {p: agent(p) for p in order})
        finally:
            await hub.aclose()

    res = asyncio.run(go())
    assert res.error is None, res.error
    context = replay(spec["knobs"]["context_vars"], res.turns)
    return [t["speaker"] for t in res.turns], context, res.close_reason


def _mentions_context(term) -> bool:
    if isinstance(term, (ast.ContextTerm, ast.CompareTerm)):
        return True
    if isinstance(term, ast.NotTerm):
        return _mentions_context(term.term)
    if isinstance(term, (ast.AllTerm, ast.AnyTerm)):
        return any(_mentions_context(t) for t in term.terms)
    return False


def without_context(block: ast.Block) -> ast.Block:
    """`block` with what a classic GroupChat cannot hold removed: context, rules on context,
    `expect` and `ttl`."""
    keep = [s for s in block.statements
            if not isinstance(s, (ast.ContextInit, ast.Expect, ast.Ttl))
            and not (isinstance(s, ast.Rule) and any(_mentions_context(t) for t in s.terms))]
    return ast.Block(span=block.span, kind=block.kind, kind_span=block.kind_span, name=block.name,
                     title=block.title, statements=keep, close_span=block.close_span)
