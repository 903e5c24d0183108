"""Exact migration from live objects: `turnflow.migrate.from_object(obj)`.

The static front ends read source text and must approximate what only running the program
decides (TF410). A constructed object has no such doubt: its membership, names, descriptions,
caps and transitions are what they are. This module reads them from the object and hands the
result to the same front end the static path uses, so both paths lower alike:

- an AutoGen AgentChat team (0.4+): `team.dump_component()` is the component JSON the JSON front
  end (`turnflow.frameworks.autogen.reader_json`) reads;
- a classic `GroupChat` / `GroupChatManager` (AutoGen 0.2, AG2 <= 0.9): the object is written out
  as the canonical Python it stands for (one agent per line, the GroupChat call with its literal
  settings, the manager) and read by the classic front end. A selection function or termination
  predicate is taken from its own source (`inspect`), with the names it uses that are agents of
  the chat bound to them — the user's code is read, never run again.
- an AG2 group pattern (`DefaultPattern`, `AutoPattern`, ...): written out the same way (agents
  with their descriptions, the pattern with its initial agent, user agent, group after-work and
  the agents' after-works and handoff targets) and read by the AG2 pattern front end.

Classes are recognised by name and module (`type(obj).__mro__`), so this module imports none of
those packages itself.
"""

from __future__ import annotations

import ast as pyast
import inspect
import linecache
import textwrap
from typing import Any, Optional

from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.migrate.common import MigrateError, Migration, Pos, diagnostic, fail

__all__ = ["from_object", "family_of", "import_object", "migrate_object"]


def _mro(obj: Any) -> list[tuple[str, str]]:
    return [(c.__module__ or "", c.__name__) for c in type(obj).__mro__]


def family_of(obj: Any) -> Optional[str]:
    """"autogen" (an AgentChat team), "classic" (GroupChat / GroupChatManager), "ag2-patterns"
    (a group pattern), or None."""
    for module, name in _mro(obj):
        if module.startswith("autogen_agentchat") and name == "BaseGroupChat":
            return "autogen"
        if module.startswith("autogen.agentchat.group.patterns") and name == "Pattern":
            return "ag2-patterns"
        if module.startswith("autogen.agentchat") and name in ("GroupChat", "GroupChatManager"):
            return "classic"
    return None


def from_object(obj: Any, name: Optional[str] = None, initiator: Any = None, max_rounds: Optional[int] = None,
                path: str = "<object>") -> tuple[str, list[Diagnostic]]:
    """The `.flow` text for a live team / group chat / pattern, and its TF4xx notes (at 1:1 of
    `path`: a live object has no source position). `name`: the block's name (default: the
    family's usual variable name); `initiator`: the agent that starts a classic chat
    (`initiator.initiate_chat(manager, ...)`), which is not part of the GroupChat object;
    `max_rounds`: what a pattern is run with (`initiate_group_chat(..., max_rounds=N)`), not part of
    the pattern either. Raises `MigrateError` (TF401) for anything else."""
    result = migrate_object(obj, name, initiator, path, max_rounds)
    return result.text, result.diagnostics


