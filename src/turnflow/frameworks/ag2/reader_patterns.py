"""AG2 group patterns (DefaultPattern, AutoPattern, RoundRobinPattern,
RandomPattern, ManualPattern) in a Python source → `.flow`.

For each agent X the rules come in AG2's evaluation order: context conditions,
LLM conditions (routing tools), targets of tools returning
`ReplyResult(target=...)`, X's after-work, then the group's after-work
(`otherwise`). The user agent is the initiator; `RevertToUserTarget` →
`initiator`. Read with `ast` only; never imported or executed.
"""

from __future__ import annotations

import ast as pyast
import json
import re
from dataclasses import dataclass, field
from typing import Optional

from turnflow.migrate.common import (MAX_ROUTES, FlowBuilder, Migration, Names, Pos, block_names, fail, line_ref, render,
                                     tool_name)
from turnflow.migrate.pyread import (Module, agent_classes, assigned_name, callee, calls, filled_in_loop, function_def,
                                     loop_message, manager_termination, one_line,
                                     is_agent_call, kwarg, note_choices, parse_module, pos, scopes, subclasses,
                                     why_not_literal)
from turnflow.frameworks.ag2.reader_groupchat import _attribute_changes  # `x.attr = v`, `x.attr.append(v)`
from turnflow.frameworks.ag2.reader_groupchat import _note_changed_agents  # agents changed after they are built
from turnflow.frameworks.ag2.reader_groupchat import GUARDRAIL_METHODS, GUARDRAIL_WHEN
from turnflow.frameworks.ag2.reader_groupchat_tools import (is_register_function, registration_words,
                                                         unbound_registrations)
from turnflow.migrate.pyread import change_sites, changed_inside
from turnflow.migrate import surface
from turnflow.source import SourceText
from turnflow.diagnostics.listing import bounded

PATTERNS = ("DefaultPattern", "AutoPattern", "RoundRobinPattern", "RandomPattern", "ManualPattern")


@dataclass
class Agent:
    var: str
    raw: str
    name: str
    call: pyast.Call
    description: Optional[str] = None
    functions: list[pyast.AST] = field(default_factory=list)
    context: list[pyast.Call] = field(default_factory=list)   # OnContextCondition calls
    llm: list[pyast.Call] = field(default_factory=list)       # OnCondition calls
    after_conditional: list[pyast.Call] = field(default_factory=list)
    after_work: Optional[pyast.AST] = None
    configured: list[pyast.AST] = field(default_factory=list)  # the calls / statements that configure it
    ignored: list[tuple[pyast.AST, str]] = field(default_factory=list)  # statements AG2 ignores, and why
    findings: list[tuple[str, pyast.AST, str]] = field(default_factory=list)  # (code, argument, message)
    # (kind "input" / "output", the registration call, the guardrail given: its constructor call or
    # whatever the argument is) for each `agent.register_output_guardrail(g)` and the like
    guardrails: list[tuple[str, pyast.Call, pyast.AST]] = field(default_factory=list)


class _Unexpressible(Exception):
    pass


SWARM_CALLS = ("initiate_swarm_chat", "a_initiate_swarm_chat", "run_swarm", "a_run_swarm")
HANDOFF_HOLDERS = ("register_hand_off",)
# ConversableAgent's own methods that add handoff conditions: the Handoffs method each one calls
AGENT_HANDOFF_METHODS = {"register_handoff": "add", "register_handoffs": "add_many"}
TOOL_RESULTS = ("ReplyResult", "SwarmResult")


@dataclass
class Scan:
    """The agents of one scope, keyed by the id of their constructor call."""

    mod: Module
    names: Names
    agents: dict[int, Agent] = field(default_factory=dict)

    def agent_of(self, node: Optional[pyast.AST]) -> Optional[Agent]:
        node = self.mod.resolve(node)
        if isinstance(node, pyast.Call):
            return self.agents.get(id(node))
        return None


def migrate(text: str, path: str, src: Optional[SourceText] = None) -> Migration:
    src = src or SourceText(text, path)
    mod = parse_module(text, path, src)
    classes = agent_classes(mod)
    found: list[tuple[Scan, pyast.Call, Optional[str]]] = []
    for scope in scopes(mod):
        runs = [c for c in scope.own_calls if callee(c) in PATTERNS or callee(c) in SWARM_CALLS]
        if not runs:
            continue
        scan = _scan(scope.mod, classes)
        found += [(scan, c, scope.name) for c in runs]
    if not found:
        raise fail("TF401", "no AG2 group pattern (" + ", ".join(PATTERNS) + ") or `initiate_swarm_chat(...)` "
                   "found: nothing to migrate", Pos(1, 1), path, src)
    keys: list[tuple[Optional[str], Optional[str]]] = []
    for scan, c, scope_name in found:
        var = assigned_name(scan.mod, c)
        keys.append((scope_name, var or ("swarm" if callee(c) in SWARM_CALLS else callee(c))))
    builders = []
    for (scan, pcall, _), block in zip(found, block_names(keys)):
        if id(pcall) in scan.mod.in_loop:
            raise fail("TF401", "the pattern is built in a loop or comprehension the migrator cannot unroll; it "
                       "reads code without running it", pos(pcall), path, src)
        _pattern_changed(scan.mod, pcall)
        scan.mod.take_choices()
        b = _pattern(scan, pcall, block)
        note_choices(scan.mod, b)
        builders.append(b)
    return render(builders, [f"Migrated by `turnflow migrate` from {path} (AG2 group pattern)."],
                  path, src, "ag2-patterns")


# what AG2's patterns read from themselves when the chat starts (`prepare_group_chat`, ag2 0.9.9)
_PATTERN_ATTRS = ("initial_agent", "agents", "user_agent", "group_manager_args", "context_variables",
                  "group_after_work", "selection_message")


_READS = ("get", "keys", "values", "items", "copy", "to_dict", "contains", "index", "count")


def _pattern_changed(mod: Module, pcall: pyast.Call) -> None:
    """TF401 at a statement that changes what the pattern `pcall` builds (`p.group_after_work = ...`,
    `p.agents.append(c)`) after it is built: the flow would be the constructor's pattern, not the
    one that runs (as a GroupChat's, reader_groupchat._changed_after_built)."""
    for st, fns in change_sites(mod):
        if not isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.AnnAssign, pyast.Expr, pyast.Delete)):
            continue
        changes = _attribute_changes(st)
        call = st.value if isinstance(st, pyast.Expr) else None
        if isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute) \
                and isinstance(call.func.value, pyast.Attribute) and call.func.attr not in _READS:
            changes.append((call.func.value.value, call.func.value.attr))  # `p.context_variables.set(k, v)`
        for base, attr in changes:
            inside = changed_inside(fns, base)
            if attr in _PATTERN_ATTRS and (inside or not fns) and mod.resolve(base) is pcall:
                when = f"{inside}: if it runs, after it is built" if inside else "after it is built"
                raise fail("TF401", f"`{one_line(st)}` changes the pattern's `{attr}` {when}; the migrator "
                           f"reads what `{callee(pcall)}(...)` is given: pass it there, or migrate the running "
                           "object with --import", pos(st), mod.path, mod.src)


def _scan(mod: Module, classes: set[str]) -> Scan:
    scan = Scan(mod, Names())
    for call in calls(mod.tree):
        if is_agent_call(mod, call, classes):
            _scan_agent(scan, call)
    # tools attached after construction
    for fname, fn in mod.functions.items():
        for dec in fn.decorator_list:
            if isinstance(dec, pyast.Call) and callee(dec) == "register_for_llm" \
                    and isinstance(dec.func, pyast.Attribute):
                a = scan.agent_of(dec.func.value)
                if a is not None:
                    a.functions.append(_named(fname, dec, kwarg(dec, "name")))
    for st in pyast.walk(mod.tree):
        # agent.functions = [...]
        if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Attribute) \
                and st.targets[0].attr == "functions":
            # AG2 reads `functions=` only in ConversableAgent.__init__: the assignment registers no tool
            a = scan.agent_of(st.targets[0].value)
            if a is not None:
                a.ignored.append((st, f"`{a.var}.functions = ...` after `{a.var}` is built registers no tool: "
                                      "AG2 reads `functions=` only when the agent is constructed (use "
                                      "`functions=` or `register_function`); the flow gives these tools to "
                                      "no one"))
    for call in calls(mod.tree):
        _tool_call(scan, call)
    _unbound_tools(scan)
    for call in calls(mod.tree):  # handoffs: agent.handoffs.<method>(...)
        _handoff_call(scan, call)
    return scan


