"""The linter surface as a ruff / eslint / mypy user exercises it: rule selection on the command
line, `turnflow rule`, the machine formats' paths and SARIF's structure (docs/cli.md)."""

from __future__ import annotations

import pytest

import turnflow
from turnflow.cli import main

UNREACHABLE = """workflow w {
    participant a
    participant b
    participant c
    start a
    a -> b
    b -> terminate "done"
}
"""


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- rule selection: an empty or unknown selector is a usage error naming its flag ---------------
@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore", "--extend-ignore"])
@pytest.mark.parametrize("value", ["", ",", "TF203,", " , TF203"])
def test_an_empty_selector_is_a_usage_error_naming_the_flag(tmp_path, capsys, flag, value):
    f = tmp_path / "a.flow"
    f.write_text(UNREACHABLE)
    code, out, err = run(capsys, "check", f"{flag}={value}", str(f))
    assert (code, out) == (2, "")
    shown = "--ignore" if flag == "--extend-ignore" else flag
    assert f"turnflow check: `{shown}`: an empty rule selector" in err, err


@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore"])
def test_an_unknown_selector_names_its_flag(tmp_path, capsys, flag):
    f = tmp_path / "a.flow"
    f.write_text(UNREACHABLE)
    code, out, err = run(capsys, "check", flag, "TF203,TF2O3", str(f))
    assert (code, out) == (2, "")
    assert f"turnflow check: `{flag}`: `TF2O3` is neither a rule code" in err, err


def test_selectors_that_work(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(UNREACHABLE)
    for argv in (["--select", "TF2"], ["--select", "tf203"], ["--select", "unreachable-participant"],
                 ["--select", "ALL"], ["--select", "TF1", "--extend-select", "TF203"], ["--select", " TF203 , TF1"]):
        code, out, err = run(capsys, "check", "--format", "concise", *argv, str(f))
        assert code == 0 and "TF203" in out and err == "", argv
    code, out, _ = run(capsys, "check", "--format", "concise", "--select", "TF2", "--ignore", "TF203", str(f))
    assert code == 0 and "TF203" not in out and "All checks passed" in out


# -- `turnflow rule` ------------------------------------------------------------------------------
def test_rule_prints_name_and_docs_for_every_listed_code(capsys):
    code, listing, _ = run(capsys, "rule", "--list")
    assert code == 0
    rows = [line.split()[:2] for line in listing.splitlines()]
    assert len(rows) >= 40 and all(c.startswith("TF") for c, _ in rows)
    for rule_code, name in rows:
        for asked in (rule_code, rule_code.lower(), name):
            code, out, err = run(capsys, "rule", asked)
            assert (code, err) == (0, ""), asked
            assert out.startswith(f"# {name} ({rule_code})\n\nDefault severity: "), asked
            assert "## What it does\n" in out and "## Why is this bad?\n" in out, asked


@pytest.mark.parametrize("asked", ["TF999", "TF2", " ", "tf2O3", "unreachable"])
def test_rule_with_an_unknown_code_exits_2_with_a_message(capsys, asked):
    """(`rule ''` is refused by argparse as every empty argument is, with exit 2 and the argument
    named: tests/test_cli_conventions.py)"""
    code, out, err = run(capsys, "rule", asked)
    assert (code, out) == (2, "")
    assert err.startswith("turnflow rule: ") and "turnflow rule --list" in err, err


# -- github: workflow commands GitHub can attach to a file of the repository ---------------------
def _gh_files(out: str) -> list[str]:
    return [line.split("file=", 1)[1].split(",line=", 1)[0] for line in out.splitlines()]


def test_github_paths_are_relative_to_the_current_folder_and_normalised(tmp_path, monkeypatch, capsys):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "a.flow").write_text(UNREACHABLE)
    monkeypatch.chdir(tmp_path)
    for given in (str(tmp_path / "flows" / "a.flow"), "./flows/a.flow", "flows/../flows/a.flow", "flows//a.flow"):
        code, out, _ = run(capsys, "check", "--format", "github", given)
        assert code == 0 and _gh_files(out) == ["flows/a.flow"], (given, out)
    code, out, _ = run(capsys, "check", "--format", "github", str(tmp_path))  # a folder given absolute
    assert _gh_files(out) == ["flows/a.flow"], out
    code, out, _ = run(capsys, "check", "--format", "gitlab", "./flows/a.flow")
    assert '"path": "flows/a.flow"' in out, out
    outside = tmp_path.parent / f"{tmp_path.name}-outside.flow"  # not under the current folder: kept as given
    outside.write_text(UNREACHABLE)
    try:
        code, out, _ = run(capsys, "check", "--format", "github", str(outside))
        assert _gh_files(out) == [str(outside)]
    finally:
        outside.unlink()


