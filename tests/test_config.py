"""Project configuration (`turnflow.toml`, `[tool.turnflow]`), the CLI flags that
override it, and which files a folder walk visits (.gitignore, hidden, node_modules)."""

from __future__ import annotations

import pytest

from turnflow.cli import main
from turnflow.workspace.ignore import parse_gitignore

# TF203 (warning, line 4) and, with `writter`, TF102 (error, line 5)
FLOW = """workflow w {
    participant a
    participant b
    participant reviewer
    start a
    a -> b
    b -> terminate
    reviewer -> terminate
}
"""
BROKEN = FLOW.replace("start a", "start writter")

def check(capsys, *args):
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err

def codes(out: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in out.splitlines() if ": TF" in line]

@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.flow").write_text(FLOW)
    return tmp_path

def test_no_path_checks_the_current_folder(project, capsys):
    code, out, _ = check(capsys)
    assert code == 0 and codes(out) == ["TF203"]
    assert "in 1 file" in out

def test_select_and_ignore_flags(project, capsys):
    (project / "b.flow").write_text(BROKEN)
    assert codes(check(capsys)[1]) == ["TF203", "TF102"]
    code, out, _ = check(capsys, "--select", "TF1")
    assert code == 1 and codes(out) == ["TF102"]
    code, out, _ = check(capsys, "--ignore", "TF102,unreachable-participant")
    assert code == 0 and codes(out) == [] and "All checks passed" in out
    code, _, err = check(capsys, "--select", "TF8")
    assert code == 2 and "`TF8` is neither a rule code" in err

def test_syntax_errors_cannot_be_turned_off(project, capsys):
    (project / "a.flow").write_text("workflow w {\n  a -> -> b\n}\n")
    code, out, _ = check(capsys, "--ignore", "TF001", "--select", "TF2")
    assert code == 1 and codes(out) == ["TF001"]

def test_pyproject_ignore_severity_and_per_file_ignores(project, capsys):
    (project / "legacy").mkdir()
    (project / "legacy" / "old.flow").write_text(FLOW)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.turnflow]\nper-file-ignores = { "legacy/*.flow" = ["TF203"] }\n'
        '[tool.turnflow.severity]\nunreachable-participant = "error"\n')
    code, out, _ = check(capsys)
    assert code == 1
    assert "a.flow:4:17: TF203 error" in out and "old.flow" not in out
    (project / "pyproject.toml").write_text('[tool.turnflow]\nignore = ["TF2"]\n')
    assert check(capsys)[0:2] == (0, "All checks passed (2 files).\n")

def test_turnflow_toml_wins_and_is_found_from_a_subfolder(project, capsys, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.turnflow]\nignore = ["TF203"]\n')
    (project / "turnflow.toml").write_text('select = ["TF1"]\n[severity]\nTF203 = "info"\n')
    sub = project / "flows"
    sub.mkdir()
    (sub / "b.flow").write_text(FLOW)
    monkeypatch.chdir(sub)
    code, out, _ = check(capsys, "--select", "TF203")
    assert code == 0 and "b.flow:4:17: TF203 info" in out
    other = project / "other.toml"
    other.write_text('extend-select = []\nignore = ["ALL"]\n')
    assert check(capsys, "--config", str(other), "--select", "TF203")[1].startswith("All checks passed")

@pytest.mark.parametrize("text, message", [
    ('selekt = ["TF1"]\n', "unknown key `selekt`; did you mean `select`?"),
    ('ignore = "TF2"\n[severity]\nTF203 = "fatal"\n', "severity of `TF203` must be one of error, warning, info"),
    ('ignore = ["TF999"]\n', "`TF999` is neither a rule code"),
    ("ignore = [\n", "invalid TOML"),
    ('[severity]\nTF001 = "warning"\n', "the severity of TF001 cannot be changed"),
])
def test_bad_configuration_is_a_usage_error(project, capsys, text, message):
    (project / "turnflow.toml").write_text(text)
    code, out, err = check(capsys)
    assert code == 2 and out == ""
    assert "turnflow.toml" in err and message in err

