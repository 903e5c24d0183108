"""An `--agents` file checked as a whole before anything runs (docs/agents.md, "The `--agents`
file"): every problem at once, each at its `file:line:col`, with a did-you-mean where a name is
close to a known one; the environment each agent needs is checked too — the packages of its
kind's extra (found without importing them) and a model agent's API key variable — so a missing
extra or key is named with the agent that needs it and the command that installs it, before a
session opens.

`problems(path, text, agents)` returns the messages (empty: the file is fine as far as can be
told without importing the user's modules); building the agents (`config.build_agent`) then
imports them, and its errors are reported the same way (`at(...)`).
"""

from __future__ import annotations

import difflib
import importlib.util
import os
from typing import Any, Optional

from turnflow.runtime.agents.contract import BEHAVIORS
from turnflow.runtime.agents.config import _REF, FRAMEWORKS, KEYS, KINDS, contract_shape
from turnflow.extras import pip_install
from turnflow.runtime.errors import AdapterError, brief

#: per kind, the modules it needs (top-level import names) and the pip package of each
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "openai": (("openai", "openai"),),
    "anthropic": (("anthropic", "anthropic"),),
    "langgraph": (("langgraph", "langgraph"), ("langchain_core", "langchain-core")),
    "ag2": (("ag2", "ag2"),),
    "autogen": (("autogen_agentchat", "autogen-agentchat"), ("autogen_core", "autogen-core")),
}
#: the default API key variable of the model kinds
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
Where = dict[str, tuple[int, int]]  # "" (the agent's name), a key, "=key" (its value), "#i" (step i) -> (line, col)


def positions(text: str) -> dict[str, Where]:
    """Per agent name, where its name, each of its keys and their values, and each of its scripted
    `steps` are (1-based)."""
    import yaml

    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    out: dict[str, Where] = {}
    if not isinstance(root, yaml.MappingNode):
        return out
    for k, v in root.value:
        if k.value != "agents" or not isinstance(v, yaml.MappingNode):
            continue
        for ak, av in v.value:
            where: Where = {"": _pos(ak)}
            if isinstance(av, yaml.MappingNode):
                for kk, kv in av.value:
                    where[str(kk.value)] = _pos(kk)
                    where["=" + str(kk.value)] = _pos(kv)
                    if kk.value == "steps" and isinstance(kv, yaml.SequenceNode):
                        for i, step in enumerate(kv.value):
                            where[f"#{i}"] = _pos(step)
            out[str(ak.value)] = where
    return out


def _pos(node: Any) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _guess(word: Any, known: Any) -> str:
    close = difflib.get_close_matches(str(word), sorted(known), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def at(path: str, where: Optional[Where], key: str, message: str) -> str:
    """`path:line:col: message` at `key` of an agent (falling back to the agent's name)."""
    if where:
        line, col = where.get(key) or where[""]
        return f"{path}:{line}:{col}: {message}"
    return f"{path}: {message}"


def agent_problems(name: str, conf: Any) -> list[tuple[str, str]]:
    """Every problem of one agent's mapping found without importing anything: (where, message),
    `where` a key of the mapping, "=key" its value, or "" the agent's name."""
    who = f"agent {brief(name)}"
    if not isinstance(conf, dict):
        return [("", f"{who}: expected a mapping with `kind`, got {brief(conf)}")]
    try:  # the stateful-adapter contract's `{type: python, import_path: M, attribute: A}` shape
        conf = contract_shape(name, conf)
    except AdapterError as err:
        return [("", str(err))]
    out: list[tuple[str, str]] = []
    if "behavior" in conf and conf["behavior"] not in BEHAVIORS:
        out.append(("=behavior", f"{who}: `behavior` must be one of {', '.join(BEHAVIORS)}, "
                                 f"got {brief(conf['behavior'])}{_guess(conf['behavior'], BEHAVIORS)}"))
    kind = conf.get("kind")
    if kind not in KINDS:
        where = "=kind" if "kind" in conf else ""
        return out + [(where, f"{who}: unknown kind {brief(kind)}{_guess(kind, KINDS)} (supported: {', '.join(KINDS)})")]
    known = KEYS[kind] | {"kind", "behavior"}
    for key in conf:
        if key not in known:
            out.append((str(key), f"{who}: unknown key {brief(key)} for a {kind} agent{_guess(key, known)} "
                                  f"(known: {', '.join(sorted(KEYS[kind]))})"))
    out += _kind_problems(who, kind, conf)
    return out


def _kind_problems(who: str, kind: str, conf: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if kind in ("openai", "anthropic") and "model" not in conf:
        out.append(("", f"{who}: an {kind} agent needs `model`"))
    for key in ("timeout", "turn_timeout"):
        t = conf.get(key)
        if key in conf and (isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0):
            out.append(("=" + key, f"{who}: `{key}` must be a positive number of seconds, got {brief(t)}"))
    if kind in FRAMEWORKS or kind == "python":
        ref = conf.get("ref")
        if not isinstance(ref, str) or not _REF.match(ref):
            out.append(("=ref" if "ref" in conf else "",
                        f"{who}: `ref` must be \"module:function\" (dotted names), got {brief(ref)}"))
    return out


def package_problems(name: str, conf: Any) -> list[tuple[str, str]]:
    """The packages of the agent's kind, found without importing them."""
    if not isinstance(conf, dict) or conf.get("kind") not in NEEDS:
        return []
    kind = conf["kind"]
    missing = [pkg for module, pkg in NEEDS[kind] if importlib.util.find_spec(module) is None]
    if not missing:
        return []
    return [("=kind", f"agent {brief(name)}: kind {kind} needs {', '.join(missing)}, not installed: "
                      f"{pip_install(kind)}")]


def key_problems(name: str, conf: Any) -> list[tuple[str, str]]:
    """A model agent's API key variable must be set."""
    if not isinstance(conf, dict) or conf.get("kind") not in KEY_ENV:
        return []
    env = conf.get("api_key_env", KEY_ENV[conf["kind"]])
    if not isinstance(env, str) or not env or os.environ.get(env):
        return []
    return [("api_key_env" if "api_key_env" in conf else "",
             f"agent {brief(name)}: environment variable {env} is not set (it holds the API key; "
             "any non-empty value for a local server)")]


def problems(path: str, text: str, agents: dict[Any, Any], check: Any = agent_problems) -> list[str]:
    """Every problem `check` finds in the file's agents (default: their mappings), in file order,
    each as `path:line:col: message`."""
    where = positions(text)
    out: list[tuple[tuple[int, int], str]] = []
    for name, conf in agents.items():
        w = where.get(str(name))
        for key, message in check(str(name), conf):
            pos = (w.get(key) or w[""]) if w else (0, 0)
            out.append((pos, at(path, w, key, message)))
    return [line for _, line in sorted(out, key=lambda x: x[0])]
