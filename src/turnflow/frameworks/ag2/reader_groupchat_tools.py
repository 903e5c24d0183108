"""Tools of a classic GroupChat's agents and who runs them: AG2's `func_call_filter`.

With `func_call_filter=True` (GroupChat's default), after a message that calls a tool the agent
that can run it (the tool is in its `function_map`: `register_for_execution`, `register_function(...,
executor=E)`, `function_map={...}`) speaks next, before the transitions dict, `allow_repeat_speaker`
or the selection method are looked at (`GroupChat._prepare_and_select_agents`). A tool registered
for the model on X (`register_for_llm`, `register_function(..., caller=X)`) and run by E is the
rule `handoff X -> E via TOOL`, first among X's rules. Read with `ast` only.
"""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass
from typing import Any, Callable, Optional

from turnflow.migrate import surface
from turnflow.migrate.pyread import Module, calls, kwarg


@dataclass(frozen=True)
class Tool:
    name: str
    caller: pyast.AST            # the agent expression the tool is registered for (the model's side)
    description: Optional[str]
    at: pyast.AST                # where it is registered


def _decorated(mod: Module) -> list[tuple[str, pyast.Call]]:
    """(function name, decorator call) of each `@X.register_for_llm(...)` / `@E.register_for_execution(...)`."""
    out = []
    for fname, fn in mod.functions.items():
        for dec in fn.decorator_list:
            if isinstance(dec, pyast.Call) and isinstance(dec.func, pyast.Attribute) \
                    and dec.func.attr in ("register_for_llm", "register_for_execution"):
                out.append((fname, dec))
    for call in calls(mod.tree):  # X.register_for_llm(...)(f)
        inner = call.func
        if isinstance(inner, pyast.Call) and isinstance(inner.func, pyast.Attribute) \
                and inner.func.attr in ("register_for_llm", "register_for_execution") \
                and len(call.args) == 1 and isinstance(call.args[0], pyast.Name):
            out.append((call.args[0].id, inner))
    return out


def tools(mod: Module) -> tuple[list[Tool], dict[str, list[pyast.AST]]]:
    """The tools registered for a model, and for each tool name the agent expressions that run it."""
    offered: list[Tool] = []
    runs: dict[str, list[pyast.AST]] = {}
    for fname, dec in _decorated(mod):
        kind = "ConversableAgent." + dec.func.attr  # type: ignore[attr-defined]
        b = surface.bind(dec, surface.API[("ag2", kind)])
        if b.problem is not None:
            continue
        name = mod.string(b.get("name")) or fname
        owner = dec.func.value  # type: ignore[attr-defined]
        if kind.endswith("register_for_llm"):
            offered.append(Tool(name, owner, mod.string(b.get("description")), dec))
        else:
            runs.setdefault(name, []).append(owner)
    for call in calls(mod.tree):
        for given in _constructor_functions(mod, call):  # `ConversableAgent(..., functions=[f])`: for the model
            doc = pyast.get_docstring(mod.functions[given.id]) if given.id in mod.functions else None
            offered.append(Tool(given.id, call, doc.strip() if doc else None, given))
        for name, description, node in _llm_config_tools(mod, call):  # `llm_config={"tools": [...]}`
            offered.append(Tool(name, call, description, node))
        if _registers_function_map(call):  # `agent.register_function(function_map={...})`: it runs them
            for name in _map_names(mod, kwarg(call, "function_map", 0)):
                runs.setdefault(name, []).append(call.func.value)  # type: ignore[attr-defined]
        if is_register_function(call):
            b = surface.bind(call, surface.API[("ag2", "register_function")])
            f, caller, executor = b.get("f"), b.get("caller"), b.get("executor")
            if b.problem is not None or not isinstance(f, pyast.Name) or caller is None or executor is None:
                continue
            name = mod.string(b.get("name")) or f.id
            offered.append(Tool(name, caller, mod.string(b.get("description")), call))
            runs.setdefault(name, []).append(executor)
    return offered, runs


def is_register_function(call: pyast.Call) -> bool:
    """AG2's module function `register_function(f, caller=..., executor=...)`, called by its name or
    through the module (`autogen.register_function`, `autogen.agentchat.register_function`), not an
    agent's method `agent.register_function(function_map)`."""
    f = call.func
    if isinstance(f, pyast.Name):
        return f.id == "register_function"
    if not isinstance(f, pyast.Attribute) or f.attr != "register_function":
        return False
    root = f.value
    while isinstance(root, pyast.Attribute):
        root = root.value
    return isinstance(root, pyast.Name) and root.id == "autogen"


