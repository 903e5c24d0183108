"""What `turnflow run` reads before a session opens, shared by `run`, `run --tasks` and `simulate`:
the flow or compiled spec (`load_specs`, `pick`, `parse_spec`: the typed `SessionSpec` at the
boundary) and the agents file (`load_agents_file` -> `AgentsFile`: every problem at once at its
line and column, scripted steps checked against the spec, stand-ins for absent participants).
Every problem is a `RunInputError` whose `status` is the exit code (docs/cli.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from turnflow.cli.util import EXIT_FINDINGS, EXIT_USAGE, err, unknown_block

if TYPE_CHECKING:
    from turnflow.runtime.session_spec import SessionSpec


class RunInputError(Exception):
    """A problem with the user's files: printed as one clear line, no traceback. `status`: 2 when
    the input cannot be read or `--block` names no block (turnflow.cli.util), 1 otherwise."""

    def __init__(self, message: str, status: int = EXIT_FINDINGS):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class AgentsFile:
    """An agents file as read: its agents, where each scripted step starts (`{(agent, step index):
    line}`, for messages) and each agent's mapping (to build a fresh set per task)."""

    path: str
    agents: dict[str, Any]
    step_lines: dict[tuple[str, int], int] = field(default_factory=dict)
    confs: dict[str, Any] = field(default_factory=dict)


def read_input(path: str) -> str:
    """The text of FILE (`-`: standard input), or a RunInputError (exit 2)."""
    from turnflow.workspace.files import UNDECODABLE, load

    loaded = load(path)
    if loaded.error is not None:
        msg, span = loaded.error.message, loaded.error.span
        if msg.startswith(UNDECODABLE):  # where the bad byte is, as `check` says it
            raise RunInputError(f"{path}:{span.line}:{span.column}: TF000 error: {msg}", EXIT_USAGE)
        raise RunInputError(msg if f"`{path}`" in msg else f"{path}: {msg}", EXIT_USAGE)
    return loaded.text


def load_specs(path: str, text: Optional[str] = None, builtin: bool = False) -> list[dict]:
    """Session specs from a .flow file, a compiled spec (.json) or `-` (standard input: JSON when
    it starts with `{` or `[`, else .flow text); `text` when the input was already read.
    `builtin`: a .flow's workflow graphs in AG2's built-in conditions wherever they are exact."""
    if text is None:
        text = read_input(path)
    kind = _kind(path, text)
    if kind == "flow":
        try:
            from turnflow import compile as compile_flow  # lazy: the runtime itself never needs the compiler
        except ImportError:
            raise RunInputError(f"{path}: compiling .flow files needs turnflow.compile, which this build lacks; "
                                "pass a compiled spec (.json) instead") from None
        from turnflow import CompileError

        try:
            specs = compile_flow(text, path=path, builtin_where_exact=builtin)
        except CompileError as exc:
            lines = [f"{path}: the flow has errors; fix them first (turnflow check {path})"]
            for d in getattr(exc, "diagnostics", [])[:20]:
                span = getattr(d, "span", None)
                pos = f"{span.line}:{span.column}: " if span is not None else ""
                severity = getattr(d, "severity", "")  # as `turnflow check` says it: CODE severity: message
                lines.append(f"{path}:{pos}{getattr(d, 'code', '')}{' ' + severity + ':' if severity else ''} "
                             f"{getattr(d, 'message', d)}")
            raise RunInputError("\n".join(lines)) from None
        return specs
    if kind != "json":
        raise RunInputError(f"{path}: FILE must be a compiled session spec (.json) or a .flow file (`-`: standard input)")
    from turnflow.json_input import JSONInputError, invalid, loads as load_json  # refuses deep nesting, 1e309, ...

    try:
        data = load_json(text)
    except JSONInputError as exc:
        raise RunInputError(invalid(path, exc)) from None
    except ValueError as exc:
        raise RunInputError(f"{path}: not valid JSON: {exc}") from None
    specs = data if isinstance(data, list) else [data]
    if not specs or not all(isinstance(s, dict) for s in specs):
        raise RunInputError(f"{path}: expected a session spec object or a list of them")
    return specs


