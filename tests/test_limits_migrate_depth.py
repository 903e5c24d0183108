"""Issue 33, item 9: a Python source nested past what CPython's own parser reads (a 100,000-deep
unary expression makes `compile` raise MemoryError, a deep `not` chain RecursionError) is a TF401
with a position, exit 1, never exit 3."""

from __future__ import annotations

import pytest

from turnflow.cli import main
from turnflow.migrate import migrate
from turnflow.migrate.common import MigrateError

HEAD = "from autogen import GroupChat, GroupChatManager\n"
TAIL = "\nchat = GroupChat(agents=[], messages=[])\n"


@pytest.mark.parametrize("expr", ["-" * 100_000 + "1", "not " * 100_000 + "1", "~" * 100_000 + "x",
                                  "+" * 100_000 + "1"], ids=["minus", "not", "invert", "plus"])
def test_a_source_nested_past_pythons_parser_is_tf401(tmp_path, capsys, expr):
    text = HEAD + "x = " + expr + TAIL
    with pytest.raises(MigrateError) as info:
        migrate(text, "deep.py")
    assert info.value.diagnostics[0].code == "TF401"
    (tmp_path / "deep.py").write_text(text)
    assert main(["migrate", str(tmp_path / "deep.py")]) == 1
    out = capsys.readouterr()
    assert "TF401 error: the Python source is nested too deeply to read" in out.out + out.err
    assert "internal error" not in out.out + out.err
