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

from turnflow.globs import Glob, GlobError

DEFAULT_EXCLUDE = (".*", "node_modules", "__pycache__")


@dataclass(frozen=True)
class GitPattern:
    regex: Glob  # (a linear-time matcher, not a regular expression: see turnflow/globs.py)
    negate: bool
    dir_only: bool


def parse_gitignore(text: str, problems: Optional[list[str]] = None) -> list[GitPattern]:
    """The patterns of one `.gitignore`; a pattern that cannot be used (`[z-a]`) is skipped, and
    `line N: why` is added to `problems` (git skips it too)."""
    patterns = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        try:
            glob = Glob(line, anchored=anchored)
        except GlobError as exc:
            if problems is not None:
                problems.append(f"line {lineno}: {exc}")
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
            try:
                gi = folder / ".gitignore"
                text = gi.read_text(encoding="utf-8", errors="replace") if gi.is_file() else ""  # never a FIFO
            except OSError:
                text = ""
            problems: list[str] = []
            self._cache[folder] = parse_gitignore(text, problems)
            for why in problems:  # git skips such a pattern too: say so, and go on
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
            rel = "/".join(rel_parts[depth:])
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


@functools.lru_cache(maxsize=1024)
def _exclude_glob(pat: str) -> tuple[bool, Glob]:
    pat = pat.rstrip("/")
    if "/" in pat:  # a path from the project root, and everything below it
        return True, Glob(pat.lstrip("./"), dir_prefix=True)
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
                    respect_gitignore: bool = True) -> list[Path]:
    """`*.flow` files under `folder` (relative to it), sorted, skipping excluded names/paths and (inside a git
    repository) what `.gitignore` ignores. `root` is the folder `exclude` paths are relative to."""
    folder = folder.resolve()
    root = (root or folder).resolve()
    exclude = tuple(exclude)
    repo = git_root(folder) if respect_gitignore else None
    gitignore = GitIgnore(repo) if repo is not None else None
    found: list[Path] = []

    def rel(p: Path) -> str:
        try:
            return p.relative_to(root).as_posix()
        except ValueError:
            return p.as_posix()

    for current, dirs, files in os.walk(folder):
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
            if p.is_file():
                found.append(p.relative_to(folder))
    return sorted(found)


def excluded(path: Path, exclude: Iterable[str] = DEFAULT_EXCLUDE, root: Optional[Path] = None,
             respect_gitignore: bool = True) -> bool:
    """Whether a folder walk from `root` would skip `path` (used for files named explicitly
    under `--force-exclude`, e.g. the file lists pre-commit passes)."""
    path = path.resolve()
    root = (root or Path.cwd()).resolve()
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
