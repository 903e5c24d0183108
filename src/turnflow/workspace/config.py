"""Project configuration (docs/configuration.md): `turnflow.toml` (top-level keys)
or `[tool.turnflow]` in `pyproject.toml`, found from the checked path upwards
(`turnflow.toml` wins over `pyproject.toml` in the same folder), or named with
`--config`. Keys:

    select = ["TF1", "TF201"]          # code prefixes or rule names; default: every rule
    extend-select = ["TF211"]
    ignore = ["TF205", "unused-otherwise"]
    exclude = [".*", "node_modules", "__pycache__"]   # globs (names, or paths from the config's folder)
    extend-exclude = ["generated/**"]
    respect-gitignore = true
    force-exclude = false              # true: exclude files named on the command line too
    per-file-ignores = { "legacy/*.flow" = ["TF203"] }
    [severity]                         # or [tool.turnflow.severity]
    TF203 = "error"

TF000-TF002 (unreadable file, syntax error, invalid value) can be neither
deselected nor downgraded: nothing else can be said about such a file."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Optional

from turnflow.diagnostics.diagnostic import SEVERITIES, Diagnostic
from turnflow.workspace.ignore import DEFAULT_EXCLUDE, from_root

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

ALWAYS_ON = ("TF000", "TF001", "TF002")
KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude", "respect-gitignore",
        "force-exclude", "per-file-ignores", "severity"}


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    root: Path                                  # paths in the file are relative to this folder
    file: Optional[Path] = None                 # None: defaults, no file found
    select: Optional[tuple[str, ...]] = None    # None: every rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False                 # exclude files named explicitly too (pre-commit's file lists)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: dict = field(default_factory=dict)

    @property
    def excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def enabled(self, code: str, name: str = "") -> bool:
        if code in ALWAYS_ON:
            return True
        if self.select is not None and not _matches(code, name, self.select + self.extend_select):
            return False
        return not _matches(code, name, self.ignore)

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Codes `per-file-ignores` turns off for `path`."""
        rel = _relative(path, self.root)
        name = os.path.basename(path)
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            target = rel if "/" in pattern else name
            glob = from_root(pattern)
            if fnmatch.fnmatchcase(target, glob) or fnmatch.fnmatchcase(rel, glob):
                out.extend(codes)
        return tuple(out)

    def apply(self, diags: Iterable[Diagnostic], path: str) -> list[Diagnostic]:
        """Drop deselected / ignored codes and re-grade severities for one file's diagnostics."""
        per_file = self.ignored_for(path) if self.per_file_ignores else ()
        out = []
        for d in diags:
            name = d.name or _rule_name(d.code)
            if not self.enabled(d.code, name):
                continue
            if d.code not in ALWAYS_ON and per_file and _matches(d.code, name, per_file):
                continue
            sev = self.severity.get(d.code) or (self.severity.get(name) if name else None)
            if sev and d.code not in ALWAYS_ON and sev != d.severity:
                d = replace(d, severity=sev)
            out.append(d)
        return out

    def with_cli(self, select: Optional[list[str]] = None, ignore: Optional[list[str]] = None,
                 exclude: Optional[list[str]] = None, force_exclude: bool = False,
                 extend_select: Optional[list[str]] = None) -> "Config":
        """`--select` replaces `select` (and `extend-select`); `--extend-select`, `--ignore` and
        `--exclude` add; `--force-exclude` turns `force-exclude` on."""
        cfg = self
        if force_exclude:
            cfg = replace(cfg, force_exclude=True)
        if select:
            cfg = replace(cfg, select=_selectors(select, "--select"), extend_select=())
        if extend_select:
            cfg = replace(cfg, extend_select=cfg.extend_select + _selectors(extend_select, "--extend-select"))
        if ignore:
            cfg = replace(cfg, ignore=cfg.ignore + _selectors(ignore, "--ignore"))
        if exclude:
            for pat in _split(exclude):
                _check_glob(pat, "--exclude")
            cfg = replace(cfg, extend_exclude=cfg.extend_exclude + tuple(_split(exclude)))
        return cfg


