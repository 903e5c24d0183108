"""Reading Python sources with `ast` only — the user's code is never imported
or executed. Shared by the readers of Python sources (`turnflow/frameworks/ag2/reader_*.py`,
`turnflow/frameworks/autogen/reader_python.py`)."""

from __future__ import annotations

import ast as pyast
import copy
import json
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Union

from turnflow.migrate.common import Pos, fail, input_where, line_ref, lines_ref
from turnflow.migrate.pystatic import callee, sequence
from turnflow.source import SourceText
from turnflow.diagnostics.listing import bounded

_NOT = object()  # "not a literal"


_LINES: list[str] = []  # the lines of the module being read (ast columns are UTF-8 byte offsets)
# a notebook's code cells: each Python line's (line, column) in the notebook file (empty: identity)
LINE_MAP: list[tuple[int, int]] = []


def _mapped(line: int, column: int) -> tuple[int, int]:
    if LINE_MAP and 1 <= line <= len(LINE_MAP):
        json_line, json_col = LINE_MAP[line - 1]
        return json_line, json_col + column - 1
    return line, column


def _char_col(line: int, byte_col: int) -> int:
    if 1 <= line <= len(_LINES):
        text = _LINES[line - 1]
        if not text.isascii():
            return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
    return byte_col


def pos(node: Optional[pyast.AST]) -> Pos:
    """The position of a node (the start of the file for None or a node without one)."""
    line = getattr(node, "lineno", 1) or 1
    col = _char_col(line, getattr(node, "col_offset", 0) or 0) + 1
    end_line = getattr(node, "end_lineno", None) or line
    end_off = getattr(node, "end_col_offset", None)
    end_col = (_char_col(end_line, end_off) if end_off is not None else col) + 1
    if end_line == line and end_col <= col:
        end_col = col + 1
    if LINE_MAP:
        line, col = _mapped(line, col)
        end_line, end_col = _mapped(end_line, end_col)
        if (end_line, end_col) <= (line, col):
            end_line, end_col = line, col + 1
    return Pos(line, col, end_line, end_col)


def kwarg(call: Optional[pyast.AST], name: str, index: Optional[int] = None) -> Optional[pyast.AST]:
    """A keyword argument of a call (or the positional one at `index`); None for anything but a call."""
    if not isinstance(call, pyast.Call):
        return None
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if index is not None and len(call.args) > index and not isinstance(call.args[index], pyast.Starred):
        return call.args[index]
    return None


