"""Static rewriting of a parsed Python module before the front ends read it.

Real orchestration code builds its agents and wiring with a little plain
Python that can be followed without running it. This pass rewrites those
constructs into the straight-line code the front ends already understand
(the user's code is never imported or executed):

- `for x in [a, b, c]:` (or a tuple, or a variable bound to a literal list or
  tuple in the same scope or the module; tuple targets `for n, m in [(..), ..]`)
  is unrolled: one copy of the body per element, with the loop variable
  replaced by the element. Loops with `break`/`continue`/`else`, or over
  anything else, are left alone (the front ends then refuse what is built in
  them, saying so).
- `xs.append(e)`, `xs.extend([...])` and `xs += [...]` on a variable bound to a
  literal list become `xs = [..., e]`, so that the last binding holds every
  element; `[*xs, e]` and `xs + [e]` are flattened by `elements()`.
- simple factory functions (`def make(name, msg): return AssistantAgent(name=name, ...)`,
  or a body of assignments and calls ending in `return <local>`) are inlined at
  `x = make("a", "...")`: the parameters are replaced by the arguments, the
  returned local is renamed to `x`, the other statements of the body (e.g.
  `agent.handoffs.set_after_work(...)`) follow the assignment.
- `a, b = X(...), Y(...)` becomes `a = X(...)` and `b = Y(...)`.
- a straight-line function that configures the chat and returns nothing (`def wire(): triage.handoffs
  .set_after_work(...); ...`) is inlined where it is called as a statement (`wire()`, under an `if`
  too, which the front ends then report): its configuration runs there, and only if it is called.
"""

from __future__ import annotations

import ast as pyast
import copy
from typing import Callable, Optional, Union

_Fn = Union[pyast.FunctionDef, pyast.AsyncFunctionDef]

MAX_UNROLL = 2000  # elements of one unrolled loop (bounded work on huge inputs)
MAX_COPIES = 50000  # syntax nodes copied by unrolling, over the whole file

# calls of these classes are what a factory may build
_FACTORY_PRODUCTS_SUFFIX = ("Agent",)
_FACTORY_PRODUCTS = {"ConversableAgent", "AssistantAgent", "UserProxyAgent"}
# a straight-line function that builds a chat from its parameters is inlined where it is called
_CHAT_PRODUCTS = {"GroupChat", "GroupChatManager", "DefaultPattern", "AutoPattern", "RoundRobinPattern",
                  "RandomPattern", "ManualPattern", "RoundRobinGroupChat", "SelectorGroupChat", "Swarm",
                  "MagenticOneGroupChat", "GraphFlow"}


_FRAMEWORKS = ("autogen", "autogen_agentchat", "autogen_ext", "autogen_core", "ag2")


def framework_aliases(tree: pyast.AST) -> dict[str, str]:
    """`from autogen... import X as Y` (AG2, AutoGen): Y → X, for each alias that is bound nowhere
    else in the file while X is bound nowhere (reading Y as X then changes no other name)."""
    aliases: dict[str, str] = {}
    for n in pyast.walk(tree):
        if isinstance(n, pyast.ImportFrom) and n.module and n.module.split(".")[0] in _FRAMEWORKS:
            for a in n.names:
                if a.asname and a.asname != a.name:
                    aliases[a.asname] = a.name
    if not aliases:
        return {}
    bound: dict[str, int] = {}
    for n in pyast.walk(tree):
        for x in _binds_names(n):
            bound[x] = bound.get(x, 0) + 1
    return {y: x for y, x in aliases.items() if bound.get(y) == 1 and not bound.get(x)}


def _binds_names(n: pyast.AST) -> list[str]:
    """The names one node binds: a store, a parameter, a def or class, an import, `global`."""
    if isinstance(n, pyast.Name):
        return [] if isinstance(n.ctx, pyast.Load) else [n.id]
    if isinstance(n, pyast.arg):
        return [n.arg]
    if isinstance(n, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)):
        return [n.name]
    if isinstance(n, (pyast.Import, pyast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in n.names]
    if isinstance(n, (pyast.Global, pyast.Nonlocal)):
        return list(n.names)
    return []


def _unalias(tree: pyast.Module) -> None:
    """Framework names imported under another name (`framework_aliases`) are read under their own."""
    aliases = framework_aliases(tree)
    if not aliases:
        return
    for n in pyast.walk(tree):
        if isinstance(n, pyast.Name) and n.id in aliases:
            n.id = aliases[n.id]
        elif isinstance(n, pyast.ImportFrom):
            for a in n.names:
                if a.asname in aliases and aliases[a.asname] == a.name:
                    a.asname = None


def _partials(tree: pyast.Module) -> tuple[dict[str, pyast.Call], dict[str, pyast.Call]]:
    """`X = partial(F, *args, **keywords)` (functools): (those bound once in the file, used only to be
    called, their arguments plain (no `*a` / `**k`) and their names bound at most once: X → the
    partial call; the others)."""
    found: dict[str, pyast.Call] = {}
    other: dict[str, pyast.Call] = {}
    made = [st for st in pyast.walk(tree) if _is_partial(st)]
    if not made:
        return found, other
    stores: dict[str, int] = {}
    for n in pyast.walk(tree):
        for x in _binds_names(n) if isinstance(n, (pyast.Name, pyast.arg)) else ():
            stores[x] = stores.get(x, 0) + 1
    for st in made:
        name, value = st.targets[0].id, st.value  # type: ignore[attr-defined]
        (found if _plain_partial(value, name, stores) else other)[name] = value
    if found:
        called = {id(n.func) for n in pyast.walk(tree) if isinstance(n, pyast.Call)}
        for n in pyast.walk(tree):  # `X.keywords[...] = v`, `f(X)`: the partial may change, or be called elsewhere
            if isinstance(n, pyast.Name) and n.id in found and id(n) not in called and isinstance(n.ctx, pyast.Load):
                other[n.id] = found.pop(n.id)
    return found, other


def _plain_partial(value: pyast.Call, name: str, stores: dict[str, int]) -> bool:
    """A partial bound once, without `*a` / `**k`, whose arguments' names are bound at most once."""
    return not any(isinstance(a, pyast.Starred) for a in value.args) \
        and all(k.arg is not None for k in value.keywords) and stores.get(name) == 1 \
        and all(stores.get(x, 0) <= 1 for x in _loaded(value))


def _is_partial(st: pyast.AST) -> bool:
    """`X = partial(F, ...)`, F a name or an attribute."""
    return isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name) \
        and isinstance(st.value, pyast.Call) and callee(st.value) == "partial" and bool(st.value.args) \
        and isinstance(st.value.args[0], (pyast.Name, pyast.Attribute))


