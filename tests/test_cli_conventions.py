"""Issue 24: the habits a ruff user brings — fmt chooses files as check does, one exit policy
for a syntax error, ruff's flags and formats, no `.flow` files is a warning, docs that run."""

from __future__ import annotations

import pytest

from turnflow.cli import main

UGLY = "workflow w {participant a;participant b;start a;a->b}\n"
BROKEN = "workflow w {\n  a -> -> b\n}\n"


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- 1. fmt follows the project's rules -----------------------------------------------------------
def test_fmt_without_a_path_formats_the_current_folder_minus_the_project_excludes(tmp_path, monkeypatch, capsys):
    (tmp_path / "turnflow.toml").write_text('extend-exclude = ["generated"]\n')
    (tmp_path / "flows").mkdir()
    (tmp_path / "generated").mkdir()
    (tmp_path / "flows" / "a.flow").write_text(UGLY)
    (tmp_path / "generated" / "g.flow").write_text(UGLY)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "fmt")
    assert code == 0, err
    assert "reformatted flows/a.flow" in out.replace("./", "")
    assert (tmp_path / "generated" / "g.flow").read_text() == UGLY
    assert "1 file reformatted" in err


def test_fmt_exclude_force_exclude_and_config(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.flow").write_text(UGLY)
    (tmp_path / "b.flow").write_text(UGLY)
    other = tmp_path / "conf" / "turnflow.toml"
    other.parent.mkdir()
    other.write_text('extend-exclude = ["b.flow"]\nforce-exclude = true\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "fmt", "--check", "--exclude", "a.flow", ".")
    assert code == 1 and "b.flow" in out and "a.flow" not in out
    # a file named explicitly is kept ... unless --force-exclude (pre-commit passes names)
    assert run(capsys, "fmt", "--check", "--exclude", "a.flow", "a.flow")[0] == 1
    code, out, err = run(capsys, "fmt", "--check", "--exclude", "a.flow", "--force-exclude", "a.flow")
    assert code == 0 and out == "" and "No .flow files found" in err
    # --config names the file to read instead of searching upwards
    assert run(capsys, "fmt", "--check", "b.flow")[0] == 1
    code, out, err = run(capsys, "fmt", "--check", "--config", str(other), "b.flow")
    assert code == 0 and out == "" and "No .flow files found" in err


def test_fmt_bad_config_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "turnflow.toml"
    bad.write_text("exclud = []\n")
    code, _, err = run(capsys, "fmt", "--config", str(bad), str(tmp_path))
    assert code == 2 and "did you mean `exclude`" in err


@pytest.mark.parametrize("command", ["check", "fmt", "compile"])
def test_one_exit_policy_for_a_syntax_error(tmp_path, capsys, command):
    f = tmp_path / "broken.flow"
    f.write_text(BROKEN)
    code, out, err = run(capsys, command, str(f))
    assert code == 1  # docs/cli.md: content that was read but is wrong is a finding
    assert f"{f}:2:8: TF001" in out + err
    missing = str(tmp_path / "nope.flow")
    assert run(capsys, command, missing)[0] == 2  # unreadable: the invocation or the path


def test_fmt_formats_the_others_and_counts_the_failure(tmp_path, capsys):
    (tmp_path / "a.flow").write_text(UGLY)
    (tmp_path / "b.flow").write_text(BROKEN)
    (tmp_path / "c.flow").write_text("workflow w {\n    participant a\n    start a\n}\n")
    code, out, err = run(capsys, "fmt", str(tmp_path))
    assert code == 1
    assert (tmp_path / "a.flow").read_text() != UGLY and (tmp_path / "b.flow").read_text() == BROKEN
    assert err.rstrip().endswith("1 file reformatted, 1 file left unchanged, 1 file could not be formatted")
    (tmp_path / "a.flow").write_text(UGLY)
    code, out, err = run(capsys, "fmt", "--check", str(tmp_path))
    assert code == 1
    assert err.rstrip().endswith("1 file would be reformatted, 1 file already formatted, "
                                 "1 file could not be formatted")


def test_cli_docs_state_the_syntax_error_policy():
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    assert "`check`, `fmt` and `compile` exit 1" in text


# -- 3. no .flow files: a warning, exit 0, nothing in SARIF ---------------------------------------
@pytest.mark.parametrize("command", ["check", "fmt"])
def test_no_flow_files_is_a_warning_and_exit_0(tmp_path, monkeypatch, capsys, command):
    (tmp_path / "README.md").write_text("no flows here\n")
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "x.flow").write_text(UGLY)
    (tmp_path / "turnflow.toml").write_text('extend-exclude = ["vendor"]\n')  # all excluded
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, command)
    assert code == 0
    assert "warning: No .flow files found under `.`" in err and "TF000" not in out + err


def test_no_flow_files_is_no_sarif_result(tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "check", "--format", "sarif")
    assert code == 0 and "No .flow files found" in err
    assert json.loads(out)["runs"][0]["results"] == []


def test_a_missing_path_is_still_an_error(tmp_path, capsys):
    code, out, _ = run(capsys, "check", str(tmp_path / "nope"))
    assert code == 2 and "TF000" in out