def test_github_escapes_data_and_properties(tmp_path, monkeypatch, capsys):
    for name in ("a,b:c%25 d.flow", "n\nl\r.flow", "é日本.flow"):
        (tmp_path / name).write_text(UNREACHABLE)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check", "--format", "github", ".")
    assert code == 0
    assert _gh_files(out) == ["a%2Cb%3Ac%2525 d.flow", "n%0Al%0D.flow", "é日本.flow"]
    assert all(line.startswith("::warning file=") for line in out.splitlines()) and out.count("\n") == 3
    from turnflow.diagnostics.diagnostic import Diagnostic
    from turnflow.diagnostics.render import render_github
    from turnflow.source import Span

    d = Diagnostic("TF203", "warning", "100% sure\r\nnext: a, b", Span.at(2, 3, 2, 5, 0, 0), "x.flow")
    assert render_github([d]) == ("::warning file=x.flow,line=2,col=3,endLine=2,endColumn=5,"
                                  "title=TF203 unreachable-participant::100%25 sure%0D%0Anext: a, b\n")


# -- SARIF: valid 2.1.0, and what GitHub code scanning requires -----------------------------------
def _sarif_tree(tmp_path):
    """Real-shaped flows (the rule fixtures, the examples) and mutated ones: CRLF, a BOM, tabs and
    wide characters before the column, names with spaces and non-ASCII, a file without a final newline."""
    import shutil
    from pathlib import Path

    here = Path(__file__).parent
    tree = tmp_path / "repo"
    for case in sorted((here / "fixtures" / "rules").glob("*/*.flow")):
        if not case.parent.name.startswith("TF3"):
            (tree / "rules" / case.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(case, tree / "rules" / case.parent.name / case.name)
    (tree / "examples").mkdir()
    for ex in sorted((here.parent / "examples").glob("*.flow")):
        shutil.copy(ex, tree / "examples" / ex.name)
    odd = tree / "odd dir é"
    odd.mkdir()
    (odd / "crlf.flow").write_bytes(UNREACHABLE.replace("\n", "\r\n").encode())
    (odd / "bom.flow").write_bytes(b"\xef\xbb\xbf" + UNREACHABLE.encode())
    (odd / "tab 日本.flow").write_text(UNREACHABLE.replace("    participant c", "\tparticipant c"))
    (odd / "wide.flow").write_text(UNREACHABLE.replace('"done"', '"😀 done"').replace(
        "    a -> b\n", '    a -> b when context.n == "😀" or context.n == "é"\n').replace(
        "    start a\n", "    start a\n    context n = 1\n"))
    (odd / "eof.flow").write_text(UNREACHABLE.rstrip("}\n"))
    return tree


def _sarif(capsys, *argv):
    import json

    code, out, err = run(capsys, "check", "--format", "sarif", *argv)
    assert code in (0, 1), err
    return json.loads(out), out


def test_sarif_validates_and_has_what_code_scanning_requires(tmp_path, monkeypatch, capsys):
    import copy
    import json
    import os
    from pathlib import Path
    from urllib.parse import unquote, urlsplit

    import jsonschema

    schema = json.loads((Path(__file__).parent / "fixtures" / "sarif" / "sarif-2.1.0-subset.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    tree = _sarif_tree(tmp_path)
    monkeypatch.chdir(tree)
    log, first = _sarif(capsys, ".")
    jsonschema.Draft7Validator(schema).validate(log)
    for spoil in (lambda r: r.update(lineNumber=3),  # the schema is strict: a misspelt property fails
                  lambda r: r["locations"][0]["physicalLocation"]["region"].update(startColumn=0),
                  lambda r: r.update(level="info")):
        bad = copy.deepcopy(log)
        spoil(bad["runs"][0]["results"][0])
        assert not jsonschema.Draft7Validator(schema).is_valid(bad)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)) and all(r["shortDescription"]["text"] and r["helpUri"] for r in rules)
    results = run_["results"]
    assert len(results) > 100 and {r["ruleId"] for r in results} >= {"TF001", "TF102", "TF203", "TF901", "TF902"}
    _, plain, _ = run(capsys, "check", "--format", "json", ".")
    flat = json.loads(plain)
    assert len(flat) == len(results)
    fingerprints = set()
    for r, j in zip(results, flat):
        assert r["ruleId"] in ids and rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] in ("error", "warning", "note") and r["message"]["text"]
        loc = r["locations"][0]["physicalLocation"]
        uri = loc["artifactLocation"]["uri"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not urlsplit(uri).scheme and not uri.startswith("/") and "\\" not in uri, uri
        assert not any(part in (".", "..", "") for part in uri.split("/")), uri
        assert unquote(uri) == os.path.normpath(j["path"]), (uri, j["path"])
        region = loc["region"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (
            j["line"], j["column"], j["end_line"], j["end_column"])  # one column unit in every format
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])
        prints = r["partialFingerprints"]
        assert prints and all(isinstance(v, str) and v for v in prints.values())
        fingerprints.add(tuple(sorted(prints.items())))
    assert len(fingerprints) == len(results)  # no two results share an identity
    _, again = _sarif(capsys, ".")
    assert again == first  # byte-identical across runs, fingerprints included