@dataclass
class Module:
    """A parsed module with its simple bindings (`name = expr`, last one wins
    when not inside a loop), function definitions and classes."""

    tree: pyast.Module
    src: SourceText
    path: str
    bindings: dict[str, pyast.AST] = field(default_factory=dict)
    functions: dict[str, pyast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, pyast.ClassDef] = field(default_factory=dict)
    in_loop: set[int] = field(default_factory=set)  # ids of nodes inside a loop or comprehension
    items: dict[str, list[tuple[pyast.AST, pyast.AST]]] = field(default_factory=dict)  # `d[k] = v`
    assigned: dict[int, str] = field(default_factory=dict)  # id(value) -> the name it is assigned to
    inlined: set[str] = field(default_factory=set)  # functions inlined where they are called
    # every binding of a name, in source order, and where each expression is used (flow-sensitive resolution)
    sites: dict[str, list["Site"]] = field(default_factory=dict)
    uses: dict[int, "Where"] = field(default_factory=dict)
    branches: dict[int, pyast.stmt] = field(default_factory=dict)  # id -> an if / try / match statement
    # the bindings decided at run time that resolution went through, since `take_choices()`
    choices: dict[tuple[str, int], "Choice"] = field(default_factory=dict)
    parent: Optional["Module"] = None  # the whole module, for a scope's view
    # in a function's (class's) view: the order of its first own statement, after the module's top
    # level; its body runs when it is called, so a name the top level binds twice is not known there
    own_from: int = 0
    # a module name a function binds again (`global x; x = ...`): the first such statement
    global_stores: dict[str, pyast.stmt] = field(default_factory=dict)

    # -- evaluation of literals -------------------------------------------
    def resolve(self, node: Optional[pyast.AST], depth: int = 0) -> Optional[pyast.AST]:
        """Follow `Name` (and `self.x`) → the expression bound to it where it is used (the binding
        that reaches the use in source order), `d["k"]` / `xs[0]` of a literal container, and
        `a if c else b` (a choice made at run time: recorded, see `take_choices`)."""
        while depth < 8 and node is not None:
            depth += 1
            if isinstance(node, pyast.IfExp):
                self._choose_ifexp(node)
                node = node.body
                continue
            if isinstance(node, pyast.Subscript):
                item = self._item(node)
                if item is None:
                    break
                node = item
                continue
            key = _binding_key(node)
            if key is None or key not in self.bindings:
                break
            node = self._reaching(key, node)
        return node

    # -- flow-sensitive bindings -------------------------------------------------------------
    def _reaching(self, key: str, use: pyast.AST) -> pyast.AST:
        """The value bound to `key` that reaches `use`: the last binding before it (outside loops
        when there is one), else the last binding of all (a use in a function body runs later)."""
        sites = self.sites.get(key)
        if not sites:
            return self.bindings[key]
        where = self.uses.get(id(use))
        before = sites
        if where is not None and not where.in_def:
            before = [s for s in sites if s.order < where.order] or sites
        straight = [s for s in before if not s.loop]
        site = straight[-1] if straight else before[0]
        upto = self._runs_later(where, site)
        if upto is not None and len({id(s.value) for s in straight if not s.chain and s.order < upto}) > 1:
            k = (key, -1)  # a function body sees the binding current when it runs, not known statically
            if k not in self.choices:
                self.choices[k] = Choice(key, site.stmt, "rebound", site, [s for s in straight if s is not site],
                                         True, None)
        self._note_choice(key, site, where, before)
        self._note_global(key, site)
        return site.value

    def _note_global(self, key: str, site: "Site") -> None:
        """`key` is bound again by a function that declares it `global`, whenever it runs."""
        rebinding = (self.parent or self).global_stores.get(key)
        if rebinding is not None and (key, -2) not in self.choices:  # -2: bound again by a function
            self.choices[(key, -2)] = Choice(key, rebinding, "global", site, [], True, None)

    def _runs_later(self, where: Optional["Where"], site: "Site") -> Optional[int]:
        """When the use runs when a function is called, so that any binding before it may be the one
        it sees: the order below which those bindings are (in a def or lambda: all of them; in a
        function's own body, a scope's view, reading a top-level binding: the top level's); else None."""
        if where is None or where.in_def:
            return 1 << 62
        if self.own_from and where.order >= self.own_from and site.order < self.own_from:
            return self.own_from
        return None

    def _note_choice(self, key: str, site: "Site", where: Optional["Where"], before: list["Site"]) -> None:
        chain = where.chain if where is not None and not where.in_def else ()
        for i, (branch_id, _label) in enumerate(site.chain):
            if i < len(chain) and chain[i] == site.chain[i]:
                continue  # the use is in the same branch: the binding is certain there
            if (key, branch_id) not in self.choices:
                self.choices[(key, branch_id)] = self._choice(key, site, i, before)
            return

    def _choice(self, key: str, site: "Site", i: int, before: list["Site"]) -> "Choice":
        """`site` binds `key` in a branch of the statement at `site.chain[i]`: the other branches'
        bindings, whether every path binds, the binding before the statement."""
        branch_id = site.chain[i][0]
        outside = site.chain[:i]
        inside = [s for s in before if len(s.chain) > i and s.chain[:i] == outside and s.chain[i][0] == branch_id]
        last: dict[tuple, Site] = {}
        for s in inside:
            last[s.chain[i:]] = s
        every = _covered([s.chain[i:] for s in inside if not s.loop], self.branches)
        prior = [s for s in before if s.order < site.order and not s.loop
                 and not any(c[0] == branch_id for c in s.chain)]
        return Choice(key, self.branches[branch_id], site.chain[i][1], site, [s for s in last.values() if s is not site],
                      every, None if every or not prior else prior[-1])

    def note_guarded(self, node: pyast.AST, anchor: Optional[pyast.AST]) -> None:
        """`node` (a call or statement configuring the chat `anchor` builds) runs only in a branch or a
        loop that `anchor` is not in: which configuration the chat gets is decided at run time. Recorded
        as a choice (the flow reads it as if it always ran), see `take_choices`."""
        w = self.uses.get(id(node))
        if w is None or w.in_def:
            return
        a = self.uses.get(id(anchor)) if anchor is not None else None
        achain, aloops = (a.chain, a.loops) if a is not None else ((), ())
        guards = []
        for i, (branch_id, label) in enumerate(w.chain):
            if i < len(achain) and achain[i] == (branch_id, label) or _main_guard(self.branches[branch_id], label):
                continue
            guards.append((self.branches[branch_id], label))
            break
        guards += [(loop, "loop") for loop in w.loops if not any(loop is x for x in aloops)][:1]
        if not guards:
            return
        guard = min(guards, key=lambda g: (getattr(g[0], "lineno", 0), getattr(g[0], "col_offset", 0)))
        k = ("guarded", id(node))
        if k not in self.choices:
            self.choices[k] = Choice(None, node, "guarded", None, [], False, None, guard)

    def _choose_ifexp(self, node: pyast.IfExp) -> None:
        k = (pyast.unparse(node)[:60], id(node))
        if k not in self.choices:
            self.choices[k] = Choice(None, node, "if", None, [], True, None)

    def take_choices(self) -> list["Choice"]:
        """The run-time choices resolution went through since the last call (source order)."""
        out = sorted(self.choices.values(), key=lambda c: (getattr(c.stmt, "lineno", 0), c.key or ""))
        self.choices.clear()
        return out

    def _item(self, node: pyast.Subscript) -> Optional[pyast.AST]:
        """`d["k"]`, `xs[0]` where `d` / `xs` is a dict / list / tuple literal in scope that is not
        changed item by item (`d[k] = v`): the element's expression; None otherwise."""
        base_node = node.value
        if isinstance(base_node, pyast.Name) and self.items.get(base_node.id):
            return None
        base = self.resolve(base_node)
        key = self.literal(node.slice)
        if not is_literal(key):
            return None
        if isinstance(base, pyast.Dict):
            found = None
            for k, v in zip(base.keys, base.values):
                if k is None:
                    return None  # `**other`: not known
                kv = self.literal(k)
                if not is_literal(kv):
                    return None
                if kv == key:
                    found = v
            return found
        if isinstance(base, (pyast.List, pyast.Tuple)) and isinstance(key, int) and not isinstance(key, bool):
            elts = self.elements(base)
            if elts is not None and -len(elts) <= key < len(elts):
                return elts[key]
        return None

    def elements(self, node: Optional[pyast.AST]) -> Optional[list[pyast.AST]]:
        """The elements of a literal list/tuple (through names, `[*xs, y]`, `xs + [y]`), or None."""
        return _elements(self, node, 0)

    def literal(self, node: Optional[pyast.AST]) -> Any:
        """The value of a literal expression (through names), or _NOT."""
        node = self.resolve(node)
        if node is None:
            return _NOT
        try:
            return pyast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, pyast.JoinedStr):  # f"agent_{i}" with `i` known (an unrolled loop)
            parts = []
            for v in node.values:
                if isinstance(v, pyast.Constant) and isinstance(v.value, str):
                    parts.append(v.value)
                    continue
                if not isinstance(v, pyast.FormattedValue) or v.format_spec is not None or v.conversion not in (-1, 115):
                    return _NOT
                inner = self.literal(v.value)
                if not isinstance(inner, (str, int)) or isinstance(inner, bool):
                    return _NOT
                parts.append(str(inner))
            return "".join(parts)
        return _NOT

    def string(self, node: Optional[pyast.AST]) -> Optional[str]:
        value = self.literal(node)
        return value if isinstance(value, str) else None


@dataclass
class Site:
    """One binding of a name: its order among the statements, its value, the branches it is in."""

    order: int
    value: pyast.AST
    chain: tuple  # ((id of an if / try / match statement, branch label), ...), outermost first
    loop: bool
    stmt: pyast.stmt


@dataclass
class Where:
    """Where an expression is used: the order of its statement, its branches, inside a def/lambda."""

    order: int
    chain: tuple
    in_def: bool
    loops: tuple = ()  # the `for` / `while` statements around it (a `while True:` excepted), outermost first


@dataclass
class Choice:
    """A binding that the program decides at run time: `key` is bound in `label` of `stmt` (an
    `if`, `try` or `match`), and differently in `alternatives` (other branches) or, when not every
    branch binds it, by `fallback` (the binding before `stmt`; None: unbound there). For
    `a if c else b` (`key` None), `stmt` is the expression and the flow follows `a`."""

    key: Optional[str]
    stmt: pyast.AST
    label: str
    chosen: Optional[Site]
    alternatives: list[Site]
    every: bool
    fallback: Optional[Site]
    guard: Optional[tuple] = None  # label "guarded": (the `if` / `try` / `match` / loop, branch label)


def _branch_labels(stmt: pyast.AST) -> set[str]:
    if isinstance(stmt, pyast.Try):  # the path without an exception binds nothing in a handler
        return {"try"} | {f"except{i}" for i in range(len(stmt.handlers))}
    if isinstance(stmt, pyast.Match):
        return {f"case{i}" for i in range(len(stmt.cases))}
    return {"if", "else"}


def _covered(chains: list[tuple], branches: dict[int, pyast.stmt]) -> bool:
    """Whether every path through the branching statement the chains start with binds: each of its
    branches holds a binding directly, or a nested branching statement covered the same way."""
    if not chains:
        return False
    stmt = branches[chains[0][0][0]]
    for label in _branch_labels(stmt):
        sub = [c[1:] for c in chains if c[0][1] == label]
        if not sub:
            return False
        if any(not c for c in sub):
            continue
        nested: dict[int, list[tuple]] = {}
        for c in sub:
            nested.setdefault(c[0][0], []).append(c)
        if not any(_covered(cs, branches) for cs in nested.values()):
            return False
    return True


