"""Agents from an `--agents` YAML entry (docs/agents.md, "The `--agents` file"):

    kind: scripted   steps: [...]
    kind: openai     model, base_url?, api_key_env? (OPENAI_API_KEY), system?, max_rounds?, timeout?,
                     turn_timeout?, retry_seconds?, temperature?, session_tools?
    kind: anthropic  the same (api_key_env defaults to ANTHROPIC_API_KEY), max_tokens?
    kind: python     ref: "module:attribute"
    kind: langgraph  ref: "module:graph_or_factory"     (turnflow[langgraph])
    kind: ag2        ref: "module:agent_or_factory"     (turnflow[ag2])
    kind: autogen    ref: "module:agent_or_factory"     (turnflow[autogen])

`kind: python` imports the user's own module (that is its documented purpose; nothing is
ever evaluated from a string): the module is looked up on `sys.path` with the agents file's
directory first. The attribute may be an agent object (it has `open_session`, `on_message`,
`close_session`), or a callable taking `(msg, tools)`, wrapped in a `FunctionAgent`.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from typing import Any, Optional

from turnflow.runtime.agents.contract import BEHAVIORS
from turnflow.runtime.agents.function import FunctionAgent
from turnflow.runtime.agents.scripted import ScriptedAgent
from turnflow.runtime.errors import AdapterError, brief

#: the framework kinds: (module, class, the packages the extra installs)
FRAMEWORKS = {"langgraph": ("turnflow.frameworks.langgraph.participant", "LangGraphAgent", "langgraph, langchain-core"),
              "ag2": ("turnflow.frameworks.ag2.participant", "AG2Agent", "ag2"),
              "autogen": ("turnflow.frameworks.autogen.participant", "AutoGenAgent", "autogen-agentchat")}
KINDS = ("scripted", "openai", "anthropic", "python", *FRAMEWORKS)
MODEL_KEYS = {"model", "base_url", "api_key_env", "system", "max_rounds", "timeout", "turn_timeout", "temperature",
              "session_tools", "retry_seconds"}
KEYS = {"scripted": {"steps"}, "openai": MODEL_KEYS, "anthropic": MODEL_KEYS | {"max_tokens"},
        "python": {"ref", "history_converter", "import_path", "attribute"},
        **{k: {"ref", "history_converter"} for k in FRAMEWORKS}}
_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
CONTRACT = ("open_session", "on_message", "close_session")
#: a module a user's agent module may import → (pip package, turnflow extra that installs it)
PACKAGES = {"langgraph": ("langgraph", "langgraph"), "langchain_core": ("langchain-core", "langgraph"),
            "ag2": ("ag2", "ag2"), "autogen_agentchat": ("autogen-agentchat", "autogen"),
            "autogen_core": ("autogen-core", "autogen"), "autogen_ext": ("autogen-ext", "autogen"),
            "openai": ("openai", "openai"), "anthropic": ("anthropic", "anthropic")}


class MissingPackage(AdapterError):
    """An agent's module needs a framework package that is not installed (the environment, not
    the agents file, must change)."""


def install_hint(exc: BaseException) -> str:
    """For an import of a framework package that failed: which package to install, and the extra."""
    missing = getattr(exc, "name", None)
    top = missing.split(".")[0] if isinstance(missing, str) else None
    if top in PACKAGES:
        pkg, extra = PACKAGES[top]
        from turnflow.extras import pip_install

        return f" (install {pkg}: pip install '{pkg}', or {pip_install(extra)})"
    return ""


def _instance(name: str, cls: type) -> Any:
    """`cls()` for an adapter class the agents file names; `AdapterError` when that fails."""
    try:
        return cls()
    except Exception as exc:  # the user's constructor
        raise AdapterError(f"agent {brief(name)}: cannot make an agent from {cls.__name__}(): "
                           f"{type(exc).__name__}: {exc}") from None


def is_agent_object(obj: Any) -> bool:
    """An agent object: the three contract methods, or the stateful-adapter form — a handshake
    (`open_session` or `aopen_session`) and a turn (`on_message`, or `aplan` + `aexecute` +
    `asynthesize`) — or the integration guide's hooks (`on_started`, or an `on_message` with the
    guide's signature)."""
    from turnflow.runtime.agents.hooks import hooked

    if isinstance(obj, type):
        return False
    def has(m: str) -> bool:
        return callable(getattr(obj, m, None))

    if all(has(m) for m in CONTRACT):
        return True
    if has("on_message") and (has("on_started") or hooked(obj.on_message)):
        return True
    return ((has("open_session") or has("aopen_session"))
            and (has("on_message") or all(has(m) for m in ("aplan", "aexecute", "asynthesize"))))