def _scan_agent(scan: Scan, call: pyast.Call) -> None:
    """An agent constructor: its name (or variable), description and `functions=`."""
    mod = scan.mod
    var = assigned_name(mod, call)
    raw = mod.string(kwarg(call, "name", 0)) or var
    if raw is None:
        return
    name, _ = scan.names.add(raw)
    fns = mod.elements(kwarg(call, "functions"))
    one = kwarg(call, "functions")
    scan.agents[id(call)] = agent = Agent(var or raw, raw, name, call, mod.string(kwarg(call, "description")),
                                          list(fns) if fns is not None else ([one] if one is not None else []))
    agent.findings += surface.agent_findings(call, callee(call))


def _unbound_tools(scan: Scan) -> None:
    """TF411, with its agent's findings, at a tool registration that does not bind to AG2's signature
    (`register_function(f, a, b)`: `caller` and `executor` are keyword-only in AG2)."""
    for reg, node, error in unbound_registrations(scan.mod):
        owner = next((a for n in pyast.walk(reg) if isinstance(n, pyast.Name)
                      for a in [scan.agent_of(n)] if a is not None), None)
        if owner is not None:
            owner.findings.append(("TF411", node, registration_words(reg, error)))


def _tool_call(scan: Scan, call: pyast.Call) -> None:
    """A tool attached after construction: `register_function(f, caller=agent)`,
    `agent.register_for_llm(name=...)(f)`, `agent.add_functions([...])`."""
    mod = scan.mod
    name = callee(call)
    if is_register_function(call):
        # register_function(f, caller=agent, executor=..., name=..., description=...)
        a = scan.agent_of(kwarg(call, "caller"))
        f = kwarg(call, "f", 0)
        if a is not None and f is not None:
            a.functions.append(_named(f.id, call, kwarg(call, "name")) if isinstance(f, pyast.Name) else f)
            a.configured.append(call)
    elif name == "register_for_llm" and isinstance(call.func, pyast.Attribute):
        # agent.register_for_llm(name=...)(f)
        a = scan.agent_of(call.func.value)
        parent = _call_of_result(mod, call)
        if a is not None and parent is not None and parent.args and isinstance(parent.args[0], pyast.Name):
            a.functions.append(_named(parent.args[0].id, call, kwarg(call, "name")))
            a.configured.append(parent)
    elif name in ("add_functions", "update_tool_signature") and isinstance(call.func, pyast.Attribute):
        a = scan.agent_of(call.func.value)
        elems = mod.elements(call.args[0]) if call.args else None
        if a is not None and elems is not None:
            a.functions += list(elems)
            a.configured.append(call)


def _handoff_call(scan: Scan, call: pyast.Call) -> None:
    """One call configuring handoffs: `register_hand_off(...)`, `agent.handoffs.<method>(...)`,
    `agent.register_handoff(s)(...)`."""
    mod = scan.mod
    path, src = mod.path, mod.src
    f = call.func
    if _legacy_call(scan, call):
        return
    if not isinstance(f, pyast.Attribute):
        return
    if f.attr in GUARDRAIL_METHODS:
        _guardrail_call(scan, call, GUARDRAIL_METHODS[f.attr])
        return
    attr = AGENT_HANDOFF_METHODS.get(f.attr)
    if attr is not None:  # `agent.register_handoffs([...])`: AG2 calls `agent.handoffs.add_many(...)`
        owner: pyast.AST = f.value
    else:
        attr = f.attr
        holder: Optional[pyast.AST] = f.value
        if isinstance(holder, pyast.Name):  # `h = agent.handoffs; h.add_llm_condition(...)`
            holder = mod.resolve(holder)
        if not (isinstance(holder, pyast.Attribute) and holder.attr == "handoffs"):
            return
        owner = holder.value
    agent = scan.agent_of(owner)
    if agent is None or id(call) in mod.in_loop:
        if agent is None and id(call) not in mod.in_loop and isinstance(owner, pyast.Name) \
                and owner.id in ("self", "cls"):
            return
        where = "in a loop the migrator cannot unroll (only `for x in [a, b]:` over a literal list is)" \
            if id(call) in mod.in_loop else \
            f"on `{pyast.unparse(owner)}`, which is not an agent created in this file"
        raise fail("TF401", f"handoffs are configured {where}; the migrator reads code without running it, "
                   "so it cannot tell which agent they belong to", pos(call), path, src)
    agent.configured.append(call)
    method = surface.api("ag2", f"Handoffs.{attr}")
    if method is None:
        agent.findings.append(("TF408", call, f"`{one_line(call)}`: `Handoffs.{attr}` is not read by the "
                                              "migrator; the flow does not show what it changes"))
        return
    bound = surface.bind(call, method)
    if bound.problem is not None:
        node, error = bound.problem
        agent.findings.append(("TF411", node, f"`{one_line(call)}` does not bind to AG2's signature: {error}; "
                                              "its handoffs are not in the flow"))
        return
    arg = bound.get(method.params[0].name)
    if attr == "set_after_work":
        agent.after_work = arg
        return
    _add_handoffs(agent, attr, _items(mod, arg))


def _guardrail_call(scan: Scan, call: pyast.Call, kind: str) -> None:
    """`agent.register_output_guardrail(g)` (`_input_`, and the plural forms with a list): AG2 0.9.9
    runs the agent's guardrails in the group chat; one that fires replaces the reply with its
    activation message and makes its target the next speaker (`GroupChat._run_output_guardrails` ->
    `activate_target`: the GroupToolExecutor's next target, taken before the agent's after-work)."""
    mod = scan.mod
    agent = scan.agent_of(call.func.value)  # type: ignore[attr-defined]
    if agent is None or id(call) in mod.in_loop:
        return  # not an agent of this file's patterns, or not unrolled: reported as a change (TF406)
    agent.configured.append(call)
    plural = call.func.attr.endswith("s")  # type: ignore[attr-defined]
    arg = kwarg(call, "guardrails" if plural else "guardrail", 0)
    given = _items(mod, arg) if plural else [(mod.resolve(arg) if arg is not None else None) or call]
    for g in given or [call]:
        agent.guardrails.append((kind, call, g))


def _legacy_call(scan: Scan, call: pyast.Call) -> bool:
    """`agent.register_hand_off([...])` / `register_hand_off(agent, hand_to=[...])`: read, True."""
    f = call.func
    if isinstance(f, pyast.Attribute) and f.attr in HANDOFF_HOLDERS:
        _legacy_handoffs(scan, call, f.value, call.args[0] if call.args else kwarg(call, "hand_to"))
        return True
    if isinstance(f, pyast.Name) and f.id in HANDOFF_HOLDERS:
        _legacy_handoffs(scan, call, call.args[0] if call.args else kwarg(call, "agent"),
                         call.args[1] if len(call.args) > 1 else kwarg(call, "hand_to"))
        return True
    return False


def _add_handoffs(agent: Agent, method: str, items: list) -> None:
    f_attr = method
    if f_attr in ("add_context_condition", "add_context_conditions"):
        agent.context += items
    elif f_attr in ("add_llm_condition", "add_llm_conditions"):
        agent.llm += items
    elif f_attr in ("add_after_work", "add_after_works"):
        agent.after_conditional += items
    elif f_attr in ("add", "add_many"):
        for it in items:
            (agent.context if callee(it) == "OnContextCondition" else agent.llm).append(it)


def _named(fname: str, at: pyast.AST, name_node: Optional[pyast.AST]) -> pyast.Name:
    """A reference to the function `fname`, remembering the tool name it is registered under."""
    node = pyast.Name(id=fname, ctx=pyast.Load())
    pyast.copy_location(node, at)
    if isinstance(name_node, pyast.Constant) and isinstance(name_node.value, str):
        node._turnflow_tool = name_node.value  # type: ignore[attr-defined]
    return node


def _call_of_result(mod: Module, call: pyast.Call) -> Optional[pyast.Call]:
    """`X(...)(f)`: the outer call whose function is `call`."""
    for c in calls(mod.tree):
        if c.func is call:
            return c
    return None


def _legacy_handoffs(scan: Scan, call: pyast.Call, owner: Optional[pyast.AST], hand_to: Optional[pyast.AST]) -> None:
    """The swarm API before group patterns: `register_hand_off(agent, hand_to=[ON_CONDITION(...),
    AFTER_WORK(...)])` or `agent.register_hand_off([...])`."""
    mod = scan.mod
    agent = scan.agent_of(owner)
    if agent is None or id(call) in mod.in_loop:
        where = "in a loop the migrator cannot unroll" if id(call) in mod.in_loop else \
            f"on `{pyast.unparse(owner) if owner is not None else '?'}`, which is not an agent created in this file"
        raise fail("TF401", f"handoffs are registered {where}; the migrator reads code without running it",
                   pos(call), mod.path, mod.src)
    agent.configured.append(call)
    for it in _items(mod, hand_to):
        kind = callee(it)
        if kind in ("ON_CONDITION", "OnCondition"):
            agent.llm.append(it)
        elif kind in ("ON_CONTEXT_CONDITION", "OnContextCondition"):
            agent.context.append(it)
        elif kind in ("AFTER_WORK", "AfterWork"):
            agent.after_work = it