def unbound_registrations(mod: Module) -> list[tuple[pyast.Call, pyast.AST, str]]:
    """(the call, the argument, Python's error) of each tool registration that does not bind to
    AG2's signature (`register_function(f, a, b)`: `caller` and `executor` are keyword-only; `**kw`
    known only at run time): the tool it registers is not read."""
    out = []
    for _fname, dec in _decorated(mod):
        b = surface.bind(dec, surface.API[("ag2", "ConversableAgent." + dec.func.attr)])  # type: ignore[attr-defined]
        if b.problem is not None:
            out.append((dec, *b.problem))
    for call in calls(mod.tree):
        if is_register_function(call):
            b = surface.bind(call, surface.API[("ag2", "register_function")])
            if b.problem is not None:
                out.append((call, *b.problem))
    return out


def registration_words(call: pyast.Call, error: str) -> str:
    fails = "" if "known only when the program runs" in error else " (the program fails here)"
    return (f"`{pyast.unparse(call)[:50]}` does not bind to AG2's signature: {error}{fails}; the tool it registers "
            "is not read")


def _constructor_functions(mod: Module, call: pyast.Call) -> list[pyast.Name]:
    """The functions named in an agent constructor's `functions=` (AG2 registers each for the model)."""
    node = next((k.value for k in call.keywords if k.arg == "functions"), None)
    if node is None:
        return []
    elems = mod.elements(node)
    items = elems if elems is not None else [node]
    return [e for e in items if isinstance(e, pyast.Name)]


def _registers_function_map(call: pyast.Call) -> bool:
    """An agent's method `agent.register_function(function_map)` (AG2 0.9.9 adds the map to the
    agent's `_function_map`: it runs those tools), not the module function `register_function(f, ...)`."""
    return isinstance(call.func, pyast.Attribute) and call.func.attr == "register_function" \
        and not is_register_function(call)


def _map_names(mod: Module, node: Optional[pyast.AST]) -> list[str]:
    node = mod.resolve(node)
    if not isinstance(node, pyast.Dict):
        return []
    return [k for k in (mod.string(key) for key in node.keys if key is not None) if k is not None]


def _llm_config_tools(mod: Module, call: pyast.Call) -> list[tuple[str, Optional[str], pyast.AST]]:
    """(name, description, node) of each tool schema written into a constructor's `llm_config` dict:
    `"tools": [{"type": "function", "function": {"name": ..., "description": ...}}]`, or the older
    `"functions": [{"name": ..., "description": ...}]`; AG2 offers them to the agent's model."""
    config = mod.resolve(next((k.value for k in call.keywords if k.arg == "llm_config"), None))
    if not isinstance(config, pyast.Dict):
        return []
    entries = {mod.string(k): v for k, v in zip(config.keys, config.values) if k is not None}
    out: list[tuple[str, Optional[str], pyast.AST]] = []
    for key in ("tools", "functions"):
        for element in mod.elements(entries.get(key)) or []:
            schema = mod.resolve(element)
            if not isinstance(schema, pyast.Dict):
                continue
            fields = {mod.string(k): v for k, v in zip(schema.keys, schema.values) if k is not None}
            if key == "tools":
                inner = mod.resolve(fields.get("function"))
                if not isinstance(inner, pyast.Dict):
                    continue
                fields = {mod.string(k): v for k, v in zip(inner.keys, inner.values) if k is not None}
            name = mod.string(fields.get("name"))
            if name is not None:
                out.append((name, mod.string(fields.get("description")), schema))
    return out


def function_map_runs(mod: Module, agent_call: pyast.Call) -> list[str]:
    """The tool names of a literal `function_map={...}` of an agent's constructor."""
    node = mod.resolve(next((k.value for k in agent_call.keywords if k.arg == "function_map"), None))
    if not isinstance(node, pyast.Dict):
        return []
    return [k for k in (mod.string(key) for key in node.keys) if k is not None]


def handoffs(mod: Module, agent_of: Callable[[Optional[pyast.AST]], Any],
             members: list) -> list[tuple[Any, list, Tool]]:
    """(caller agent, the members that run it, tool) for each tool a member offers that a member
    runs: with one, AG2 picks it after the call; with several, AG2 picks among them only (by its
    transitions and selection method). A tool no member runs is left out (AG2 then falls back to
    the agents with any function_map)."""
    offered, runs = tools(mod)
    ids = {id(m) for m in members}
    by_tool: dict[str, list[Any]] = {}
    for name, owners in runs.items():
        for owner in owners:
            a = agent_of(owner)
            if a is not None and id(a) in ids and a not in by_tool.setdefault(name, []):
                by_tool[name].append(a)
    for m in members:
        for name in function_map_runs(mod, m.call):
            if m not in by_tool.setdefault(name, []):
                by_tool[name].append(m)
    out = []
    seen = set()
    for t in offered:
        caller = agent_of(t.caller)
        execs = by_tool.get(t.name, [])
        if caller is None or id(caller) not in ids or not execs or (id(caller), t.name) in seen:
            continue
        seen.add((id(caller), t.name))
        out.append((caller, execs, t))
    return out
