"""Which files a folder walk skips: `.gitignore` rules (git's pattern syntax:
`#` comments, `!` negation, trailing `/` for folders only, a leading or inner
`/` anchors to the `.gitignore`'s folder, `*`, `?`, `[...]`, `**`) and glob
excludes (`exclude` / `extend-exclude` of the project configuration)."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from turnflow.workspace.globs import Glob, GlobError

DEFAULT_EXCLUDE = (".*", "node_modules", "__pycache__")


@dataclass(frozen=True)
class GitPattern:
    regex: Glob  # (a linear-time matcher over octets, not a regular expression: see turnflow/workspace/globs.py)
    negate: bool
    dir_only: bool

    def match(self, rel: str) -> bool:
        """Whether the pattern matches `rel` (a path relative to its `.gitignore`'s folder)."""
        return self.regex.match(octets(rel))


def octets(text: str) -> str:
    """`text` as git sees it, one character per byte (its UTF-8 bytes, a name that is not UTF-8
    back to its own bytes): git matches bytes, so `?` is one byte and `[é]` two alternatives."""
    return os.fsencode(text).decode("latin-1")


def _shown(line: str) -> str:
    return line.encode("latin-1").decode("utf-8", "replace")


def _trim_trailing_spaces(line: str) -> str:
    """git's rule: trailing spaces go unless escaped with a backslash (a tab stays)."""
    last_space = None
    k = 0
    while k < len(line):
        c = line[k]
        if c == " ":
            if last_space is None:
                last_space = k
        else:
            last_space = None
            if c == "\\":
                k += 1
        k += 1
    return line if last_space is None else line[:last_space]


def parse_gitignore(text: str, problems: Optional[list[str]] = None) -> list[GitPattern]:
    """The patterns of one `.gitignore` (as text; a name that is not UTF-8 as its surrogate
    escapes, like `os.fsdecode`); a pattern that cannot be used (`[z-a]`) is skipped, and
    `line N: why` is added to `problems`."""
    return _parse_octets(octets(text), problems)


def _parse_octets(text: str, problems: Optional[list[str]]) -> list[GitPattern]:
    """git's reading of a `.gitignore` (dir.c): lines end at `\\n` (a `\\r` before it goes), a UTF-8
    BOM first is skipped, `#` first is a comment, unescaped trailing spaces go, `!` negates, one
    trailing `/` means folders only, any other `/` anchors to the file's folder (one leading `/` goes)."""
    if text.startswith("\xef\xbb\xbf"):
        text = text[3:]
    patterns = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line or line.startswith("#"):
            continue
        line = _trim_trailing_spaces(line)
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        if dir_only:
            line = line[:-1]
        if not line:
            continue
        anchored = "/" in line
        if line.startswith("/"):
            line = line[1:]
        try:
            glob = Glob(line, anchored=anchored, git_prefix=anchored)
        except GlobError as exc:
            if problems is not None:
                problems.append(f"line {lineno}: {_shown(str(exc))}")
            continue
        patterns.append(GitPattern(glob, negate, dir_only))
    return patterns


class GitIgnore:
    """The `.gitignore` files that apply under a repository root, read once per folder."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[Path, list[GitPattern]] = {}

    def _patterns(self, folder: Path) -> list[GitPattern]:
        if folder not in self._cache:
            problems: list[str] = []
            gi = folder / ".gitignore"
            try:
                data = gi.read_bytes() if gi.is_file() else b""  # never a FIFO
            except OSError as exc:  # as git: say so, and go on as if it were empty
                sys.stderr.write(f"turnflow: warning: cannot read {gi}: {exc.strerror or exc}\n")
                data = b""
            self._cache[folder] = _parse_octets(data.decode("latin-1"), problems)
            for why in problems:  # git keeps such a pattern, which matches nothing: say so, and go on
                sys.stderr.write(f"turnflow: warning: {folder / '.gitignore'}: {why}; the pattern is skipped\n")
        return self._cache[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` (under `root`) is ignored; the deepest, last matching pattern decides."""
        try:
            rel_parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        decision = False
        folder = self.root
        for depth in range(len(rel_parts)):
            rel = octets("/".join(rel_parts[depth:]))
            for pat in self._patterns(folder):
                if pat.dir_only and not is_dir:
                    continue
                if pat.regex.match(rel):
                    decision = not pat.negate
            folder = folder / rel_parts[depth]
        return decision


def git_root(start: Path) -> Optional[Path]:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def from_root(pattern: str) -> str:
    """A path glob without its leading `./` or `/` (relative to the configuration's folder either way);
    a leading `.` of a name stays (`.gen/*.flow` is the hidden folder `.gen`)."""
    while pattern.startswith(("./", "/")):
        pattern = pattern[2:] if pattern.startswith("./") else pattern[1:]
    return pattern


@functools.lru_cache(maxsize=1024)
def _exclude_glob(pat: str) -> tuple[bool, Glob]:
    pat = pat.rstrip("/")
    if "/" in pat:  # a path from the project root, and everything below it
        return True, Glob(from_root(pat), dir_prefix=True)
    return False, Glob(pat.replace("**", "*"))  # a name (`*` crosses nothing in a name)


def glob_match(rel_posix: str, name: str, patterns: Iterable[str]) -> bool:
    """An exclude glob matches a path's name (globs without `/`) or its path relative to the project
    root (linear time; a pattern with a bad range raises GlobError — the configuration is checked
    when read, so that names its key)."""
    for pat in patterns:
        is_path, glob = _exclude_glob(pat)
        if glob.match(rel_posix if is_path else name):
            return True
    return False


def walk_flow_files(folder: Path, exclude: Iterable[str] = DEFAULT_EXCLUDE, root: Optional[Path] = None,
                    respect_gitignore: bool = True, problems: Optional[list[tuple[str, str]]] = None) -> list[Path]:
    """`*.flow` entries under `folder` (relative to it), sorted, skipping excluded names/paths and (inside a git
    repository) what `.gitignore` ignores. `root` is the folder `exclude` paths are relative to. An entry
    that is not a regular file (a FIFO, a dangling symlink, a symlink loop) is listed too, never opened:
    reading it then says what it is. A folder that cannot be listed is added to `problems` as (path, why)."""
    folder = Path(os.path.realpath(folder))
    root = Path(os.path.realpath(root or folder))
    exclude = tuple(exclude)
    repo = git_root(folder) if respect_gitignore else None
    gitignore = GitIgnore(repo) if repo is not None else None
    found: list[Path] = []

    def rel(p: Path) -> str:
        try:
            return p.relative_to(root).as_posix()
        except ValueError:
            return p.as_posix()

    def unreadable(exc: OSError) -> None:
        if problems is not None:
            problems.append((str(exc.filename), exc.strerror or str(exc)))

    for current, dirs, files in os.walk(folder, onerror=unreadable):
        here = Path(current)
        keep = []
        for d in sorted(dirs):
            p = here / d
            if glob_match(rel(p), d, exclude) or (gitignore is not None and gitignore.ignored(p, True)):
                continue
            keep.append(d)
        dirs[:] = keep
        for f in files:
            if not f.endswith(".flow"):
                continue
            p = here / f
            if glob_match(rel(p), f, exclude) or (gitignore is not None and gitignore.ignored(p, False)):
                continue
            found.append(p.relative_to(folder))
    return sorted(found)


def excluded(path: Path, exclude: Iterable[str] = DEFAULT_EXCLUDE, root: Optional[Path] = None,
             respect_gitignore: bool = True) -> bool:
    """Whether a folder walk from `root` would skip `path` (used for files named explicitly
    under `--force-exclude`, e.g. the file lists pre-commit passes)."""
    path = Path(os.path.realpath(path))  # (a symlink loop stays as it is: realpath never raises)
    root = Path(os.path.realpath(root or Path.cwd()))
    exclude = tuple(exclude)
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = (path.name,)
        root = path.parent
    for depth in range(1, len(parts) + 1):
        if glob_match("/".join(parts[:depth]), parts[depth - 1], exclude):
            return True
    if respect_gitignore:
        repo = git_root(path.parent)
        if repo is not None:
            gitignore = GitIgnore(repo)
            rel = path.relative_to(repo).parts
            for depth in range(1, len(rel) + 1):
                if gitignore.ignored(repo.joinpath(*rel[:depth]), depth < len(rel)):
                    return True
    return False
