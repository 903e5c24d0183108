"""Both migration paths on one fixture: the static reading of its source, and `from_object` on
the objects the fixture builds when it is run without starting a chat (no model is called;
`config_list_from_json` answers a dummy configuration).

AutoGen AgentChat (`build`, `compare`): the test imports this module and runs it in-process.
Classic GroupChat and AG2 group patterns (`compare_classic`): run as a script under an interpreter
that has the classic `autogen` package (ag2 0.9, which cannot be installed next to ag2 1.2.1: both
are the distribution `ag2`; `bash .ci/classic-env` makes one), `python tests/live_compare.py
FIXTURE ...` prints one JSON line per fixture: {"file", "static": [blocks], "live": [chats],
"problems": [...]}, or {"file", "error"} when the fixture does not run there, or {"file",
"family"} for a fixture that is no classic chat or pattern.
"""

from __future__ import annotations

import ast
import json
import linecache
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
    code = compile(ast.fix_missing_locations(tree), str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)  # noqa: S102 - the test's own fixture, run on purpose
    return module.__dict__, initiators


def compare(path: Path) -> list[dict]:
    from turnflow.migrate import migrate
    from turnflow.migrate.live_objects import family_of, from_object

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


# --------------------------------------------------------------------------
#  Classic GroupChat and AG2 group patterns (the `autogen` package of ag2 0.9)
# --------------------------------------------------------------------------
# The fixture is run as a program (`__main__`, its `main()` when nothing else runs a chat, or the
# drivers below) with every call that would start a chat replaced by a recorder: each
# `initiate_chat(manager)` / `initiate_group_chat(pattern=..., max_rounds=...)` names the object it
# runs and how, by data flow, as the program really runs. Group chats and patterns the program
# builds but never runs are recorded when they are constructed.

# Programs whose chats are built only by what a user calls (a class, a mode, a command-line flag):
# every variant is run; a static block that follows one binding (TF410) must equal one of them.
# (argv, an expression to run after the module, environment variables set while it runs)
DRIVERS: dict[str, list[tuple[list[str], Optional[str], dict[str, str]]]] = {
    "class_builder.py": [([], "ResearchTeam({'model': 'gpt-4o'}).run('Find papers on agents.')", {})],
    "class_branches.py": [([], f"ResearchTeam({mode!r}, {{'model': 'gpt-4o'}}).run('Write a survey.')", {})
                          for mode in ("quick", "full", "other")],
    "cli_variants.py": [(argv, None, {}) for argv in ([], ["--fake"], ["--review"], ["--fake", "--review"])],
    "conditional_handoffs.py": [(argv, None, env) for argv in ([], ["--escalate"])
                                for env in ({}, {"TECH_SUPPORT": "1"})],
    "transitions_changed.py": [([], None, {}), (["--strict-review"], None, {})],
}


class _Recorder:
    def __init__(self, fixture: str):
        self.fixture = fixture
        self.built: list[Any] = []  # group chats and patterns the fixture constructs, in order
        self.managers: dict[int, Any] = {}  # id(groupchat) -> its manager
        self.runs: list[tuple[Any, Any, Optional[int]]] = []  # (manager or pattern, initiator, max_rounds)

    def by_fixture(self) -> bool:
        """Whether the constructor running now was called by the fixture's own code (not by AG2)."""
        import autogen

        lib = os.path.dirname(autogen.__file__)
        frame = sys._getframe(2)
        while frame is not None and (frame.f_code.co_filename.startswith(lib) or frame.f_code.co_filename == __file__
                                     or frame.f_code.co_filename.startswith("<")):  # dataclass __init__
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename == self.fixture

    def constructed(self, obj: Any) -> None:
        if self.by_fixture() and all(o is not obj for o in self.built):
            self.built.append(obj)


_ORIGINALS: dict[str, Any] = {}  # the library's run functions, before the first patch


def _done(value: Any = None):
    return types.SimpleNamespace(summary="", chat_history=[], cost={}, human_input=[], process=lambda: None,
                                 value=value)


