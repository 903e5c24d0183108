"""Issue 35, part 2: the first real run. An `--agents` file is checked as a whole before any
session opens: every mistake at once, each at its file:line:col with a did-you-mean, nothing
written (exit 1: the file is wrong, docs/cli.md); a missing extra names the package to install and
the agent that needs it, and a missing API key is named, before a session opens (no `closed:
invite_rejected` on stdout; exit 2: the environment must change)."""

from __future__ import annotations

import sys
from pathlib import Path

from turnflow.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = str(ROOT / "examples" / "support.flow")
FRAMEWORKS = str(ROOT / "examples" / "frameworks.flow")
FRAMEWORK_AGENTS = str(ROOT / "examples" / "frameworks_agents.yaml")


def test_every_mistake_at_once_with_positions_and_did_you_mean(tmp_path, capsys):
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage:  {kind: scriptd, steps: [{say: hi}]}\n"
                      "  billing: {kind: scripted, step: [{say: hi}]}\n"
                      "  user:    {kind: openai, model: m, timout: 3}\n"
                      "  tech:    {kind: python, ref: \"not a ref\"}\n")
    store = tmp_path / "hub.db"
    assert main(["run", SUPPORT, "--agents", str(agents), "--store", str(store)]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 4, cap.err
    p = str(agents)
    assert lines[0] == (f"turnflow run: {p}:2:19: agent 'triage': unknown kind 'scriptd'; did you mean `scripted`? "
                        "(supported: scripted, openai, anthropic, python, langgraph, ag2, autogen)")
    assert lines[1].startswith(f"{p}:3:29: agent 'billing': unknown key 'step' for a scripted agent; "
                               "did you mean `steps`?")
    assert lines[2].startswith(f"{p}:4:37: agent 'user': unknown key 'timout'") and "did you mean `timeout`?" in lines[2]
    assert lines[3] == f"{p}:5:32: agent 'tech': `ref` must be \"module:function\" (dotted names), got 'not a ref'"
    assert not store.exists()  # nothing written


def test_a_missing_api_key_is_named_before_any_session(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage:  {kind: openai, model: m, base_url: \"http://127.0.0.1:9/v1\"}\n"
                      "  billing: {kind: scripted, steps: [{say: hi}]}\n"
                      "  user:    {kind: scripted, steps: [{say: hi}]}\n"
                      "  tech:    {kind: scripted, steps: [{say: hi}]}\n")
    store = tmp_path / "hub.db"
    assert main(["run", SUPPORT, "--agents", str(agents), "--store", str(store)]) == 2
    cap = capsys.readouterr()
    assert "invite_rejected" not in cap.out and cap.out == ""
    assert cap.err == (f"turnflow run: {agents}:2:3: agent 'triage': environment variable OPENAI_API_KEY is not set "
                       "(it holds the API key; any non-empty value for a local server)\n")
    assert not store.exists()


def test_a_missing_framework_package_names_it_and_the_agent_that_needs_it(capsys, monkeypatch):
    """`autogen-ext` missing (the reviewer's model client): the error names the reviewer and the
    package, not the LangGraph planner; each example agent imports only its own framework."""
    for name in [m for m in sys.modules if m == "autogen_ext" or m.startswith("autogen_ext.")] + ["autogen_ext"]:
        monkeypatch.setitem(sys.modules, name, None)  # Python's own "not installed" (submodules an earlier
        # test imported included: a cached `autogen_ext.models.replay` would be found without its parent)
    monkeypatch.delitem(sys.modules, "frameworks_reviewer", raising=False)
    assert main(["run", FRAMEWORKS, "--agents", FRAMEWORK_AGENTS]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.strip().splitlines()
    assert len(err) == 1, cap.err
    assert err[0].startswith(f"turnflow run: {FRAMEWORK_AGENTS}:8:34: agent 'reviewer': cannot import module "
                             "'frameworks_reviewer'")
    assert "pip install 'autogen-ext', or pip install 'turnflow[autogen] @ git+https://github.com/turnflow/turnflow' (in a checkout: " \
        "pip install -e '.[autogen]')" in err[0]
    assert "planner" not in cap.err


def test_a_missing_extra_of_a_kind_is_named_without_importing(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "autogen_agentchat", None)
    assert main(["run", FRAMEWORKS, "--agents", FRAMEWORK_AGENTS]) == 2
    err = capsys.readouterr().err
    assert err == (f"turnflow run: {FRAMEWORK_AGENTS}:8:20: agent 'reviewer': kind autogen needs autogen-agentchat, "
                   "not installed: pip install 'turnflow[autogen] @ git+https://github.com/turnflow/turnflow' "
                   "(in a checkout: pip install -e '.[autogen]')\n")


def test_the_autogen_extra_installs_what_the_example_imports():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("autogen-ext") for d in extras["autogen"])
    assert any(d.startswith("autogen-agentchat") for d in extras["autogen"])


def test_a_failed_turn_names_the_agent_once(tmp_path, capsys):
    (tmp_path / "failing_agent.py").write_text(
        "from turnflow.runtime.errors import AdapterError\n\n"
        "def triage(msg, tools):\n"
        "    raise AdapterError(\"agent 'triage': model call failed\")\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage:  {kind: python, ref: \"failing_agent:triage\"}\n"
                      "  billing: {kind: scripted, steps: [{say: hi}]}\n"
                      "  user:    {kind: scripted, steps: [{say: hi}]}\n"
                      "  tech:    {kind: scripted, steps: [{say: hi}]}\n")
    assert main(["run", SUPPORT, "--agents", str(agents)]) == 1
    err = capsys.readouterr().err
    assert "agent 'triage' failed turn 1 twice: model call failed" in err, err
    assert err.count("'triage'") == 1, err


def test_an_agent_that_cannot_join_is_told_in_words_not_the_hub_term(tmp_path, capsys):
    """A factory returning something else fails when its session opens: stdout says the session
    closed before its first turn because an agent could not join; stderr says why, naming it once."""
    (tmp_path / "bad_factory.py").write_text("def triage(tools, ctx):\n    return 42\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage:  {kind: langgraph, ref: \"bad_factory:triage\"}\n"
                      "  billing: {kind: scripted, steps: [{say: hi}]}\n"
                      "  user:    {kind: scripted, steps: [{say: hi}]}\n"
                      "  tech:    {kind: scripted, steps: [{say: hi}]}\n")
    assert main(["run", SUPPORT, "--agents", str(agents)]) == 1
    cap = capsys.readouterr()
    last = cap.out.strip().splitlines()[-1]
    assert last == "closed before the first turn: an agent could not join the session (invite_rejected)", cap.out
    assert "returned 'int', not a compiled LangGraph graph" in cap.err and cap.err.count("'triage'") == 1, cap.err
