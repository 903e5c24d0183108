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
  `await x.a_initiate_chat(...)`), run by `asyncio.run(main())`;
- (issue 31, argument forms) every recognised framework call (the table of
  `turnflow.migrate.surface`) with its arguments in the other form Python allows (positional →
  keyword, else keyword → positional), and bound to a variable first (`f(g(x))` → `v = g(x); f(v)`,
  `agent.handoffs.m(...)` → `h = agent.handoffs; h.m(...)`): the same program, so the same graph
  (or a finding); and every optional setting that decides turns (read or not modelled in the
  table) left out, the static reading compared with the migration of the objects the mutant
  builds (AgentChat in-process, classic chats and patterns under the classic environment).
The baseline is the unmutated module printed by `ast.unparse` (the mutants are printed the same
way, so only the mutation differs).
"""

from __future__ import annotations

import ast
import copy
import functools
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


@functools.lru_cache(maxsize=None)
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _fresh(text: str) -> ast.Module:
    """A new tree of `text` to mutate: what `copy.deepcopy` of its parsed tree gives (the same
    nodes, positions included), at a quarter of the cost."""
    return ast.parse(text)


@functools.lru_cache(maxsize=64)  # (only a few texts repeat; ~1,300 mutants are migrated once each)
def _graph(text: str) -> tuple[Optional[dict], list]:
    """(The speaker graph of each block, the diagnostics) of `text` migrated; the same text (the
    baseline in two tests, a module without a call under three wrappers) is migrated once.
    Callers only read what it returns."""
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


def _wrap(text: str) -> Iterator[tuple[str, str, object]]:
    for k in range(len(_assignments(_fresh(text)))):
        t = _fresh(text)
        body, i = _assignments(t)[k]
        st = body[i]
        body[i] = ast.If(test=ast.Name(id="unknown_flag", ctx=ast.Load()), body=[st], orelse=[])
        yield f"wrap line {st.lineno}", ast.unparse(ast.fix_missing_locations(t)), \
            lambda n: isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "unknown_flag"


def _wrap_calls(text: str) -> Iterator[tuple[str, str, object]]:
    """A call statement put under `if unknown_flag:` (it may not run) or in `for item in unknown_items:`
    (it may run no time, or several). The third item is `(changed, without)`: the wrapper's predicate
    and the module with the call deleted (what the program does when the call does not run)."""
    for k in range(len(_call_statements(_fresh(text)))):
        gone = _fresh(text)
        body, i = _call_statements(gone)[k]
        del body[i]
        body.insert(i, ast.Pass()) if not body else None
        without = ast.unparse(ast.fix_missing_locations(gone))
        for kind in ("if", "for", "except"):
            t = _fresh(text)
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


def _rebind(text: str) -> Iterator[tuple[str, str, object]]:
    tree = _fresh(text)
    for body, i in _assignments(tree):
        st = body[i]
        if body is not tree.body or not isinstance(st.targets[0], ast.Name) or not isinstance(st.value, ast.Call):
            continue
        t = _fresh(text)
        second = copy.deepcopy(st)
        second.value.keywords = [kw for kw in second.value.keywords if kw.arg != "name"] + [
            ast.keyword(arg="name", value=ast.Constant(value="second_object"))]
        t.body.append(second)
        name = st.targets[0].id
        yield f"rebind `{name}`", ast.unparse(ast.fix_missing_locations(t)), \
            lambda n, name=name: isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) \
            and n.targets[0].id == name and isinstance(n.value, ast.Call) \
            and any(kw.arg == "name" and getattr(kw.value, "value", None) == "second_object" for kw in n.value.keywords)


def _into_main(text: str) -> Iterator[tuple[str, str, object]]:
    tree = _fresh(text)
    for i, st in enumerate(tree.body):
        call = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name not in RUNS:
            continue
        t = _fresh(text)
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
    text = _source(path)
    yield from _wrap(text)
    yield from _wrap_calls(text)
    yield from _rebind(text)
    yield from _into_main(text)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_mutant_keeps_the_graph_or_reports_the_change(path):
    baseline_text = ast.unparse(ast.parse(_source(path)))
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


# --------------------------------------------------------------------------------------------
#  Argument forms (issue 31): a recognised framework call written another way Python allows
# --------------------------------------------------------------------------------------------
from turnflow.migrate import surface  # noqa: E402

PER_FILE_FORMS = 24  # recognised calls rewritten per file and per kind of rewrite
_METHODS = {"add_node": "DiGraphBuilder", "add_edge": "DiGraphBuilder", "set_entry_point": "DiGraphBuilder",
            "add_conditional_edges": "DiGraphBuilder", "initiate_chat": "ConversableAgent",
            "register_for_llm": "ConversableAgent", "register_for_execution": "ConversableAgent"}


def _api_of(call: ast.Call, family: str) -> Optional[surface.Api]:
    f = call.func
    if isinstance(f, ast.Name):
        name = f.id
    elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "handoffs":
        name = f"Handoffs.{f.attr}"
    elif isinstance(f, ast.Attribute):
        name = f"{_METHODS[f.attr]}.{f.attr}" if f.attr in _METHODS else f.attr  # `autogen.GroupChat(...)`
    else:
        return None
    return surface.api(family, name)


def _recognised(tree: ast.AST, family: str) -> list[tuple[ast.Call, surface.Api]]:
    found = [(c, _api_of(c, family)) for c in ast.walk(tree) if isinstance(c, ast.Call)]
    out = [(c, a) for c, a in found if a is not None and surface.bind(c, a).problem is None]
    out.sort(key=lambda ca: (ca[0].lineno, ca[0].col_offset))
    return out[:PER_FILE_FORMS]  # type: ignore[return-value]


def _where(node: ast.AST) -> tuple:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def _call_at(tree: ast.AST, call: ast.Call) -> ast.Call:
    """In a fresh tree of the same text, the call at `call`'s position (the one `_recognised` of
    that tree lists at the same index: the same nodes, bound alike)."""
    return next(c for c in ast.walk(tree) if isinstance(c, ast.Call) and _where(c) == _where(call))


def _family(path: Path) -> str:
    return "agentchat" if path.parent.name == "autogen" or "autogen_agentchat" in _source(path) \
        else "ag2"


def _swap_forms(call: ast.Call, a: surface.Api) -> bool:
    """Positional arguments → keywords; else keywords → positional (the longest prefix Python
    allows). False when the call has no other form."""
    positional = [p for p in a.params if p.kind in ("/", "p")]
    if call.args and not any(isinstance(x, ast.Starred) for x in call.args) \
            and all(p.kind == "p" for p in positional[:len(call.args)]) and len(call.args) <= len(positional):
        call.keywords = [ast.keyword(arg=p.name, value=x) for p, x in zip(positional, call.args)] + call.keywords
        call.args = []
        return True
    by_name = {k.arg: k for k in call.keywords}
    moved = False
    for p in positional[len(call.args):]:
        if p.kind != "p" or p.name not in by_name:
            break
        call.args.append(by_name[p.name].value)
        call.keywords.remove(by_name[p.name])
        moved = True
    return moved


def _forms(path: Path) -> Iterator[tuple[str, str]]:
    """Each recognised call with its arguments in the other form; each recognised call that is an
    argument of another call (or an element of a list argument) bound to a variable first."""
    family = _family(path)
    text = _source(path)
    recognised = _recognised(_fresh(text), family)
    for at, a in recognised:
        t = _fresh(text)
        call = _call_at(t, at)
        if _swap_forms(call, a):
            yield f"`{a.name}` at line {call.lineno} in its other argument form", ast.unparse(t)
    for k, (at, a) in enumerate(recognised):
        t = _fresh(text)
        call = _call_at(t, at)
        hoisted = _through_a_variable(t, call, f"hoisted_{k}") or _receiver_through_a_variable(t, call, f"hoisted_{k}")
        if hoisted:
            yield f"`{a.name}` at line {call.lineno} through a variable", ast.unparse(ast.fix_missing_locations(t))


def _receiver_through_a_variable(tree: ast.Module, call: ast.Call, var: str) -> bool:
    """`agent.handoffs.add_llm_condition(...)` as a statement → `var = agent.handoffs` before it,
    `var.add_llm_condition(...)`: True when `call` is such a statement's call."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "handoffs"):
        return False
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for body in bodies:
        for i, st in enumerate(body):
            if isinstance(st, ast.Expr) and st.value is call:
                body.insert(i, ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())], value=f.value))
                f.value = ast.Name(id=var, ctx=ast.Load())
                return True
    return False