def _items(mod: Module, node: Optional[pyast.AST]) -> list[pyast.Call]:
    node = mod.resolve(node)
    if isinstance(node, (pyast.List, pyast.Tuple)):
        return [r for r in (mod.resolve(e) for e in node.elts) if isinstance(r, pyast.Call)]
    if isinstance(node, pyast.Call):
        return [node]
    return []


@dataclass
class Ctx:
    mod: Module
    scan: Scan
    names: Names
    b: FlowBuilder
    initial: str
    user: Optional[str]
    by_name: dict[str, Agent]

    def agent_name(self, node: Optional[pyast.AST]) -> Optional[str]:
        a = self.scan.agent_of(node)
        return a.name if a is not None else None


def _note_ignored(b: FlowBuilder, agents: list[Agent]) -> None:
    """TF409 at each statement of the agents' that AG2 ignores (`agent.functions = [...]`)."""
    for a in agents:
        for node, why in a.ignored:
            b.note("TF409", why, pos(node))
        for code, node, why in a.findings:
            b.note(code, why, pos(node))


def _pattern_arg(b: Optional[FlowBuilder], pcall: pyast.Call, name: str, index: Optional[int] = None) \
        -> Optional[pyast.AST]:
    """An argument of the pattern call, bound to the pattern class's signature (the swarm calls,
    not in the surface table, by keyword or `index`); a call that does not bind is TF411 (once, at
    the first argument asked for, when `b` is given) and read by keyword."""
    a = surface.api("ag2", callee(pcall))
    if a is None:
        return kwarg(pcall, name, index)
    bound = surface.bind(pcall, a)
    if bound.problem is None:
        return bound.get(name)
    if b is not None and name in ("initial_agent", "max_rounds"):  # once per call: the first argument read
        node, error = bound.problem
        fails = "" if "known only when the program runs" in error else " (the program fails here)"
        b.note("TF411", f"`{one_line(pcall, 50)}` does not bind to AG2's signature: {error}{fails}; the flow is "
               "read from its keyword arguments", pos(node))
    return kwarg(pcall, name)


def _pattern(scan: Scan, pcall: pyast.Call, block: str) -> FlowBuilder:
    mod, names = scan.mod, scan.names
    path, src = mod.path, mod.src
    kind = callee(pcall)
    swarm = kind in SWARM_CALLS
    b = FlowBuilder(block)
    init_node = _pattern_arg(b, pcall, "initial_agent", 0)
    agents_arg = _pattern_arg(b, pcall, "agents", 2 if swarm else 1)
    if filled_in_loop(mod, agents_arg):
        raise fail("TF401", loop_message(agents_arg, mod), pos(agents_arg), path, src)
    members = _members(scan, agents_arg, pcall)
    initial = scan.agent_of(init_node)
    if initial is None:
        raise fail("TF401", "`initial_agent` must be an agent created in this file", pos(init_node or pcall),
                   path, src)
    user_node = _pattern_arg(b, pcall, "user_agent")
    user = scan.agent_of(user_node)
    cx = Ctx(mod, scan, names, b, initial.name, user.name if user else None, {a.name: a for a in members})
    if user is not None:
        cx.by_name[user.name] = user
    order = _pattern_participants(cx, kind, members, initial, user, pcall)
    _note_guarded_configuration(mod, order + ([user] if user is not None else []), pcall)

    # -- start, caps, context ------------------------------------------------------------------
    b.section()
    b.start(cx.initial)
    max_rounds, run = _rounds(cx, pcall, swarm)
    b.comment(f"max_rounds={max_rounds} counts the opening message: {max(1, max_rounds - 1)} turns after it")
    b.max_turns(max(1, max_rounds - 1))
    _context_init(cx, _pattern_arg(b, pcall, "context_variables"), pcall)

    _manager_terminations(cx, pcall, run, swarm)

    # -- what the pattern does to after-work -------------------------------------------------------
    speakers = [a.name for a in order]
    if cx.user and cx.user not in speakers:
        speakers.append(cx.user)
    overrides = kind in ("RoundRobinPattern", "RandomPattern")
    if overrides:
        for a in order:
            if a.after_work is not None:
                b.note("TF409", f"{kind} sets every agent's after-work itself (replacing `{a.raw}`'s "
                       "`set_after_work`); ignored", pos(a.after_work))
                a.after_work = None
    _note_ignored(b, order)
    _note_changed_agents(mod, b, order, None,  # type: ignore[arg-type]  # the patterns' Agent has `call` and `var`
                         read=frozenset(GUARDRAIL_METHODS))  # guardrails: read as routing tools (_guardrail_handoff)
    for a in order:
        b.section()
        _agent_rules(cx, a, kind)
        if kind == "RandomPattern":
            _routing_choice(cx, a.name, [y for y in speakers if y != a.name], pcall, note=False)

    _user_returns(cx, kind, pcall, swarm, user, user_node, overrides, members)
    _group_after_work(cx, kind, pcall, swarm, speakers, members)
    return b


def _note_guarded_configuration(mod: Module, agents: list[Agent], pcall: pyast.Call) -> None:
    """TF410 (through `mod.note_guarded`) for each call configuring one of `agents` that runs only
    under an `if` / `except` / `case` or in a loop the pattern `pcall` is not built in."""
    for a in agents:
        for c in a.configured:
            mod.note_guarded(c, pcall)


def _members(scan: Scan, agents_arg: Optional[pyast.AST], pcall: pyast.Call) -> list[Agent]:
    """The pattern's `agents`: agents of the file, named uniquely."""
    mod = scan.mod
    path, src = mod.path, mod.src
    elements = mod.elements(agents_arg)
    if elements is None:
        raise fail("TF401", "`agents` must be a list of agents written out in the file"
                   + _why_not_list(mod, agents_arg), pos(agents_arg or pcall), path, src)
    by_name: dict[str, Agent] = {}  # the members so far by name (they are unique): linear in the agents
    for e in elements:
        a = scan.agent_of(e)
        if a is None:
            raise fail("TF401", f"`{pyast.unparse(e)}` in `agents` is not an agent created in this file", pos(e),
                       path, src)
        seen = by_name.setdefault(a.name, a)
        if seen is not a:
            raise fail("TF401", f"two agents are named {json.dumps(a.raw)}; AG2 requires unique names",
                       pos(e), path, src)
    return list(by_name.values())


def _pattern_participants(cx: "Ctx", kind: str, members: list[Agent], initial: Agent, user: Optional[Agent],
                          pcall: pyast.Call) -> list[Agent]:
    """The participants in AG2's order (a round robin rotates from the initial agent, the user last);
    a `user` initiator when AG2 would create one."""
    mod, b, names = cx.mod, cx.b, cx.names
    uses_revert = any(callee(c) == "RevertToUserTarget" for c in calls(mod.tree)) or any(
        isinstance(n, pyast.Attribute) and n.attr == "REVERT_TO_USER" for n in pyast.walk(mod.tree))
    order = list(members)
    if kind == "RoundRobinPattern":
        order = [initial] + [m for m in members if m is not initial and m is not user]
    if user is not None:
        order = [m for m in order if m is not user] + [user]
    b.section()
    for a in order:
        if a.name != a.raw:
            b.note("TF402", f"agent name {json.dumps(a.raw)} is not a valid flow NAME; renamed to `{a.name}`",
                   pos(kwarg(a.call, "name", 0) or a.call))
        b.participant(a.name, a.description, "initiator" if a is user else None)
    if user is None and (uses_revert or kind == "ManualPattern"):
        name = names.add("user")[0]
        cx.user = name
        b.note("TF408", "the pattern has no `user_agent`; AG2 creates a user agent for RevertToUserTarget and "
               f"manual selection; the flow declares `{name}` as the initiator", pos(pcall))
        b.participant(name, "The human user (created by AG2)", "initiator")

    return order


def _manager_terminations(cx: "Ctx", pcall: pyast.Call, run: Optional[pyast.Call], swarm: bool) -> None:
    """The manager's own termination check (`group_manager_args={"is_termination_msg": ...}` on the
    pattern or on the call that runs it)."""
    mod, b = cx.mod, cx.b
    b.section()
    for holder in (pcall, run):
        if holder is None:
            continue
        margs = mod.resolve(_pattern_arg(None, holder, "swarm_manager_args" if swarm else "group_manager_args"))
        if isinstance(margs, pyast.Dict):
            for k, v in zip(margs.keys, margs.values):
                if mod.string(k) == "is_termination_msg":
                    _manager_termination(cx, v)
        if holder is run:
            break



