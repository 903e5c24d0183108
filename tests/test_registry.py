
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

    from turnflow.commands.rule import catalogue_markdown

    path = Path(__file__).parent.parent / "docs" / "rules.md"
    assert path.read_text(encoding="utf-8") == catalogue_markdown(), \
        "docs/rules.md is stale: run `turnflow rule --markdown > docs/rules.md`"
