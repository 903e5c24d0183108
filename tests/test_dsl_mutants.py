"""Mutants of real `.flow` inputs (the examples and fixtures with tokens and lines deleted,
duplicated or swapped, unicode inserted, line ends mixed, truncated at every byte, nested deeply,
very long lines) that once broke a promise of the front end. Each is kept as a minimal fixture in
tests/fixtures/mutants/ (`.flow.bin`: bytes that are not UTF-8 text, read as bytes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import turnflow
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


# -- a condition of many terms: `check` answers (exit 0 or 1), never an internal error ---------

def _many_terms(term: str, joiner: str, n: int, declarations: str = "") -> str:
    return ("workflow w {\n    participant a\n    participant b\n    start a\n" + declarations
            + "    a -> b when " + joiner.join(term.format(i=i) for i in range(n)) + "\n}\n")


def test_the_search_for_a_firing_input_does_not_recurse_per_variable():
    """Whether a rule can fire is searched one variable at a time; the search kept one Python
    frame per variable assigned, so a condition reading ~1,000 context keys hit the recursion
    limit (below: 400 keys under a limit of 150 frames more than a small flow needs)."""
    import inspect
    import sys

    text = _many_terms("context.k{i} == 1", " and ", 400)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 150)
    try:
        found = turnflow.check(text)
    finally:
        sys.setrecursionlimit(limit)
    assert {d.code for d in found} == {"TF208"}  # each key read but never initialised: nothing else


@pytest.mark.parametrize("term, joiner", [
    ("context.k{i} == 1", " and "),             # a thousand context keys read by one `and`
    ('text contains "x{i}"', " and "),
    ("len(context.k{i}) > 1", " and "),
    ("context.k{i} > {i}", " or "),
], ids=["context", "text", "len", "or"])
def test_a_condition_reading_a_thousand_variables_is_checked(term, joiner, tmp_path, capsys):
    """The search for an input on which a rule fires went one Python call deeper per variable the
    condition reads: past ~990 of them, `check` was exit 3, `internal error: RecursionError`.
    (Below: 400 variables under a limit of 150 frames more than a small flow needs, as the test
    above, rather than 1,200 under the default 1,000: the same per-variable depth found, a third
    of the work.)"""
    import inspect
    import sys

    path = tmp_path / "wide.flow"
    path.write_text(_many_terms(term, joiner, 400))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 150)
    try:
        code = main(["check", str(path)])
    finally:
        sys.setrecursionlimit(limit)
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    assert "internal error" not in out + err


def test_the_search_for_a_firing_input_is_bounded_by_the_variables_it_reads(monkeypatch):
    """Each step of the search evaluates the conditions still open, which read as many variables
    as the rule does: with no bound on that work, a rule reading n keys cost n² leaf evaluations
    (4,000 keys: minutes). Counted, not timed: the leaves evaluated at n and 4n keys."""
    from turnflow.compiler import firing

    calls = 0
    leaf = firing._leaf

    def counted(c, asg):
        nonlocal calls
        calls += 1
        return leaf(c, asg)

    monkeypatch.setattr(firing, "_leaf", counted)
    work = []
    for n in (600, 2400):
        calls = 0
        turnflow.check(_many_terms("context.k{i} == 1", " and ", n))
        work.append(calls)
    assert work[1] < 5 * work[0], work


def _tools(n: int, prefix: str = "t") -> str:
    return ", ".join(f"{prefix}{i}" for i in range(n))


@pytest.mark.parametrize("make", [
    # no tools declared: each tool name's "did you mean" candidates were rebuilt from every name
    lambda n: _many_terms("tool t{i}", " and ", n),
    lambda n: _many_terms("tool t{i}", " or ", n),
    # the source declares n tools, the rule names n others: `difflib` over all of them per term
    lambda n: _many_terms("tool u{i}", " and ", n).replace("participant a\n", f"participant a tools [{_tools(n)}]\n"),
    lambda n: _many_terms("tool u{i}", " and ", n).replace("participant a\n", f"participant a tools [{_tools(n)}]\n")
                                                  .replace("    a -> b when", "    * -> b when"),
    # n keys initialised, n others read (TF208's "did you mean")
    lambda n: _many_terms("context.z{i} == 1", " and ", n, "".join(f"    context k{i} = 1\n" for i in range(n))),
], ids=["tools-and", "tools-or", "not-owned", "owned-by-nobody", "uninitialised-keys"])
def test_did_you_mean_is_linear_in_the_names_of_a_block(make):
    """TF207 and TF208 suggest the closest declared name for each unknown one; they compared every
    unknown name with every declared one (and TF207 rebuilt the candidates per name): 1,000 ->
    4,000 tools cost 0.85 -> 19.9 s. Now one index per block (`checks.suggest.Suggester`): CPU time
    at 4n is under 8x that at n (linear: ~4x, up to ~6x while the index fills; the quadratic reading was
    12-24x)."""
    import gc

    def cpu(n: int, runs: int) -> float:
        text = make(n)
        times = []
        for _ in range(runs):
            gc.disable()
            try:
                started = time.process_time()
                found = turnflow.check(text)
                times.append(time.process_time() - started)
            finally:
                gc.enable()
        assert len(found) >= n  # each unknown name is reported
        return min(times)

    small, large = cpu(1500, 3), cpu(6000, 1)
    assert large / small < 8, (small, large)


def test_a_key_compared_with_thousands_of_values_is_not_enumerated(monkeypatch):
    """The dead-rule analysis enumerates one witness value per outcome of a key's conditions, each
    read against every condition: a key compared with n literals cost n² leaf evaluations (4,000:
    32 million, 34 s). Beyond 256 distinct conditions on a key, the rules reading it are read as
    the speaker graph reads them (each may fire). Counted at n and 4n; and nothing is reported
    dead or shadowed for want of an answer."""
    from turnflow.compiler import firing

    calls = 0
    leaf = firing._leaf

    def counted(c, asg):
        nonlocal calls
        calls += 1
        return leaf(c, asg)

    monkeypatch.setattr(firing, "_leaf", counted)
    work = []
    for n in (500, 2000):
        calls = 0
        text = _many_terms("context.k == {i}", " or ", n, "    context k = 0\n").replace(
            "    a -> b when", "    a -> terminate when context.k == -1\n    a -> b when")
        found = turnflow.check(text)
        work.append(calls)
        assert {d.code for d in found} <= {"TF110"}, sorted({d.code for d in found})
    assert work[1] < 5 * work[0] + 1000, work


# -- the language server: a document holding half a surrogate pair --------------------------------

#: an example with a lone surrogate inserted (what a JSON `"\ud800"` escape in an editor's
#: didOpen or didChange decodes to): kept here, as a UTF-8 fixture file cannot hold one
LONE_SURROGATE = "workflow w {\n    participant a\ud800\n    participant b  # \udfff\n    start a\n}\n"


@pytest.mark.parametrize("encoding, units", [("utf-16", 1), ("utf-8", 3), ("utf-32", 1)])
def test_lsp_positions_count_a_lone_surrogate(encoding, units):
    """LineIndex measured a line with `str.encode`, which refuses a lone surrogate: the server
    answered a document holding one with 'Error in server: UnicodeEncodeError' and published no
    diagnostics, while `check` reports TF001 at it. It is one UTF-16 code unit (as in the editor's
    string), three bytes in UTF-8 (as WTF-8 writes it)."""
    from turnflow.lsp.features import analyse
    from turnflow.lsp.positions import LineIndex

    text = LONE_SURROGATE
    lines = LineIndex(text, encoding)
    at = text.index("\ud800")
    assert lines.position(at) == (1, 17)
    assert lines.position(at + 1) == (1, 17 + units)
    for offset in range(len(text) + 1):
        assert lines.offset(*lines.position(offset)) == offset
    [d] = analyse(text, "x.flow", encoding).diagnostics
    assert (d.code, d.span.line, d.span.column) == ("TF001", 2, 18)


# -- fmt: a string escape that UTF-8 cannot hold raw ------------------------------------------------

def test_fmt_keeps_a_lone_surrogate_escaped_and_is_idempotent(tmp_path, capsys):
    """A `"\\ud800"` escape decodes to half a surrogate pair, which the printer wrote raw (JSON
    without ASCII escapes): the canonical text differed from the file forever (`fmt --check` exit 1
    after `fmt`, `fmt` 'reformatted' a file it then wrote back unchanged, as the writer escapes what
    UTF-8 cannot hold). Now printed as the escape: the file is canonical as it is."""
    from turnflow.dsl.parser import parse
    from turnflow.dsl.printer import format_flow

    source = (MUTANTS / "lone_surrogate_escapes.flow").read_text(encoding="utf-8")
    flow = parse(source)
    assert format_flow(flow) == source
    path = tmp_path / "s.flow"
    path.write_text(source.replace("    start a", "  start   a"), encoding="utf-8")
    assert main(["fmt", "--check", str(path)]) == 1
    assert main(["fmt", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == source
    assert main(["fmt", "--check", str(path)]) == 0
    assert main(["fmt", "--diff", str(path)]) == 0
    capsys.readouterr()


def test_fmt_is_idempotent_on_a_one_line_block_followed_by_a_suppression(tmp_path, capsys):
    """`conversation a { participant x; participant yy }  # turnflow: ignore[...]`: the comment
    trails the `}`, and fmt prints it after the `}` on a line of its own; but the statements of
    its source line were kept joined (as under a suppression that trails them), so the next fmt
    split them: `fmt` then `fmt --check` said 'would reformat'. A suppression joins only the
    statements it trails."""
    from turnflow.dsl.parser import parse
    from turnflow.dsl.printer import format_flow

    source = (MUTANTS / "suppression_after_a_one_line_block.flow").read_text(encoding="utf-8")
    once = format_flow(parse(source))
    assert format_flow(parse(once)) == once
    path = tmp_path / "m.flow"
    path.write_text(source, encoding="utf-8")
    assert main(["fmt", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == once
    assert main(["fmt", "--check", str(path)]) == 0
    capsys.readouterr()


def test_editor_formatting_refuses_what_fmt_refuses(tmp_path, capsys):
    """`a -> b; a -> zz }  # turnflow: ignore[TF102]`: the canonical form puts the comment after
    the `}`, on a line of its own, so TF102 at `zz` is no longer silenced. `turnflow fmt` leaves
    such a file as it is (exit 1, "would change its findings"); the language server's formatting
    returned the canonical text anyway, un-silencing TF102 in the editor. Now it returns nothing,
    as for a text that does not parse."""
    from turnflow.compiler.pipeline import check
    from turnflow.lsp.features import format_text

    source = (MUTANTS / "suppression_after_the_brace_of_a_statement_line.flow").read_text(encoding="utf-8")
    assert check(source) == []
    path = tmp_path / "m.flow"
    path.write_text(source, encoding="utf-8")
    assert main(["fmt", str(path)]) == 1
    assert "would change its findings" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == source
    assert format_text(source, str(path)) is None
    # a text whose canonical form keeps its findings is still formatted
    plain = source.replace("a -> b; a -> zz }  # turnflow: ignore[TF102]", "a -> b;a -> b }")
    assert format_text(plain) == "workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    a -> b\n}\n"


@pytest.mark.parametrize("flag", ["--check", "--diff"])
def test_fmt_check_and_diff_say_what_fmt_would_do_with_a_file_it_refuses(flag, tmp_path, capsys):
    """`fmt --check` said 'would reformat' (and `--diff` showed a diff) for a file that `fmt` then
    refuses to reformat, as its canonical form would change its findings: a preview now says
    what `fmt` does, with the same exit status (1)."""
    path = tmp_path / "m.flow"
    path.write_bytes((MUTANTS / "suppression_after_the_brace_of_a_statement_line.flow").read_bytes())
    assert main(["fmt", flag, str(path)]) == 1
    out, err = capsys.readouterr()
    assert "would change its findings" in err and "1 file could not be formatted" in err
    assert "would reformat" not in out + err and "+++" not in out


def _check_unified_diff(diff: str) -> None:
    """`diff` is well formed as `patch` reads it: lines end at `\\n` only, each hunk holds the
    lines its header counts, every line of a hunk starts with ` `, `-`, `+` or `\\`."""
    import re

    lines = diff.split("\n")
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ") and lines[-1] == ""
    i = 2
    while i < len(lines) - 1:
        m = re.match(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@$", lines[i])
        assert m is not None, lines[i]
        old, new = int(m.group(1) or 1), int(m.group(2) or 1)
        i += 1
        while old or new:
            kind = lines[i][:1]
            assert kind in (" ", "-", "+"), lines[i]
            old -= kind in " -"
            new -= kind in " +"
            i += 1
            if lines[i].startswith("\\ No newline at end of file"):
                i += 1
        assert old == new == 0


@pytest.mark.parametrize("fixture, preview, write", [
    ("line_separators_in_a_comment", ["fmt", "--diff"], ["fmt"]),
    ("a_fix_beside_line_separators", ["check", "--diff"], ["check", "--fix"]),
], ids=["fmt", "check"])
def test_diffs_split_lines_where_patch_does(fixture, preview, write, tmp_path, capsys):
    """A comment holding U+0085, U+2028 or a form feed (no line end in `.flow`, LSP or `patch`) split
    the lines of `fmt --diff` and `check --diff` (`str.splitlines`): the hunk's line counts were
    wrong and `patch` called it malformed. A file with no line end after its last line glued the
    next diff line onto it. The diff, applied by `patch`, gives what the command writes."""
    import shutil
    import subprocess

    path = tmp_path / "m.flow"
    source = (MUTANTS / f"{fixture}.flow").read_bytes()
    path.write_bytes(source)
    assert main([*preview, str(path)]) == 1
    diff = capsys.readouterr().out
    _check_unified_diff(diff)
    if shutil.which("patch"):
        (tmp_path / "m.diff").write_text(diff, encoding="utf-8", newline="")
        subprocess.run(["patch", "-s", str(path), str(tmp_path / "m.diff")], check=True, capture_output=True)
        patched = path.read_bytes()
        path.write_bytes(source)
        main([*write, str(path)])
        assert path.read_bytes() == patched != source
    capsys.readouterr()


# -- line ends: `\n`, `\r\n` and a lone `\r` read alike -------------------------------------------

def _findings(text: str) -> list[tuple]:
    return [(d.code, d.span.line, d.span.column, d.span.end_line, d.span.end_column, d.message,
             [(r.span.line, r.span.column, r.message) for r in d.related]) for d in turnflow.check(text)]


@pytest.mark.parametrize("name", ["misspelt_statement", "second_block_not_closed", "missing_name_at_a_line_end"])
@pytest.mark.parametrize("eol", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_a_file_gets_the_same_diagnostics_whatever_its_line_ends(name, eol):
    """The same file with `\\r\\n` or lone `\\r` line ends: the syntax error's reading looked back
    for the statement's start, and for the unclosed block's header, with `rfind("\\n")`: with lone
    `\\r`, `strat writer` was "expected `->`" instead of "unknown statement `strat`; did you mean
    `start`?", and the unclosed block was named after the file's first block. The end of a
    "found the end of the line" error was on the next line with `\\n`, on the same line with
    `\\r\\n`: now on the same line for every line end."""
    text = (MUTANTS / f"{name}.flow").read_text(encoding="utf-8")
    assert _findings(text.replace("\n", eol)) == _findings(text)


def test_a_fix_is_reported_at_its_line_whatever_the_line_ends(tmp_path, capsys):
    """`check --fix` said `fixed m.flow:1:65` for a fix on line 4 of a file with lone `\\r` line ends."""
    text = (MUTANTS / "misspelt_participant.flow").read_text(encoding="utf-8")
    said = []
    for eol in ("\n", "\r\n", "\r"):
        path = tmp_path / "m.flow"
        path.write_bytes(text.replace("\n", eol).encode())
        main(["check", "--fix", str(path)])
        said.append(capsys.readouterr().out)
        assert path.read_bytes() == text.replace("writter", "writer").replace("\n", eol).encode()
    assert f"fixed {tmp_path / 'm.flow'}:4:11: TF102" in said[0]
    assert said[1] == said[2] == said[0]


@pytest.mark.parametrize("argv", [["check"], ["check", "--fix"]], ids=["count", "fix"])
def test_fixes_are_verified_within_a_budget(argv, tmp_path, capsys, monkeypatch):
    """Each fix is verified by checking the whole fixed text (a fix must not make its rule dead):
    a rule naming n misspelt tools cost n full checks, in `check` (to count `[*] N fixable`) as in
    `check --fix`: 300 tools, 7.4 s; 4,000 tools, hours. Now at most
    max(MIN_VERIFIED, VERIFY_CHARS // len(text)) verifications per file (counted here, with a
    small VERIFY_CHARS); the fixes beyond them are neither counted nor applied."""
    from turnflow.cli import fixes

    monkeypatch.setattr(fixes, "VERIFY_CHARS", 20_000)
    verified = 0
    kills = fixes.kills

    def counted(*args, **kwargs):
        nonlocal verified
        verified += 1
        return kills(*args, **kwargs)

    monkeypatch.setattr(fixes, "kills", counted)
    text = _many_terms("tool u{i}", " and ", 300).replace("participant a\n", f"participant a tools [{_tools(300)}]\n")
    path = tmp_path / "m.flow"
    path.write_text(text)
    main([*argv, str(path)])
    out = capsys.readouterr().out
    assert 0 < verified <= fixes.verifications(text) == fixes.MIN_VERIFIED
    if "--fix" in argv:
        assert f"Fixed {verified} findings" in out
    else:
        assert f"[*] {verified} fixable" in out