def _group_after_work(cx: "Ctx", kind: str, pcall: pyast.Call, swarm: bool, speakers: list[str],
                      members: list[Agent]) -> None:
    """The group's after-work: `otherwise`, or the manager's / the user's / a random choice."""
    b = cx.b
    b.section()
    group_after = _pattern_arg(None, pcall, "after_work" if swarm else "group_after_work")
    if kind == "RoundRobinPattern":
        b.otherwise(("next",))
    elif kind == "RandomPattern":
        b.note("TF404", "RandomPattern hands the turn to a random other agent (the user included); approximated "
               "by a choice of the speaker through routing tools", pos(pcall))
    elif group_after is not None:
        t = _target(cx, group_after, None)
        if _unexpressed(t):
            for i, x in enumerate(y for y in speakers if y != cx.user and cx.by_name.get(y) is not None
                                  and cx.by_name[y].after_work is None):
                b.section()
                _unexpressed_choice(cx, x, t, note=i == 0)
        elif t == ("group_manager",):
            _manager_choice(cx, speakers, group_after)
        elif t != ("terminate",) or not all(m.after_work is not None for m in members):
            b.otherwise(t)  # a written TerminateTarget is AG2's default: left out alike when no agent reaches it
    elif kind == "AutoPattern":
        _manager_choice(cx, speakers, pcall)
    elif kind == "ManualPattern":
        b.note("TF404", "ManualPattern asks the user who speaks next (any agent, itself included; AskUserTarget); "
               "approximated by a choice of the speaker through routing tools", pos(pcall))
        _manager_choice(cx, speakers, pcall, random=True, manual=True)
    elif not all(m.after_work is not None for m in members):
        b.otherwise(("terminate",))  # the default group after-work (not written when no agent can reach it)


def _user_returns(cx: "Ctx", kind: str, pcall: pyast.Call, swarm: bool, user: Optional[Agent],
                  user_node: Optional[pyast.AST], overrides: bool, members: list[Agent]) -> None:
    """The user: AG2 returns to the agent that spoke before it, unless it has after-works."""
    b = cx.b
    user_agent = user if user is not None else None
    user_has_after = overrides or (user_agent is not None and (user_agent.after_work is not None
                                                               or user_agent.after_conditional))
    if cx.user and not user_has_after:
        # who reaches the user through the group's after-work (written below)
        group_after = _pattern_arg(None, pcall, "after_work" if swarm else "group_after_work")
        via_group: list[str] = []
        gt = _target(cx, group_after, None) if group_after is not None else \
            (("group_manager",) if kind == "AutoPattern" else None)  # ManualPattern never picks the user
        if gt in (("group_manager",), ("initiator",), cx.user):
            via_group = [m.name for m in members if m.after_work is None and m.name != cx.user]
        b.section()
        _back_to_previous(cx, user_node or pcall, via_group)



def _why_not_list(mod: Module, node: Optional[pyast.AST]) -> str:
    return why_not_literal(mod, node)


def _run_call(mod: Module, pcall: pyast.Call) -> Optional[pyast.Call]:
    """The call that runs the pattern built by `pcall`, by data flow: its `pattern=` resolves to
    `pcall` where the call is (in the scope, else anywhere in the module: `await
    a_initiate_group_chat(pattern=pattern, ...)` in `async def main()` runs the global `pattern`)."""
    for where in (mod, mod.parent):
        if where is None:
            continue
        for call in calls(where.tree):
            if callee(call) in ("initiate_group_chat", "a_initiate_group_chat", "run_group_chat", "a_run_group_chat"):
                if where.resolve(kwarg(call, "pattern", 0)) is pcall:
                    return call
    return None


def _rounds(cx: "Ctx", pcall: pyast.Call, swarm: bool) -> tuple[int, Optional[pyast.Call]]:
    """`max_rounds` of the call that runs the pattern (by data flow); AG2's default 20 when no call
    does (TF409) or when a call runs a pattern the migrator cannot follow (TF405)."""
    mod, b = cx.mod, cx.b
    run = pcall if swarm else _run_call(mod, pcall)
    max_rounds = _max_rounds(cx, run)
    if max_rounds is not None:
        return max_rounds, run
    unknown = _unfollowed_runs(mod)
    if unknown:
        shown = pyast.unparse(kwarg(unknown[0], "pattern", 0) or unknown[0])
        b.note("TF405", f"`{callee(unknown[0])}(pattern={shown}, ...)` ({line_ref(unknown[0].lineno)}) runs a pattern the "
               "migrator cannot follow (a parameter, a call's result); if it runs this one, its `max_rounds` "
               "applies: AG2's default `max_rounds=20` is assumed", pos(pcall))
    else:
        b.note("TF409", "no `initiate_group_chat(pattern=...)` call runs this pattern in the file; AG2's "
               "default `max_rounds=20` is assumed", pos(pcall))
    return 20, run


def _unfollowed_runs(mod: Module) -> list[pyast.Call]:
    """Calls running a pattern whose `pattern=` does not resolve to a pattern built in the file."""
    whole = mod.parent or mod
    out = []
    for call in calls(whole.tree):
        if callee(call) in ("initiate_group_chat", "a_initiate_group_chat", "run_group_chat", "a_run_group_chat"):
            p = whole.resolve(kwarg(call, "pattern", 0))
            if not (isinstance(p, pyast.Call) and callee(p) in PATTERNS):
                out.append(call)
    return out


def _context_init(cx: Ctx, node: Optional[pyast.AST], pcall: pyast.Call) -> None:
    """`context KEY = VALUE` for the pattern's initial context: `ContextVariables(data={...})` (or the
    swarm API's plain dict), then the changes made to it before the run, in source order
    (`ctx["k"] = v`, `ctx.set("k", v)`, `ctx.update({...})`, `ctx.remove("k")`, `data["k"] = v`), a
    change under an `if` or in a loop the pattern is not in reported (TF410), one not followed TF406."""
    mod = cx.mod
    holders = {n.id for n in (node,) if isinstance(n, pyast.Name)}
    node = mod.resolve(node)
    data_node = None
    if isinstance(node, pyast.Call) and callee(node) == "ContextVariables":
        data_node = kwarg(node, "data", 0)
        holders |= {data_node.id} if isinstance(data_node, pyast.Name) else set()
        data_node = mod.resolve(data_node)
    elif isinstance(node, pyast.Dict):  # the legacy swarm API takes a plain dict
        data_node = node
    if not isinstance(data_node, pyast.Dict):
        return
    values: dict[str, tuple[object, pyast.AST]] = {}
    for k, v in zip(data_node.keys, data_node.values):
        key = mod.string(k)
        if key is not None:
            values[key] = (mod.literal(v), v)
    for st in _context_changes(mod, holders):
        mod.note_guarded(st, pcall)
        if not _apply_context_change(mod, st, values):
            cx.b.note("TF406", f"`{one_line(st)}` changes the context variables in a way the migrator does not "
                      "follow; the flow's initial context leaves it out, so its context conditions may see other "
                      "values", pos(st))
    for st, inside in _context_changes_in_defs(mod, holders):
        cx.b.note("TF406", f"`{one_line(st)}` changes the context variables {inside}: if it runs, its context "
                  "conditions may see other values; the flow's initial context does not follow it", pos(st))
    for key, (value, at) in values.items():
        if isinstance(value, (bool, int, float, str)) or value is None:
            cx.b.context(_key(cx, key, at), value)
            continue
        if isinstance(value, (list, tuple, dict, set)):
            what = f"starts as a {type(value).__name__}, which a `context` statement cannot hold"
        else:  # not a literal: `os.environ.get(...)`, a concatenation, a call
            what = f"starts as `{one_line(at, 50)}`, a value known only when the program runs"
        cx.b.note("TF409", f"context variable `{key}` {what}; not initialised", pos(at))


def _context_changes(mod: Module, holders: set[str]) -> list[pyast.stmt]:
    """The simple statements outside functions that change `holders` (the ContextVariables and its
    data dict) item by item or by a method, in source order."""
    out = []
    for st in pyast.walk(mod.tree):
        where = mod.uses.get(id(st))
        if where is None or where.in_def or not isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.Expr,
                                                                 pyast.Delete)):
            continue
        if _changed_holder(st, holders) is not None:
            out.append((where.order, st))
    return [st for _, st in sorted(out, key=lambda e: e[0])]


def _context_changes_in_defs(mod: Module, holders: set[str]) -> list[tuple[pyast.stmt, str]]:
    """The statements inside a function body (called or not) that change `holders` when they are the
    module's, each with the words that say where (`inside `f` (line N)`)."""
    out: list[tuple[pyast.stmt, str]] = []
    for st, fns in change_sites(mod):
        if not fns or not isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.Expr, pyast.Delete)):
            continue
        holder = _changed_holder(st, holders)
        inside = changed_inside(fns, holder) if holder is not None else None
        if inside is not None:
            out.append((st, inside))
    return out


