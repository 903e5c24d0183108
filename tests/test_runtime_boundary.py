"""DESIGN.md §1: the runtime reads only compiled specs; it never imports the DSL or the compiler."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "src" / "turnflow" / "runtime"
FORBIDDEN = ("turnflow.dsl", "turnflow.compiler", "turnflow.api", "turnflow.migrate")


def test_runtime_imports_neither_dsl_nor_compiler():
    offenders = []
    files = sorted(RUNTIME.rglob("*.py"))
    assert len(files) > 10
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + ([f"{node.module}.{a.name}" for a in node.names])
            for n in names:
                if n.startswith(FORBIDDEN) or n in ("turnflow.compile", "turnflow.parse"):
                    offenders.append(f"{f.relative_to(RUNTIME)}: {n}")
    assert offenders == []