def test_sarif_fingerprints_survive_lines_moving(tmp_path, monkeypatch, capsys):
    """A result keeps its fingerprint when unrelated lines are added above it (code scanning then
    tracks it as the same alert), and two results with the same code and text differ by rank."""
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "a.flow"
    f.write_text(UNREACHABLE.replace("    participant c\n", "    participant c\n    participant d\n"))
    before, _ = _sarif(capsys, "a.flow")
    f.write_text("# a comment\n\n" + f.read_text())
    after, _ = _sarif(capsys, "a.flow")
    rb, ra = before["runs"][0]["results"], after["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] + 2 for r in rb] == [
        r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in ra]
    assert [r["partialFingerprints"] for r in rb] == [r["partialFingerprints"] for r in ra]
    assert rb[0]["partialFingerprints"] != rb[1]["partialFingerprints"]


# -- columns: one unit (characters) in every format; a BOM is not a column -----------------------
ONE_LINE = "workflow w { participant a; participant a }\n"


@pytest.mark.parametrize("fmt", ["concise", "text", "json", "sarif", "github", "junit"])
def test_a_bom_is_not_a_column(tmp_path, monkeypatch, capsys, fmt):
    (tmp_path / "plain.flow").write_text(ONE_LINE)
    (tmp_path / "bom.flow").write_bytes(b"\xef\xbb\xbf" + ONE_LINE.encode())
    monkeypatch.chdir(tmp_path)
    plain = run(capsys, "check", "--format", fmt, "plain.flow")[1]
    bom = run(capsys, "check", "--format", fmt, "bom.flow")[1]
    assert "\ufeff" not in bom  # neither in a caret line nor in a SARIF snippet
    if fmt == "sarif":
        import json

        def regions(text):
            return [(r["locations"][0]["physicalLocation"]["region"], r["locations"][0]["physicalLocation"]["contextRegion"])
                    for r in json.loads(text)["runs"][0]["results"]]

        assert regions(bom) == regions(plain)
    else:
        assert bom == plain.replace("plain.flow", "bom.flow").replace('"plain"', '"bom"').replace("classname=\"plain", "classname=\"bom")


def test_a_bom_is_not_a_column_on_standard_input_nor_in_fix_lines(tmp_path, monkeypatch, capsys):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + ONE_LINE.encode()), encoding="utf-8"))
    code, out, _ = run(capsys, "check", "--format", "concise", "-")
    assert out.splitlines()[:2] == ["-:1:10: TF103 error: workflow `w` has no `start` statement",
                                    "-:1:41: TF101 error: participant `a` is already declared in block `w` (line 1)"]
    f = tmp_path / "fix.flow"
    f.write_bytes(b"\xef\xbb\xbfworkflow w { participant writer; participant b; start writter; writer -> b }\n")
    code, out, _ = run(capsys, "check", "--fix", str(f))
    assert f"fixed {f}:1:55: TF102 `writter` -> `writer`" in out, out
    assert f.read_bytes().startswith(b"\xef\xbb\xbfworkflow w { participant writer; participant b; start writer;")


