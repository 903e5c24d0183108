"""The mutation harness of issue 23: the fixtures, mutated into shapes real code takes, either
migrate to the same speaker graph or carry a TF4xx at the changed construct (or are refused).

Mutations (a deterministic enumeration, bounded per file):
- `if unknown_flag:` wrapped around one assignment;
- a variable rebound to a second object at the end of the module (after every use);
- `if unknown_flag:`, `for item in unknown_items:` or `try: unknown_setup()` / `except Exception:`
  wrapped around one call statement (the configuration calls: `x.handoffs.set_after_work(...)`,
  `builder.add_edge(...)`, `transitions[a].append(b)`): unless the call changes nothing (the module
  without it gives the same graph), the output must say so at the `if` / `for` / `try`, or at the
  call naming that line;
- the call that runs the chat moved into `async def main()` (`await a_initiate_group_chat(...)`,
  `await x.a_initiate_chat(...)`), run by `asyncio.run(main())`.
The baseline is the unmutated module printed by `ast.unparse` (the mutants are printed the same
way, so only the mutation differs).
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Iterator, Optional

import pytest

import turnflow
from turnflow.migrate import MigrateError, migrate
from test_migrate import reference_edges

ROOT = Path(__file__).parent / "fixtures" / "migrate"
FILES = sorted(p for d in ("classic", "ag2-patterns", "autogen", "soundness") for p in (ROOT / d).glob("*.py"))
PER_FILE = 14  # assignments mutated per file (the first ones that build something)
RUNS = {"initiate_group_chat": "a_initiate_group_chat", "run_group_chat": "a_run_group_chat",
        "initiate_chat": "a_initiate_chat", "a_initiate_group_chat": "a_initiate_group_chat",
        "a_initiate_chat": "a_initiate_chat", "initiate_swarm_chat": "a_initiate_swarm_chat"}


def _graph(text: str) -> tuple[Optional[dict], list]:
    try:
        result = migrate(text, "mutant.py")
    except MigrateError as err:
        return None, err.diagnostics
    flow = turnflow.parse(result.text)
    starts = {b.name.name: next((s.name.name for s in b.statements if isinstance(s, turnflow.dsl.ast.Start)), None)
              for b in flow.blocks}
    return {b.name.name: (reference_edges(b), starts[b.name.name]) for b in flow.blocks}, result.diagnostics


def _assignments(tree: ast.Module) -> list[tuple[list, int]]:
    """(the body holding it, its index) of the assignments that build something, in source order."""
    out = []
    bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for body in bodies:
        for i, st in enumerate(body):
            if isinstance(st, ast.Assign) and isinstance(st.value, (ast.Call, ast.List, ast.Dict, ast.Name)):
                out.append((body, i))
    out.sort(key=lambda bi: bi[0][bi[1]].lineno)
    return out[:PER_FILE]


def _call_statements(tree: ast.Module) -> list[tuple[list, int]]:
    """(the body holding it, its index) of the expression statements that call something (the
    configuration calls: `x.handoffs.set_after_work(...)`, `agents.append(a)`, `builder.add_edge(...)`),
    at the top level, in a function or a method, in source order."""
    out = []
    bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    bodies += [m.body for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body
               if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for body in bodies:
        for i, st in enumerate(body):
            if isinstance(st, ast.Expr) and isinstance(st.value, (ast.Call, ast.Await)):
                out.append((body, i))
    out.sort(key=lambda bi: bi[0][bi[1]].lineno)
    return out[:PER_FILE]


def _node_of(text: str, pred) -> ast.stmt:
    for node in ast.walk(ast.parse(text)):
        if pred(node):
            return node
    raise AssertionError("mutation not found")


def _at_change(d, node: Optional[ast.stmt]) -> bool:
    """A TF4xx at the changed statement's first line, or inside it naming that line."""
    if not d.code.startswith("TF4"):
        return False
    if node is None or d.span.line == node.lineno:
        return True
    return node.lineno < d.span.line <= (node.end_lineno or node.lineno) and f"line {node.lineno})" in d.message


def _wrap(tree: ast.Module) -> Iterator[tuple[str, str, object]]:
    for k in range(len(_assignments(tree))):
        t = copy.deepcopy(tree)
        body, i = _assignments(t)[k]
        st = body[i]
        body[i] = ast.If(test=ast.Name(id="unknown_flag", ctx=ast.Load()), body=[st], orelse=[])
        yield f"wrap line {st.lineno}", ast.unparse(ast.fix_missing_locations(t)), \
            lambda n: isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "unknown_flag"


