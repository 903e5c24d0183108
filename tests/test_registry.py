
from turnflow.diagnostics.registry import CODE_RE, DOC_SECTIONS, NAME_RE, all_rules, get_rule
from turnflow.diagnostics.diagnostic import SEVERITIES


def test_codes_and_names_are_unique_and_well_formed():
    rules = all_rules()
    codes = [r.code for r in rules]
    names = [r.name for r in rules]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    for r in rules:
        assert CODE_RE.match(r.code), r.code
        assert NAME_RE.match(r.name), r.name
        assert r.severity in SEVERITIES


def test_every_rule_is_documented():
    for r in all_rules():
        assert r.summary and r.summary.endswith("."), r.code
        for section in DOC_SECTIONS:
            assert section in r.doc, f"{r.code} lacks {section!r}"


def test_design_catalogue_codes_present():
    for code in ["TF001", "TF002", "TF101", "TF102", "TF103", "TF104", "TF105", "TF106", "TF107", "TF110"]:
        assert get_rule(code) is not None, code
    assert get_rule("tf101").code == "TF101"


def test_docs_rules_md_is_generated_and_fresh():
    from pathlib import Path

    from turnflow.cli.commands.rule import catalogue_markdown

    path = Path(__file__).parent.parent / "docs" / "rules.md"
    assert path.read_text(encoding="utf-8") == catalogue_markdown(), \
        "docs/rules.md is stale: run `turnflow rule --markdown > docs/rules.md`"


def test_the_table_and_the_check_modules_agree():
    """Every check-stage code of diagnostics/codes.py has exactly its check function, with the
    stage's signature; every other code has documentation in its home module and no check."""
    import inspect

    import turnflow.compiler.checks  # noqa: F401  (imports every check module)
    from turnflow.diagnostics.codes import CHECK_STAGES, CODES, STAGES
    from turnflow.diagnostics.registry import _CHECKS

    assert set(_CHECKS) == {c.code for c in CODES if c.stage in CHECK_STAGES}
    for row in CODES:
        assert row.stage in STAGES, row
        assert (row.profile is not None) == (row.stage == "profile"), row
        info = get_rule(row.code)
        if row.stage in CHECK_STAGES:
            params = list(inspect.signature(info.check).parameters)
            assert len(params) == (2 if row.stage == "graph" else 1), row.code
            assert info.check.__module__ == row.home, row.code
        else:
            assert info.check is None and info.doc, row.code


def test_a_rule_for_a_code_outside_the_table_is_refused():
    import pytest

    from turnflow.diagnostics.registry import rule

    with pytest.raises(ValueError, match="TF999"):
        rule("TF999")
    with pytest.raises(ValueError, match="TF401"):
        rule("TF401")  # a migrate code has no check function


def test_names_and_docs_need_no_compiler_import():
    """TF000-TF002 and TF4xx are known without importing the compiler (no registration by import
    side effect): a fresh interpreter reads names from the table and docs from each code's home."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    probe = ("import json, sys\n"
             "from turnflow.diagnostics.codes import lookup\n"
             "from turnflow.diagnostics.registry import get_rule\n"
             "names = [lookup(c).name for c in ('TF000', 'TF001', 'TF002', 'TF401', 'TF901')]\n"
             "before = 'turnflow.compiler.checks' in sys.modules\n"
             "docs = [bool(get_rule(c).doc) for c in ('TF000', 'TF001', 'TF401', 'TF901')]\n"
             "print(json.dumps([names, before, docs, 'turnflow.compiler.checks' in sys.modules]))\n")
    src = Path(__file__).resolve().parents[1] / "src"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(src)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    names, before, docs, after = json.loads(proc.stdout)
    assert names == ["unreadable-file", "syntax-error", "invalid-value", "migrate-unsupported-input",
                     "unused-suppression"]
    assert before is False and docs == [True] * 4 and after is False


def test_severity_and_stage_are_enums_that_read_as_their_words():
    """The code table holds `Severity` / `Stage` members; everything that shows them
    (JSON, text, comparisons with the plain words) sees the same strings as before."""
    import json

    from turnflow.diagnostics.codes import BY_CODE, CODES, Severity, Stage

    assert all(isinstance(c.severity, Severity) and isinstance(c.stage, Stage) for c in CODES)
    row = BY_CODE["TF203"]
    assert row.severity is Severity.WARNING and row.stage is Stage.GRAPH
    assert json.dumps([row.severity, row.stage]) == '["warning", "graph"]'
    assert f"{row.severity}:{row.stage}" == "warning:graph" and row.stage == "graph"
