"""The hub–agent boundary is typed (issue #29): nothing in `runtime/` or `serve/` takes or keeps a
hub typed `Any` (a parameter or an attribute named `hub` or `..._hub`), and nothing asks a hub
what it has (`getattr(hub, ...)` / `hasattr(hub, ...)`). The agent side reaches a session through
`runtime.port.SessionPort`; whoever holds a hub holds a `Hub`. Read from the syntax tree, so a
comment or a docstring that names them does not count.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from scan_gc import collector_paused

SRC = Path(__file__).resolve().parents[1] / "src" / "turnflow"
SCANNED = (SRC / "runtime", SRC / "serve", SRC / "frameworks")  # frameworks/: the participants


def _hub_name(name: Optional[str]) -> bool:
    return name is not None and (name == "hub" or name.endswith("_hub"))


def _expr_name(node: ast.AST) -> Optional[str]:
    """`hub`, `self.hub`, `run._hub`, ...: the name an expression ends with."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _mentions_any(annotation: Optional[ast.AST]) -> bool:
    """An annotation that is, or contains, `Any` (`Any`, `Optional[Any]`, `"Any"`, `typing.Any`)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    return any(_expr_name(n) == "Any" for n in ast.walk(annotation))


def violations(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            where = path.relative_to(root.parent)
            for node in ast.walk(tree):
                line = f"{where}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.arg) and _hub_name(node.arg) and _mentions_any(node.annotation):
                    found.append(f"{line}: parameter {node.arg}: {ast.unparse(node.annotation)}")
                elif (isinstance(node, ast.AnnAssign) and _hub_name(_expr_name(node.target))
                      and _mentions_any(node.annotation)):
                    found.append(f"{line}: attribute {ast.unparse(node.target)}: {ast.unparse(node.annotation)}")
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                      and node.func.id in ("getattr", "hasattr") and node.args and _hub_name(_expr_name(node.args[0]))):
                    found.append(f"{line}: {ast.unparse(node)}")
    return found


def test_runtime_and_serve_never_type_a_hub_any_nor_probe_one():
    with collector_paused():  # (tests/scan_gc.py)
        found = violations(*SCANNED)
    assert found == []


def test_the_scan_finds_each_kind_of_violation(tmp_path):
    """The scan itself: each forbidden form is found; typed hubs, other names, comments are not."""
    pkg = tmp_path / "runtime"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "from typing import Any, Optional\n"
        "def f(hub: Any, sid: str): ...\n"
        "async def g(*, served_hub: 'Optional[Any]' = None): ...\n"
        "class R:\n"
        "    hub: Any\n"
        "    def __init__(self, h):\n"
        "        self.local_hub: Optional[Any] = h\n"
        "def h(x):\n"
        "    return getattr(x.hub, 'sessions', {}), hasattr(hub, 'post')\n")
    (pkg / "fine.py").write_text(
        "# def f(hub: Any) and getattr(hub, 'sessions'), in a comment\n"
        "from typing import Any\n"
        "def f(hub: 'Hub', thing: Any, hubs: Any):\n"
        "    '''getattr(hub, \"x\")'''\n"
        "    self_hub_count: int = 0\n"
        "    return getattr(thing, 'hub', None)\n")
    got = violations(pkg)
    assert len(got) == 6, got
    assert all("bad.py" in v for v in got)