def import_object(spec: str) -> tuple[Any, str]:
    """`module:attribute` (the attribute may be dotted) → (the object, the attribute). IMPORTS the
    module, i.e. runs it, from the current directory first; ValueError with the reason otherwise."""
    import importlib
    import os
    import sys

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"`--import` takes MODULE:ATTRIBUTE (e.g. `team:team`), not `{spec}`")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - the module's own failure (even SystemExit), as a reason
        raise ValueError(f"importing `{module_name}` failed: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"`{module_name}` has no attribute `{attr}`")
        obj = getattr(obj, part)
    return obj, attr


def migrate_object(obj: Any, name: Optional[str] = None, initiator: Any = None,
                   path: str = "<object>", max_rounds: Optional[int] = None) -> Migration:
    family = family_of(obj)
    from turnflow.migrate.common import FlowBuilder

    FlowBuilder.input_positions = False  # a note's position is in the generated text: not shown
    try:
        if family == "autogen":
            result = _autogen(obj, name or "team", path)
        elif family == "classic":
            from turnflow.frameworks.ag2 import reader_groupchat as classic

            result = classic.migrate(classic_source(obj, name or "groupchat", initiator), path)
        elif family == "ag2-patterns":
            from turnflow.frameworks.ag2 import reader_patterns as ag2_patterns

            result = ag2_patterns.migrate(pattern_source(obj, name or "pattern", max_rounds), path)
        else:
            raise fail("TF401", f"`{type(obj).__module__}.{type(obj).__name__}` is not a classic GroupChat / "
                       "GroupChatManager, an AG2 group pattern or an AutoGen AgentChat team", Pos(1, 1), path)
    finally:
        FlowBuilder.input_positions = True
    result.diagnostics = [_at_object(d, path) for d in result.diagnostics]
    return result


def _autogen(team: Any, name: str, path: str) -> Migration:
    from turnflow.frameworks.autogen import reader_json as autogen
    from turnflow.frameworks.autogen.reader_python import PyPositions
    from turnflow.migrate.common import Names, render
    from turnflow.source import SourceText

    comp = _autogen_component(team, name)
    _selection_functions(team, comp)
    b = autogen._team(comp, PyPositions(), Names(), path, SourceText("", path))  # type: ignore[arg-type]
    return render([b], [f"Migrated by `turnflow migrate` from {path} (AutoGen team object)."], path, None,
                  "autogen")


def _at_object(d: Diagnostic, path: str) -> Diagnostic:
    """A note of the front end, at the object (its position in the generated text means nothing)."""
    return diagnostic(d.code, d.message, Pos(1, 1), path)


# --------------------------------------------------------------------------
#  AutoGen AgentChat: the component JSON
# --------------------------------------------------------------------------
_DEFAULT_TEAM_DESCRIPTION = "A team of agents."


def _autogen_component(team: Any, name: str) -> dict:
    try:
        comp = team.dump_component().model_dump(mode="json")
    except Exception as exc:  # noqa: BLE001 - the library's own error, reported with the reason
        raise fail("TF401", f"the team cannot be dumped as a component ({type(exc).__name__}: {exc})",
                   Pos(1, 1), "<object>") from None
    cfg = comp.setdefault("config", {})
    cfg["name"] = name
    comp["label"] = name
    if cfg.get("description") == _DEFAULT_TEAM_DESCRIPTION:
        cfg.pop("description", None)
    comp.pop("description", None)
    live = {getattr(a, "name", None): a for a in getattr(team, "_participants", [])}
    for p in cfg.get("participants") or []:
        pc = p.get("config") if isinstance(p, dict) else None
        if not isinstance(pc, dict):
            continue
        agent = live.get(pc.get("name"))
        if agent is not None and pc.get("description") == _default_description(agent):
            pc.pop("description", None)  # the class's default says nothing the source did not
    graph = getattr(team, "_graph", None)
    nodes = (cfg.get("graph") or {}).get("nodes") if isinstance(cfg.get("graph"), dict) else None
    if graph is not None and isinstance(nodes, dict):
        for node_name, node in getattr(graph, "nodes", {}).items():
            dumped = nodes.get(node_name)
            if not isinstance(dumped, dict):
                continue
            for edge, out in zip(getattr(node, "edges", []), dumped.get("edges") or []):
                fn = getattr(edge, "condition_function", None)
                if fn is not None and isinstance(out, dict):  # a callable the dump leaves out
                    out["condition"] = _callable_condition(fn)
    return comp


def _selection_functions(team: Any, comp: dict) -> None:
    """A SelectorGroupChat's `selector_func` / `candidate_func`, which `dump_component()` leaves out:
    each read from its own source, with the global and closure names it uses bound to the team's
    agents (or to their literal values), as the static path reads a team written in Python. One
    that has no Python source (a builtin, a `functools.partial`, a callable object) is a TF404: the
    flow lets the selector model pick, which is not what the team does."""
    funcs = {key: getattr(team, f"_{key}", None) for key in ("selector_func", "candidate_func")}
    funcs = {key: fn for key, fn in funcs.items() if fn is not None}
    if not funcs:
        return
    from turnflow.frameworks.autogen.reader_python import Reader
    from turnflow.migrate.pyread import kwarg, parse_module
    from turnflow.source import SourceText

    w = _Writer()
    w.lines[0] = "from autogen_agentchat.teams import SelectorGroupChat"
    members = [w.var(a) for a in getattr(team, "_participants", [])]
    args, unreadable = [], {}
    for key, fn in funcs.items():
        fn_name = w.function(fn)
        if fn_name is None:
            shown = getattr(fn, "__qualname__", None) or type(fn).__name__
            unreadable[key] = (f"`{key}` (`{shown}`) has no Python source the migrator can read (a builtin, a "
                               "`functools.partial` or a callable object)")
        else:
            args.append(f"{key}={fn_name}")
    w.lines.append(f"team = SelectorGroupChat([{', '.join(members)}], {', '.join(args)})")
    text = "\n".join(w.lines) + "\n"
    mod = parse_module(text, "<object>", SourceText(text, "<object>"))
    call = next(n for n in pyast.walk(mod.tree) if isinstance(n, pyast.Call)
                and isinstance(n.func, pyast.Name) and n.func.id == "SelectorGroupChat")
    python: dict[str, Any] = {"reader": Reader(mod), "unreadable": unreadable}
    for key in funcs:
        node = kwarg(call, key)
        if node is not None:
            python[key] = node
    comp["_python"] = python


def _default_description(agent: Any) -> Optional[str]:
    try:
        param = inspect.signature(type(agent).__init__).parameters.get("description")
    except (TypeError, ValueError):
        return None
    return param.default if param is not None and isinstance(param.default, str) else None


def _callable_condition(fn: Any) -> dict:
    """An edge condition given as a Python callable, read from its source like the static path reads
    it (`turnflow.frameworks.autogen.reader_python`): a text test, or an unreadable condition (a routing tool)."""
    from turnflow.frameworks.autogen.reader_python import _lambda_condition
    from turnflow.migrate.pyread import Module
    from turnflow.source import SourceText

    node = _function_node(fn)
    if node is None:
        return {"_python_unreadable": getattr(fn, "__qualname__", "a callable"), "_at": Pos(1, 1)}
    mod = Module(tree=pyast.Module(body=[], type_ignores=[]), src=SourceText("", "<object>"), path="<object>")
    out = _lambda_condition(mod, node)
    out["_at"] = Pos(1, 1)
    return out


# --------------------------------------------------------------------------
#  Classic GroupChat: the canonical source
# --------------------------------------------------------------------------
class _Writer:
    """Collects the canonical source: agents as variables, functions from their own source."""

    def __init__(self) -> None:
        self.lines: list[str] = ["import autogen", ""]
        self.vars: dict[int, str] = {}  # id(agent) -> variable
        self.used: set[str] = set()
        self.functions: set[int] = set()

    def var(self, agent: Any) -> str:
        if id(agent) in self.vars:
            return self.vars[id(agent)]
        base = "".join(ch if ch.isalnum() else "_" for ch in str(getattr(agent, "name", "agent"))) or "agent"
        if not base.isidentifier() or base[0].isdigit():
            base = "agent_" + base
        v, i = f"{base}_agent", 2
        while v in self.used:
            v, i = f"{base}_agent_{i}", i + 1
        self.used.add(v)
        self.vars[id(agent)] = v
        args = [f"name={agent.name!r}"]
        system = getattr(agent, "system_message", None)
        description = getattr(agent, "description", None)
        defaults = _library_defaults(agent)
        if isinstance(system, str) and system and system not in defaults:
            args.append(f"system_message={system!r}")
        if isinstance(description, str) and description and description != system and description not in defaults:
            args.append(f"description={description!r}")
        term = getattr(agent, "_is_termination_msg", None)
        fn = self.function(term, owner=agent) if term is not None and not _library_default(term) else None
        if fn is not None:
            args.append(f"is_termination_msg={fn}")
        args += _runs(agent)
        self.lines.append(f"{v} = autogen.ConversableAgent({', '.join(args)})")
        return v

    def offered_tools(self, agent: Any) -> None:
        """The tools `agent`'s model may call (its llm_config's `tools`), as `register_for_llm`."""
        config = getattr(agent, "llm_config", None)
        tools = config.get("tools") if config is not None and hasattr(config, "get") else None
        for i, tool in enumerate(tools or []):
            fn = tool.get("function", {}) if isinstance(tool, dict) else {}
            if isinstance(fn.get("name"), str):
                description = fn.get("description") if isinstance(fn.get("description"), str) else None
                extra = f", description={description!r}" if description else ""
                self.lines.append(f"@{self.var(agent)}.register_for_llm(name={fn['name']!r}{extra})")
                self.lines.append(f"def live_tool_{self.var(agent)}_{i}(): ...")

    def value(self, value: Any) -> Optional[str]:
        """A free name's value as source: an agent of the chat (its variable), a list / tuple of
        them, or a plain literal (`"APPROVE"`, `3`, `["a", "b"]`); None for anything else."""
        if id(value) in self.vars:
            return self.vars[id(value)]
        if isinstance(value, (list, tuple)) and value and all(id(v) in self.vars for v in value):
            inner = ", ".join(self.vars[id(v)] for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner},)"
        if isinstance(value, (str, int, float, bool, list, tuple, dict, type(None))):
            text = repr(value)
            try:
                same = len(text) <= 10_000 and pyast.literal_eval(text) == value
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                same = False
            return text if same else None
        return None

    def function(self, fn: Any, owner: Any = None, keep_name: bool = False) -> Optional[str]:
        """The name of `fn` in the generated source (its `def` copied there, or a lambda bound to a
        name), with the names it uses that are agents of the chat bound to them; None when its
        source cannot be read."""
        instance = getattr(fn, "__self__", None) if inspect.ismethod(fn) else None
        fn = getattr(fn, "__func__", fn)  # a bound method: its function, `self.<agent>` bound below
        try:
            fn = inspect.unwrap(fn)  # a tool wrapped by the library: the user's function
        except ValueError:
            pass
        node = _function_node(fn)
        if node is None:
            return None
        if instance is not None:  # the chat's agents already have their variables
            node = _unbind_self(node, instance, self.vars)
        for value in _free_values(fn).values():  # helpers it calls: their source too (once)
            if inspect.isfunction(value) and id(value) not in self.functions and not _library_default(value) \
                    and len(self.functions) < 64:
                self.functions.add(id(value))
                self.function(value, keep_name=True)
        name = getattr(fn, "__name__", "") if keep_name and isinstance(node, pyast.FunctionDef) \
            else f"live_fn_{len(self.functions) + 1}"
        self.functions.add(id(fn))
        for free, value in _free_values(fn).items():
            bound = self.value(value)
            if bound is not None:
                self.lines.append(f"{free} = {bound}")
        if isinstance(node, pyast.Lambda):
            self.lines.append(f"{name} = {pyast.unparse(node)}")
        else:
            node.name = name
            node.decorator_list = []
            self.lines.append(pyast.unparse(node))
        return name


