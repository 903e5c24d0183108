"""Command-line comfort: rule lookup by name, help texts with examples."""

from __future__ import annotations

import pytest

from turnflow.cli import main
from turnflow.cli.util import FORMATS


def run(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_rule_by_kebab_case_name(capsys):
    code, out, _ = run(capsys, "rule", "shadowed-rule")
    assert code == 0 and out.startswith("# shadowed-rule (TF204)")
    assert run(capsys, "rule", "tf204")[1] == out
    code, _, err = run(capsys, "rule", "shadowd-rule")
    assert code == 2 and "did you mean `shadowed-rule`?" in err


def _bash_complete(script: str, words: list[str]) -> list[str]:
    import subprocess

    words_q = " ".join(f"'{w}'" for w in words)
    prog = f"{script}\nCOMP_WORDS=({words_q}); COMP_CWORD={len(words) - 1}; _turnflow; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    proc = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.skipif(__import__("shutil").which("bash") is None, reason="bash not installed")
def test_bash_completion_completes_subcommands_options_and_choices(capsys):
    code, script, _ = run(capsys, "completion", "bash")
    assert code == 0
    assert _bash_complete(script, ["turnflow", "ch"]) == ["check"]
    assert _bash_complete(script, ["turnflow", "check", "--format", ""]) == list(FORMATS)
    assert _bash_complete(script, ["turnflow", "check", "--se"]) == ["--select"]
    assert "lsp" in _bash_complete(script, ["turnflow", ""])


def test_zsh_and_fish_scripts_name_every_subcommand(capsys):
    import argparse

    from turnflow.cli.app import build_parser
    from turnflow.cli.commands.completion import commands

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    zsh = run(capsys, "completion", "zsh")[1]
    fish = run(capsys, "completion", "fish")[1]
    assert zsh.startswith("#compdef turnflow") and "bashcompinit" in zsh
    for name in commands(sub):
        assert f"-a {name} " in fish
    assert f"__fish_seen_subcommand_from check' -l format -xa '{' '.join(FORMATS)}'" in fish


def test_stdin_filename_names_the_input_and_selects_the_configuration(tmp_path, monkeypatch, capsys):
    import io
    import sys

    (tmp_path / "legacy").mkdir()
    (tmp_path / "turnflow.toml").write_text('per-file-ignores = { "legacy/*.flow" = ["TF102"] }\n')
    monkeypatch.chdir(tmp_path)
    bad = "workflow w {\n    participant a\n    participant b\n    start c\n}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "flows/a.flow")
    assert code == 1 and "flows/a.flow:4:11: TF102" in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "legacy/a.flow")
    assert code == 0, out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"workflow w {\n  a -> -> b\n}\n")))
    code, _, err = run(capsys, "fmt", "-", "--stdin-filename", "flows/b.flow")
    assert code == 1 and "flows/b.flow:2:8: TF001" in err


def test_colour_follows_no_color_and_force_color(tmp_path, monkeypatch, capsys):
    from turnflow.term import use_colour

    class Tty:
        def isatty(self):
            return True

    assert use_colour(Tty(), {}) and not use_colour(Tty(), {"NO_COLOR": "1"})
    assert not use_colour(Tty(), {"TERM": "dumb"}) and use_colour(Tty(), {"TERM": "dumb", "FORCE_COLOR": "1"})
    assert not use_colour(object(), {}) and not use_colour(object(), {"FORCE_COLOR": "0"})
    assert use_colour(object(), {"FORCE_COLOR": "1"}) and not use_colour(Tty(), {"NO_COLOR": "1", "FORCE_COLOR": "1"})
    f = tmp_path / "bad.flow"
    f.write_text("workflow w {\n    participant a\n    participant b\n    start c\n}\n")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    code, coloured, _ = run(capsys, "check", str(f))
    assert code == 1 and "\033[1;31mTF102 error\033[0m" in coloured and "\033[1;31m^\033[0m" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    plain = run(capsys, "check", str(f))[1]
    assert "\033[" not in plain
    import re

    assert re.sub(r"\033\[[0-9;]*m", "", coloured) == plain


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _stdin(monkeypatch, data: str):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))


def test_run_and_simulate_read_standard_input(monkeypatch, capsys, tmp_path):
    import json

    flow = (ROOT / "examples" / "support.flow").read_text()
    _stdin(monkeypatch, flow)
    code, out, err = run(capsys, "simulate", "-", "--runs", "5", "--format", "json")
    assert code == 0, err
    from_stdin = json.loads(out)["blocks"]
    code, out, _ = run(capsys, "simulate", str(ROOT / "examples" / "support.flow"), "--runs", "5", "--format", "json")
    assert json.loads(out)["blocks"] == from_stdin  # rule lines and texts included
    code, spec, _ = run(capsys, "compile", str(ROOT / "examples" / "support.flow"))
    _stdin(monkeypatch, spec)
    assert run(capsys, "simulate", "-", "--runs", "5")[0] == 0
    _stdin(monkeypatch, flow)
    store = tmp_path / "hub.db"
    code, out, err = run(capsys, "run", "-", "--agents", str(ROOT / "examples" / "support_agents.yaml"),
                         "--task", "my invoice is wrong", "--store", str(store))
    assert code == 0, err
    _stdin(monkeypatch, "this is neither")
    code, _, err = run(capsys, "run", "-", "--agents", str(ROOT / "examples" / "support_agents.yaml"))
    assert code == 1 and "-" in err


def test_every_subcommand_has_a_description_argument_help_and_working_examples():
    import argparse
    import shlex

    from turnflow.cli.app import build_parser
    from turnflow.cli.help import EXAMPLES

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(EXAMPLES) == set(sub.choices)
    for name, sp in sub.choices.items():
        assert sp.description, name
        assert "examples:" in (sp.epilog or ""), name
        undocumented = [a.dest for a in sp._actions if not isinstance(a, argparse._HelpAction) and not a.help]
        assert undocumented == [], name
        for example in EXAMPLES[name]:
            words = shlex.split(example.split("#")[0].split("|")[-1].split(">")[0].split("<")[0])
            if words[0] == "eval":
                words = shlex.split(words[1][2:-1])
            assert words[0] == "turnflow", example
            parser.parse_args(words[1:])  # flags and choices exist (SystemExit otherwise)