def _through_a_variable(tree: ast.Module, call: ast.Call, var: str) -> bool:
    """`f(g(x))` → `var = g(x)` before the statement, `f(var)`: True when `call` is an argument (or
    a list element of one) of a call in a statement of a module-level or function body."""
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for body in bodies:
        for i, st in enumerate(body):
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for holder in ast.walk(st):
                slots = []
                if isinstance(holder, ast.Call):
                    slots = [(holder.args, j) for j in range(len(holder.args))]
                    slots += [(holder, kw) for kw in holder.keywords]
                elif isinstance(holder, (ast.List, ast.Tuple)):
                    slots = [(holder.elts, j) for j in range(len(holder.elts))]
                for where, key in slots:
                    node = where[key] if isinstance(where, list) else key.value
                    if node is call:
                        name = ast.Name(id=var, ctx=ast.Load())
                        if isinstance(where, list):
                            where[key] = name
                        else:
                            key.value = name
                        body.insert(i, ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())], value=call))
                        return True
    return False


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_argument_form_mutant_migrates_alike_or_is_flagged(path):
    """The same call in another form (keyword <-> positional, through a variable) is the same
    program: the mutant migrates to the same speaker graph, or says where it could not follow."""
    baseline_text = ast.unparse(ast.parse(_source(path)))
    baseline, base_diags = _graph(baseline_text)
    if baseline is None:
        pytest.skip("the fixture itself is refused")
    silent, count = [], 0
    for what, text in _forms(path):
        count += 1
        graph, diags = _graph(text)
        if graph is not None and all(graph.get(k) == v for k, v in baseline.items()):
            continue
        if graph is None and diags and diags[0].code == "TF401":
            continue  # refused with its reason
        new = {(d.code, d.message) for d in diags} - {(d.code, d.message) for d in base_diags}
        if not new:
            silent.append(f"{what}: {graph} != {baseline}")
    assert not silent, "\n".join(silent)


