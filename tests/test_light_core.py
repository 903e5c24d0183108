"""A light core (issue 11): importing the package or the runtime, and `turnflow --help` /
`--version`, load none of the heavy libraries; they are imported at the edge that needs them.
Checked in a fresh interpreter through `sys.modules`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("lark", "networkx", "jsonschema", "graphviz", "websockets")


def loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             "import json\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import turnflow",
    "import turnflow.runtime",
    "import turnflow; turnflow.__version__",
    "from turnflow.runtime import Hub, SQLiteStore, WorkflowAdapter",
    "import turnflow.cli, contextlib, io\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try: turnflow.cli.main(['--help'])\n"
    "    except SystemExit: pass",
    "import turnflow.cli, contextlib, io\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try: turnflow.cli.main(['--version'])\n"
    "    except SystemExit: pass",
    "import turnflow.cli, contextlib, io\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try: turnflow.cli.main(['serve', '--help'])\n"
    "    except SystemExit: pass",
], ids=["turnflow", "turnflow.runtime", "version", "runtime-names", "--help", "--version", "serve --help"])
def test_loads_no_heavy_library(code):
    assert loaded_after(code) == []


def test_check_loads_no_pydantic():
    """`turnflow check` (the editor's and CI's command) reads the frameworks' routing tables
    (compiler/emit/pyroute.py) without the spec models: pydantic was a fifth of its start."""
    flow = SRC.parent / "examples" / "support.flow"
    probe = ("import sys, contextlib, io, turnflow.cli\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    code = turnflow.cli.main(['check', {str(flow)!r}])\n"
             "print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "0 []", (proc.stdout, proc.stderr)


def test_the_apis_check_loads_no_pydantic():
    """`turnflow.check(text)` loads the analysis alone: the package root took every name from
    `turnflow.api`, which imports the decompiler and with it the spec's pydantic models (~0.08 s
    of CPU in the first call, a fifth of `check` of 2,000 participants: docs/benchmarks.md)."""
    probe = ("import sys, turnflow\n"
             "assert turnflow.check('workflow w {\\n participant a\\n participant b\\n start a\\n a -> b\\n b -> terminate\\n}\\n') == []\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "[]", (proc.stdout, proc.stderr)


def test_each_root_name_is_the_apis():
    import turnflow
    import turnflow.api

    assert set(turnflow.api.__all__) == set(turnflow.__all__) - {"__version__"}
    for name in turnflow.api.__all__:
        assert getattr(turnflow, name) is getattr(turnflow.api, name), name


def test_the_probe_sees_a_heavy_import():
    """The check above can fail: using the API does load the parser."""
    assert "lark" in loaded_after("import turnflow; turnflow.parse('workflow w {\\n}\\n')")


def test_lazy_root_still_offers_the_whole_api():
    import turnflow

    assert {"parse", "check", "compile", "decompile", "ParseError", "CompileError", "DecompileError"} <= set(dir(turnflow))
    assert callable(turnflow.check) and turnflow.check("workflow w {") != []
    with pytest.raises(AttributeError):
        turnflow.no_such_name  # noqa: B018


def test_check_loads_only_the_parser():
    """`turnflow check` needs lark and nothing else heavy (no networkx, schema validator or Graphviz)."""
    support = Path(__file__).resolve().parents[1] / "examples" / "support.flow"
    code = ("import turnflow.cli, contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert turnflow.cli.main(['check', {str(support)!r}]) == 0")
    assert loaded_after(code) == ["lark"]


# -- `turnflow run` loads what its flow and agents file name, nothing more -----------------------------
AGENT_MODULE = "def speak(msg, tools):\n    return f'{tools.agent_id} spoke'\n"
WORKFLOW = {"kind": "workflow", "name": "chain",
            "participants": [{"agent_id": a, "role": "participant"} for a in "ab"],
            "knobs": {"graph": {"initial_speaker": "a", "transitions": [
                {"when": {"name": "from_speaker", "args": {"agent_id": "a"}},
                 "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0}],
                "default_target": {"name": "round_robin", "args": {}}, "max_turns": 4}}}
DISCUSSION = {"kind": "discussion", "name": "panel",
              "participants": [{"agent_id": a, "role": "participant"} for a in "ab"], "knobs": {}}
#: what a run whose agents are all `kind: python` / `scripted` must not load
MODEL_AGENTS = ["anthropic", "openai", "turnflow.runtime.agents.anthropic_messages",
                "turnflow.runtime.agents.openai_chat"]


def run_probe(tmp_path: Path, spec: dict, args: list[str], probe: str, agents: str = "") -> dict:
    """`turnflow run SPEC --agents AGENTS ARGS` in a fresh interpreter; returns its exit status and
    the JSON value of the expression `probe` evaluated after the run (`mods`: the loaded modules)."""
    (tmp_path / "flow.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp_path / "light_agents.py").write_text(AGENT_MODULE, encoding="utf-8")
    (tmp_path / "agents.yaml").write_text(agents or "agents:\n" + "".join(
        f"  {p['agent_id']}: {{kind: python, ref: 'light_agents:speak'}}\n" for p in spec["participants"]),
        encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text('{"id": "t1", "task": "go"}\n', encoding="utf-8")
    code = ("import contextlib, io, json, sys\nimport turnflow.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = turnflow.cli.main(['run', 'flow.json', '--agents', 'agents.yaml', *{args!r}])\n"
            "mods = sorted(sys.modules)\n"
            f"print(json.dumps({{'rc': rc, 'probe': {probe}}}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--task", "go", "--max-turns", "4"], ["--tasks", "tasks.jsonl", "--store", "hub.db"]],
                         ids=["run", "run --tasks"])
def test_run_with_python_agents_loads_no_model_agent(tmp_path, args):
    """A workflow run whose agents file names only python agents loads neither the model agents nor
    their clients, nor the session-spec models; of the spec models it builds the graph's validator only."""
    probe = ("{'model_agents': [m for m in mods if m in %r], 'session_models': 'turnflow.spec.session' in mods, "
             "'built': [c.__name__ for c in (sys.modules['turnflow.spec.graph'].TransitionGraph, "
             "sys.modules['turnflow.spec.graph'].Always, sys.modules['turnflow.spec.graph'].AgentTarget) "
             "if c.__pydantic_complete__]}" % (MODEL_AGENTS,))
    got = run_probe(tmp_path, WORKFLOW, args, probe)
    assert got == {"rc": 0, "probe": {"model_agents": [], "session_models": False, "built": ["TransitionGraph"]}}


def test_run_of_a_discussion_loads_no_pydantic(tmp_path):
    """Only a workflow's graph is read with the pydantic models: a discussion run never imports pydantic."""
    got = run_probe(tmp_path, DISCUSSION, ["--task", "go", "--max-turns", "3"],
                    "[m for m in mods if m.split('.')[0] in ('pydantic', 'pydantic_core')]")
    assert got == {"rc": 0, "probe": []}


def test_the_run_probe_sees_a_model_agent(tmp_path):
    """The checks above can fail: an agents file that names an OpenAI agent loads its module (the
    session fails without an endpoint; the module is loaded all the same)."""
    agents = ("agents:\n  a: {kind: python, ref: 'light_agents:speak'}\n"
              "  b: {kind: openai, model: m, base_url: 'http://127.0.0.1:9', timeout: 0.5}\n")
    got = run_probe(tmp_path, WORKFLOW, ["--task", "go", "--max-turns", "4"],
                    "[m for m in mods if m in %r]" % (MODEL_AGENTS,), agents)
    assert "turnflow.runtime.agents.openai_chat" in got["probe"]