def _apply_partials(tree: pyast.Module) -> bool:
    """`X(a, k=v)` where `X = partial(F, p, q=w)` (`_partials`) is `F(p, a, q=w, k=v)`: what
    functools.partial calls (the call's keywords replace the partial's); True when a call of a
    partial not followed became `F(*X.args, ..., **X.keywords)`."""
    partials, other = _partials(tree)
    for n in pyast.walk(tree) if partials or other else ():
        if not (isinstance(n, pyast.Call) and isinstance(n.func, pyast.Name)):
            continue
        if n.func.id in partials:
            p = partials[n.func.id]
            given = {k.arg for k in n.keywords}
            n.func = pyast.copy_location(copy.deepcopy(p.args[0]), n.func)
            n.args = [copy.deepcopy(a) for a in p.args[1:]] + n.args
            n.keywords = [copy.deepcopy(k) for k in p.keywords if k.arg not in given] + n.keywords
        elif n.func.id in other:  # what it passes is known when the program runs: `F(*X.args, ..., **X.keywords)`
            x = n.func
            star = pyast.copy_location(pyast.Starred(value=pyast.Attribute(value=pyast.Name(id=x.id, ctx=pyast.Load()),
                                                                           attr="args", ctx=pyast.Load()),
                                                     ctx=pyast.Load()), x)
            spread = pyast.keyword(arg=None, value=pyast.Attribute(value=pyast.Name(id=x.id, ctx=pyast.Load()),
                                                                   attr="keywords", ctx=pyast.Load()))
            for node in (star.value, star.value.value, spread.value, spread.value.value):  # type: ignore[attr-defined]
                pyast.copy_location(node, x)
            n.func = pyast.copy_location(copy.deepcopy(other[x.id].args[0]), x)
            n.args = [star] + n.args
            n.keywords = [pyast.copy_location(spread, x)] + n.keywords
    return bool(other)


def callee(node: pyast.AST) -> str:
    """The last name of a call's function: `autogen.GroupChat(...)` → "GroupChat"."""
    if isinstance(node, pyast.Call):
        node = node.func
    if isinstance(node, pyast.Name):
        return node.id
    if isinstance(node, pyast.Attribute):
        return node.attr
    return ""


def sequence(node: pyast.AST, expand: Callable[[pyast.AST], Optional[list[pyast.AST]]]) \
        -> Optional[list[pyast.AST]]:
    """The elements of a list or tuple display (each `*x` spliced in) or of a sum `x + y`, where
    `expand` gives the elements of an operand (None: not known); None for any other node."""
    if isinstance(node, (pyast.List, pyast.Tuple)):
        out: list[pyast.AST] = []
        for e in node.elts:
            if isinstance(e, pyast.Starred):
                inner = expand(e.value)
                if inner is None:
                    return None
                out += inner
            else:
                out.append(e)
        return out
    if isinstance(node, pyast.BinOp) and isinstance(node.op, pyast.Add):
        a, b = expand(node.left), expand(node.right)
        if a is not None and b is not None:
            return a + b
    return None


def _copied(node: pyast.AST) -> Optional[pyast.AST]:
    """The list a new list copies: `list(xs)`, `tuple(xs)`, `xs.copy()` → `xs`; else None."""
    if not isinstance(node, pyast.Call) or node.keywords:
        return None
    if len(node.args) == 1 and isinstance(node.func, pyast.Name) and node.func.id in ("list", "tuple"):
        return node.args[0]
    if not node.args and isinstance(node.func, pyast.Attribute) and node.func.attr == "copy":
        return node.func.value
    return None


def _code(body: list[pyast.stmt]) -> list[pyast.stmt]:
    """A function's statements without its docstrings (bare constant expressions)."""
    return [s for s in body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]


def _straight_line(fn: _Fn) -> Optional[list[pyast.stmt]]:
    """The statements of `fn` (`_code`) when it takes plain parameters and is assignments and
    calls ending in `return <value>`, else None."""
    body = _code(fn.body)
    if not body or not isinstance(body[-1], pyast.Return) or body[-1].value is None:
        return None
    if fn.args.vararg or fn.args.kwonlyargs or fn.args.posonlyargs:
        return None
    if not all(isinstance(st, (pyast.Assign, pyast.Expr, pyast.AnnAssign)) for st in body[:-1]):
        return None
    return body


# calls that configure a chat (what the front ends read besides constructors)
_CONFIGURING = {"register_hand_off", "register_function", "register_for_llm", "add_functions", "add_edge",
                "add_node", "set_entry_point"}


_PROCEDURE_STATEMENTS = (pyast.Assign, pyast.AugAssign, pyast.AnnAssign, pyast.Expr, pyast.If, pyast.For, pyast.While,
                         pyast.With, pyast.Try, pyast.Pass, pyast.Break, pyast.Continue, pyast.ExceptHandler)


# calls that build or run a chat: a function making one is a scope of its own (`def main(): ...
# pattern = DefaultPattern(...); initiate_group_chat(...)`), never copied into its caller
_BUILDS_CHAT = {"GroupChat", "GroupChatManager", "DefaultPattern", "AutoPattern", "RoundRobinPattern",
                "RandomPattern", "ManualPattern", "initiate_group_chat", "a_initiate_group_chat", "run_group_chat",
                "a_run_group_chat", "initiate_swarm_chat", "a_initiate_swarm_chat", "run_swarm", "a_run_swarm",
                "RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow", "MagenticOneGroupChat"}


def _procedure(fn: pyast.FunctionDef) -> Optional[list[pyast.stmt]]:
    """The statements of `fn` when it takes plain parameters, returns nothing (a bare `return` at
    the end at most), holds no function, class, `global` or `yield`, builds no chat (`_BUILDS_CHAT`)
    and configures a chat: `x.handoffs.<method>(...)`, or one of `_CONFIGURING`; else None."""
    body = _code(fn.body)
    if body and isinstance(body[-1], pyast.Return) and body[-1].value is None:
        body = body[:-1]
    if not body or fn.args.vararg or fn.args.kwonlyargs or fn.args.posonlyargs:
        return None
    inner = [n for st in body for n in pyast.walk(st)]
    if any(isinstance(n, (pyast.stmt, pyast.excepthandler)) and not isinstance(n, _PROCEDURE_STATEMENTS)
           or isinstance(n, (pyast.Yield, pyast.YieldFrom, pyast.Await)) for n in inner):
        return None
    if any(isinstance(n, pyast.Call) and callee(n) in _BUILDS_CHAT for n in inner):
        return None
    return body if any(_configures(n) for n in inner) else None