def _binding_key(node: Optional[pyast.AST]) -> Optional[str]:
    if isinstance(node, pyast.Name):
        return node.id
    if isinstance(node, pyast.Attribute) and isinstance(node.value, pyast.Name) and node.value.id in ("self", "cls"):
        return f"{node.value.id}.{node.attr}"
    return None


def _elements(mod: "Module", node: Optional[pyast.AST], depth: int) -> Optional[list[pyast.AST]]:
    node = mod.resolve(node)
    if depth > 16 or node is None:
        return None
    if isinstance(node, pyast.Call) and callee(node) in ("list", "tuple") and len(node.args) == 1 \
            and not node.keywords:
        return _elements(mod, node.args[0], depth + 1)
    return sequence(node, lambda n: _elements(mod, n, depth + 1))


def is_literal(value: Any) -> bool:
    return value is not _NOT


def parse_module(text: str, path: str, src: SourceText) -> Module:
    import warnings

    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for "\d" in the user's strings
            warnings.simplefilter("ignore")
            # top-level `await` (notebooks, scripts run with asyncio's REPL) is read like any statement
            tree = compile(text, path, "exec", flags=pyast.PyCF_ONLY_AST | pyast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                           dont_inherit=True)
    except SyntaxError as err:
        line, col = _mapped(err.lineno or 1, err.offset or 1)
        raise fail("TF401", f"Python syntax error: {err.msg}", Pos(line, col), path, src) from None
    except ValueError as err:
        raise fail("TF401", f"cannot read the Python source: {err}", Pos(1, 1), path, src) from None
    except (RecursionError, MemoryError):  # CPython's parser: an expression nested past its limits
        raise fail("TF401", "the Python source is nested too deeply to read (Python's own parser gave up)",
                   Pos(1, 1), path, src) from None
    _LINES[:] = text.split("\n")
    from turnflow.migrate.pystatic import rewrite

    try:
        tree, rw = rewrite(tree)
    except RecursionError:
        raise fail("TF401", "the Python source is nested too deeply to read", Pos(1, 1), path, src) from None
    mod = Module(tree=tree, src=src, path=path)
    mod.inlined = set(rw.inlined)
    mod.global_stores = _global_stores(tree)
    _index(mod, tree, loop=False)
    return mod


def statements(node: pyast.AST) -> Iterator[pyast.stmt]:
    """Every statement inside `node` (function and class bodies too), without walking expressions."""
    for child in pyast.iter_child_nodes(node):
        if isinstance(child, pyast.stmt):
            yield child
            yield from statements(child)
        elif isinstance(child, (pyast.excepthandler, pyast.match_case)):
            yield from statements(child)


def _global_stores(tree: pyast.AST) -> dict[str, pyast.stmt]:
    """The module names a function declares `global` and binds, each with its first binding there."""
    out: dict[str, pyast.stmt] = {}
    for fn in statements(tree):
        if not isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
            continue
        declared = {x for n in pyast.walk(fn) if isinstance(n, pyast.Global) for x in n.names}
        for st in pyast.walk(fn) if declared else ():
            if isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.AnnAssign)):
                targets = st.targets if isinstance(st, pyast.Assign) else [st.target]
                for t in targets:
                    for n in pyast.walk(t):
                        if isinstance(n, pyast.Name) and n.id in declared:
                            out.setdefault(n.id, st)
    return out


class Scope:
    """One place orchestration is built: the module's top level, a function, or a class.
    `mod` (built on first use) sees the module's top-level statements plus the scope's own
    body (names resolve in the scope first, then the module); `own_calls` are the calls
    written in the scope itself, in source order."""

    def __init__(self, name: Optional[str], parent: Module, body: Optional[list], methods: dict,
                 own_calls: list[pyast.Call], node: Optional[pyast.AST] = None):
        self.name, self.node = name, node
        self._parent, self._body, self._methods = parent, body, methods
        self.own_calls = own_calls
        self.own = {id(c) for c in own_calls}
        self.top_len = 0  # how many of `body`'s statements are the module's top level (then the scope's own)
        self._mod: Optional[Module] = None

    @property
    def mod(self) -> "Module":
        if self._mod is None:
            self._mod = self._parent if self._body is None else \
                _view(self._parent, self._body, self._methods, self.top_len)
        return self._mod


_DEFS = (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)


def _own_calls(body: list) -> list[pyast.Call]:
    found = [n for s in body for n in pyast.walk(s) if isinstance(n, pyast.Call)]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def scopes(mod: Module) -> list[Scope]:
    """The module's top level, then each top-level function and class, in source order."""
    top = [s for s in mod.tree.body if not isinstance(s, _DEFS)]
    if len(top) == len(mod.tree.body):
        return [Scope(None, mod, None, {}, _own_calls(top))]
    out = [Scope(None, mod, top, {}, _own_calls(top))]
    for st in mod.tree.body:
        if isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
            if st.name in mod.inlined:
                continue  # a chat builder: its chats are those of its call sites
            body = list(st.body)
            methods: dict[str, Any] = {}
        elif isinstance(st, pyast.ClassDef):
            methods = {s.name: s for s in st.body if isinstance(s, (pyast.FunctionDef, pyast.AsyncFunctionDef))}
            body = _instantiated_once(mod, st, top, methods.get("__init__"))
            body += [s for s in st.body if not isinstance(s, _DEFS)]
            for m in methods.values():
                body += m.body
        else:
            continue
        own = _own_calls(body)
        if own:
            scope = Scope(st.name, mod, top + body, methods, own, st)
            scope.top_len = len(top)
            out.append(scope)
    return out


def _instantiated_once(mod: Module, cls: pyast.ClassDef, top: list[pyast.stmt], init: Any) -> list[pyast.stmt]:
    """`param = argument` for each parameter of `__init__` when the module's top level builds the
    class exactly once (not in a loop) with arguments that bind to it: inside the class the
    parameters hold that call's arguments (`self.agents = agents` is then the list written there)."""
    made = [c for c in _own_calls(top) if isinstance(c.func, pyast.Name) and c.func.id == cls.name]
    if init is None or len(made) != 1 or id(made[0]) in mod.in_loop or _rebound_after(made[0], top):
        return []
    env = _init_env(init.args, made[0])
    out: list[pyast.stmt] = []
    for name, value in (env or {}).items():
        st = pyast.Assign(targets=[pyast.Name(id=name, ctx=pyast.Store())], value=value)  # type: ignore[arg-type]
        out.append(pyast.copy_location(st, value))
    return out


def _init_env(a: pyast.arguments, call: pyast.Call) -> Optional[dict[str, pyast.AST]]:
    """`__init__`'s parameters (without `self`) bound to `call`'s arguments; None when they do not
    bind plainly (`*args`, `**kwargs`, too many, an unknown keyword)."""
    params = [x.arg for x in a.posonlyargs + a.args][1:]
    if a.vararg is not None or a.kwarg is not None or any(isinstance(x, pyast.Starred) for x in call.args) \
            or len(call.args) > len(params) or any(k.arg is None for k in call.keywords):
        return None
    env: dict[str, pyast.AST] = dict(zip(params, call.args))
    for k in call.keywords:
        if k.arg not in params and k.arg not in [x.arg for x in a.kwonlyargs]:
            return None
        env[k.arg] = k.value
    return env