def _wrap_calls(tree: ast.Module) -> Iterator[tuple[str, str, object]]:
    """A call statement put under `if unknown_flag:` (it may not run) or in `for item in unknown_items:`
    (it may run no time, or several). The third item is `(changed, without)`: the wrapper's predicate
    and the module with the call deleted (what the program does when the call does not run)."""
    for k in range(len(_call_statements(tree))):
        gone = copy.deepcopy(tree)
        body, i = _call_statements(gone)[k]
        del body[i]
        body.insert(i, ast.Pass()) if not body else None
        without = ast.unparse(ast.fix_missing_locations(gone))
        for kind in ("if", "for", "except"):
            t = copy.deepcopy(tree)
            body, i = _call_statements(t)[k]
            st = body[i]
            if _runs_a_chat(st):
                break  # whether the chat runs at all is not a different graph (`_into_main` moves these)
            if kind == "if":
                body[i] = ast.If(test=ast.Name(id="unknown_flag", ctx=ast.Load()), body=[st], orelse=[])
                changed = _is_flag_if
            elif kind == "except":  # a fallback configuration: runs only when the setup fails
                body[i] = ast.Try(body=ast.parse("unknown_setup()").body, handlers=[ast.ExceptHandler(
                    type=ast.Name(id="Exception", ctx=ast.Load()), name=None, body=[st])], orelse=[], finalbody=[])
                changed = _is_setup_try
            else:
                body[i] = ast.For(target=ast.Name(id="item", ctx=ast.Store()),
                                  iter=ast.Name(id="unknown_items", ctx=ast.Load()), body=[st], orelse=[],
                                  type_comment=None)
                changed = _is_items_for
            yield f"{kind} around the call at line {st.lineno}", ast.unparse(ast.fix_missing_locations(t)), \
                (changed, without)


def _runs_a_chat(st: ast.stmt) -> bool:
    call = st.value.value if isinstance(st.value, ast.Await) else st.value  # type: ignore[attr-defined]
    f = call.func if isinstance(call, ast.Call) else None
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return name in RUNS or name in ("run", "run_stream", "a_run", "main") \
        or (name == "run" and isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "asyncio")


def _is_flag_if(n: ast.AST) -> bool:
    return isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "unknown_flag"


def _is_setup_try(n: ast.AST) -> bool:
    return isinstance(n, ast.Try) and "unknown_setup()" in ast.unparse(n.body[0])


def _is_items_for(n: ast.AST) -> bool:
    return isinstance(n, ast.For) and isinstance(n.iter, ast.Name) and n.iter.id == "unknown_items"


def _rebind(tree: ast.Module) -> Iterator[tuple[str, str, object]]:
    for body, i in _assignments(tree):
        st = body[i]
        if body is not tree.body or not isinstance(st.targets[0], ast.Name) or not isinstance(st.value, ast.Call):
            continue
        t = copy.deepcopy(tree)
        second = copy.deepcopy(st)
        second.value.keywords = [kw for kw in second.value.keywords if kw.arg != "name"] + [
            ast.keyword(arg="name", value=ast.Constant(value="second_object"))]
        t.body.append(second)
        name = st.targets[0].id
        yield f"rebind `{name}`", ast.unparse(ast.fix_missing_locations(t)), \
            lambda n, name=name: isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) \
            and n.targets[0].id == name and isinstance(n.value, ast.Call) \
            and any(kw.arg == "name" and getattr(kw.value, "value", None) == "second_object" for kw in n.value.keywords)


def _into_main(tree: ast.Module) -> Iterator[tuple[str, str, object]]:
    for i, st in enumerate(tree.body):
        call = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name not in RUNS:
            continue
        t = copy.deepcopy(tree)
        moved = t.body.pop(i)
        moved_call = moved.value  # type: ignore[attr-defined]
        if isinstance(moved_call.func, ast.Name):
            moved_call.func.id = RUNS[name]
        else:
            moved_call.func.attr = RUNS[name]
        moved.value = ast.Await(value=moved_call)  # type: ignore[attr-defined]
        main = ast.AsyncFunctionDef(name="main", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                                     kw_defaults=[], defaults=[]),
                                    body=[ast.Try(body=[moved], handlers=[ast.ExceptHandler(
                                        type=ast.Name(id="Exception", ctx=ast.Load()), name=None,
                                        body=[ast.Raise()])], orelse=[], finalbody=[])],
                                    decorator_list=[], returns=None, type_params=[])
        run = ast.parse("import asyncio\nasyncio.run(main())").body
        t.body[i:i] = [main]
        t.body += run
        yield f"`{name}` into async main()", ast.unparse(ast.fix_missing_locations(t)), None
        return


def _mutants(path: Path) -> Iterator[tuple[str, str, object]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield from _wrap(tree)
    yield from _wrap_calls(tree)
    yield from _rebind(tree)
    yield from _into_main(tree)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_mutant_keeps_the_graph_or_reports_the_change(path):
    baseline_text = ast.unparse(ast.parse(path.read_text(encoding="utf-8")))
    baseline, _ = _graph(baseline_text)
    if baseline is None:
        pytest.skip("the fixture itself is refused")
    silent = []
    for what, text, changed in _mutants(path):
        graph, diags = _graph(text)
        changed, without = changed if isinstance(changed, tuple) else (changed, None)
        same = graph is not None and all(graph.get(k) == v for k, v in baseline.items())
        if same and without is None:
            continue  # the same graph (a rebound chat variable adds the second chat as a block of its own)
        if same and without is not None:
            # a call that may not run: the graph is the same only when the call changes nothing
            graph_without, _ = _graph(without)
            if graph_without is not None and all(graph_without.get(k) == v for k, v in baseline.items()):
                continue
        node = _node_of(text, changed) if changed is not None else None
        at_change = [d for d in diags if _at_change(d, node)]
        if graph is None and diags and diags[0].code == "TF401":
            continue  # refused, with its reason: not silently wrong
        if not at_change:
            silent.append(f"{what}: {graph} != {baseline}" if not same else f"{what}: followed as if it always ran")
    assert not silent, "\n".join(silent)
