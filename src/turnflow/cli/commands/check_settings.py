"""`turnflow check --show-settings`: the resolved configuration, where each value came from
(a default, the configuration file, the command line), and the files it selects — as ruff's
`--show-settings`, to answer "why is this file (or rule) not checked?"."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from turnflow.cli.util import EXIT_OK, discover_flows, out

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

# key in the file -> (attribute of Config, the command-line flags that change it)
KEYS = (("select", "select", ("--select",)), ("extend-select", "extend_select", ("--extend-select",)),
        ("ignore", "ignore", ("--ignore", "--extend-ignore")), ("exclude", "exclude", ()),
        ("extend-exclude", "extend_exclude", ("--exclude",)), ("respect-gitignore", "respect_gitignore", ()),
        ("force-exclude", "force_exclude", ("--force-exclude",)), ("per-file-ignores", "per_file_ignores", ()),
        ("severity", "severity", ()))


def _file_keys(path) -> set[str]:
    """The keys the configuration file sets itself."""
    if path is None:
        return set()
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    table = data.get("tool", {}).get("turnflow", {}) if Path(path).name == "pyproject.toml" else data
    return set(table) if isinstance(table, dict) else set()


def _given(args, flags: tuple[str, ...]) -> bool:
    attrs = {"--select": "select", "--extend-select": "extend_select", "--ignore": "ignore",
             "--extend-ignore": "ignore", "--exclude": "exclude", "--force-exclude": "force_exclude"}
    return any(getattr(args, attrs[f], None) for f in flags)


def _value(key: str, value):
    """A setting as its TOML type: `per-file-ignores` is a table (`{}` when empty), the others lists."""
    if key == "per-file-ignores":
        return {glob: list(codes) for glob, codes in value}
    if isinstance(value, tuple):
        return list(value)
    return value


def show_settings(args, config) -> int:
    in_file = _file_keys(config.file)
    where = str(config.file) if config.file is not None else "default"
    rows = []
    for key, attr, flags in KEYS:
        origins = [where] if key in in_file else ["default"]
        if _given(args, flags):
            origins = ([] if key == "select" else origins) + ["command line (" + ", ".join(flags) + ")"]
        rows.append({"key": key, "value": _value(key, getattr(config, attr)), "from": " + ".join(origins)})
    files, _ = discover_flows(args.paths, config)
    if args.format == "json":
        out(json.dumps({"configuration": str(config.file) if config.file else None, "root": str(config.root),
                        "settings": rows, "files": files}, indent=2) + "\n")
        return EXIT_OK
    lines = [f"Configuration: {config.file if config.file is not None else 'none found (defaults)'}",
             f"Root (paths in it are relative to): {config.root}", "Settings:"]
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        value = r["value"] if r["value"] is not None else "(every rule)"
        lines.append(f"  {r['key']:<{width}} = {json.dumps(value) if not isinstance(value, str) else value}"
                     f"    # {r['from']}")
    lines.append(f"Files ({len(files)}):")
    lines += [f"  {f}" for f in files]
    out("\n".join(lines) + "\n")
    return EXIT_OK