def _rebound_after(call: pyast.Call, top: list[pyast.stmt]) -> bool:
    """A name the call's arguments use is bound again after it: which binding the class sees
    when it runs is not followed."""
    used = {n.id for arg in [*call.args, *(k.value for k in call.keywords)] for n in pyast.walk(arg)
            if isinstance(n, pyast.Name)}
    for st in top:
        if st.lineno <= call.lineno:
            continue
        for n in pyast.walk(st):
            targets = n.targets if isinstance(n, pyast.Assign) else [n.target] \
                if isinstance(n, (pyast.AugAssign, pyast.AnnAssign)) else []
            if any(isinstance(t, pyast.Name) and t.id in used for t in targets):
                return True
    return False


def _view(mod: Module, body: list[pyast.stmt], methods: dict, top_len: int = 0) -> Module:
    tree = pyast.Module(body=body, type_ignores=[])
    view = Module(tree=tree, src=mod.src, path=mod.path)
    _index(view, tree, loop=False)
    if 0 < top_len < len(body):  # `_index` counts every statement, nested ones too, in this order
        view.own_from = 1 + sum(1 for st in body[:top_len] for n in pyast.walk(st) if isinstance(n, pyast.stmt))
    view.functions = {**mod.functions, **methods, **view.functions}
    view.classes = {**mod.classes, **view.classes}
    view.in_loop = mod.in_loop | view.in_loop
    view.parent = mod
    return view


_LOOPS = (pyast.For, pyast.AsyncFor, pyast.While, pyast.ListComp, pyast.SetComp, pyast.DictComp,
          pyast.GeneratorExp)


class _Walk:
    """The position of the walk in `_index`: the statement counter, the branches, inside a def."""

    def __init__(self) -> None:
        self.order = 0
        self.chain: tuple = ()
        self.in_def = False
        self.loops: tuple = ()


#: statements whose parts are branches (`Module.branches`)
_BRANCHING = (pyast.If, pyast.Try, pyast.Match, *((pyast.TryStar,) if hasattr(pyast, "TryStar") else ()))
#: nodes whose children `_children` places in a branch or a def (the others' children share theirs)
_PLACING = (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda, *_BRANCHING)
#: nodes without child nodes (nothing below them to index)
_LEAVES = (pyast.expr_context, pyast.Constant, pyast.operator, pyast.boolop, pyast.cmpop, pyast.unaryop)


def _index(mod: Module, node: pyast.AST, loop: bool, walk: Optional[_Walk] = None) -> None:
    walk = walk or _Walk()
    if isinstance(node, pyast.Module):
        mod.uses.clear()
    uses, in_loop = mod.uses, mod.in_loop
    child_loop = loop or isinstance(node, _LOOPS)
    repeats = _repeats(node)
    if isinstance(node, _PLACING):
        children: Iterable[tuple[pyast.AST, tuple, bool]] = _children(node, walk)
    else:  # (the common case, without a generator per node)
        chain, in_def = walk.chain, walk.in_def
        children = [(child, chain, in_def) for child in pyast.iter_child_nodes(node)]
    for child, chain, in_def in children:
        outer = (walk.chain, walk.in_def, walk.loops)
        walk.chain, walk.in_def = chain, in_def
        is_stmt = False
        if isinstance(child, pyast.stmt):
            is_stmt = True
            walk.order += 1
            if isinstance(child, _BRANCHING):
                mod.branches[id(child)] = child
            if repeats:
                walk.loops = walk.loops + (node,)
        uses[id(child)] = Where(walk.order, walk.chain, walk.in_def, walk.loops)
        if child_loop:
            in_loop.add(id(child))
        if is_stmt:  # (only statements bind: defs, classes, assignments)
            _bind_child(mod, child, child_loop, walk)
        if not isinstance(child, _LEAVES):
            _index(mod, child, child_loop, walk)
        walk.chain, walk.in_def, walk.loops = outer


def _main_guard(stmt: pyast.AST, label: str) -> bool:
    """The body of `if __name__ == "__main__":`, which a script run (what is migrated) always runs."""
    return label == "if" and isinstance(stmt, pyast.If) and isinstance(stmt.test, pyast.Compare) \
        and pyast.unparse(stmt.test).replace('"', "'") in ("__name__ == '__main__'", "'__main__' == __name__")


def _repeats(node: pyast.AST) -> bool:
    """A loop whose body runs a number of times only the run decides (`while True:` runs it at least once)."""
    if isinstance(node, pyast.While):
        return not (isinstance(node.test, pyast.Constant) and bool(node.test.value))
    return isinstance(node, (pyast.For, pyast.AsyncFor))


def _children(node: pyast.AST, walk: _Walk) -> Iterator[tuple[pyast.AST, tuple, bool]]:
    """The children of `node`, each with the branch chain and def-ness it is in."""
    chain, in_def = walk.chain, walk.in_def
    if isinstance(node, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda)):
        in_def = True
    if isinstance(node, pyast.If):
        yield node.test, chain, in_def
        for st in node.body:
            yield st, chain + ((id(node), "if"),), in_def
        for st in node.orelse:
            yield st, chain + ((id(node), "else"),), in_def
        return
    if isinstance(node, pyast.Try) or type(node).__name__ == "TryStar":
        for st in node.body + node.orelse:  # type: ignore[attr-defined]
            yield st, chain, in_def
        for i, h in enumerate(node.handlers):  # type: ignore[attr-defined]
            yield h, chain + ((id(node), f"except{i}"),), in_def
        for st in node.finalbody:  # type: ignore[attr-defined]
            yield st, chain, in_def
        return
    if isinstance(node, pyast.Match):
        yield node.subject, chain, in_def
        for i, case in enumerate(node.cases):
            yield case, chain + ((id(node), f"case{i}"),), in_def
        return
    for child in pyast.iter_child_nodes(node):
        yield child, chain, in_def


def _site(mod: Module, key: str, value: pyast.AST, loop: bool, walk: _Walk, stmt: pyast.stmt) -> None:
    mod.sites.setdefault(key, []).append(Site(walk.order, value, walk.chain, loop, stmt))


