"""Classic GroupChat (AutoGen 0.2 / AG2 ≤ 0.9) in a Python source → `.flow`.

Semantics preserved (docs/migrate.md has the full table):
- the eligible successors of a speaker X come from `allowed_or_disallowed_speaker_transitions`
  (disallowed is inverted from the complete graph with self-loops), or from
  `allow_repeat_speaker` when there is no dict; an agent that is not a key ends
  the chat (`terminate "no_eligible_speaker"`); a key with an empty list means every agent;
- exactly one eligible successor is chosen without the LLM (`X -> Y`);
- `round_robin` picks the first eligible agent after X in `agents` order;
- `auto` (and approximated methods) gives X one routing tool per eligible successor plus
  the round-robin fallback;
- `max_round` counts the opening message: `start` is the agent calling
  `initiate_chat(manager, ...)` and `max_turns` is `max_round`.
"""

from __future__ import annotations

import ast as pyast
import json
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Optional

from turnflow.frameworks.ag2 import reader_groupchat_tools as classic_tools
from turnflow.migrate import surface
from turnflow.migrate.common import (MAX_ROUTES, FlowBuilder, Migration, Names, Pos, block_names, fail, line_ref,
                                     render, tool_name)
from turnflow.frameworks.ag2.reader_groupchat_rotation import AllBut, Rotation
from turnflow.migrate.pyread import _binding_key  # the name a variable or `self.x` binds
from turnflow.migrate.pyread import attribute_changes as _attribute_changes  # `x.attr = v`, `x.attr.append(v)`
from turnflow.migrate.pyread import change_sites, changed_inside  # the statements that may change an object
from turnflow.migrate.pyread import (Module, agent_classes, subclasses, assigned_name, callee, calls, filled_in_loop,
                                     is_agent_call, is_literal, kwarg, loop_message, manager_termination,
                                     note_choices, one_line, parse_module, pos, scopes, termination_test,
                                     why_not_literal)
from turnflow.source import SourceText
from turnflow.diagnostics.listing import bounded

IGNORED = ("send_introductions", "select_speaker_message_template",
           "select_speaker_prompt_template", "select_speaker_auto_multiple_template",
           "select_speaker_auto_none_template", "max_retries_for_selecting_speaker",
           "role_for_select_speaker_messages", "enable_clear_history", "select_speaker_auto_llm_config",
           "select_speaker_transform_messages", "admin_name")
METHODS = ("auto", "manual", "random", "round_robin")


class _NotLit:
    """Marks a keyword argument that is present but not a literal."""


_NOTLIT = _NotLit()


@dataclass
class Agent:
    var: str
    raw: str
    name: str
    call: pyast.Call
    description: Optional[str] = None
    system_message: Optional[str] = None
    termination: Optional[pyast.AST] = None


@dataclass
class Classic:
    mod: Module
    names: Names = field(default_factory=Names)
    agents: dict[int, Agent] = field(default_factory=dict)  # by the id of the constructor call
    scope: Optional[str] = None
    descriptions: Optional[dict[str, str]] = None  # routing-tool descriptions by agent name (_describe)

    def agent_of(self, node: Optional[pyast.AST]) -> Optional[Agent]:
        node = self.mod.resolve(node)
        if isinstance(node, pyast.Call):
            return self.agents.get(id(node))
        return None


def migrate(text: str, path: str, src: Optional[SourceText] = None) -> Migration:
    src = src or SourceText(text, path)
    mod = parse_module(text, path, src)
    for call in calls(mod.tree):  # AG2's own classes, bound to their signatures: settings read by name
        cls = _framework_class(mod, callee(call))
        if cls is not None:
            problem = surface.as_keywords(call, surface.API[("ag2", cls)])
            if problem is not None:
                call._turnflow_unbound = problem  # type: ignore[attr-defined]  # TF411 where the chat is read
    classes = agent_classes(mod)
    group_classes = {"GroupChat"} | {n for n, c in mod.classes.items()
                                     if any(callee(base) == "GroupChat" for base in c.bases)}
    found: list[tuple[Classic, pyast.Call, list]] = []
    for scope in scopes(mod):
        group_calls = [c for c in scope.own_calls if callee(c) in group_classes]
        if group_calls:
            cx, renames = _scope_agents(scope, classes, group_classes)
            found += [(cx, call, renames) for call in group_calls]
    if not found:
        raise fail("TF401", "no `GroupChat(...)` call found: nothing to migrate", Pos(1, 1), path, src)
    names = block_names([(cx.scope, _bound_var(cx.mod, call)) for cx, call, _ in found])
    builders = []
    noted: set[int] = set()
    for (cx, call, renames), block in zip(found, names):
        if id(call) in cx.mod.in_loop:
            raise fail("TF401", "`GroupChat(...)` is built in a loop or comprehension; the migrator reads "
                       "code without running it and cannot tell which group chat runs", pos(call), path, src)
        _changed_after_built(cx.mod, call)
        cx.mod.take_choices()
        b = _group(cx, call, block)
        note_choices(cx.mod, b)
        if id(renames) not in noted:
            noted.add(id(renames))
            for renamed, message in renames:
                if renamed is None:  # a name that is not a literal
                    b.note("TF402", message, pos(call))
        builders.append(b)
    return render(builders, [f"Migrated by `turnflow migrate` from {path} (classic GroupChat)."],
                  path, src, "classic")


# the calls bound to AG2's signatures before they are read (a subclass of the file may have its own)
_BOUND = ("GroupChat", "GroupChatManager", "ConversableAgent", "AssistantAgent", "UserProxyAgent")


def _framework_class(mod: Module, name: str, depth: int = 0) -> Optional[str]:
    """The `_BOUND` class whose signature a call of `name` has: itself, or the one a subclass of the
    file inherits its `__init__` from (no `__init__` and no decorator on the way); None otherwise."""
    if name in _BOUND:
        return name
    cls = mod.classes.get(name)
    if cls is None or depth > 8 or cls.decorator_list or any(
            isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and st.name == "__init__" for st in cls.body):
        return None
    found = {_framework_class(mod, callee(base), depth + 1) for base in cls.bases} - {None}
    return found.pop() if len(found) == 1 else None


def _note_unbound(b: FlowBuilder, call: Optional[pyast.Call], what: str) -> None:
    """TF411 at the argument of a GroupChat / GroupChatManager call that does not bind."""
    problem = getattr(call, "_turnflow_unbound", None)
    if problem is not None and call is not None:
        node, error = problem
        fails = "" if "known only when the program runs" in error else " (the program fails here)"
        b.note("TF411", f"`{callee(call)}(...)` does not bind to AG2's signature: {error}{fails}; {what}", pos(node))


