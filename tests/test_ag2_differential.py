"""Differential test against AG2 1.2.1: for generated workflows and generated
rounds, the next speaker AG2's own `WorkflowAdapter` picks from our compiled
knobs (after `register_extensions()`) is what the flow's rules say.

`Reference` below reads the AST and the language reference (docs/language.md) only — it never
looks at the compiler's output. Rounds: plain text, packets with a routing
tool (kind handoff or text, no target), dynamic handoffs (a target), finish,
packet context updates and out-of-turn context sets. A sender only calls a
tool it declares or one nobody declares (a model sees only its own tools;
that is what makes the single-owner `tool_called` simplification sound)."""

from __future__ import annotations

from typing import Optional

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import turnflow
from flow_strategies import KEYS, TEXTS, TOOLS, VALUES, workflow_blocks
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow
from ag2_session import Ag2Session, ag2_missing

pytestmark = pytest.mark.skipif(ag2_missing(), reason="ag2 is not installed (pip install -e '.[test]')")


# --------------------------------------------------------------------------
#  The reference: what the flow says, straight from the AST
# --------------------------------------------------------------------------
class Reference:
    def __init__(self, block: ast.Block):
        self.order = [p.name.name for p in block.participants]
        initiators = [p.name.name for p in block.participants if p.role == "initiator"]
        self.start = block.of_type(ast.Start)[0].name.name
        self.creator = initiators[0] if initiators else self.start  # who opens the session
        mt = block.of_type(ast.MaxTurns)
        self.max_turns = mt[0].value.value if mt else None
        self.context = {c.key.name: c.value.value for c in block.of_type(ast.ContextInit)}
        rules = [(s.priority.value if isinstance(s, ast.Rule) and s.priority else 0, i, s)
                 for i, s in enumerate(block.rules)]
        self.rules = [s for _p, _i, s in sorted(rules, key=lambda r: (r[0], r[1]))]
        other = block.of_type(ast.Otherwise)
        self.otherwise = other[0].target if other else None
        self.expected: Optional[str] = self.start
        self.last: Optional[str] = None  # who spoke last
        self.before: Optional[str] = None  # who spoke before the last speaker (`previous`)
        self.turns = 0
        self.closed: Optional[str] = None

    def context_set(self, set_: dict, delete: list) -> None:
        for k in delete:
            self.context.pop(k, None)
        self.context.update(set_)

    def round(self, sender: str, body: str, tool: Optional[str], target: Optional[str],
              finish: Optional[str], set_: dict, delete: list) -> None:
        self.context_set(set_, delete)
        self.turns += 1
        self.before, self.last = self.last, sender
        reason = ""
        if finish is not None:
            nxt, reason = None, finish or "finished"
        elif target is not None:
            nxt = target
        else:
            nxt, reason = self.select(sender, body, tool)
        self.expected = nxt
        if nxt is None:
            self.closed = reason or "workflow_terminated"
        elif self.max_turns is not None and self.turns >= self.max_turns:
            self.closed = "max_turns"

    def holds(self, term, body: str, tool: Optional[str]) -> bool:
        if isinstance(term, ast.ToolTerm):
            return tool == term.tool.name
        if isinstance(term, ast.ContextTerm):
            return self.context.get(term.key.name) == term.value.value
        if isinstance(term, ast.CompareTerm):
            return compare_reference(self.context.get(term.key.name), term.op, term.value.value, term.length)
        if isinstance(term, ast.AnyTerm):
            return any(self.holds(t, body, tool) for t in term.terms)
        if isinstance(term, ast.AllTerm):
            return all(self.holds(t, body, tool) for t in term.terms)
        if isinstance(term, ast.NotTerm):
            return not self.holds(term.term, body, tool)
        return term.text.value in body

    def select(self, sender: str, body: str, tool: Optional[str]):
        for r in self.rules:
            if isinstance(r, ast.Handoff):
                source, terms = r.source.name, [ast.ToolTerm(span=r.span, tool=r.tool)]
            else:
                source, terms = (r.source.name if r.source else None), r.terms
            if source not in (None, sender):
                continue
            if all(self.holds(t, body, tool) for t in terms):
                return self.resolve(r.target, sender)
        if self.otherwise is None:
            return None, "after_work"
        return self.resolve(self.otherwise, sender)

    def resolve(self, t: ast.Target, sender: str):
        if t.kind == "participant":
            return t.name.name, ""
        if t.kind == "terminate":
            return None, t.reason.value if t.reason is not None else "after_work"
        if t.kind == "stay":
            return sender, ""
        if t.kind == "next" or (t.kind == "previous" and self.before is None):
            return self.order[(self.order.index(sender) + 1) % len(self.order)], ""
        if t.kind == "previous":
            return self.before, ""
        return self.creator, ""


