"""Issue 33, item 8: text that came from an agent, a model or someone else's spec cannot break
turnflow's output. Half an emoji (a lone surrogate) in an agent's message no longer makes text-mode
`run` exit 1 silently with the session left `active`; control characters (clear screen, window
title, OSC 52 clipboard writes, hyperlinks, a carriage return overwriting the line) and bidi
controls reach the terminal as visible escapes (`\\x1b`, `\\r`, `\\u202e`), in `run`, `inspect`,
`inspect --summary`, `simulate` and every error that quotes an agent."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnflow.term import visible

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
NASTY = ("half an emoji \ud83d here; \x1b[2J\x1b[H clear; \x1b]0;pwned\x07 title; \x1b]52;c;ZXZpbA==\x07 clipboard; "
         "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ hyperlink; fake\rOVERWRITE; \u202egnp.exe; \x9b31m CSI")
# what must never reach a terminal raw: C0 but \n and \t, DEL, C1, bidi controls, separators, lone surrogates
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def test_visible_writes_every_control_as_an_escape():
    shown = visible(NASTY)
    assert not RAW.search(shown)
    for escape in ("\\ud83d", "\\x1b[2J", "\\x1b]0;pwned\\x07", "\\x1b]52;c;", "\\x1b]8;;", "\\r", "\\u202e",
                   "\\x9b31m"):
        assert escape in shown, (escape, shown)
    assert visible("line 1\r\nline 2\n\ttabbed 😀 é ü 漢字") == "line 1\nline 2\n\ttabbed 😀 é ü 漢字"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2100)))
def test_visible_output_is_printable_utf8_and_idempotent(text):
    shown = visible(text)
    assert not RAW.search(shown)
    shown.encode("utf-8")  # never raises: no lone surrogate is left
    assert visible(shown) == shown
    if not RAW.search(text.replace("\r\n", "\n")):
        assert shown == text.replace("\r\n", "\n")  # ordinary text is untouched


def _env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _turnflow(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "turnflow", *argv], capture_output=True, env=_env(**env),
                          cwd=cwd, timeout=120)


def _agents(tmp_path: Path, body: str) -> Path:
    (tmp_path / "foreign_agent.py").write_text(f"def triage(msg, tools):\n{body}\n")
    path = tmp_path / "agents.yaml"
    path.write_text("""agents:
  triage: {kind: python, ref: "foreign_agent:triage"}
  tech: {kind: scripted, steps: [{say: "x"}]}
  billing: {kind: scripted, steps: [{say: "x"}]}
  user: {kind: scripted, steps: [{say: "x"}]}
