"""`turnflow migrate`: front ends that turn existing orchestration into a `.flow` AST, by family
(each family's reader lives in its framework's folder, `turnflow/frameworks/<name>/reader*.py`):

- `classic`: AutoGen 0.2 / AG2 ≤ 0.9 `GroupChat` in a Python source (`frameworks/ag2/reader_groupchat.py`);
- `ag2-patterns`: AG2 group patterns (`DefaultPattern`, handoffs, ...) in a Python source
  (`frameworks/ag2/reader_patterns.py`);
- `autogen`: AutoGen 0.4+ team component JSON (`dump_component()`, Studio and gallery files:
  `frameworks/autogen/reader_json.py`) or teams built in Python (`frameworks/autogen/reader_python.py`);
- `compiled`: a module `turnflow compile --target langgraph|autogen` wrote (the round trip: `compiled.py`).

Each front end reads its input without importing or running it and returns a
`Migration`: the printed flow, its AST and the TF4xx diagnostics (positions in
the input). `migrate(text, path, family=None)` detects the family from the content.
"""

from __future__ import annotations

from typing import Optional

from turnflow.migrate.common import MigrateError, Migration, Pos, fail
from turnflow.migrate.pystatic import framework_aliases  # `from autogen import GroupChat as GC`
from turnflow.source import SourceText

FAMILIES = ("classic", "ag2-patterns", "autogen", "compiled")

__all__ = ["migrate", "detect", "from_object", "FAMILIES", "Migration", "MigrateError"]


def from_object(obj, name: Optional[str] = None, initiator=None, max_rounds: Optional[int] = None,
                path: str = "<object>"):
    """`(flow_text, notes)` for a live GroupChat / GroupChatManager, AG2 group pattern or AutoGen
    AgentChat team: read from the object itself (see `turnflow.migrate.live_objects`)."""
    from turnflow.migrate.live_objects import from_object as live

    return live(obj, name=name, initiator=initiator, max_rounds=max_rounds, path=path)

_AG2_MARKERS = ("DefaultPattern(", "AutoPattern(", "RoundRobinPattern(", "RandomPattern(", "ManualPattern(",
                "initiate_group_chat(", "run_group_chat(", ".handoffs.", "initiate_swarm_chat(", "register_hand_off(")
_AUTOGEN_TEAMS = {"RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow", "MagenticOneGroupChat"}
_AG2_BUILDS = {"DefaultPattern", "AutoPattern", "RoundRobinPattern", "RandomPattern", "ManualPattern",
               "initiate_swarm_chat", "a_initiate_swarm_chat", "register_hand_off", "run_swarm", "a_run_swarm"}
_WHAT = {"classic": "a classic `GroupChat`", "ag2-patterns": "an AG2 group pattern",
         "autogen": "an AutoGen 0.4+ team", "compiled": "a module `turnflow compile --target` wrote"}


def _is_json(text: str) -> bool:
    stripped = text.lstrip("\ufeff \t\r\n")
    return stripped.startswith("{") or stripped.startswith("[")


def builds(text: str) -> list[str]:
    """The families whose objects a Python file *builds* (calls), not imports, most specific first."""
    import ast as pyast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: set[str] = set()
    handoffs = aliased = False
    groupchat_classes = {"GroupChat"}
    for node in pyast.walk(tree):
        if isinstance(node, pyast.ImportFrom):
            aliased = aliased or any(a.asname for a in node.names)
        if isinstance(node, pyast.ClassDef) and any(
                (b.id if isinstance(b, pyast.Name) else getattr(b, "attr", "")) == "GroupChat" for b in node.bases):
            groupchat_classes.add(node.name)
        if isinstance(node, pyast.Call):
            f = node.func
            names.add(f.id if isinstance(f, pyast.Name) else f.attr if isinstance(f, pyast.Attribute) else "")
            if isinstance(f, pyast.Attribute) and isinstance(f.value, pyast.Attribute) and f.value.attr == "handoffs":
                handoffs = True
    if aliased:  # `from autogen import GroupChat as GC`: GC(...) builds a GroupChat
        aliases = framework_aliases(tree)
        names = {aliases.get(n, n) for n in names}
    return _families(names, handoffs, groupchat_classes)


def _families(names: set[str], handoffs: bool, groupchat_classes: set[str]) -> list[str]:
    """The families the called names build, most specific first."""
    out = []
    if names & _AUTOGEN_TEAMS:
        out.append("autogen")
    if names & _AG2_BUILDS or handoffs or ({"initiate_group_chat", "run_group_chat", "a_initiate_group_chat",
                                            "a_run_group_chat"} & names):
        out.append("ag2-patterns")
    if names & groupchat_classes:
        out.append("classic")
    return out