def _runs(agent: Any) -> list[str]:
    """`function_map=` naming the tools `agent` runs (`func_call_filter`: it speaks after a call of one)."""
    runs = [k for k in (getattr(agent, "function_map", None) or {}) if isinstance(k, str)]
    return ["function_map={" + ", ".join(f"{k!r}: None" for k in sorted(runs)) + "}"] if runs else []


def _unbind_self(node, instance: Any, agents: dict[int, str]):
    """A bound method's `def` as the function it is called as: without its `self` parameter, each
    `self.<attribute>` holding an agent of the chat replaced by that agent's variable."""
    params = node.args.posonlyargs or node.args.args
    if not params:
        return node
    me = params[0].arg
    del params[0]

    class Bind(pyast.NodeTransformer):
        def visit_Attribute(self, n: pyast.Attribute) -> pyast.AST:
            if isinstance(n.value, pyast.Name) and n.value.id == me and isinstance(n.ctx, pyast.Load):
                var = agents.get(id(getattr(instance, n.attr, None)))
                if var is not None:
                    return pyast.copy_location(pyast.Name(var, pyast.Load()), n)
            return self.generic_visit(n)

    return Bind().visit(node)


def _library_defaults(agent: Any) -> set[str]:
    """The default system messages and descriptions the agent's classes define (`DEFAULT_...`
    attributes, `__init__` defaults): the library's words, which the source did not write."""
    out: set[str] = set()
    for cls in type(agent).__mro__:
        for key, value in vars(cls).items():
            if key.startswith("DEFAULT"):
                if isinstance(value, str):
                    out.add(value)
                elif isinstance(value, dict):
                    out |= {v for v in value.values() if isinstance(v, str)}
        init = vars(cls).get("__init__")
        if init is not None:
            try:
                params = inspect.signature(init).parameters
            except (TypeError, ValueError):
                continue
            for key in ("system_message", "description"):
                default = params[key].default if key in params else None
                if isinstance(default, str):
                    out.add(default)
    return out


