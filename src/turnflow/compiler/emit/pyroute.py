"""A workflow's routing as Python source, per speaker: what the Python writers share
(`frameworks/langgraph/writer.py`, `frameworks/ag2/writer_groupchat.py`).

Read from the typed spec model (`turnflow.spec.WorkflowSpec`, the compiled session spec
validated), never from the AST: for each participant `s`, the graph's rules in evaluation
order (priority ascending, ties in file order) partially evaluated for `s` and a packet
round (`Condition.partial`: `from_speaker` becomes true or false, a junction drops its
decided members), cut after the first rule that always fires, ending with the default
target; exactly the dispatch table the hub's workflow adapter builds
(`runtime/transitions.py`). Each residual condition becomes a Python expression over three
names: `ctx` (the context dict after the round's updates), `tool` (the routing tool called
this round, or None) and `text` (the round's text); each target a constant next speaker,
an end with its reason, or `previous` (resolved at run time from who spoke before).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional, Union

#: the helper a `context_compare` needs, emitted into the generated module (which imports `Any`;
#: docs/language.md, "Comparisons"; the same reading as `turnflow.spec.meaning.compare`, which the differential
#: tests hold it to)
COMPARE_SOURCE = '''\
def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _compare(actual: Any, op: str, value: Any, length: bool) -> bool:
    """`context.K OP V` (docs/language.md, "Comparisons"): a missing key reads as None;
    `len(...)` of anything but a string, list or dict is false; `==`/`!=` are equality;
    an order holds between two numbers or two strings only."""
    if length:
        if not isinstance(actual, (str, list, dict)):
            return False
        actual = len(actual)
    if op == "==":
        return bool(actual == value)
    if op == "!=":
        return bool(actual != value)
    if not (isinstance(actual, str) and isinstance(value, str)) and not (_number(actual) and _number(value)):
        return False
    if op == "<":
        return bool(actual < value)
    if op == "<=":
        return bool(actual <= value)
    if op == ">":
        return bool(actual > value)
    return bool(actual >= value)
'''


class Next(NamedTuple):
    """Where a row sends the turn: `kind` "agent" (`name` speaks next), "end" (`reason`), or
    "previous" (who spoke before the speaker; `name`, the round-robin successor, on the first turn)."""

    kind: str
    name: Optional[str] = None
    reason: str = ""


class Row(NamedTuple):
    cond: Optional[str]  # a Python expression over ctx, tool, text; None: always
    then: Next
    reads: frozenset[str] = frozenset()  # what `cond` reads: "ctx", "tool", "text"
    noqa: str = ""  # the suppression comment its `if` line needs (`lint_note`), or ""


def literal(v: Any) -> str:
    """A JSON scalar (or list/object) as Python source: deterministic, round-trips exactly."""
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, (int, float, str)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"not a JSON value: {v!r}")  # pragma: no cover - the spec is JSON


def expression(cond: Any, text: str = "text") -> str:
    """A residual condition (after `partial`) as a Python expression over ctx, tool and the
    round's text (the variable named `text`)."""
    name, a = cond.name, cond.args
    if name == "tool_called":
        return f"tool == {literal(a.tool_name)}"
    if name == "context_equals":
        return f"ctx.get({literal(a.key)}) == {literal(a.value)}"
    if name == "context_compare":
        return f"_compare(ctx.get({literal(a.key)}), {literal(a.op)}, {literal(a.value)}, {a.len!r})"
    if name == "text_contains":
        return f"{literal(a.text)} in {text}"
    if name == "not":
        return f"not ({expression(a.condition, text)})"
    if name in ("all_of", "any_of"):
        joint = " and " if name == "all_of" else " or "
        return "(" + joint.join(expression(c, text) for c in a.conditions) + ")"
    raise ValueError(f"no Python form for condition {name!r}")  # pragma: no cover - every kind is above


def prune(cond: Any, owned: Optional[tuple[str, ...]]) -> Union[bool, Any]:
    """`cond` with every `tool_called` of a tool the speaker does not own decided false (a
    speaker only routes by its own tools: the hub refuses any other, and so does the generated
    code); `owned` None: the flow declares no tools, any name routes."""
    if owned is None:
        return cond
    name = cond.name
    if name == "tool_called":
        return cond if cond.args.tool_name in owned else False
    if name == "not":
        inner = prune(cond.args.condition, owned)
        if isinstance(inner, bool):
            return not inner

        from turnflow.spec.graph import negate  # pydantic, loaded only by the commands that write code

        return negate(inner)
    if name in ("all_of", "any_of"):
        decisive = name == "any_of"
        rest = []
        for c in cond.args.conditions:
            p = prune(c, owned)
            if p is decisive:
                return decisive
            if not isinstance(p, bool):
                rest.append(p)
        if not rest:
            return not decisive
        return rest[0] if len(rest) == 1 else cond.join(rest)
    return cond


def uses_compare(cond: Any) -> bool:
    return any(c.name == "context_compare" for c in cond.walk())


#: what a condition kind reads of a turn
_READS = {"tool_called": "tool", "text_contains": "text", "context_equals": "ctx", "context_compare": "ctx"}


def reads(cond: Any) -> frozenset[str]:
    """The turn's parts `cond` reads: "ctx", "tool", "text" (the writers define only those)."""
    return frozenset(_READS[c.name] for c in cond.walk() if c.name in _READS)


