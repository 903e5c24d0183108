"""Migrating a notebook: the `#` comments of the migrated flow and the line numbers inside the
TF4xx messages name a cell and the line within it (as the diagnostics' own positions do), never
a line of the notebook's JSON or of the code cells joined into one source (issue 23)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from turnflow.migrate import migrate

FIXTURE = Path(__file__).parent / "fixtures" / "migrate" / "notebook" / "support_branches.ipynb"


def _cell_line(data: dict, cell: int, needle: str) -> int:
    """The line (from 1) of the first line containing `needle` in code cell `cell` (counted from 1)."""
    source = "".join(data["cells"][cell - 1]["source"]).split("\n")
    return next(i for i, line in enumerate(source, 1) if needle in line)


def test_messages_and_comments_name_the_cell_and_the_line_in_it():
    text = FIXTURE.read_text(encoding="utf-8")
    data = json.loads(text)
    result = migrate(text, FIXTURE.name)
    tf410 = {d.cell.line: d.message for d in result.diagnostics if d.code == "TF410"}
    if_line = _cell_line(data, 7, "if TECH_SUPPORT:")
    then_line = _cell_line(data, 7, "after_billing = AgentTarget(tech)")
    else_line = _cell_line(data, 7, "after_billing = RevertToUserTarget()")
    call_line = _cell_line(data, 7, "triage.handoffs.add_llm_condition(")
    assert {d.cell.cell for d in result.diagnostics if d.code == "TF410"} == {7}
    # the binding chosen at run time: the lines of both bindings, as cell lines
    assert f"(cell 7, line {else_line})" in tf410[if_line] and f"(cell 7, line {then_line})" in tf410[if_line]
    # a handoff configured under the `if`: the `if`'s line, as a cell line
    assert f"`if TECH_SUPPORT:` (cell 7, line {if_line})" in tf410[call_line]
    # the comments in the flow: `(input cell 7:4:4)`, the position the diagnostic prints
    comments = re.findall(r"\(input ([^)]*)\)", result.text.replace("\n    #   ", " "))
    assert f"cell 7:{if_line}:4" in comments and f"cell 7:{call_line}:5" in comments
    assert all(c.startswith("cell ") for c in comments), comments
    # no line number of the joined source or of the JSON anywhere in the messages
    assert not [m for m in tf410.values() if re.search(r"\(line \d+\)", m)]

    # the same code as a Python file, migrated next: `line N` and `(input N:C)` again
    code = "\n".join("".join(c["source"]) for c in data["cells"] if c["cell_type"] == "code"
                     and not "".join(c["source"]).startswith("%"))
    code = code.replace("await a_initiate_group_chat", "a_initiate_group_chat").replace("!echo done", "")
    result = migrate(code, "support.py")
    messages = [d.message for d in result.diagnostics if d.code == "TF410"]
    assert messages and all("cell" not in m for m in messages)
    assert any(re.search(r"\(line \d+\)", m) for m in messages)
    assert re.search(r"\(input \d+:\d+\)", result.text)
