"""Issue 25, item 7: one input-size policy (turnflow.workspace.files.MAX_BYTES, 64 MB) for every command,
every file a command reads and standard input: a larger input is refused with exit 2 and a line
saying so, before it is read (the file here is sparse: nothing is written, nothing is read)."""

from __future__ import annotations

import io
import sys

import pytest
from batch_helpers import write_batch

from turnflow.cli import main
from turnflow.workspace.files import MAX_BYTES


def _huge(path) -> str:
    with open(path, "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    return str(path)


@pytest.mark.parametrize("command, name", [
    ("check", "big.flow"), ("fmt", "big.flow"), ("compile", "big.flow"), ("graph", "big.flow"),
    ("migrate", "big.py"), ("decompile", "big.json"), ("simulate", "big.flow"),
])
def test_every_command_refuses_a_file_over_the_limit(tmp_path, capsys, command, name):
    rc = main([command, _huge(tmp_path / name)])
    out = capsys.readouterr()
    assert rc == 2
    assert f"file too large ({MAX_BYTES + 1} bytes; the limit is {MAX_BYTES})" in out.out + out.err


@pytest.mark.parametrize("command", ["migrate", "check", "compile"])
def test_standard_input_over_the_limit_is_refused(monkeypatch, capsys, command):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"#" * (MAX_BYTES + 1))))
    rc = main([command, "-"])
    out = capsys.readouterr()
    assert rc == 2
    assert f"standard input too large (over {MAX_BYTES} bytes)" in out.out + out.err


@pytest.mark.parametrize("which", ["agents", "tasks"])
def test_run_refuses_an_agents_or_task_file_over_the_limit(tmp_path, capsys, which):
    files = write_batch(tmp_path, 2)
    _huge(files[which])
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", str(tmp_path / "hub.db")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"file too large ({MAX_BYTES + 1} bytes; the limit is {MAX_BYTES})" in err
