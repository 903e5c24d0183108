"""Inputs that used to hang or crash (issue #25, items 4-5): backtracking globs in `.gitignore`
and `exclude`, bad character ranges, a deeply nested configuration, FIFOs named as inputs or
found while walking a folder. Each command runs in a subprocess with a time limit: a hang
fails the test instead of stalling the suite."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from turnflow.workspace.globs import Glob, GlobError
from turnflow.workspace.ignore import glob_match, parse_gitignore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FLOW = (EXAMPLES / "support.flow").read_text()
SRC = str(Path(__file__).resolve().parents[1] / "src")


def tf(*argv: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "turnflow", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_a_backtracking_glob_matches_in_linear_time():
    pattern = "*a" * 12 + "*b"
    name = "a" * 5000  # the regex took 43 s at 50 letters
    started = time.monotonic()
    assert not Glob(pattern).match(name)
    assert not glob_match(name, name, [pattern])
    assert not parse_gitignore(pattern + "\n")[0].regex.match(name)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("pattern, path, want", [
    ("*.flow", "a.flow", True), ("*.flow", "d/a.flow", False), ("**/x", "a/b/x", True), ("**/x", "x", True),
    ("a/**", "a/b/c", True), ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True), ("a/**/b", "ab", False),
    ("[a-c]?", "bz", True), ("[!a-c]?", "bz", False), ("\\*", "*", True), ("\\*", "a", False),
    ("a*b*c", "aXbYc", True), ("a*b*c", "a/b/c", False), ("[]]", "]", True),
])
def test_glob_semantics(pattern, path, want):
    assert Glob(pattern).match(path) is want


def test_a_bad_range_is_a_glob_error_not_a_crash():
    with pytest.raises(GlobError, match="z-a"):
        Glob("[z-a]")
    assert parse_gitignore("[z-a]\n*.tmp\n") and len(parse_gitignore("[z-a]\n*.tmp\n")) == 1


def test_gitignore_with_a_hostile_and_a_bad_pattern(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("[z-a]\n" + "*a" * 10 + "*b\n")
    (tmp_path / ("a" * 60 + ".flow")).write_text(FLOW)
    res = tf("check", ".", cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "bad character range z-a" in res.stderr and "skipped" in res.stderr


@pytest.mark.parametrize("key", ["exclude", "extend-exclude"])
def test_a_bad_range_in_exclude_is_exit_2_naming_the_key(tmp_path, key):
    (tmp_path / "turnflow.toml").write_text(f'{key} = ["[z-a]"]\n')
    (tmp_path / "a.flow").write_text(FLOW)
    res = tf("check", "a.flow", cwd=tmp_path)
    assert res.returncode == 2 and f"`{key}`" in res.stderr and "z-a" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_a_deeply_nested_config_is_exit_2(tmp_path):
    (tmp_path / "turnflow.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp_path / "a.flow").write_text(FLOW)
    res = tf("check", "a.flow", cwd=tmp_path)
    assert res.returncode == 2 and "nested too deeply" in res.stderr, res.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("argv", [["check", "p.flow"], ["fmt", "p.flow"], ["compile", "p.flow"],
                                  ["graph", "p.flow"], ["run", "p.flow", "--agents", "agents.yaml"],
                                  ["run", "a.flow", "--agents", "p.flow"],
                                  ["run", "a.flow", "--agents", "agents.yaml", "--tasks", "p.flow"]])
def test_a_fifo_named_as_an_input_is_exit_2_not_a_hang(tmp_path, argv):
    os.mkfifo(tmp_path / "p.flow")
    (tmp_path / "a.flow").write_text(FLOW)
    (tmp_path / "agents.yaml").write_text((EXAMPLES / "support_agents.yaml").read_text())
    res = tf(*argv, cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "not a regular file" in res.stdout + res.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_found_while_walking_are_never_opened(tmp_path):
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / "p.flow")
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "a.flow").write_text(FLOW)
    res = tf("check", ".", cwd=tmp_path)
    # named and refused without being opened (the FIFO `.gitignore` is not read); a.flow is checked
    assert res.returncode == 2, res.stderr
    assert "p.flow:1:1: TF000 error: `p.flow` is not a regular file" in res.stdout, res.stdout
    assert "in 2 files" in res.stdout, res.stdout


def _blocks(n: int) -> str:
    return "\n".join(f'workflow w{i} {{\n    participant a{i} initiator\n    participant b\n    start a{i}\n'
                     f'    max_turns 3\n    a{i} -> b\n    b -> terminate "done"\n}}\n' for i in range(n))


def test_checks_are_linear_in_the_number_of_blocks(monkeypatch):
    """run_checks rescanned every finding so far for every block: 4x the blocks cost ~11x the
    time (2,500 / 10,000 / 40,000 blocks: 1.0 / 7.1 / 258 s). Linear, 4x costs ~4x."""
    import dataclasses

    from turnflow.compiler.checks import run_checks
    from turnflow.dsl.parser import parse

    from turnflow import process

    monkeypatch.setattr(process, "PAUSE_GC", True)  # the parse (not timed) as the command runs it: GC paused
    parsed = parse(_blocks(10000))  # parsed once: the first 2,500 blocks are the small file
    monkeypatch.setattr(process, "PAUSE_GC", False)

    def best(n: int, runs: int) -> float:
        # CPU time of this process (not the clock: other processes on the machine do not count),
        # the small size's best of three (it is the divisor), the large size's once (0.8 s)
        flow = dataclasses.replace(parsed, blocks=parsed.blocks[:n])
        times = []
        for _ in range(runs):
            was = gc.isenabled()
            gc.disable()  # a full collection of the worker's heap inside the one large run would count against it
            try:
                started = time.process_time()
                found = run_checks(flow)
                times.append(time.process_time() - started)
            finally:
                if was:
                    gc.enable()
        assert len(found) >= n  # every block is checked (each has a finding)
        return min(times)

    small, large = best(2500, 3), best(10000, 1)
    assert large / small < 7.5, (small, large)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_file_name_that_is_not_utf8_is_escaped_in_json_and_sarif(tmp_path, fmt):
    """Issue #25 item 8: the name's raw bytes made the output invalid JSON."""
    try:
        (Path(os.fsdecode(bytes(tmp_path) + b"/b\xfe.flow"))).write_text("workflow x {\n}\n")
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    res = subprocess.run([sys.executable, "-m", "turnflow", "check", ".", "--format", fmt], cwd=tmp_path,
                         capture_output=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert res.returncode == 1, res.stderr
    import json

    text = res.stdout.decode("utf-8")  # valid UTF-8 ...
    json.loads(text)  # ... and valid JSON
    assert ("b%FE.flow" if fmt == "sarif" else "b\\udcfe.flow") in text


def _deep_flow(condition: str) -> str:
    return (f"workflow w {{\n    participant a tools [t]\n    participant b\n    start a\n"
            f"    a -> b when {condition}\n    b -> terminate \"x\"\n}}\n")


@pytest.mark.parametrize("condition", [
    "not " * 2000 + "tool t",  # was RecursionError (exit 3) in check, compile, fmt, graph and simulate
    "(tool t and " * 60 + "(tool t or tool t" + " or tool t)" * 60 + ")",  # and/or alternating by parentheses
], ids=["not-2000", "and-or-120"])
def test_a_condition_nested_too_deeply_is_tf002_at_its_position(tmp_path, condition):
    (tmp_path / "deep.flow").write_text(_deep_flow(condition))
    for command in ("check", "compile", "fmt", "graph", "simulate"):
        out = tf(command, "deep.flow", cwd=tmp_path)
        assert out.returncode == 1, (command, out.returncode, out.stderr[-300:])
        assert "deep.flow:5:" in out.stdout + out.stderr and "TF002" in out.stdout + out.stderr
        assert "nested too deeply" in out.stdout + out.stderr and "internal error" not in out.stderr


def test_a_condition_at_the_depth_limit_still_compiles(tmp_path):
    from turnflow.dsl.parser import MAX_CONDITION_DEPTH
    (tmp_path / "deep.flow").write_text(_deep_flow("not " * (MAX_CONDITION_DEPTH - 1) + "tool t"))
    out = tf("compile", "deep.flow", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-300:]
