"""Rule fixtures as data: tests/fixtures/rules/<CODE>/<case>.flow with a golden
<case>.expected (one `line:col: CODE severity: message` per diagnostic).
Cases named `clean*` must not report their folder's code; every other case
must report it. Every registered rule that has a check has both kinds.
Profile rules (TF3xx) are compile-time checks: their fixtures are checked
with their profile, as `turnflow compile --profile ag2-builtin` / `--target T` do."""

from pathlib import Path

import pytest

import turnflow
from turnflow.diagnostics.registry import all_rules
from golden import check_golden

ROOT = Path(__file__).parent / "fixtures" / "rules"
CASES = sorted(ROOT.glob("*/*.flow"))


def render(diags) -> str:
    return "".join(f"{d.span.line}:{d.span.column}: {d.code} {d.severity}: {d.message}\n" for d in diags)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_rule_fixture(case: Path, update_goldens):
    code = case.parent.name
    if code.startswith("TF3"):
        from turnflow.compiler.emit.spec import diagnostics
        from turnflow.diagnostics.codes import lookup

        profile = lookup(code).profile  # each TF3xx is one profile's (or one --target's) check
        _flow, diags = diagnostics(case.read_text(encoding="utf-8"), case.name, profile=profile)
    else:
        diags = turnflow.check(case.read_text(encoding="utf-8"), path=case.name)
    codes = {d.code for d in diags}
    if case.stem.startswith("clean"):
        assert code not in codes, render(diags)
    else:
        assert code in codes, f"{case} should report {code}:\n{render(diags)}"
    check_golden(case.with_suffix(".expected"), render(diags), update_goldens)


def test_every_rule_has_firing_and_clean_fixtures():
    missing = []
    for info in all_rules():
        if info.code in ("TF000",):  # file-system level: covered by tests/test_cli.py
            continue
        if info.code.startswith("TF4"):  # `turnflow migrate`: covered by tests/fixtures/migrate
            continue
        folder = ROOT / info.code
        cases = list(folder.glob("*.flow"))
        if not any(c.stem.startswith("clean") for c in cases) or not any(
                not c.stem.startswith("clean") for c in cases):
            missing.append(info.code)
    assert not missing, f"rules without a firing and a clean fixture: {missing}"
