"""ARCHITECTURE.md: data flows one way. The runtime reads only compiled specs (it never imports the
DSL or the compiler); nothing in `dsl` imports `compiler`; the shared foundation (`source`,
`diagnostics`) imports no stage; `compiler` imports no `runtime`, `migrate` or `api` (the API
re-exports the compiler, never the other way round); and no two modules import each other,
directly or through others (function-level imports included).

A framework's folder (`turnflow/frameworks/<name>/`) spans stages, so each of its modules belongs to
the stage of its part, named by the start of its file name: `reader*` to migrate, `writer*` and
`check*` to the compiler, `participant*` and `history*` to the runtime, `interop*` to a framework's
own process (`turnflow.spec` only). The rules above hold per stage, wherever a module lives; a
framework module imports only its stage's shared machinery and its own framework's modules of the
same stage; no framework imports another; outside `frameworks/`, only a module of the same stage (its
dispatcher) imports a framework module; and each folder has the parts listed in `PARTS_OF`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scan_gc import collector_paused

PKG = Path(__file__).resolve().parents[1] / "src" / "turnflow"
RUNTIME = PKG / "runtime"
FORBIDDEN = ("turnflow.dsl", "turnflow.compiler", "turnflow.api", "turnflow.migrate")

#: a framework module's part (its file name up to the first `_`) → the stage it belongs to
STAGE_OF_PART = {"reader": "migrate", "writer": "compiler", "check": "compiler", "participant": "runtime",
                 "history": "runtime", "interop": "interop"}
#: what a framework module of each stage may import, besides its own framework's modules of that stage
MAY_IMPORT = {"migrate": ("turnflow.migrate", "turnflow.dsl", "turnflow.source", "turnflow.diagnostics",
                          "turnflow.json_input"),
              "compiler": ("turnflow.compiler", "turnflow.spec", "turnflow.dsl", "turnflow.source",
                           "turnflow.diagnostics"),
              "runtime": ("turnflow.runtime", "turnflow.masking"),
              "interop": ("turnflow.spec",)}
#: each framework's parts (a new framework is a new folder and a row here). LangGraph has no reader
#: of LangGraph code: what its writer produced is read back by `migrate/compiled.py`, the reader of
#: every module built on `compiler/emit/pyroute.py`'s routers.
PARTS_OF = {"ag2": {"reader", "writer", "check", "participant", "history", "interop"},
            "autogen": {"reader", "writer", "check", "participant", "history"},
            "langgraph": {"writer", "check", "participant", "history"}}


def framework_of(module: str) -> str | None:
    """`turnflow.frameworks.NAME.…` → NAME (None for any other module, and the `frameworks` package)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["turnflow", "frameworks"] else None


def stage_of(module: str) -> str:
    """The pipeline stage of a turnflow module: its top-level package (`turnflow.compiler.lower` →
    compiler), or for a framework module its part's (`turnflow.frameworks.ag2.writer_builtin` → compiler;
    a framework's package itself → frameworks)."""
    parts = module.split(".")
    if framework_of(module) is not None and len(parts) > 3:
        return STAGE_OF_PART.get(parts[3].split("_")[0], "?")
    return parts[1] if len(parts) > 1 else "turnflow"


def imported_names(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module]
    return out


@pytest.mark.parametrize("stage, forbidden", [
    ("dsl", ("compiler", "runtime", "migrate", "api", "cli")),
    ("diagnostics", ("dsl", "compiler", "runtime", "migrate", "api")),
    ("compiler", ("runtime", "migrate", "cli", "api")),
    ("runtime", ("dsl", "compiler", "migrate", "api")),
])
def test_stage_imports_nothing_later_in_the_pipeline(stage, forbidden):
    """By stage, not by folder: a framework's writer is held to the compiler's rule, its participant
    to the runtime's."""
    edges = import_graph()
    modules = [m for m in edges if stage_of(m) == stage]
    assert modules
    offenders = [f"{m}: {n}" for m in sorted(modules) for n in sorted(edges[m]) if stage_of(n) in forbidden]
    assert offenders == []


def runtime_stage_files() -> list[Path]:
    return sorted(RUNTIME.rglob("*.py")) + sorted(
        f for f in (PKG / "frameworks").glob("*/*.py") if STAGE_OF_PART.get(f.stem.split("_")[0]) == "runtime")


def test_runtime_imports_neither_dsl_nor_compiler():
    offenders = []
    files = runtime_stage_files()
    assert len(files) > 10 and any("frameworks" in f.parts for f in files)
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + ([f"{node.module}.{a.name}" for a in node.names])
            for n in names:
                if n.startswith(FORBIDDEN) or n in ("turnflow.compile", "turnflow.parse"):
                    offenders.append(f"{f.relative_to(PKG)}: {n}")
    assert offenders == []


