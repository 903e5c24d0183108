"""Issue 24: the habits a ruff user brings — fmt chooses files as check does, one exit policy
for a syntax error, ruff's flags and formats, no `.flow` files is a warning, docs that run."""

from __future__ import annotations

import sys

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


# -- 2. the flags a ruff user types ---------------------------------------------------------------
TYPOS = ("workflow w {\n    partcipant a\n    participant bob tools [search]\n    start a\n    max_turns 9\n"
         "    context done = false\n    a -> bobb\n    bob -> terminate when tool serch\n"
         "    bob -> a when context.dnoe == \"false\"\n}\n")
FIXED_SAFE = TYPOS.replace("partcipant", "participant").replace("bobb", "bob").replace("serch", "search") \
    .replace("dnoe", "done")


def test_fix_applies_the_safe_fixes_and_says_what_it_changed(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(TYPOS)
    code, out, _ = run(capsys, "check", "--fix", str(f))
    assert f.read_text() == FIXED_SAFE  # keyword, participant, tool and context key, over several passes
    assert f"fixed {f}:2:5: TF001 `partcipant` -> `participant`" in out
    assert f"fixed {f}:7:10: TF102 `bobb` -> `bob`" in out
    assert "TF207 `serch` -> `search`" in out and "TF208 `dnoe` -> `done`" in out
    assert "Fixed 4 findings." in out
    # what remains: the unsafe one (retyping a literal changes what the condition means)
    assert "TF111" in out and "Found 1 warning in 1 file." in out and code == 0
    code, out, _ = run(capsys, "check", "--fix", "--unsafe-fixes", str(f))
    assert f.read_text() == FIXED_SAFE.replace('== "false"', "== false")
    assert "All checks passed (1 file)." in out and code == 0


def test_fix_proposes_what_the_language_server_proposes(tmp_path):
    from turnflow.compiler.pipeline import analyse
    from turnflow.cli.fixes import fix_for
    from turnflow.lsp.completion import did_you_mean, fix_span

    for text in (TYPOS, FIXED_SAFE.replace("context.done", "context.dnoe")):
        for d in analyse(text, "a.flow")[1]:
            fix = fix_for(d, text)
            want = did_you_mean(d.help or d.message)
            assert (fix is None) == (want is None)
            if fix is not None:  # the server's code action: the same replacement over the same span
                rel = fix_span(text[d.span.start:d.span.end], want)
                assert (fix.replacement, fix.start, fix.end) == (want, d.span.start + rel[0], d.span.start + rel[1])


def test_diff_previews_the_fixes_without_writing(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(TYPOS)
    code, out, err = run(capsys, "check", "--diff", str(f))
    assert code == 1 and f.read_text() == TYPOS
    assert "-    partcipant a\n+    participant a\n" in out and "Would fix 4 findings." in err
    f.write_text(FIXED_SAFE)
    code, out, err = run(capsys, "check", "--diff", str(f))
    assert code == 0 and out == "" and "No fixes available." in err


def test_fix_on_standard_input_prints_the_fixed_text(monkeypatch, capsys):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TYPOS.encode())))
    code, out, err = run(capsys, "check", "--fix", "-")
    assert out == FIXED_SAFE and "TF111" in err and code == 0


def test_unsafe_fixes_alone_is_a_usage_error(tmp_path, capsys):
    code, _, err = run(capsys, "check", "--unsafe-fixes", str(tmp_path))
    assert code == 2 and "--unsafe-fixes goes with --fix or --diff" in err


def test_exit_zero_statistics_and_the_fixable_hint(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(TYPOS.replace("partcipant", "participant"))
    code, out, _ = run(capsys, "check", str(f))
    assert code == 1 and "[*] 1 fixable with the `--fix` option." in out
    assert run(capsys, "check", "--exit-zero", str(f))[0] == 0
    assert run(capsys, "check", "--exit-zero", str(tmp_path / "nope.flow"))[0] == 2  # still a usage error
    code, out, _ = run(capsys, "check", "--statistics", str(f))
    assert code == 1 and out == "1\tTF102\t[*] undeclared-participant\n"
    code, out, _ = run(capsys, "check", "--statistics", "--format", "json", "--select", "TF1", str(f))
    import json

    assert json.loads(out) == [{"code": "TF102", "name": "undeclared-participant", "count": 1, "fixable": True}]


def test_statistics_marks_a_code_fixable_only_when_one_of_its_findings_is(tmp_path, capsys):
    # before: `[*]` (and "fixable": true) for every code --fix can sometimes fix, so a TF102 with no
    # "did you mean" and a TF001 were listed as fixable while `--fix` fixed nothing
    f = tmp_path / "a.flow"
    f.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> zzzzzz\n}\n")
    code, out, _ = run(capsys, "check", "--statistics", str(f))
    assert code == 1 and out == "1\tTF102\tundeclared-participant\n"
    g = tmp_path / "b.flow"
    g.write_text("workflow w {\n    participant next\n}\n")
    code, out, _ = run(capsys, "check", "--statistics", "--format", "json", str(g))
    import json

    assert json.loads(out) == [{"code": "TF001", "name": "syntax-error", "count": 1, "fixable": False}]
    # one fixable finding of a code marks it, as the summary's hint counts it
    f.write_text("workflow w {\n    participant alpha\n    participant b\n    start alpha\n    alpah -> b\n"
                 "    b -> zzzzzz\n}\n")
    code, out, _ = run(capsys, "check", "--statistics", str(f))
    assert code == 1 and out == "2\tTF102\t[*] undeclared-participant\n"