def _scope_agents(scope, classes: set[str], group_classes: set[str]) \
        -> tuple[Classic, list[tuple[Optional[Agent], str]]]:
    """The agents a scope constructs (its view of the module), and the renames to report: a name
    that is not a string literal (the variable's is used), one that is not a valid flow NAME."""
    view = scope.mod
    cx = Classic(view, scope=scope.name)
    renames: list[tuple[Optional[Agent], str]] = []
    for call in calls(view.tree):
        if callee(call) in group_classes or not is_agent_call(view, call, classes):
            continue
        var = _bound_var(view, call)
        raw = view.string(kwarg(call, "name", 0))
        if raw is None:
            if var is None:
                continue
            raw = var
            renames.append((None, f"the name of `{var}` is not a string literal; the variable name is used"))
        name, changed = cx.names.add(raw)
        agent = Agent(var=var or raw, raw=raw, name=name, call=call,
                      description=view.string(kwarg(call, "description")),
                      system_message=view.string(kwarg(call, "system_message", 1)),
                      termination=kwarg(call, "is_termination_msg"))
        cx.agents[id(call)] = agent
        if changed:
            renames.append((agent, f"agent name {json.dumps(raw)} is not a valid flow NAME; renamed to `{name}`"))
    return cx, renames



def _bound_var(mod: Module, call: pyast.Call) -> Optional[str]:
    return assigned_name(mod, call)


def _agent_list(cx: Classic, node: Optional[pyast.AST], what: str, at: pyast.AST) -> list[Agent]:
    mod = cx.mod
    elements = mod.elements(node)
    if elements is None:
        raise fail("TF401", f"{what} must be a list of agents written out in the file{why_not_literal(mod, node)}",
                   pos(node if node is not None else at), mod.path, mod.src)
    by_name: dict[str, Agent] = {}  # the agents so far by name (they are unique): linear in the agents
    for elt in elements:
        agent = cx.agent_of(elt)
        if agent is None:
            raise fail("TF401", f"`{pyast.unparse(elt)}` in {what} is not an agent "
                       f"created in this file{_why_not_agent(cx, elt)}", pos(elt), mod.path, mod.src)
        seen = by_name.get(agent.name)
        if seen == agent:
            continue
        if seen is not None:
            raise fail("TF401", f"two agents in {what} are named {json.dumps(agent.raw)}; AutoGen requires unique "
                       "names", pos(elt), mod.path, mod.src)
        by_name[agent.name] = agent
    return list(by_name.values())


# the GroupChat attributes that make the speaker graph: changing one after the GroupChat is built
# changes the chat that runs, and the migrator reads the constructor's arguments
_GRAPH_ATTRS = ("agents", "max_round", "speaker_selection_method", "allow_repeat_speaker",
                "allowed_or_disallowed_speaker_transitions", "speaker_transitions_type",
                "allowed_speaker_transitions_dict")


def _changed_after_built(mod: Module, call: pyast.Call) -> None:
    """TF401 at a statement that changes one of `_GRAPH_ATTRS` of the GroupChat `call` builds
    (`groupchat.max_round = 5`, `groupchat.agents.append(a)`): the flow would silently be the
    constructor's chat, not the one that runs."""
    for st, fns in change_sites(mod):
        if not isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.AnnAssign, pyast.Expr, pyast.Delete)):
            continue
        for base, attr in _attribute_changes(st):
            inside = changed_inside(fns, base)
            if attr not in _GRAPH_ATTRS or (fns and inside is None) or not _is_the_chat(mod, base, call):
                continue
            when = f"{inside}: if it runs, after it is built" if inside else "after it is built"
            raise fail("TF401", f"`{one_line(st)}` changes the GroupChat's `{attr}` {when}; the migrator "
                       "reads what `GroupChat(...)` is given: pass it there, or migrate the running object "
                       "with --import", pos(st), mod.path, mod.src)


def _is_the_chat(mod: Module, base: pyast.expr, call: pyast.Call) -> bool:
    """`base` is the GroupChat `call` builds: its variable, or `manager.groupchat` of a
    GroupChatManager built on it."""
    if isinstance(base, pyast.Attribute) and base.attr in ("groupchat", "_groupchat"):
        manager = mod.resolve(base.value)
        return isinstance(manager, pyast.Call) and mod.resolve(kwarg(manager, "groupchat", 0)) is call
    return mod.resolve(base) is call


_LIST_CHANGES = ("append", "extend", "insert", "remove")
_COMPOUND = (pyast.If, pyast.For, pyast.AsyncFor, pyast.While, pyast.Try, pyast.With, pyast.AsyncWith, pyast.Match,
             pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)


def _transition_changes(mod: Module, var: Optional[str]) -> list[tuple[str, pyast.AST, Optional[pyast.AST],
                                                                       pyast.stmt]]:
    """The statements that change the transitions dict `var` after its literal, in source order, as
    (kind, key, value, statement): `d[a] = [...]` ("set"), `d[a].append(x)` / `.insert(i, x)` /
    `.remove(x)` / `.extend(xs)` and `d[a] += xs` ("extend"). Any other change of `d` (`d.update(...)`,
    `del d[a]`, `d[a].pop()`, ...) is refused: the migrator would not know the transitions."""
    if var is None:
        return []
    out = []
    for st in pyast.walk(mod.tree):
        if not isinstance(st, pyast.stmt) or isinstance(st, _COMPOUND):
            continue  # a compound statement's own statements are visited too
        where = mod.uses.get(id(st))
        if where is None or where.in_def:
            continue  # a function body's own dict
        change = _transition_change(st, var)
        if change is not None:
            out.append((where.order, change, st))
        elif _touches(st, var):
            raise fail("TF401", f"the transitions dict `{var}` is changed by `{one_line(st)}`, which the migrator "
                       "does not follow; write the dict out (or set items with `d[a] = [...]`)", pos(st),
                       mod.path, mod.src)
    for st, fns in change_sites(mod):  # a function's change, whenever it runs (called or not)
        inside = changed_inside(fns, pyast.Name(id=var.split(".")[0])) if fns else None
        if inside is not None and not isinstance(st, _COMPOUND) \
                and (_transition_change(st, var) is not None or _touches(st, var)):
            raise fail("TF401", f"the transitions dict `{var}` is changed by `{one_line(st)}` {inside}: if it runs, "
                       "the chat has other transitions, which the migrator does not follow; write the dict out (or "
                       "set items with `d[a] = [...]` at module level)", pos(st), mod.path, mod.src)
    return [(kind, key, value, st) for _, (kind, key, value), st in sorted(out, key=lambda e: e[0])]


def _transition_change(st: pyast.stmt, var: str) -> Optional[tuple[str, pyast.AST, Optional[pyast.AST]]]:
    def item(node: pyast.AST) -> Optional[pyast.AST]:
        ok = isinstance(node, pyast.Subscript) and _binding_key(node.value) == var
        return node.slice if ok else None  # type: ignore[attr-defined]

    if isinstance(st, pyast.Assign) and len(st.targets) == 1 and item(st.targets[0]) is not None:
        return "set", item(st.targets[0]), st.value  # type: ignore[return-value]
    if isinstance(st, pyast.AugAssign) and isinstance(st.op, pyast.Add) and item(st.target) is not None:
        return "extend", item(st.target), st.value  # type: ignore[return-value]
    call = st.value if isinstance(st, pyast.Expr) else None
    if isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute) and call.func.attr in _LIST_CHANGES \
            and item(call.func.value) is not None and not call.keywords and call.args \
            and len(call.args) == (2 if call.func.attr == "insert" else 1):
        return call.func.attr, item(call.func.value), call.args[-1]  # type: ignore[return-value]
    return None


def _subscripted(node: pyast.AST) -> pyast.AST:
    """`d` of `d[a]` / `d[a][0]`."""
    while isinstance(node, pyast.Subscript):
        node = node.value
    return node