class Behaved:
    """An agent under the agents file's `behavior: self | atlas` override and/or its
    `history_converter`: everything else is the agent's own; the hub reads `behavior_override`
    when it takes the handshake (driver.handshake) and records the raw answer beside the
    effective capabilities, and `history_converter` for `tools.history`."""

    def __init__(self, agent: Any, behavior: Optional[str], history_converter: Any = None) -> None:
        self._agent = agent
        self.behavior_override = behavior
        self.history_converter = history_converter if history_converter is not None else \
            getattr(agent, "history_converter", None)

    @property
    def inner(self) -> Any:
        """The agent under the override."""
        return self._agent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    async def close_session(self, session_id: str) -> None:
        close = getattr(self._agent, "close_session", None) or getattr(self._agent, "aclose_session", None) \
            or getattr(self._agent, "on_cleanup", None)  # the integration guide's on_cleanup(room_id)
        if callable(close):
            answer = close(session_id)
            if inspect.isawaitable(answer):
                await answer


def contract_shape(name: str, conf: Any) -> Any:
    """The stateful-adapter contract's entry shape, `{type: python, import_path: M, attribute: A}`,
    as turnflow's `{kind: python, ref: "M:A"}` (`type` is `kind`'s other name)."""
    if not isinstance(conf, dict):
        return conf
    if "type" in conf and "kind" not in conf:
        conf = {("kind" if k == "type" else k): v for k, v in conf.items()}
    if "import_path" in conf or "attribute" in conf:
        if "ref" in conf or not isinstance(conf.get("import_path"), str) or not isinstance(conf.get("attribute"), str):
            raise AdapterError(f"agent {brief(name)}: `import_path` and `attribute` go together, instead of `ref`")
        conf = {k: v for k, v in conf.items() if k not in ("import_path", "attribute")} | \
            {"ref": f"{conf['import_path']}:{conf['attribute']}"}
    return conf


def build_agent(name: str, conf: Any, base_dir: Optional[str] = None) -> Any:
    """One agent from its YAML mapping; every problem is an `AdapterError` naming the agent.
    `behavior: self | atlas` (any kind) overrides the control loop the agent's handshake declares;
    `history_converter: "module:attribute"` (python and framework kinds) names the agent's
    `HistoryConverter` (runtime/agents/history.py)."""
    conf = contract_shape(name, conf)
    if isinstance(conf, dict) and "history_converter" in conf and conf.get("kind") in KINDS \
            and "history_converter" in KEYS[conf["kind"]]:
        converter = history_converter(name, conf["history_converter"], base_dir)
        agent = build_agent(name, {k: v for k, v in conf.items() if k != "history_converter"}, base_dir)
        if conf["kind"] in FRAMEWORKS:  # the framework agent itself converts (under a `behavior:` too)
            (agent._agent if isinstance(agent, Behaved) else agent).history_converter = converter
            return agent
        if isinstance(agent, Behaved):
            agent.history_converter = converter
            return agent
        return Behaved(agent, None, converter)
    if isinstance(conf, dict) and "behavior" in conf:
        behavior = conf["behavior"]
        if behavior not in BEHAVIORS:
            raise AdapterError(f"agent {brief(name)}: `behavior` must be one of {', '.join(BEHAVIORS)}, got {brief(behavior)}")
        return Behaved(_build(name, {k: v for k, v in conf.items() if k != "behavior"}, base_dir), behavior)
    return _build(name, conf, base_dir)


def _build(name: str, conf: Any, base_dir: Optional[str]) -> Any:
    if not isinstance(conf, dict):
        raise AdapterError(f"agent {brief(name)}: expected a mapping with `kind`, got {brief(conf)}")
    kind = conf.get("kind")
    if kind not in KINDS:
        raise AdapterError(f"agent {brief(name)}: unknown kind {brief(kind)} (supported: {', '.join(KINDS)})")
    unknown = sorted(set(conf) - KEYS[kind] - {"kind"})
    if unknown:
        raise AdapterError(f"agent {brief(name)}: unknown key {brief(unknown[0])} for a {kind} agent "
                           f"(known: {', '.join(sorted(KEYS[kind]))})")
    if kind == "scripted":
        return ScriptedAgent(name, conf.get("steps"))
    if kind in ("openai", "anthropic"):
        if "model" not in conf:
            raise AdapterError(f"agent {brief(name)}: an {kind} agent needs `model`")
        kw = {k: conf[k] for k in ("base_url", "api_key_env", "system", "max_rounds", "temperature", "session_tools",
                                   "max_tokens", "retry_seconds") if k in conf}
        for key in ("timeout", "turn_timeout"):
            if key in conf:
                t = conf[key]
                if isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0:
                    raise AdapterError(f"agent {brief(name)}: `{key}` must be a positive number of seconds, "
                                       f"got {brief(t)}")
                kw[key] = float(t)
        # the model agents' modules load only when an agents file names one
        if kind == "anthropic":
            from turnflow.runtime.agents.anthropic_messages import AnthropicMessagesAgent

            return AnthropicMessagesAgent(name, conf["model"], **kw)
        from turnflow.runtime.agents.openai_chat import OpenAIChatAgent

        return OpenAIChatAgent(name, conf["model"], **kw)
    if kind in FRAMEWORKS:
        return framework_agent(name, kind, conf.get("ref"), base_dir)
    return python_agent(name, conf.get("ref"), base_dir)