def test_extend_select_and_extend_ignore_on_the_command_line(tmp_path, capsys):
    (tmp_path / "turnflow.toml").write_text('select = ["TF1"]\n')
    f = tmp_path / "a.flow"
    f.write_text(FIXED_SAFE.replace("max_turns 9\n", ""))  # TF206 (graph) + TF111
    code, out, _ = run(capsys, "check", str(f))
    assert "TF206" not in out and "TF111" in out
    code, out, _ = run(capsys, "check", "--extend-select", "TF206", str(f))
    assert "TF206" in out and "TF111" in out
    code, out, _ = run(capsys, "check", "--extend-select", "TF206", "--extend-ignore", "TF111", str(f))
    assert "TF206" in out and "TF111" not in out
    assert run(capsys, "check", "--extend-select", "TF9x9", str(f))[0] == 2


def test_show_settings_says_where_each_value_came_from(tmp_path, monkeypatch, capsys):
    import json

    (tmp_path / "turnflow.toml").write_text('ignore = ["TF205"]\nextend-exclude = ["gen"]\n')
    (tmp_path / "a.flow").write_text(FIXED_SAFE)
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "b.flow").write_text(FIXED_SAFE)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check", "--show-settings", "--extend-ignore", "TF111")
    assert code == 0
    cfg = str(tmp_path / "turnflow.toml")
    assert f"Configuration: {cfg}" in out
    assert f'ignore            = ["TF205", "TF111"]    # {cfg} + command line (--ignore, --extend-ignore)' in out
    assert f'extend-exclude    = ["gen"]    # {cfg}' in out and "respect-gitignore = true    # default" in out
    assert "Files (1):\n  ./a.flow" in out or "Files (1):\n  a.flow" in out
    code, out, _ = run(capsys, "check", "--show-settings", "--format", "json")
    data = json.loads(out)
    assert {r["key"]: r["from"] for r in data["settings"]}["ignore"] == cfg


def test_output_format_is_format_and_the_ruff_formats(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(FIXED_SAFE.replace("max_turns 9\n", ""))
    assert run(capsys, "check", "--output-format", "json", str(f))[1] == run(capsys, "check", "--format", "json",
                                                                              str(f))[1]
    code, out, _ = run(capsys, "check", "--output-format", "concise", str(f))
    assert code == 0 and out.splitlines()[0].startswith(f"{f}:1:1: TF206 warning: ") and "^" not in out
    assert out.rstrip().endswith("Found 2 warnings in 1 file.")
    code, out, _ = run(capsys, "check", "--output-format", "full", str(f))
    assert "^" in out
    code, out, _ = run(capsys, "check", "--output-format", "grouped", str(f))
    assert out.startswith(f"{f}:\n  1:1  TF206 warning: ") and "\n  8:35 TF111 warning: " in out  # aligned


def test_junit_is_valid_xml_with_one_failure_per_finding(tmp_path, capsys):
    import xml.etree.ElementTree as ET

    f = tmp_path / "a.flow"
    f.write_text(FIXED_SAFE.replace("max_turns 9\n", "").replace('"false"', '"fa <&>"'))
    code, out, _ = run(capsys, "check", "--output-format", "junit", str(f))
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "2"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == str(f)
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["org.turnflow.TF206", "org.turnflow.TF111"]
    assert cases[1].get("line") == "8" and "<&>" in cases[1].find("failure").get("message")
    g = tmp_path / "control.flow"  # a message quoting a control character XML cannot hold
    g.write_text(FIXED_SAFE.replace('"false"', '"f\x01alse"'))
    root = ET.fromstring(run(capsys, "check", "--output-format", "junit", str(g))[1].split("\n", 1)[1])
    assert "\\x01" in root.find("testsuite/testcase/failure").get("message")
    f.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate\n}\n")
    root = ET.fromstring(run(capsys, "check", "--output-format", "junit", str(f))[1].split("\n", 1)[1])
    assert root.get("failures") == "0" and root.find("testsuite/testcase").get("name") == "No errors found"


