"""The README's and docs' shell snippets run: every `turnflow ...` line of a ```sh block that
needs no network, no database server and no placeholder is run with bash, in document order,
in a temporary folder holding the examples and small inputs for the commands that read files
the docs do not create (a team to migrate, a task list). A line that cannot run offline must be
listed in UNRUNNABLE with the reason, so docs cannot drift from behaviour unnoticed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDER = re.compile(r"\b(PATH|FILE|NAME|OUT|SECONDS|SESSION_ID)\b|\.\.\.|\[--|<[a-z]")
UNRUNNABLE = {  # a fragment of the line -> why it does not run here
    "pip install": "installs packages",
    "postgresql://": "needs a PostgreSQL server",
    "support_models.yaml": "calls a model API over the network",
    "turnflow lsp": "a language server: waits for an editor on stdin",
    "python3 -m venv": "creates a virtual environment and installs into it",
    "turnflow serve": "a server: runs until stopped (tests/test_serve.py starts it and drives it)",
    "ag2_consult.py": "needs a running turnflow serve (tests/test_serve.py runs it against one)",
    "my_ag2_agents.py": "the user's own AG2 program",
    "--hub ws://": "needs a served hub with remote agents (tests/test_serve_run_hub.py)",
}
INPUTS = {  # sandbox file -> where it comes from
    "my_groupchat.py": "tests/fixtures/migrate/classic/builder_and_closure.py",
    "team.json": "tests/fixtures/migrate/autogen/round_robin_reflection.json",
    "team.py": "tests/fixtures/migrate/autogen/round_robin_python.py",
    "example.ipynb": "tests/fixtures/migrate/classic/notebook_fsm.ipynb",
    "myapp/team.py": "tests/fixtures/migrate/live/team.py",
    "agents.yaml": "examples/support_agents.yaml",
    "a.flow": "examples/support.flow",
    "support.flow": "examples/support.flow",
    "flow.json": None,
    "flows/support.flow": "examples/support.flow",
    "generated/b.flow": "examples/research_loop.flow",
    "ci/turnflow.toml": None,
    "tasks.jsonl": None,
}


def snippets() -> list[tuple[str, str]]:
    """(document, command line) for every line of every ```sh block, continuation lines joined."""
    out = []
    for doc in DOCS:
        for block in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    out.append((doc.relative_to(ROOT).as_posix(), line.strip()))
    return out


def concrete(line: str) -> str:
    """A synopsis whose only placeholder is PATH runs on the examples folder."""
    return re.sub(r"\bPATH(\.\.\.)?(?=\s|$)", "examples", line)


def why_not(line: str) -> str:
    """Why a line is not run here ('' when it runs)."""
    for fragment, reason in UNRUNNABLE.items():
        if fragment in line:
            return reason
    if line.startswith("python3 -m pip install -q -e '.[test]'"):
        return "the test suite itself"
    if PLACEHOLDER.search(line.split("  #")[0]):
        return "a synopsis with placeholders"
    if ("--format svg" in line or "--format png" in line) and shutil.which("dot") is None:
        return "needs Graphviz's dot"
    return ""


def sandbox(tmp: Path) -> dict:
    shutil.copytree(ROOT / "examples", tmp / "examples")
    (tmp / "docs" / "pictures").mkdir(parents=True)
    for name, origin in INPUTS.items():
        target = tmp / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin is not None:
            shutil.copy(ROOT / origin, target)
    import json

    import turnflow

    (tmp / "flow.json").write_text(json.dumps(turnflow.compile((ROOT / "examples" / "support.flow").read_text())))
    (tmp / "ci" / "turnflow.toml").write_text('ignore = ["TF205"]\nextend-exclude = ["generated"]\n')
    (tmp / "tasks.jsonl").write_text('{"id": "t1", "task": "I was charged twice"}\n{"id": "t2", "task": "it crashes"}\n')
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "turnflow"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m turnflow "$@"\n')
    shim.chmod(0o755)
    # one bytecode cache for the sandbox's commands: the first `turnflow` compiles the package, the
    # others load it (with PYTHONDONTWRITEBYTECODE each of some 80 commands compiled all of it again)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", "PYTHONPYCACHEPREFIX": str(tmp.parent / f"{tmp.name}-pycache")}
    for name in ("FORCE_COLOR", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def test_snippets_are_found():
    lines = [line for _, line in snippets()]
    assert any(line.startswith("turnflow check") for line in lines) and len(lines) > 40


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_docs_shell_snippets_run_offline(tmp_path):
    env = sandbox(tmp_path)
    ran, skipped, failures = 0, [], []
    stdin = (ROOT / "examples" / "support.flow").read_bytes()
    for doc, line in snippets():
        line = concrete(line)
        if line.startswith("python3 -m pip install -q -e") or (not line.startswith(("turnflow ", "eval ", "for "))
                                                                and "turnflow" not in line):
            continue
        reason = why_not(line)
        if reason:
            skipped.append((doc, line, reason))
            continue
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, input=stdin, capture_output=True,
                              timeout=120)
        ran += 1
        output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        # 0 done, 1 findings (e.g. `compile --profile ag2-builtin` refusing TF301); 2 or 3 is a docs bug
        if proc.returncode not in (0, 1) or "Traceback" in output or "internal error" in output:
            failures.append(f"{doc}: `{line}` exited {proc.returncode}:\n{output[-800:]}")
    assert failures == [], "\n\n".join(failures)
    assert ran >= 30, (ran, skipped)
    for doc, line, reason in skipped:
        assert reason, (doc, line)