def _configures(node: pyast.AST) -> bool:
    """A call that configures a chat: `x.handoffs.<method>(...)`, or one of `_CONFIGURING`."""
    if not isinstance(node, pyast.Call):
        return False
    f = node.func
    return callee(node) in _CONFIGURING or (isinstance(f, pyast.Attribute) and isinstance(f.value, pyast.Attribute)
                                            and f.value.attr == "handoffs")


class _Rename(pyast.NodeTransformer):
    """Rename the names in `names` (loads and stores): an inlined function's locals, kept apart."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: pyast.Name):
        if node.id in self.names:
            return pyast.copy_location(pyast.Name(id=self.names[node.id], ctx=node.ctx), node)
        return node


class _Subst(pyast.NodeTransformer):
    """Replace loads of the names in `env` by copies of their values."""

    def __init__(self, env: dict[str, pyast.AST], keep_identity: bool = True):
        self.env = env
        self.keep_identity = keep_identity

    def visit_Name(self, node: pyast.Name):
        if isinstance(node.ctx, pyast.Load) and node.id in self.env:
            value = self.env[node.id]
            # names and constants are copied (with the use's position); calls keep their
            # identity so that one agent written in a list is one agent everywhere
            if isinstance(value, (pyast.Name, pyast.Constant, pyast.Attribute)):
                new = copy.deepcopy(value)
                return pyast.copy_location(new, node)
            return value
        return node

    def visit_Lambda(self, node: pyast.Lambda):
        shadowed = {a.arg for a in node.args.args}
        if shadowed & set(self.env):
            inner = _Subst({k: v for k, v in self.env.items() if k not in shadowed})
            node.body = inner.visit(node.body)
            return node
        return self.generic_visit(node)


def _bind(target: pyast.AST, value: pyast.AST, env: dict[str, pyast.AST]) -> bool:
    if isinstance(target, pyast.Name):
        env[target.id] = value
        return True
    if isinstance(target, (pyast.Tuple, pyast.List)) and isinstance(value, (pyast.Tuple, pyast.List)) \
            and len(target.elts) == len(value.elts):
        return all(_bind(t, v, env) for t, v in zip(target.elts, value.elts))
    return False


# list methods that change the list in place (`append` / `extend` are folded when their argument is known)
_LIST_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}


def _changed_names(node: pyast.AST, rebinds: bool = True) -> set[str]:
    """The names `node` rebinds (unless `rebinds` is False) or changes in place anywhere inside it:
    `xs = ...`, `xs += ...`, `for xs in ...`; `xs.remove(a)` (any list method that changes it),
    `xs[0] = a`, `del xs[0]`, `del xs`."""
    out: set[str] = set()
    for n in pyast.walk(node):
        if isinstance(n, pyast.Name) and (isinstance(n.ctx, pyast.Del) or rebinds and isinstance(n.ctx, pyast.Store)):
            out.add(n.id)
        elif isinstance(n, pyast.Subscript) and isinstance(n.ctx, (pyast.Store, pyast.Del)) \
                and isinstance(n.value, pyast.Name):
            out.add(n.value.id)
        elif isinstance(n, pyast.Call) and isinstance(n.func, pyast.Attribute) and n.func.attr in _LIST_MUTATORS \
                and isinstance(n.func.value, pyast.Name):
            out.add(n.func.value.id)
    return out


def _forget(lists: dict[str, pyast.AST], names: set[str]) -> None:
    """The literal sequences `names` are no longer known (changed in a way not folded)."""
    for name in names:
        lists.pop(name, None)


def _has_jump(body: list[pyast.stmt]) -> bool:
    for st in body:
        for n in pyast.walk(st):
            if isinstance(n, (pyast.Break, pyast.Continue)):
                return True
            if isinstance(n, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda)):
                break
    return False



# ---------------------------------------------------------------------------------------------
#  `**shared` of a literal dict
# ---------------------------------------------------------------------------------------------
_DICT_READERS = {"get", "keys", "values", "items", "copy"}  # methods that leave a dict as it is
_DICT_KEY = "**"  # `lists` holds the literal dicts of a block under "**NAME" (flow-sensitive, as lists)


def _parents(node: pyast.AST) -> dict[int, pyast.AST]:
    return {id(child): n for n in pyast.walk(node) for child in pyast.iter_child_nodes(n)}


def _dict_unsafe(node: pyast.AST, stores: bool = True) -> set[str]:
    """The names `node` uses other than to read a dict: `**d` in a call or a dict display, `d[k]`,
    `d.get(...)` / `.keys()` / `.values()` / `.items()` / `.copy()`. Any other use may change it
    (`d[k] = v`, `d.update(...)`, `del d[k]`, `d |= ...`, handing it to a function, an alias,
    `global d`), or rebinds it (`stores`)."""
    parent = _parents(node)
    for d in pyast.walk(node):
        if isinstance(d, pyast.Dict):
            for k, v in zip(d.keys, d.values):
                if k is None:
                    v._turnflow_spread = True  # type: ignore[attr-defined]
    out: set[str] = set()
    for n in pyast.walk(node):
        if isinstance(n, (pyast.Global, pyast.Nonlocal)):
            out.update(n.names)
        if not isinstance(n, pyast.Name):
            continue
        if not isinstance(n.ctx, pyast.Load):
            if stores or isinstance(n.ctx, pyast.Del):
                out.add(n.id)
            continue
        if not _reads_dict(n, parent):
            out.add(n.id)
    return out


def _reads_dict(n: pyast.Name, parent: dict[int, pyast.AST]) -> bool:
    """`n` is spread (`**n`), indexed (`n[k]`) or read by a method that leaves it as it is."""
    up = parent.get(id(n))
    if isinstance(up, pyast.keyword):
        return up.arg is None
    if isinstance(up, pyast.Dict):  # `{**n}` (a key is None there; a dict's other names are keys or values)
        return getattr(n, "_turnflow_spread", False)
    if isinstance(up, pyast.Subscript):
        return up.value is n and isinstance(up.ctx, pyast.Load)
    call = parent.get(id(up))
    return isinstance(up, pyast.Attribute) and up.attr in _DICT_READERS and isinstance(call, pyast.Call) \
        and call.func is up


def _stored(node: pyast.AST) -> set[str]:
    return {n.id for n in pyast.walk(node) if isinstance(n, pyast.Name) and not isinstance(n.ctx, pyast.Load)}


def _loaded(node: pyast.AST) -> set[str]:
    return {n.id for n in pyast.walk(node) if isinstance(n, pyast.Name) and isinstance(n.ctx, pyast.Load)}


def _value_names(d: pyast.AST) -> set[str]:
    """The names a literal dict's values use (computed once per dict)."""
    found = getattr(d, "_turnflow_names", None)
    if found is None:
        found = _loaded(d)
        d._turnflow_names = found  # type: ignore[attr-defined]
    return found