def _bind_child(mod: Module, child: pyast.AST, child_loop: bool, walk: _Walk) -> None:
    if isinstance(child, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
        mod.functions.setdefault(child.name, child)  # type: ignore[arg-type]
        return
    if isinstance(child, pyast.ClassDef):
        mod.classes.setdefault(child.name, child)
        return
    if isinstance(child, pyast.Assign) and len(child.targets) == 1:
        _bind_assign(mod, child, child.targets[0], child_loop, walk)
    elif isinstance(child, pyast.AnnAssign) and _binding_key(child.target) is not None \
            and child.value is not None:
        key = _binding_key(child.target)
        assert key is not None
        mod.bindings[key] = child.value
        _site(mod, key, child.value, child_loop, walk, child)


def _bind_assign(mod: Module, child: pyast.Assign, target: pyast.AST, child_loop: bool, walk: _Walk) -> None:
    """`x = ...` / `self.x = ...` (a binding: last one wins outside loops, and a site), `d[k] = v` (an item)."""
    key = _binding_key(target)
    if key is not None:
        mod.assigned[id(child.value)] = key
        if not child_loop or key not in mod.bindings:
            mod.bindings[key] = child.value
        _site(mod, key, child.value, child_loop, walk, child)
    elif isinstance(target, pyast.Subscript) and isinstance(target.value, pyast.Name):
        mod.items.setdefault(target.value.id, []).append((target.slice, child.value))
        if child_loop:
            mod.in_loop.add(id(target.value))


#: `calls` of each tree still in use: the readers ask for a module's calls several times per
#: migration (a tree is not changed once `parse_module` has read it)
_CALLS: "weakref.WeakKeyDictionary[pyast.AST, list[pyast.Call]]" = weakref.WeakKeyDictionary()


def calls(tree: pyast.AST) -> Iterator[pyast.Call]:
    """Every call in source order."""
    found = _CALLS.get(tree)
    if found is None:
        found = sorted((n for n in pyast.walk(tree) if isinstance(n, pyast.Call)), key=lambda n: (n.lineno, n.col_offset))
        _CALLS[tree] = found
    return iter(found)


def assigned_name(mod: Module, call: pyast.Call) -> Optional[str]:
    """The variable a call is bound to (`x = Call(...)`, `self.x = ...` → "x"), if any."""
    name = mod.assigned.get(id(call))
    return name.split(".", 1)[1] if name is not None and "." in name else name


AGENT_CLASSES = {
    "ConversableAgent", "AssistantAgent", "UserProxyAgent", "RetrieveUserProxyAgent",
    "RetrieveAssistantAgent", "GPTAssistantAgent", "CompressibleAgent", "MultimodalConversableAgent",
    "LLaVAAgent", "MathUserProxyAgent", "QdrantRetrieveUserProxyAgent", "TextAnalyzerAgent",
    "SocietyOfMindAgent", "WebSurferAgent", "CaptainAgent", "ReasoningAgent", "DocAgent",
}
NOT_AGENTS = {"GroupChatManager", "GroupChat", "AgentBuilder"}


def agent_classes(mod: Module) -> set[str]:
    """Known agent classes plus the file's subclasses of them (transitively)."""
    return subclasses(mod, AGENT_CLASSES)


def subclasses(mod: Module, bases: Iterable[str]) -> set[str]:
    """`bases` and the file's classes deriving from one of them (transitively)."""
    known = set(bases)
    changed = True
    while changed:
        changed = False
        for name, cls in mod.classes.items():
            if name not in known and any(callee(b) in known for b in cls.bases):
                known.add(name)
                changed = True
    return known


def is_agent_call(mod: Module, call: pyast.Call, classes: set[str]) -> bool:
    name = callee(call)
    if name in NOT_AGENTS:
        return False
    return name in classes or (name.endswith("Agent") and (kwarg(call, "name", 0) is not None))


def function_def(mod: Module, node: Optional[pyast.AST]):
    """A lambda or a `def` named by `node`."""
    node = mod.resolve(node) if not isinstance(node, pyast.Name) or node.id not in mod.functions else node
    if isinstance(node, pyast.Lambda):
        return node
    if isinstance(node, pyast.Name) and node.id in mod.functions:
        return mod.functions[node.id]
    if isinstance(node, pyast.Attribute) and isinstance(node.value, pyast.Name) \
            and node.value.id in ("self", "cls") and node.attr in mod.functions:
        return mod.functions[node.attr]
    if isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name) and node.func.id in mod.functions:
        from turnflow.migrate.pystatic import closure  # a function returned by a function of the file

        return closure(mod.functions[node.func.id], node)
    return None


@dataclass
class TextTest:
    """What a termination predicate checks, as far as `.flow` can say it."""

    text: Optional[str]
    exact: bool
    how: str  # human words for the approximation


def termination_test(mod: Module, node: Optional[pyast.AST]) -> Optional[TextTest]:
    """Read `is_termination_msg`: a lambda or def testing the message content
    for a marker string. None when it is not a predicate we can see."""
    fn = function_def(mod, node)
    if fn is None:
        return None
    body = [fn.body] if isinstance(fn, pyast.Lambda) else fn.body
    tests: list[TextTest] = []
    lowered = False
    for stmt in body:
        for n in pyast.walk(stmt):
            if isinstance(n, pyast.Call) and callee(n) in ("lower", "upper", "casefold"):
                lowered = True
            tests += _marker_tests(n)
    if not tests:
        return TextTest(None, False, "a predicate")
    # one marker: the first string tested (several markers: the first, approximated)
    first = tests[0]
    exact = first.exact and len({t.text for t in tests}) == 1 and not lowered
    how = first.how
    if lowered:
        how += " on lower/upper-cased text"
    if len({t.text for t in tests}) > 1:
        how += " with several markers"
    return TextTest(first.text, exact, how)


def manager_termination(mod: Module, b: Any, node: pyast.AST, who: str) -> None:
    """The rule for a group manager's `is_termination_msg` (`who`: how the message names the
    manager): `* -> terminate when text contains "MARK"`, TF405 when approximated or dropped."""
    test = termination_test(mod, node)
    if test is None or test.text is None:
        b.note("TF405", f"{who}'s `is_termination_msg` does not test the message text for a marker the "
               "migrator can read; dropped", pos(node))
        return
    if not test.exact:
        b.note("TF405", f"{who}'s `is_termination_msg` uses {test.how}; approximated by "
               f"`text contains {json.dumps(test.text)}`", pos(node))
    b.rule(None, ("terminate", "is_termination_msg"), [("text", test.text)])


def _marker_tests(n: pyast.AST) -> list[TextTest]:
    """The text tests one node of a termination predicate makes: `"X" in ...`, `== "X"`,
    `.find("X") >= 0`, `.endswith("X")` / `.startswith("X")`."""
    if isinstance(n, pyast.Call) and callee(n) in ("endswith", "startswith") and n.args \
            and isinstance(n.args[0], pyast.Constant) and isinstance(n.args[0].value, str):
        return [TextTest(n.args[0].value, False, f"`{callee(n)}`")]
    if not (isinstance(n, pyast.Compare) and len(n.ops) == 1):
        return []
    return _compare_marker(n.left, n.ops[0], n.comparators[0])


def _compare_marker(left: pyast.AST, op: pyast.cmpop, right: pyast.AST) -> list[TextTest]:
    if isinstance(op, pyast.In) and isinstance(left, pyast.Constant) and isinstance(left.value, str):
        return [TextTest(left.value, True, "`in`")]
    if isinstance(op, pyast.Eq):
        return [TextTest(side.value, False, "an `==` test") for side in (left, right)
                if isinstance(side, pyast.Constant) and isinstance(side.value, str) and side.value]
    if isinstance(op, (pyast.GtE, pyast.Gt, pyast.NotEq)) and isinstance(left, pyast.Call) \
            and callee(left) in ("find", "index") and left.args \
            and isinstance(left.args[0], pyast.Constant) and isinstance(left.args[0].value, str):
        return [TextTest(left.args[0].value, True, "`find`")]
    return []