""")
    return path


def _clean(data: bytes) -> str:
    text = data.decode("utf-8")  # strict: the output is valid UTF-8
    assert not RAW.search(text), repr(text)
    return text


@pytest.mark.parametrize("encoding", [None, "ascii"])
def test_run_prints_an_agents_nasty_text_escaped_and_closes_the_session(tmp_path, encoding):
    agents = _agents(tmp_path, f"    return {NASTY!r}")
    extra = {"PYTHONIOENCODING": encoding} if encoding else {}
    r = _turnflow("run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task", "hi",
                  "--store", "hub.db", cwd=tmp_path, **extra)
    out = _clean(r.stdout)
    assert r.returncode == 0 and r.stderr == b"", (r.returncode, r.stderr)
    assert "1 triage: half an emoji \\ud83d here; \\x1b[2J" in out and "fake\\rOVERWRITE" in out, out
    assert out.rstrip().endswith("closed: after_work")

    listing = _turnflow("inspect", "hub.db", "--events", cwd=tmp_path)
    shown = _clean(listing.stdout)
    assert listing.returncode == 0 and " closed " in shown and " active " not in shown
    summary = _turnflow("inspect", "--summary", "hub.db", cwd=tmp_path)
    assert summary.returncode == 0 and "after_work" in _clean(summary.stdout)


def test_run_json_keeps_the_text_exactly_and_valid(tmp_path):
    agents = _agents(tmp_path, f"    return {NASTY!r}")
    r = _turnflow("run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task", "hi",
                  "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    result = json.loads(_clean(r.stdout))  # JSON escapes (\\u001b, \\ud83d): the data itself is kept
    assert result["turns"][0]["body"] == NASTY


def test_an_error_quoting_an_agent_is_escaped(tmp_path):
    agents = _agents(tmp_path, "    raise ValueError('bad \\x1b]0;pwned\\x07 \\ud83d \\u202eexe')")
    r = _turnflow("run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task", "hi",
                  "--store", "hub.db", cwd=tmp_path)
    err = _clean(r.stderr)
    assert r.returncode == 1 and "ValueError: bad \\x1b]0;pwned\\x07 \\ud83d \\u202eexe" in err, err
    _clean(_turnflow("inspect", "hub.db", "--events", cwd=tmp_path).stdout)


def test_simulate_escapes_the_names_of_a_foreign_spec(tmp_path):
    r = _turnflow("compile", str(ROOT / "examples" / "support.flow"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    spec = r.stdout.decode().replace('"after_work"', '"after\\u001b]0;pwned\\u0007\\r\\u202ework"')
    assert "pwned" in spec
    (tmp_path / "spec.json").write_text(spec)
    sim = _turnflow("simulate", "spec.json", "--runs", "50", cwd=tmp_path)
    text = _clean(sim.stdout)
    assert sim.returncode == 0 and "after\\x1b]0;pwned\\x07\\r\\u202ework" in text, text


def test_check_shows_control_characters_of_a_foreign_flow_escaped_with_the_caret_under_them(tmp_path):
    (tmp_path / "c.flow").write_bytes(b'workflow w {\n participant a initiator # \x1b]0;pwned\x07\n'
                                      b' participant b "\x1b[2J"\n}\n')
    r = _turnflow("check", "c.flow", cwd=tmp_path)
    text = _clean(r.stdout)
    assert r.returncode == 1, text
    lines = text.splitlines()
    i = lines.index('   3 |  participant b "\\x1b[2J"')
    assert lines[i + 1] == "     |                " + "^" * len('"\\x1b[2J"'), text
    assert 'invalid string literal "\\x1b[2J"' in lines[i - 1]


class _FailingStdout:
    """A terminal that goes away after the first line (EIO): writes after it raise."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        if self.lines:
            raise OSError(5, "Input/output error")
        self.lines.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_output_that_cannot_be_written_never_leaves_the_session_active(tmp_path, monkeypatch, capsys):
    from turnflow.cli import main

    agents = _agents(tmp_path, "    return 'hello'")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdout", _FailingStdout())
    rc = main(["run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task", "hi",
               "--store", "hub.db"])
    said = capsys.readouterr().err
    monkeypatch.undo()
    assert rc == 2 and "the output could not be written (OSError" in said and "inspect hub.db" in said, said
    listing = _turnflow("inspect", "hub.db", cwd=tmp_path)
    assert " closed " in _clean(listing.stdout) and " active " not in listing.stdout.decode()


def test_every_output_path_writes_a_lone_surrogate_escaped(tmp_path):
    """A `.flow` string may hold half an emoji or ESC through its JSON escapes (`\\ud83d`,
    `\\u001b`): compile, graph (DOT, Mermaid, JSON; to a file or the terminal) and fmt write it
    escaped instead of exiting 3 on the encoding."""
    (tmp_path / "s.flow").write_text('workflow w "t \\ud83d x" {\n participant a "half \\ud83d \\u001b[2J" initiator\n'
                                     ' participant b\n start a\n a -> b when text contains "\\ud83d"\n'
                                     ' b -> terminate "r\\ud83d"\n}\n')
    for argv, out in ((["compile", "s.flow", "-o", "s.json"], "s.json"), (["graph", "s.flow", "-o", "s.dot"], "s.dot"),
                      (["graph", "s.flow", "--format", "mermaid", "-o", "s.mmd"], "s.mmd"),
                      (["graph", "s.flow", "--format", "json", "-o", "g.json"], "g.json")):
        r = _turnflow(*argv, cwd=tmp_path)
        assert r.returncode == 0, (argv, r.stderr)
        (tmp_path / out).read_bytes().decode("utf-8")  # strict: valid UTF-8
    spec = json.loads((tmp_path / "s.json").read_text())
    assert spec[0]["participants"][0]["description"] == "half \ud83d \x1b[2J"  # JSON keeps the text itself
    shown = _turnflow("graph", "s.flow", cwd=tmp_path)
    assert shown.returncode == 0 and "\\x1b[2J" in _clean(shown.stdout)
    fmt = _turnflow("fmt", "s.flow", cwd=tmp_path)
    assert fmt.returncode == 0 and '"half \\ud83d \\u001b[2J"' in (tmp_path / "s.flow").read_text()