def _kind(path: str, text: str) -> Optional[str]:
    """"flow" or "json" by the file name (`-`: JSON when the text starts with `{` or `[`), else None."""
    if path == "-":
        return "json" if text.lstrip()[:1] in ("{", "[") else "flow"
    return "flow" if path.endswith(".flow") else "json" if path.endswith(".json") else None


def refuse_names_the_hub_cannot_run(path: str, text: str, blocks: Iterable[Any]) -> None:
    """A flow `turnflow check` accepts may still use names the hub refuses: the language takes any
    Unicode letter (docs/language.md), the hub's session names and agent ids are ASCII. Every such
    name of the blocks named `blocks` (those about to run) at its line and column (exit 1), instead
    of the hub's bare `invalid agent id`. A compiled spec (JSON) is left to the hub's own check."""
    if text.isascii() or _kind(path, text) != "flow":
        return
    wanted = set(blocks)
    from turnflow import parse
    from turnflow.dsl.ast import Participant
    from turnflow.runtime.errors import ProtocolError
    from turnflow.runtime.session import check_agent_id, check_name

    problems = []
    for block in parse(text).blocks:
        if block.name.name not in wanted:
            continue
        named: list[tuple[str, Callable[[Any], str], Any]] = [("block name", check_name, block.name)]
        named += [("participant", check_agent_id, st.name) for st in block.statements if isinstance(st, Participant)]
        for what, check, ident in named:
            try:
                check(ident.name)
            except ProtocolError:
                problems.append(f"{path}:{ident.span.line}:{ident.span.column}: {what} `{ident.name}` cannot run "
                                "on the hub, whose names are ASCII (letters, digits, _ . -); rename it to run the flow")
    if problems:
        raise RunInputError("\n".join(problems))


def pick(specs: list[dict], block: Optional[str], path: str) -> dict:
    if not specs:
        raise RunInputError(f"{path}: nothing to run: the file declares no blocks")
    names = [str(s.get("name")) for s in specs]
    if block is not None:
        for s in specs:
            if s.get("name") == block:
                return s
        raise RunInputError(unknown_block(path, block, names).message, EXIT_USAGE)
    if len(specs) > 1:
        raise RunInputError(f"{path} holds {len(specs)} blocks ({', '.join(names)}); choose one with --block NAME",
                            EXIT_USAGE)
    return specs[0]


def load_agents(path: str) -> dict[str, Any]:
    """The agents an agents file builds (`load_agents_file(path).agents`)."""
    return load_agents_file(path).agents


def load_agents_file(path: str) -> AgentsFile:
    """An `--agents` file read, checked as a whole and built (`RunInputError` with every problem)."""
    import yaml

    from turnflow import yaml_input  # refuses aliases (no "billion laughs") and deep nesting
    from turnflow.workspace.files import read_text

    try:
        text = read_text(path)
        data = yaml_input.load(text)  # not a FIFO, under the size limit of every input
    except FileNotFoundError:
        from turnflow.workspace.files import missing_path

        raise RunInputError(missing_path(path), EXIT_USAGE) from None
    except OSError as exc:
        raise RunInputError(f"cannot read agents file {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    except UnicodeDecodeError as exc:
        raise RunInputError(f"{path}: not UTF-8 text: {exc}", EXIT_USAGE) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else path
        problem = getattr(exc, "problem", None) or str(exc)
        raise RunInputError(f"{where}: invalid YAML: {problem}") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), dict) or not data["agents"]:
        raise RunInputError(f"{path}: expected a mapping `agents:` of participant names to agents")
    agents = _build_agents(path, text, data["agents"])
    return AgentsFile(path, agents, _step_lines(text), data["agents"])


