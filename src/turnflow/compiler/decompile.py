"""Session specs, knobs or AG2 TransitionGraph dicts → a `.flow` AST → canonical text.

    text = turnflow.decompile(json.load(open("specs.json")))

Accepted inputs (docs/compiler.md): a list of session specs (one block
each), one session spec, bare workflow knobs (`{"graph": ..., "context_vars":
...}`) or a bare TransitionGraph dict (e.g. written by hand for AG2). A bare
graph is read the way AG2 1.2.1's `TransitionGraph.loads` reads it (missing
`transitions` = [], `priority` = 0, `args` = {}, `default_target` = terminate
"after_work", `max_turns` = null); its participants are the agent ids it
mentions, initial speaker first, then in order of appearance (or the list
given as `participants`).

The result is checked before it is returned: the printed text is parsed and
compiled again and must give back the input exactly (so
`compile(decompile(x)) == x`). Anything `.flow` cannot express raises
`DecompileError` naming the JSON path of the offending value.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeVar

from turnflow import spec as model
from turnflow.compiler.emit import knobs as _knobs
from turnflow.spec import DEFAULT_REASON, SpecError, json_path
from turnflow.dsl import ast
from turnflow.dsl.lexical import KEYWORDS, NAME_RE
from turnflow.source import Span
from turnflow.json_input import MAX_DEPTH, check_depth
from turnflow.dsl.printer import print_flow
from turnflow.compiler.emit.spec import compile_block

if TYPE_CHECKING:  # `turnflow.spec` loads its pydantic models lazily
    from turnflow.spec.graph import Model

_SPAN = Span.point()
#: target names without arguments → the `.flow` target keyword
_KEYWORD_TARGETS: dict[str, Literal["next", "stay", "initiator", "previous"]] = {
    "round_robin": "next", "stay": "stay", "revert_to_initiator": "initiator", "previous_speaker": "previous"}
_GRAPH_KEYS = ("initial_speaker", "transitions", "default_target", "max_turns")
#: a spec model class `_parse` validates against
M = TypeVar("M", bound="Model")
#: where two JSON values first differ: (JSON path, the first's part, the second's part)
Difference = tuple[str, Any, Any]


class DecompileError(ValueError):
    """The input cannot be turned into `.flow` text; `.path` is the JSON path
    (`$` = the document root) of the first offending value."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


# --------------------------------------------------------------------------
#  Entry points
# --------------------------------------------------------------------------
def classify(data: Any) -> str:
    """"specs" (a list), "spec", "knobs" or "graph"; raises DecompileError."""
    if isinstance(data, list):
        return "specs"
    if isinstance(data, dict):
        if "kind" in data:
            return "spec"
        if "initial_speaker" in data:
            return "graph"
        if "graph" in data:
            return "knobs"
        if "ordering" in data or not data:
            raise DecompileError("$", "bare knobs of a consulting, conversation or discussion session carry no "
                                 "participants; decompile the whole session spec instead")
    raise DecompileError("$", "expected a list of session specs, a session spec (with `kind`), workflow knobs "
                         "(with `graph`) or a TransitionGraph (with `initial_speaker`), found "
                         + _describe(data))


def decompile(data: Any, name: str = "main", participants: Optional[list[str]] = None) -> ast.FlowFile:
    """The AST for `data` (see the module docstring); `name` names the block of
    bare knobs or a bare graph, `participants` optionally lists its participants."""
    flow, _expected = _decompile(data, name, participants)
    return flow


def decompile_text(data: Any, name: str = "main", participants: Optional[list[str]] = None) -> str:
    """Canonical `.flow` text for `data`, verified to compile back to it."""

    if not check_depth(data):
        raise DecompileError("$", f"nested more than {MAX_DEPTH} levels deep")
    flow, expected = _decompile(data, name, participants)

    text = print_flow(flow)
    _verify(text, data, expected)
    return text


