"""Hypothesis strategies that build `.flow` ASTs directly (every node gets a
dummy span). Generated flows have no errors by construction: participant
names are unique, every name is declared, a (source, tool) pair of handoffs
always has one target (TF107), roles fit the block kind (TF105) and most
workflows set `max_turns` (so the graph checks of docs/analysis.md can only warn)."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from turnflow.dsl import ast
from turnflow.source import Span

SPAN = Span.point()
NAMES = ["a", "b", "c", "user", "bot-1", "_x"]
TOOLS = ["t1", "t2", "t3"]
KEYS = ["k1", "k2", "status"]
TEXTS = ["DONE", "ok", "é \"q\"", ""]
REASONS = ["done", "", "after_work", "max_turns"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, -2.25]),
                   st.sampled_from(["x", "", "y z"]))


def _memo(builder):
    """The strategy `builder(*args)` built once per distinct arguments (lists count as tuples).
    Building a strategy costs far more than drawing from it, and the composites below used to
    build their sub-strategies again at every draw; the strategies (so the examples) are the same."""
    cache: dict = {}

    def frozen(value):
        return tuple(frozen(v) for v in value) if isinstance(value, list) else value

    @functools.wraps(builder)
    def build(*args, **kwargs):
        key = (tuple(frozen(a) for a in args), tuple(sorted((k, frozen(v)) for k, v in kwargs.items())))
        if key not in cache:
            cache[key] = builder(*key[0], **dict(key[1]))
        return cache[key]

    return build


@_memo
def _sampled(values):
    return st.sampled_from(values)


@_memo
def _lists(elements, **kwargs):
    return st.lists(elements, **kwargs)


@_memo
def _maybe(strategy):
    return st.none() | strategy


def ident(name: str) -> ast.Ident:
    return ast.Ident(span=SPAN, name=name)


def string(value: str) -> ast.StringLit:
    return ast.StringLit(span=SPAN, value=value)


def literal(value) -> ast.Literal:
    if value is None:
        return ast.Literal(span=SPAN, kind="null", value=None, raw="null")
    if isinstance(value, bool):
        return ast.Literal(span=SPAN, kind="bool", value=value, raw=str(value).lower())
    if isinstance(value, int):
        return ast.Literal(span=SPAN, kind="int", value=value, raw=str(value))
    if isinstance(value, float):
        return ast.Literal(span=SPAN, kind="float", value=value, raw=repr(value))
    return ast.Literal(span=SPAN, kind="string", value=value, raw=repr(value))


@_memo
@st.composite
def targets(draw, names):
    kind = draw(_sampled(["participant", "participant", "terminate", "stay", "next", "initiator",
                                 "previous"]))
    if kind == "participant":
        return ast.Target(span=SPAN, kind=kind, name=ident(draw(_sampled(names))))
    if kind == "terminate":
        reason = draw(_maybe(_sampled(REASONS)))
        return ast.Target(span=SPAN, kind=kind, reason=string(reason) if reason is not None else None)
    return ast.Target(span=SPAN, kind=kind)


@_memo
@st.composite
def leaf_terms(draw, tools=TOOLS):
    kind = draw(_sampled(["tool", "context", "text", "compare"]))
    if kind == "tool":
        return ast.ToolTerm(span=SPAN, tool=ident(draw(_sampled(tools))))
    if kind == "context":
        return ast.ContextTerm(span=SPAN, key=ident(draw(_sampled(KEYS))), value=literal(draw(VALUES)))
    if kind == "compare":
        length = draw(st.booleans())
        op = draw(_sampled(ast.COMPARE_OPS if length else ast.COMPARE_OPS[1:]))
        return ast.CompareTerm(span=SPAN, key=ident(draw(_sampled(KEYS))), op=op,
                               value=literal(draw(VALUES)), length=length)
    return ast.TextTerm(span=SPAN, text=string(draw(_sampled(TEXTS))))


@_memo
@st.composite
def terms(draw, tools=TOOLS, depth: int = 2):
    """A term as the parser builds it: `or` alternatives are never `or`s themselves, a
    parenthesised conjunction (`AllTerm`) appears only inside `or` / `not`."""
    if depth <= 0 or draw(st.integers(0, 3)) > 0:
        return draw(leaf_terms(tools))
    if draw(st.booleans()):
        return ast.NotTerm(span=SPAN, term=draw(_nested(tools, depth - 1)))
    alts = draw(_alternatives(tools, depth - 1))
    return ast.AnyTerm(span=SPAN, terms=tuple(alts))


@_memo
def _alternatives(tools, depth):
    return _lists(_nested(tools, depth).filter(lambda t: not isinstance(t, ast.AnyTerm)), min_size=2, max_size=3)


@_memo
@st.composite
def _nested(draw, tools, depth):
    if depth > 0 and draw(st.integers(0, 3)) == 0:
        return ast.AllTerm(span=SPAN, terms=tuple(draw(_conjuncts(tools, depth - 1))))
    return draw(terms(tools, depth))


@_memo
def _conjuncts(tools, depth):
    return _lists(terms(tools, depth), min_size=2, max_size=3)


def _participant(name, role=None, description=None, tools=None):
    return ast.Participant(span=SPAN, name=ident(name), role=role, role_span=SPAN if role else None,
                           description=string(description) if description is not None else None,
                           tools=[ident(t) for t in tools] if tools is not None else None)


@_memo
@st.composite
def participants(draw, kind: str, tools=TOOLS):
    lo, hi = (2, 2) if kind in ("consulting", "conversation") else (2, 4)
    names = draw(_lists(_sampled(NAMES), min_size=lo, max_size=hi, unique=True))
    if kind == "consulting":
        roles = ["initiator", "respondent"] if draw(st.booleans()) else ["respondent", "initiator"]
    elif kind == "conversation":
        roles = draw(_sampled([[None, None], ["initiator", None], [None, "respondent"],
                                      ["initiator", "respondent"]]))
    else:
        init = draw(_maybe(st.integers(0, len(names) - 1)))
        roles = ["initiator" if i == init else None for i in range(len(names))]
    out = []
    for name, role in zip(names, roles):
        desc = draw(_maybe(_sampled(["", "Does things", "Ünïcode \\ \"quoted\""])))
        declared = draw(_maybe(_lists(_sampled(tools), max_size=2, unique=True)))
        out.append(_participant(name, role, desc, declared))
    return out


def _duration(draw):
    unit = draw(_sampled(["ms", "s", "m", "h"]))
    return ast.Duration(span=SPAN, amount=draw(st.integers(1, 5000 if unit == "ms" else 200)), unit=unit)


@_memo
@st.composite
def common_tail(draw):
    stmts = []
    for _ in range(draw(st.integers(0, 2))):
        stmts.append(ast.Expect(span=SPAN, name=ident(draw(_sampled(ast.EXPECT_EVALUATORS))),
                                duration=_duration(draw), action=ident(draw(_sampled(ast.EXPECT_ACTIONS)))))
    if draw(st.booleans()):
        stmts.append(ast.Ttl(span=SPAN, duration=_duration(draw)))
    return stmts


@_memo
@st.composite
def workflow_blocks(draw, name: str = "w", always_max_turns: bool = False, tools=TOOLS):
    parts = draw(participants("workflow", tools))
    names = [p.name.name for p in parts]
    stmts: list = list(parts)
    stmts.append(ast.Start(span=SPAN, name=ident(draw(_sampled(names)))))
    if always_max_turns or draw(st.integers(0, 6)) > 0:
        n = draw(st.integers(1, 15))
        stmts.append(ast.MaxTurns(span=SPAN, value=ast.Number(span=SPAN, value=n, raw=str(n))))
    for key in draw(_lists(_sampled(KEYS), max_size=3, unique=True)):
        stmts.append(ast.ContextInit(span=SPAN, key=ident(key), value=literal(draw(VALUES))))
    handoff_targets: dict = {}
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 3)) == 0:
            source = draw(_sampled(names))
            tool = draw(_sampled(tools))
            target = handoff_targets.setdefault((source, tool), draw(targets(names)))
            desc = draw(_maybe(_sampled(["", "Hand over"])))
            stmts.append(ast.Handoff(span=SPAN, source=ident(source), target=target, tool=ident(tool),
                                     description=string(desc) if desc is not None else None))
        else:
            source = draw(_maybe(_sampled(names)))
            prio = draw(_maybe(st.integers(-3, 3)))
            stmts.append(ast.Rule(span=SPAN, source=ident(source) if source else None, source_span=SPAN,
                                  target=draw(targets(names)), terms=draw(_lists(terms(tools), max_size=3)),
                                  priority=ast.Number(span=SPAN, value=prio, raw=str(prio)) if prio is not None
                                  else None))
    if draw(st.booleans()):
        stmts.append(ast.Otherwise(span=SPAN, target=draw(targets(names))))
    stmts.extend(draw(common_tail()))
    return _block("workflow", name, draw(_maybe(_sampled(["", "A title"]))), stmts)


@_memo
@st.composite
def other_blocks(draw, kind: str, name: str):
    stmts: list = list(draw(participants(kind)))
    if kind == "discussion" and draw(st.booleans()):
        stmts.append(ast.Ordering(span=SPAN, value=ident("round_robin")))
    stmts.extend(draw(common_tail()))
    return _block(kind, name, draw(_maybe(_sampled(["Talk"]))), stmts)


def _block(kind, name, title, stmts):
    return ast.Block(span=SPAN, kind=kind, kind_span=SPAN, name=ident(name),
                     title=string(title) if title is not None else None, statements=stmts, close_span=SPAN)


@_memo
@st.composite
def flows(draw):
    kinds = draw(_lists(_sampled(["workflow", "workflow", "consulting", "conversation", "discussion"]),
                          min_size=1, max_size=3))
    blocks = []
    for i, kind in enumerate(kinds):
        name = f"block_{i}"
        blocks.append(draw(workflow_blocks(name)) if kind == "workflow" else draw(other_blocks(kind, name)))
    return ast.FlowFile(span=SPAN, blocks=blocks)