def _literal_dict(node: pyast.AST, known: Callable[[str], Optional[pyast.Dict]]) -> Optional[pyast.Dict]:
    """`{"k": v, **other}` with string keys, or `dict(k=v, **other)`, `other` a known literal dict
    (`known`): a dict display with one string key each (the last value of a key wins, as in Python);
    None for anything else."""
    pairs: list[tuple[Optional[pyast.expr], pyast.expr]]
    if isinstance(node, pyast.Dict):
        pairs = list(zip(node.keys, node.values))
    elif isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name) and node.func.id == "dict" \
            and not node.args:
        pairs = [(pyast.copy_location(pyast.Constant(value=k.arg), k.value) if k.arg is not None else None, k.value)
                 for k in node.keywords]
    else:
        return None
    last: dict[str, tuple[pyast.expr, pyast.expr]] = {}  # the last value of each key, at its first key
    for k, v in pairs:
        if k is None:
            inner = _spread_dict(v, known)
            if inner is None:
                return None
            more = [(ik, iv) for ik, iv in zip(inner.keys, inner.values) if ik is not None]
        elif isinstance(k, pyast.Constant) and isinstance(k.value, str):
            more = [(k, v)]
        else:
            return None
        for ik, iv in more:
            key = ik.value  # type: ignore[attr-defined]
            last[key] = (last[key][0] if key in last else ik, iv)
    keys: list[Optional[pyast.expr]] = [k for k, _ in last.values()]
    out = pyast.Dict(keys=keys, values=[v for _, v in last.values()])
    return pyast.copy_location(out, node)


def _spread_dict(node: pyast.AST, known: Callable[[str], Optional[pyast.Dict]]) -> Optional[pyast.Dict]:
    """The literal dict `**node` spreads: a known name, or a dict display / `dict(...)` written there."""
    if isinstance(node, pyast.Name):
        return known(node.id)
    return _literal_dict(node, known)


def _expand_spreads(st: pyast.AST, known: Callable[[str], Optional[pyast.Dict]]) -> None:
    """`f(x, **shared)` → `f(x, k=v, ...)` for each call of `st` (not in a lambda, which runs later)
    whose `**` spreads a known literal dict: what Python passes. A key that is not an identifier, or
    one given twice (Python's TypeError), leaves the call as it is (reported where it is read)."""
    todo: list[pyast.AST] = [st]
    while todo:
        n = todo.pop()
        if isinstance(n, pyast.Lambda):
            continue
        todo.extend(pyast.iter_child_nodes(n))
        if not isinstance(n, pyast.Call) or all(k.arg is not None for k in n.keywords):
            continue
        new: list[pyast.keyword] = []
        for kw in n.keywords:
            d = _spread_dict(kw.value, known) if kw.arg is None else None
            if kw.arg is not None or d is None:
                new.append(kw)
                continue
            for k, v in zip(d.keys, d.values):
                if not k.value.isidentifier():  # type: ignore[union-attr]
                    break
                item = pyast.keyword(arg=k.value, value=copy.deepcopy(v))  # type: ignore[union-attr]
                new.append(pyast.copy_location(item, v))
            else:
                continue
            new.append(kw)
        names = [k.arg for k in new if k.arg is not None]
        if len(names) == len(set(names)):
            n.keywords = new