def _decompile(data: Any, name: str, participants: Optional[list[str]]) -> tuple[ast.FlowFile, Any]:
    kind = classify(data)
    if kind == "specs":
        blocks = []  # an empty list is an empty file, as `compile` of an empty file gives []
        for i, spec in enumerate(data):
            root = f"$[{i}]"
            if not isinstance(spec, dict) or "kind" not in spec:
                raise DecompileError(root, "expected a session spec (an object with `kind`), found " + _describe(spec))
            blocks.append(_spec_block(spec, root))
        names = [b.name.name for b in blocks]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise DecompileError(f"$[{i}].name", f"block name {n!r} is used twice; block names are unique in a file")
        return ast.FlowFile(span=_SPAN, blocks=tuple(blocks)), data
    if kind == "spec":
        return ast.FlowFile(span=_SPAN, blocks=(_spec_block(data, "$"),)), data
    _name(name, "name")  # the block name we were given must be a NAME
    if kind == "knobs":
        extra = sorted(set(data) - {"graph", "context_vars"})
        if extra:
            raise DecompileError(json_path([extra[0]]), "unknown workflow knob; knobs hold `graph` and `context_vars`")
        graph = load_graph(data["graph"], "$.graph")
        knobs = _parse(model.WorkflowKnobs, {"graph": graph, "context_vars": data.get("context_vars", {})}, "$")
        block = _bare_block(name, graph, knobs.context_vars, participants, "$.graph", "$.context_vars")
        return ast.FlowFile(span=_SPAN, blocks=(block,)), knobs.to_dict()
    graph = load_graph(data, "$")
    block = _bare_block(name, graph, {}, participants, "$", "$")
    return ast.FlowFile(span=_SPAN, blocks=(block,)), graph.to_dict()


# --------------------------------------------------------------------------
#  A bare graph, the way AG2's TransitionGraph.loads reads it
# --------------------------------------------------------------------------
def _parse(m: type[M], data: Any, root: str) -> M:
    try:
        parsed: M = model.parse(m, data, root)  # `parse` is untyped (a model class or a TypeAdapter)
        return parsed
    except SpecError as e:
        raise DecompileError(e.path, e.reason) from None


def load_graph(graph: Any, root: str = "$") -> model.TransitionGraph:
    """Read a bare graph the way AG2 1.2.1's `TransitionGraph.loads` does
    (its defaults filled in), then hold it to what `.flow` compiles to (every
    key known, `max_turns` at least 1)."""
    if not isinstance(graph, dict):
        raise DecompileError(root, "expected a TransitionGraph object, found " + _describe(graph))
    if "initial_speaker" not in graph:
        raise DecompileError(root, "a TransitionGraph needs `initial_speaker`")
    extra = sorted(set(graph) - set(_GRAPH_KEYS))
    if extra:
        raise DecompileError(f"{root}.{extra[0]}", "unknown TransitionGraph key (AG2 would ignore it; .flow cannot keep it)")
    try:
        loaded = model.TransitionGraph.loads(graph, root)
    except SpecError as e:
        raise DecompileError(e.path, e.reason) from None
    return _parse(model.TransitionGraph, loaded.to_dict(), root)  # the emitted form's bounds (max_turns >= 1)


def mentioned_agents(graph: Any, root: str = "$") -> dict[str, str]:
    """Agent ids a graph names → the JSON path of their first mention: the
    initial speaker first, then in order of appearance (each transition's
    condition, then its target; the default target last)."""
    if not isinstance(graph, model.TransitionGraph):
        graph = load_graph(graph, root)
    seen: dict[str, str] = {}
    for agent_id, path in graph.agent_refs(root):
        seen.setdefault(agent_id, path)
    return seen


def _bare_block(name: str, graph: model.TransitionGraph, context: dict[str, Any], participants: Optional[list[str]],
                groot: str, croot: str) -> ast.Block:
    mentioned = mentioned_agents(graph, groot)
    for agent, path in mentioned.items():
        _name(agent, path)
    if participants is None:
        names = list(mentioned)
        if len(names) < 2:
            raise DecompileError(groot, f"the graph names only one agent ({names[0]!r}) and a workflow needs at least "
                                 "two participants: give the participants (`--participants a,b,...`) or decompile "
                                 "the whole session spec")
    else:
        names = list(participants)
        missing = [a for a in mentioned if a not in names]
        if missing:
            raise DecompileError(mentioned[missing[0]], f"{missing[0]!r} is not among the given participants")
    try:
        graph.check_agents(names, groot)
    except SpecError as e:  # pragma: no cover - names hold every mentioned id
        raise DecompileError(e.path, e.reason) from None
    parts = [ast.Participant(span=_SPAN, name=_name(n, "participants")) for n in names]
    stmts: list[ast.Statement] = list(parts)
    stmts.extend(_workflow_statements(graph, context, {}, {}, groot, croot, None))
    return _mk_block("workflow", name, None, stmts)


