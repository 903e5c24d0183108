"""Hypothesis strategies that build `.flow` ASTs directly (spans are dummies)."""

import string

from hypothesis import strategies as st

from turnflow.dsl import ast
from turnflow.source import Span

S = Span.point()

# the names of `[A-Za-z_][A-Za-z0-9_]{0,6}(-[a-z0-9]{1,3})?` (keywords left out), built from their
# parts: the same set of names as `st.from_regex` of that pattern, drawn at 2.5x its speed (the
# regex strategy was most of the cost of drawing a flow)
_FIRST = string.ascii_letters + "_"
names = st.builds(lambda first, rest, tail: first + rest + (f"-{tail}" if tail is not None else ""),
                  st.sampled_from(_FIRST), st.text(_FIRST + string.digits, max_size=6),
                  st.none() | st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=3)).filter(
    lambda n: n not in ast.KEYWORDS)
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def ident(name):
    return ast.Ident(span=S, name=name)


idents = names.map(ident)
strings = texts.map(lambda v: ast.StringLit(span=S, value=v))
ints = st.integers(-10**6, 10**6)

literals = st.one_of(
    texts.map(lambda v: ast.Literal(span=S, kind="string", value=v, raw="")),
    ints.map(lambda v: ast.Literal(span=S, kind="int", value=v, raw="")),
    st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda f: not f.is_integer()).map(
        lambda v: ast.Literal(span=S, kind="float", value=v, raw="")),
    st.booleans().map(lambda v: ast.Literal(span=S, kind="bool", value=v, raw="")),
    st.just(ast.Literal(span=S, kind="null", value=None, raw="")),
)
numbers = ints.map(lambda v: ast.Number(span=S, value=v, raw=""))
durations = st.builds(lambda a, u: ast.Duration(span=S, amount=a, unit=u), st.integers(0, 10**5),
                      st.sampled_from(["ms", "s", "m", "h"]))

targets = st.one_of(
    idents.map(lambda n: ast.Target(span=S, kind="participant", name=n)),
    st.builds(lambda r: ast.Target(span=S, kind="terminate", reason=r), st.none() | strings),
    st.sampled_from(["stay", "next", "initiator", "previous"]).map(lambda k: ast.Target(span=S, kind=k)),
)
leaf_terms = st.one_of(
    idents.map(lambda t: ast.ToolTerm(span=S, tool=t)),
    st.builds(lambda k, v: ast.ContextTerm(span=S, key=k, value=v), idents, literals),
    strings.map(lambda t: ast.TextTerm(span=S, text=t)),
    st.builds(lambda k, op, v: ast.CompareTerm(span=S, key=k, op=op, value=v), idents,
              st.sampled_from(ast.COMPARE_OPS[1:]), literals),
    st.builds(lambda k, op, v: ast.CompareTerm(span=S, key=k, op=op, value=v, length=True), idents,
              st.sampled_from(ast.COMPARE_OPS), literals),
)


def _compound(inner):
    """One level of `or` / `not` / parenthesised `and` over `inner`, in the shapes the parser
    builds (no `or` directly inside `or`, no parenthesised `and` directly inside `and`)."""
    nested = st.one_of(inner, st.lists(inner, min_size=2, max_size=3).map(
        lambda ts: ast.AllTerm(span=S, terms=tuple(ts))))
    return st.one_of(
        inner,
        nested.map(lambda t: ast.NotTerm(span=S, term=t)),
        st.lists(nested.filter(lambda t: not isinstance(t, ast.AnyTerm)), min_size=2, max_size=3).map(
            lambda ts: ast.AnyTerm(span=S, terms=tuple(ts))),
    )


terms = _compound(_compound(leaf_terms))

statements = st.one_of(
    st.builds(lambda n, d, r, t: ast.Participant(span=S, name=n, description=d, role=r,
                                                 role_span=S if r else None, tools=t),
              idents, st.none() | strings, st.sampled_from([None, "initiator", "respondent"]),
              st.none() | st.lists(idents, max_size=3)),
    idents.map(lambda n: ast.Start(span=S, name=n)),
    numbers.map(lambda n: ast.MaxTurns(span=S, value=n)),
    st.builds(lambda k, v: ast.ContextInit(span=S, key=k, value=v), idents, literals),
    st.builds(lambda s, t, c, p: ast.Rule(span=S, source=s, source_span=S, target=t, terms=c, priority=p),
              st.none() | idents, targets, st.lists(terms, max_size=3), st.none() | numbers),
    st.builds(lambda s, t, tool, d: ast.Handoff(span=S, source=s, target=t, tool=tool, description=d),
              idents, targets, idents, st.none() | strings),
    targets.map(lambda t: ast.Otherwise(span=S, target=t)),
    idents.map(lambda v: ast.Ordering(span=S, value=v)),
    st.builds(lambda n, d, a: ast.Expect(span=S, name=n, duration=d, action=a), idents, durations, idents),
    durations.map(lambda d: ast.Ttl(span=S, duration=d)),
)

blocks = st.builds(
    lambda k, n, t, body: ast.Block(span=S, kind=k, kind_span=S, name=n, title=t, statements=body, close_span=S),
    st.sampled_from(ast.BLOCK_KINDS), idents, st.none() | strings, st.lists(statements, max_size=8))

flows = st.lists(blocks, max_size=3).map(lambda bs: ast.FlowFile(span=S, blocks=bs))