def _changed_holder(st: pyast.stmt, holders: set[str]) -> Optional[pyast.Name]:
    """The variable of `holders` that `st` changes item by item or by a method, if any."""
    if isinstance(st, pyast.Expr):
        f = st.value.func if isinstance(st.value, pyast.Call) else None
        targets = [f.value] if isinstance(f, pyast.Attribute) and f.attr not in ("get", "keys", "values", "items",
                                                                                  "to_dict", "copy") else []
    else:  # `ctx[...] = v`, `ctx.data[...] = v` (not `ctx = ...`, the binding itself)
        targets = [t for t in (st.targets if isinstance(st, (pyast.Assign, pyast.Delete))
                               else [st.target])  # type: ignore[attr-defined]
                   if not isinstance(t, pyast.Name)]
    for t in targets:
        while isinstance(t, (pyast.Subscript, pyast.Attribute)) and not (
                isinstance(t, pyast.Attribute) and isinstance(t.value, pyast.Name) and t.attr != "data"):
            t = t.value
        if isinstance(t, pyast.Name) and t.id in holders:
            return t
    return None


def _apply_context_change(mod: Module, st: pyast.stmt, values: dict) -> bool:
    """Apply `ctx["k"] = v` / `del ctx["k"]` / `ctx.set("k", v)` / `ctx.update({...})` /
    `ctx.remove("k")` to `values`; False for any other change."""
    if isinstance(st, (pyast.Assign, pyast.Delete)) and len(st.targets) == 1 \
            and isinstance(st.targets[0], pyast.Subscript):
        key = mod.string(st.targets[0].slice)
        if key is None:
            return False
        if isinstance(st, pyast.Assign):
            values[key] = (mod.literal(st.value), st.value)
        else:
            values.pop(key, None)
        return True
    call = st.value if isinstance(st, pyast.Expr) else None
    if not (isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute)) or call.keywords:
        return False
    return _context_method(mod, call.func.attr, call.args, values)


def _context_method(mod: Module, method: str, args: list, values: dict) -> bool:
    """`ctx.set("k", v)`, `ctx.remove("k")` / `.pop("k")`, `ctx.update({...})` applied to `values`."""
    key = mod.string(args[0]) if args else None
    if method == "set" and len(args) == 2 and key is not None:
        values[key] = (mod.literal(args[1]), args[1])
        return True
    if method in ("remove", "pop") and len(args) == 1 and key is not None:
        values.pop(key, None)
        return True
    update = mod.resolve(args[0]) if method == "update" and len(args) == 1 else None
    if not isinstance(update, pyast.Dict):
        return False
    keys = [mod.string(k) for k in update.keys]
    if any(k is None for k in keys):
        return False
    for k, v in zip(keys, update.values):
        values[k] = (mod.literal(v), v)
    return True


def _manager_termination(cx: Ctx, node: pyast.AST) -> None:
    manager_termination(cx.mod, cx.b, node, "the group manager")


def _sources_of(b: FlowBuilder, target: str, speakers: list[str]) -> list[str]:
    """The speakers with a rule or handoff that can hand the turn to `target`."""
    out: list[str] = []
    for line in b.lines:
        if line.kind not in ("rule", "handoff", "otherwise"):
            continue
        t = line.data["target"]
        if t == target or t == ("initiator",):
            src = line.data.get("source")
            for s in ([src] if src else speakers):
                if s != target and s not in out:
                    out.append(s)
    return [s for s in speakers if s in out]


def _back_to_previous(cx: Ctx, at: pyast.AST, via_group: list[str]) -> None:
    """After the user (without after-works of its own) AG2 returns to the last agent that spoke
    (AG2's `group_utils.determine_next_agent`: "if the user last spoke, return to the agent
    prior to them" unless the user has after-works): the target `previous`."""
    b, user = cx.b, cx.user
    assert user is not None
    speakers = [p for p in b.participants if p != user]
    found = set(_sources_of(b, user, speakers)) | set(via_group)
    sources = [s for s in speakers if s in found]
    if len(sources) == 1:
        b.comment(f"after the user replies AG2 returns to the agent that spoke before it: only `{sources[0]}` "
                  "hands over to the user")
        b.rule(user, sources[0])
        return
    if not sources:
        b.note("TF408", "after the user replies AG2 returns to the agent that spoke before it; no agent hands over "
               f"to the user, so the pattern's initial agent, `{cx.initial}`, is used", pos(at))
        b.rule(user, cx.initial)
        return
    b.comment("after the user replies AG2 returns to the agent that spoke before it ("
              + bounded(sources) + " hand over to the user)")
    b.rule(user, ("previous",))


def _capped(targets: list) -> list:
    return targets[:MAX_ROUTES]


def _cap_routes(cx: Ctx, x: str, targets: list, at: pyast.AST) -> None:
    if len(targets) > MAX_ROUTES:
        cx.b.note("TF403", f"`{x}` may hand over to {len(targets)} agents; only the first {MAX_ROUTES} get a "
                  "routing tool (the others are reached through the fallback rotation)", pos(at))


def _routing_choice(cx: Ctx, x: str, targets: list[str], at: pyast.AST, note: bool = True) -> None:
    """Routing tools from `x` to `targets`, then the next participant among them as fallback."""
    b = cx.b
    _cap_routes(cx, x, targets, at)
    for y in _capped(targets):
        b.handoff(x, y, f"transfer_to_{y}", _describe(cx, y))
    order = b.participants
    i = order.index(x) if x in order else -1
    following = [order[(i + k) % len(order)] for k in range(1, len(order) + 1)]
    fallback = next((y for y in following if y in targets), None)
    b.rule(x, ("next",) if fallback is None or fallback == following[0] else fallback)


def _manager_choice(cx: Ctx, speakers: list[str], at: pyast.AST, random: bool = False, manual: bool = False) -> None:
    """GroupManagerTarget as group after-work: every speaker without its own
    after-work may hand over to any agent, itself included (routing tools) + `next`. ManualPattern's
    AskUserTarget: the user nominates any agent, the speaker itself included, never the user."""
    b = cx.b
    if not random:
        b.note("TF403", "the group manager's LLM picks the next speaker after an agent's work; each agent gets one "
               f"routing tool per agent, {_REPEAT}, and the next agent when it calls none", pos(at))
    for x in speakers:
        a = cx.by_name.get(x)
        if (a is not None and a.after_work is not None) or x == cx.user:
            continue  # the user's replies are handled above
        b.section()
        targets = [y for y in speakers if y != cx.user] if manual else \
            [y for y in speakers if y != x] if random else list(speakers)
        _routing_choice(cx, x, targets, at)


# AG2's patterns build their GroupChat without `allow_repeat_speaker`; GroupChat turns that None into True
# when there is no transitions dict (ag2ai/ag2 autogen/agentchat/groupchat.py, __post_init__), so the
# manager's "auto" selection may pick the agent that just spoke
_REPEAT = "itself included (the pattern's GroupChat keeps AG2's default `allow_repeat_speaker`, i.e. True)"


def _describe(cx: Ctx, name: str) -> str:
    a = cx.by_name.get(name)
    if a is not None and a.description:
        return a.description.strip()
    return f"Let {name} speak next"


def _key(cx: Ctx, key: str, at: pyast.AST) -> str:
    from turnflow.dsl.lexical import KEYWORDS, NAME_RE
    from turnflow.migrate.common import Names as _N

    if NAME_RE.match(key) and key not in KEYWORDS:
        return key
    new = _N.clean(key)
    cx.b.note("TF402", f"context key {json.dumps(key)} is not a valid flow NAME; renamed to `{new}`", pos(at))
    return new


def _max_rounds(cx: Ctx, run: Optional[pyast.Call]) -> Optional[int]:
    if run is None:
        return None
    node = _pattern_arg(cx.b, run, "max_rounds")
    if node is None:
        return 20  # AG2's default
    from turnflow.frameworks.ag2.reader_groupchat import whole_number

    return whole_number(cx.mod, cx.b, node, "max_rounds", 20, "AG2's default")


_AFTER_WORK_OPTIONS = {"TERMINATE": ("terminate",), "REVERT_TO_USER": ("initiator",), "STAY": ("stay",),
                       "SWARM_MANAGER": ("group_manager",), "GROUP_MANAGER": ("group_manager",)}
_OPTION_STRINGS = {"terminate": ("terminate",), "revert_to_user": ("initiator",), "stay": ("stay",),
                   "swarm_manager": ("group_manager",), "group_manager": ("group_manager",)}


_BUILTIN_TARGETS = {"RevertToUserTarget": ("initiator",), "TerminateTarget": ("terminate",), "StayTarget": ("stay",),
                    "GroupManagerTarget": ("group_manager",)}
# targets AG2 resolves in ways the flow has no word for (ag2 0.9.9,
# autogen/agentchat/group/targets/transition_target.py): `_target` gives ("unexpressed", kind, node)
# and the rule that uses one says, per speaker, what it can (`_unexpressed_rule`, `_unexpressed_choice`)
_UNEXPRESSED = ("RandomAgentTarget", "AskUserTarget", "NestedChatTarget")


