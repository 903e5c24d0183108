"""Imports sit at the top of the modules of compiler (the frameworks' writers and checks included),
spec, diagnostics, dsl and lsp, except the deliberately lazy ones below: each keeps lark (the
parser, the lexer, the pipeline that parses) or pydantic (the spec models behind `turnflow.spec`'s
lazy names) out of `import turnflow`, the emitters and the editor's light paths
(tests/test_light_core.py). A new function-level import fails here: move it to the top, or add it
with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

from scan_gc import collector_paused

PKG = Path(__file__).resolve().parents[1] / "src" / "turnflow"
PACKAGES = ("compiler", "spec", "diagnostics", "dsl", "lsp")

#: file: imported module (what a function imports, and why it may)
ALLOWED = {
    ("dsl/__init__.py", "turnflow.dsl.parser"),         # `turnflow.dsl` loads lark on first parse only
    ("spec/__init__.py", "turnflow.spec.session"),      # the spec's names load pydantic on first use
    ("spec/__init__.py", "turnflow.spec.errors"),
    ("spec/__init__.py", "turnflow.spec.graph"),
    ("compiler/decompile.py", "turnflow.dsl.parser"),   # lark: only when a number is checked
    ("compiler/decompile.py", "turnflow.compiler.pipeline"),  # lark: only to verify by recompiling
    ("compiler/emit/spec.py", "turnflow.compiler.pipeline"),  # lark: the emitter alone parses nothing
    ("compiler/emit/targets.py", "turnflow.compiler.pipeline"),
    ("compiler/emit/targets.py", "turnflow.spec"),       # pydantic: validating a spec before writing code
    ("compiler/emit/pyroute.py", "turnflow.spec.graph"),  # pydantic: `turnflow check` reads the writers' tables
    ("lsp/completion.py", "turnflow.dsl.lexer"),         # lark: completion reads the text alone first
    ("lsp/completion.py", "turnflow.dsl.parser"),
    ("lsp/features.py", "turnflow.dsl.parser"),
    ("lsp/features.py", "turnflow.compiler.pipeline"),  # lark: formatting re-checks only when the text changes
    ("lsp/server.py", "turnflow.dsl.parser"),
}


def function_level_imports() -> set[tuple[str, str]]:
    found = set()
    compiler_parts = sorted(f for f in (PKG / "frameworks").glob("*/*.py") if f.stem.startswith(("writer", "check")))
    assert compiler_parts
    for f in [f for pkg in PACKAGES for f in sorted((PKG / pkg).rglob("*.py"))] + compiler_parts:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                rel = f.relative_to(PKG).as_posix()
                if isinstance(n, ast.Import):
                    found |= {(rel, a.name) for a in n.names}
                elif isinstance(n, ast.ImportFrom):
                    mod = "." * n.level + (n.module or "")
                    if mod == "turnflow.dsl" and [a.name for a in n.names] == ["parser"]:
                        mod = "turnflow.dsl.parser"
                    elif mod in ("turnflow.spec",) and rel == "spec/__init__.py":
                        mod = "turnflow.spec." + n.names[0].name
                    found.add((rel, mod))
    return found


def test_function_level_imports_are_the_allowed_lazy_ones():
    with collector_paused():  # (tests/scan_gc.py)
        found = function_level_imports()
    assert found == ALLOWED