# --------------------------------------------------------------------------
#  A whole session spec
# --------------------------------------------------------------------------
def _spec_block(data: dict[str, Any], root: str) -> ast.Block:
    try:
        spec = model.parse_spec(data, root)
    except SpecError as e:
        raise DecompileError(e.path, e.reason) from None
    kind = spec.kind
    handoff_tools: dict[tuple[str, str], tuple[int, model.Tool]] = {}
    for i, t in enumerate(spec.tools):
        if t.target is not None:
            handoff_tools[(t.owner, t.name)] = (i, t)
    owners: dict[str, list[str]] = {}
    for p in spec.participants:
        for tool in p.tools:
            owners.setdefault(tool, []).append(p.agent_id)

    rules: list[ast.Statement] = []
    if isinstance(spec, model.WorkflowSpec):
        rules = _workflow_statements(spec.knobs.graph, spec.knobs.context_vars, owners,
                                     handoff_tools, f"{root}.knobs.graph", f"{root}.knobs.context_vars", root)
    handoffs_of: dict[str, list[str]] = {}
    for st in rules:
        if isinstance(st, ast.Handoff):
            lst = handoffs_of.setdefault(st.source.name, [])
            if st.tool.name not in lst:
                lst.append(st.tool.name)
    stmts: list[ast.Statement] = []
    for i, p in enumerate(spec.participants):
        tools = list(p.tools)
        clause = None if tools == handoffs_of.get(p.agent_id, []) else [
            _name(t, f"{root}.participants[{i}].tools[{j}]") for j, t in enumerate(tools)]
        stmts.append(ast.Participant(
            span=_SPAN, name=_name(p.agent_id, f"{root}.participants[{i}].agent_id"),
            description=_string(p.description) if p.description else None,
            role=None if p.role == "participant" else p.role, role_span=None if p.role == "participant" else _SPAN,
            tools=tuple(clause) if clause is not None else None))
    stmts.extend(rules)
    for i, x in enumerate(spec.expectations):
        stmts.append(ast.Expect(span=_SPAN, name=ast.Ident(span=_SPAN, name=x.name),
                                duration=_duration(x.params.seconds, f"{root}.expectations[{i}].params.seconds"),
                                action=ast.Ident(span=_SPAN, name=x.on_violation)))
    if spec.ttl_seconds is not None:
        stmts.append(ast.Ttl(span=_SPAN, duration=_duration(spec.ttl_seconds, f"{root}.ttl_seconds")))
    return _mk_block(kind, _name(spec.name, f"{root}.name").name, spec.title, stmts)


def _workflow_statements(graph: model.TransitionGraph, context: dict[str, Any], owners: dict[str, list[str]],
                         handoff_tools: dict[tuple[str, str], tuple[int, model.Tool]], groot: str, croot: str,
                         sroot: Optional[str]) -> list[ast.Statement]:
    stmts: list[ast.Statement] = [ast.Start(span=_SPAN, name=_name(graph.initial_speaker, f"{groot}.initial_speaker"))]
    if graph.max_turns is not None:
        turns = _whole(graph.max_turns, f"{groot}.max_turns")
        stmts.append(ast.MaxTurns(span=_SPAN, value=ast.Number(span=_SPAN, value=turns, raw=str(turns))))
    for name, value in context.items():
        path = json_path([name], croot)
        stmts.append(ast.ContextInit(span=_SPAN, key=_name(name, path, "a context key"), value=_literal(value, path)))
    used: set[tuple[str, str]] = set()
    for i, tr in enumerate(graph.transitions):
        path = f"{groot}.transitions[{i}]"
        source, terms = _condition(tr.when, owners, f"{path}.when")
        target = _target(tr.then, f"{path}.then")
        prio = _whole(tr.priority, f"{path}.priority")
        if source is not None and len(terms) == 1 and isinstance(terms[0], ast.ToolTerm) and prio == 0:
            key = (source.name, terms[0].tool.name)
            entry = handoff_tools.get(key)
            if entry is not None and key not in used and entry[1].target == _knobs.tool_target(target):
                used.add(key)
                desc = entry[1].description
                stmts.append(ast.Handoff(span=_SPAN, source=source, target=target, tool=terms[0].tool,
                                         description=_string(desc) if desc else None))
                continue
        stmts.append(ast.Rule(span=_SPAN, source=source, source_span=_SPAN, target=target, terms=tuple(terms),
                              priority=ast.Number(span=_SPAN, value=prio, raw=str(prio)) if prio != 0 else None))
    for key, (i, t) in sorted(handoff_tools.items(), key=lambda kv: kv[1][0]):
        if key not in used:
            raise DecompileError(f"{sroot}.tools[{i}]", f"tool {t.name!r} of {t.owner!r} has handoff target "
                                 f"{t.target!r} but no transition routes it there (expected `tool_called` "
                                 f"{t.name!r} from {t.owner!r} with priority 0)")
    if graph.default_target != model.terminate():
        stmts.append(ast.Otherwise(span=_SPAN, target=_target(graph.default_target, f"{groot}.default_target")))
    return stmts