def _touches(st: pyast.stmt, var: str) -> bool:
    """`st` changes the dict `var` or one of its lists in a way `_transition_change` does not read."""
    for n in pyast.walk(st):
        if isinstance(n, pyast.Call) and isinstance(n.func, pyast.Attribute):
            obj = n.func.value
            if isinstance(obj, pyast.Subscript):
                obj = obj.value
            if _binding_key(obj) == var and n.func.attr not in ("get", "keys", "values", "items", "copy", "count",
                                                                 "index"):
                return True
        if isinstance(n, (pyast.Delete, pyast.AugAssign, pyast.Assign)):
            targets = n.targets if isinstance(n, (pyast.Delete, pyast.Assign)) else [n.target]
            if any(isinstance(t, pyast.Subscript) and _binding_key(_subscripted(t)) == var for t in targets):
                return True
    return False


def _apply_transition(cx: Classic, given: dict[str, list[str]], change: tuple, at: pyast.AST) -> None:
    """One change of the transitions dict (`_transition_changes`) applied to `given`."""
    mod = cx.mod
    kind, key_node, value_node, st = change
    key = cx.agent_of(key_node)
    if key is None:
        raise fail("TF401", "transition keys must be agent variables", pos(key_node), mod.path, mod.src)
    if kind == "set":
        given[key.name] = [a.name for a in _agent_list(cx, value_node, "a transition list", at)]
        return
    if key.name not in given:
        raise fail("TF401", f"`{one_line(st)}` changes the transitions of `{key.raw}`, which the dict does not "
                   "have yet (the program would fail with a KeyError)", pos(st), mod.path, mod.src)
    if kind == "extend":
        added = [a.name for a in _agent_list(cx, value_node, "a transition list", at)]
    else:
        agent = cx.agent_of(value_node)
        if agent is None:
            raise fail("TF401", f"`{pyast.unparse(value_node)}` is not an agent created in this file",
                       pos(value_node), mod.path, mod.src)
        added = [agent.name]
    if kind == "remove":
        if added[0] in given[key.name]:
            given[key.name].remove(added[0])
        return
    given[key.name] += [n for n in added if n not in given[key.name]]


def _transition_items(cx: Classic, b: FlowBuilder, var: Optional[str], call: pyast.Call,
                      disallowed: bool = False) -> list[tuple]:
    """The changes of the transitions dict `var` after its literal (refused in a loop; TF410 at the
    branch when one runs only under an `if` the chat is not in: the flow assumes it runs). A
    *disallowed* dict is inverted when the GroupChat is built, so a change after that is a TF409
    and not applied (an *allowed* dict is the GroupChat's own: later changes count)."""
    mod = cx.mod
    out = []
    for change in _transition_changes(mod, var):
        kind, k, v, st = change
        if id(st) in mod.in_loop:
            raise fail("TF401", "the transitions dict is filled in a loop; the migrator reads code without "
                       "running it: write the dict out", pos(k), mod.path, mod.src)
        where, at = mod.uses.get(id(st)), mod.uses.get(id(call))
        if disallowed and where is not None and at is not None and where.order > at.order:
            b.note("TF409", f"`{one_line(st)}` changes the disallowed transitions after the GroupChat is built "
                   f"({line_ref(call.lineno)}), which has already turned them into its allowed ones; the "
                   "change has no effect and the flow leaves it out", pos(st))
            continue
        if where is not None and where.chain and (at is None or where.chain[:len(at.chain)] != at.chain
                                                   or len(where.chain) > len(at.chain)):
            branch = mod.branches[where.chain[-1][0]]
            b.note("TF410", f"`{pyast.unparse(k)}`'s transitions are {'set' if kind == 'set' else 'changed'} in a "
                   f"branch ({line_ref(getattr(branch, 'lineno', 0))}), decided when the program runs; this flow "
                   f"follows that branch, `{one_line(st)}` ({line_ref(st.lineno)})",
                   pos(branch.test if isinstance(branch, pyast.If) else branch))
        out.append(change)
    return out



def _why_not_agent(cx: Classic, elt: pyast.AST) -> str:
    resolved = cx.mod.resolve(elt)
    if isinstance(resolved, pyast.Call):
        return f" (`{pyast.unparse(resolved.func)}(...)` is not an agent class the migrator knows)"
    if resolved is not None and (id(resolved) in cx.mod.in_loop
                                 or any(id(n) in cx.mod.in_loop for n in pyast.walk(resolved))):
        return " (it is created in a loop the migrator cannot unroll)"
    return ""


def _manager_and_initiator(cx: Classic, group_var: Optional[str], group_call: pyast.Call):
    mod = cx.mod
    managers: list[tuple[str, pyast.Call]] = []
    manager_classes = _manager_classes(mod)
    for call in calls(mod.tree):
        if callee(call) in manager_classes:
            gc = kwarg(call, "groupchat", 0)
            if mod.resolve(gc) is group_call:
                var = _bound_var(mod, call)
                managers.append((var or "", call))
    for _var, mcall in managers:
        for where in (mod, mod.parent):  # the scope, then the module (`a_initiate_chat` in `async def main()`)
            if where is None:
                continue
            for call in calls(where.tree):
                found = _started_by(where, call, mcall)
                if found is not None:
                    agent = where.resolve(found)
                    return mcall, cx.agents.get(id(agent)) if isinstance(agent, pyast.Call) else None, call
    return (managers[0][1] if managers else None), None, None


def _manager_classes(mod: Module) -> set[str]:
    """GroupChatManager and the file's subclasses of it (transitively)."""
    return subclasses(mod, ("GroupChatManager",))


def _note_manager_overrides(mod: Module, b: FlowBuilder, manager: Optional[pyast.Call]) -> None:
    """A manager of a GroupChatManager subclass of the file: each method it (or a class between it and
    GroupChatManager) defines may change who speaks; TF404 at the method, the flow runs the chat as
    GroupChatManager does."""
    name = callee(manager) if manager is not None else "GroupChatManager"
    seen: set[str] = set()
    while name in mod.classes and name not in seen:
        seen.add(name)
        cls = mod.classes[name]
        for fn in cls.body:
            if isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
                b.note("TF404", f"`{name}` overrides `{fn.name}` of GroupChatManager; what it changes is not read: the "
                       "flow runs the chat as GroupChatManager does", pos(fn))
        name = next((callee(base) for base in cls.bases if callee(base) in _manager_classes(mod)), "")


# the methods that start a chat with the manager as `recipient` (first argument): AG2 0.9's `run` /
# `a_run` call `initiate_chat` (in a thread) with the same `recipient`, `max_turns`, `message`
_STARTS = ("initiate_chat", "a_initiate_chat", "run", "a_run")