def _unexpressed(t) -> bool:
    return isinstance(t, tuple) and t[:1] == ("unexpressed",)


def _random_pool(cx: Ctx, x: str, node: pyast.AST) -> tuple[Optional[list[str]], str]:
    """The agents a RandomAgentTarget draws from after `x` (its `agents` but `x`: AG2's resolve), or
    None and why (not read, or nobody left: `random.choice([])` raises IndexError)."""
    elems = cx.mod.elements(kwarg(node, "agents", 0))
    names = [cx.agent_name(e) for e in elems or []]
    if elems is None or any(n is None for n in names):
        return None, "its `agents` are not a list of agents of this file"
    left = [n for n in names if n is not None and n != x]
    if not left:
        return None, (f"it holds no agent but `{x}`, and AG2 draws among the others: `random.choice([])` raises "
                      "IndexError when the chat reaches it")
    return left, ""


def _unexpressed_rule(cx: Ctx, x: str, t: tuple) -> Optional[str]:
    """The target of one rule of `x` (a condition's, a tool's) that is an `_UNEXPRESSED` target: the
    agent, when exactly one can follow; else None, TF408 at the target, the rule kept as a comment."""
    kind, node = t[1], t[2]
    why = ""
    if kind == "RandomAgentTarget":
        left, why = _random_pool(cx, x, node)
        if left is not None and len(left) == 1:
            return left[0]
        why = why or (f"AG2 draws one of {bounded(left or [])} at random when the rule fires; the flow has no "
                      "random target")
    elif kind == "AskUserTarget":
        why = "AG2 asks the person which agent speaks next (its \"manual\" selection); the flow has no such target"
    else:
        why = (f"AG2 runs the nested chats in an agent of its own that then hands back to `{x}` (a ReplyResult "
               "or after-work target fails there); the flow has no nested chat")
    cx.b.note("TF408", f"`{_one(node)}` cannot be expressed: {why}; this rule of `{x}` is left out (kept as "
              "a comment)", pos(node))
    cx.b.comment(f"{x} -> {_one(node)}")
    return None


def _unexpressed_choice(cx: Ctx, x: str, t: tuple, note: bool = True) -> None:
    """`x`'s after-work that is an `_UNEXPRESSED` target: one agent when one can follow; a choice
    the flow approximates with routing tools (TF404, as RandomPattern and ManualPattern); or left out
    (TF408) when AG2 cannot resolve it."""
    b = cx.b
    kind, node = t[1], t[2]
    if kind == "NestedChatTarget":
        if note:
            b.note("TF408", f"`{_one(node)}` as after-work cannot be expressed: AG2 cannot resolve it "
                   "(NotImplementedError: NestedChatTarget does not support the resolve method) when the chat "
                   "reaches it; the after-work is left out (kept as a comment)", pos(node))
        b.comment(f"{x} -> {_one(node)}")
        return
    if kind == "AskUserTarget":
        targets = [y for y in b.participants if y != cx.user]
        what = "AG2 asks the person which agent speaks next (any agent but the user; its \"manual\" selection)"
    else:
        left, why = _random_pool(cx, x, node)
        if left is None:
            b.note("TF408", f"`{_one(node)}` cannot be expressed: {why}; the after-work of `{x}` is left out "
                   "(kept as a comment)", pos(node))
            b.comment(f"{x} -> {_one(node)}")
            return
        if len(left) == 1:
            b.rule(x, left[0])
            return
        targets = left
        what = f"AG2 draws the next speaker at random among {bounded(left)}"
    if note:
        b.note("TF404", f"`{_one(node)}`: {what}; the flow has no such target: approximated by a choice of "
               "the speaker through routing tools", pos(node))
    b.section()
    _routing_choice(cx, x, targets, node)


