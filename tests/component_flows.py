"""Workflows shaped like AutoGen AgentChat's component teams (`--target autogen-json`,
docs/targets.md): a round robin, a Swarm routing by handoff tools, a GraphFlow of single edges;
most qualify, a few break one condition (TF305 refuses those). Built from the AST pieces of
tests/flow_strategies.py; read by tests/test_target_autogen_json.py and tests/test_target_roundtrip.py."""

from __future__ import annotations

from typing import Optional

from hypothesis import strategies as st

from flow_strategies import SPAN, TEXTS, _block, _participant, ident, string
from target_harness import DIFF_TOOLS
from turnflow.dsl import ast

NAMES = ["a", "b", "c", "user", "_x"]
REASONS = ["done", "after_work", "closed"]


def _rule(source: Optional[str], target: ast.Target, text: Optional[str] = None) -> ast.Rule:
    terms = (ast.TextTerm(span=SPAN, text=string(text)),) if text is not None else ()
    return ast.Rule(span=SPAN, source=ident(source) if source else None, source_span=SPAN, target=target,
                    terms=terms, priority=None)


def _to(name: str) -> ast.Target:
    return ast.Target(span=SPAN, kind="participant", name=ident(name))


def _end(reason: str) -> ast.Target:
    return ast.Target(span=SPAN, kind="terminate", reason=string(reason))


@st.composite
def component_blocks(draw):
    """A workflow shaped like one of the three teams (most qualify; a few break a condition)."""
    kind = draw(st.sampled_from(["rr", "swarm", "graph"]))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=4, unique=True))
    start = names[0] if kind == "rr" else draw(st.sampled_from(names))
    n = draw(st.integers(1, 15))
    head: list = [_participant(x) for x in names] + [
        ast.Start(span=SPAN, name=ident(start)), ast.MaxTurns(span=SPAN, value=ast.Number(span=SPAN, value=n, raw=str(n)))]
    texts = [] if draw(st.integers(0, 2)) == 0 else draw(st.lists(st.sampled_from(TEXTS[:3] + [""] * (n % 7 == 0)),
                                                                   max_size=2, unique=True))
    rules: list = [_rule(None, _end(draw(st.sampled_from(REASONS))), t) for t in texts]  # every speaker's, first
    tail: list = []
    for i, s in enumerate(names):
        always = s != "user" and draw(st.integers(0, 3)) == 0
        if kind == "rr":
            rules += [_rule(s, _end(draw(st.sampled_from(REASONS))))] if always else []
            if not always and draw(st.booleans()):
                rules.append(_rule(s, _to(names[(i + 1) % len(names)]), draw(st.sampled_from(TEXTS))))
        elif kind == "swarm":
            tools = draw(st.lists(st.sampled_from(DIFF_TOOLS), max_size=2, unique=True))
            if always:
                rules += [_rule(s, _end(draw(st.sampled_from(REASONS))))]
            elif tools and not texts:
                rules += [ast.Handoff(span=SPAN, source=ident(s), target=_to(draw(st.sampled_from(names))),
                                      tool=ident(t), description=None) for t in tools]
        else:
            how = "end" if i == len(names) - 1 else draw(st.sampled_from(["to", "end", "edge"]))
            if how == "to":  # forwards (mostly): a cycle without a condition is refused, a few are drawn
                later = names[i + 1:] if draw(st.integers(0, 5)) else names
                rules.append(_rule(s, _to(draw(st.sampled_from(later)))))
            elif how == "edge" and s != "user":
                rules += [_rule(s, _to(draw(st.sampled_from(names))), draw(st.sampled_from(TEXTS))),
                          _rule(s, _end(draw(st.sampled_from(REASONS))))]
            else:
                rules.append(_rule(s, _end(draw(st.sampled_from(REASONS)))))
    if kind == "rr":
        tail.append(ast.Otherwise(span=SPAN, target=ast.Target(span=SPAN, kind="next")) if draw(st.booleans())
                    else _rule(None, ast.Target(span=SPAN, kind="next")))
    elif kind == "swarm":
        tail.append(ast.Otherwise(span=SPAN, target=ast.Target(span=SPAN, kind="stay")))
    return _block("workflow", "w", None, head + rules + tail)