class Rewriter:
    def __init__(self, tree: pyast.Module):
        self.tree = tree
        self.factories: dict[str, _Fn] = {}
        self.builders: dict[str, _Fn] = {}  # straight-line functions returning agents or a chat
        self.procedures: dict[str, _Fn] = {}  # functions configuring the chat, returning nothing
        self.active: set[str] = set()  # the procedures being inlined
        self.inlined: set[str] = set()  # builders inlined at a call: their own body is not a chat of its own
        self.module_lists: dict[str, pyast.AST] = {}
        self.module_dicts: dict[str, pyast.Dict] = {}  # literal dicts bound once, changed nowhere
        self._changed_in_defs: Optional[set[str]] = None  # names a function may change as free variables
        self.spreads = False  # the file passes `**x` somewhere
        self.counter = 0
        self.copies = 0

    # -- entry ------------------------------------------------------------------
    def run(self) -> pyast.Module:
        stores = self._survey()
        for st in self.tree.body:
            if isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and self._is_factory(st):
                self.factories[st.name] = st
            elif isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and self._is_builder(st):
                self.builders[st.name] = st
            elif isinstance(st, pyast.FunctionDef) and _procedure(st) is not None:
                self.procedures[st.name] = st
        changed = _changed_names(self.tree, rebinds=False)
        for st in self.tree.body:  # module-level literal sequences bound once and never changed, seen by functions
            if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name) \
                    and isinstance(st.value, (pyast.List, pyast.Tuple)) and stores.get(st.targets[0].id) == 1 \
                    and st.targets[0].id not in changed:
                self.module_lists[st.targets[0].id] = st.value
        self._dict_facts(stores)
        self.tree.body = self._block(self.tree.body, {}, top=True)
        pyast.fix_missing_locations(self.tree)
        return self.tree

    def _survey(self) -> dict[str, int]:
        """One pass over the file: how often each name is stored, whether it spreads `**x`; then
        framework aliases and functools partials rewritten when it has any."""
        stores: dict[str, int] = {}
        aliased = partials = False
        for n in pyast.walk(self.tree):
            if isinstance(n, pyast.Name):
                if isinstance(n.ctx, pyast.Store):
                    stores[n.id] = stores.get(n.id, 0) + 1
            elif isinstance(n, pyast.keyword):
                self.spreads = self.spreads or n.arg is None
            elif isinstance(n, pyast.ImportFrom):
                aliased = aliased or any(a.asname for a in n.names)
            elif isinstance(n, pyast.Assign):
                partials = partials or _is_partial(n)
        if aliased:
            _unalias(self.tree)
        if partials:
            self.spreads = _apply_partials(self.tree) or self.spreads
        return stores

    # -- factories ------------------------------------------------------------------
    def _is_factory(self, fn: _Fn) -> bool:
        body = _straight_line(fn)
        if body is None:
            return False
        ret = body[-1].value  # type: ignore[attr-defined]
        product: Optional[pyast.AST] = ret
        if isinstance(ret, pyast.Name):
            product = next((s.value for s in body[:-1] if isinstance(s, pyast.Assign) and len(s.targets) == 1
                            and isinstance(s.targets[0], pyast.Name) and s.targets[0].id == ret.id), None)
        if not isinstance(product, pyast.Call):
            return False
        name = callee(product)
        return name in _FACTORY_PRODUCTS or name.endswith(_FACTORY_PRODUCTS_SUFFIX)

    def _is_builder(self, fn: _Fn) -> bool:
        """`def setup(): a = AssistantAgent(...); b = ...; return a, b` (or a list, or one name)."""
        body = _straight_line(fn)
        if body is None:
            return False
        ret = body[-1].value  # type: ignore[attr-defined]
        if not isinstance(ret, (pyast.Tuple, pyast.List, pyast.Name)):
            return False
        return any(isinstance(st, pyast.Assign) and isinstance(st.value, pyast.Call)
                   and (callee(st.value) in _FACTORY_PRODUCTS or callee(st.value).endswith(_FACTORY_PRODUCTS_SUFFIX)
                        or callee(st.value) in _CHAT_PRODUCTS)
                   for st in body[:-1])

    def _inline_builder(self, fn: _Fn, call: pyast.Call, target: pyast.AST) \
            -> Optional[list[pyast.stmt]]:
        env = self._args_env(fn, call)
        if env is None:
            return None
        body = [copy.deepcopy(s) for s in _code(fn.body)]
        ret, rest = body[-1].value, body[:-1]  # type: ignore[attr-defined]
        self.counter += 1
        local_names = {t.id for s in rest if isinstance(s, pyast.Assign) for t in s.targets
                       if isinstance(t, pyast.Name)}
        rename = {n: pyast.Name(id=f"__inl{self.counter}_{n}", ctx=pyast.Load()) for n in local_names}
        direct = _returned_locals(ret, target, local_names, rename)
        subst = _Subst({**env, **rename})
        out: list[pyast.stmt] = []
        for st in rest:
            if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name):
                st.value = subst.visit(st.value)
                st.targets[0] = pyast.Name(id=rename[st.targets[0].id].id, ctx=pyast.Store())
            else:
                st = subst.visit(st)
            out.append(st)
        if not direct:
            value = subst.visit(ret)
            assign = pyast.Assign(targets=[target], value=value)  # type: ignore[list-item]
            out.append(pyast.copy_location(assign, call))
        return out

    def _procedure_call(self, st: pyast.stmt) -> Optional[list[pyast.stmt]]:
        """`wire(a, b)` as a statement, `wire` a configuring function (`_procedure`): its statements."""
        call = st.value if isinstance(st, pyast.Expr) else None
        if isinstance(call, pyast.Call) and isinstance(call.func, pyast.Name) and call.func.id in self.procedures \
                and call.func.id not in self.active:
            return self._inline_procedure(self.procedures[call.func.id], call)
        return None

    def _inline_procedure(self, fn: _Fn, call: pyast.Call) -> Optional[list[pyast.stmt]]:
        """The statements of a configuring function (`_procedure`) run by `call`: parameters replaced
        by the arguments, locals renamed apart; each keeps its position in the function."""
        env = self._args_env(fn, call)
        body = _procedure(fn)  # type: ignore[arg-type]
        if env is None or body is None or self.copies + sum(1 for b in body for _ in pyast.walk(b)) > MAX_COPIES:
            return None
        local_names = {n.id for st in body for n in pyast.walk(st)
                       if isinstance(n, pyast.Name) and isinstance(n.ctx, pyast.Store)}
        if local_names & set(env):
            return None  # a parameter rebound in the body
        self.copies += sum(1 for b in body for _ in pyast.walk(b))
        self.counter += 1
        rename = _Rename({n: f"__inl{self.counter}_{n}" for n in local_names})
        subst = _Subst(env)
        out = [subst.visit(rename.visit(copy.deepcopy(st))) for st in body]
        for node in (n for st in out for n in pyast.walk(st)):
            node._turnflow_via = call  # type: ignore[attr-defined]  # the call that ran it (for messages)
        return out

    def _args_env(self, fn: _Fn, call: pyast.Call) -> Optional[dict[str, pyast.AST]]:
        params = [a.arg for a in fn.args.args]
        defaults = fn.args.defaults
        env: dict[str, pyast.AST] = {}
        for i, d in enumerate(defaults):
            env[params[len(params) - len(defaults) + i]] = d
        if any(isinstance(a, pyast.Starred) for a in call.args) or len(call.args) > len(params):
            return None
        for p, a in zip(params, call.args):
            env[p] = a
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in params:
                if kw.arg is None and fn.args.kwarg is None:
                    return None
                continue
            env[kw.arg] = kw.value
        if any(p not in env for p in params):
            return None
        return env

    def _inline(self, fn: _Fn, call: pyast.Call, target: Optional[str]) \
            -> Optional[tuple[pyast.AST, list[pyast.stmt]]]:
        """(the returned expression, the statements to run after binding it)."""
        env = self._args_env(fn, call)
        if env is None:
            return None
        body = [copy.deepcopy(s) for s in _code(fn.body)]
        ret = body[-1].value  # type: ignore[attr-defined]
        rest = body[:-1]
        self.counter += 1
        local_names = {t.id for s in rest if isinstance(s, pyast.Assign) for t in s.targets
                       if isinstance(t, pyast.Name)}
        rename: dict[str, pyast.AST] = {}
        for n in local_names:
            if isinstance(ret, pyast.Name) and n == ret.id and target is not None:
                rename[n] = pyast.Name(id=target, ctx=pyast.Load())
            else:
                rename[n] = pyast.Name(id=f"__inl{self.counter}_{n}", ctx=pyast.Load())
        subst = _Subst({**env, **rename})
        new_rest: list[pyast.stmt] = []
        product = None
        for s in rest:
            if isinstance(s, pyast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], pyast.Name):
                name = s.targets[0].id
                s.value = subst.visit(s.value)
                s.targets[0] = pyast.Name(id=rename[name].id, ctx=pyast.Store())  # type: ignore[attr-defined]
                if isinstance(ret, pyast.Name) and name == ret.id:
                    product = s.value
                    continue
            else:
                s = subst.visit(s)
            new_rest.append(s)
        if product is None:
            product = subst.visit(ret)
        _at_call(product, new_rest, call)
        return product, new_rest

    class _InlineExpr(pyast.NodeTransformer):
        def __init__(self, rw: "Rewriter"):
            self.rw = rw

        def visit_Call(self, node: pyast.Call):
            self.generic_visit(node)
            if isinstance(node.func, pyast.Name) and node.func.id in self.rw.factories:
                done = self.rw._inline(self.rw.factories[node.func.id], node, None)
                if done is not None and not done[1]:
                    return done[0]
            return node


    # -- literal dicts (`**shared`) ---------------------------------------------------------
    @property
    def changed_in_defs(self) -> set[str]:
        """The names a function, lambda or class changes (or hands on) as free variables: a dict of
        that name may change whenever code runs, and is never read (computed on first use)."""
        if self._changed_in_defs is None:
            self._changed_in_defs = set()
            for fn in pyast.walk(self.tree):
                if isinstance(fn, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.Lambda, pyast.ClassDef)):
                    own = _stored(fn) | {a.arg for a in pyast.walk(fn) if isinstance(a, pyast.arg)}
                    declared = {x for n in pyast.walk(fn) if isinstance(n, (pyast.Global, pyast.Nonlocal))
                                for x in n.names}
                    body = fn.body if isinstance(fn.body, list) else [fn.body]
                    self._changed_in_defs |= {x for st in body for x in _dict_unsafe(st)} - (own - declared)
        return self._changed_in_defs

    def _dict_facts(self, stores: dict[str, int]) -> None:
        """The module's literal dicts bound once, changed nowhere, whose values' names are bound at
        most once (functions see them); nothing to do in a file that spreads no `**x`."""
        if not self.spreads:
            return
        found = []
        for st in self.tree.body:
            if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name) \
                    and stores.get(st.targets[0].id) == 1:
                d = _literal_dict(st.value, self.module_dicts.get)
                if d is not None and all(stores.get(x, 0) <= 1 for x in _value_names(d)):
                    found.append(st.targets[0].id)
                    self.module_dicts[st.targets[0].id] = d
        unsafe = _dict_unsafe(self.tree, stores=False) | self.changed_in_defs if found else set()
        for name in found:
            if name in unsafe:
                del self.module_dicts[name]

    def _seeded(self, fn: pyast.AST) -> dict[str, pyast.AST]:
        """The module's literal dicts a function (class) body sees: those whose name and values'
        names it does not bind itself."""
        own = _stored(fn) | {a.arg for a in pyast.walk(fn) if isinstance(a, pyast.arg)}
        return {_DICT_KEY + name: d for name, d in self.module_dicts.items()
                if name not in own and not (_value_names(d) & own)}

    def _dict_step(self, st: pyast.stmt, lists: dict[str, pyast.AST]) -> None:
        """Before `st` runs: its `**d` of known literal dicts expanded (simple statements), then the
        dicts it may change, or whose values' names it binds again, forgotten."""
        compound = isinstance(st, (pyast.If, pyast.With, pyast.AsyncWith, pyast.Try, pyast.For, pyast.AsyncFor,
                                   pyast.While, pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)) \
            or type(st).__name__ in ("Match", "TryStar")
        if not self.spreads:
            return  # no `**x` in the file: no dict to read
        if not compound and any(isinstance(n, pyast.keyword) and n.arg is None for n in pyast.walk(st)):
            _expand_spreads(st, lambda name: lists.get(_DICT_KEY + name))  # type: ignore[arg-type,return-value]
        if isinstance(st, pyast.If):
            heads: list[pyast.AST] = [st.test]
        elif isinstance(st, (pyast.With, pyast.AsyncWith)):
            heads = list(st.items)
        elif isinstance(st, pyast.Try):
            heads = []
        else:
            heads = [st]  # the whole statement: a loop body runs again, a def or class later
        self._forget_dicts(lists, heads)

    def _forget_dicts(self, lists: dict[str, pyast.AST], nodes: list[pyast.AST]) -> None:
        keys = [k for k in lists if k.startswith(_DICT_KEY)]
        if not keys:
            return
        names = {n.id for node in nodes for n in pyast.walk(node) if isinstance(n, pyast.Name)}
        if not any(k[len(_DICT_KEY):] in names or _value_names(lists[k]) & names for k in keys):
            return  # the statements touch no known dict, nor the names their values use
        changed = {x for n in nodes for x in _dict_unsafe(n)}
        bound = {x for n in nodes for x in _stored(n)}
        for key in keys:
            if key[len(_DICT_KEY):] in changed or _value_names(lists[key]) & bound:
                del lists[key]

    def _dict_binding(self, st: pyast.stmt, lists: dict[str, pyast.AST]) -> None:
        """`name = {...}` / `dict(...)` (its spreads known): a literal dict from here on."""
        if self.spreads and isinstance(st, pyast.Assign) and len(st.targets) == 1 \
                and isinstance(st.targets[0], pyast.Name) and st.targets[0].id not in self.changed_in_defs:
            d = _literal_dict(st.value, lambda name: lists.get(_DICT_KEY + name))  # type: ignore[arg-type,return-value]
            if d is not None:
                lists[_DICT_KEY + st.targets[0].id] = d

    # -- blocks ---------------------------------------------------------------------
    def _block(self, body: list[pyast.stmt], env: dict[str, pyast.AST], top: bool = False,
               lists: Optional[dict[str, pyast.AST]] = None) -> list[pyast.stmt]:
        out: list[pyast.stmt] = []
        if lists is None:
            lists = {}  # names bound to literal sequences in this block, flow-sensitive
        for st in body:
            out.extend(self._stmt(st, env, lists))
        return out

    def _lookup_seq(self, node: pyast.AST, lists: dict[str, pyast.AST]) -> Optional[list[pyast.AST]]:
        if isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name) and not node.keywords \
                and node.func.id in ("range", "enumerate") and len(node.args) in (1, 2):
            return self._counted(node, lists)
        copied = _copied(node)
        if copied is not None:
            return self._lookup_seq(copied, lists)
        if isinstance(node, pyast.Name):
            if node.id in lists:
                return self._lookup_seq(lists[node.id], {k: v for k, v in lists.items() if k != node.id})
            if node.id in self.module_lists:
                return self._lookup_seq(self.module_lists[node.id], {})
            return None
        return sequence(node, lambda n: self._lookup_seq(n, lists))

    def _counted(self, node: pyast.Call, lists: dict[str, pyast.AST]) -> Optional[list[pyast.AST]]:
        """`range(n)`, `range(a, b)`, `range(len(xs))` with literal bounds or a known `xs`;
        `enumerate(xs)` → `(i, x)` pairs."""
        if node.func.id == "enumerate":  # type: ignore[attr-defined]
            if len(node.args) != 1:
                return None
            elems = self._lookup_seq(node.args[0], lists)
            if elems is None:
                return None
            return [pyast.Tuple(elts=[pyast.Constant(value=i), e], ctx=pyast.Load())  # type: ignore[list-item]
                    for i, e in enumerate(elems)]
        bounds = []
        for a in node.args:
            if isinstance(a, pyast.Constant) and isinstance(a.value, int) and not isinstance(a.value, bool):
                bounds.append(a.value)
            elif isinstance(a, pyast.Call) and isinstance(a.func, pyast.Name) and a.func.id == "len" \
                    and len(a.args) == 1 and (elems := self._lookup_seq(a.args[0], lists)) is not None:
                bounds.append(len(elems))
            else:
                return None
        lo, hi = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        if hi - lo > MAX_UNROLL:
            return None
        return [pyast.Constant(value=i) for i in range(lo, hi)]

    def _stmt(self, st: pyast.stmt, env: dict[str, pyast.AST], lists: dict[str, pyast.AST]) -> list[pyast.stmt]:
        if env:
            st = _Subst(env).visit(st)
        self._dict_step(st, lists)
        out = self._statement(st, lists)
        if isinstance(st, (pyast.For, pyast.AsyncFor)) and len(out) == 1 and out[0] is st:
            self._forget_dicts(lists, [st])  # a loop kept as a loop: its body may run any number of times
        self._dict_binding(st, lists)
        return out

    def _statement(self, st: pyast.stmt, lists: dict[str, pyast.AST]) -> list[pyast.stmt]:
        if isinstance(st, (pyast.FunctionDef, pyast.AsyncFunctionDef, pyast.ClassDef)):
            st.body = self._block(st.body, {}, lists=self._seeded(st)) or [pyast.Pass()]  # nested scopes: their own blocks
            return [st]
        if isinstance(st, (pyast.If, pyast.With, pyast.AsyncWith, pyast.Try)):
            self._branches(st, lists)
            return [st]
        if isinstance(st, pyast.While):
            _forget(lists, _changed_names(st))  # changed as many times as it turns: no longer known
            return [st]
        if isinstance(st, pyast.For):
            return self._for(st, lists)
        if isinstance(st, pyast.Assign) and len(st.targets) == 1:
            done = self._assign(st, lists)
            if done is not None:
                return done
        inlined = self._procedure_call(st)
        if inlined is not None:
            name = st.value.func.id  # type: ignore[attr-defined]
            self.active.add(name)  # a function that calls itself is not inlined again inside itself
            try:
                return [s for one in inlined for s in self._stmt(one, {}, lists)]
            finally:
                self.active.discard(name)
        if self.factories:  # factories used inside expressions (lists of agents, arguments)
            st = self._InlineExpr(self).visit(st)
        # list bindings and mutations
        if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name):
            _forget(lists, _changed_names(st.value, rebinds=False))  # `last = xs.pop()`: xs is no longer known
            self._list_binding(st.targets[0].id, st.value, lists)
            return [st]
        mutated = self._mutation(st, lists)
        if mutated is not None:
            return [mutated]
        _forget(lists, _changed_names(st))  # `xs.remove(a)`, `xs[0] = a`, `xs += unknown`: no longer known
        return [st]

    def _for(self, st: pyast.For, lists: dict[str, pyast.AST]) -> list[pyast.stmt]:
        """A loop over a known sequence, unrolled (bounded); any other loop, kept."""
        elements = self._lookup_seq(st.iter, lists)
        cost = len(elements) * sum(1 for b in st.body for _ in pyast.walk(b)) if elements is not None else 0
        if elements is not None and not st.orelse and not _has_jump(st.body) and len(elements) <= MAX_UNROLL \
                and self.copies + cost <= MAX_COPIES:
            self.copies += cost
            out: list[pyast.stmt] = []
            for e in elements:
                loop_env: dict[str, pyast.AST] = {}
                if not _bind(st.target, e, loop_env):
                    break
                for s in st.body:
                    out.extend(self._stmt(copy.deepcopy(s), loop_env, lists))
            else:
                return out
        st.body = self._block(st.body, {}) or [pyast.Pass()]
        _forget(lists, _changed_names(st))  # changed as many times as the loop turns: no longer known
        return [st]

    def _assign(self, st: pyast.Assign, lists: dict[str, pyast.AST]) -> Optional[list[pyast.stmt]]:
        """`a, b = X, Y`; `x = factory(...)`; `a, b = setup(...)` (a builder): the statements they
        stand for, or None (nothing to rewrite)."""
        target, value = st.targets[0], st.value
        if isinstance(target, pyast.Tuple) and isinstance(value, pyast.Tuple) and len(target.elts) == len(value.elts) \
                and all(isinstance(t, pyast.Name) for t in target.elts):
            out = []
            for t, v in zip(target.elts, value.elts):
                a = pyast.Assign(targets=[pyast.Name(id=t.id, ctx=pyast.Store())], value=v)  # type: ignore[attr-defined]
                pyast.copy_location(a, st)
                out.extend(self._stmt(a, {}, lists))
            return out
        if not (isinstance(value, pyast.Call) and isinstance(value.func, pyast.Name)):
            return None
        if isinstance(target, pyast.Name) and value.func.id in self.factories:
            done = self._inline(self.factories[value.func.id], value, target.id)
            if done is not None:
                st.value = done[0]  # type: ignore[assignment]
                lists.pop(target.id, None)
                return [st] + done[1]
        if isinstance(target, (pyast.Name, pyast.Tuple, pyast.List)) and value.func.id in self.builders:
            done_b = self._inline_builder(self.builders[value.func.id], value, target)
            if done_b is not None:
                self.inlined.add(value.func.id)
                out_b: list[pyast.stmt] = []
                for s2 in done_b:
                    out_b.extend(self._stmt(s2, {}, lists))
                return out_b
        return None

    def _branches(self, st: Union[pyast.If, pyast.With, pyast.AsyncWith, pyast.Try],
                  lists: dict[str, pyast.AST]) -> None:
        """`with` and a `try` body run unconditionally: list changes in them are followed as in
        straight-line code. An `if` branch or an `except` handler folds `xs.append(...)` into a
        binding of its own (`xs = [...]` in the branch: a run-time choice the front ends report);
        after it, a list a branch changed is no longer known (later appends are not folded)."""
        if isinstance(st, (pyast.With, pyast.AsyncWith)):
            st.body = self._block(st.body, {}, lists=lists) or [pyast.Pass()]
            return
        branches: list[dict[str, pyast.AST]] = []
        if isinstance(st, pyast.Try):
            st.body = self._block(st.body, {}, lists=lists) or [pyast.Pass()]
            for h in st.handlers:
                branches.append(dict(lists))
                h.body = self._block(h.body, {}, lists=branches[-1]) or [pyast.Pass()]
            if st.orelse:
                st.orelse = self._block(st.orelse, {}, lists=lists)
            if st.finalbody:
                st.finalbody = self._block(st.finalbody, {}, lists=lists)
        else:
            branches = [dict(lists), dict(lists)]
            st.body = self._block(st.body, {}, lists=branches[0]) or [pyast.Pass()]
            if st.orelse:
                st.orelse = self._block(st.orelse, {}, lists=branches[1])
        for name in list(lists):
            if any(b.get(name) is not lists[name] for b in branches):
                del lists[name]

    def _list_binding(self, name: str, value: pyast.expr, lists: dict[str, pyast.AST]) -> None:
        """`name = [...]`, or a new list built from known ones in straight-line code (`a + b`,
        `list(a)`, `a.copy()`): its elements are known; any other binding forgets it."""
        if isinstance(value, (pyast.List, pyast.Tuple)):
            lists[name] = value
            return
        built = self._lookup_seq(value, lists) if isinstance(value, (pyast.BinOp, pyast.Call)) else None
        if built is None:
            lists.pop(name, None)
            return
        new = pyast.copy_location(pyast.List(elts=built, ctx=pyast.Load()), value)  # type: ignore[arg-type]
        new.end_lineno, new.end_col_offset = value.end_lineno, value.end_col_offset
        lists[name] = new

    def _mutation(self, st: pyast.stmt, lists: dict[str, pyast.AST]) -> Optional[pyast.stmt]:
        name = None
        added: Optional[list[pyast.AST]] = None
        if isinstance(st, pyast.Expr) and isinstance(st.value, pyast.Call) \
                and isinstance(st.value.func, pyast.Attribute) and isinstance(st.value.func.value, pyast.Name) \
                and st.value.func.attr in ("append", "extend") and len(st.value.args) == 1 \
                and not st.value.keywords:
            name = st.value.func.value.id
            arg = st.value.args[0]
            added = [arg] if st.value.func.attr == "append" else self._lookup_seq(arg, lists)
        elif isinstance(st, pyast.AugAssign) and isinstance(st.op, pyast.Add) and isinstance(st.target, pyast.Name):
            name = st.target.id
            added = self._lookup_seq(st.value, lists)
        if name is None or added is None or name not in lists:
            return None
        base = self._lookup_seq(lists[name], {k: v for k, v in lists.items() if k != name})
        if base is None:
            return None
        new = pyast.List(elts=base + added, ctx=pyast.Load())  # type: ignore[arg-type]
        pyast.copy_location(new, lists[name])
        new.end_lineno, new.end_col_offset = st.end_lineno, st.end_col_offset
        lists[name] = new
        assign = pyast.Assign(targets=[pyast.Name(id=name, ctx=pyast.Store())], value=new)
        return pyast.copy_location(assign, st)