def _note_run(b: FlowBuilder, init_call: Optional[pyast.Call]) -> None:
    """The call that starts the chat, bound to `initiate_chat`'s signature: a finding at each
    argument the flow does not model (`max_turns`)."""
    if init_call is not None and callee(init_call) in ("run", "a_run"):
        # `run(recipient, clear_history, silent, cache, max_turns, ...)`: its own signature, wider
        # than `initiate_chat`'s; what decides turns is `max_turns`, as there
        turns = kwarg(init_call, "max_turns", 4)
        if turns is not None:
            b.note("TF405", f"`{one_line(turns, 30)}` as `max_turns` of `{callee(init_call)}`: the initiator and the "
                   "manager exchange this many turns: after the group chat ends and the initiator replies, the "
                   "group chat runs again; the flow shows one run", pos(turns))
        return
    if init_call is None or callee(init_call) not in ("initiate_chat", "a_initiate_chat"):
        return
    bound = surface.bind(init_call, surface.API[("ag2", "ConversableAgent.initiate_chat")])
    if bound.problem is not None:
        node, error = bound.problem
        b.note("TF411", f"`{one_line(init_call, 40)}` does not bind to `initiate_chat`'s signature: {error}; what "
               "it passes is not read (a `max_turns` among it runs the chat again)", pos(node))
        return
    for code, node, message in surface.not_modelled(bound):
        b.note(code, f"`{one_line(node, 30)}` as {message}", pos(node))


def _started_by(mod: Module, call: pyast.Call, mcall: pyast.Call) -> Optional[pyast.AST]:
    """The sender when `call` starts the chat of the manager `mcall`: `sender.initiate_chat(manager)`,
    `sender.initiate_chats([{"recipient": manager, ...}])`, `initiate_chats([{"sender": s,
    "recipient": manager, ...}])` (AG2 runs the queue in order: the chat is started by that sender)."""
    name = callee(call)
    method = isinstance(call.func, pyast.Attribute)
    if name in _STARTS and method:
        if mod.resolve(kwarg(call, "recipient", 0)) is mcall:
            return call.func.value  # type: ignore[attr-defined]
        if name in ("initiate_chat", "a_initiate_chat") and mod.resolve(call.func.value) is mcall:  # type: ignore[attr-defined]
            # `manager.initiate_chat(agent, message=m)`: the agent answers m to the manager, and its
            # reply opens the group chat (`run_chat(sender=agent)`): it speaks first
            return kwarg(call, "recipient", 0)
        return None
    if name not in ("initiate_chats", "a_initiate_chats"):
        return None
    for element in mod.elements(kwarg(call, "chat_queue", 0)) or []:
        item = mod.resolve(element)
        if not isinstance(item, pyast.Dict):
            continue
        entries = {mod.string(k): v for k, v in zip(item.keys, item.values) if k is not None}
        if mod.resolve(entries.get("recipient")) is mcall:
            # the dict's "sender" (the function form, `autogen.initiate_chats`), else the method's owner
            sender = entries.get("sender")
            return sender if sender is not None or not method else call.func.value  # type: ignore[attr-defined]
    return None


def _group(cx: Classic, call: pyast.Call, block: str) -> FlowBuilder:
    mod = cx.mod
    path, src = mod.path, mod.src
    group_var = _bound_var(mod, call)
    agents_node = kwarg(call, "agents", 0)
    if filled_in_loop(mod, agents_node):
        raise fail("TF401", loop_message(agents_node, mod), pos(agents_node), path, src)
    agents = _agent_list(cx, agents_node, "`agents`", call)
    if len(agents) < 2:
        raise fail("TF401", "a group chat needs at least two agents (a .flow workflow has two or more "
                   f"participants); this one has {len(agents)}", pos(agents_node or call), path, src)
    manager, initiator, init_call = _manager_and_initiator(cx, group_var, call)

    b = FlowBuilder(block)
    _note_unbound(b, call, "the settings it passes are not read: the flow uses what the call names, and AG2's "
                  "defaults for the rest")
    _note_unbound(b, manager, "the settings it passes are not read (an `is_termination_msg` among them ends the "
                  "chat)")
    _note_run(b, init_call)
    _note_manager_overrides(mod, b, manager)

    def lit(name: str, default):
        # GroupChat is a dataclass: agents, messages, max_round may be positional
        node = kwarg(call, name, {"max_round": 2}.get(name))
        if node is None:
            return default, None
        value = mod.literal(node)
        if not is_literal(value):
            return _NOTLIT, node
        return value, node

    max_node = kwarg(call, "max_round", 2) or _super_init_arg(mod, call, "max_round", 2)
    method, custom_fn, method_node = _selection_method(mod, call)
    names = [a.name for a in agents]
    rota = Rotation(names)
    allowed = _eligibility(cx, b, call, rota, lit)
    dict_mode = _dict_mode(call)

    # -- participants, start, caps -------------------------------------------
    init_agent = initiator
    outside = init_agent is not None and init_agent.name not in names
    b.section()
    order = [init_agent] + agents if outside else agents
    _participants(b, order, init_agent, call)
    _note_changed_agents(mod, b, order, manager)
    _note_unbound_tools(mod, b, order)

    b.section()
    if init_agent is None:
        b.note("TF408", "no call that starts this group chat was found (`sender.initiate_chat(manager, ...)` or "
               "`initiate_chats([{\"sender\": ..., \"recipient\": manager}])` with the manager of this file; one that "
               "reaches the manager through a function's return value or an object's attribute is not followed); assumed "
               "the first "
               f"agent, `{names[0]}`, sends the opening message", pos(call))
        start = names[0]
    else:
        start = init_agent.name
    b.start(start)
    max_round = 10 if max_node is None else whole_number(mod, b, max_node, "max_round", 10, "AutoGen's default")
    b.max_turns(max_round)
    def eligible(x: str) -> Optional[Sequence[str]]:
        if x not in rota.index:  # the initiator outside the group: every agent is eligible
            return rota.all
        if x not in allowed:
            return None
        return rota.in_order(allowed[x]) or rota.all

    def after(x: str, e: Sequence[str]) -> str:
        return rota.after(x, e)

    speakers = [a.name for a in order]
    # -- termination -----------------------------------------------------------
    b.section()
    def successors(x: str) -> Sequence[str]:
        """Who may be picked after x (for agents' own termination checks)."""
        e = eligible(x)
        if e is None:
            return []
        if len(e) == 1 or method == "round_robin":
            return [after(x, e)]
        return e

    reasons = _end_reasons(cx, manager, custom_fn, speakers, names)
    _termination(cx, b, manager, agents, speakers, successors, read_manager=reasons is None)
    _tool_calls(cx, b, call, agents, custom_fn is not None or method == "custom")

    # -- transitions ------------------------------------------------------------
    if custom_fn is not None:
        handled = _custom(cx, b, custom_fn, method_node, speakers, names, eligible, after, reasons)
    elif method == "custom":
        handled = set()
        b.note("TF404", "the speaker selection method is not a function defined in this file; approximated as a "
               "choice by the speaker through routing tools, with the next eligible agent as fallback",
               pos(method_node))
    else:
        handled = set()
        if method in ("manual", "random"):
            b.note("TF404", f"speaker_selection_method={method!r} cannot be expressed; approximated as a choice "
                   "by the speaker through routing tools, with the next eligible agent as fallback",
                   pos(method_node))
    if method == "round_robin" and not dict_mode and not outside:
        b.section()
        b.rule(None, ("next",))
        handled = set(speakers)
    _speaker_rules(cx, b, call, method, method_node, [x for x in speakers if x not in handled], rota, eligible, after)
    return b