def _patch(rec: _Recorder) -> None:
    """Record instead of run (the classic package; idempotent per recorder)."""
    import inspect

    import autogen
    import autogen.agentchat
    from autogen.agentchat import groupchat as gc_mod
    from autogen.agentchat.group import multi_agent_chat
    from autogen.agentchat.group.patterns import pattern as pattern_mod

    autogen.config_list_from_json = lambda *a, **k: [{"model": "gpt-4o", "api_key": "sk-test"}]
    gc_cls, mgr_cls, pat_cls = gc_mod.GroupChat, gc_mod.GroupChatManager, pattern_mod.Pattern
    post, mgr_init, pat_init = (getattr(c, "_live_original", None) or getattr(c, m)
                                for c, m in ((gc_cls, "__post_init__"), (mgr_cls, "__init__"), (pat_cls, "__init__")))

    def gc_post(self, *a, **k):
        post(self, *a, **k)
        rec.constructed(self)

    def manager(self, *a, **k):
        mgr_init(self, *a, **k)
        rec.managers[id(self.groupchat)] = self

    def pattern(self, *a, **k):
        pat_init(self, *a, **k)
        rec.constructed(self)

    for cls, meth, orig, new in ((gc_cls, "__post_init__", post, gc_post), (mgr_cls, "__init__", mgr_init, manager),
                                 (pat_cls, "__init__", pat_init, pattern)):
        setattr(cls, meth, new)
        cls._live_original = orig  # type: ignore[attr-defined]

    def initiate_chat(self, recipient, *a, **k):
        if hasattr(recipient, "groupchat"):
            rec.runs.append((recipient, self, None))
        return _done()

    async def a_initiate_chat(self, recipient, *a, **k):
        return initiate_chat(self, recipient, *a, **k)

    autogen.ConversableAgent.initiate_chat = initiate_chat
    autogen.ConversableAgent.a_initiate_chat = a_initiate_chat
    for fname in ("initiate_group_chat", "run_group_chat", "a_initiate_group_chat", "a_run_group_chat"):
        orig = _ORIGINALS.setdefault(fname, getattr(multi_agent_chat, fname))
        sig = inspect.signature(orig)

        def record(*a, _sig=sig, _name=fname, **k):
            bound = _sig.bind_partial(*a, **k)
            bound.apply_defaults()
            rec.runs.append((bound.arguments["pattern"], None, bound.arguments.get("max_rounds")))
            return _done() if "run_" in _name else (_done(), None, None)

        async def a_record(*a, _record=record, **k):
            return _record(*a, **k)

        new = a_record if fname.startswith("a_") else record
        setattr(multi_agent_chat, fname, new)
        setattr(autogen.agentchat, fname, new)