def test_gitlab_code_quality_shape(tmp_path, monkeypatch, capsys):
    import json

    (tmp_path / "flows").mkdir()
    f = tmp_path / "flows" / "a.flow"
    f.write_text(FIXED_SAFE.replace("max_turns 9\n", "") + FIXED_SAFE.replace("workflow w", "workflow v")
                 .replace("max_turns 9\n", ""))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check", "--output-format", "gitlab", str(f))
    issues = json.loads(out)
    assert len(issues) == 4
    for issue in issues:  # GitLab's Code Quality report: these keys, these values
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"]["path"] == "flows/a.flow"  # relative to the project (the current folder)
        assert isinstance(issue["location"]["lines"]["begin"], int)
    assert len({i["fingerprint"] for i in issues}) == 4  # unique, even for equal messages
    assert run(capsys, "check", "--output-format", "gitlab", str(f))[1] == out  # stable


def test_color_and_no_cache(tmp_path, capsys):
    f = tmp_path / "a.flow"
    f.write_text(FIXED_SAFE.replace("max_turns 9\n", ""))
    assert "\x1b[" in run(capsys, "check", "--color", "always", str(f))[1]
    assert "\x1b[" not in run(capsys, "check", "--color", "never", "--no-cache", str(f))[1]


# -- 4. inspect: one line per session --------------------------------------------------------------
def test_inspect_prints_one_line_per_session_and_events_on_request(tmp_path, monkeypatch, capsys):
    import json

    from batch_helpers import write_batch

    files = write_batch(tmp_path, 2, fail=(1,))
    monkeypatch.syspath_prepend(str(tmp_path))
    store = str(tmp_path / "runs.db")
    main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store])
    capsys.readouterr()
    code, out, _ = run(capsys, "inspect", store)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4, out
    assert lines[0].split() == ["SESSION", "TASK", "BLOCK", "STATE", "CLOSE", "REASON", "TURNS", "LAST", "SPEAKER"]
    rows = sorted((line.split() for line in lines[1:3]), key=lambda r: r[1])
    assert [r[1:] for r in rows] == [["t000", "chain", "closed", "max_turns", "12", "c"],
                                     ["t001", "chain", "closed", "agent_error", "1", "a"]]
    assert lines[3] == "2 sessions" and "session.opened" not in out
    code, events, _ = run(capsys, "inspect", store, "--events")
    assert code == 0 and "session.opened" in events and "session.closed" in events
    data = json.loads(run(capsys, "inspect", store, "--format", "json")[1])
    assert sorted((d["task_id"], d["block"], d["last_speaker"]) for d in data) == [("t000", "chain", "c"),
                                                                                   ("t001", "chain", "a")]


def test_inspect_summary_says_1_session(tmp_path, capsys):
    from runtime_helpers import FIXTURES

    db = str(tmp_path / "hub.db")
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(FIXTURES / "support_agents.yaml"),
                 "--store", db]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "inspect", db, "--summary")
    assert code == 0 and ": 1 session, 11 envelopes" in out
    code, out, _ = run(capsys, "inspect", db)
    assert out.splitlines()[-1] == "1 session" and out.splitlines()[1].split()[1:] == [
        "-", "support", "closed", "resolved", "3", "user"]


# -- 5. SARIF for dashboards ----------------------------------------------------------------------
def test_sarif_rules_link_their_docs_and_results_carry_snippets(tmp_path, monkeypatch, capsys):
    import json
    import re
    from pathlib import Path
    from urllib.parse import unquote

    docs = (Path(__file__).parent.parent / "docs" / "rules.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^## (.+)$", docs, re.M)}
    (tmp_path / "my flows").mkdir()
    f = tmp_path / "my flows" / "a.flow"
    f.write_text(FIXED_SAFE)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check", "--format", "sarif", "my flows/a.flow")
    log = json.loads(out)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        base, anchor = rule["helpUri"].split("#")
        assert base.endswith("/docs/rules.md") and anchor in anchors, rule["id"]
        assert rule["help"]["markdown"].startswith(rule["fullDescription"]["text"])
        assert f"]({rule['helpUri']})" in rule["help"]["markdown"]
    (result,) = log["runs"][0]["results"]
    rule = rules[result["ruleIndex"]]
    msg = result["message"]
    assert rule["messageStrings"][msg["id"]]["text"].format(*msg["arguments"]) == msg["text"]
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "my%20flows/a.flow", "uriBaseId": "%SRCROOT%"}
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert loc["region"]["snippet"]["text"] == '"false"'  # TF111 points at the literal
    assert loc["contextRegion"]["snippet"]["text"] == '    bob -> a when context.done == "false"\n'
    assert unquote(loc["artifactLocation"]["uri"]) == "my flows/a.flow"
    code, out, _ = run(capsys, "check", "--format", "sarif", str(f))
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == f.as_uri() and "%20" in uri