def _condition(c: model.BaseCondition, owners: dict[str, list[str]], path: str) -> tuple[Optional[ast.Ident], list[ast.Term]]:
    """A condition → (source Ident or None, terms)."""
    if isinstance(c, model.Always):
        return None, []
    if isinstance(c, model.FromSpeaker):
        return _name(c.args.agent_id, f"{path}.args.agent_id"), []
    if isinstance(c, model.ToolCalled):
        term = _term(c, path)
        tool_owners = owners.get(c.args.tool_name, [])
        if len(tool_owners) == 1:
            return ast.Ident(span=_SPAN, name=tool_owners[0]), [term]
        return None, [term]
    if not isinstance(c, model.AllOf):
        return None, [_term(c, path)]
    # all_of: [source test?] term term ...
    conds = c.args.conditions
    source = None
    start = 0
    if conds and isinstance(conds[0], model.FromSpeaker):
        source = _name(conds[0].args.agent_id, f"{path}.args.conditions[0].args.agent_id")
        start = 1
    terms = [_term(sub, f"{path}.args.conditions[{j}]") for j, sub in enumerate(conds) if j >= start]
    if source is None and len(terms) < 2:
        raise DecompileError(path, f"`all_of` with {len(conds)} condition{'s' if len(conds) != 1 else ''} has no "
                             ".flow form (a rule with one term compiles to that term, with none to `always`)")
    if source is not None and not terms:
        raise DecompileError(path, "`all_of` with only a `from_speaker` has no .flow form (it compiles to `from_speaker`)")
    if (source is not None and len(terms) == 1 and isinstance(terms[0], ast.ToolTerm)
            and owners.get(terms[0].tool.name) == [source.name]):
        raise DecompileError(path, f"`all_of` [from_speaker {source.name!r}, tool_called {terms[0].tool.name!r}] has "
                             f"no .flow form here: {source.name!r} alone declares the tool, so the rule compiles "
                             "to `tool_called`")
    return source, terms


def _term(c: model.BaseCondition, path: str, nested: bool = False) -> ast.Term:
    """A condition as a term; `nested`: inside `any_of` or `not`, where a parenthesised
    conjunction (`all_of`) is a term (at the top of a rule, and inside a conjunction, .flow
    flattens it, so a nested `all_of` there has no .flow form)."""
    if isinstance(c, model.ContextCompare):
        a = c.args
        if a.op == "==" and not a.len:
            raise DecompileError(path, "`context_compare` with op `==` (without `len`) has no .flow form: "
                                 "`context.KEY == VALUE` compiles to `context_equals`")
        return ast.CompareTerm(span=_SPAN, key=_name(a.key, f"{path}.args.key", "a context key"), op=a.op,
                               value=_literal(a.value, f"{path}.args.value"), length=a.len)
    if isinstance(c, model.AnyOf):
        return _any_term(c, path)
    if isinstance(c, model.Not):
        return ast.NotTerm(span=_SPAN, term=_term(c.args.condition, f"{path}.args.condition", nested=True))
    if isinstance(c, model.AllOf) and nested:
        return _all_term(c, path)
    if isinstance(c, model.ToolCalled):
        return ast.ToolTerm(span=_SPAN, tool=_name(c.args.tool_name, f"{path}.args.tool_name", "a tool name"))
    if isinstance(c, model.ContextEquals):
        return ast.ContextTerm(span=_SPAN, key=_name(c.args.key, f"{path}.args.key", "a context key"),
                               value=_literal(c.args.value, f"{path}.args.value"))
    if isinstance(c, model.TextContains):
        return ast.TextTerm(span=_SPAN, text=_string(c.args.text))
    raise _not_a_term(c, path, nested)


