"""`turnflow.migrate.from_object` and `turnflow migrate --import` (issue 23, part 2): live objects
migrate exactly, and on the fixtures both paths give the same flow where the static one is exact.

AutoGen AgentChat 0.7 installs next to ag2 1.2.1 and is tested in-process. The classic
`GroupChat` and AG2's group patterns live in the `autogen` package of ag2 < 1.0, which is the
same distribution (`ag2`) as 1.2.1 and cannot share its environment: those comparisons run under
the interpreter named by TURNFLOW_AG2_CLASSIC_PYTHON (e.g. a venv with `pip install ag2==0.9.9`;
the test puts turnflow's sources and this environment's packages after its own), and are skipped
without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from turnflow.cli import main
from turnflow.migrate import MigrateError, from_object

HERE = Path(__file__).parent
ROOT = HERE / "fixtures" / "migrate"


def _agentchat():
    try:
        import autogen_agentchat  # noqa: F401
        import autogen_ext.models.openai  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"autogen-agentchat / autogen-ext[openai] are not installed ({exc})")


AUTOGEN_FIXTURES = ["autogen/swarm_python.py", "autogen/graphflow_python.py", "autogen/graphflow_parallel.py",
                    "autogen/round_robin_python.py", "autogen/selector_python.py", "soundness/graphflow_diverge.py",
                    "soundness/termination_branch.py", "autogen/message_filter.py",
                    "autogen/nested_team.py"]


@pytest.mark.parametrize("fixture", AUTOGEN_FIXTURES)
def test_an_agentchat_team_object_migrates_to_the_flow_of_its_source(fixture, monkeypatch):
    _agentchat()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    sys.path.insert(0, str(HERE))
    from live_compare import compare, one_ssl_context

    one_ssl_context(monkeypatch)  # no model is called: one CA bundle load, not one per agent
    rows = compare(ROOT / fixture)
    assert rows
    for row in rows:
        assert row["live"] == row["static"], (row["name"], row["static"], row["live"])


def test_a_graphflow_object_keeps_its_callable_edge_conditions(monkeypatch):
    """`dump_component()` drops a callable condition (the edge looks unconditional); the live path
    reads the lambda from its source, as the static path does."""
    _agentchat()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    sys.path.insert(0, str(HERE))
    from live_compare import build, one_ssl_context

    one_ssl_context(monkeypatch)
    namespace, _ = build(ROOT / "autogen" / "graphflow_python.py")
    text, notes = from_object(namespace["flow"], name="flow")
    assert 'reviewer -> summarizer when text contains "APPROVE"' in text
    assert "handoff reviewer -> archivist" in text  # `len(...) > 2000`: a routing tool, TF406
    assert any(n.code == "TF406" for n in notes)


def test_an_object_that_is_no_team_is_refused():
    with pytest.raises(MigrateError) as err:
        from_object(object())
    assert err.value.diagnostics[0].code == "TF401"


TEAM_MODULE = '''import os
os.environ.setdefault("OPENAI_API_KEY", "sk-test")
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

client = OpenAIChatCompletionClient(model="gpt-4o")
primary = AssistantAgent("primary", model_client=client)
critic = AssistantAgent("critic", model_client=client)
team = RoundRobinGroupChat([primary, critic],
                           termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(9))
'''


def test_cli_import_migrates_the_object_the_module_builds(tmp_path, monkeypatch, capsys):
    _agentchat()
    (tmp_path / "live_team_module.py").write_text(TEAM_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["migrate", "--import", "live_team_module:team", "-o", "team.flow", "-q"]) == 0
    text = (tmp_path / "team.flow").read_text(encoding="utf-8")
    import live_team_module

    assert text == from_object(live_team_module.team, name="team", path="<live_team_module:team>")[0]
    assert "workflow team {" in text and "max_turns 8" in text
    assert 'terminate "text_mention" when text contains "APPROVE"' in text


@pytest.mark.parametrize("argv, message", [
    (["--import", "no_colon"], "MODULE:ATTRIBUTE"),
    (["--import", "json:nothing_here"], "has no attribute"),
    (["--import", "module_that_does_not_exist_23:x"], "importing `module_that_does_not_exist_23` failed"),
    (["some.py", "--import", "json:dumps"], "exactly one"),
])
def test_cli_import_failures_are_usage_errors_with_the_reason(argv, message, capsys):
    assert main(["migrate", *argv]) == 2
    assert message in capsys.readouterr().err


# The classic GroupChat / AG2 pattern fixtures run under the classic environment: every fixture of
# these folders that migrates as a classic chat or a pattern (AgentChat ones are compared above).
CLASSIC_DIRS = ("classic", "ag2-patterns", "soundness")
CLASSIC_VENV = HERE.parent / ".venv-ag2-classic"  # made by `bash .ci/classic-env` (CI runs it)
# Fixtures that do not run under ag2 0.9.9, with what stops them: the static path reads them, the
# live one has no object to read.
NOT_RUNNABLE = {
    "rag_round_robin.py": "'chromadb' is not installed",  # RetrieveUserProxyAgent: chromadb + IPython, not for CI
    "research_auto.py": "cannot contain any whitespace",  # AG2 0.9 rejects the agent name 'Research Scientist'
    "swarm_legacy.py": "cannot import name 'AFTER_WORK'",  # the swarm API (gone in 0.9; a call, not an object)
}


def _classic_python() -> str:
    named = os.environ.get("TURNFLOW_AG2_CLASSIC_PYTHON")
    if named:
        return named
    for rel in ("bin/python", "Scripts/python.exe"):
        if (CLASSIC_VENV / rel).exists():
            return str(CLASSIC_VENV / rel)
    pytest.skip("no classic AG2 environment: `bash .ci/classic-env` makes .venv-ag2-classic (ag2==0.9.9, the "
                "classic `autogen` package, cannot be installed next to ag2==1.2.1), or set "
                "TURNFLOW_AG2_CLASSIC_PYTHON to such an interpreter")


def test_classic_group_chats_and_patterns_migrate_alike_from_objects(tmp_path):
    """Each fixture is run (as its program runs, chats recorded instead of started) under ag2 0.9.9:
    every group chat and pattern it builds, migrated live, equals a block of the static output, and
    every static block equals a live chat (a TF410 block: one of the program's variants)."""
    python = _classic_python()
    fixtures = sorted(p for d in CLASSIC_DIRS for p in (ROOT / d).iterdir() if p.suffix in (".py", ".ipynb"))
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"), OPENAI_API_KEY="sk-test",
               TURNFLOW_LIVE_FALLBACK_PATH=sysconfig.get_paths()["purelib"])
    run = subprocess.run([python, str(HERE / "live_compare.py"), *map(str, fixtures)], capture_output=True,
                         text=True, env=env, timeout=600, cwd=tmp_path)  # cwd: work dirs the agents make
    rows = {r["file"]: r for r in (json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith('{"file"'))}
    assert set(rows) == {p.name for p in fixtures}, (run.returncode, run.stderr[-3000:])
    compared = {f: r for f, r in rows.items() if "family" not in r and f not in NOT_RUNNABLE}
    assert len(compared) >= 28, sorted(compared)  # every classic / pattern fixture of the folders
    for name, reason in NOT_RUNNABLE.items():
        assert reason in rows[name].get("error", ""), (name, rows[name])
    errors = {f: r["error"] for f, r in compared.items() if "error" in r}
    assert not errors, errors
    different = {f: r["problems"] for f, r in compared.items() if r["problems"]}
    assert not different, different
    assert sum(len(r["live"]) for r in compared.values()) >= 35  # chats actually built and read


def test_the_live_path_gives_the_same_typed_model(monkeypatch):
    """from a live team and from its source: the same `MigratedTeam` statements and targets."""
    _agentchat()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    sys.path.insert(0, str(HERE))
    from dataclasses import fields

    from live_compare import build, one_ssl_context
    from turnflow.migrate import migrate
    from turnflow.migrate.live_objects import migrate_object

    one_ssl_context(monkeypatch)
    path = ROOT / "autogen" / "swarm_python.py"
    namespace, _ = build(path)
    live = migrate_object(namespace["team"], name="team").teams[0]
    static = migrate(path.read_text(encoding="utf-8"), path.name).teams[0]

    def shape(team):
        skip = {"comments", "provenance", "group"}
        return [(type(s).__name__, tuple(getattr(s, f.name) for f in fields(s) if f.name not in skip))
                for s in team.statements]

    assert shape(live) == shape(static)