def _returned_locals(ret: pyast.AST, target: pyast.AST, local_names: set[str], rename: dict) -> bool:
    """When a builder returns its own locals (`return chat, manager`) into names of the caller
    (`chat, manager = build(...)`), the locals take the caller's names (in `rename`): True."""
    pairs: list[tuple[pyast.AST, pyast.AST]] = [(ret, target)]
    if isinstance(ret, (pyast.Tuple, pyast.List)) and isinstance(target, (pyast.Tuple, pyast.List)) \
            and len(ret.elts) == len(target.elts):
        pairs = list(zip(ret.elts, target.elts))
    direct = all(isinstance(r, pyast.Name) and r.id in local_names and isinstance(t, pyast.Name) for r, t in pairs)
    if direct:
        for r, t in pairs:
            rename[r.id] = pyast.Name(id=t.id, ctx=pyast.Load())  # type: ignore[attr-defined]
    return direct


def _at_call(product: pyast.AST, stmts: list[pyast.stmt], call: pyast.Call) -> None:
    """An inlined factory's product and statements are at the call (the agent is created there)."""
    nodes: list[Union[pyast.expr, pyast.stmt]] = [product] if isinstance(product, pyast.Call) else []
    nodes += [n for st in stmts for n in pyast.walk(st) if isinstance(n, (pyast.expr, pyast.stmt))]
    for node in nodes:
        node.lineno, node.col_offset = call.lineno, call.col_offset
        node.end_lineno, node.end_col_offset = call.end_lineno, call.end_col_offset


def rewrite(tree: pyast.Module) -> tuple[pyast.Module, Rewriter]:
    rw = Rewriter(tree)
    return rw.run(), rw


def closure(outer: pyast.FunctionDef, call: pyast.Call) -> Optional[pyast.FunctionDef]:
    """`make_selector(a, b)` where `def make_selector(x, y): def pick(...): ...; return pick`:
    the inner function with the outer parameters replaced by the call's arguments."""
    body = _code(outer.body)
    if not body or not isinstance(body[-1], pyast.Return) or not isinstance(body[-1].value, pyast.Name):
        return None
    name = body[-1].value.id
    inner = next((s for s in body if isinstance(s, (pyast.FunctionDef, pyast.AsyncFunctionDef)) and s.name == name),
                 None)
    if inner is None:
        return None
    env = Rewriter(pyast.Module(body=[], type_ignores=[]))._args_env(outer, call)
    if env is None:
        return None
    shadow = {a.arg for a in inner.args.args}
    fn = copy.deepcopy(inner)
    fn.body = [_Subst({k: v for k, v in env.items() if k not in shadow}).visit(s) for s in fn.body]
    return fn  # type: ignore[return-value]
