"""The README's and docs' shell snippets run: every `turnflow ...` line of a ```sh block that
needs no network, no database server and no placeholder runs, in document order, in a temporary
folder holding the examples and small inputs for the commands that read files the docs do not
create (a team to migrate, a task list). A line that cannot run offline must be listed in
UNRUNNABLE with the reason, so docs cannot drift from behaviour unnoticed.

A plain `turnflow ARGS [< IN] [> OUT]` line runs in this process through `turnflow.cli.main`
(what the `turnflow` script calls), with its own standard input, output and working folder: some
60 of them each paid a Python start and the package's imports as a subprocess. A line that needs
the shell (`eval "$(...)"`, a `for` loop, a pipe) still runs with bash and the `turnflow` command,
so the installed-command path is run too."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import traceback
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


def plain_argv(line: str) -> tuple[list[str], str | None, str | None] | None:
    """(arguments after `turnflow`, stdin file, stdout file) for a line that needs no shell beyond
    `< FILE` and `> FILE`; None for one that does (expansions, globs, loops, pipes, lists)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)  # the `# ...` comment is dropped
    code = line.split("  #")[0]
    if not words or words[0] != "turnflow" or any(ch in code for ch in "$`*?~{}"):
        return None
    argv, redirects = [], {}
    it = iter(words[1:])
    for word in it:
        if word in ("<", ">"):
            redirects[word] = next(it, None)
            if redirects[word] is None:
                return None
        elif set(word) <= set("|&;()<>"):
            return None
        else:
            argv.append(word)
    return argv, redirects.get("<"), redirects.get(">")


def run_in_process(argv: list[str], stdin: bytes, cwd: Path, stdout_file: str | None) -> tuple[int, str]:
    """`turnflow ARGV` as the script runs it (`sys.exit(turnflow.cli.main())`), in `cwd`, with
    `stdin` as standard input: (exit status, its stdout + stderr as text, or stderr alone when
    stdout goes to a file). An exception that escapes `main` is reported with its traceback, as
    the process would have printed it."""
    from turnflow.cli import main

    out, errs = io.BytesIO(), io.BytesIO()
    streams = [io.TextIOWrapper(buf, encoding="utf-8", write_through=True) for buf in (out, errs)]
    path, modules, here = list(sys.path), set(sys.modules), os.getcwd()
    stdin_was = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse's usage errors, --help, --version
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                status = 1
                sys.stderr.write(traceback.format_exc())
            for stream in streams:
                stream.flush()
    finally:
        os.chdir(here)
        sys.stdin = stdin_was
        sys.path[:] = path
        for name in set(sys.modules) - modules:  # what `migrate --import` imported from the sandbox
            if str(cwd) in str(getattr(sys.modules[name], "__file__", None) or ""):
                del sys.modules[name]
    if stdout_file is not None:
        (cwd / stdout_file).write_bytes(out.getvalue())
        return status, errs.getvalue().decode("utf-8", "replace")
    return status, (out.getvalue() + errs.getvalue()).decode("utf-8", "replace")


def test_plain_lines_are_told_from_shell_lines():
    assert plain_argv('turnflow run a.flow --task "I was charged"  # x | y; $z') == (
        ["run", "a.flow", "--task", "I was charged"], None, None)
    assert plain_argv("turnflow check - --stdin-filename f/a.flow < a.flow   # as that file") == (
        ["check", "-", "--stdin-filename", "f/a.flow"], "a.flow", None)
    assert plain_argv("turnflow compile x.flow > specs.json") == (["compile", "x.flow"], None, "specs.json")
    assert plain_argv("turnflow check --exclude 'drafts' .") == (["check", "--exclude", "drafts", "."], None, None)
    for line in ('eval "$(turnflow completion bash)"', "turnflow completion fish | source",
                 'for f in a/*.flow; do turnflow graph "$f"; done', "turnflow check a && turnflow fmt a",
                 "turnflow check *.flow", "turnflow check >", "python3 -m turnflow check"):
        assert plain_argv(line) is None, line


def test_in_process_lines_report_what_the_process_would(tmp_path, monkeypatch):
    assert run_in_process(["rule", "TF204"], b"", tmp_path, None)[0] == 0
    status, output = run_in_process(["check", "--no-such-option"], b"", tmp_path, None)
    assert status == 2 and "--no-such-option" in output
    status, output = run_in_process(["fmt", "-"], b"workflow w {\n", tmp_path, None)  # stdin is the given bytes
    assert status == 1 and "-:2:1: TF001" in output and "Traceback" not in output
    status, output = run_in_process(["schema", "session-spec"], b"", tmp_path, "out.json")
    assert status == 0 and output == "" and (tmp_path / "out.json").read_text().startswith("{")

    def broken(argv):
        raise RuntimeError("escaped")

    monkeypatch.setattr("turnflow.cli.main", broken)
    status, output = run_in_process(["check"], b"", tmp_path, None)
    assert status == 1 and "Traceback" in output and "RuntimeError: escaped" in output


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_docs_shell_snippets_run_offline(tmp_path):
    env = sandbox(tmp_path)
    ran, in_process, skipped, failures = 0, 0, [], []
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
        ran += 1
        plain = plain_argv(line)
        if plain is not None:
            argv, stdin_file, stdout_file = plain
            status, output = run_in_process(argv, (tmp_path / stdin_file).read_bytes() if stdin_file else stdin,
                                            tmp_path, stdout_file)
            in_process += 1
        else:
            proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, input=stdin, capture_output=True,
                                  timeout=120)
            status, output = proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")
        # 0 done, 1 findings (e.g. `compile --profile ag2-builtin` refusing TF301); 2 or 3 is a docs bug
        if status not in (0, 1) or "Traceback" in output or "internal error" in output:
            failures.append(f"{doc}: `{line}` exited {status}:\n{output[-800:]}")
    assert failures == [], "\n\n".join(failures)
    assert ran >= 30, (ran, skipped)
    assert ran - in_process >= 2, "the shell lines (eval, for) run through bash and the `turnflow` command"
    for doc, line, reason in skipped:
        assert reason, (doc, line)