def shown(text: object, limit: int = 60) -> str:
    """`text` for a message, at most `limit` characters (a 200,000-character value is not echoed)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _selectors(values: list[str], flag: str) -> tuple[str, ...]:
    """A selector flag's comma-separated values, each checked: an empty one (`--select ''`, `TF1,`)
    is an error, as an unknown one is (ruff refuses both), not a silently empty selection."""
    out = []
    for item in values:
        for v in item.split(","):
            if not v.strip():
                raise ConfigError(f"`{flag}`: an empty rule selector in `{shown(item)}`: name codes (TF203), "
                                  "prefixes (TF2), rule names or ALL; see `turnflow rule --list`")
            _check_selector(v.strip(), f"`{flag}`")
            out.append(v.strip())
    return tuple(out)


def _rule_name(code: str) -> str:
    from turnflow.diagnostics.codes import lookup

    row = lookup(code)
    return row.name if row is not None else ""


def _matches(code: str, name: str, selectors: Iterable[str]) -> bool:
    for sel in selectors:
        s = sel.strip()
        if s.upper() == "ALL":
            return True
        if s.upper().startswith("TF") and code.startswith(s.upper()):
            return True
        if name and s.lower() == name:
            return True
    return False


def _relative(path: str, root: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _check_selector(sel: str, where: str) -> None:
    from turnflow.diagnostics.codes import CODES as rules

    s = sel.strip()
    if s.upper() == "ALL":
        return
    if s.upper().startswith("TF") and s[2:].isdigit() and any(r.code.startswith(s.upper()) for r in rules):
        return
    if any(r.name == s.lower() for r in rules):
        return
    raise ConfigError(f"{where}: `{shown(sel)}` is neither a rule code (or code prefix such as TF2) nor a rule name; "
                      "see `turnflow rule --list`")


def _check_globs(values: dict, where: str) -> None:
    for key in ("exclude", "extend_exclude"):
        for pat in values.get(key, ()):
            _check_glob(pat, f"{where}: `{key.replace('_', '-')}`")


def _check_glob(pattern: str, where: str) -> None:
    from turnflow.workspace.globs import glob_problem

    problem = glob_problem(pattern)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")


# -- reading ---------------------------------------------------------------
def _strings(value, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return tuple(value)


def from_table(table: dict, root: Path, file: Optional[Path], where: str) -> Config:
    unknown = sorted(set(table) - KEYS)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(KEYS), n=1) if len(unknown[0]) < 100 else []
        hint = f"; did you mean `{close[0]}`?" if close else f"; known keys: {', '.join(sorted(KEYS))}"
        raise ConfigError(f"{where}: unknown key `{shown(unknown[0])}`{hint}")
    cfg = Config(root=root, file=file)
    values: dict = {}
    for key, attr in (("select", "select"), ("extend-select", "extend_select"), ("ignore", "ignore"),
                      ("exclude", "exclude"), ("extend-exclude", "extend_exclude")):
        if key in table:
            values[attr] = _strings(table[key], key, where)
    for key in ("select", "extend_select", "ignore"):
        for sel in values.get(key, ()):
            _check_selector(sel, f"{where}: `{key.replace('_', '-')}`")
    _check_globs(values, where)
    for key in ("respect-gitignore", "force-exclude"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}: `{key}` must be true or false")
            values[key.replace("-", "_")] = table[key]
    if "per-file-ignores" in table:
        values["per_file_ignores"] = _per_file_ignores(table["per-file-ignores"], where)
    if "severity" in table:
        values["severity"] = _severities(table["severity"], where)
    return replace(cfg, **values)


def _per_file_ignores(pfi: object, where: str) -> tuple:
    """`per-file-ignores`: a table of glob = [codes], each code a valid selector."""
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    pairs = []
    for glob, codes in pfi.items():
        codes = _strings(codes, f"per-file-ignores.\"{shown(glob)}\"", where)
        for sel in codes:
            _check_selector(sel, f"{where}: `per-file-ignores`")
        pairs.append((glob, codes))
    return tuple(pairs)


def _severities(sev: object, where: str) -> dict:
    """`severity`: a table of CODE (or prefix / name) = "error" | "warning" | "info"."""
    if not isinstance(sev, dict):
        raise ConfigError(f"{where}: `severity` must be a table of CODE = \"error\" | \"warning\" | \"info\"")
    for code, level in sev.items():
        if level not in SEVERITIES:
            raise ConfigError(f"{where}: severity of `{shown(code)}` must be one of {', '.join(SEVERITIES)}, "
                              f"not {shown(repr(level))}")
        _check_selector(code, f"{where}: `severity`")
        if code.upper() in ALWAYS_ON:
            raise ConfigError(f"{where}: the severity of {code.upper()} cannot be changed")
    return {(k.upper() if k.upper().startswith("TF") else k.lower()): v for k, v in sev.items()}


def read(path: Path) -> Config:
    """Read one configuration file (`turnflow.toml` or a `pyproject.toml`)."""
    if path.exists() and not path.is_file():  # a FIFO or a device would block or never end
        raise ConfigError(f"{path}: not a regular file")
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except RecursionError:  # tomllib recurses once per nesting level
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} on line {line})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    root = path.resolve().parent
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: `tool` must be a table")
        table = tool.get("turnflow", {})
        where = f"{path} [tool.turnflow]"
    else:
        table = data
        where = str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `tool.turnflow` must be a table")
    return from_table(table, root, path, where)


CONFIG_FILES = ("turnflow.toml", "pyproject.toml")  # the names `find` looks for (the language server watches them)


def find(start: Path) -> Optional[Path]:
    """The nearest `turnflow.toml`, or `pyproject.toml` with a `[tool.turnflow]` table, from `start` up."""
    start = Path(os.path.realpath(start))  # (a symlink loop stays as it is: realpath never raises)
    folder = start if start.is_dir() else start.parent
    for current in (folder, *folder.parents):
        candidate = current / "turnflow.toml"
        if candidate.is_file():
            return candidate
        pyproject = current / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
                continue
            if isinstance(data.get("tool"), dict) and "turnflow" in data["tool"]:
                return pyproject
    return None


def load(paths: Iterable[str] = (), explicit: Optional[str] = None) -> Config:
    """The configuration for a run over `paths`: `explicit` (`--config`), else the one found
    from the first path (or the current folder) upwards, else defaults rooted at the current folder."""
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"--config: no such file: `{explicit}`")
        return read(p)
    first = next((p for p in paths if p != "-"), ".")
    found = find(Path(first))
    if found is None:
        return Config(root=Path.cwd().resolve())
    return read(found)


_CACHE: dict[Path, tuple[float, Config]] = {}


def config_for_file(path: str) -> Optional[Config]:
    """For the language server: the configuration that governs `path` (cached, re-read when
    the file changes), None when there is none; raises ConfigError when it is invalid."""
    found = find(Path(path))
    if found is None:
        return None
    try:
        mtime = found.stat().st_mtime
    except OSError:
        return None
    cached = _CACHE.get(found)
    if cached is None or cached[0] != mtime:
        _CACHE[found] = (mtime, read(found))
    return _CACHE[found][1]


def forget_cached() -> None:
    """Drop every configuration `config_for_file` read: the language server is told a configuration
    file changed (its mtime alone can miss an edit made within the file system's timestamp tick)."""
    _CACHE.clear()


def policy_for_file(path: str) -> Optional[Callable[[list[Diagnostic], str], list[Diagnostic]]]:
    """The `apply` of `config_for_file(path)`; None when there is no valid configuration."""
    try:
        cfg = config_for_file(path)
    except ConfigError:
        return None
    return cfg.apply if cfg is not None else None
