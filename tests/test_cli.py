"""The command line as a user meets it: exit codes, formats, bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnflow.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"

BAD = "workflow w {\n    participant a\n    participant a\n    start b\n}\n"
WARN = "workflow w {\n    participant u\n    participant a\n    start a\n    max_turns 5\n    a -> initiator\n    u -> terminate\n}\n"


def run(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_examples_check_clean(capsys):
    code, out, _ = run(["check", str(EXAMPLES)], capsys)
    assert code == 0, out
    assert "All checks passed (7 files)" in out


def test_errors_exit_1_with_caret(tmp_path, capsys):
    f = tmp_path / "bad.flow"
    f.write_text(BAD)
    code, out, _ = run(["check", str(f)], capsys)
    assert code == 1
    assert f"{f}:3:17: TF101 error: participant `a` is already declared" in out
    assert "   3 |     participant a\n     |                 ^\n" in out
    assert f"{f}:4:11: TF102 error" in out


def test_warnings_exit_0_unless_strict(tmp_path, capsys):
    f = tmp_path / "warn.flow"
    f.write_text(WARN)
    assert run(["check", str(f)], capsys)[0] == 0
    assert run(["check", "--strict", str(f)], capsys)[0] == 1


def test_json_format_fields(tmp_path, capsys):
    f = tmp_path / "bad.flow"
    f.write_text(BAD)
    code, out, _ = run(["check", "--format", "json", str(f)], capsys)
    data = json.loads(out)
    assert code == 1
    assert list(data[0]) == ["path", "line", "column", "end_line", "end_column", "code", "name", "severity",
                             "message", "help", "related"]
    assert [(d["line"], d["column"], d["code"], d["name"]) for d in data] == [
        (3, 17, "TF101", "duplicate-participant"), (4, 11, "TF102", "undeclared-participant")]
    assert data[0]["related"] and data[0]["related"][0]["line"] == 2  # the first declaration, as in the text


def test_sarif_is_2_1_0(tmp_path, capsys):
    f = tmp_path / "bad.flow"
    f.write_text(BAD)
    _, out, _ = run(["check", "--format", "sarif", str(f)], capsys)
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    run0 = log["runs"][0]
    ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    assert "TF101" in ids
    res = run0["results"][0]
    assert res["ruleId"] == "TF101" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert ids[res["ruleIndex"]] == "TF101"


def test_github_annotations(tmp_path, capsys):
    f = tmp_path / "bad.flow"
    f.write_text(BAD)
    _, out, _ = run(["check", "--format", "github", str(f)], capsys)
    assert out.startswith(f"::error file={f},line=3,col=17,")
    assert "title=TF101 duplicate-participant::" in out


def test_suppression_comment(tmp_path, capsys):
    f = tmp_path / "s.flow"
    f.write_text(WARN.replace("a -> initiator", "a -> initiator # turnflow: ignore[TF110]"))
    code, out, _ = run(["check", "--strict", str(f)], capsys)
    assert code == 0 and "TF110" not in out


def test_directory_without_flows(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    code, out, err = run(["check", str(tmp_path)], capsys)
    assert code == 0  # as in ruff: a warning, so a CI job over a repository without flows passes
    assert "TF000" not in out and f"warning: No .flow files found under `{tmp_path}`" in err
    assert "Traceback" not in out + err


def test_missing_file_still_checks_others(tmp_path, capsys):
    good = tmp_path / "bad.flow"
    good.write_text(BAD)
    code, out, _ = run(["check", str(tmp_path / "nope.flow"), str(good)], capsys)
    assert code == 2
    assert "no such file or directory" in out
    assert "TF101" in out


def test_binary_file(tmp_path, capsys):
    f = tmp_path / "image.flow"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    code, out, err = run(["check", str(f)], capsys)
    assert code == 2
    assert f"{f}:3:1: TF000 error: binary file" in out
    assert "Traceback" not in out + err


def test_invalid_utf8(tmp_path, capsys):
    f = tmp_path / "latin1.flow"
    f.write_bytes("workflow w {\n participant caf\u00e9\n}".encode("latin-1"))
    code, out, _ = run(["check", str(f)], capsys)
    assert code == 2
    assert f"{f}:2:17: TF000 error: not UTF-8 text: invalid byte 0xe9" in out


def test_ten_megabytes_of_garbage(tmp_path):
    import random

    rnd = random.Random(7)
    alphabet = "abc{}->*;# \n\"participant workflow 123 é"
    f = tmp_path / "garbage.flow"
    f.write_text("".join(rnd.choices(alphabet, k=10 * 1024 * 1024)))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "turnflow", "check", str(f)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1
    assert "TF001 error" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    # the offending line is shown cut to a readable width
    assert max(len(line) for line in proc.stdout.splitlines()) < 400


def test_rule_docs(capsys):
    code, out, _ = run(["rule", "TF101"], capsys)
    assert code == 0
    assert out.startswith("# duplicate-participant (TF101)")
    assert "## Why is this bad?" in out
    code, out, err = run(["rule", "TF999"], capsys)
    assert code == 2 and "unknown rule code" in err
    code, out, _ = run(["rule", "--list"], capsys)
    assert "TF001  syntax-error" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("turnflow 0.")


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--format", "nope"])  # (`check` alone checks the current folder)
    assert exc.value.code == 2


def test_fmt_check_diff_and_write(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text("workflow w {participant a;participant bb;start a;a->bb}\n")
    code, out, _ = run(["fmt", "--check", str(f)], capsys)
    assert code == 1 and f"would reformat {f}" in out
    code, out, _ = run(["fmt", "--diff", str(f)], capsys)
    assert code == 1 and "+    participant a\n" in out
    assert f.read_text().startswith("workflow w {participant")  # --check/--diff never write
    code, out, _ = run(["fmt", str(f)], capsys)
    assert code == 0
    assert f.read_text() == ("workflow w {\n    participant a\n    participant bb\n    start a\n"
                             "    a -> bb\n}\n")
    assert run(["fmt", "--check", str(f)], capsys)[0] == 0


def test_fmt_leaves_broken_file_untouched(tmp_path, capsys):
    f = tmp_path / "broken.flow"
    original = "workflow w {\n    participant a \"oops\n}\n"
    f.write_text(original)
    code, _, err = run(["fmt", str(f)], capsys)
    assert code == 1  # a syntax error is a finding (docs/cli.md), as in check and compile
    assert "TF001" in err and "unterminated string" in err and "1 file could not be formatted" in err
    assert f.read_text() == original


@pytest.mark.parametrize("line, column", [("    participant bad-\n", 20), ("    participant x-y-  initiator\n", 20)])
def test_a_name_ending_in_a_dash_says_why(line, column):
    # docs/language.md: a NAME does not end in `-`; before, the message was only "unexpected character `-`"
    import turnflow

    text = "workflow w {\n    participant a\n" + line + "    start a\n}\n"
    (d,) = turnflow.check(text)
    assert (d.code, d.span.line, d.span.column) == ("TF001", 3, column)
    assert d.message.startswith("unexpected character `-`: a name cannot end in `-`;")
    for other in ("workflow w {\n    a -> - b\n}\n", "workflow w {\n    max_turns 3-\n}\n"):  # not after a name
        (d,) = turnflow.check(other)
        assert d.message.startswith("unexpected character `-`") and "a name cannot end" not in d.message


def test_a_block_never_closed_points_at_its_brace(tmp_path, capsys):
    # before: only "6:1: expected a statement or `}`, found the end of the file", however far the block began
    f = tmp_path / "open.flow"
    f.write_text('workflow done {\n    participant a "{ in a string" # { in a comment\n}\n'
                 "workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n")
    code, out, _ = run(["check", str(f)], capsys)
    assert code == 1
    assert f"{f}:9:1: TF001 error: expected a statement or `}}`, found the end of the file: block `w` is not closed" in out
    assert f"= note: {f}:4:12: the block opened here" in out


def test_parse_api_raises_with_diagnostics():
    import turnflow

    with pytest.raises(turnflow.ParseError) as exc:
        turnflow.parse("workflow {", path="x.flow")
    d = exc.value.diagnostics[0]
    assert (d.path, d.span.line, d.span.column, d.code) == ("x.flow", 1, 10, "TF001")
    flow = turnflow.parse((EXAMPLES / "support.flow").read_text())
    assert [p.name.name for p in flow.blocks[0].participants] == ["user", "triage", "billing", "tech"]
    assert turnflow.check(flow) == []


# --------------------------------------------------------------------------
#  One command-line policy (turnflow.cli.util): same failure, same exit code and words
# --------------------------------------------------------------------------
AGENTS = str(ROOT / "examples" / "support_agents.yaml")
SUPPORT_FILE = str(ROOT / "examples" / "support.flow")


@pytest.mark.parametrize("argv", [
    ["check", "{missing}"], ["fmt", "{missing}"], ["compile", "{missing}"], ["graph", "{missing}"],
    ["decompile", "{missing}"], ["migrate", "{missing}"], ["simulate", "{missing}"],
    ["run", "{missing}", "--agents", AGENTS],
], ids=lambda a: a[0])
def test_missing_path_is_exit_2_with_one_wording(argv, tmp_path, capsys):
    missing = str(tmp_path / "nope.flow")
    code, out, err = run([a.replace("{missing}", missing) for a in argv], capsys)
    assert code == 2
    assert f"no such file or directory: `{missing}`" in out + err
    assert "Traceback" not in out + err


@pytest.mark.parametrize("argv", [
    ["compile", SUPPORT_FILE, "--block", "zzz"], ["graph", SUPPORT_FILE, "--block", "zzz"],
    ["simulate", SUPPORT_FILE, "--block", "zzz"], ["run", SUPPORT_FILE, "--block", "zzz", "--agents", AGENTS],
], ids=lambda a: a[0])
def test_unknown_block_is_exit_2_with_one_wording(argv, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2
    assert err == f"turnflow {argv[0]}: {SUPPORT_FILE} has no block `zzz` (blocks: support)\n"


@pytest.mark.parametrize("argv", [["check", "{bad}"], ["compile", "{bad}"], ["graph", "{bad}"],
                                  ["decompile", "{bad}"], ["simulate", "{bad}"]], ids=lambda a: a[0])
def test_unreadable_input_is_exit_2(argv, tmp_path, capsys):
    bad = tmp_path / "bad.flow"
    bad.write_bytes(b"workflow w {\n \xff\xfe }\n")
    code, out, err = run([a.replace("{bad}", str(bad)) for a in argv], capsys)
    assert code == 2 and "not UTF-8 text" in out + err


@pytest.mark.parametrize("argv", [["check", "{bad}"], ["compile", "{bad}"], ["graph", "{bad}"],
                                  ["decompile", "{bad}"], ["simulate", "{bad}"],
                                  ["run", "{bad}", "--agents", AGENTS]], ids=lambda a: a[0])
@pytest.mark.parametrize("content, where, what", [
    (b"workflow w {\n \xff\xfe }\n", "2:2", "not UTF-8 text: invalid byte 0xff"),
    (b"workflow w {\n participant a\n\x00}\n", "3:1", "binary file"),
], ids=["latin1", "nul"])
def test_undecodable_input_names_the_byte_s_line_and_column(argv, content, where, what, tmp_path, capsys):
    """Every command that reads a flow says where the bad byte is (`FILE:LINE:COL`), as `check` does:
    simulate and run used to print `turnflow simulate: FILE: not UTF-8 text: ...` without it."""
    bad = tmp_path / "bad.flow"
    bad.write_bytes(content)
    code, out, err = run([a.replace("{bad}", str(bad)) for a in argv], capsys)
    assert code == 2
    assert f"{bad}:{where}: TF000 error: " in out + err and what in out + err
    assert "Traceback" not in out + err


def test_internal_error_is_exit_3(monkeypatch, tmp_path, capsys):
    import turnflow.compiler.pipeline as pipeline

    def boom(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(pipeline, "analyse", boom)
    code, _, err = run(["check", SUPPORT_FILE], capsys)
    assert code == 3 and "internal error: ZeroDivisionError: a bug" in err


def test_migrate_families_match_the_front_ends():
    from turnflow.cli.commands.migrate import FAMILIES
    from turnflow.migrate import FAMILIES as FRONT_ENDS

    assert FAMILIES == FRONT_ENDS