def compare_reference(actual, op: str, value, length: bool) -> bool:
    """docs/language.md, "Comparisons", read literally (not turnflow.spec.compare)."""
    if length:
        if type(actual) not in (str, list, dict):
            return False
        actual = len(actual)
    if op == "==":
        return actual == value
    if op == "!=":
        return not (actual == value)
    numbers = all(type(v) in (int, float) for v in (actual, value))
    strings = type(actual) is str and type(value) is str
    if not (numbers or strings):
        return False
    return {"<": actual < value, "<=": actual <= value, ">": actual > value, ">=": actual >= value}[op]


# --------------------------------------------------------------------------
#  AG2's side: tests/ag2_session.py
# --------------------------------------------------------------------------
# --------------------------------------------------------------------------
#  Generated rounds
# --------------------------------------------------------------------------
DIFF_TOOLS = TOOLS[:2]  # few tools: shared and single-owner tools meet often
updates = st.tuples(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2),
                    st.lists(st.sampled_from(KEYS), max_size=1, unique=True))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_blocks(tools=DIFF_TOOLS), st.data())
def test_ag2_workflow_adapter_follows_the_flow(block, data):
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    run_differential(block, turnflow.compile(text)[0], data)


def run_differential(block, spec: dict, data) -> None:
    """Drive AG2's WorkflowAdapter with `spec` and the Reference with `block` through generated
    rounds; they agree on every next speaker, the context, the turns and how the session closes."""
    from ag2.network import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, ProtocolError

    from turnflow.interop.ag2 import register_extensions

    register_extensions()
    ref = Reference(block)
    hub = Ag2Session(spec, ref.creator)
    owned = {p["agent_id"]: p["tools"] for p in spec["participants"]}
    undeclared = [t for t in DIFF_TOOLS if not any(t in tools for tools in owned.values())]
    names = ref.order
    for _step in range(data.draw(st.integers(1, 20), label="rounds")):
        assert hub.expected() == ref.expected
        if ref.closed is not None:
            assert hub.closed == ref.closed
            return
        sender = ref.expected
        kind = data.draw(st.sampled_from(["text", "packet", "packet", "packet", "handoff", "finish", "context", "intruder"]))
        if kind == "context":
            who = data.draw(st.sampled_from(names))
            set_, delete = data.draw(updates)
            hub.post(who, EV_CONTEXT_SET, {"set": set_, "delete": delete})
            ref.context_set(set_, delete)
            assert hub.state.context_vars == ref.context
            continue
        if kind == "intruder":
            others = [n for n in names if n != sender]
            with pytest.raises(ProtocolError):
                hub.post(data.draw(st.sampled_from(others)), EV_TEXT, {"text": "out of turn"})
            continue
        body = data.draw(st.sampled_from(TEXTS + ["DONE and ok", "nothing"]))
        if kind == "text":
            hub.post(sender, EV_TEXT, {"text": body})
            ref.round(sender, body, None, None, None, {}, [])
            continue
        set_, delete = data.draw(updates)
        tool = target = finish = None
        if kind == "packet":
            choices = owned[sender] + undeclared
            tool = data.draw(st.none() | st.sampled_from(choices)) if choices else None
            routing = {"kind": data.draw(st.sampled_from(["handoff", "text"])) if tool else "text"}
            if tool:
                routing["tool"] = tool
        elif kind == "handoff":
            target = data.draw(st.sampled_from(names))
            routing = {"kind": "handoff", "target": target, "reason": "over to you"}
        else:
            finish = data.draw(st.sampled_from(["", "approved"]))
            routing = {"kind": "finish", "reason": finish}
        hub.post(sender, EV_PACKET, {"routing": routing, "context_updates": {"set": set_, "delete": delete},
                                     "body": body})
        ref.round(sender, body, tool, target, finish, set_, delete)
        assert hub.state.turn_count == ref.turns
        assert hub.state.context_vars == ref.context
    assert hub.expected() == ref.expected
    assert hub.closed == ref.closed