def framework_agent(name: str, kind: str, ref: Any, base_dir: Optional[str] = None) -> Any:
    """A `langgraph` / `ag2` / `autogen` participant: the framework must be installed (the
    extra of the same name); `ref` names its object or a factory `(tools, ctx)`."""
    module, cls, packages = FRAMEWORKS[kind]
    obj = import_ref(name, ref, base_dir)
    try:
        agent_cls = getattr(importlib.import_module(module), cls)
        probe = agent_cls(name, obj, ref)
        probe.accepts(obj)  # imports the framework
    except ImportError as exc:
        from turnflow.extras import pip_install

        raise AdapterError(f"agent {brief(name)}: kind {kind} needs {packages} ({pip_install(kind)}): "
                           f"{exc}") from None
    if not probe.accepts(obj) and (not callable(obj) or isinstance(obj, type)):
        raise AdapterError(f"agent {brief(name)}: {ref} is neither {probe.what} nor a factory function "
                           "(tools, ctx) returning one")
    if not probe.accepts(obj):
        _check_factory(name, ref, obj)
    return probe


def _check_factory(name: str, ref: Any, factory: Any) -> None:
    """A factory must take `(tools, ctx)`: checked against its signature before any session opens
    (it is called only when the session does, with the session's tools)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: trusted
        return
    try:
        signature.bind(None, None)
    except TypeError as exc:
        raise AdapterError(f"agent {brief(name)}: the factory {ref}{signature} cannot be called with (tools, ctx): "
                           f"{exc}") from None


def import_ref(name: str, ref: Any, base_dir: Optional[str] = None) -> Any:
    """The object `ref` ("module:attribute") names, imported with `base_dir` first on sys.path."""
    if not isinstance(ref, str) or not _REF.match(ref):
        raise AdapterError(f"agent {brief(name)}: `ref` must be \"module:function\" (dotted names), got {brief(ref)}")
    mod_name, attr = ref.split(":", 1)
    added: Optional[str] = None  # the directory this call put on sys.path
    if base_dir is not None and base_dir not in sys.path:
        sys.path.insert(0, base_dir)
        added = base_dir
    try:
        module = importlib.import_module(mod_name)
    except ImportError as exc:
        hint = install_hint(exc)
        raise (MissingPackage if hint else AdapterError)(
            f"agent {brief(name)}: cannot import module {brief(mod_name)} for ref {brief(ref)}: {exc}{hint}") from None
    except Exception as exc:  # the user's module failed while importing
        raise AdapterError(f"agent {brief(name)}: importing {brief(mod_name)} failed: {type(exc).__name__}: {exc}") from None
    finally:
        if added is not None:
            sys.path.remove(added)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AdapterError(f"agent {brief(name)}: module {brief(mod_name)} has no attribute {brief(attr)}")
        obj = getattr(obj, part)
    return obj


def history_converter(name: str, ref: Any, base_dir: Optional[str] = None) -> Any:
    from turnflow.runtime.agents.history import converter_of

    try:
        return converter_of(import_ref(name, ref, base_dir), f"agent {brief(name)}: history_converter {brief(ref)}")
    except ValueError as exc:
        raise AdapterError(str(exc)) from None


def python_agent(name: str, ref: Any, base_dir: Optional[str] = None) -> Any:
    from turnflow.runtime.agents.hooks import hooked

    obj = import_ref(name, ref, base_dir)
    if is_agent_object(obj):
        return obj
    turn = getattr(obj, "on_message", None)
    if isinstance(obj, type) and (any(callable(getattr(obj, m, None)) for m in ("open_session", "aopen_session",
                                                                                "on_started"))
                                  or (callable(turn) and hooked(turn))):
        inst = _instance(name, obj)  # an adapter class (the contract's `attribute: StatefulSQLiteAdapter`)
        if is_agent_object(inst):
            return inst
    if callable(obj) and not isinstance(obj, type):
        return FunctionAgent(obj, name)
    raise AdapterError(f"agent {brief(name)}: {ref} is neither an agent object ({', '.join(CONTRACT)}) "
                       "nor a function taking (msg, tools)")