# what AG2 0.9.9 does, when the chat runs, with an agent (or the manager) changed after it is built
_AFTER_BUILT = {
    "_is_termination_msg": ("TF405", "AG2 tests each message with it when the chat runs (the manager's ends the "
                            "chat; an agent's, when it is picked to reply); the flow keeps the one the constructor "
                            "was given"),
    "update_max_consecutive_auto_reply": ("TF405", "AG2 ends the chat (or asks a person) when the agent is picked "
                                          "once more after this many automatic replies; the flow has no such "
                                          "limit"),
    "_max_consecutive_auto_reply": ("TF405", "as `update_max_consecutive_auto_reply`: the flow has no such limit"),
    "register_reply": ("TF404", "the reply function decides what the agent replies when it is picked (a None reply "
                       "ends the chat: AG2's `run_chat`, \"No reply generated\"; on the manager it may replace how "
                       "the chat runs); what it does is not read"),
}
# AG2 0.9.9 runs an agent's guardrails in every group chat (`GroupChat._run_input_guardrails`, before
# the agent replies, and `_run_output_guardrails`, on its reply): when one fires, its activation
# message replaces the reply and `guardrail.target.activate_target(groupchat)` makes its target the
# next speaker in a pattern (the GroupToolExecutor's next target, taken before any handoff)
_GUARDRAIL = ("TF406", "when the guardrail fires ({when}), its activation message replaces the agent's reply and, "
              "in a pattern, the guardrail's target speaks next, before the agent's handoffs; the flow has no "
              "such rule (a classic chat keeps its order, but a text test on the reply sees the activation "
              "message)")
GUARDRAIL_WHEN = {"input": "on the messages the agent is about to answer", "output": "on the agent's reply"}
GUARDRAIL_METHODS = {}  # `register_output_guardrail` -> "output", ... (the patterns read them: reader_patterns)
for _kind, _when in GUARDRAIL_WHEN.items():
    for _m in (f"register_{_kind}_guardrail", f"register_{_kind}_guardrails"):
        _AFTER_BUILT[_m] = (_GUARDRAIL[0], _GUARDRAIL[1].format(when=_when))
        GUARDRAIL_METHODS[_m] = _kind


_HANDOFF_LISTS = ("llm_conditions", "context_conditions", "after_works")
_AFTER_BUILT["handoffs"] = ("TF406", "the handoffs are read only through `handoffs.<method>(...)` (`add_llm_condition`, "
                            "`set_after_work`, ...); this change of its handoffs is not read")


def _agent_changes(st: pyast.AST) -> list[tuple[pyast.Name, str]]:
    """(the variable, the attribute or method) of each change a statement makes to an object after it
    is built: `x.attr = v`, `x.register_reply(...)` (`_AFTER_BUILT`), `x.handoffs.after_works.clear()`
    (read as "handoffs"); not `x.handoffs.<method>(...)` or `x.functions = ...`, read elsewhere."""
    if isinstance(st, pyast.Expr) and isinstance(st.value, pyast.Call) \
            and isinstance(st.value.func, pyast.Attribute) and st.value.func.attr in _AFTER_BUILT:
        found = [(st.value.func.value, st.value.func.attr)]
    elif isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.AnnAssign, pyast.Expr, pyast.Delete)):
        # (`x.attr = v`, `x.attr[k] = v`, `x.a, y.b = ...`, `del x.attr[k]`, `x.attr.append(v)`)
        found = _attribute_changes(st)
    else:
        return []
    out = []
    for obj, attr in found:
        if isinstance(obj, pyast.Attribute) and obj.attr == "handoffs" and attr in _HANDOFF_LISTS:
            obj, attr = obj.value, "handoffs"  # `x.handoffs.llm_conditions.append(c)`: not `x.handoffs.add_...`
        elif attr in ("handoffs", "functions") and (isinstance(st, pyast.Expr) or attr == "functions"):
            continue
        if isinstance(obj, pyast.Name):
            out.append((obj, attr))
    return out


def _note_changed_agents(mod: Module, b: FlowBuilder, agents: list[Agent], manager: Optional[pyast.Call],
                         read: frozenset = frozenset()) -> None:
    """A finding at each statement that changes an agent of the chat, or its manager, after it is
    built: `x.attr = v` (`x.attr += v`), `x.register_reply(...)`, `x.update_max_consecutive_auto_reply(n)`
    (`_AFTER_BUILT`; any other attribute is TF409: not read)."""
    built = {id(a.call): a.var for a in agents}
    if manager is not None:
        built[id(manager)] = "the manager"
    for st, fns in change_sites(mod):
        for obj, attr in _agent_changes(st):
            if attr in read:  # the front end reads these itself (a pattern's guardrails)
                continue
            inside = changed_inside(fns, obj)
            who = built.get(id(mod.resolve(obj))) if not fns or inside else None
            if who is None:
                continue
            when = f"{inside}: if it runs, after it is built" if inside else "after it is built"
            if who == "the manager" and attr in ("groupchat", "_groupchat"):
                raise fail("TF401", f"`{one_line(st, 50)}` gives the manager another group chat {when}; "
                           "the migrator reads the chat `GroupChatManager(groupchat=...)` is given: pass it there, "
                           "or migrate the running object with --import", pos(st), mod.path, mod.src)
            code, why = _AFTER_BUILT.get(attr, ("TF409", "set after the agent is built; not read (the flow keeps "
                                                "what its constructor was given)"))
            b.note(code, f"`{one_line(st, 50)}` changes {'`' + who + '`' if who != 'the manager' else who} {when}: "
                   f"{why}", pos(st))


def _note_unbound_tools(mod: Module, b: FlowBuilder, agents: list[Agent]) -> None:
    """TF411 at a tool registration of an agent of the chat that does not bind to AG2's signature."""
    members = {id(a.call) for a in agents}
    for reg, node, error in classic_tools.unbound_registrations(mod):
        if any(isinstance(n, pyast.Name) and id(mod.resolve(n)) in members for n in pyast.walk(reg)):
            b.note("TF411", classic_tools.registration_words(reg, error), pos(node))


def _participants(b: FlowBuilder, order: list[Agent], init_agent: Optional[Agent], call: pyast.Call) -> None:
    for a in order:
        role = "initiator" if init_agent is not None and a is init_agent else None
        if a.name != a.raw and a.name not in b.participant_set:
            b.note("TF402", f"agent name {json.dumps(a.raw)} is not a valid flow NAME; renamed to `{a.name}`",
                   pos(kwarg(a.call, "name", 0) or a.call))
        # the agents' own `is_termination_msg` is read with the manager's (_termination); the notes
        # come first: a note is a comment above the *next* statement, this agent's participant
        for code, arg, message in surface.agent_findings(a.call, callee(a.call), skip=("is_termination_msg",)):
            b.note(code, message, pos(arg))
        b.participant(a.name, a.description, role)
    for name in IGNORED:
        node = kwarg(call, name)
        if node is not None:
            b.note("TF409", f"`{name}` has no equivalent in a .flow file; ignored", pos(node), comment=True)