# -- 6. targeting stock AG2 is explained where users meet it --------------------------------------
def test_tf301_says_in_one_line_what_to_do_and_the_readme_says_what_its_example_needs(tmp_path, capsys):
    from pathlib import Path

    root = Path(__file__).parent.parent
    two = tmp_path / "two.flow"  # two speakers with guarded rules: no exact built-in form
    two.write_text((root / "examples" / "support.flow").read_text().replace(
        "    billing -> user\n", "    billing -> user when context.resolved == true\n    billing -> triage\n"))
    code, _, err = run(capsys, "compile", "--profile", "ag2-builtin", str(two))
    assert code == 1
    line = next(x for x in err.splitlines() if "TF301" in x)
    assert "call `turnflow.interop.ag2.register_extensions()` in the AG2 process" in line
    code, doc, _ = run(capsys, "rule", "TF301")
    assert any("turnflow.interop.ag2.register_extensions()" in x for x in doc.splitlines()[:8])
    readme = (root / "README.md").read_text()
    example_end = readme.index("## Lint")
    assert "--profile ag2-builtin" in readme[:example_end] and "register_extensions()" in readme[:example_end]
    assert run(capsys, "compile", "--profile", "ag2-builtin", str(root / "examples" / "support.flow"))[0] == 0


# -- 7. install instructions that work before publication -------------------------------------------
DOCS_WITH_INSTALLS = ("README.md", "docs/editors.md", "docs/ci.md", "editors/vscode/README.md", "docs/agents.md",
                      "docs/compiler.md", "docs/scale.md")


def test_every_install_snippet_works_before_publication():
    import re
    from pathlib import Path

    from packaging.requirements import Requirement

    root = Path(__file__).parent.parent
    seen = 0
    for name in DOCS_WITH_INSTALLS:
        text = (root / name).read_text()
        for m in re.finditer(r"pip install((?:\s+-[qe])*)\s+(?:'([^']+)'|\"([^\"]+)\"|([^\s`]+))", text):
            spec = m.group(2) or m.group(3) or m.group(4)
            seen += 1
            if spec.startswith("."):
                continue  # from a checkout
            req = Requirement(spec)  # a valid PEP 508 requirement ...
            assert req.name == "turnflow" and req.url == "git+https://github.com/turnflow/turnflow", (name, spec)
    assert seen >= 10