def filled_in_loop(mod: Module, node: Optional[pyast.AST]) -> bool:
    """`xs` is appended to / extended inside a loop the static pass could not unroll, or changed in
    a way it could not fold into a binding (`xs.remove(a)`, `xs[0] = a`, after a branch that changed it)."""
    return _unfolded(mod, node) is not None


# list methods that change a list in place (the static pass folds `append` / `extend` of known agents)
_IN_PLACE = ("append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse")


def _changes(node: pyast.AST, name: str) -> bool:
    """`node` changes the list `name` (a variable or `self.x`) in place: a method call, `name[i] = ...`,
    `del name[i]`, `name += ...`."""
    if isinstance(node, pyast.Call):
        f = node.func
        return isinstance(f, pyast.Attribute) and f.attr in _IN_PLACE and _binding_key(f.value) == name
    if isinstance(node, pyast.AugAssign) and _binding_key(node.target) == name:
        return True
    targets = node.targets if isinstance(node, (pyast.Assign, pyast.Delete)) else \
        [node.target] if isinstance(node, (pyast.AugAssign, pyast.AnnAssign)) else []
    return any(isinstance(t, pyast.Subscript) and _binding_key(t.value) == name for t in targets)


def _unfolded(mod: Module, node: Optional[pyast.AST]) -> Optional[Union[pyast.Call, pyast.stmt]]:
    """The first change of the list `node` names that the static pass left in place (the call or
    statement), outside function bodies; None when every change was folded into a binding."""
    key = _binding_key(node)
    if key is None:
        return None
    root = mod.parent or mod  # a scope's view holds its own function: the others may change the list too
    found: dict[int, Union[pyast.Call, pyast.stmt]] = {
        id(n): n for tree in ((mod.tree,) if root is mod else (mod.tree, root.tree)) for n in pyast.walk(tree)
        if isinstance(n, (pyast.Call, pyast.stmt)) and _changes(n, key)}
    for change in sorted(found.values(), key=lambda n: (n.lineno, n.col_offset)):
        where = mod.uses.get(id(change))
        in_def = where.in_def if where is not None else change is not None and not any(
            n is change for st in mod.tree.body for n in pyast.walk(st))
        if in_def and ("." in key or _local_to_def(root.tree, change, key)):
            continue  # inside a function body, its own list (a selection function's); `self.x`: the class's
        return change
    return None


def _local_to_def(tree: pyast.AST, node: pyast.AST, name: str) -> bool:
    """`name` is a local of the innermost function whose body holds `node` (a parameter, or bound
    there without `global` / `nonlocal`); False when it is the module's (a function that changes a
    list of the module when it is called)."""
    inner = None
    for fn in pyast.walk(tree):
        if isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda)) \
                and any(n is node for n in pyast.walk(fn)):
            inner = fn  # walk is breadth-first: the last one found is the innermost
    if inner is None:
        return True
    declared = {x for n in pyast.walk(inner) if isinstance(n, (pyast.Global, pyast.Nonlocal)) for x in n.names}
    local = {a.arg for a in pyast.walk(inner.args) if isinstance(a, pyast.arg)} | {
        n.id for n in pyast.walk(inner) if isinstance(n, pyast.Name) and isinstance(n.ctx, pyast.Store)}
    return name in local and name not in declared


def loop_message(node: Optional[pyast.AST], mod: Optional[Module] = None) -> str:
    change = _unfolded(mod, node) if mod is not None else None
    shown = pyast.unparse(node) if node is not None else "?"
    if change is not None and id(change) not in mod.in_loop:  # type: ignore[union-attr]
        return (f"`{shown}` is changed by `{_show(change, 50)}` ({line_ref(change.lineno)}), which the migrator "
                "does not follow (it follows `append` / `extend` / `+=` of known agents outside branches), so "
                "which agents it holds is not known; build the list in one place, or migrate the running object "
                "with --import")
    return (f"`{shown}` is filled in a loop the migrator cannot unroll (only `for x in [a, b, c]:` "
            "over a literal list is); write the agents out")