# -- the frameworks' folders ----------------------------------------------------------------------------
def framework_offenders(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a framework rule of the module docstring, as `importer: imported (why)`."""
    out = []
    for mod in sorted(edges):
        mine, stage = framework_of(mod), stage_of(mod)
        for n in sorted(edges[mod]):
            theirs = framework_of(n)
            if mine is not None and stage == "frameworks":
                out.append(f"{mod}: {n} (a framework's package imports nothing)")
            elif mine is not None and theirs is not None and theirs != mine:
                out.append(f"{mod}: {n} (a framework imports no other framework)")
            elif mine is not None and theirs == mine and stage_of(n) != stage:
                out.append(f"{mod}: {n} (a framework's {stage} part imports none of its {stage_of(n)} parts)")
            elif mine is not None and theirs is None and not any(
                    n == p or n.startswith(p + ".") for p in MAY_IMPORT.get(stage, ())):
                out.append(f"{mod}: {n} (a framework's {stage} module imports only {', '.join(MAY_IMPORT.get(stage, ()))})")
            elif mine is None and theirs is not None and stage_of(n) != stage:
                out.append(f"{mod}: {n} (only a {stage_of(n)} module loads a framework's {stage_of(n)} part)")
    return out


def test_framework_modules_import_only_their_stage():
    edges = import_graph()
    assert any(framework_of(m) for m in edges)
    assert framework_offenders(edges) == []


def test_each_framework_folder_has_its_parts_and_names_them():
    """Each folder holds the parts `PARTS_OF` lists, every file is one of them (`PART.py` or
    `PART_FORM.py`), and its package docstring names each module."""
    folders = {d.name: d for d in (PKG / "frameworks").iterdir() if d.is_dir() and not d.name.startswith("_")}
    assert set(folders) == set(PARTS_OF)
    for name, folder in sorted(folders.items()):
        files = sorted(f for f in folder.glob("*.py") if f.name != "__init__.py")
        parts = {f.stem.split("_")[0] for f in files}
        assert parts == PARTS_OF[name], name
        assert all(p in STAGE_OF_PART for p in parts), name
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert [f.name for f in files if f"`{f.name}`" not in doc] == [], name


def test_each_framework_part_is_wired_into_its_stage():
    """The dispatchers name every participant, writer and check module of the folders, and nothing else
    there: `turnflow run`'s agent kinds, `compile --target`'s writers, the codes' home modules."""
    from turnflow.compiler.emit.targets import WRITERS
    from turnflow.diagnostics.codes import CODES
    from turnflow.runtime.agents.config import FRAMEWORKS

    def modules(prefix: str) -> set[str]:
        return {f"turnflow.frameworks.{f.parent.name}.{f.stem}" for f in (PKG / "frameworks").glob(f"*/{prefix}*.py")}

    assert {module for module, _, _ in FRAMEWORKS.values()} == modules("participant")
    assert {kind: module.split(".")[2] for kind, (module, _, _) in FRAMEWORKS.items()} == {k: k for k in FRAMEWORKS}
    assert set(WRITERS.values()) <= modules("writer")
    assert {c.home for c in CODES if c.home.startswith("turnflow.frameworks.")} == modules("check")


def test_the_framework_rules_see_an_offender(tmp_path, monkeypatch):
    """The rules above can fail: a writer that reads migrate's model, a reader that imports another
    framework's writer, a participant that imports its own framework's writer, a dispatcher of
    another stage, and a framework's package that imports a part are all reported."""
    pkg = tmp_path / "turnflow"
    for d in ("migrate", "runtime", "frameworks/x", "frameworks/y"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "migrate" / "model.py").write_text("")
    (pkg / "runtime" / "config.py").write_text("from turnflow.frameworks.x import writer\n")
    (pkg / "frameworks" / "x" / "__init__.py").write_text("from turnflow.frameworks.x import participant\n")
    (pkg / "frameworks" / "x" / "writer.py").write_text("from turnflow.migrate import model\n")
    (pkg / "frameworks" / "x" / "participant.py").write_text("def f():\n    import turnflow.frameworks.x.writer\n")
    (pkg / "frameworks" / "y" / "reader_json.py").write_text("from turnflow.frameworks.x.writer import TABLE\n")
    monkeypatch.setattr(__import__(__name__), "PKG", pkg)
    assert stage_of("turnflow.frameworks.y.reader_json") == "migrate"
    assert [line.split(" (")[0] for line in framework_offenders(import_graph())] == [
        "turnflow.frameworks.x: turnflow.frameworks.x.participant",
        "turnflow.frameworks.x.participant: turnflow.frameworks.x.writer",
        "turnflow.frameworks.x.writer: turnflow.migrate.model",
        "turnflow.frameworks.y.reader_json: turnflow.frameworks.x.writer",
        "turnflow.runtime.config: turnflow.frameworks.x.writer"]


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
    by Python on the way in) are not edges. (Built once per test process for a tree whose files
    are unchanged: six tests read it; only the graph is kept, not the files' syntax trees, which
    would slow every later garbage collection of the process.)"""
    files = sorted(PKG.rglob("*.py"))
    key = (str(PKG), tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    if key not in _GRAPHS:
        with collector_paused():  # (tests/scan_gc.py)
            _GRAPHS[key] = _import_graph(files)
    return {m: set(v) for m, v in _GRAPHS[key].items()}


_GRAPHS: dict[tuple, dict[str, set[str]]] = {}


def _import_graph(files: list[Path]) -> dict[str, set[str]]:
    modules = {_module_name(f): f for f in files}
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


def test_the_public_paths_are_kept():
    """What users import by path still imports: `turnflow.interop.ag2` re-exports every public name of
    `frameworks/ag2/interop.py`; the framework agents load by their names from `turnflow.runtime.agents`."""
    import turnflow.interop.ag2 as public
    import turnflow.runtime.agents as agents
    from turnflow.frameworks.ag2 import interop

    defined = sorted(n for n, v in vars(interop).items()
                     if not n.startswith("_") and getattr(v, "__module__", None) == interop.__name__)
    assert defined and sorted(public.__all__) == sorted([*defined, "EXTENSIONS"])
    assert all(getattr(public, n) is getattr(interop, n) for n in public.__all__)
    for name, framework in (("LangGraphAgent", "langgraph"), ("AG2Agent", "ag2"), ("AutoGenAgent", "autogen")):
        assert getattr(agents, name).__module__ == f"turnflow.frameworks.{framework}.participant"