# -- one file named twice is checked once ---------------------------------------------------------
def test_a_file_named_several_ways_is_checked_once(tmp_path, monkeypatch, capsys):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "a.flow").write_text(UNREACHABLE)
    monkeypatch.chdir(tmp_path)
    for argv in (["flows/a.flow", "./flows/a.flow"], ["flows/a.flow", str(tmp_path / "flows" / "a.flow")],
                 ["flows", "flows/./a.flow"], ["flows/a.flow", "flows/../flows/a.flow", "flows"]):
        code, out, err = run(capsys, "check", "--format", "concise", *argv)
        assert code == 0 and out.count("TF203") == 1 and out.endswith("Found 1 warning in 1 file.\n"), (argv, out)
        assert out.startswith("flows/a.flow:4:17: TF203"), out  # the first name given


# -- the text caret sits under the column on a terminal: wide characters take two cells -----------
def test_the_caret_counts_terminal_cells(tmp_path, capsys):
    f = tmp_path / "cjk.flow"
    f.write_text('workflow w { participant a\n participant b\n context x = 1\n start a\n'
                 ' a -> b when context.x == "日本" or context.y == 2\n b -> terminate\n}\n')
    code, out, _ = run(capsys, "check", "--color", "never", str(f))
    lines = out.splitlines()
    source = ' a -> b when context.x == "日本" or context.y == 2'
    assert lines[1] == "   5 | " + source
    assert lines[2] == "     | " + " " * 26 + "^" * 6  # `"日本"`: 6 cells
    assert lines[6] == "     | " + " " * 36 + "^" * 14  # `context.y == 2`, after 2 wide characters
    assert "".join(lines).count("\t") == 0


# -- every machine format stays valid UTF-8 (and valid XML / JSON) on a name that is not UTF-8 ----
@pytest.mark.parametrize("fmt", ["github", "junit", "gitlab"])
def test_a_file_name_that_is_not_utf8_keeps_github_junit_and_gitlab_valid(tmp_path, fmt):
    import json
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    try:
        Path(os.fsdecode(bytes(tmp_path) + b"/b\xfe.flow")).write_text(UNREACHABLE)
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    src = str(Path(__file__).parent.parent / "src")
    res = subprocess.run([sys.executable, "-m", "turnflow", "check", ".", "--format", fmt], cwd=tmp_path,
                         capture_output=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert res.returncode == 0, res.stderr
    text = res.stdout.decode("utf-8")  # valid UTF-8 ...
    if fmt == "junit":
        ET.fromstring(res.stdout)  # ... and well-formed XML
    elif fmt == "gitlab":
        assert json.loads(text)[0]["location"]["path"] == "b\udcfe.flow"  # ... and JSON, the name escaped
    assert "b\\udcfe" in text or "b\\xdcfe" in text, text


def test_the_language_server_agrees_with_check_on_every_position(tmp_path, monkeypatch, capsys):
    """The same findings, the same places: LSP's utf-32 position is check's line and column less
    one; its utf-16 position counts the line's text before the column in UTF-16 units."""
    import json

    pytest.importorskip("pygls")
    from turnflow.lsp.features import analyse
    from turnflow.lsp.positions import LineIndex
    from turnflow.lsp.server import _span_range

    tree = _sarif_tree(tmp_path)
    monkeypatch.chdir(tree)
    checked = 0
    for f in sorted((tree / "odd dir é").glob("*.flow")):
        text = f.read_bytes().decode("utf-8").lstrip("\ufeff")  # an editor sends the text without its BOM
        found = json.loads(run(capsys, "check", "--format", "json", str(f.relative_to(tree)))[1])
        lsp = analyse(text, f.name).diagnostics
        assert [d.code for d in lsp] == [j["code"] for j in found]
        lines = text.splitlines()
        for d, j in zip(lsp, found):
            r32 = _span_range(d.span, LineIndex(text, "utf-32"))
            assert (r32.start.line + 1, r32.start.character + 1) == (j["line"], j["column"]), (f.name, j)
            if d.span.end <= len(text):  # past the end (a missing `}`), LSP's range stops at the text's end
                assert (r32.end.line + 1, r32.end.character + 1) == (j["end_line"], j["end_column"]), (f.name, j)
            r16 = _span_range(d.span, LineIndex(text, "utf-16"))
            before = lines[j["line"] - 1][:j["column"] - 1] if j["line"] <= len(lines) else ""
            assert r16.start.character == len(before.encode("utf-16-le")) // 2
            checked += 1
    assert checked >= 5


def test_a_backslash_in_a_posix_file_name_is_not_a_folder(tmp_path, monkeypatch, capsys):
    import json
    import os

    if os.sep == "\\":
        pytest.skip("on Windows a backslash separates folders")
    (tmp_path / "a\\b.flow").write_text(UNREACHABLE)
    monkeypatch.chdir(tmp_path)
    assert _gh_files(run(capsys, "check", "--format", "github", "a\\b.flow")[1]) == ["a\\b.flow"]
    log = json.loads(run(capsys, "check", "--format", "sarif", "a\\b.flow")[1])
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a%5Cb.flow"
    assert json.loads(run(capsys, "check", "--format", "gitlab", "a\\b.flow")[1])[0]["location"]["path"] == "a\\b.flow"


# -- --stdin-filename reads standard input, as in ruff (editors pipe the buffer) --------------------
@pytest.mark.parametrize("command", ["check", "fmt"])
def test_stdin_filename_alone_reads_standard_input(tmp_path, monkeypatch, capsys, command):
    import io
    import sys

    (tmp_path / "other.flow").write_text(UNREACHABLE.replace("participant c", "participant zz"))
    monkeypatch.chdir(tmp_path)
    broken = "workflow w {\n  a -> -> b\n}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken.encode())))
    code, out, err = run(capsys, command, "--stdin-filename", "flows/b.flow")
    assert code == 1 and "flows/b.flow:2:8: TF001" in out + err and "other.flow" not in out + err, (out, err)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken.encode())))
    code, out, err = run(capsys, command, "--stdin-filename", "flows/b.flow", "other.flow")
    assert code == 1 and "flows/b.flow:2:8: TF001" in out + err and "zz" not in out
    assert "warning: ignoring `other.flow`: --stdin-filename reads standard input" in err