def _tool_calls(cx: Classic, b: FlowBuilder, call: pyast.Call, agents: list[Agent], custom: bool) -> None:
    """`func_call_filter` (on unless a literal False): after X calls a tool that one agent E of the
    chat runs, E speaks next, before any other rule of X (`reader_groupchat_tools.py`)."""
    node = kwarg(call, "func_call_filter", 4)
    if node is not None and cx.mod.literal(node) is False:
        return
    pairs = classic_tools.handoffs(cx.mod, cx.agent_of, agents)
    if not pairs:
        return
    if custom:
        caller, runners, tool = pairs[0]
        b.note("TF404", f"`{caller.name}`'s tool `{tool.name}` is run by `{runners[0].name}`: AG2 "
               "(`func_call_filter`) picks the agent that runs a called tool only when the selection function "
               "returns a method name, not an agent; the flow does not show it", pos(tool.at))
        return
    b.section()
    _, runs = classic_tools.tools(cx.mod)
    # the innermost call around each name: the registration an owner of `runs` is part of
    enclosing = {id(n): c for c in calls(cx.mod.tree) for n in pyast.walk(c) if isinstance(n, pyast.Name)}
    for caller, runners, tool in pairs:
        # a registration (offering or running the tool) under an `if` / in a loop the chat is not in:
        # whether it ran decides who speaks after a call (TF410, through `note_choices`)
        cx.mod.note_guarded(tool.at, call)
        for owner in runs.get(tool.name, []):
            if cx.agent_of(owner) in runners:
                cx.mod.note_guarded(enclosing.get(id(owner), owner), call)
        if len(runners) > 1:
            b.note("TF406", f"`{caller.name}`'s tool `{tool.name}` is run by {bounded(r.name for r in runners)}: after "
                   "a call AG2 picks among them only (`func_call_filter`); the flow does not narrow the choice",
                   pos(tool.at))
            continue
        b.handoff(caller.name, runners[0].name, tool_name(tool.name), tool.description)


def _speaker_rules(cx: Classic, b: FlowBuilder, call: pyast.Call, method: str, method_node, speakers: list[str],
                   rota: Rotation, eligible, after) -> None:
    """Each speaker's rules from its eligible successors: a sink terminates, one successor is taken,
    round robin takes the next, the LLM's choice is routing tools + the next eligible agent."""
    llm = method in ("auto", "manual", "random", "custom")
    noted_llm = noted_cap = False
    for x in speakers:
        e = eligible(x)
        b.section()
        if e is None:
            b.rule(x, ("terminate", "no_eligible_speaker"))
            continue
        if len(e) == 1:
            b.rule(x, e[0])
            continue
        if method == "round_robin":
            b.rule(x, after(x, e))
            continue
        if llm and not noted_llm:
            b.note("TF403", "the LLM picks the next speaker among several eligible agents; each speaker gets one "
                   "routing tool per eligible successor, and the next eligible agent in `agents` order when it "
                   "calls none", pos(method_node or call))
            noted_llm = True
        if len(e) > MAX_ROUTES and not noted_cap:
            noted_cap = True
            b.note("TF403", f"speakers may hand over to up to {len(e)} agents; only the first {MAX_ROUTES} eligible "
                   "agents of each speaker get a routing tool (the output stays bounded); the others are reached "
                   "through the fallback rotation", pos(call))
        for y in rota.nearest(x, e, MAX_ROUTES):
            b.handoff(x, y, f"transfer_to_{y}", _describe(cx, y))
        b.rule(x, after(x, e))


def _dict_mode(call: pyast.Call) -> bool:
    """A transitions dict is given (not absent, not None)."""
    node = kwarg(call, "allowed_or_disallowed_speaker_transitions")
    return node is not None and not (isinstance(node, pyast.Constant) and node.value is None)


def _selection_method(mod: Module, call: pyast.Call):
    """(method, custom function or None, the node naming it): `speaker_selection_method`, or the
    `select_speaker` of a GroupChat subclass of the file."""
    method_node = kwarg(call, "speaker_selection_method")
    method_value = mod.literal(method_node) if method_node is not None else "auto"
    custom_fn = None
    if method_node is not None and not isinstance(method_value, str):
        custom_fn = _function(mod, method_node)
        method = "custom"
    else:
        method = str(method_value).lower()
        if method not in METHODS:
            raise fail("TF401", f"unknown speaker_selection_method {method_value!r} (AutoGen accepts "
                       + ", ".join(METHODS) + " or a function)", pos(method_node), mod.path, mod.src)
    override = _select_speaker_override(mod, callee(call))
    if override is not None:  # a GroupChat subclass of the file that overrides select_speaker
        custom_fn, method, method_node = override, "custom", override
    return method, custom_fn, method_node


def _eligibility(cx: Classic, b: FlowBuilder, call: pyast.Call, rota: Rotation,
                 lit) -> dict[str, Sequence[str]]:
    """The eligible successors of each agent: the transitions dict (allowed, or inverted from
    disallowed), else every agent (itself per `allow_repeat_speaker`)."""
    mod = cx.mod
    repeat, repeat_node = lit("allow_repeat_speaker", None)
    # AG2's GroupChat.__post_init__ (ag2 0.9.9, autogen/agentchat/groupchat.py) refuses, when the chat
    # is built, a value that is not None, a bool or a list, then one given with a transitions dict
    if repeat is _NOTLIT:
        resolved = mod.resolve(repeat_node)
        if isinstance(resolved, pyast.List):
            repeat = [a.name for a in _agent_list(cx, repeat_node, "`allow_repeat_speaker`", call)]
        elif isinstance(resolved, pyast.Tuple):
            repeat = ()
        else:
            raise fail("TF401", "`allow_repeat_speaker` must be True, False or a list of agents",
                       pos(repeat_node), mod.path, mod.src)
    if repeat is not None and not isinstance(repeat, (bool, list)):
        raise fail("TF401", f"`allow_repeat_speaker={pyast.unparse(repeat_node)[:40]}`: AG2 refuses this GroupChat "
                   "when it is built (ValueError: GroupChat allow_repeat_speaker should be a bool or a list of "
                   "Agents)", pos(repeat_node), mod.path, mod.src)
    if _dict_mode(call):
        if repeat is not None:
            raise fail("TF401", "`allow_repeat_speaker` is given with `allowed_or_disallowed_speaker_transitions`: "
                       "AG2 refuses this GroupChat when it is built (ValueError: Don't provide both "
                       "allowed_or_disallowed_speaker_transitions and allow_repeat_speaker in group chat); "
                       "leave `allow_repeat_speaker` out (or None)", pos(repeat_node), mod.path, mod.src)
        return _transitions(cx, b, call, rota, lit)
    repeats = set(repeat) if isinstance(repeat, list) else set()
    allowed: dict[str, Sequence[str]] = {}
    for n in rota.names:
        keep = repeat is None or repeat is True or n in repeats
        allowed[n] = rota.all if keep else rota.all_but((n,))
    return allowed