def lint_note(cond: Any) -> str:
    """The `# noqa` the `if` line of `cond` needs to pass pycodestyle: `context.K == true` / `false`
    is `ctx.get(K) == True` (E712), `== null` is `== None` (E711). They stay `==`: the language's
    equality is Python's (`true == 1`, docs/language.md), which `is` would not be."""
    codes = set()
    for c in cond.walk():
        if c.name == "context_equals" and (c.args.value is None or isinstance(c.args.value, bool)):
            codes.add("E711" if c.args.value is None else "E712")
    return f"  # noqa: {', '.join(sorted(codes))}" if codes else ""


def resolve(target: Any, speaker: str, order: tuple[str, ...], initiator: str) -> Next:
    """A target model after `speaker` spoke, as far as it is known at compile time."""
    if target.uses_previous:
        nxt, _reason, _rr = target.resolve(speaker, order, initiator, None)
        return Next("previous", nxt)
    nxt, reason, _rr = target.resolve(speaker, order, initiator)
    return Next("end", None, reason) if nxt is None else Next("agent", nxt)


class Routing(NamedTuple):
    """The routing of a workflow spec, per speaker."""

    order: tuple[str, ...]
    initiator: str
    start: str
    max_turns: Optional[int]
    context: dict[str, Any]
    tools: dict[str, tuple[str, ...]]  # participant → its routing tools, in spec order
    rows: dict[str, tuple[Row, ...]]
    compare: bool  # some residual condition needs `_compare`


def routing(spec: Any, text: str = "text") -> Routing:
    """`spec`: a `turnflow.spec.WorkflowSpec` (the compiled session spec, validated); `text`: the
    name the expressions give the round's text."""
    parts = sorted(spec.participants, key=lambda p: p.order)
    order = tuple(p.agent_id for p in parts)
    graph = spec.knobs.graph
    initiator = next((p.agent_id for p in parts if p.role == "initiator"), graph.initial_speaker)
    tools = {p.agent_id: tuple(p.tools) for p in parts}
    rules = [graph.transitions[i] for i in graph.evaluation_order()]
    anything = not any(tools.values())
    rows: dict[str, tuple[Row, ...]] = {}
    compare = False
    for s in order:
        out: list[Row] = []
        for tr in rules:
            t: Union[bool, Any] = tr.when.partial(s, True)
            if not isinstance(t, bool):
                t = prune(t, None if anything else tools[s])
            if t is False:
                continue
            nxt = resolve(tr.then, s, order, initiator)
            if t is True:
                out.append(Row(None, nxt))
                break
            compare = compare or uses_compare(t)
            out.append(Row(expression(t, text), nxt, reads(t), lint_note(t)))
        else:
            out.append(Row(None, resolve(graph.default_target, s, order, initiator)))
        rows[s] = tuple(out)
    return Routing(order, initiator, graph.initial_speaker, graph.max_turns,
                   dict(spec.knobs.context_vars), tools, rows, compare)


def doc_text(text: str) -> str:
    """`text` (a title, a file name) safe inside a generated triple-quoted docstring: backslashes
    and quotes escaped, control characters as `\\xNN`, lone surrogates as `\\uNNNN` (the file is
    written as UTF-8)."""
    out = []
    for ch in text.replace("\\", "\\\\").replace('"', '\\"'):
        if ch < " " and ch != "\t":
            out.append(f"\\x{ord(ch):02x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def table(items: list[tuple[str, str]], width: int = 100) -> str:
    """A dict display of (key source, value source) pairs: on one line when it fits in `width`
    columns, else one pair per line (the generated modules keep to ruff's E501 at 150)."""
    one = "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if len(one) <= width or not items:
        return one
    return "{\n" + "".join(f"    {k}: {v},\n" for k, v in items) + "}"


def json_text(v: Any) -> str:
    """A value as one line of canonical JSON (for comments and docs)."""
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def _return(t: Next) -> str:
    if t.kind == "agent":
        return f"return {literal(t.name)}, None"
    if t.kind == "end":
        return f"return None, {literal(t.reason or 'workflow_terminated')}"
    return f"return (before, None) if before is not None else ({literal(t.name)}, None)"


def routers_source(r: Routing) -> str:
    """Every speaker's router, then the `ROUTERS` table naming them (what `migrate/compiled.py`
    reads back from both Python writers)."""
    out = ["\n\n" + router_source(i, s, r) for i, s in enumerate(r.order)]
    out.append("\n\nROUTERS = {" + ", ".join(f"{literal(s)}: _route_{i}" for i, s in enumerate(r.order)) + "}\n")
    return "".join(out)


def router_source(i: int, s: str, r: Routing) -> str:
    """`def _route_I(ctx, tool, text, before)`: after `s` spoke, (next speaker, None) or (None, close
    reason); `before` is who spoke before `s` (None on the first turn)."""
    lines = [f"def _route_{i}(ctx: dict[str, Any], tool: Optional[str], text: str, before: Optional[str])"
             " -> tuple[Optional[str], Optional[str]]:",
             f"    \"\"\"After {s} spoke: (next speaker, None) or (None, close reason).\"\"\""]
    for row in r.rows[s]:
        if row.cond is None:
            lines.append("    " + _return(row.then))
            break
        lines.append(f"    if {row.cond}:{row.noqa}")
        lines.append("        " + _return(row.then))
    return "\n".join(lines) + "\n"