AGENTCHAT_LIVE = ["autogen/swarm_python.py", "autogen/graphflow_python.py", "autogen/graphflow_parallel.py",
                  "autogen/round_robin_python.py", "autogen/selector_python.py", "autogen/message_filter.py",
                  "autogen/nested_team.py", "soundness/termination_branch.py"]
PER_FILE_DROPS = 16


def _drops(path: Path) -> Iterator[tuple[str, str, int]]:
    """The module with one optional keyword argument of one recognised call left out (what, text,
    the call's line)."""
    text = _source(path)
    n = 0
    for call, a in _recognised(_fresh(text), "agentchat"):
        optional = {p.name for p in a.params if not p.required and p.how != surface.IRRELEVANT}
        for j, kw in enumerate(call.keywords):
            if kw.arg not in optional or n >= PER_FILE_DROPS:
                continue
            t = _fresh(text)
            tcall = _call_at(t, call)
            del tcall.keywords[j]
            n += 1
            yield f"`{a.name}` at line {call.lineno} without `{kw.arg}=`", ast.unparse(t), call.lineno


@pytest.mark.parametrize("fixture", AGENTCHAT_LIVE)
def test_a_dropped_setting_migrates_as_the_live_team_does(fixture, tmp_path, monkeypatch):
    """Each optional setting of each recognised AgentChat call left out: the static reading of the
    mutant equals the migration of the team it builds (autogen-agentchat 0.7, in-process), or
    the static reading says where it could not follow."""
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    from live_compare import compare, one_ssl_context

    one_ssl_context(monkeypatch)  # no model is called: one CA bundle load, not one per agent

    silent, compared = [], 0
    for i, (what, text, line) in enumerate(_drops(ROOT / fixture)):
        mutant = tmp_path / f"{Path(fixture).stem}_{i}.py"
        mutant.write_text(text, encoding="utf-8")
        try:
            rows = compare(mutant)
        except Exception:  # noqa: BLE001 - the mutant program fails when it builds the team: no flow to compare
            continue
        compared += 1
        flagged = any(d.span.line == line for d in migrate(text, mutant.name).diagnostics)
        silent += [f"{what}: static {r['static']} != live {r['live']}" for r in rows
                   if r["live"] != r["static"] and not flagged]
    assert compared, "no mutant built a team"
    assert not silent, "\n".join(silent)