def _transitions(cx: Classic, b: FlowBuilder, call: pyast.Call, rota: Rotation,
                 lit) -> dict[str, Sequence[str]]:
    """`allowed_or_disallowed_speaker_transitions` (a dict literal, maybe filled item by item)."""
    mod = cx.mod
    path, src = mod.path, mod.src
    transitions_node = kwarg(call, "allowed_or_disallowed_speaker_transitions")
    ttype, ttype_node = lit("speaker_transitions_type", None)
    resolved = mod.resolve(transitions_node)
    if not isinstance(resolved, pyast.Dict):
        raise fail("TF401", "`allowed_or_disallowed_speaker_transitions` must be a dict literal "
                   "(inline or bound to a variable)", pos(transitions_node), path, src)
    if ttype is None or ttype is _NOTLIT or str(ttype).lower() not in ("allowed", "disallowed"):
        raise fail("TF401", "`speaker_transitions_type` must be \"allowed\" or \"disallowed\" when "
                   "transitions are given", pos(ttype_node or call), path, src)
    given: dict[str, list[str]] = {}
    allowed_type = str(ttype).lower() == "allowed"
    for key_node, value_node in zip(resolved.keys, resolved.values):
        key = cx.agent_of(key_node)
        if key is None:
            raise fail("TF401", "transition keys must be agent variables", pos(key_node or resolved), path, src)
        if allowed_type and key.name not in rota.index:  # AG2's check_graph_validity, when the chat is built
            raise fail("TF401", f"`{key.var or key.name}` is a key of the allowed transitions but not one of "
                       "`agents`: AG2 refuses this GroupChat when it is built (ValueError: "
                       "allowed_speaker_transitions_dict has keys not in agents)", pos(key_node), path, src)
        given[key.name] = [a.name for a in _agent_list(cx, value_node, "a transition list", resolved)]
    var = _binding_key(transitions_node)  # `graph`, or `self.graph` set item by item in a method of the class
    for change in _transition_items(cx, b, var, call, disallowed=str(ttype).lower() == "disallowed"):
        _apply_transition(cx, given, change, resolved)
    if str(ttype).lower() == "allowed":
        return {k: v for k, v in given.items()}
    allowed: dict[str, Sequence[str]] = {n: rota.all for n in rota.names}
    for key_name, dis in given.items():
        allowed[key_name] = rota.all_but(dis)
    return allowed


def whole_number(mod: Module, b: FlowBuilder, node: pyast.AST, what: str, default: int, words: str) -> int:
    """A round/turn cap from the source; anything but a positive whole number literal is a TF405
    with the value actually used (never dropped or clamped silently)."""
    value = mod.literal(node)
    shown = pyast.unparse(node)
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
        b.note("TF405", f"`{what}={shown}` lets no agent speak; the flow needs at least one turn and uses "
               f"`max_turns 1`", pos(node))
        return 1
    if not is_literal(value):
        why = "which the migrator cannot evaluate (it reads code without running it)"
    elif isinstance(value, float) and value != value:
        why = "not a number (NaN)"
    elif isinstance(value, float) and value in (float("inf"), float("-inf")):
        why = "infinite"
    elif isinstance(value, float):
        why = "not a whole number (the framework counts rounds with integers and would fail)"
    else:
        why = f"a {type(value).__name__}, not a whole number"
    b.note("TF405", f"`{what}` is `{shown}`, {why}; {words} {default} is used", pos(node))
    return default


def _describe(cx: Classic, name: str) -> str:
    """The routing tool's description for agent `name`: the first agent of that name with a
    description or a system message (looked up once per chat, not by scanning every agent)."""
    if cx.descriptions is None:
        cx.descriptions = {}
        for a in cx.agents.values():
            if a.name not in cx.descriptions:
                text = _description_of(a)
                if text is not None:
                    cx.descriptions[a.name] = text
    found = cx.descriptions.get(name)
    return found if found is not None else f"Let {name} speak next"


def _description_of(a: Agent) -> Optional[str]:
    if a.description:
        return a.description.strip()
    if a.system_message:
        first = a.system_message.strip().splitlines()[0] if a.system_message.strip() else ""
        if first:
            return first if len(first) <= 120 else first[:117].rstrip() + "..."
    return None


def _super_init_arg(mod: Module, call: pyast.Call, name: str, index: int) -> Optional[pyast.AST]:
    """A GroupChat subclass of the file whose `__init__` passes `name` to `super().__init__(...)`:
    that value (a parameter of `__init__` is taken from the instantiation, else its default)."""
    cls = mod.classes.get(callee(call))
    init = next((st for st in cls.body if isinstance(st, pyast.FunctionDef) and st.name == "__init__"), None) \
        if cls is not None else None
    if init is None:
        return None
    for n in pyast.walk(init):
        if isinstance(n, pyast.Call) and callee(n) == "__init__" and isinstance(n.func, pyast.Attribute) \
                and isinstance(n.func.value, pyast.Call) and callee(n.func.value) == "super":
            value = kwarg(n, name, index)
            if isinstance(value, pyast.Name):
                params = [a.arg for a in init.args.args][1:]
                if value.id in params:
                    given = kwarg(call, value.id, params.index(value.id))
                    if given is not None:
                        return given
                    defaults = init.args.defaults
                    offset = len(params) - len(defaults)
                    i = params.index(value.id)
                    return defaults[i - offset] if i >= offset else None
            return value
    return None


def _select_speaker_override(mod: Module, cls_name: str):
    """`class MyChat(GroupChat): def select_speaker(self, last_speaker, selector): ...` (through
    subclasses of the file): the method, read like a custom selection function."""
    seen = set()
    while cls_name in mod.classes and cls_name not in seen:
        seen.add(cls_name)
        cls = mod.classes[cls_name]
        for st in cls.body:
            if isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and st.name == "select_speaker":
                return st
        bases = [callee(b) for b in cls.bases]
        cls_name = next((b for b in bases if b in mod.classes), "")
    return None


def _function(mod: Module, node: pyast.AST):
    from turnflow.migrate.pyread import function_def

    fn = function_def(mod, node)
    return fn if isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda)) else None


def _meets(names: set[str], successors: Sequence[str]) -> bool:
    """Whether one of `successors` is in `names`, from the smaller side (successors are a view of
    every agent when all are eligible: linear in the agents, not quadratic)."""
    if isinstance(successors, AllBut):  # stops at the first member not excluded
        return any(n in successors for n in names)
    return not names.isdisjoint(successors)


def _termination(cx: Classic, b: FlowBuilder, manager, agents, speakers, successors, read_manager: bool = True) -> None:
    """The manager's `is_termination_msg` (first; not when `_end_reasons` read it), then each
    agent's own (grouped by predicate)."""
    if manager is not None and read_manager:
        _manager_termination(cx, b, kwarg(manager, "is_termination_msg"))
    # an agent's own check: the chat ends when that agent is picked to reply to a matching message
    groups: dict[str, list[Agent]] = {}
    for agent in agents:
        if agent.termination is not None:
            groups.setdefault(pyast.unparse(agent.termination), []).append(agent)
    emitted: set[tuple[str, str]] = set()
    for members in groups.values():
        _agents_termination(cx, b, members, speakers, successors, emitted)


def _manager_termination(cx: Classic, b: FlowBuilder, node: Optional[pyast.AST]) -> None:
    if node is not None:
        manager_termination(cx.mod, b, node, "the manager")