def test_folder_walk_skips_hidden_node_modules_gitignored_and_excluded(project, capsys):
    for rel in (".hidden/x.flow", "node_modules/pkg/x.flow", "build/x.flow", "src/gen/x.flow",
                "src/keep.flow", "src/scratch.tmp.flow", "src/wanted.tmp.flow", "generated/x.flow"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(BROKEN)
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("build/\n*.tmp.flow\n!wanted.tmp.flow\n/src/gen\n")
    (project / "turnflow.toml").write_text('extend-exclude = ["generated"]\n')
    code, out, _ = check(capsys, "--select", "TF102")
    files = sorted({line.split(":")[0] for line in out.splitlines() if ": TF" in line})
    assert files == ["src/keep.flow", "src/wanted.tmp.flow"]
    code, out, _ = check(capsys, "--select", "TF102", "--exclude", "src/keep.flow")
    assert sorted({line.split(":")[0] for line in out.splitlines() if ": TF" in line}) == ["src/wanted.tmp.flow"]
    # a file named on the command line is checked even where a folder walk would skip it
    code, out, _ = check(capsys, "node_modules/pkg/x.flow")
    assert code == 1 and "node_modules/pkg/x.flow:5:11: TF102" in out
    (project / "turnflow.toml").write_text('respect-gitignore = false\nexclude = []\n')
    code, out, _ = check(capsys, "--select", "TF102")
    assert len({line.split(":")[0] for line in out.splitlines() if ": TF" in line}) == 8

@pytest.mark.parametrize("pattern, path, is_dir, ignored", [
    ("build/", "build", True, True),
    ("build/", "build", False, False),
    ("*.log", "a/b/c.log", False, True),
    ("/top.flow", "top.flow", False, True),
    ("/top.flow", "sub/top.flow", False, False),
    ("docs/*.flow", "docs/a.flow", False, True),
    ("docs/*.flow", "docs/x/a.flow", False, False),
    ("**/gen", "a/b/gen", True, True),
    ("a/**/z.flow", "a/z.flow", False, True),
    ("a/**/z.flow", "a/b/c/z.flow", False, True),
    ("out/**", "out/x/y.flow", False, True),
    ("[abc].flow", "b.flow", False, True),
    ("?.flow", "ab.flow", False, False),
])
def test_gitignore_patterns(tmp_path, pattern, path, is_dir, ignored):
    from turnflow.workspace.ignore import GitIgnore

    (tmp_path / ".gitignore").write_text(pattern + "\n")
    assert GitIgnore(tmp_path).ignored(tmp_path / path, is_dir) is ignored
    assert len(parse_gitignore("# comment\n\n" + pattern + "\n")) == 1

def test_language_server_policy_follows_the_configuration(project):
    from turnflow.workspace.config import policy_for_file
    from turnflow.lsp.features import analyse

    path = str(project / "a.flow")
    assert policy_for_file(path) is None
    assert [d.code for d in analyse(FLOW, path).diagnostics] == ["TF203"]
    (project / "turnflow.toml").write_text('ignore = ["TF203"]\n[severity]\nTF102 = "warning"\n')
    assert analyse(FLOW, path, policy=policy_for_file(path)).diagnostics == []
    [d] = analyse(BROKEN, path, policy=policy_for_file(path)).diagnostics
    assert (d.code, d.severity) == ("TF102", "warning")


def test_force_exclude_applies_to_named_files(project, capsys):
    (project / "generated").mkdir()
    (project / "generated" / "g.flow").write_text(BROKEN)
    (project / "drafts.flow").write_text(BROKEN)
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("drafts.flow\n")
    (project / "turnflow.toml").write_text('extend-exclude = ["generated"]\n')
    named = ["generated/g.flow", "drafts.flow", "a.flow"]
    assert codes(check(capsys, *named)[1]) == ["TF203", "TF102", "TF102"]
    code, out, _ = check(capsys, "--force-exclude", *named)
    assert code == 0 and codes(out) == ["TF203"]
    (project / "turnflow.toml").write_text('extend-exclude = ["generated"]\nforce-exclude = true\n')
    assert codes(check(capsys, *named)[1]) == ["TF203"]