_LANGGRAPH_BUILDERS = {"StateGraph", "MessageGraph"}
_LANGGRAPH_WHY = ("this file builds a LangGraph `{0}`, which `turnflow migrate` does not read: it reads AG2 and "
                  "AutoGen orchestration, and LangGraph only in a module `turnflow compile --target langgraph` wrote")


def _langgraph_builder(text: str) -> Optional[tuple[str, Pos]]:
    """A hand-written LangGraph graph: the class it builds and where (`StateGraph(...)`), or None."""
    import ast as pyast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines()
    for node in pyast.walk(tree):
        if isinstance(node, pyast.Call):
            f = node.func
            name = f.id if isinstance(f, pyast.Name) else f.attr if isinstance(f, pyast.Attribute) else ""
            if name in _LANGGRAPH_BUILDERS:
                def col(line_no: int, offset: int) -> int:
                    line = lines[line_no - 1] if line_no <= len(lines) else ""
                    return len(line.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1
                end_line = node.end_lineno or node.lineno
                return name, Pos(node.lineno, col(node.lineno, node.col_offset), end_line,
                                 col(end_line, node.end_col_offset or 0))
    return None


def detect(text: str) -> Optional[str]:
    """The input family from what the content builds (JSON → autogen), or None."""
    if _is_json(text):
        from turnflow.migrate import notebook

        cells = notebook.extract(text, "<detect>", SourceText(text, "<detect>"))
        return detect(cells[0]) if cells is not None else "autogen"
    from turnflow.migrate.compiled import is_compiled

    if is_compiled(text):  # before the builders: the autogen target's module builds a SelectorGroupChat
        return "compiled"
    found = builds(text)
    if found:
        return found[0]
    # not parseable as Python: the markers decide (the front end then reports the syntax error)
    if any(m in text for m in _AG2_MARKERS):
        return "ag2-patterns"
    if any(f"{t}(" in text for t in _AUTOGEN_TEAMS):
        return "autogen"
    if "GroupChat(" in text:
        return "classic"
    return None


def _suggestion(text: str, family: str) -> str:
    """When the front end for `family` finds nothing: what the file does build, as a --from hint."""
    if _is_json(text):
        return "" if family == "autogen" else " (this file is JSON: an AutoGen team component; try --from autogen)"
    others = [f for f in builds(text) if f != family]
    if not others:
        graph = _langgraph_builder(text) if family != "compiled" else None
        return f" ({_LANGGRAPH_WHY.format(graph[0])})" if graph is not None else ""
    return f" (this file builds {_WHAT[others[0]]}: try --from {others[0]})"


def migrate(text: str, path: str = "<string>", family: Optional[str] = None) -> Migration:
    """Migrate one input; raises `MigrateError` (TF401) when it cannot be migrated."""
    if text.startswith("\ufeff"):  # a byte order mark is invisible: columns count from after it
        text = text[1:]
    src = SourceText(text, path)
    forced = family is not None
    if _is_json(text):
        from turnflow.migrate import notebook

        cells = notebook.extract(text, path, src)
        if cells is not None:  # a Jupyter notebook: its code cells, positions in the notebook
            return _notebook(cells, path, src, family, forced)
    family = family or detect(text)
    graph = _langgraph_builder(text) if family is None else None
    if graph is not None:
        raise fail("TF401", _LANGGRAPH_WHY.format(graph[0]), graph[1], path, src)
    if family is None:
        from turnflow.migrate.pyread import parse_module

        parse_module(text, path, src)  # a file that is not Python: its syntax error, where it is
        raise fail("TF401", "cannot tell what this file is: expected a Python source with a `GroupChat(...)` or "
                   "an AG2 group pattern, or an AutoGen team component JSON (use --from to say which)",
                   Pos(1, 1), path, src)
    try:
        result = _run(text, path, src, family)
        return result if forced else _other_families(text, path, src, family, result)
    except MigrateError as err:
        first = err.diagnostics[0]
        if "nothing to migrate" in first.message or (forced and "syntax error" in first.message):
            hint = _suggestion(text, family)
            if hint:
                from dataclasses import replace

                err.diagnostics[0] = replace(first, message=first.message + hint)
        raise


_FAMILY_CALLS = {"autogen": _AUTOGEN_TEAMS, "classic": {"GroupChat"},
                 "ag2-patterns": _AG2_BUILDS | {"initiate_group_chat", "run_group_chat", "a_initiate_group_chat",
                                                "a_run_group_chat"}}


def _other_families(text: str, path: str, src: SourceText, family: str, result: Migration) -> Migration:
    """A file that builds chats of two families (an AG2 pattern and a classic `GroupChat` run as its
    nested chat): the front end of the first migrates its own only. Each other family gets a TF409 at
    its first call, naming the `--from` that migrates it, and the same words at the top of the flow."""
    import ast as pyast
    from dataclasses import replace

    from turnflow.migrate.common import diagnostic, input_where
    from turnflow.migrate.pyread import pos

    if family not in _FAMILY_CALLS:  # a module `turnflow compile` wrote is read back whole (its team included)
        return result
    others = [f for f in builds(text) if f != family]
    if not others:
        return result
    tree = pyast.parse(text)
    aliases = framework_aliases(tree)
    notes, comments = [], []
    for other in others:
        names = _FAMILY_CALLS[other]
        call = min((n for n in pyast.walk(tree) if isinstance(n, pyast.Call)
                    and aliases.get(_called(n), _called(n)) in names | ({"GroupChat"} if other == "classic" else set())),
                   key=lambda n: (n.lineno, n.col_offset), default=None)
        # the first call that builds it (a GroupChat subclass of the file, `x.handoffs.<method>(...)`: the top)
        at = pos(call) if call is not None else Pos(1, 1)
        message = (f"this file also builds {_WHAT[other]}, which the {family} front end does not migrate: this "
                   f"flow leaves it out; `turnflow migrate --from {other}` migrates it")
        notes.append(diagnostic("TF409", message, at, path, src))
        comments.append(f"# TF409: {message} (input {input_where(at)})")
    head = "\n".join("\n".join(_wrap(c)) for c in comments) + "\n"
    return replace(result, text=head + result.text, diagnostics=notes + list(result.diagnostics))


def _wrap(comment: str) -> list[str]:
    import textwrap

    return textwrap.wrap(comment, 100, subsequent_indent="#   ", break_long_words=False, break_on_hyphens=False)


def _called(node) -> str:
    import ast as pyast

    f = node.func
    return f.id if isinstance(f, pyast.Name) else f.attr if isinstance(f, pyast.Attribute) else ""


def _notebook(cells, path: str, src: SourceText, family: Optional[str], forced: bool) -> Migration:
    """Migrate a notebook's code cells (`notebook.Cells`); each diagnostic also says its cell and
    the line in it (`notebook.relocate`)."""
    from dataclasses import replace

    from turnflow.migrate import common, notebook, pyread

    code, where = cells.code, cells.where
    family = family or detect(code)
    pyread.LINE_MAP[:] = where
    common.NOTEBOOK[:] = [notebook.Locator(cells)]
    no_chat = family is None or family == "autogen" and not builds(code)
    try:
        if no_chat:  # code cells that are not Python: the syntax error, in its cell
            pyread.parse_module(code, path, src)
        elif family == "autogen":
            from turnflow.frameworks.autogen import reader_python as autogen_py

            result = autogen_py.migrate(code, path, src)
        else:
            result = _run(code, path, src, family or "classic")
            if not forced:
                result = _other_families(code, path, src, family or "classic", result)
    except MigrateError as err:
        first = err.diagnostics[0]
        if "nothing to migrate" in first.message and family is not None:
            hint = _suggestion(code, family)
            if hint:
                err.diagnostics[0] = replace(first, message=first.message + hint)
        raise MigrateError(notebook.relocate(err.diagnostics, cells, path)) from None
    finally:
        pyread.LINE_MAP[:] = []
        common.NOTEBOOK[:] = []
    if no_chat:
        raise fail("TF401", "this notebook's code cells build no group chat, AG2 pattern or AutoGen team "
                   "(use --from to say which)", Pos(1, 1), path, src)
    return replace(result, diagnostics=notebook.relocate(result.diagnostics, cells, path))


def _run(text: str, path: str, src: SourceText, family: str) -> Migration:
    if family == "classic":
        from turnflow.frameworks.ag2 import reader_groupchat as classic

        return classic.migrate(text, path, src)
    if family == "ag2-patterns":
        from turnflow.frameworks.ag2 import reader_patterns as ag2_patterns

        return ag2_patterns.migrate(text, path, src)
    if family == "autogen":
        if _is_json(text):
            from turnflow.frameworks.autogen import reader_json as autogen

            return autogen.migrate(text, path, src)
        from turnflow.frameworks.autogen import reader_python as autogen_py

        return autogen_py.migrate(text, path, src)
    if family == "compiled":
        from turnflow.migrate import compiled

        return compiled.migrate(text, path, src)
    raise ValueError(f"unknown family {family!r}")