CLASSIC_DROPS = 4  # per fixture: the classic environment runs every mutant in one process


def _classic_drops(path: Path) -> Iterator[tuple[str, str, int]]:
    text = _source(path)
    n = 0
    for call, a in _recognised(_fresh(text), "ag2"):
        # the settings that decide turns (read, or not modelled: a finding), not the irrelevant ones
        optional = {p.name for p in a.params if not p.required and p.how != surface.IRRELEVANT}
        for j, kw in enumerate(call.keywords):
            if kw.arg not in optional or kw.arg == "name" or n >= CLASSIC_DROPS:
                continue
            t = _fresh(text)
            tcall = _call_at(t, call)
            del tcall.keywords[j]
            n += 1
            yield f"`{a.name}` at line {call.lineno} without `{kw.arg}=`", ast.unparse(t), call.lineno


def test_a_dropped_setting_migrates_as_the_live_classic_chat_does(tmp_path):
    """As above for classic group chats and AG2 patterns, under the classic environment (ag2 0.9.9):
    the static reading of each mutant equals the chats the mutant builds, or says where it could
    not follow (a finding at the changed call)."""
    import json
    import os
    import subprocess
    import sysconfig

    from test_migrate_live import CLASSIC_DIRS, NOT_RUNNABLE, _classic_python
    from live_compare import DRIVERS

    python = _classic_python()
    mutants: dict[str, tuple[str, int]] = {}
    for d in CLASSIC_DIRS:
        for path in sorted((ROOT / d).glob("*.py")):
            if path.name in NOT_RUNNABLE or path.name in DRIVERS or _family(path) != "ag2":
                continue
            for i, (what, text, line) in enumerate(_classic_drops(path)):
                name = f"{path.stem}__drop{i}.py"
                (tmp_path / name).write_text(text, encoding="utf-8")
                mutants[name] = (what, line)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent / "src"), OPENAI_API_KEY="sk-test",
               TURNFLOW_LIVE_FALLBACK_PATH=sysconfig.get_paths()["purelib"])
    run = subprocess.run([python, str(Path(__file__).parent / "live_compare.py"), *(str(tmp_path / m) for m in mutants)],
                         capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    rows = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith('{"file"')]
    assert len(rows) == len(mutants), (run.returncode, run.stderr[-3000:])
    silent, compared = [], 0
    for r in rows:
        if "error" in r or "family" in r:
            continue  # the mutant program fails when it builds the chat
        compared += 1
        what, line = mutants[r["file"]]
        if r["problems"] and not any(d.span.line == line for d in migrate(
                (tmp_path / r["file"]).read_text(encoding="utf-8"), r["file"]).diagnostics):
            silent.append(f"{r['file']} ({what}): {r['problems']}")
    assert compared >= len(mutants) // 2, compared
    assert not silent, "\n".join(silent)
