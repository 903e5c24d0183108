"""The tables of tests/docs_fresh_env.py (the CI step that runs the docs on fresh environments)
against the docs: every extra a doc names is a real extra, every `NOT_RUN` entry still matches a
block, and the README's first command is the one that step runs."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import docs_fresh_env as fresh  # noqa: E402


def test_extras_are_read_from_every_install_form():
    text = ("python3 -m pip install -e '.[serve]'\n"
            "`pip install 'turnflow[langgraph,ag2,autogen] @ git+https://github.com/turnflow/turnflow'`\n"
            "python3 -m pip install -q -e '.[test]' && python3 -m pytest\n"
            "every install is `pip install -e '.[EXTRA]'`\n")
    assert fresh.extras_named(text) == ("ag2", "autogen", "langgraph", "serve")
    assert fresh.extras_named("python3 -m pip install . && turnflow check examples/") == ()


def test_every_extra_a_doc_names_exists():
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for doc in fresh.DOCS:
        named = set(fresh.extras_named(doc.read_text(encoding="utf-8")))
        assert named <= declared, (doc.name, named - declared)
    assert set(fresh.extras_named((ROOT / "README.md").read_text())) == declared - {"test"}


def test_every_not_run_entry_names_a_block():
    blocks = {doc: fresh.python_blocks(fresh.doc_name(doc), doc.read_text(encoding="utf-8")) for doc in fresh.DOCS}
    for (name, fragment), reason in fresh.NOT_RUN.items():
        codes = [code for doc, found in blocks.items() if fresh.doc_name(doc) == name for _, code, _ in found]
        assert any(fragment in code for code in codes), f"NOT_RUN entry ({name!r}, {fragment!r}) matches no block"
        assert reason
    ran = [line for found in blocks.values() for line, _, reason in found if not reason]
    assert len(ran) >= 5


def test_the_readme_first_command_is_the_one_run():
    command = fresh.first_command()
    assert command.startswith("python3 -m venv .venv") and "pip install ." in command
    assert "turnflow check examples/" in command
