"""The reading surface of `turnflow migrate` (issue 31): every parameter of every framework call
the front ends recognise is classified — read, irrelevant to speaker order, or not modelled (a
TF4xx finding at the argument) — and the table matches `inspect.signature` of the installed
frameworks: autogen-agentchat 0.7 in this environment, AG2 0.9 (the classic `autogen` package)
under the classic environment (`bash .ci/classic-env`; skipped without it). A release that adds,
removes, reorders or changes a parameter fails here instead of being read wrongly."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnflow.migrate import surface
from turnflow.migrate.codes import DOCS

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from surface_signatures import signatures  # noqa: E402


def _table(family: str) -> dict[str, list]:
    return {a.target: [[p.kind, p.name, p.required] for p in a.params]
            for a in surface.API.values() if a.family == family}


def _differences(table: dict[str, list], real: dict) -> list[str]:
    out = []
    for target, want in table.items():
        got = real.get(target)
        if got != want:
            missing = [p for p in (got or []) if isinstance(got, list) and p not in want]
            out.append(f"{target}: the framework has {got}, the table {want}"
                       + (f"; unclassified: {[p[1] for p in missing]}" if missing else ""))
    return out


def test_every_agentchat_parameter_is_classified_as_the_installed_release_has_it():
    pytest.importorskip("autogen_agentchat")
    table = _table("agentchat")
    assert len(table) >= 25
    assert not _differences(table, signatures(list(table)))


def test_every_classic_ag2_parameter_is_classified_as_ag2_0_9_has_it():
    from test_migrate_live import _classic_python

    python = _classic_python()
    table = _table("ag2")
    assert len(table) >= 35
    run = subprocess.run([python, str(HERE / "surface_signatures.py"), *table], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=""))
    assert run.returncode == 0, run.stderr[-2000:]
    assert not _differences(table, json.loads(run.stdout))


def test_every_row_says_how_and_why_and_findings_have_a_documented_code():
    for a in surface.API.values():
        assert a.params or a.note, a.name
        for p in a.params:
            assert p.how in (surface.READ, surface.IRRELEVANT, surface.NOT_MODELLED), (a.name, p.name)
            assert len(p.why) > 8, (a.name, p.name)
            assert (p.how == surface.NOT_MODELLED) == bool(p.code), (a.name, p.name)
            assert not p.code or p.code in DOCS, (a.name, p.name, p.code)


def test_docs_migrate_md_holds_the_table_generated_from_the_same_data():
    docs = (HERE.parent / "docs" / "migrate.md").read_text(encoding="utf-8")
    assert surface.markdown() in docs, "docs/migrate.md: paste `python -c 'from turnflow.migrate.surface import " \
        "markdown; print(markdown())'` into the section 'What is read'"


def _call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


@pytest.mark.parametrize("positional, keyword", [
    ("RoundRobinGroupChat([a, b], termination_condition=t)", "RoundRobinGroupChat(participants=[a, b], "
                                                              "termination_condition=t)"),
    ("h.add_llm_condition(OnCondition(target=x, condition=y))", "h.add_llm_condition(condition=OnCondition("
                                                                "target=x, condition=y))"),
    ("GroupChat([a, b], [], 5)", "GroupChat(agents=[a, b], messages=[], max_round=5)"),
])
def test_positional_and_keyword_forms_bind_alike(positional, keyword):
    def bound(text):
        call = _call(text)
        name = call.func.id if isinstance(call.func, ast.Name) else f"Handoffs.{call.func.attr}"
        a = surface.api("ag2", name) or surface.api("agentchat", name)
        b = surface.bind(call, a)
        assert b.problem is None
        return {k: ast.unparse(v) for k, v in b.args.items()}

    assert bound(positional) == bound(keyword)


@pytest.mark.parametrize("text, args", [
    ("RoundRobinGroupChat([a, b], t)", ([], None)),
    ("RoundRobinGroupChat()", ()),
    ("RoundRobinGroupChat([a], max_turn=3)", ([],)),
    ("TextMentionTermination()", ()),
    ("MaxMessageTermination(3, False, 1)", (3, False, 1)),
])
def test_a_call_that_does_not_bind_gets_the_frameworks_own_error(text, args):
    pytest.importorskip("autogen_agentchat")
    import autogen_agentchat.conditions as conditions
    import autogen_agentchat.teams as teams

    call = _call(text)
    name = call.func.id
    b = surface.bind(call, surface.api("agentchat", name))
    assert b.problem is not None
    cls = getattr(teams, name, None) or getattr(conditions, name)
    kwargs = {"max_turn": 3} if "max_turn" in text else {}
    with pytest.raises(TypeError) as err:
        cls(*args, **kwargs)
    assert b.problem[1] == str(err.value)


@pytest.mark.parametrize("text", ["RoundRobinGroupChat(*members)", "RoundRobinGroupChat([a], **settings)"])
def test_arguments_known_only_at_run_time_are_a_problem_at_the_argument(text):
    call = _call(text)
    b = surface.bind(call, surface.api("agentchat", "RoundRobinGroupChat"))
    assert b.problem is not None and "known only when the program runs" in b.problem[1]
    assert b.problem[0] in call.args or b.problem[0] in [k.value for k in call.keywords]
