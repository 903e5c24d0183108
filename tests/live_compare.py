"""Both migration paths on one fixture: the static reading of its source, and `from_object` on
the objects the fixture builds when it is run (with the calls that would start a chat, and thus
need a model, removed; `config_list_from_json` answers a dummy configuration).

Run as a script (`python tests/live_compare.py FIXTURE.py ...`) it prints one JSON line per
chat: {"file", "name", "same", "static", "live"}; the test runs it in-process (AutoGen AgentChat)
or under another interpreter that has the classic `autogen` package (AG2 0.9), which cannot be
installed next to ag2 1.2.1 (both are the distribution `ag2`).
"""

from __future__ import annotations

import ast
import json
import os
import sys
import types
from pathlib import Path
from typing import Any, Optional

RUNS = {"initiate_chat", "a_initiate_chat", "initiate_group_chat", "a_initiate_group_chat", "run_group_chat",
        "a_run_group_chat", "initiate_swarm_chat", "a_initiate_swarm_chat", "run", "run_stream"}


def _callee(node: ast.AST) -> str:
    f = node.func if isinstance(node, ast.Call) else node
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _strip(tree: ast.Module) -> tuple[ast.Module, dict[str, str]]:
    """The module without the statements that start a chat; {manager var: initiator var}."""
    initiators: dict[str, str] = {}
    body = []
    for st in tree.body:
        value = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Call) and (_callee(value) in RUNS or _callee(value) == "run"
                                            and isinstance(value.func, ast.Attribute)
                                            and isinstance(value.func.value, ast.Name)
                                            and value.func.value.id == "asyncio"):
            if _callee(value) in ("initiate_chat", "a_initiate_chat") and isinstance(value.func, ast.Attribute) \
                    and isinstance(value.func.value, ast.Name) and value.args and isinstance(value.args[0], ast.Name):
                initiators[value.args[0].id] = value.func.value.id
            for kw in value.keywords:  # initiate_group_chat(pattern=p, max_rounds=N)
                if kw.arg == "pattern" and isinstance(kw.value, ast.Name):
                    rounds = next((k.value.value for k in value.keywords if k.arg == "max_rounds"
                                   and isinstance(k.value, ast.Constant)), None)
                    initiators[kw.value.id] = f"max_rounds={rounds}"
            continue
        if isinstance(st, ast.If) and "__main__" in ast.unparse(st.test):
            continue
        body.append(st)
    tree.body = body
    return tree, initiators


def build(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Run the fixture without its chat-starting calls: its namespace and initiators."""
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    try:
        import autogen  # the classic package, when present

        autogen.config_list_from_json = lambda *a, **k: [{"model": "gpt-4o", "api_key": "sk-test"}]
    except ImportError:
        pass
    tree, initiators = _strip(ast.parse(path.read_text(encoding="utf-8")))
    module = types.ModuleType(f"fixture_{path.stem}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    code = compile(ast.fix_missing_locations(tree), str(path), "exec")
    exec(code, module.__dict__)  # noqa: S102 - the test's own fixture, run on purpose
    return module.__dict__, initiators


def compare(path: Path) -> list[dict]:
    from turnflow.migrate import migrate
    from turnflow.migrate.live import family_of, from_object

    namespace, initiators = build(path)
    static = migrate(path.read_text(encoding="utf-8"), path.name).text
    out = []
    managed = {id(v.groupchat) for v in namespace.values() if hasattr(v, "groupchat") and family_of(v)}
    for name, value in list(namespace.items()):
        if name.startswith("_") or family_of(value) is None or id(value) in managed:
            continue
        how = initiators.get(name, "")
        initiator: Optional[Any] = namespace.get(how)
        rounds = int(how.split("=", 1)[1]) if how.startswith("max_rounds=") and how != "max_rounds=None" else None
        chat_name = name
        if hasattr(value, "groupchat"):  # a manager: the block is named after its group chat's variable
            chat_name = next((k for k, v in namespace.items() if v is value.groupchat), name)
        live, _ = from_object(value, name=chat_name, initiator=initiator, max_rounds=rounds)
        out.append({"file": path.name, "name": chat_name, "static": _block(static, chat_name),
                    "live": _block(live, chat_name)})
        out[-1]["same"] = out[-1]["static"] == out[-1]["live"]
    return out


def _block(text: str, name: str) -> list[str]:
    """The lines of block `name`, comments left out (they carry input positions)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"workflow {name} ")), None)
    if start is None:
        return []
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start:end + 1]


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        try:
            for row in compare(Path(arg)):
                print(json.dumps(row))
        except BaseException as exc:  # noqa: BLE001 - reported per fixture (argparse exits)
            print(json.dumps({"file": Path(arg).name, "error": f"{type(exc).__name__}: {exc}"}))