def _library_default(fn: Any) -> bool:
    """A termination predicate of the library itself (ConversableAgent's default), not the user's."""
    module = getattr(fn, "__module__", "") or ""
    return module.startswith("autogen.") or module == "autogen"


def _function_node(fn: Any):
    """The `def` or `lambda` of `fn`, read from its source file (a lambda: the one at its line)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        if fn.__name__ != "<lambda>":
            tree = pyast.parse(textwrap.dedent(inspect.getsource(fn)))
            found = next((n for n in tree.body if isinstance(n, (pyast.FunctionDef, pyast.AsyncFunctionDef))), None)
            return found
        # the file the lambda was written in, through linecache: a notebook cell's code is there
        # (IPython registers it) under a file name that is no file on disk
        source = "".join(linecache.getlines(code.co_filename))
    except (OSError, TypeError, SyntaxError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the last two: nested past the parser's limits
        return None
    lambdas = [n for n in pyast.walk(tree) if isinstance(n, pyast.Lambda) and n.lineno == code.co_firstlineno]
    return lambdas[0] if len(lambdas) == 1 else None


def _free_values(fn: Any) -> dict[str, Any]:
    """The values of the global and closure names `fn` uses."""
    out: dict[str, Any] = {}
    code = fn.__code__
    globals_ = getattr(fn, "__globals__", {})
    for n in code.co_names:
        if n in globals_:
            out[n] = globals_[n]
    for n, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            out[n] = cell.cell_contents
        except ValueError:
            continue
    return out


def _select_speaker_override(cls: type):
    """The `select_speaker` `def` of the first class of `cls` (not the library's) that defines it."""
    for c in cls.__mro__:
        if (c.__module__ or "").startswith("autogen"):
            return None
        if "select_speaker" in vars(c):
            node = _function_node(vars(c)["select_speaker"])
            if isinstance(node, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
                return node
    return None


def _transition_args(w: _Writer, chat: Any) -> list[str]:
    """`allow_repeat_speaker=` or the transitions the chat uses: a disallowed dict was inverted
    when the chat was built, so a later change of it changes nothing (an allowed dict is the chat's own)."""
    transitions = getattr(chat, "allowed_or_disallowed_speaker_transitions", None)
    repeat = chat.allow_repeat_speaker
    if transitions is None:
        if isinstance(repeat, list):
            return [f"allow_repeat_speaker=[{', '.join(w.var(a) for a in repeat)}]"]
        return [f"allow_repeat_speaker={repeat!r}"]
    allowed = getattr(chat, "allowed_speaker_transitions_dict", None) or transitions
    kind = "allowed" if allowed is not transitions else chat.speaker_transitions_type
    items = ", ".join(f"{w.var(k)}: [{', '.join(w.var(v) for v in vs)}]" for k, vs in allowed.items())
    return [f"allowed_or_disallowed_speaker_transitions={{{items}}}", f"speaker_transitions_type={kind!r}"]


def classic_source(obj: Any, name: str = "groupchat", initiator: Any = None) -> str:
    """The canonical Python of a live GroupChat (or GroupChatManager and its GroupChat)."""
    manager = obj if hasattr(obj, "groupchat") else None
    chat = obj.groupchat if manager is not None else obj
    w = _Writer()
    agents = [w.var(a) for a in chat.agents]
    if initiator is not None and id(initiator) not in w.vars:
        w.var(initiator)
    if chat.func_call_filter:
        for a in chat.agents:
            w.offered_tools(a)
    args = [f"agents=[{', '.join(agents)}]", "messages=[]", f"max_round={chat.max_round!r}"]
    method = chat.speaker_selection_method
    if isinstance(method, str):
        args.append(f"speaker_selection_method={method!r}")
    else:
        fn = w.function(method)
        args.append(f"speaker_selection_method={fn or 'live_unreadable_selection'}")
    args += _transition_args(w, chat)
    override = _select_speaker_override(type(chat))
    cls = "autogen.GroupChat"
    if override is not None:  # a subclass of the user's that picks the speaker itself
        w.lines.append("class LiveGroupChat(autogen.GroupChat):")
        w.lines.append(textwrap.indent(pyast.unparse(override), "    "))
        cls = "LiveGroupChat"
    w.lines.append(f"{name} = {cls}({', '.join(args)})")
    margs = [f"groupchat={name}"]
    if manager is not None:
        term = getattr(manager, "_is_termination_msg", None)
        fn = w.function(term) if term is not None and not _library_default(term) else None
        if fn is not None:
            margs.append(f"is_termination_msg={fn}")
    w.lines.append(f"{name}_manager = autogen.GroupChatManager({', '.join(margs)})")
    for a in chat.agents:
        _guardrail_lines(w, a)
    if initiator is not None:
        w.lines.append(f"{w.vars[id(initiator)]}.initiate_chat({name}_manager, message='...')")
    return "\n".join(w.lines) + "\n"


# --------------------------------------------------------------------------
#  AG2 group patterns: the canonical source
# --------------------------------------------------------------------------
_TARGETS = {"AgentTarget", "AgentNameTarget", "RevertToUserTarget", "TerminateTarget", "StayTarget",
            "GroupManagerTarget"}


def _target(w: _Writer, t: Any) -> str:
    kind = type(t).__name__
    if kind == "AgentTarget":
        agent = getattr(t, "agent", None)
        if agent is not None and id(agent) in w.vars:
            return f"AgentTarget({w.vars[id(agent)]})"
        return f"AgentNameTarget({getattr(t, 'agent_name', '?')!r})"
    if kind == "AgentNameTarget":
        return f"AgentNameTarget({t.agent_name!r})"
    if kind in _TARGETS:
        return f"{kind}()"
    raise MigrateError([diagnostic("TF401", f"transition target `{kind}` is not one the migrator reads",
                                   Pos(1, 1), "<object>")])


def _condition(w: _Writer, c: Any) -> Optional[str]:
    kind = type(c).__name__
    if kind == "ExpressionContextCondition":
        expr = getattr(c.expression, "expression", None)
        return f"ExpressionContextCondition(ContextExpression({expr!r}))" if isinstance(expr, str) else None
    if kind == "StringContextCondition":
        return f"StringContextCondition(variable_name={c.variable_name!r})"
    if kind == "StringLLMCondition":
        return f"StringLLMCondition(prompt={c.prompt!r})"
    return None


def _handoff_lines(w: _Writer, a: Any) -> None:
    """An agent's context and LLM conditions and after-works, as the calls that set them."""
    v = w.vars[id(a)]
    h = getattr(a, "handoffs", None)
    if h is None:
        return
    for cc in getattr(h, "context_conditions", []):
        cond = _condition(w, cc.condition)
        if cond is not None:
            w.lines.append(f"{v}.handoffs.add_context_condition(OnContextCondition(target={_target(w, cc.target)}, "
                           f"condition={cond}))")
    for lc in getattr(h, "llm_conditions", []):
        cond = _condition(w, lc.condition)
        if cond is not None:
            w.lines.append(f"{v}.handoffs.add_llm_condition(OnCondition(target={_target(w, lc.target)}, "
                           f"condition={cond}))")
    for aw in getattr(h, "after_works", []):
        if getattr(aw, "condition", None) is None:
            w.lines.append(f"{v}.handoffs.set_after_work({_target(w, aw.target)})")
            continue
        cond = _condition(w, aw.condition)
        if cond is not None:
            w.lines.append(f"{v}.handoffs.add_after_work(OnContextCondition(target={_target(w, aw.target)}, "
                           f"condition={cond}))")


def _guardrail_lines(w: _Writer, a: Any, targets: bool = False) -> None:
    """The agent's guardrails, as their registrations: AG2 runs them in every group chat, and one that
    fires replaces the reply and, in a pattern, makes its target the next speaker. With `targets` (a
    pattern), each as the `RegexGuardrail` / `LLMGuardrail` it is, with its name, condition and target
    (read as a routing tool); else by name (reported, TF406)."""
    v = w.vars[id(a)]
    for kind in ("input", "output"):
        for g in getattr(a, f"{kind}_guardrails", None) or []:
            name = getattr(g, "name", type(g).__name__)
            bases = [c.__name__ for c in type(g).__mro__]
            cls = next((c for c in ("RegexGuardrail", "LLMGuardrail") if c in bases), None)
            target = getattr(g, "target", None)
            if targets and cls is not None and target is not None and isinstance(getattr(g, "condition", None), str):
                w.lines.append(f"{v}.register_{kind}_guardrail({cls}(name={name!r}, condition={g.condition!r}, "
                               f"target={_target(w, target)}))")
            else:
                w.lines.append(f"{v}.register_{kind}_guardrail({name!r})")


def _tool_lines(w: _Writer, a: Any) -> None:
    """The agent's tools, from their own source, as `register_function(f, caller=agent, ...)` calls
    (an `agent.functions = [...]` after construction registers nothing in AG2)."""
    v = w.vars[id(a)]
    for t in getattr(a, "tools", []):
        fn = getattr(t, "func", None) or getattr(t, "_func", None)
        tn = w.function(fn, keep_name=True) if fn is not None else None
        if tn is not None:
            name = getattr(t, "name", None)
            named = f", name={name!r}" if isinstance(name, str) and name != tn else ""
            w.lines.append(f"register_function({tn}, caller={v}, executor={v}{named})")


def pattern_source(obj: Any, name: str = "pattern", max_rounds: Optional[int] = None) -> str:
    """The canonical Python of a live AG2 group pattern."""
    w = _Writer()
    w.lines[0] = ("from autogen import ConversableAgent, register_function\n"
                  "from autogen.agentchat.group import (AgentTarget, AgentNameTarget, RevertToUserTarget, "
                  "TerminateTarget, StayTarget, GroupManagerTarget, OnCondition, OnContextCondition, "
                  "ExpressionContextCondition, ContextExpression, StringContextCondition, StringLLMCondition, "
                  "ContextVariables)\nfrom autogen.agentchat.group.guardrails import LLMGuardrail, RegexGuardrail\n"
                  "from autogen.agentchat.group.patterns import DefaultPattern, AutoPattern, RoundRobinPattern, "
                  "RandomPattern, ManualPattern\nfrom autogen.agentchat import initiate_group_chat")
    agents = [w.var(a) for a in obj.agents]
    user = w.var(obj.user_agent) if getattr(obj, "user_agent", None) is not None else None
    for a in list(obj.agents):
        _handoff_lines(w, a)
    for a in list(obj.agents) + ([obj.user_agent] if user is not None else []):
        _tool_lines(w, a)
        _guardrail_lines(w, a, targets=True)
    kind = type(obj).__name__
    args = [f"initial_agent={w.vars[id(obj.initial_agent)]}", f"agents=[{', '.join(agents)}]"]
    term = (getattr(obj, "group_manager_args", None) or {}).get("is_termination_msg")
    fn_name = w.function(term) if term is not None and not _library_default(term) else None
    if fn_name is not None:
        args.append(f"group_manager_args={{'is_termination_msg': {fn_name}}}")
    if user is not None:
        args.append(f"user_agent={user}")
    data = getattr(getattr(obj, "context_variables", None), "data", None)
    if isinstance(data, dict) and data:
        args.append(f"context_variables=ContextVariables(data={data!r})")
    if kind == "DefaultPattern" and getattr(obj, "group_after_work", None) is not None:
        args.append(f"group_after_work={_target(w, obj.group_after_work)}")
    w.lines.append(f"{name} = {kind}({', '.join(args)})")
    if max_rounds is not None:
        w.lines.append(f"initiate_group_chat(pattern={name}, messages='...', max_rounds={int(max_rounds)})")
    return "\n".join(w.lines) + "\n"