def _build_agents(path: str, text: str, confs: dict) -> dict[str, Any]:
    """The file's agents, checked as a whole first: every problem at once, at its line and column
    (runtime/agents/agents_file.py); exit 1 when the file is wrong, 2 when a package or API key is
    missing (the environment must change)."""
    from turnflow.runtime.agents import agents_file
    from turnflow.runtime.agents.config import MissingPackage, build_agent
    from turnflow.runtime.errors import AdapterError

    found = agents_file.problems(path, text, confs)
    if found:
        raise RunInputError("\n".join(found))
    base_dir = os.path.dirname(os.path.abspath(path))
    spots = agents_file.positions(text)
    agents, failed = {}, agents_file.problems(path, text, confs, agents_file.package_problems)
    status = EXIT_USAGE if failed else EXIT_FINDINGS
    for name, conf in confs.items():
        if agents_file.package_problems(str(name), conf):
            continue  # its kind's extra is missing (reported above): importing its ref would only fail
        try:
            agents[str(name)] = build_agent(str(name), conf, base_dir)
        except AdapterError as exc:  # importing a `ref` (each agent's own module, every failure at once)
            failed.append(agents_file.at(path, spots.get(str(name)), "=ref", str(exc)))
            status = EXIT_USAGE if isinstance(exc, MissingPackage) else status
    built = {n: c for n, c in confs.items() if str(n) in agents}  # keys of the agents that built
    keys = agents_file.problems(path, text, built, agents_file.key_problems)
    if failed or keys:
        raise RunInputError("\n".join(failed + keys), EXIT_USAGE if keys else status)
    return agents


def _step_lines(text: str) -> dict[tuple[str, int], int]:
    """Where each scripted step starts in the agents file (1-based lines), for error messages."""
    from turnflow.runtime.agents import agents_file

    return {(name, int(key[1:])): line for name, where in agents_file.positions(text).items()
            for key, (line, _col) in where.items() if key.startswith("#")}


def parse_spec(spec: Any, path: str) -> "SessionSpec":
    """The picked spec, parsed (the run's boundary): `RunInputError` (exit 1) naming the file for a bad one."""
    from turnflow.runtime.errors import ProtocolError
    from turnflow.runtime.session_spec import SessionSpec

    try:
        return SessionSpec.parse(spec)
    except ProtocolError as exc:
        raise RunInputError(f"{path}: {exc}") from None


def check_agents(spec: "SessionSpec", file: AgentsFile) -> None:
    """Scripted steps checked against the spec before the session starts: every `tool` must be one
    of the agent's routing tools (unless the spec declares none) and every `handoff` a participant."""
    tools = [t for t in spec.tools if isinstance(t, dict) and t.get("name")]
    parts = spec.participant_ids
    path, lines = file.path, file.step_lines
    for name, agent in _scripted_agents(file.agents):
        own = [t["name"] for t in tools if t.get("owner") == name]
        for i, step in enumerate(agent.steps):
            where = f"{path}:{lines[(name, i)]}" if (name, i) in lines else path
            if tools:
                _check_step_tool(step, own, f"{where}: agent {name!r} step {i + 1}")
            if parts:
                _check_step_handoff(step, parts, f"{where}: agent {name!r} step {i + 1}")


def _scripted_agents(agents: dict) -> list:
    """(name, ScriptedAgent) for every scripted agent, looking through a `behavior:` override
    (its steps are checked all the same)."""
    from turnflow.runtime.agents.config import Behaved
    from turnflow.runtime.agents.scripted import ScriptedAgent

    found = []
    for name, agent in agents.items():
        if isinstance(agent, Behaved):
            agent = agent.inner
        if isinstance(agent, ScriptedAgent):
            found.append((name, agent))
    return found


def _check_step_tool(step: dict, own: list, at: str) -> None:
    """A step's `tool` must be one of the agent's own routing tools (`own`)."""
    tool = step.get("tool")
    if tool is None or tool in own:
        return
    import difflib

    have = f"its tools: {', '.join(own)}" if own else "it owns no routing tools"
    close = difflib.get_close_matches(str(tool), own, n=1, cutoff=0.8)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    raise RunInputError(f"{at}: unknown tool {tool!r}{guess} ({have})")


def _check_step_handoff(step: dict, parts: list, at: str) -> None:
    """A step's `handoff` must name a participant (`parts`)."""
    target = step.get("handoff")
    if target is not None and target not in parts:
        raise RunInputError(f"{at}: cannot hand off to {target!r}: not a participant ({', '.join(parts)})")


def fill_absent(names: list[str], agents: dict[str, Any], path: str) -> dict[str, Any]:
    """The agents with a stand-in for each participant the file lacks (runtime/agents/absent.py),
    said on stderr: a run needs no agent for a participant it never hands the turn to."""
    from turnflow.runtime.agents.absent import absent_note, with_absent

    agents, missing = with_absent(names, agents, path)
    if missing:
        err(f"turnflow run: {absent_note(missing, path)}")
    return agents
