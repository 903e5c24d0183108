"""docs/contracts.md cannot say "done" without a test: every table row is read; a row whose status
starts with *done* must name at least one test (`file.py::test_name`), and every test a row names
must be a test function of that file in tests/ that is not marked skip or xfail (the suite runs
it like any other). The page must also name every item of the integration contracts."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "contracts.md"
TEST_ID = re.compile(r"\b(test_[a-z0-9_]+\.py)::(test_[A-Za-z0-9_]+)\b")
STATUSES = ("done", "partial", "missing")

#: every name the contract texts give an agent author, which the page must map
CONTRACT_ITEMS = (
    # session adapters
    "manifest", "initial_state", "fold", "validate_create", "validate_send", "on_accepted", "next_state",
    "auto_close_reason", "default_view_policy", "extract_turn_input", "build_round_envelope", "render_envelope",
    "get_session", "pending_acks", "initiator_sent", "respondent_replied", "consulting_complete", "explicit_close",
    "acks_within", "reply_within", "max_silence", "turn_within", "ttl_expired", "FullTranscript", "WindowedSummary",
    "INVITED", "CLOSING", "EXPIRED",
    # platform tools
    "send_message", "send_event", "add_participant", "remove_participant", "get_participants", "lookup_peers",
    "create_chatroom", "get_tool_schemas", "execute_tool_call", "tool_call", "tool_result", "thought", "metadata",
    "participants_msg", "is_session_bootstrap", "FakeAgentTools", "HistoryConverter", "sender_name", "sender_type",
    "message_type", "on_started", "on_cleanup", "room_id", "PlatformMessage", "format_for_llm", "sent_messages",
    "SimpleAdapter", "member",
    # handshake
    "aopen_session", "control_loop", "supports_stepwise", "telemetry_stream", "atlas", "behavior", "aplan",
    "aexecute", "asynthesize", "emit_event", "AdapterTelemetryEvent", "adapter_capabilities", "import_path",
    "attribute", "AdapterError", "AdapterCapabilities", "AdapterEventEmitter", "StudentStepResult",
    # frameworks
    "create_react_agent", "MemorySaver", "thread_id",
)


def rows(doc: Path = DOC) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every body row of every table on the page."""
    out = []
    for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|") or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and cells[0] in ("item", "the contracts say"):  # a header
            continue
        out.append((n, cells))
    return out


def item_rows(doc: Path = DOC) -> list[tuple[int, list[str]]]:
    return [(n, c) for n, c in rows(doc) if len(c) == 4]


@lru_cache(maxsize=None)
def functions_of(file: str) -> dict[str, list[str]]:
    """The test functions of tests/`file` and the decorator names on each."""
    path = ROOT / "tests" / file
    if not path.is_file():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            found[node.name] = [ast.unparse(d) for d in node.decorator_list]
    return found


def test_the_page_has_its_four_sections_of_item_rows():
    assert len(item_rows()) >= 60
    assert all(c[2].split(":")[0].split(" ")[0] in STATUSES for _, c in item_rows()), \
        [(n, c[2][:40]) for n, c in item_rows() if c[2].split(":")[0].split(" ")[0] not in STATUSES]


def problems_of(line: int, cells: list[str]) -> list[str]:
    """Why one row breaks the rule (empty: it holds)."""
    item, _, status, tests = cells
    named = TEST_ID.findall(tests)
    out = []
    if status.startswith("done") and not named:
        out.append(f"docs/contracts.md:{line}: {item[:60]!r} is done but names no test")
    for file, name in named:
        funcs = functions_of(file)
        if name not in funcs:
            out.append(f"docs/contracts.md:{line}: {file}::{name} does not exist")
            continue
        marks = [d for d in funcs[name] if re.search(r"\b(skip|skipif|xfail)\b", d)]
        if marks:
            out.append(f"docs/contracts.md:{line}: {file}::{name} is marked {marks[0]}")
    return out


@pytest.mark.parametrize("line, cells", item_rows(), ids=[str(n) for n, _ in item_rows()])
def test_every_done_row_names_tests_that_exist_and_are_not_skipped(line, cells):
    assert problems_of(line, cells) == []


def test_every_item_of_the_contracts_is_on_the_page():
    text = DOC.read_text(encoding="utf-8")
    missing = [name for name in CONTRACT_ITEMS if name not in text]
    assert not missing, f"docs/contracts.md does not map {', '.join(missing)}"


def test_the_check_catches_a_done_row_without_a_test_or_with_a_missing_one(tmp_path):
    """The check itself: a done row without a test, or naming a test that is not there, fails;
    a partial row needs none."""
    doc = tmp_path / "contracts.md"
    doc.write_text("| item | where | status | tests |\n|---|---|---|---|\n"
                   "| a thing | x.py | done | |\n"
                   "| b thing | x.py | done | test_contracts_doc.py::test_not_there |\n"
                   "| c thing | x.py | partial: why | |\n"
                   "| d thing | x.py | done | test_contracts_doc.py::test_every_item_of_the_contracts_is_on_the_page |\n")
    problems = [p for line, cells in item_rows(doc) for p in problems_of(line, cells)]
    assert problems == ["docs/contracts.md:3: 'a thing' is done but names no test",
                        "docs/contracts.md:4: test_contracts_doc.py::test_not_there does not exist"]