def _any_term(c: model.AnyOf, path: str) -> ast.AnyTerm:
    alts = c.args.conditions
    if len(alts) < 2:
        raise DecompileError(path, f"`any_of` with {len(alts)} condition{'s' if len(alts) != 1 else ''} has "
                             "no .flow form (`or` joins two or more terms)")
    out = []
    for j, sub in enumerate(alts):
        if isinstance(sub, model.AnyOf):
            raise DecompileError(f"{path}.args.conditions[{j}]", "`any_of` directly inside `any_of` has no "
                                 ".flow form (`(a or b) or c` is `a or b or c`)")
        out.append(_term(sub, f"{path}.args.conditions[{j}]", nested=True))
    return ast.AnyTerm(span=_SPAN, terms=tuple(out))


def _all_term(c: model.AllOf, path: str) -> ast.AllTerm:
    conds = c.args.conditions
    if len(conds) < 2:
        raise DecompileError(path, f"`all_of` with {len(conds)} condition{'s' if len(conds) != 1 else ''} "
                             "inside `any_of` or `not` has no .flow form (`and` joins two or more terms)")
    return ast.AllTerm(span=_SPAN, terms=tuple(_term(sub, f"{path}.args.conditions[{j}]")
                                               for j, sub in enumerate(conds)))


def _not_a_term(c: model.BaseCondition, path: str, nested: bool) -> DecompileError:
    if nested:
        return DecompileError(path, f"`{c.name}` cannot be a term inside `any_of` or `not` in .flow")
    where = "first (as the source test)" if isinstance(c, model.FromSpeaker) else None
    return DecompileError(path, f"`{c.name}` cannot be a term of `all_of` in .flow"
                          + (f"; `from_speaker` may only come {where}" if where else
                             "; terms are tool_called, context_equals, context_compare, text_contains, any_of "
                             "and not"))


def _target(t: model.BaseTarget, path: str) -> ast.Target:
    if isinstance(t, model.AgentTarget):
        return ast.Target(span=_SPAN, kind="participant", name=_name(t.args.agent_id, f"{path}.args.agent_id"))
    if isinstance(t, model.Terminate):
        reason = t.args.reason
        return ast.Target(span=_SPAN, kind="terminate", reason=None if reason == DEFAULT_REASON else _string(reason))
    return ast.Target(span=_SPAN, kind=_KEYWORD_TARGETS[t.name])


# --------------------------------------------------------------------------
#  Values
# --------------------------------------------------------------------------
def _name(value: Any, path: str, what: str = "a participant name") -> ast.Ident:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise DecompileError(path, f"{json.dumps(value, ensure_ascii=False)} cannot be {what} in .flow: a name is a "
                             "letter or `_`, then letters, digits, `_` or `-`, not ending in `-`")
    if value in KEYWORDS:
        raise DecompileError(path, f"{value!r} is a .flow keyword and cannot be {what}")
    return ast.Ident(span=_SPAN, name=value)


def _whole(value: Any, path: str) -> int:
    """A whole number as .flow writes it (`2.0` is 2); out of the literal range is an error."""
    from turnflow.dsl.parser import MAX_INT

    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) > MAX_INT:
        raise DecompileError(path, f"{_clip(value)} is out of range: .flow whole numbers are at most {MAX_INT} "
                             "in absolute value")
    return value