def _agents_termination(cx: Classic, b: FlowBuilder, members: list[Agent], speakers, successors,
                        emitted: set[tuple[str, str]]) -> None:
    """The `is_termination_msg` shared by `members`: a rule from each speaker one of them may follow."""
    first = members[0]
    test = termination_test(cx.mod, first.termination)
    who = bounded(f"`{a.name}`" for a in members)
    others = tuple(pos(a.termination) for a in members[1:])
    if test is None or test.text is None:
        b.note("TF405", f"the `is_termination_msg` of {who} does not test the message text for a marker "
               "the migrator can read; dropped", pos(first.termination), also=others)
        return
    names = {a.name for a in members}
    sources = [x for x in speakers if _meets(names, successors(x))]
    if not sources:
        return
    how = "" if test.exact else f"; it uses {test.how}, approximated by `text contains`"
    message = (f"the `is_termination_msg` of {who} ends the chat only when that agent is picked to reply to "
               "a matching message; approximated by ending after any matching message from a speaker that "
               f"may be followed by it{how}")
    b.note("TF405", message, pos(first.termination), also=others)
    if set(sources) == set(speakers):
        sources = [None]
    for x in sources:
        if (x or "*", test.text) not in emitted and ("*", test.text) not in emitted:
            emitted.add((x or "*", test.text))
            b.rule(x, ("terminate", "is_termination_msg"), [("text", test.text)])


# --------------------------------------------------------------------------
#  Custom speaker selection functions: `if last_speaker is X: return Y` chains
# --------------------------------------------------------------------------
def _agent_namer(cx: Classic, names):
    """The flow name of the agent a node names (the agent, or its name string), else None."""
    def agent_name(node) -> Optional[str]:
        a = cx.agent_of(node)
        if a is not None:
            return a.name
        raw = cx.mod.string(node)
        if raw is not None and raw in cx.names.map and cx.names.map[raw] in names:
            return cx.names.map[raw]
        return None
    return agent_name


def _end_reasons(cx: Classic, manager, fn, speakers, names) -> Optional[dict]:
    """The close reasons of a chat whose manager's `is_termination_msg` delegates to a function of
    the file (`_delegate`; the module `turnflow compile --target ag2-groupchat` writes: `_end_reason`),
    read per speaker like the selection function `fn`: {speaker: outcomes}, when it ends the chat
    exactly where `fn` does (the same conditions, in the same order); else None (the manager's
    check is read as before: a marker rule, or TF405)."""
    from turnflow.migrate.selection import Evaluator

    ends = _delegate(cx, manager) if isinstance(fn, pyast.FunctionDef) else None
    if ends is None:
        return None
    opening = speakers[0] if speakers else None
    readings = []
    for f, style in ((fn, "classic"), (ends, "reasons")):
        ev = Evaluator(cx.mod, f, style, _agent_namer(cx, names), names)
        ev.opening = opening
        readings.append(ev.read(speakers).outcomes)
    chosen, reasons = readings
    agree = all(len(chosen[x]) == len(reasons[x]) and all(_same_end(o, r) for o, r in zip(chosen[x], reasons[x]))
                for x in speakers)
    return reasons if agree else None


def _same_end(o, r) -> bool:
    """A selection outcome `o` and a reason outcome `r` decide alike: the same conditions, and `r`
    ends the chat exactly when `o` does (returns None)."""
    return o.terms == r.terms and not o.maybe and not r.maybe and r.target != ("unknown",) \
        and (o.target == ("terminate", "custom_selection")) == (r.target[0] == "terminate")


def _delegate(cx: Classic, manager) -> Optional[pyast.FunctionDef]:
    """`f` when the manager's `is_termination_msg` is a function of the file that tests no marker
    and calls `f(<last speaker>, <group chat>)`, the one function of the file it calls with two
    arguments, whose every `return` is a string (the reason) or None (the chat goes on)."""
    from turnflow.migrate.pyread import function_def

    mod = cx.mod
    node = kwarg(manager, "is_termination_msg") if manager is not None else None
    check = function_def(mod, node) if node is not None else None
    if not isinstance(check, pyast.FunctionDef):
        return None
    marker = termination_test(mod, node)
    if marker is not None and marker.text is not None:  # it tests a marker too: read as before
        return None
    called = sorted({n.func.id for n in pyast.walk(check) if isinstance(n, pyast.Call)
                     and isinstance(n.func, pyast.Name) and len(n.args) == 2 and n.func.id in mod.functions})
    f = mod.functions[called[0]] if len(called) == 1 else None
    return f if isinstance(f, pyast.FunctionDef) and len(f.args.args) == 2 and _returns_reasons(f) else None


def _returns_reasons(f: pyast.FunctionDef) -> bool:
    """Every `return` of `f` gives a string or None (and it has one)."""
    values = [r.value for r in pyast.walk(f) if isinstance(r, pyast.Return)]
    return bool(values) and all(v is None or (isinstance(v, pyast.Constant) and (v.value is None
                                                                               or isinstance(v.value, str)))
                                for v in values)


def _custom(cx: Classic, b: FlowBuilder, fn, method_node, speakers, names, eligible, after,
            reasons: Optional[dict] = None) -> set[str]:
    """Translate the selection function speaker by speaker (turnflow.migrate.selection);
    return the speakers handled. `reasons` (`_end_reasons`): the close reason of each of its ends."""
    from turnflow.migrate.selection import Evaluator, emit

    if fn is None or not [a for a in fn.args.args if a.arg not in ("self", "cls")]:
        b.note("TF404", "the custom speaker selection function cannot be read; approximated as a choice by the "
               "speaker among the eligible agents", pos(method_node))
        return set()

    ev = Evaluator(cx.mod, fn, "classic", _agent_namer(cx, names), names)
    ev.opening = speakers[0] if speakers else None  # the initiator sends the opening message
    reading = ev.read(speakers)
    for x, ends in (reasons or {}).items():  # the manager's check ends the chat first, with its reason
        for o, r in zip(reading.outcomes[x], ends):
            if o.target == ("terminate", "custom_selection"):
                o.target = r.target
    noted: set[str] = set()

    for x in speakers:
        b.section()
        for n in reading.notes:  # each note above the rules of the first speaker it concerns
            if n.speaker == x or (n.speaker not in speakers and x == speakers[0]):
                b.note(n.code, n.message, pos(n.at))
        e = eligible(x) or names

        def choices(o, x=x, e=e):
            t = o.target
            if t[0] == "method" and t[1] == "round_robin":
                return [after(x, e)]
            if t[0] == "unknown" and "unknown" not in noted:
                noted.add("unknown")
                b.note("TF404", "a return value of the selection function cannot be read; the speaker may hand "
                       "over to any eligible agent", pos(o.at or fn))
            if t[0] == "method" and t[1] not in METHODS and "bad" not in noted:
                noted.add("bad")
                b.note("TF404", f"the selection function returns {t[1]!r}, which is not a selection method; "
                       "approximated as `auto`", pos(o.at or fn))
            return e

        def on_choice(o, x=x):
            if o.target[0] == "method" and "llm" not in noted:
                noted.add("llm")
                b.note("TF403", f"the selection function returns {o.target[1]!r}: the LLM picks among the "
                       "eligible agents; routing tools plus the next eligible agent as fallback", pos(o.at or fn))

        def fallback(opts: list[str], x: str = x) -> object:
            return after(x, opts)

        emit(b, x, reading.outcomes[x], choices, fallback, lambda y: _describe(cx, y), on_choice)
    return set(speakers)
