"""No raw session-spec dict past the boundary (issue 29): in `turnflow.runtime` and
`turnflow.serve` (and the participants in `turnflow/frameworks/`), a spec is a `SessionSpec` (runtime/session_spec.py, the one module that reads
the JSON object). Scanned with `ast`: no `spec.get(...)` / `spec[...]` on a name (or attribute)
`spec` or `*_spec`, and no parameter of that name untyped or typed `dict`, `Mapping` or `Any` — unless the
parameter also admits a `SessionSpec` and the function parses it first thing
(`spec = SessionSpec.parse(spec)`: the Python API's entry points)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scan_gc import collector_paused

SRC = Path(__file__).resolve().parents[1] / "src" / "turnflow"
SCANNED = ("runtime", "serve")
#: the runtime stage's modules in the frameworks' folders (a writer takes the spec the compiler emits)
RUNTIME_PARTS = ("participant", "history")
BOUNDARY = {SRC / "runtime" / "session_spec.py"}
LOOSE = {"dict", "Dict", "Mapping", "MutableMapping", "Any"}


def _spec_name(name: str) -> bool:
    return name == "spec" or name.endswith("_spec")


def _target(node: ast.expr) -> str | None:
    """`spec` for `spec`, `self.spec`, `x.base_spec`; None for anything else."""
    if isinstance(node, ast.Name) and _spec_name(node.id):
        return node.id
    if isinstance(node, ast.Attribute) and _spec_name(node.attr):
        return node.attr
    return None


def _names_in(annotation: ast.expr) -> set[str]:
    names = set()
    for n in ast.walk(annotation):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):  # a quoted annotation
            try:
                names |= _names_in(ast.parse(n.value, mode="eval").body)
            except SyntaxError:
                pass
    return names


def _is_parse_of(value: ast.expr, name: str) -> bool:
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "parse"
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "SessionSpec"
            and [getattr(a, "id", None) for a in value.args] == [name] and not value.keywords)


def _parses_first(fn: ast.AST, name: str) -> bool:
    """The first statement of the function that mentions `name` is `... = SessionSpec.parse(name)`."""
    for stmt in getattr(fn, "body", []):
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
            return isinstance(stmt, ast.Assign) and _is_parse_of(stmt.value, name)
    return False


def problems(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            name = _target(node.func.value)
            if name is not None:
                found.append(f"{where}:{node.lineno}: {name}.get(...) reads a raw spec dict")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            name = _target(node.value)
            if name is not None:
                found.append(f"{where}:{node.lineno}: {name}[...] reads a raw spec dict")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if not _spec_name(arg.arg):
                    continue
                if arg.annotation is None:
                    found.append(f"{where}:{node.lineno}: {node.name}({arg.arg}) is not typed")
                    continue
                names = _names_in(arg.annotation)
                if names & LOOSE and not ("SessionSpec" in names and _parses_first(node, arg.arg)):
                    found.append(f"{where}:{node.lineno}: {node.name}({arg.arg}: {ast.unparse(arg.annotation)}) "
                                 "takes a raw spec dict")
    return found


def test_no_raw_spec_dict_in_the_runtime_or_serve():
    found = []
    paths = [path for pkg in SCANNED for path in sorted((SRC / pkg).rglob("*.py"))]
    paths += sorted(f for f in (SRC / "frameworks").glob("*/*.py") if f.stem.split("_")[0] in RUNTIME_PARTS)
    with collector_paused():  # (tests/scan_gc.py)
        for path in paths:
            if path not in BOUNDARY:
                found += problems(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    assert found == []


@pytest.mark.parametrize("source, count", [
    ("def f(spec: SessionSpec):\n    return spec.get('kind')\n", 1),
    ("def f(self):\n    return self.spec['kind']\n", 1),
    ("def f(base_spec: SessionSpec):\n    return base_spec.get('knobs') or {}\n", 1),
    ("def f(spec: dict) -> None: ...\n", 1),
    ("def f(spec) -> None: ...\n", 1),
    ("def f(spec: 'Mapping[str, Any]') -> None: ...\n", 1),
    ("def f(*, run_spec: Optional[dict[str, Any]] = None) -> None: ...\n", 1),
    ("def f(spec: Union[SessionSpec, dict]) -> None:\n    return spec.kind\n", 1),  # admits a dict, never parses it
    ("def f(spec: Union[SessionSpec, dict]) -> None:\n    '''doc'''\n    spec = SessionSpec.parse(spec)\n", 0),
    ("def f(spec: SessionSpec) -> str:\n    return spec.kind + spec.knobs.get('x', '')\n", 0),
    ("def f(spec_hash: str) -> str:\n    return spec_hash[:4]\n", 0),  # not a spec
    ("d = {}\nd['spec'] = 1\n", 0),
])
def test_the_scan_catches_what_it_forbids(source, count):
    assert len(problems(source, "x.py")) == count