def _clip(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** 30 else f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= 40 else text[:30] + "…"


def _string(value: str) -> ast.StringLit:
    return ast.StringLit(span=_SPAN, value=value)


def _literal(value: Any, path: str) -> ast.Literal:
    from turnflow.dsl.parser import MAX_INT

    if isinstance(value, float) and not math.isfinite(value):
        raise DecompileError(path, f"{value} is not a JSON number")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise DecompileError(path, f"{_clip(value)} is out of range: .flow whole numbers are at most {MAX_INT} "
                             "in absolute value")
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise DecompileError(path, f"{_describe(value)} cannot be written in .flow: values are strings, numbers, "
                             "true, false or null")
    return ast.Literal.of(value, _SPAN)


_UNITS: tuple[tuple[Literal["d", "h", "m", "s"], int], ...] = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def _duration(seconds: Any, path: str) -> ast.Duration:
    """Seconds → the largest unit that expresses them exactly (d, h, m, s, else ms)."""
    if float(seconds).is_integer():
        whole = int(seconds)
        for unit, factor in _UNITS:
            if whole % factor == 0:
                return ast.Duration(span=_SPAN, amount=whole // factor, unit=unit)
    ms = round(seconds * 1000)
    d = ast.Duration(span=_SPAN, amount=ms, unit="ms")
    if ms <= 0 or d.seconds != seconds:
        raise DecompileError(path, f"{seconds} seconds is not a whole number of milliseconds")
    return d


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _mk_block(kind: Literal["workflow", "consulting", "conversation", "discussion"], name: str,
              title: Optional[str], stmts: list[ast.Statement]) -> ast.Block:
    return ast.Block(span=_SPAN, kind=kind, kind_span=_SPAN, name=ast.Ident(span=_SPAN, name=name),
                     title=_string(title) if title is not None else None, statements=tuple(stmts), close_span=_SPAN)


# --------------------------------------------------------------------------
#  Verification: the printed text compiles back to the input
# --------------------------------------------------------------------------
def _verify(text: str, data: Any, expected: Any) -> None:
    """Parse and compile `text` again and compare with the input. Speaker-graph
    findings (TF2xx, e.g. "can never end") describe the input's behaviour and
    do not stop decompilation; any other error would mean the text is not a
    faithful flow and is reported."""
    from turnflow.compiler.pipeline import analyse

    flow, diags = analyse(text, "<decompiled>")
    if flow is not None:
        diags = [d for d in diags if d.severity == "error" and not d.code.startswith("TF2")]
    if flow is None or diags:
        d = diags[0]
        lines = text.splitlines()
        line = lines[d.span.line - 1] if 0 < d.span.line <= len(lines) else ""
        raise DecompileError("$", f"the decompiled flow is not valid: {d.code} {d.message} (in `{line.strip()}`)")
    specs = [compile_block(b) for b in flow.blocks]
    kind = classify(data)
    actual: Any
    if kind == "specs":
        actual = specs
    elif kind == "spec":
        actual = specs[0]
    elif kind == "knobs":
        actual = specs[0]["knobs"]
    else:
        actual = specs[0]["knobs"]["graph"]
    diff = first_difference(expected, actual, "$")
    if diff is not None:
        path, want, got = diff
        raise DecompileError(path, f"cannot be expressed in .flow: the input has {_show(want)}, but the nearest "
                             f".flow compiles to {_show(got)}")


_ABSENT = object()


def _show(v: Any) -> str:
    return "nothing" if v is _ABSENT else json.dumps(v, ensure_ascii=False, sort_keys=True)


def first_difference(a: Any, b: Any, path: str = "$") -> Optional[Difference]:
    """The first place where JSON values `a` and `b` differ, as (path, a part,
    b part), or None. Numbers compare by value (1 == 1.0); booleans are not numbers."""
    if isinstance(a, dict) and isinstance(b, dict):
        return _first_in_objects(a, b, path)
    if isinstance(a, list) and isinstance(b, list):
        return _first_in_arrays(a, b, path)
    num = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, num) and isinstance(b, num)):
        return None if (type(a) is type(b) and a == b) else (path, a, b)
    return None if a == b else (path, a, b)


def _first_in_objects(a: dict[str, Any], b: dict[str, Any], path: str) -> Optional[Difference]:
    for k in list(a) + [k for k in b if k not in a]:
        sub = json_path([k], path)
        va, vb = a.get(k, _ABSENT), b.get(k, _ABSENT)
        if va is _ABSENT or vb is _ABSENT:
            return sub, va, vb
        d = first_difference(va, vb, sub)
        if d is not None:
            return d
    return None


def _first_in_arrays(a: list[Any], b: list[Any], path: str) -> Optional[Difference]:
    for i, (x, y) in enumerate(zip(a, b)):
        d = first_difference(x, y, f"{path}[{i}]")
        if d is not None:
            return d
    if len(a) != len(b):
        i = min(len(a), len(b))
        return f"{path}[{i}]", a[i] if i < len(a) else _ABSENT, b[i] if i < len(b) else _ABSENT
    return None
