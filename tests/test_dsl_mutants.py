"""Mutants of real `.flow` inputs (the examples and fixtures with tokens and lines deleted,
duplicated or swapped, unicode inserted, line ends mixed, truncated at every byte, nested deeply,
very long lines) that once broke a promise of the front end. Each is kept as a minimal fixture in
tests/fixtures/mutants/ (`.flow.bin`: bytes that are not UTF-8 text, read as bytes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnflow.cli import main

MUTANTS = Path(__file__).parent / "fixtures" / "mutants"


def _check_json(path: Path, capsys) -> tuple[int, list[dict]]:
    import json

    code = main(["check", str(path), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


# -- TF000: the first bad byte's position counts lines and columns as every other diagnostic -----

@pytest.mark.parametrize("name, where", [
    ("bad_byte_after_cr_line_ends", (3, 19)),    # a lone \r ends a line (it said 1:50)
    ("bad_byte_after_crlf_line_ends", (3, 19)),
    ("bad_byte_after_bom", (1, 12)),             # the byte order mark is not a column (it said 1:13)
    ("nul_after_non_ascii", (2, 18)),            # columns count characters, not bytes (it said 2:19)
    ("nul_after_cr_line_ends", (2, 18)),         # (it said 1:31)
])
def test_an_undecodable_byte_is_reported_at_its_line_and_character_column(name, where, tmp_path, capsys):
    path = tmp_path / f"{name}.flow"
    path.write_bytes((MUTANTS / f"{name}.flow.bin").read_bytes())
    code, found = _check_json(path, capsys)
    assert code == 2
    [d] = found
    assert d["code"] == "TF000"
    assert (d["line"], d["column"], d["end_line"], d["end_column"]) == (*where, where[0], where[1] + 1)
