"""The VS Code extension packages without a warning: `vsce package` on a copy of editors/vscode,
with its locked dependencies from the npm registry (skipped, with the reason, without npm or
without the registry)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[1] / "editors" / "vscode"
NODE_BUILTINS = {"path", "child_process", "util", "os", "net", "fs", "crypto", "events", "stream", "url", "assert"}


def _node_modules_cache() -> Path:
    """Where `npm ci`'s tree for the current package-lock.json is kept between runs (keyed by the
    lock's hash, so a changed lock installs afresh): `npm ci` was most of this test's minute."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "turnflow-tests"
    digest = hashlib.sha256((EXT / "package-lock.json").read_bytes()).hexdigest()[:16]
    return base / f"vscode-node_modules-{digest}"


def _keep(node_modules: Path, cached: Path) -> None:
    """Copy a fresh install into the cache whole or not at all (a rename, so a concurrent run
    sees either nothing or the complete tree)."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cached.parent))
    except OSError:
        return  # no writable cache: the next run installs again
    try:
        shutil.copytree(node_modules, staging / "node_modules", symlinks=True)
        os.rename(staging / "node_modules", cached)
    except OSError:
        pass  # another run kept its copy first
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link to the cached file (nothing of the tree is written by `vsce package`; a copy
    of its 160 MB in 14,000 files cost seconds of system time), a copy across file systems."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def test_the_extension_declares_what_the_marketplace_asks_for():
    pkg = json.loads((EXT / "package.json").read_text())
    assert pkg["repository"]["url"].startswith("https://github.com/") and pkg["license"] == "Apache-2.0"
    assert (EXT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert pkg["main"] == "./dist/extension.js" and "esbuild" in pkg["scripts"]["bundle"]
    assert pkg["scripts"]["vscode:prepublish"] == "npm run bundle"
    assert "node_modules/**" in (EXT / ".vscodeignore").read_text()
    assert "dependencies" not in pkg  # everything the extension needs is bundled into dist/extension.js


def test_vsce_package_gives_no_warning(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the VS Code extension cannot be packaged here")
    work = tmp_path / "vscode"
    shutil.copytree(EXT, work, ignore=shutil.ignore_patterns("node_modules", "dist", "*.vsix"))
    cached = _node_modules_cache()
    if cached.is_dir():  # installed by `npm ci` from this very package-lock.json on an earlier run
        shutil.copytree(cached, work / "node_modules", symlinks=True, copy_function=_link_or_copy)
    else:
        install = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=work, capture_output=True, text=True,
                                 timeout=600)
        if install.returncode != 0 and any(s in install.stderr for s in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED",
                                                                        "ETIMEDOUT", "network")):
            pytest.skip(f"the npm registry is not reachable: {install.stderr.strip().splitlines()[-1]}")
        assert install.returncode == 0, install.stderr
        _keep(work / "node_modules", cached)
    vsix = tmp_path / "turnflow.vsix"
    proc = subprocess.run(["npx", "--no-install", "vsce", "package", "--out", str(vsix)], cwd=work,
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "WARNING" not in output.upper().replace("WARNINGS", ""), output
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        bundle = z.read("extension/dist/extension.js").decode()
        packaged = json.loads(z.read("extension/package.json"))
    assert {"extension/dist/extension.js", "extension/LICENSE.txt", "extension/syntaxes/flow.tmLanguage.json",
            "extension/language-configuration.json"} <= names
    assert not any("node_modules" in n for n in names) and "extension/extension.js" not in names
    assert packaged["repository"]["url"] == "https://github.com/turnflow/turnflow.git"
    import re

    required = set(re.findall(r'require\("([^"]+)"\)', bundle))
    assert "vscode" in required and required - {"vscode"} <= NODE_BUILTINS  # the language client is inside
