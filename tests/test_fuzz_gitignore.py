"""Issue #25's fuzz property over `.gitignore` patterns: generated `.gitignore` files (negations,
ranges, `**`, escapes, trailing spaces, bytes that are not UTF-8) over generated trees of `.flow`
files; the folder walk keeps exactly the files git itself does not ignore
(`git ls-files --others --exclude-standard`, the reference), in bounded time.

A reversed range (`[b-a]`: the line is skipped with a warning) is the one place turnflow may differ
from git, which keeps the line (`[!b-a]` then matches any character); other refused patterns (a `[`
never closed, a lone `\\` at the end) match nothing in git either, and are compared.

TF_FUZZ_EXAMPLES=400 runs a longer search (the default, 40, keeps it to a few seconds)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from turnflow.workspace.ignore import parse_gitignore, walk_flow_files

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed (the reference)")
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}

# name pieces: letters, the glob metacharacters as literal names, a space, a backslash, non-ASCII,
# a byte that is not UTF-8 (a file name is bytes; os.walk hands it over as a surrogate escape)
NAME_PIECES = ["a", "b", "ab", "ba", "x", "é", b"\xfe", "[a]", "*", "?", " ", "\\", "!", "#", "-", "]"]
# pattern pieces: the same literals, every glob construct git knows, and broken ones
PATTERN_PIECES = NAME_PIECES + ["*", "**", "**/", "/**", "/**/", "?", "/", "[ab]", "[!a]", "[^b]", "[a-c]",
                                "[]a]", "[!]a]", "[\\]]", "[a-]", "[-a]", "[", "]", "\\*", "\\?", "\\[", "\\ ",
                                "\\", "\\\\", "\\!", "\\#", " ", "  ", "\t", "[[:alpha:]]", "[[:digit:]]",
                                "[b-a]", "***", "a**", "**b", ".flow", "*.flow"]

Piece = st.sampled_from(PATTERN_PIECES)
Wild = st.sampled_from(["*", "?", "**", "[ab]", "[!a]", "[a-z]", "[[:alpha:]]", "\\", "", "/", "*/", "**/"])


def _b(piece: "str | bytes") -> bytes:
    return piece if isinstance(piece, bytes) else piece.encode("utf-8")


@st.composite
def lines(draw, names: tuple = ()) -> bytes:
    """One pattern line; `names`: folder and file names of the tree, the likeliest pieces."""
    piece = st.one_of(st.sampled_from(names), Piece) if names else Piece
    if names and draw(st.booleans()):  # a name of the tree, a part of it made a wildcard
        body = draw(st.sampled_from(names))
        at = draw(st.integers(0, len(body)))
        cut = draw(st.integers(0, 3))
        body = body[:at] + _b(draw(Wild)) + body[at + cut:]
    else:
        body = b"".join(_b(p) for p in draw(st.lists(piece, min_size=1, max_size=4)))
    prefix = draw(st.just(b"") | st.sampled_from([b"!", b"/", b"#", b"\\!", b"\\#", b"**/", b"!/", b"\xef\xbb\xbf"]))
    suffix = draw(st.just(b"") | st.sampled_from([b"/", b" ", b"\\ ", b"\r", b"/ ", b"\t"]))
    return prefix + body + suffix


@st.composite
def names(draw) -> bytes:
    plain = st.sampled_from(NAME_PIECES[:5])
    return b"".join(_b(p) for p in draw(st.lists(plain | plain | st.sampled_from(NAME_PIECES), min_size=1,
                                                 max_size=3)))


@st.composite
def trees(draw) -> list[bytes]:
    """Relative paths of `.flow` files, at most three folders deep."""
    out = []
    for _ in range(draw(st.integers(1, 8))):
        parts = draw(st.lists(names(), min_size=0, max_size=3))
        leaf = draw(names()) + draw(st.sampled_from([b".flow", b".flow", b"flow", b".flow "]))
        out.append(b"/".join([*parts, leaf]))
    return out


def _build(root: Path, files: list[bytes], ignores: dict[bytes, bytes]) -> None:
    broot = os.fsencode(root)
    for rel in files:
        full = os.path.join(broot, rel)
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(b"workflow w {\n}\n")
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue  # a name used both as a file and a folder: keep the first
    for folder, text in ignores.items():
        d = os.path.join(broot, folder)
        if os.path.isdir(d):
            with open(os.path.join(d, b".gitignore"), "wb") as fh:
                fh.write(text)


def _git_keeps(root: Path) -> set[str]:
    out = subprocess.run([GIT, "ls-files", "--others", "--exclude-standard", "-z"], cwd=root, check=True,
                         env=GIT_ENV, capture_output=True, timeout=60).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p.endswith(b".flow")}


def _turnflow_keeps(root: Path) -> set[str]:
    return {p.as_posix() for p in walk_flow_files(root, exclude=(".git",))}


def _refused(ignores: dict[bytes, bytes]) -> bool:
    """Whether a reversed range was refused: git keeps `[!b-a]`, which matches any character. (A
    class never closed, a lone `\\` at the end, an unknown `[:name:]` are refused too, but git's
    pattern matches nothing either: those are compared.)"""
    problems: list[str] = []
    for text in ignores.values():
        parse_gitignore(os.fsdecode(text), problems)
    return any("range" in why for why in problems)


FUZZ = settings(max_examples=int(os.environ.get("TF_FUZZ_EXAMPLES", "40")), deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _agree(tmp_path_factory, files: list[bytes], root_ignore: bytes, sub: "tuple[bytes, bytes] | None",
           note=lambda what: None) -> None:
    root = tmp_path_factory.mktemp("gi")
    ignores = {b"": root_ignore}
    if sub is not None:
        ignores[sub[0]] = sub[1]
    _build(root, files, ignores)
    subprocess.run([GIT, "init", "-q"], cwd=root, check=True, env=GIT_ENV, timeout=60)
    started = time.process_time()
    ours = _turnflow_keeps(root)
    assert time.process_time() - started < 2.0, "the walk took over 2 s of CPU"
    if _refused(ignores):  # skipped with a warning where git keeps a pattern that matches nothing
        note("a pattern refused")
        return
    theirs = _git_keeps(root)
    every = {p.as_posix() for p in walk_flow_files(root, exclude=(".git",), respect_gitignore=False)}
    note("git ignores " + ("none" if theirs == every else "all" if not theirs else "some") + " of the files")
    assert ours == theirs, {"ignored by turnflow only": sorted(theirs - ours),
                            "ignored by git only": sorted(ours - theirs)}


def _parts(files: list[bytes]) -> tuple:
    return tuple(sorted({part for f in files for part in f.split(b"/")}))


@FUZZ
@given(data=st.data(), files=trees())
def test_the_walk_keeps_what_git_keeps(tmp_path_factory, data, files):
    parts = _parts(files)
    root_ignore = b"\n".join(data.draw(st.lists(lines(parts), min_size=1, max_size=6), "root .gitignore"))
    folders = tuple(sorted({f.rsplit(b"/", 1)[0] for f in files if b"/" in f}))
    sub = None
    if folders and data.draw(st.booleans(), "a second .gitignore"):
        sub = (data.draw(st.sampled_from(folders), "in"),
               b"\n".join(data.draw(st.lists(lines(parts), min_size=1, max_size=3), "its lines")))
    _agree(tmp_path_factory, files, root_ignore, sub, event)


@pytest.mark.parametrize("files, ignore", [
    ([b"aa/b/a.flow"], b"a\n[!]a]"),           # a `]` right after `!` is literal: `b` is ignored
    ([b"a.flow", b"aa.flow"], b"a**/a.flow"),  # git wildmatches after the literal head: `**/` there
    ([b"a/b.flow", b"ab.flow"], b"a**b.flow"),  # `**` inside a name is one `*`: never crosses `/`
    ([b"\xfe.flow", b"a.flow"], b"\xfe.flow"),  # a name that is not UTF-8, byte for byte
    ([b"\xc3\xa9.flow", b"a.flow"], b"??.flow"),  # `?` is one byte: `??` matches `é`
    ([b"a.flow", b"b.flow"], b"a.flow\rb.flow"),  # a lone `\r` does not end a line
    ([b"x /a.flow", b"x\\/a.flow"], b"x\\  "),  # `\ ` keeps one space; a lone `\` at the end matches nothing
    ([b"[a.flow", b"a.flow"], b"[a.flow"),      # a `[` never closed matches nothing
    ([b"]\\.flow", b"a.flow"], b"[\\]a].flow"),  # `\` escapes inside a class
    ([b"a.flow", b"1.flow"], b"[[:digit:]].flow"),
    ([b"a.flow", b"b/a.flow"], b"\xef\xbb\xbfa.flow\n\t"),  # a BOM first is skipped; a tab is a pattern
    ([b"x/a.flow", b"a.flow"], b"//a.flow\nx//"),  # one leading `/` goes, one trailing `/`
])
def test_cases_the_fuzz_found(tmp_path_factory, files, ignore):
    _agree(tmp_path_factory, files, ignore, None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.lists(st.sampled_from(["*", "**", "?", "a", "b", "/", "[ab]", "[!a]", "**/", "\\*"]),
                        max_size=30).map("".join),
       name=st.tuples(st.lists(st.sampled_from(["a", "b", "/", "ab"]), min_size=1, max_size=6).map("".join),
                      st.integers(300, 500)).map(lambda unit: (unit[0] * unit[1])[:1500]),
       anchored=st.booleans())
def test_any_pattern_matches_any_long_name_in_bounded_time(pattern, name, anchored):
    """O(len(pattern) x len(name)): a backtracking matcher took 43 s on `*a*a*a*a*a*a*a*a*b` and 50
    letters; here 30 pieces against 1,500 characters stay well under a second of CPU."""
    from turnflow.workspace.globs import Glob, GlobError

    try:
        glob = Glob(pattern, anchored=anchored, git_prefix=anchored)
    except GlobError:
        return
    started = time.process_time()
    glob.match(name)
    glob.match(name + "b")
    assert time.process_time() - started < 2.0, pattern