def one_line(node: pyast.AST, width: int = 60) -> str:
    """A statement or expression as one line of source, cut to `width` characters, for messages."""
    text = " ".join(pyast.unparse(node).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _show(node: Optional[pyast.AST], width: int = 70) -> str:
    if isinstance(node, pyast.Call) and callee(node).endswith("Agent") \
            and isinstance(kwarg(node, "name", 0), pyast.Constant):
        name = kwarg(node, "name", 0).value  # type: ignore[union-attr]
        if isinstance(name, str):  # an agent: its class and name say which
            return f"{callee(node)}(name={name!r}, ...)"
    text = pyast.unparse(node) if node is not None else "?"
    text = " ".join(_INLINED.sub("", text).split())  # an inlined function's locals: their own names
    return text if len(text) <= width else text[:width - 3] + "..."


_INLINED = re.compile(r"\b__inl\d+_")


def _branch_words(stmt: pyast.AST, label: str) -> str:
    if isinstance(stmt, pyast.If):
        test = f"`if {_show(stmt.test, 50)}:`"
        return f"the `else` branch of {test}" if label == "else" else f"the branch of {test}"
    if label.startswith("except"):
        handler = stmt.handlers[int(label[6:])]  # type: ignore[attr-defined]
        return f"the `except {_show(handler.type, 40) if handler.type is not None else ''}:` handler".replace(" :", ":")
    if label.startswith("case"):
        case = stmt.cases[int(label[4:])]  # type: ignore[attr-defined]
        return f"`case {_show(case.pattern, 40)}:`"
    return "a branch"


def _guard_words(stmt: pyast.AST, label: str) -> str:
    line = line_ref(getattr(stmt, "lineno", 0))
    if label == "loop":
        head = f"for {_show(stmt.target, 30)} in {_show(stmt.iter, 40)}" if isinstance(stmt, (pyast.For, pyast.AsyncFor)) \
            else f"while {_show(stmt.test, 50)}"  # type: ignore[attr-defined]
        return (f"runs in the loop `{head}:` ({line}), as many times as it turns (perhaps never), decided "
                "when the program runs; this flow reads it as if it ran once")
    where = _branch_words(stmt, label)
    if label.startswith("except"):
        where += " of the `try`"
    return (f"runs only in {where} ({line}), decided when the program runs; this flow reads it as if "
            "it always ran")


def choice_message(c: Choice, params: frozenset = frozenset()) -> str:
    """The TF410 message for a choice the program makes at run time (`params`: the parameters of
    the function the choice is in, which hold the caller's value where no branch binds them)."""
    if c.label == "guarded":
        assert c.guard is not None
        via = getattr(c.stmt, "_turnflow_via", None)  # inlined from a function: the call that runs it
        through = f" (through `{_show(via, 40)}`, {line_ref(via.lineno)})" if via is not None else ""
        return (f"`{_show(c.stmt, 60)}`{through} {_guard_words(*c.guard)}; make it unconditional, or migrate the "
                "running object with --import")
    if c.key is None:
        e = c.stmt
        return (f"`{_show(e)}` is decided when the program runs; this flow follows "
                f"`{_show(e.body, 40)}`, the other branch gives `{_show(e.orelse, 40)}`")  # type: ignore[attr-defined]
    assert c.chosen is not None
    name = c.key.split(".", 1)[1] if c.key.startswith(("self.", "cls.")) else c.key
    if c.label == "global":
        fn = f" (line {getattr(c.stmt, 'lineno', 0)})"
        return (f"`{name}` is bound again by `{_show(c.stmt, 40)}`{fn}, in a function that declares it `global`, "
                "whenever that function runs (decided when the program runs); this flow follows "
                f"`{_show(c.chosen.value, 50)}` ({line_ref(getattr(c.chosen.stmt, 'lineno', 0))})")
    if c.label == "rebound":
        lines = lines_ref([getattr(s.stmt, "lineno", 0) for s in c.alternatives + [c.chosen]])
        return (f"`{name}` is bound more than once ({lines}) and used inside a function, which sees the "
                "binding current when it runs (decided when the program runs); this flow follows the last one, "
                f"`{_show(c.chosen.value, 50)}` ({line_ref(getattr(c.chosen.stmt, 'lineno', 0))})")
    line = line_ref(getattr(c.chosen.stmt, "lineno", 0))
    parts = [f"`{name}` is bound in {_branch_words(c.stmt, c.label)} ({line}), decided when the program "
             f"runs; this flow follows that binding, `{_show(c.chosen.value, 50)}`"]
    others = [f"`{_show(s.value, 50)}` ({line_ref(getattr(s.stmt, 'lineno', 0))})" for s in c.alternatives]
    if not c.every:
        others.append(f"`{_show(c.fallback.value, 50)}` ({line_ref(getattr(c.fallback.stmt, 'lineno', 0))})"
                      if c.fallback is not None else f"the argument passed for the parameter `{name}`"
                      if name in params else "nothing (the program would fail with a NameError)")
    if others:
        parts.append("; otherwise it is " + bounded(others, " or "))
    return "".join(parts)


def _parameters(tree: pyast.AST, stmt: pyast.AST) -> frozenset:
    """The parameter names of the innermost function whose body holds `stmt`."""
    line = getattr(stmt, "lineno", 0)
    best = None
    for fn in pyast.walk(tree):
        if isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and fn.body \
                and fn.body[0].lineno <= line <= (fn.end_lineno or 0):
            if best is None or fn.lineno > best.lineno:
                best = fn
    if best is None:
        return frozenset()
    a = best.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return frozenset(names)


def note_choices(mod: Module, b) -> None:
    """TF410 at each branching statement the chat depends on (`mod.take_choices()`), and a comment
    above the block's first statement."""
    texts = []
    root = mod
    while root.parent is not None:
        root = root.parent
    for c in mod.take_choices():
        at = pos(c.stmt.test if isinstance(c.stmt, (pyast.If, pyast.IfExp)) and c.label not in ("rebound", "guarded")
                 else c.stmt)
        message = choice_message(c, _parameters(root.tree, c.stmt))
        b.note("TF410", message, at, comment=False)
        b.run_time.append(("TF410", message))
        texts.append(f"TF410: {message} (input {input_where(at)})" if b.input_positions else f"TF410: {message}")
    if texts and b.lines:
        b.lines[0].comments[:0] = texts
    elif texts:
        b.pending[:0] = texts


def why_not_literal(mod: Module, node: Optional[pyast.AST]) -> str:
    """The real reason a list cannot be read, for the message."""
    resolved = mod.resolve(node)
    if isinstance(resolved, (pyast.ListComp, pyast.GeneratorExp)):
        return ("; it is built by a comprehension, which the migrator does not run (write the agents out, or "
                "loop over a literal list)")
    if isinstance(resolved, pyast.Call):
        return f"; it is the result of `{pyast.unparse(resolved.func)}(...)`, which the migrator does not run"
    return ""


_MUTATORS = ("append", "extend", "insert", "remove", "pop", "clear", "update", "sort", "reverse", "setdefault",
             "popitem", "__setitem__", "__delitem__")


def attribute_changes(st: pyast.stmt) -> list[tuple[pyast.expr, str]]:
    """(the object, the attribute) of each `obj.attr` a simple statement sets or changes in place:
    `obj.attr = v`, `obj.attr += v`, `obj.attr[k] = v`, `del obj.attr[k]`, `obj.attr.append(v)`,
    `obj.attr[k].append(v)`, each of several targets (`obj.attr, n = v, 1`, `[*obj.attr] = v`)."""
    if isinstance(st, pyast.Expr):
        call = st.value
        if not (isinstance(call, pyast.Call) and isinstance(call.func, pyast.Attribute)
                and call.func.attr in _MUTATORS):
            return []
        targets = [call.func.value]
    elif isinstance(st, pyast.Assign):
        targets = list(st.targets)
    elif isinstance(st, pyast.Delete):
        targets = list(st.targets)
    else:
        targets = [st.target]  # type: ignore[attr-defined]
    out: list[tuple[pyast.expr, str]] = []
    for t in _flat_targets(targets):
        while isinstance(t, pyast.Subscript):
            t = t.value
        if isinstance(t, pyast.Attribute) and (isinstance(t.value, pyast.Name)
                                               or (isinstance(t.value, pyast.Attribute)
                                                   and isinstance(t.value.value, pyast.Name))):
            out.append((t.value, t.attr))
    return out


def _flat_targets(targets: list[pyast.expr]) -> Iterator[pyast.expr]:
    """Assignment targets with tuples, lists and `*x` opened: `a.x, [b.y, *c.z] = ...` -> a.x, b.y, c.z."""
    for t in targets:
        if isinstance(t, (pyast.Tuple, pyast.List)):
            yield from _flat_targets(t.elts)
        elif isinstance(t, pyast.Starred):
            yield from _flat_targets([t.value])
        else:
            yield t


#: `change_sites` of each view still in use (the readers ask once per chat)
_SITES: "weakref.WeakKeyDictionary[pyast.AST, list[tuple[pyast.stmt, tuple]]]" = weakref.WeakKeyDictionary()
_SCOPES = (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda, pyast.ClassDef)


def change_sites(mod: Module) -> list[tuple[pyast.stmt, tuple]]:
    """Every statement of the file that may change an object the view `mod` builds, each with the
    functions around it that the view does not run as its own code (innermost last; empty for the
    view's own statements): the statements of the view, and those of every function, method, nested
    def, class body and lambda of the file (a lambda's body as an expression statement), whether or
    not it is called: the migrator cannot know if it runs. `local_to(fns, name)` says whether a
    name there is the function's own."""
    found = _SITES.get(mod.tree)
    if found is not None:
        return found
    own = {id(s) for s in mod.tree.body}
    out: list[tuple[pyast.stmt, tuple]] = []
    calls_of: dict[str, list[tuple[pyast.Call, tuple]]] = {}  # `f(...)` by the name called, with its functions

    def visit(node: pyast.AST, fns: tuple) -> None:
        for child in pyast.iter_child_nodes(node):
            inner = fns
            if isinstance(child, pyast.Call) and isinstance(child.func, pyast.Name):
                calls_of.setdefault(child.func.id, []).append((child, fns))
            if isinstance(child, _SCOPES):
                body = child.body if isinstance(child.body, list) else []
                if isinstance(child, pyast.ClassDef):  # a class whose methods are the view's own code
                    body = [s for m in body for s in (m.body if isinstance(m, (pyast.FunctionDef, pyast.AsyncFunctionDef)) else [m])]
                if not any(id(s) in own for s in body):  # (a scope's own function or methods: its own code)
                    inner = fns + (child,)
                if isinstance(child, pyast.Lambda) and isinstance(child.body, pyast.Call):
                    out.append((pyast.copy_location(pyast.Expr(value=child.body), child.body), inner))
            elif isinstance(child, pyast.stmt):
                out.append((child, fns))
            if not isinstance(child, _LEAVES):
                visit(child, inner)

    visit((mod.parent or mod).tree, ())
    out += _given_as_arguments(mod, out, calls_of)
    if mod.parent is not None:  # a view's statements not in the file's tree (a class's `__init__` parameters)
        listed = {id(s) for s, _ in out}
        out = [(st, ()) for st in mod.tree.body if id(st) not in listed] + out
    _SITES[mod.tree] = out
    return out


#: the last of the functions around a statement of `change_sites` whose parameter is replaced by a call's variable
_GIVEN = "given as an argument"


def _given_as_arguments(mod: Module, sites: list[tuple[pyast.stmt, tuple]],
                        calls_of: dict[str, list[tuple[pyast.Call, tuple]]]) -> list[tuple[pyast.stmt, tuple]]:
    """`def tweak(gc): gc.max_round = 5` called as `tweak(chat)` (a variable of the view, by position or
    keyword): the statement with the parameter replaced by the variable, once per such call, inside
    `tweak` (a parameter the function binds again is its own)."""
    from turnflow.migrate.pystatic import _Subst

    out: list[tuple[pyast.stmt, tuple]] = []
    kept: dict[int, list[str]] = {}  # a function's parameters it does not bind again
    done: set[tuple] = set()  # (statement, the variables given): one copy each
    for st, fns in sites:
        fn = fns[-1] if fns else None
        if not isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef)) or fn.name not in calls_of:
            continue
        if id(fn) not in kept:
            stored = {n.id for n in _own_nodes(fn) if isinstance(n, pyast.Name) and not isinstance(n.ctx, pyast.Load)}
            kept[id(fn)] = [a.arg for a in fn.args.posonlyargs + fn.args.args if a.arg not in stored]
        used = sorted({n.id for n in pyast.walk(st) if isinstance(n, pyast.Name) and n.id in kept[id(fn)]})
        for call, call_fns in calls_of[fn.name] if used else []:
            env = _arguments(mod, fn, call, call_fns, used)
            key = (id(st), *((k, v.id) for k, v in env.items()))  # type: ignore[attr-defined]
            if env and key not in done:
                done.add(key)
                out.append((_Subst(env).visit(copy.deepcopy(st)), (fn, _GIVEN)))
    return out