def _program(path: Path) -> str:
    """The fixture's Python (a notebook's code cells, shell and magic lines left out)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    cells = [c for c in json.loads(text)["cells"] if c.get("cell_type") == "code"]
    lines = [ln for c in cells for ln in "".join(c["source"]).splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines) + "\n"


def run_fixture(path: Path, argv: list[str], driver: Optional[str],
                env: Optional[dict[str, str]] = None) -> list[tuple[Any, Any, Optional[int]]]:
    """Run the fixture once: the chats it runs, then those it builds without running."""
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        return _run_fixture(path, argv, driver)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_fixture(path: Path, argv: list[str], driver: Optional[str]) -> list[tuple[Any, Any, Optional[int]]]:
    import asyncio

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")  # agents build their model clients; nothing calls them
    rec = _Recorder(str(path))
    _patch(rec)
    # the fixture is `__main__` while it runs and is read, as `python FIXTURE.py` makes it (pydantic
    # resolves the annotations of its tools through sys.modules[function.__module__])
    main = types.ModuleType("__main__")
    main.__file__ = str(path)
    sys.modules["__main__"] = main
    namespace = main.__dict__
    sys.argv = [str(path), *argv]
    program = _program(path)
    # as IPython does for a notebook's cells: the source `inspect` reads functions from
    linecache.cache[str(path)] = (len(program), None, program.splitlines(True), str(path))
    # dont_inherit: not this file's `from __future__ import annotations` (the fixture's tools'
    # annotations must stay objects, as when it runs by itself)
    code = compile(program, str(path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    result = eval(code, namespace)  # noqa: S307 - the test's own fixture, run on purpose
    if asyncio.iscoroutine(result):  # a notebook's top-level await
        asyncio.run(result)
    if driver:
        eval(driver, namespace)  # noqa: S307
    elif not rec.runs and callable(namespace.get("main")):  # the program's entry point, not called at import
        out = namespace["main"]()
        if asyncio.iscoroutine(out):
            asyncio.run(out)
    runs = list(rec.runs)
    ran = {id(getattr(o, "groupchat", o)) for o, _, _ in runs}
    runs += [(rec.managers.get(id(o), o), None, None) for o in rec.built if id(o) not in ran]
    return runs


def _body(text: str, name: str) -> list[str]:
    """Block `name` without its name (blocks are compared by what they say, not what they are called)."""
    lines = _block(text, name)
    return [f"workflow _{lines[0][len('workflow ' + name):]}", *lines[1:]] if lines else []


def compare_classic(path: Path) -> dict:
    """{"file", "static": [{"name", "body", "run_time"}], "live": [{"how", "body"}], "problems": [...]}."""
    from turnflow.migrate import migrate

    static = migrate(path.read_text(encoding="utf-8"), path.name)
    if static.family not in ("classic", "ag2-patterns"):  # AgentChat: compared in-process (compare())
        return {"file": path.name, "family": static.family}
    blocks = [{"name": t.name, "body": _body(static.text, t.name),
               "run_time": bool(t.run_time) or any(s.provenance.kind == "run_time" for s in t.statements)}
              for t in static.teams]
    live: list[dict] = []
    this = sys.modules["__main__"]
    try:
        _live_chats(path, live)
    finally:
        sys.modules["__main__"] = this
    return {"file": path.name, "static": blocks, "live": live, "problems": problems(blocks, live)}


def _live_chats(path: Path, live: list[dict]) -> None:
    from turnflow.migrate.live_objects import from_object

    for argv, driver, env in DRIVERS.get(path.name, [([], None, {})]):
        for obj, initiator, rounds in run_fixture(path, argv, driver, env):
            text, _ = from_object(obj, name="chat", initiator=initiator, max_rounds=rounds)
            how = " ".join([*(f"{k}={v}" for k, v in env.items()), *argv, driver or ""]).strip()
            body = _body(text, "chat")
            if all(x["body"] != body for x in live):  # variants that build the same chat count once
                live.append({"how": how, "body": body})


def problems(static: list[dict], live: list[dict]) -> list[str]:
    """What differs: a static block claimed exact that no live chat equals, a live chat no static
    block equals (unless a TF410 block stands for its variant), a TF410 block no variant equals."""
    out = []
    bodies = [x["body"] for x in live]
    for block in static:
        if block["body"] not in bodies:
            kind = "a TF410 block (one branch) that no run of the program builds" if block["run_time"] \
                else "a static block that no live chat equals"
            out.append(f"{kind}: {block['name']}")
    exact = [b["body"] for b in static]
    variants = any(b["run_time"] for b in static)
    for chat in live:
        if chat["body"] not in exact and not variants:
            out.append(f"a live chat ({chat['how'] or 'as the program runs'}) that no static block equals")
    return out


def one_ssl_context(monkeypatch) -> None:
    """In-process (the AgentChat tests): as `_one_ssl_context` below, undone after the test by
    pytest's `monkeypatch`."""
    import ssl

    context = ssl.create_default_context()
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: context)


def _one_ssl_context() -> None:
    """Every model client the fixtures build gets one shared SSL context: no model is called, and
    loading the CA bundle once per agent (40 ms) was half of a run's time."""
    import ssl

    context = ssl.create_default_context()
    ssl.create_default_context = lambda *a, **k: context  # type: ignore[assignment]


if __name__ == "__main__":
    _one_ssl_context()
    # the test's own environment after this one's, for an interpreter named by
    # TURNFLOW_AG2_CLASSIC_PYTHON that lacks turnflow's dependencies (what `turnflow.migrate`
    # imports). Only then: appended whole, its optional model SDKs (anthropic, ...) were imported
    # by the classic package as well, a fifth of a run; the fixtures configure OpenAI models only
    import importlib.util

    if not all(importlib.util.find_spec(m) for m in ("lark", "pydantic", "yaml")):
        sys.path.extend(p for p in os.environ.get("TURNFLOW_LIVE_FALLBACK_PATH", "").split(os.pathsep) if p)
    for arg in sys.argv[1:]:
        fixture = Path(arg).resolve()
        try:
            row = compare_classic(fixture)
        except BaseException as exc:  # noqa: BLE001 - reported per fixture (argparse exits)
            row = {"file": fixture.name, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(row), flush=True)
