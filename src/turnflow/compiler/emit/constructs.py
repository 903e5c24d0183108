"""The `.flow` constructs a target writer is asked about, and where a block uses each one.

Every `--target` writer (`frameworks/langgraph/writer.py`, ...) holds a `TABLE`: construct key → (what it
becomes in that framework, exact or not). The target's profile check (TF3xx,
`compiler/checks/<target>_target.py`) refuses every use of a construct its table marks
inexact, at the construct's position, with the table's words; docs/targets.md is generated
from the same tables (`python -m turnflow.compiler.emit.targets_doc --check`), so the
writer, its refusals and its documentation cannot drift apart.

`uses(block)` reads the AST only for positions: which construct appears where.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from turnflow.dsl import ast
from turnflow.source import Span


class Construct(NamedTuple):
    key: str
    written: str  # how it is written in a .flow file (docs/targets.md's first column)


CONSTRUCTS: tuple[Construct, ...] = (
    Construct("workflow", "`workflow NAME \"title\" { ... }`"),
    Construct("other_kind", "`consulting` / `conversation` / `discussion` blocks"),
    Construct("participant", "`participant NAME \"description\"`"),
    Construct("reserved_name", "a participant named `__start__` or `__end__`"),
    Construct("non_identifier", "a participant name that is not a Python identifier (`bot-1`)"),
    Construct("tools", "`tools [t1, t2]` on a participant"),
    Construct("initiator", "the `initiator` role"),
    Construct("start", "`start NAME`"),
    Construct("max_turns", "`max_turns N`"),
    Construct("context", "`context KEY = VALUE`"),
    Construct("handoff", "`handoff A -> B via TOOL \"description\"`"),
    Construct("rule", "`A -> B` (a rule from one participant)"),
    Construct("rule_any", "`* -> B` (a rule from anyone)"),
    Construct("when_tool", "`when tool T`"),
    Construct("when_context", "`when context.K == V`"),
    Construct("when_compare", "`context.K != / < / <= / > / >= V`, `len(context.K) OP N`"),
    Construct("when_text", "`when text contains \"...\"`"),
    Construct("when_logic", "`and`, `or`, `not`, `( ... )` in a condition"),
    Construct("priority", "`priority N`"),
    Construct("to_participant", "target `B` (a participant)"),
    Construct("to_terminate", "target `terminate \"reason\"`"),
    Construct("to_stay", "target `stay`"),
    Construct("to_next", "target `next` (round robin)"),
    Construct("to_previous", "target `previous`"),
    Construct("to_initiator", "target `initiator`"),
    Construct("otherwise", "`otherwise -> TARGET`"),
    Construct("expect", "`expect EVALUATOR DURATION ACTION`"),
    Construct("ttl", "`ttl DURATION`"),
    Construct("dynamic_handoff", "an agent's step `handoff: B` (run time)"),
    Construct("finish", "an agent's step `finish: reason` (run time)"),
)

KEYS: tuple[str, ...] = tuple(c.key for c in CONSTRUCTS)
BY_KEY: dict[str, Construct] = {c.key: c for c in CONSTRUCTS}

#: LangGraph's reserved node names
RESERVED_NAMES = ("__start__", "__end__")

_TARGET_KEYS = {"participant": "to_participant", "terminate": "to_terminate", "stay": "to_stay",
                "next": "to_next", "previous": "to_previous", "initiator": "to_initiator"}


def _terms(terms: tuple[ast.Term, ...], top: bool = True) -> Iterator[tuple[str, Span]]:
    """The constructs of a rule's condition: each term, each `not` / `and` / `or` group once (an
    `and` / `or` at its group's span), and the rule's own `and` (its `top` terms) at its second term."""
    for t in terms:
        if isinstance(t, ast.ToolTerm):
            yield "when_tool", t.span
        elif isinstance(t, ast.ContextTerm):
            yield "when_context", t.span
        elif isinstance(t, ast.CompareTerm):
            yield ("when_context" if t.op == "==" and not t.length else "when_compare"), t.span
        elif isinstance(t, ast.TextTerm):
            yield "when_text", t.span
        elif isinstance(t, ast.NotTerm):
            yield "when_logic", t.span
            yield from _terms((t.term,), False)
        else:  # AllTerm / AnyTerm
            assert isinstance(t, (ast.AllTerm, ast.AnyTerm))
            yield "when_logic", t.span
            yield from _terms(t.terms, False)
    if top and len(terms) > 1:
        yield "when_logic", terms[1].span


def _rule(st: ast.Statement) -> Iterator[tuple[str, Span]]:
    if isinstance(st, ast.Handoff):
        yield "handoff", st.span
        yield _TARGET_KEYS[st.target.kind], st.target.span
    elif isinstance(st, ast.Rule):
        yield ("rule" if st.source is not None else "rule_any"), st.span
        yield from dict.fromkeys(_terms(st.terms))  # an `and` whose second term is a group: one use there
        if st.priority is not None:
            yield "priority", st.priority.span
        yield _TARGET_KEYS[st.target.kind], st.target.span
    elif isinstance(st, ast.Otherwise):
        yield "otherwise", st.span
        yield _TARGET_KEYS[st.target.kind], st.target.span


def _statement(st: ast.Statement) -> Iterator[tuple[str, Span]]:
    if isinstance(st, ast.Participant):
        yield "participant", st.span
        if st.name.name in RESERVED_NAMES:
            yield "reserved_name", st.name.span
        if not st.name.name.isidentifier():
            yield "non_identifier", st.name.span
        if st.role == "initiator":
            yield "initiator", st.role_span or st.span
        if st.tools:
            yield "tools", st.span
    elif isinstance(st, ast.Start):
        yield "start", st.span
    elif isinstance(st, ast.MaxTurns):
        yield "max_turns", st.span
    elif isinstance(st, ast.ContextInit):
        yield "context", st.span
    elif isinstance(st, ast.Expect):
        yield "expect", st.span
    elif isinstance(st, ast.Ttl):
        yield "ttl", st.span
    else:
        yield from _rule(st)


def uses(block: ast.Block) -> Iterator[tuple[str, Span]]:
    """Every construct `block` uses, with the span of its use, in file order."""
    if block.kind != "workflow":
        yield "other_kind", block.kind_span
        return
    yield "workflow", block.kind_span
    for st in block.statements:
        yield from _statement(st)


def refusals(block: ast.Block, table: dict[str, tuple[str, bool]]) -> Iterator[tuple[str, Span, str]]:
    """(construct key, span, what the target lacks) for each use the target's `table` marks inexact."""
    for key, span in uses(block):
        becomes, exact = table[key]
        if not exact:
            yield key, span, becomes