def _arguments(mod: Module, fn: Union[pyast.FunctionDef, pyast.AsyncFunctionDef], call: pyast.Call,
               call_fns: tuple, names: list[str]) -> dict[str, pyast.AST]:
    """The parameters `names` of `fn` that `call` gives a variable the view binds (not a local of the
    functions around the call)."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    env: dict[str, pyast.AST] = {}
    for name in names:
        i = params.index(name)
        starred = any(isinstance(x, pyast.Starred) for x in call.args[:i + 1])
        arg = kwarg(call, name, None if starred else i)
        if isinstance(arg, pyast.Name) and arg.id in mod.bindings and not local_to(call_fns, arg.id):
            env[name] = arg
    return env


def local_to(fns: tuple, name: str) -> bool:
    """`name`, used inside the functions `fns` (innermost last), is a local of one of them (a
    parameter, or bound there without `global`), not a name of the view around them."""
    for fn in reversed(fns):
        declared_global, declared_nonlocal, own = _scope_names(fn)
        if name in declared_global:
            return False
        if name in declared_nonlocal:
            continue
        if name in own:
            return True
    return False


#: `_scope_names` of each function still in use (asked once per change found in it)
_NAMES: "weakref.WeakKeyDictionary[pyast.AST, tuple[set[str], set[str], set[str]]]" = weakref.WeakKeyDictionary()


def _scope_names(fn: pyast.AST) -> tuple[set[str], set[str], set[str]]:
    """(declared `global`, declared `nonlocal`, bound) names of a function's (class's) own code."""
    found = _NAMES.get(fn)
    if found is None:
        nodes = list(_own_nodes(fn))
        declared_global = {x for n in nodes if isinstance(n, pyast.Global) for x in n.names}
        declared_nonlocal = {x for n in nodes if isinstance(n, pyast.Nonlocal) for x in n.names}
        found = _NAMES[fn] = (declared_global, declared_nonlocal, _own_locals(fn, nodes))
    return found


def _own_nodes(fn: pyast.AST) -> Iterator[pyast.AST]:
    """The nodes of a function's (class's) own code, not those of the scopes nested in it."""
    todo = list(fn.body) if isinstance(fn.body, list) else [fn.body]  # type: ignore[attr-defined]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue  # its name is bound here; its body is its own scope
        todo.extend(pyast.iter_child_nodes(n))


def _own_locals(fn: pyast.AST, nodes: list[pyast.AST]) -> set[str]:
    names: set[str] = set()
    if not isinstance(fn, pyast.ClassDef):
        names |= {a.arg for a in pyast.walk(fn.args) if isinstance(a, pyast.arg)}  # type: ignore[attr-defined]
    for n in nodes:
        if isinstance(n, pyast.Name) and isinstance(n.ctx, (pyast.Store, pyast.Del)):
            names.add(n.id)
        elif isinstance(n, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (pyast.Import, pyast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, pyast.ExceptHandler) and n.name:
            names.add(n.name)
    return names


def changed_inside(fns: tuple, base: pyast.AST) -> Optional[str]:
    """For a change of `base` (`x`, `x.attr`, `m.groupchat`) inside the functions `fns`: None when
    it changes an object of the function itself (the variable is its own) or there are no functions
    around it, else the words that say where, `inside `tweak` (line 7)`."""
    root = base
    while isinstance(root, (pyast.Attribute, pyast.Subscript)):
        root = root.value
    given = bool(fns) and fns[-1] is _GIVEN  # a parameter replaced by the call's variable: the view's
    if not fns or not isinstance(root, pyast.Name) or not given and local_to(fns, root.id):
        return None
    fn = fns[-2] if given else fns[-1]
    what = "a lambda" if isinstance(fn, pyast.Lambda) else f"`{fn.name}`"
    return f"inside {what} ({line_ref(fn.lineno)})"
