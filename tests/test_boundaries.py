"""ARCHITECTURE.md: data flows one way. The runtime reads only compiled specs (it never imports the
DSL or the compiler); nothing in `dsl` imports `compiler`; the shared foundation (`source`,
`diagnostics`) imports no stage; `compiler` imports no `runtime`, `migrate` or `api` (the API
re-exports the compiler, never the other way round); and no two modules import each other,
directly or through others (function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "turnflow"
RUNTIME = PKG / "runtime"
FORBIDDEN = ("turnflow.dsl", "turnflow.compiler", "turnflow.api", "turnflow.migrate")


def imported_names(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module]
    return out


@pytest.mark.parametrize("stage, forbidden", [
    ("dsl", ("turnflow.compiler", "turnflow.runtime", "turnflow.migrate", "turnflow.api", "turnflow.cli.commands")),
    ("diagnostics", ("turnflow.dsl", "turnflow.compiler", "turnflow.runtime", "turnflow.migrate", "turnflow.api")),
    ("compiler", ("turnflow.runtime", "turnflow.migrate", "turnflow.cli.commands", "turnflow.cli", "turnflow.api")),
])
def test_stage_imports_nothing_later_in_the_pipeline(stage, forbidden):
    files = sorted((PKG / stage).rglob("*.py"))
    assert files
    offenders = [f"{f.relative_to(PKG)}: {n}" for f in files for n in imported_names(f) if n.startswith(forbidden)]
    assert offenders == []


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


def test_spec_is_a_leaf():
    """`turnflow.spec` (the model of what the compiler emits) imports only the standard library,
    pydantic and itself: every stage may read it, it reads no stage."""
    import sys

    files = sorted((PKG / "spec").rglob("*.py"))
    assert files
    offenders = []
    for f in files:
        for n in imported_names(f):
            top = n.split(".")[0]
            if n.startswith("turnflow.spec") or top in ("pydantic", "pydantic_core", "__future__"):
                continue
            if top not in sys.stdlib_module_names:
                offenders.append(f"{f.relative_to(PKG)}: {n}")
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module → the turnflow modules it imports anywhere in its body. `from pkg import name`
    counts as importing `pkg.name` when that is a module; a module's own parent packages (run
    by Python on the way in) are not edges."""
    modules = {_module_name(f): f for f in PKG.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    targets.append(sub if sub in modules else node.module)
            for name in targets:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != mod and not mod.startswith(name + "."):
                    edges[mod].add(name)
    return edges


def test_no_import_cycles():
    edges = import_graph()
    assert "turnflow.compiler.pipeline" in edges
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_cycle_detector_sees_a_cycle(tmp_path, monkeypatch):
    """The check above can fail: a two-module cycle in a scratch package is found."""
    pkg = tmp_path / "turnflow"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from turnflow.b import g\n")
    (pkg / "b.py").write_text("from turnflow import a\n")
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    assert import_graph() == {"turnflow": set(), "turnflow.a": {"turnflow.b"}, "turnflow.b": {"turnflow.a"}}