def _one(node: pyast.AST) -> str:
    text = " ".join(pyast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _target(cx: Ctx, node: Optional[pyast.AST], at: Optional[pyast.AST]):
    node = cx.mod.resolve(node)
    kind = callee(node) if isinstance(node, pyast.Call) else ""
    if kind in ("AFTER_WORK", "AfterWork", "AfterWorkOptionTarget"):  # the legacy wrappers
        return _target(cx, kwarg(node, "agent", 0) or kwarg(node, "after_work_option", 0), at)
    if kind == "AgentTarget":
        name = cx.agent_name(kwarg(node, "agent", 0))
        if name is not None:
            return name
    if kind == "AgentNameTarget":
        raw = cx.mod.string(kwarg(node, "agent_name", 0))
        if raw is not None and raw in cx.names.map:
            return cx.names.map[raw]
    if kind in _BUILTIN_TARGETS:
        return _BUILTIN_TARGETS[kind]
    if kind in _UNEXPRESSED:
        return ("unexpressed", kind, node)
    if isinstance(node, pyast.Attribute) and node.attr in _AFTER_WORK_OPTIONS:  # AfterWorkOption.TERMINATE
        return _AFTER_WORK_OPTIONS[node.attr]
    if isinstance(node, pyast.Constant) and isinstance(node.value, str):
        if node.value.lower() in _OPTION_STRINGS:
            return _OPTION_STRINGS[node.value.lower()]
        if node.value in cx.names.map:  # SwarmResult(agent="name")
            return cx.names.map[node.value]
    name = cx.agent_name(node)  # the legacy API names agents directly
    if name is not None:
        return name
    cx.b.note("TF408", f"target `{pyast.unparse(node) if node is not None else '?'}` cannot be expressed; "
              f"approximated by the pattern's initial agent, `{cx.initial}`", pos(node or at))
    return cx.initial


def _alternatives(cx: Ctx, node: Optional[pyast.AST], fn, depth: int = 0) -> list[pyast.AST]:
    """The values an expression in a tool can take: both sides of `a if c else b`, every
    assignment of a local variable, every value of a dict literal it indexes."""
    if node is None or depth > 6:
        return [node] if node is not None else []
    if isinstance(node, pyast.IfExp):
        return _alternatives(cx, node.body, fn, depth + 1) + _alternatives(cx, node.orelse, fn, depth + 1)
    if isinstance(node, pyast.Name) and fn is not None:
        values = _local_values(fn, node.id)
        if values:
            return [v for value in values for v in _alternatives(cx, value, fn, depth + 1)]
    if isinstance(node, pyast.Subscript):
        d = cx.mod.resolve(node.value)
        if isinstance(d, pyast.Name) and fn is not None:
            local = _alternatives(cx, d, fn, depth + 1)
            d = local[0] if len(local) == 1 else d
        if isinstance(d, pyast.Dict):
            return [v for value in d.values for v in _alternatives(cx, value, fn, depth + 1)]
    if isinstance(node, pyast.Call) and callee(node) in ("AgentTarget", "AgentNameTarget"):
        return _target_alternatives(cx, node, fn, depth)
    return [node]


def _local_values(fn, name: str) -> list[pyast.AST]:
    """Every value a function assigns to its local `name`."""
    return [st.value for st in pyast.walk(fn) if isinstance(st, (pyast.Assign, pyast.AnnAssign))
            and st.value is not None
            and any(isinstance(t, pyast.Name) and t.id == name
                    for t in (st.targets if isinstance(st, pyast.Assign) else [st.target]))]


def _target_alternatives(cx: Ctx, node: pyast.Call, fn, depth: int) -> list[pyast.AST]:
    """`AgentTarget(x)` where `x` takes several values in the tool (`a if c else b`, a local
    assigned in branches, a dict lookup): one target per value."""
    arg = kwarg(node, "agent", 0) if callee(node) == "AgentTarget" else kwarg(node, "agent_name", 0)
    if not isinstance(arg, (pyast.Name, pyast.IfExp, pyast.Subscript)):
        return [node]
    alts = _alternatives(cx, arg, fn, depth + 1)
    if not alts or alts == [arg] or (len(alts) == 1 and cx.scan.agent_of(arg) is not None):
        return [node]
    out: list[pyast.AST] = []
    for alt in alts:
        if isinstance(alt, pyast.Call) and callee(alt) in ("AgentTarget", "AgentNameTarget"):
            out.append(alt)
            continue
        key = "agent" if callee(node) == "AgentTarget" else "agent_name"
        new = pyast.Call(func=node.func, args=[], keywords=[pyast.keyword(arg=key, value=alt)])  # type: ignore[call-overload]
        out.append(pyast.copy_location(new, alt))
    return out


def _tool_targets(cx: Ctx, fn, depth: int = 0) -> list[tuple[object, pyast.AST]]:
    """The targets of the ReplyResult / SwarmResult values a tool (or a helper it returns) can return."""
    out: list[tuple[object, pyast.AST]] = []
    if fn is None or depth > 3:
        return out
    for n in pyast.walk(fn):
        if isinstance(n, pyast.Call) and callee(n) in TOOL_RESULTS:
            tn = kwarg(n, "target") if callee(n) == "ReplyResult" else kwarg(n, "agent")
            if tn is None:
                continue
            for alt in _alternatives(cx, tn, fn):
                out.append((_target(cx, alt, n), alt))
        elif isinstance(n, pyast.Return) and isinstance(n.value, pyast.Call) \
                and isinstance(n.value.func, pyast.Name) and n.value.func.id in cx.mod.functions \
                and callee(n.value) not in TOOL_RESULTS:
            helper = cx.mod.functions[n.value.func.id]
            if helper is not fn:
                out += _tool_targets(cx, helper, depth + 1)
    out.sort(key=lambda ta: (getattr(ta[1], "lineno", 0), getattr(ta[1], "col_offset", 0)))
    return out


def _agent_rules(cx: Ctx, a: Agent, kind: str) -> None:
    """X's rules in AG2's order: context conditions, LLM conditions, tool targets, after-works."""
    b = cx.b
    for call in a.context:  # 1. context conditions
        _condition_rule(cx, a, call)
    used_tools: set[str] = set()
    for call in a.llm:  # 2. LLM conditions
        _llm_handoff(cx, a, call, used_tools)
    for kind, reg, g in a.guardrails:  # a guardrail that fires: its target speaks next (before after-works)
        _guardrail_handoff(cx, a, kind, reg, g, used_tools)
    for fn_node in a.functions:  # 3. tools returning ReplyResult(target=...)
        _tool_rules(cx, a, fn_node)
    for call in a.after_conditional:  # 4. after-work (conditional, then unconditional)
        _condition_rule(cx, a, call)
    if a.after_work is not None:
        t = _target(cx, a.after_work, a.after_work)
        if _unexpressed(t):
            _unexpressed_choice(cx, a.name, t)
        elif t == ("group_manager",):
            b.note("TF403", "GroupManagerTarget as after-work lets the manager's LLM pick; the agent gets one "
                   f"routing tool per agent, {_REPEAT}, and the next agent when it calls none", pos(a.after_work))
            _routing_choice(cx, a.name, list(cx.by_name), a.after_work)
        else:
            b.rule(a.name, t)


_GUARDRAILS = ("RegexGuardrail", "LLMGuardrail", "Guardrail")


def _guardrail_handoff(cx: Ctx, a: Agent, kind: str, reg: pyast.Call, g: pyast.AST, used_tools: set[str]) -> None:
    """A guardrail of X with target T: a routing tool `X -> T` named after the guardrail, TF406 (the
    guardrail's check decides, not X's model; its activation message replaces X's reply)."""
    b, mod = cx.b, cx.mod
    cls = callee(g) if isinstance(g, pyast.Call) else ""
    known = cls in _GUARDRAILS or cls in subclasses(mod, _GUARDRAILS)
    target = kwarg(g, "target", 2) if known else None
    t = _resolve_target(cx, _target(cx, target, g), g, a.name) if target is not None else None
    how = GUARDRAIL_WHEN[kind]
    if t is None:
        b.note("TF406", f"`{one_line(reg)}`: when the guardrail fires ({how}), its activation message replaces "
               f"`{a.name}`'s reply and its target speaks next, before `{a.name}`'s after-work; "
               f"{'its target is not read' if known else 'the guardrail is not one the migrator reads'}: the "
               "flow has no such rule", pos(reg))
        return
    raw = mod.string(kwarg(g, "name", 0)) or "guardrail"
    tool = tool_name(f"guardrail_{raw}")
    i = 2
    while tool in used_tools:
        tool, i = f"{tool_name(f'guardrail_{raw}')}_{i}", i + 1
    used_tools.add(tool)
    condition = mod.string(kwarg(g, "condition", 1))
    b.note("TF406", f"guardrail `{raw}` of `{a.name}` ({cls}, {kind}): when it fires ({how}), its activation "
           f"message replaces `{a.name}`'s reply and its target speaks next, before `{a.name}`'s after-work; "
           "approximated by a routing tool (the guardrail's check decides, not the agent's model)", pos(reg))
    b.handoff(a.name, t, tool, condition or f"Guardrail {raw} fired")


def _resolve_target(cx: Ctx, t, at, x: str):
    """GroupManagerTarget as a condition's target: the initial agent (TF408); a target the flow has
    no word for: one agent, or None (the rule is left out, `_unexpressed_rule`)."""
    if _unexpressed(t):
        return _unexpressed_rule(cx, x, t)
    if t == ("group_manager",):
        cx.b.note("TF408", "GroupManagerTarget as the target of a condition lets the manager's LLM pick; "
                  f"approximated by the pattern's initial agent, `{cx.initial}`", pos(at))
        return cx.initial
    return t


def _condition_target(cx: Ctx, call: pyast.Call, x: str):
    return _resolve_target(cx, _target(cx, kwarg(call, "target", 0), call), call, x)


def _llm_handoff(cx: Ctx, a: Agent, call: pyast.Call, used_tools: set[str]) -> None:
    """`OnCondition(target=T, condition=StringLLMCondition(prompt=P))`: a routing tool to T."""
    b, mod = cx.b, cx.mod
    t = _condition_target(cx, call, a.name)
    _binds(cx, call)
    if t is None:
        return
    cond = mod.resolve(kwarg(call, "condition", 1))
    prompt = None
    if isinstance(cond, pyast.Call) and callee(cond) == "StringLLMCondition":
        prompt = mod.string(kwarg(cond, "prompt", 0))
    elif isinstance(cond, pyast.Constant) and isinstance(cond.value, str):
        prompt = cond.value  # the legacy ON_CONDITION(target, condition="...")
    elif isinstance(cond, pyast.Call):
        b.note("TF406", f"LLM condition `{callee(cond)}` uses a prompt built from context; the routing tool "
               "gets a generic description", pos(cond))
    if kwarg(call, "available") is not None:
        b.note("TF406", "the `available=` condition of this handoff cannot be expressed; the routing tool is "
               "always available", pos(kwarg(call, "available")))
    label = t if isinstance(t, str) else {"initiator": "user", "terminate": "end", "stay": "self"}.get(t[0], "next")
    tool = {"end": "end_conversation", "user": "revert_to_user"}.get(label, f"transfer_to_{label}") \
        if not isinstance(t, str) else f"transfer_to_{label}"
    i = 2
    while tool in used_tools:
        tool = f"transfer_to_{label}_{i}"
        i += 1
    used_tools.add(tool)
    b.handoff(a.name, t, tool, prompt or f"Hand the conversation to {label}")


def _tool_rules(cx: Ctx, a: Agent, fn_node: pyast.AST) -> None:
    """A tool returning `ReplyResult(target=T)`: `X -> T when tool f`; several targets: one routing
    tool per target (TF406)."""
    b, mod = cx.b, cx.mod
    fn = function_def(mod, fn_node)
    if fn is None or isinstance(fn, pyast.Lambda):
        return
    targets: list = []
    for t, at in _tool_targets(cx, fn):
        t = _resolve_target(cx, t, at, a.name)
        if t is not None and t not in targets:
            targets.append(t)
    if not targets:
        return
    raw = getattr(fn_node, "_turnflow_tool", None) or fn.name
    tool = tool_name(raw)
    if tool != raw:
        b.note("TF402", f"tool name `{raw}` is not a valid flow NAME; renamed to `{tool}`", pos(fn))
    if len(targets) == 1:
        b.add_tool(a.name, tool)
        b.rule(a.name, targets[0], [("tool", tool)])
        return
    labels = [t if isinstance(t, str) else {"initiator": cx.user or "user", "terminate": "end"}.get(t[0], t[0])
              for t in targets]
    split = [f"{tool}_to_{label}" for label in labels]
    b.note("TF406", f"tool `{raw}` chooses its target at run time ({bounded(labels)}); .flow routes on which "
           "tool was called, so it is split into one routing tool per reachable target ("
           + bounded(f"`{s}`" for s in split) + f"): bind each to `{raw}`", pos(fn))
    doc = pyast.get_docstring(fn) or f"Call {raw}"
    doc = doc.strip().splitlines()[0] if doc.strip() else f"Call {raw}"
    for t, label, s in zip(targets, labels, split):
        b.handoff(a.name, t, s, f"{doc} (then {label} speaks)" if isinstance(t, str) or t == ("initiator",)
                  else f"{doc} ({label})")


def _show(t) -> str:
    if isinstance(t, str):
        return t
    return t[0]


def _show_cond(mod: Module, cond) -> str:
    if isinstance(cond, pyast.Call) and callee(cond) == "ExpressionContextCondition":
        expr = mod.resolve(kwarg(cond, "expression", 0))
        if isinstance(expr, pyast.Call):
            text = mod.string(kwarg(expr, "expression", 0))
            if text is not None:
                return text
    return pyast.unparse(cond) if cond is not None else "?"


_VAR = re.compile(r"\$\{([^{}]*)\}")  # no `{` inside: linear on runs of `${`


def _binds(cx: Ctx, call: pyast.Call) -> None:
    """TF411 when a condition call does not bind to AG2's signature (`OnCondition(target, cond)`:
    its fields are keyword-only; the program fails there)."""
    a = surface.api("ag2", callee(call))
    bound = surface.bind(call, a) if a is not None else None
    if bound is not None and bound.problem is not None:
        node, error = bound.problem
        cx.b.note("TF411", f"`{one_line(call, 50)}` does not bind to AG2's signature: {error} (the program fails "
                  "here); the flow reads it as if it were written with keywords", pos(node))


def _condition_rule(cx: Ctx, a: Agent, call: pyast.Call) -> None:
    """A context condition's rule; none when its target is one the flow has no word for (reported)."""
    target = _condition_target(cx, call, a.name)
    if target is None:
        _binds(cx, call)
        return
    _context_rule(cx, a, call, target)


def _context_rule(cx: Ctx, a: Agent, call: pyast.Call, target) -> None:
    b, mod = cx.b, cx.mod
    _binds(cx, call)
    if callee(call) == "OnContextCondition" and kwarg(call, "available") is not None:
        b.note("TF406", "the `available=` condition of this context condition cannot be expressed; the rule "
               "applies whenever its test holds", pos(kwarg(call, "available")))
    cond = mod.resolve(kwarg(call, "condition", 1))
    kind = callee(cond) if isinstance(cond, pyast.Call) else ""
    if isinstance(cond, pyast.Constant) and isinstance(cond.value, str):
        kind = "legacy"  # the legacy swarm API: a context variable name, tested for truthiness
    elif kind == "ContextExpression":
        kind = "expression"
    try:
        if kind == "legacy":
            var = cond.value  # type: ignore[union-attr]
            b.note("TF406", f"the condition tests whether `{var}` is truthy; approximated by "
                   f"`context.{var} == true`", pos(cond))
            terms: list = [("context", var, True)]
        elif kind == "StringContextCondition":
            var = mod.string(kwarg(cond, "variable_name", 0))
            if var is None:
                raise _Unexpressible("the variable name is not a string literal")
            b.note("TF406", f"StringContextCondition tests whether `{var}` is truthy; approximated by "
                   f"`context.{var} == true`", pos(cond))
            terms = [("context", var, True)]
        elif kind in ("ExpressionContextCondition", "expression"):
            expr = cond if kind == "expression" else mod.resolve(kwarg(cond, "expression", 0))
            if isinstance(expr, pyast.Call) and callee(expr) == "ContextExpression":
                text = mod.string(kwarg(expr, "expression", 0))
            else:
                text = None
            if text is None:
                raise _Unexpressible("the expression is not a string literal")
            terms, approx = _expression(text)
            if approx:
                b.note("TF406", f"context expression {json.dumps(text)}: {approx}", pos(cond))
        else:
            raise _Unexpressible(f"`{kind or '?'}` conditions cannot be read")
    except _Unexpressible as why:
        b.note("TF406", f"condition cannot be expressed ({why}); the rule is kept as a comment",
               pos(cond if cond is not None else call))
        b.comment(f"{a.name} -> {_show(target)} when {_show_cond(mod, cond)}")
        return
    keys: dict[str, str] = {}
    b.rule(a.name, target, [_rekey(cx, t, call, keys) for t in terms])


def _rekey(cx: Ctx, t, at: pyast.AST, keys: dict[str, str]):
    """A term with its context keys made flow NAMEs (one TF402 per renamed key)."""
    if t[0] in ("context", "compare"):
        if t[1] not in keys:
            keys[t[1]] = _key(cx, t[1], at)
        return (t[0], keys[t[1]]) + tuple(t[2:])
    if t[0] in ("any", "all"):
        return (t[0], [_rekey(cx, x, at, keys) for x in t[1]])
    if t[0] == "not":
        return ("not", _rekey(cx, t[1], at, keys))
    return t


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_OPS = {pyast.Eq: "==", pyast.Is: "==", pyast.NotEq: "!=", pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">",
        pyast.GtE: ">="}
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _python_syntax(text: str) -> str:
    """AG2's symbolic operators (`!` before `${` or `(`, ` & `, ` | `) as Python keywords,
    outside string literals, as ContextExpression reads them."""
    out, last = [], 0
    for m in _QUOTED.finditer(text):
        out.append(_symbols(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_symbols(text[last:]))
    return "".join(out)


def _symbols(part: str) -> str:
    part = re.sub(r"!\s*(\$\{|\()", r"not \1", part)
    part = re.sub(r"\s+&\s+", " and ", part)
    return re.sub(r"\s+\|\s+", " or ", part)


def _expression(text: str) -> tuple[list, str]:
    """A ContextExpression → the terms of one rule (all must hold): `context.k == v`,
    comparisons, `len(context.k) OP v`, `any` / `all` / `not`. Raises _Unexpressible for
    anything else (a variable compared with a variable, arithmetic, calls other than `len`)."""
    names: dict[str, str] = {}

    def sub(m):
        ident = f"__ctx_{len(names)}"
        names[ident] = m.group(1).strip()
        return ident

    py = _VAR.sub(sub, _python_syntax(text))
    try:
        tree = pyast.parse(py, mode="eval").body
    except SyntaxError:
        raise _Unexpressible(f"{json.dumps(text)} is not a valid expression") from None
    except (RecursionError, MemoryError):  # nested past what Python's parser reads
        raise _Unexpressible("the expression is nested too deeply to read") from None
    approx: list[str] = []

    def value(n):
        if isinstance(n, pyast.Constant) and (n.value is None or isinstance(n.value, (bool, int, float, str))):
            return n.value
        if isinstance(n, pyast.UnaryOp) and isinstance(n.op, pyast.USub) and isinstance(n.operand, pyast.Constant) \
                and isinstance(n.operand.value, (int, float)) and not isinstance(n.operand.value, bool):
            return -n.operand.value
        if isinstance(n, pyast.Name) and n.id in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[n.id]
        raise _Unexpressible(f"`{pyast.unparse(n)}` is not a literal")

    def var(n):
        if isinstance(n, pyast.Name) and n.id in names:
            return names[n.id]
        return None

    def length(n):
        if isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name) and n.func.id == "len" \
                and len(n.args) == 1 and not n.keywords:
            return var(n.args[0])
        return None

    def compare(left, op: str, right):
        if var(left) is None and length(left) is None:
            left, right, op = right, left, _FLIP[op]
        k, ln = var(left), length(left)
        if k is None and ln is None:
            raise _Unexpressible(f"`{pyast.unparse(left)} {op} {pyast.unparse(right)}` compares no context "
                                 "variable with a literal")
        v = value(right)
        if ln is not None:
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise _Unexpressible(f"`len(${{{ln}}})` is compared with `{pyast.unparse(right)}`, not a number")
            if _holds(0, op, v):
                approx.append(f"AG2 counts the length of a value that has none (a number, null) as 0; "
                              f"`len(context.{ln}) {op} {pyast.unparse(right)}` is false there")
            return ("compare", ln, op, v, True)
        return ("context", k, v) if op == "==" else ("compare", k, op, v)

    def term(n):
        if isinstance(n, pyast.BoolOp):
            kind = "any" if isinstance(n.op, pyast.Or) else "all"
            parts = [p for v in n.values for p in (lambda t: t[1] if t[0] == kind else [t])(term(v))]
            return (kind, parts)
        if isinstance(n, pyast.Compare):
            pairs = []
            left = n.left
            for op, right in zip(n.ops, n.comparators):
                sym = _OPS.get(type(op))
                if sym is None:
                    name = {pyast.IsNot: "is not", pyast.In: "in", pyast.NotIn: "not in"}.get(type(op),
                                                                                               type(op).__name__)
                    raise _Unexpressible(f"the comparison `{name}` cannot be expressed")
                pairs.append(compare(left, sym, right))
                left = right
            return pairs[0] if len(pairs) == 1 else ("all", pairs)
        if isinstance(n, pyast.UnaryOp) and isinstance(n.op, pyast.Not):
            return ("not", term(n.operand))
        if var(n) is not None:
            approx.append(f"`${{{var(n)}}}` (truthy) approximated by `context.{var(n)} == true`")
            return ("context", var(n), True)
        if isinstance(n, pyast.Call):
            raise _Unexpressible(f"`{callee(n)}(...)` cannot be expressed")
        raise _Unexpressible(f"`{pyast.unparse(n)}` cannot be expressed")

    t = term(tree)
    return (list(t[1]) if t[0] == "all" else [t]), "; ".join(approx)


def _holds(x, op: str, v) -> bool:
    return {"==": x == v, "!=": x != v, "<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[op]