# -- a malformed suppression's span stays inside its comment -------------------------------------
@pytest.mark.parametrize("tail", ["x" * 40, "x" * 41, "x" * 42, "x" * 43, "x" * 80])
def test_a_long_malformed_directive_is_marked_within_its_line(tmp_path, capsys, tail):
    """The message shortens a long directive to 60 characters and `...`; the span is the directive
    itself (it ended 3 characters past a 61- or 62-character one: past the line, into the next)."""
    import json

    directive = "# turnflow: ignore(" + tail
    line = "    participant b   " + directive
    f = tmp_path / "a.flow"
    f.write_text("workflow w {\n    participant a\n" + line + "\n    start a\n    a -> b\n}\n")
    code, out, err = run(capsys, "check", "--no-cache", "--format", "json", str(f))
    (found,) = [d for d in json.loads(out) if d["code"] == "TF901"]
    assert (found["line"], found["end_line"]) == (3, 3)
    assert (found["column"], found["end_column"]) == (line.index("#") + 1, len(line) + 1)


# -- the marker's case: as ruff reads noqa comments, in any case --------------------------------
@pytest.mark.parametrize("marker", ["# Turnflow: Ignore[TF203]", "# TURNFLOW: IGNORE[tf203]", "#turnflow:IGNORE"])
def test_the_suppression_marker_is_case_insensitive(marker):
    """Before: `# Turnflow: ignore[TF203]` was a plain comment, the TF203 still reported and nothing
    said why (codes were already case-insensitive, the marker not)."""
    text = UNREACHABLE.replace("    participant c\n", f"    participant c  {marker}\n")
    assert [d.code for d in turnflow.check(text)] == []


def test_fmt_keeps_a_line_with_an_upper_case_marker_joined():
    """The formatter keeps `a -> b; c -> d  # turnflow: ignore` on one line (its suppression covers
    both); the same with the marker in capitals."""
    from turnflow.dsl.printer import print_flow

    text = "workflow w {\n    participant a\n    participant b\n    start a\n    a -> b; b -> a  # TURNFLOW: IGNORE\n}\n"
    assert "    a -> b; b -> a # TURNFLOW: IGNORE\n" in print_flow(turnflow.parse(text))