def test_pre_commit_examples_point_at_something_that_exists():
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).parent.parent
    readme = (root / "README.md").read_text()
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml.*?)```", readme, re.S).group(1)
    (repo,) = yaml.safe_load(block)["repos"]
    assert repo["repo"] == "local" and "rev" not in repo  # runs the installed turnflow: nothing to resolve
    manifest = {h["id"]: h for h in yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())}
    for hook in repo["hooks"]:
        assert hook["entry"] == manifest[hook["id"]]["entry"] and hook["files"] == manifest[hook["id"]]["files"]
        assert hook["language"] == "system"
    ci = (root / "docs" / "ci.md").read_text()
    assert "**`rev:` must exist.**" in ci and "pre-commit autoupdate --freeze" in ci


def test_neovim_section_states_its_minimum_version_and_an_lspconfig_snippet():
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "editors.md").read_text()
    assert "Neovim **0.10 or later**" in text and "vim.fs.root" in text
    assert 'require("lspconfig").turnflow.setup({})' in text and "root_pattern(" in text


# -- 9. pictures: no edge crosses its label ---------------------------------------------------------
def _svg_edge_texts(svg: str) -> tuple[list[str], list[str]]:
    """(texts inside edge groups, texts inside node groups) of a Graphviz SVG."""
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(svg)
    edge_texts, node_texts = [], []
    for g in root.iter(f"{ns}g"):
        texts = ["".join(t.itertext()) for t in g.iter(f"{ns}text")]
        if g.get("class") == "edge":
            edge_texts += texts
        elif g.get("class") == "node":
            node_texts += texts
    return edge_texts, node_texts


def test_edge_labels_are_label_nodes_in_dot(capsys):
    import json
    import re
    from pathlib import Path

    root = Path(__file__).parent.parent
    for case in [*sorted((root / "examples").glob("*.flow")), root / "tests/fixtures/graph/diagnostics.flow"]:
        code, dot, _ = run(capsys, "graph", str(case))
        pic = json.loads(run(capsys, "graph", str(case), "--format", "json")[1])
        pictures = pic if isinstance(pic, list) else [pic]
        for line in dot.splitlines():
            m = re.match(r'\s*"([^"]+)" -> "([^"]+)" \[(.*)\];$', line)
            if m and m.group(1) != m.group(2):  # a loop keeps its label: Graphviz sets it beside the loop
                assert not re.search(r'(^|, )label=', m.group(3)), line
        labelled = [e for p in pictures for e in p["edges"] if e.get("label") and e["from"] != e["to"]]
        assert labelled
        from turnflow.compiler.emit.dot import quote

        for e in labelled:
            assert f'[shape="plaintext", label={quote(e["label"])}' in dot, e


def test_docs_pictures_carry_no_text_on_edges():
    """docs/pictures/*.svg are redrawn with label nodes: every label is a node's text."""
    from pathlib import Path

    root = Path(__file__).parent.parent
    for svg in sorted((root / "docs" / "pictures").glob("*.svg")):
        edge_texts, node_texts = _svg_edge_texts(svg.read_text(encoding="utf-8"))
        # a loop keeps its label beside it: onboarding's `setup -> setup`, helpdesk's `otherwise -> stay`
        # of the three speakers that hand over by tool
        loops = {"onboarding": ["otherwise"], "helpdesk": ["otherwise"] * 3}
        assert edge_texts == loops.get(svg.stem, []), (svg.name, edge_texts)
        assert any(t in ("always", "round robin", "question", "otherwise") for t in node_texts), svg.name


# -- 10. small things ---------------------------------------------------------------------------------
def test_rule_examples_show_their_code_and_use_instead_blocks_do_not():
    """Every rule's `Use instead` flow (a whole block) is free of that rule; TF001's passes `check`."""
    import re

    import turnflow
    from turnflow.diagnostics.registry import all_rules

    for r in all_rules():
        m = re.search(r"## Use instead\n```\n(.*?)```", r.doc, re.S)
        if not m or not re.match(r"(workflow|discussion|conversation|consulting)\b", m.group(1)):
            continue
        codes = {d.code for d in turnflow.check(m.group(1))}
        assert r.code not in codes, (r.code, codes)
        if r.code == "TF001":
            assert codes == set()
            example = re.search(r"## Example\n```\n(.*?)```", r.doc, re.S).group(1)
            assert [d.code for d in turnflow.check(example)] == ["TF001"]


def test_a_missing_path_is_counted_as_a_file(tmp_path, capsys):
    code, out, _ = run(capsys, "check", str(tmp_path / "nope.flow"))
    assert code == 2 and out.rstrip().endswith("Found 1 error in 1 file.")


def test_rule_list_aligns_long_names(capsys):
    code, out, _ = run(capsys, "rule", "--list")
    lines = out.splitlines()
    starts = {line.index(" error ") if " error " in line else line.index(" warning ") if " warning " in line
              else line.index(" info ") for line in lines}
    assert code == 0 and len(starts) == 1, starts  # one severity column, also after migrate-condition-approximated


def test_simulate_says_each_finding_s_severity(tmp_path, capsys):
    f = tmp_path / "e.flow"
    f.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> c\n}\n")
    code, _, err = run(capsys, "simulate", str(f))
    assert code == 1 and f"{f}:5:10: TF102 error: target `c` is not a participant" in err


def test_a_tasks_file_reports_every_bad_line():
    from turnflow.runtime.tasks import TaskFileError, parse_tasks

    text = ('{"id": "a", "task": "x"}\n{"id": 3}\nnot json\n{"id": "a"}\n{"id": "b", "context": []}\n'
            '{"id": "c"}\n')
    with pytest.raises(TaskFileError) as exc:
        parse_tasks(text, "t.jsonl")
    assert str(exc.value).splitlines() == [
        "t.jsonl:2: `id` must be a non-empty string, got 3",
        "t.jsonl:3: not valid JSON: Expecting value (column 1)",
        "t.jsonl:4: duplicate id 'a' (first on line 1)",
        "t.jsonl:5: `context` must be an object, got list"]
    many = "".join("{}\n" for _ in range(60))
    with pytest.raises(TaskFileError) as exc:
        parse_tasks(many, "t.jsonl")
    assert len(str(exc.value).splitlines()) == 51 and str(exc.value).endswith("... and 10 more bad lines")


@pytest.mark.skipif(__import__("shutil").which("bash") is None, reason="bash not installed")
def test_shell_completion_completes_rule_codes(capsys):
    import subprocess

    script = run(capsys, "completion", "bash")[1]

    def complete(*words):
        quoted = " ".join(f"'{w}'" for w in words)
        prog = (f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _turnflow; "
                "printf '%s\\n' \"${COMPREPLY[@]}\"")
        return subprocess.run(["bash", "-c", prog], capture_output=True, text=True, timeout=30).stdout.split()

    assert complete("turnflow", "rule", "TF20") == [f"TF20{i}" for i in range(1, 10)]
    assert complete("turnflow", "rule", "shad") == ["shadowed-rule"]
    assert "TF204" in complete("turnflow", "check", "--ignore", "TF2")
    assert "TF901" in complete("turnflow", "check", "--extend-select", "TF9")
    fish = run(capsys, "completion", "fish")[1]
    assert "__fish_seen_subcommand_from rule' -xa 'TF000 TF001" in fish


def test_readme_says_how_long_the_test_suite_takes():
    import re
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    head = readme[:readme.index("turnflow is a toolchain")]
    assert re.search(r"whole test suite: about \d+ minutes", head)


# -- number and duration flags: a value that looks negative is the flag's value, refused by name --
def usage(capsys, *argv):
    """(exit status, stderr) of a command line argparse refuses (SystemExit) or a command refuses."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


RUN = ("run", "f.flow", "--agents", "a.yaml")
BATCH = (*RUN, "--tasks", "t.jsonl")
SERVE = ("serve", "--listen", "nope")  # (a value that passed would stop at --listen, never serve)
NUMBER_FLAGS = [  # every number or duration flag of every subcommand, with a value that starts with `-`
    (RUN, "--timeout", "-5s", "expected a positive duration such as 90, 90s, 250ms, 5m or 1h, got '-5s'"),
    (RUN, "--timeout", "-1.5h", "expected a positive duration"),
    (RUN, "--timeout", "-5", "expected a positive duration"),
    (RUN, "--max-turns", "-3x", "expected a positive whole number, got '-3x'"),
    (RUN, "--max-turns", "-1e3", "expected a positive whole number"),
    (BATCH, "--concurrency", "-1e3", "expected a positive whole number"),
    (BATCH, "--lease", "-5s", "expected a positive number of seconds, got '-5s'"),
    (BATCH, "--lease", "-inf", "expected a positive number of seconds"),
    (BATCH, "--lease", "nan", "expected a positive number of seconds"),
    (("graph", "f.flow"), "--timeout", "-5s", "expected a positive number of seconds, got '-5s'"),
    (("simulate", "f.flow"), "--runs", "-5x", "expected a positive whole number"),
    (("simulate", "f.flow"), "--seed", "-1.5", "expected a whole number, got '-1.5'"),
    (SERVE, "--idle-timeout", "-5s", "expected a positive number of seconds, got '-5s'"),
    (SERVE, "--sweep-interval", "-.5", "expected a positive number of seconds"),
    (SERVE, "--invite-timeout", "inf", "expected a positive number of seconds"),
    (SERVE, "--auth-timeout", "-1e3", "expected a positive number of seconds"),
    (SERVE, "--ping-timeout", "nan", "expected a positive number of seconds"),
    (SERVE, "--ping-interval", "-1e3", "expected 0 (off) or a positive number of seconds"),
    (SERVE, "--max-frame-bytes", "-1k", "expected a positive whole number, got '-1k'"),
    (SERVE, "--max-connections", "-5", "expected a positive whole number"),
    (SERVE, "--send-queue", "1.5", "expected a positive whole number"),
    (SERVE, "--max-inflight", "-0x10", "expected a positive whole number"),
    (SERVE, "--max-session-bytes", "0", "expected a positive whole number, got '0'"),
    (SERVE, "--send-buffer-bytes", "-8M", "expected a positive whole number, got '-8M'"),
    (SERVE, "--total-send-bytes", "-1", "expected a positive whole number"),
    (SERVE, "--max-reply-bytes", "-1.5", "expected a positive whole number"),
    (SERVE, "--inflight-bytes", "-4e6", "expected a positive whole number"),
    (SERVE, "--max-channels-per-agent", "-Inf", "expected a positive whole number"),
    (SERVE, "--max-labels-bytes", "-16k", "expected a positive whole number"),
    (SERVE, "--max-agents", "0", "expected a positive whole number, got '0'"),
    (SERVE, "--max-registry-bytes", "-64M", "expected a positive whole number, got '-64M'"),
    (SERVE, "--max-live-sessions", "2.5", "expected a positive whole number"),
    (SERVE, "--max-live-bytes", "nan", "expected a positive whole number"),
    (SERVE, "--max-knobs-bytes", "-1", "expected a positive whole number"),
    (SERVE, "--max-per-peer", "-1", "expected 0 (no limit) or a positive whole number, got '-1'"),
    (SERVE, "--max-unbound", "-2e1", "expected 0 (an eighth of --max-connections) or a positive whole number"),
]


@pytest.mark.parametrize("prefix, flag, value, message", NUMBER_FLAGS, ids=[f"{p[0]} {f} {v}" for p, f, v, _ in NUMBER_FLAGS])
def test_a_negative_looking_number_is_refused_naming_its_flag(tmp_path, monkeypatch, capsys, prefix, flag, value,
                                                             message):
    """Before: `turnflow run ... --timeout -5s` said argparse's `argument --timeout: expected one
    argument` (a value starting with `-` and not a plain negative number was taken for an option),
    and serve's number flags took `nan` and `inf`. Now the value reaches the flag's type, which
    says what it expects (one helper for every flag: turnflow.cli.util), exit 2."""
    monkeypatch.chdir(tmp_path)
    code, err = usage(capsys, *prefix, flag, value)
    assert code == 2
    assert f"argument {flag}: {message}" in err, err
    assert "expected one argument" not in err and "Traceback" not in err


def test_every_number_flag_is_covered_and_typed_by_the_shared_helpers():
    """Every flag whose value is a number or a duration is typed by turnflow.cli.util's
    `number_type` (no `type=int`/`float`, no parser of its own), and NUMBER_FLAGS above exercises each."""
    import argparse

    from turnflow.cli import app

    typed = set()
    parser = app.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for action in p._actions:
            assert action.type not in (int, float), (name, action.option_strings)
            if getattr(action.type, "__qualname__", "").startswith("number_type."):
                typed.add((name, action.option_strings[-1]))
            elif action.metavar in ("N", "S", "SECONDS", "DURATION"):
                raise AssertionError(f"{name} {action.option_strings}: a number typed by a parser of its own")
    covered = {(prefix[0], flag) for prefix, flag, _, _ in NUMBER_FLAGS}
    assert typed == covered, (typed - covered, covered - typed)


def test_plain_numbers_still_parse(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate\n}\n")
    code, out, err = run(capsys, "simulate", str(f), "--runs", "3", "--seed", "-5", "--format", "json")
    assert code == 0, err  # a negative seed is a seed


# -- an empty path or name is a usage error, never a blank name, a file named nothing or the default --
EMPTY = "got '' (an empty string)"
FILE_OR_STDIN = "expected a file path, or - for standard input"
STORE = "expected a SQLite file path or a postgresql:// URL"
EMPTY_ARGUMENTS = [  # (command line, the argument argparse names, what it expects)
    (("inspect", ""), "STORE", STORE),
    (("inspect", "x.db", "--session", ""), "--session", "expected a session id"),
    (("check", ""), "PATH", "expected a file or folder path, or - for standard input"),
    (("check", "a.flow", ""), "PATH", "expected a file or folder path"),
    (("fmt", ""), "PATH", "expected a file or folder path, or - for standard input"),
    (("check", "--config", "", "a.flow"), "--config", "expected a file path"),
    (("fmt", "--config", "", "a.flow"), "--config", "expected a file path"),
    (("check", "-", "--stdin-filename", ""), "--stdin-filename", "expected a file name"),
    (("fmt", "-", "--stdin-filename", ""), "--stdin-filename", "expected a file name"),
    (("graph", ""), "FILE", "expected a file path"),
    (("graph", "a.flow", "--block", ""), "--block", "expected a block name"),
    (("graph", "a.flow", "-o", ""), "-o/--output", "expected a file path"),
    (("compile", ""), "FILE", FILE_OR_STDIN),
    (("compile", "a.flow", "--block", ""), "--block", "expected a block name"),
    (("compile", "a.flow", "-o", ""), "-o/--output", "expected a file path"),
    (("decompile", ""), "SPEC.json", FILE_OR_STDIN),
    (("decompile", "k.json", "--name", ""), "--name", "expected a block name"),
    (("decompile", "k.json", "--participants", ""), "--participants", "expected participant names, comma-separated"),
    (("decompile", "k.json", "-o", ""), "-o/--output", "expected a file path"),
    (("migrate", ""), "INPUT", "expected a file path"),
    (("migrate", "x.py", "-o", ""), "-o/--output", "expected a file path"),
    (("simulate", ""), "FILE", FILE_OR_STDIN),
    (("simulate", "a.flow", "--block", ""), "--block", "expected a block name"),
    (("run", "", "--agents", "a.yaml"), "FILE", FILE_OR_STDIN),
    (("run", "a.flow", "--agents", ""), "--agents", "expected a file path"),
    ((*RUN, "--block", ""), "--block", "expected a block name"),
    ((*RUN, "--store", ""), "--store", STORE),
    ((*RUN, "--hub", ""), "--hub", "expected a served hub's address, ws://HOST:PORT"),
    ((*RUN, "--hub-keys", ""), "--hub-keys", "expected a file path"),
    ((*RUN, "--tasks", ""), "--tasks", "expected a file path"),
    (("rule", ""), "CODE|NAME", "expected a rule code (TF204) or name (shadowed-rule)"),
    (("schema", ""), "NAME", "expected a schema name (turnflow schema lists them)"),
    ((*SERVE, "--store", ""), "--store", STORE),
    ((*SERVE, "--registry", ""), "--registry", "expected a file path"),
    ((*SERVE, "--auth-keys", ""), "--auth-keys", "expected a file path"),
]


@pytest.mark.parametrize("argv, name, expected", EMPTY_ARGUMENTS, ids=[" ".join(a or "''" for a in argv)
                                                                      for argv, _, _ in EMPTY_ARGUMENTS])
def test_an_empty_path_or_name_is_a_usage_error_naming_the_argument(tmp_path, monkeypatch, capsys, argv, name, expected):
    """Before: `turnflow inspect ''` said `no such store file: ` (a blank name), `check ''` reported
    TF000 on a file named nothing, `rule ''` and `schema ''` listed everything, `compile F -o ''`
    printed to stdout and `run F --hub ''` ran locally: an empty value (an unset `"$VAR"`) was taken
    for a name or for "not given". Now argparse refuses it naming the argument, exit 2."""
    monkeypatch.chdir(tmp_path)
    code, err = usage(capsys, *argv)
    assert code == 2, err
    assert f"argument {name}: {expected}" in err and EMPTY in err, err
    assert err.startswith("usage: turnflow ") and "Traceback" not in err


def test_a_stray_empty_argument_is_shown_quoted(tmp_path, monkeypatch, capsys):
    """Before: `turnflow inspect x.db --summary ''` said `unrecognized arguments: ` (nothing after the
    colon). Words argparse cannot place are shown as a shell would need them typed."""
    monkeypatch.chdir(tmp_path)
    code, err = usage(capsys, "inspect", "x.db", "--summary", "")
    assert code == 2 and err.splitlines()[-1] == "turnflow: error: unrecognized arguments: ''", err
    code, err = usage(capsys, "check", "a.flow", "--strict", "x y", "--nope")
    assert code == 2 and err.splitlines()[-1] == "turnflow: error: unrecognized arguments: 'x y' --nope", err


FREE_TEXT = {  # the string arguments where '' is not refused by argparse, and why
    ("run", "--task"): "the task's text: an empty first input is a (poor) task, not a wrong command line",
    ("check", "--select"): "comma-separated codes: an empty list selects nothing (the ruff spelling)",
    ("check", "--extend-select"): "comma-separated codes: an empty list adds nothing",
    ("check", "--extend-ignore"): "comma-separated codes (--ignore): an empty list ignores nothing",
    ("check", "--exclude"): "comma-separated globs: an empty list excludes nothing",
    ("fmt", "--exclude"): "comma-separated globs: an empty list excludes nothing",
    ("serve", "--listen"): "checked by serve itself: `--listen '': expected HOST:PORT (e.g. 127.0.0.1:8765)`",
    ("migrate", "--import"): "checked by migrate itself: `--import` takes MODULE:ATTRIBUTE (e.g. `team:team`), not ``",
}


def test_every_path_or_name_argument_refuses_the_empty_string():
    """Each argument that takes a string is typed by turnflow.cli.util's `text_type` (or a number
    type, or a fixed choice) unless FREE_TEXT says why not; EMPTY_ARGUMENTS exercises each."""
    import argparse

    from turnflow.cli import app

    parser = app.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    typed, free = set(), set()
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.nargs == 0 or action.choices is not None or isinstance(action, argparse._HelpAction):
                continue
            label = action.option_strings[-1] if action.option_strings else action.metavar
            qualname = getattr(action.type, "__qualname__", "")
            if qualname.startswith("text_type."):
                typed.add((name, label))
            elif not qualname.startswith("number_type."):
                free.add((name, label))
    assert free == set(FREE_TEXT), (free - set(FREE_TEXT), set(FREE_TEXT) - free)
    exercised = {(argv[0], "--output" if label == "-o/--output" else label) for argv, label, _ in EMPTY_ARGUMENTS}
    assert typed == exercised, (typed - exercised, exercised - typed)


# -- a reader that stops early changes no exit status -----------------------------------------------
class ClosedPipe:
    """A standard stream whose reader went away (`turnflow ... | head -1`): every write is EPIPE."""
    encoding = "utf-8"

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass

    def fileno(self):
        import io

        raise io.UnsupportedOperation("fileno")


@pytest.mark.parametrize("argv,status", [(["fmt", "--check"], 1), (["check", "--format", "concise"], 1),
                                         (["check", "--exit-zero"], 0), (["rule", "--list"], 0)])
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_closed_output_pipe_keeps_the_exit_status(tmp_path, monkeypatch, argv, status, stream):
    """docs/cli.md's exit codes hold when the reader stops early: before, `turnflow fmt --check
    flows/ | head -1` exited 0 (BrokenPipeError was taken for success), so a CI step with
    `set -o pipefail` passed although files would be reformatted."""
    for i in range(3):
        (tmp_path / f"u{i}.flow").write_text(UGLY if argv[0] == "fmt" else BROKEN)
    monkeypatch.setattr(sys, stream, ClosedPipe())
    assert main([*argv, *([str(tmp_path)] if argv[0] != "rule" else [])]) == status


def test_a_closed_pipe_to_a_real_process_keeps_fmt_checks_status(tmp_path):
    import subprocess

    deep = tmp_path / ("d" * 200)  # long lines: fewer files fill the pipe
    deep.mkdir()
    for i in range(400):  # more than a pipe's buffer (64 KiB) of `would reformat` lines (~90 KiB)
        (deep / f"u{i}.flow").write_text(UGLY)
    proc = subprocess.Popen([sys.executable, "-m", "turnflow", "fmt", "--check", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"would reformat")
    proc.stdout.close()  # `| head -1`
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert b"Traceback" not in err and b"Exception ignored" not in err
