"""Reading custom speaker-selection functions precisely, one speaker at a time.

Used for classic GroupChat `speaker_selection_method=f` (`f(last_speaker, groupchat)`)
and AutoGen's `SelectorGroupChat(selector_func=f, candidate_func=g)` (`f(messages)`).

For each possible last speaker X the function body is evaluated symbolically:
- tests on the last speaker (`last_speaker is A`, `==`, `!=`, `.name == "A"`, `in [A, B]`,
  `not`, `messages[-1].source == "A"`, through local aliases like `last = messages[-1]`)
  are decided statically for X;
- tests on the last message's text (`"S" in content`, `startswith`, `endswith`, `==`,
  case-folded with `.lower()`) become `when text contains "S"` terms (exact for `in`,
  TF406 otherwise), negated ones (`not in`, `!=`, `not (...)`) `not text contains "S"`;
  `or` gives one alternative per operand; first-match rule order gives `elif`/`else`
  their meaning;
- anything else (guards on `len(messages)`, loops, calls) degrades
  only that branch: its targets become routing tools of X (TF406 at the branch), and
  evaluation continues after it.

The result per speaker is an ordered list of `Outcome`s that the front ends emit.
"""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass, field
from typing import Callable, Optional

from turnflow.migrate.pyread import Module, callee, one_line
from turnflow.diagnostics.listing import bounded

MAX_PATHS = 64  # outcomes per speaker (bounded work on pathological functions)
MAX_STEPS = 4000  # statements evaluated per speaker, over all paths


class _Budget(Exception):
    pass


@dataclass
class Outcome:
    terms: list            # [("text", s), ...] — all must hold
    # an agent name | ("terminate", r) | ("method", m) | ("model",) | ("candidates", [...]) | ("unknown",)
    target: object
    maybe: bool = False    # reached through a condition the flow cannot express
    at: Optional[pyast.AST] = None


@dataclass
class Note:
    code: str
    message: str
    at: pyast.AST
    speaker: Optional[str] = None  # the first speaker whose rules it concerns


@dataclass
class Reading:
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)


def _one_term(alternatives: list):
    """One condition term for a list of alternatives (each a list of terms that must all hold)."""
    conj = [t[0] if len(t) == 1 else ("all", t) for t in alternatives]
    return conj[0] if len(conj) == 1 else ("any", conj)


def _negate(inner: list) -> list:
    """`not` of a condition's alternatives."""
    if inner == [[]]:
        return []
    if inner == [] or any(not alt for alt in inner):
        return [] if inner else [[]]
    return [[("not", _one_term(inner))]]


def _reads_tool_name(fn: pyast.FunctionDef) -> bool:
    """`fn(message)` returns the name of its first tool call: its strings include "tool_calls",
    "function" and "name", and it calls only `.get` and `isinstance`."""
    strings = {n.value for n in pyast.walk(fn) if isinstance(n, pyast.Constant) and isinstance(n.value, str)}
    calls = {callee(n) for n in pyast.walk(fn) if isinstance(n, pyast.Call)}
    return len(fn.args.args) == 1 and {"tool_calls", "function", "name"} <= strings and calls <= {"get", "isinstance"}


class _Unknown(Exception):
    def __init__(self, what: str, at: pyast.AST):
        super().__init__(what)
        self.what, self.at = what, at


class Evaluator:
    """`style`: "classic" (returns an agent, a method name or None = end) or "selector"
    (returns a name, or None = the model picks) or "candidates" (returns a list of names) or
    "reasons" (a classic function of the last speaker that returns a close reason, or None: the
    chat goes on)."""

    def __init__(self, mod: Module, fn, style: str, agent_name: Callable[[pyast.AST], Optional[str]],
                 names: list[str]):
        self.mod, self.fn, self.style = mod, fn, style
        self.agent_name = agent_name
        self.names = names
        args = [a.arg for a in fn.args.args] if not isinstance(fn, pyast.Lambda) else [a.arg for a in fn.args.args]
        if args and args[0] in ("self", "cls"):
            args = args[1:]
        classic = style in ("classic", "reasons")
        self.speaker_param = args[0] if classic and args else None
        self.messages_param = args[0] if not classic and args else None
        self.group_param = args[1] if classic and len(args) > 1 else None
        self.notes: list[Note] = []
        self._noted: set[tuple] = set()
        self.opening: Optional[str] = None  # who sent the opening message (classic: the initiator)
        self._speaker: Optional[str] = None
        self._steps = 0
        self.turn: Optional[str] = None  # the opening speaker's "first" turn or a "later" one (see read)

    def note(self, code: str, message: str, at: pyast.AST) -> None:
        key = (code, message, getattr(at, "lineno", 0), getattr(at, "col_offset", 0))
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(Note(code, message, at, self._speaker))

    # -- expressions --------------------------------------------------------------------------
    def _subst(self, node: pyast.AST, env: dict) -> pyast.AST:
        while isinstance(node, pyast.Name) and node.id in env:
            node = env[node.id]
        return node

    def _is_messages(self, node: pyast.AST, env: dict) -> bool:
        node = self._subst(node, env)
        if isinstance(node, pyast.Name) and node.id == self.messages_param:
            return True
        # groupchat.messages, self.messages
        return isinstance(node, pyast.Attribute) and node.attr in ("messages", "chat_messages")

    def _is_last_message(self, node: pyast.AST, env: dict) -> bool:
        node = self._subst(node, env)
        if isinstance(node, pyast.Subscript) and self._is_messages(node.value, env):
            i = self.mod.literal(node.slice)
            return i == -1
        return False

    def _classic_return(self, value: pyast.AST, x: str, env: dict) -> object:
        """A classic selection function's return: a method name, an agent (directly, by name,
        `groupchat.agents[i]`), the speaker itself; else unknown."""
        if isinstance(value, pyast.Constant) and isinstance(value.value, str):
            return ("method", value.value.lower())
        n = self.agent_name(value)
        if n is not None:
            return n
        if isinstance(value, pyast.Call) and callee(value) == "agent_by_name" and value.args:
            found = self._by_name(value, x, env)
            if found is not None:
                return found
        if isinstance(value, pyast.Subscript) and isinstance(value.value, pyast.Attribute) \
                and value.value.attr == "agents":
            i = self.mod.literal(value.slice)
            if isinstance(i, int) and not isinstance(i, bool) and -len(self.names) <= i < len(self.names):
                return self.names[i]
        return x if self._is_speaker(value, env) else ("unknown",)

    def _by_name(self, value: pyast.Call, x: str, env: dict) -> object:
        """`groupchat.agent_by_name(arg)`: the speaker (its own name), `previous` (the name of the
        message before the last), an agent named by a string; None otherwise."""
        arg = self._subst(value.args[0], env)
        if self._is_speaker(arg, env) or self._speaker_name_expr(arg, env):
            return x
        if self._is_before_last_name(arg, env):
            if x == self.opening and self.turn != "later":  # later turns: a message before the last exists
                self.note("TF406", f"`{pyast.unparse(value)}` names the agent that spoke before the last one; "
                          "on the opening turn there is none (the source raises IndexError), the flow's "
                          "`previous` is then `next`", value)
            return ("previous",)
        raw = self.mod.string(arg)
        return self.agent_name(pyast.Constant(value=raw)) if raw is not None else None

    def _is_before_last_name(self, node: pyast.AST, env: dict) -> bool:
        """`messages[-2]["name"]` (also `.get("name")`, `.source`): who spoke before the last speaker."""
        node = self._subst(node, env)
        msg: Optional[pyast.AST] = None
        if isinstance(node, pyast.Subscript) and self.mod.literal(node.slice) == "name":
            msg = node.value
        elif isinstance(node, pyast.Call) and callee(node) == "get" and isinstance(node.func, pyast.Attribute) \
                and node.args and self.mod.literal(node.args[0]) == "name":
            msg = node.func.value
        elif isinstance(node, pyast.Attribute) and node.attr in ("source", "name"):
            msg = node.value
        msg = self._subst(msg, env) if msg is not None else None
        return isinstance(msg, pyast.Subscript) and self._is_messages(msg.value, env) \
            and self.mod.literal(msg.slice) == -2

    def _is_speaker(self, node: pyast.AST, env: dict) -> bool:
        """The last speaker, as an agent (classic) or its name (selector)."""
        node = self._subst(node, env)
        if isinstance(node, pyast.Name) and node.id == self.speaker_param and node.id is not None:
            return True
        if isinstance(node, pyast.Attribute) and node.attr in ("source", "name") \
                and self._is_last_message(node.value, env):
            return True
        if isinstance(node, pyast.Subscript) and self._is_last_message(node.value, env) \
                and self.mod.literal(node.slice) == "name":
            return True
        return False

    def _speaker_name_expr(self, node: pyast.AST, env: dict) -> bool:
        """`last_speaker.name` (classic) — compared with a string."""
        node = self._subst(node, env)
        return isinstance(node, pyast.Attribute) and node.attr == "name" and self._is_speaker(node.value, env)

    def _name_of(self, node: pyast.AST, env: dict) -> Optional[str]:
        """An agent's flow name (from the agent, `agent.name` or its name string); another string as is."""
        node = self._subst(node, env)
        if isinstance(node, pyast.Attribute) and node.attr == "name":
            n = self.agent_name(node.value)
            if n is not None:
                return n
        n = self.agent_name(node)
        if n is not None:
            return n
        return self.mod.string(node)

    def _content(self, node: pyast.AST, env: dict) -> Optional[str]:
        """The last message's text: "" (plain), "lower" (case-folded), None (not the text)."""
        node = self._subst(node, env)
        if isinstance(node, pyast.Call):
            return self._content_call(node, env)
        if isinstance(node, pyast.Subscript) and self._is_last_message(node.value, env) \
                and self.mod.literal(node.slice) == "content":
            return ""
        if isinstance(node, pyast.Attribute) and node.attr == "content" and self._is_last_message(node.value, env):
            return ""
        return None

    def _content_call(self, node: pyast.Call, env: dict) -> Optional[str]:
        """`text.lower()` / `.strip()` of the text, `msg.to_text()`, `msg.get("content")`, `str(...)`."""
        name = callee(node)
        if name in ("lower", "upper", "casefold", "strip", "rstrip", "lstrip") and isinstance(node.func, pyast.Attribute):
            inner = self._content(node.func.value, env)
            if inner is None:
                return None
            return "lower" if name in ("lower", "upper", "casefold") else inner
        if name in ("to_text", "to_model_text", "get") and isinstance(node.func, pyast.Attribute) \
                and self._is_last_message(node.func.value, env):
            if name == "get" and self.mod.literal(node.args[0] if node.args else None) != "content":
                return None
            return ""
        if name == "str" and node.args:
            return self._content(node.args[0], env)
        return None

    def cond(self, test: pyast.AST, x: str, env: dict):
        """→ list of alternatives (each a list of text terms); [] = false, [[]] = true; raises _Unknown."""
        test = self._subst(test, env)
        if isinstance(test, pyast.BoolOp):
            return self._bool(test, x, env)
        if isinstance(test, pyast.UnaryOp) and isinstance(test.op, pyast.Not):
            return _negate(self.cond(test.operand, x, env))
        if isinstance(test, pyast.Constant):
            return [[]] if test.value else []
        if self._is_messages(test, env):
            return [[]]  # the opening message is always there: the list is never empty
        if isinstance(test, (pyast.List, pyast.Tuple)):
            return [[]] if test.elts else []
        if isinstance(test, pyast.Compare) and len(test.ops) == 1:
            found = self._compare(test, x, env)
            if found is not None:
                return found
        if isinstance(test, pyast.Call) and callee(test) in ("startswith", "endswith") and test.args \
                and isinstance(test.func, pyast.Attribute) and self._content(test.func.value, env) is not None:
            s = self.mod.string(test.args[0])
            if s:
                self.note("TF406", f"`{pyast.unparse(test)}` uses `{callee(test)}`; approximated by "
                          f"`text contains \"{s}\"`", test)
                return [[("text", s)]]
        raise _Unknown(f"`{pyast.unparse(test)[:60]}`", test)

    def _bool(self, test: pyast.BoolOp, x: str, env: dict) -> list:
        parts = [self.cond(v, x, env) for v in test.values]
        if isinstance(test.op, pyast.Or):
            out: list = []
            for p in parts:
                if p == [[]]:
                    return [[]]
                out += p
            return out[:MAX_PATHS]
        acc: list = [[]]
        for p in parts:
            acc = [a + b for a in acc for b in p][:MAX_PATHS]
        return acc

    def _compare(self, test: pyast.Compare, x: str, env: dict) -> Optional[list]:
        """A comparison on the last speaker, the last message's text or the number of messages;
        None when it is none of those."""
        left, op, right = test.left, test.ops[0], test.comparators[0]
        speaker = self._speaker_test(left, op, right, x, env)
        if speaker is not None:
            return speaker
        tool = self._tool_test(op, left, right, env)
        if tool is not None:
            return tool
        text = self._text_test(test, left, op, right, env)
        if text is not None:
            return text
        if self._is_len_messages(left, env) or self._is_len_messages(right, env):
            return self._len_test(test, op, left, right, x, env)
        return None

    def _speaker_test(self, left: pyast.AST, op: pyast.cmpop, right: pyast.AST, x: str, env: dict) -> Optional[list]:
        """`last_speaker is A`, `==`, `!=`, `.name == "A"`, `in [A, B]`: decided for speaker `x`."""
        for a, b in ((left, right), (right, left)):
            if isinstance(op, (pyast.Is, pyast.Eq, pyast.IsNot, pyast.NotEq)) and \
                    (self._is_speaker(a, env) or self._speaker_name_expr(a, env)):
                n = self._name_of(b, env)
                if n is None:
                    if isinstance(self._subst(b, env), pyast.Constant) and b is not None:
                        n = "\0"  # a name that is no agent: never equal
                    else:
                        raise _Unknown(f"`{pyast.unparse(b)}` is not an agent of the chat", b)
                same = n == x
                return [[]] if same == isinstance(op, (pyast.Is, pyast.Eq)) else []
        if isinstance(op, (pyast.In, pyast.NotIn)) and (self._is_speaker(left, env)
                                                        or self._speaker_name_expr(left, env)):
            elems = self.mod.elements(self._subst(right, env))
            if elems is None:
                raise _Unknown(f"`{pyast.unparse(right)}` is not a list written out", right)
            inside = x in [self._name_of(e, env) for e in elems]
            return [[]] if inside == isinstance(op, pyast.In) else []
        return None

    def _tool_test(self, op: pyast.cmpop, left: pyast.AST, right: pyast.AST, env: dict) -> Optional[list]:
        """`tool == "T"` / `!=` on the name of the last message's first tool call: `when tool T` (exact)."""
        if not isinstance(op, (pyast.Eq, pyast.NotEq)):
            return None
        for a, b in ((left, right), (right, left)):
            s = self.mod.string(self._subst(a, env))
            if s and self._is_tool_name(b, env):
                return [[("tool", s)]] if isinstance(op, pyast.Eq) else [[("not", ("tool", s))]]
        return None

    def _is_tool_name(self, node: pyast.AST, env: dict) -> bool:
        """The name of the last message's first tool call: `messages[-1]["tool_calls"][0]["function"]["name"]`,
        or `f(messages[-1])` where `f` is a function of the file that reads just that (a body that
        subscripts `"tool_calls"`, `"function"` and `"name"` and calls nothing but `.get`, as
        `turnflow compile --target ag2-groupchat` writes `_tool`)."""
        node = self._subst(node, env)
        if isinstance(node, pyast.Call) and isinstance(node.func, pyast.Name) and len(node.args) == 1 \
                and not node.keywords and self._is_last_message(node.args[0], env):
            fn = self.mod.functions.get(node.func.id)
            return fn is not None and not isinstance(fn, pyast.Lambda) and _reads_tool_name(fn)
        keys = []
        while isinstance(node, pyast.Subscript):
            keys.append(self.mod.literal(node.slice))
            node = self._subst(node.value, env)
            if self._is_last_message(node, env):
                return keys[::-1] == ["tool_calls", 0, "function", "name"]
        return False

    def _text_test(self, test: pyast.Compare, left: pyast.AST, op: pyast.cmpop, right: pyast.AST,
                   env: dict) -> Optional[list]:
        """`"S" in content` (exact), `not in`, `content == "S"` / `!=` (approximated by `contains`)."""
        if isinstance(op, (pyast.In, pyast.NotIn)):
            s = self._name_of(left, env)
            how = self._content(right, env)
            if s is not None and how is not None:  # `"" in content` too: `text contains ""`, always true
                if how == "lower":
                    self.note("TF406", f"`{pyast.unparse(test)}` tests case-folded text; approximated by "
                              f"`{'not ' if isinstance(op, pyast.NotIn) else ''}text contains \"{s}\"` "
                              "(case-sensitive)", test)
                return [[("text", s) if isinstance(op, pyast.In) else ("not", ("text", s))]]
        if isinstance(op, (pyast.Eq, pyast.NotEq)):
            for a, b in ((left, right), (right, left)):
                s = self.mod.string(self._subst(a, env))
                if s and self._content(b, env) is not None:
                    neg = isinstance(op, pyast.NotEq)
                    self.note("TF406", f"`{pyast.unparse(test)}` tests the whole text with "
                              f"`{'!=' if neg else '=='}`; approximated by `{'not ' if neg else ''}text contains "
                              f"\"{s}\"`", test)
                    return [[("not", ("text", s)) if neg else ("text", s)]]
        return None

    def _len_test(self, test: pyast.Compare, op: pyast.cmpop, left: pyast.AST, right: pyast.AST, x: str,
                  env: dict) -> list:
        """`len(messages) OP k`: decided when it is the same for every length from 1 (the opening
        message is always there); true only for length 1 (the opening turn): false for every
        speaker but the opening one, and for that one decided by `self.turn` when `read` can
        tell its first turn from later ones."""
        on_left = self._is_len_messages(left, env)
        k = self.mod.literal(right if on_left else left)
        if not isinstance(k, int) or isinstance(k, bool) or abs(k) > 10 ** 6:
            raise _Unknown(f"`{pyast.unparse(test)}` (a guard on the number of messages)", test)
        fn = {pyast.Eq: lambda a, b: a == b, pyast.NotEq: lambda a, b: a != b, pyast.Lt: lambda a, b: a < b,
              pyast.LtE: lambda a, b: a <= b, pyast.Gt: lambda a, b: a > b, pyast.GtE: lambda a, b: a >= b}
        compare = fn.get(type(op))
        if compare is None:
            raise _Unknown(f"`{pyast.unparse(test)}` (a guard on the number of messages)", test)

        def holds(n: int) -> bool:
            return bool(compare(n, k) if on_left else compare(k, n))

        later = {holds(n) for n in range(2, abs(k) + 4)} | {holds(10 ** 7)}
        if len(later) == 1 and holds(1) in later:
            return [[]] if holds(1) else []  # the same for every length: decided
        if len(later) == 1:
            if x != self.opening and self.opening is not None:
                return [[]] if later.pop() else []  # only the opening speaker ever sees one message
            if self.turn is not None:
                return [[]] if (holds(1) if self.turn == "first" else later.pop()) else []
            raise _Unknown(f"`{pyast.unparse(test)}` (a guard on the number of messages: the opening turn)", test)
        raise _Unknown(f"`{pyast.unparse(test)}` (a guard on the number of messages)", test)

    def _is_len_messages(self, node: pyast.AST, env: dict) -> bool:
        node = self._subst(node, env)
        return isinstance(node, pyast.Call) and callee(node) == "len" and bool(node.args) \
            and self._is_messages(node.args[0], env)

    def ret(self, value: Optional[pyast.AST], x: str, env: dict) -> object:
        value = self._subst(value, env) if value is not None else None
        if self.style == "reasons":
            if value is None or (isinstance(value, pyast.Constant) and value.value is None):
                return ("continue",)
            reason = self.mod.string(value)
            return ("terminate", reason) if reason is not None else ("unknown",)
        if value is None or (isinstance(value, pyast.Constant) and value.value is None):
            return ("terminate", "custom_selection") if self.style == "classic" else ("model",)
        if self.style == "candidates":
            elems = self.mod.elements(value)
            if elems is not None:
                names = [self._name_of(e, env) for e in elems]
                if all(n in self.names for n in names):
                    return ("candidates", names)
            return ("unknown",)
        if self.style == "classic":
            return self._classic_return(value, x, env)
        return self._named_return(value, x, env)

    def _named_return(self, value: pyast.AST, x: str, env: dict) -> object:
        """`return NAME` of a selector that names the next speaker (AutoGen's selector function)."""
        n = self._name_of(value, env)
        if n in self.names:
            return n
        if self._is_speaker(value, env):
            return x
        if n is not None and self.mod.string(self._subst(value, env)) is not None:
            self.note("TF408", f"`return {one_line(value, 40)}` names `{n}`, which is not a participant "
                      f"({bounded(self.names)}): AutoGen raises ValueError (\"Selector function returned an invalid "
                      "speaker name\") and the run fails there; the flow lets the selector model pick instead", value)
        return ("unknown",)

    # -- statements ---------------------------------------------------------------------------
    def block(self, stmts: list, x: str, terms: list, maybe: bool, env: dict, out: list) -> bool:
        """Evaluate statements path by path (a branch continues with the statements after its
        `if`); append outcomes in first-match order; True when every path returned."""
        for i, st in enumerate(stmts):
            self._steps += 1
            if len(out) > MAX_PATHS:
                raise _Budget()
            if self._steps > MAX_STEPS:
                raise _Budget()
            rest = stmts[i + 1:]
            if isinstance(st, pyast.Return):
                value = self._subst(st.value, env) if st.value is not None else None
                if isinstance(value, pyast.IfExp):
                    return self._if(_if_return(st, value), rest, x, terms, maybe, env, out)
                out.append(Outcome(list(terms), self.ret(st.value, x, env), maybe, st))
                return True
            if isinstance(st, pyast.If):
                return self._if(st, rest, x, terms, maybe, env, out)
            if isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name):
                env[st.targets[0].id] = self._subst(st.value, env)
                continue
            if self._list_change(st, env):
                continue
            if isinstance(st, (pyast.Expr, pyast.Pass, pyast.Import, pyast.ImportFrom, pyast.AnnAssign,
                               pyast.Global, pyast.Nonlocal, pyast.Assert)):
                continue
            if self._lookup_loop(st, env):
                continue
            self._unknown_bindings(st, env)
            # loops, try, with, ...: what returns inside is kept as routing tools; then go on
            inner = [n for n in pyast.walk(st) if isinstance(n, pyast.Return)]
            if inner:
                self.note("TF406", f"`{type(st).__name__.lower()}` statement in the selection function cannot be "
                          "followed without running it; the targets it may return are kept as routing tools",
                          st)
                for r in inner:
                    out.append(Outcome(list(terms), self.ret(r.value, x, {}), True, r))
        return False

    def _if(self, st: pyast.If, rest: list, x: str, terms: list, maybe: bool, env: dict, out: list) -> bool:
        """An `if`: decided, one path per alternative of its test, or (a test the flow cannot say)
        its branch's targets kept as routing tools; each branch continues with `rest`."""
        try:
            alts = self.cond(st.test, x, env)
        except _Unknown as why:
            self.note("TF406", f"the test {why.what} in the selection function cannot be expressed; the "
                      "targets of its branch are kept as routing tools of the speaker", st.test)
            self.block(st.body + rest, x, terms, True, dict(env), out)
            return self.block(st.orelse + rest, x, terms, maybe, env, out)
        if alts == [[]]:
            return self.block(st.body + rest, x, terms, maybe, env, out)
        if alts == []:
            return self.block(st.orelse + rest, x, terms, maybe, env, out)
        for alt in alts:
            self.block(st.body + rest, x, terms + alt, maybe, dict(env), out)
        return self.block(st.orelse + rest, x, terms, maybe, env, out)

    def _list_change(self, st: pyast.stmt, env: dict) -> bool:
        """`xs.append(a)` / `xs.extend([...])` on a local list: folded into its value, True."""
        if not (isinstance(st, pyast.Expr) and isinstance(st.value, pyast.Call)
                and isinstance(st.value.func, pyast.Attribute) and st.value.func.attr in ("append", "extend")
                and isinstance(st.value.func.value, pyast.Name) and len(st.value.args) == 1
                and isinstance(env.get(st.value.func.value.id), (pyast.List, pyast.Tuple))):
            return False
        name, arg = st.value.func.value.id, st.value.args[0]
        added = [arg] if st.value.func.attr == "append" else (self.mod.elements(arg) or [])
        env[name] = pyast.List(elts=list(env[name].elts) + added, ctx=pyast.Load())
        return True

    def _lookup_loop(self, st: pyast.stmt, env: dict) -> bool:
        """`for agent in groupchat.agents: if agent.name == "coder": chosen = agent` (a `break`
        allowed): `chosen` is the agent named "coder" (agent names are unique), else unchanged."""
        found = _loop_lookup(st)
        if found is None:
            return False
        test, inner, v = found
        sides = (test.left, test.comparators[0])
        name = None
        for a, b in (sides, sides[::-1]):
            if isinstance(a, pyast.Attribute) and a.attr == "name" and isinstance(a.value, pyast.Name) \
                    and a.value.id == v:
                name = self.mod.string(self._subst(b, env))
        if name is None:
            return False
        if self.agent_name(pyast.Constant(value=name)) is None:
            return True  # no agent has that name: the variables keep their values
        group = st.iter.value  # type: ignore[attr-defined]
        agent = pyast.Call(func=pyast.Attribute(value=group, attr="agent_by_name", ctx=pyast.Load()),
                           args=[pyast.Constant(value=name)], keywords=[])
        for assign in inner:
            env[assign.targets[0].id] = agent
        return True

    def _unknown_bindings(self, st: pyast.stmt, env: dict) -> None:
        """Names a loop / try / with binds that cannot be followed: unknown afterwards (TF406)."""
        bound = sorted({t.id for n in pyast.walk(st) if isinstance(n, (pyast.Assign, pyast.AugAssign, pyast.For))
                        for t in (n.targets if isinstance(n, pyast.Assign) else [n.target])
                        if isinstance(t, pyast.Name)})
        if not bound:
            return
        for name in bound:
            env[name] = pyast.Name(id="<run time>", ctx=pyast.Load())
        self.note("TF406", f"`{type(st).__name__.lower()}` statement in the selection function sets "
                  f"{bounded(f'`{n}`' for n in bound)}, which cannot be followed without running it; "
                  "what it decides is kept as routing tools", st)

    def read(self, speakers: list[str]) -> Reading:
        """Outcomes per speaker. The opening speaker is read for its first turn (one message so
        far) and its later ones: when nothing can give it the turn again, or both agree, its first
        turn decides (a guard like `len(messages) <= 1` picks the first speaker, exactly)."""
        reading = Reading()
        body = [self.fn.body] if isinstance(self.fn, pyast.Lambda) else self.fn.body
        if isinstance(self.fn, pyast.Lambda):
            body = [pyast.Return(value=self.fn.body)]
            pyast.copy_location(body[0], self.fn)
        for x in speakers:
            if x != self.opening:
                reading.outcomes[x] = self._read_one(body, x)
        if self.opening in speakers:
            x = self.opening
            kept = list(self.notes), set(self._noted)
            self.turn = "first"
            first = self._read_one(body, x)
            first_notes = list(self.notes), set(self._noted)
            self.notes, self._noted = list(kept[0]), set(kept[1])
            self.turn = "later"
            later = self._read_one(body, x)
            self.turn = None
            others = [o for y, outs in reading.outcomes.items() for o in outs] + later
            if _same(first, later) or not any(_may_reach(o.target, x) for o in others):
                reading.outcomes[x] = first
                self.notes, self._noted = first_notes
            elif self._previous_later(x, first, later):
                reading.outcomes[x] = later  # `previous`: the round-robin successor on the first turn
            else:
                self.notes, self._noted = kept
                reading.outcomes[x] = self._read_one(body, x)
            reading.outcomes = {y: reading.outcomes[y] for y in speakers}
        reading.notes = self.notes
        return reading

    def _previous_later(self, x: str, first: list[Outcome], later: list[Outcome]) -> bool:
        """The opening speaker's first and later turns differ only where the later one returns the
        agent that spoke before it and the first one the agent after it in `agents` order: the
        flow's `previous`, which is round robin on the first turn."""
        if x not in self.names or len(first) != len(later):
            return False
        after = self.names[(self.names.index(x) + 1) % len(self.names)]
        pairs = [(f, g) for f, g in zip(first, later) if not _same([f], [g])]
        return bool(pairs) and all(f.terms == g.terms and f.maybe == g.maybe and f.target == after
                                   and g.target == ("previous",) for f, g in pairs)

    def _read_one(self, body: list, x: str) -> list[Outcome]:
        self._speaker = x
        self._steps = 0
        out: list[Outcome] = []
        try:
            done = self.block(body, x, [], False, {}, out)
        except (_Budget, RecursionError):
            self.note("TF404", "the selection function has too many paths to follow; for this speaker the "
                      "choice is left to routing tools among the eligible agents", self.fn)
            return [Outcome([], ("unknown",), False, self.fn)]
        if not done:  # falling off the end returns None
            out.append(Outcome([], self.ret(None, x, {}), False, self.fn))
        return out


def _if_return(st: pyast.Return, value: pyast.IfExp) -> pyast.If:
    """`return a if c else b` as `if c: return a` / `else: return b` (each branch read on its own)."""
    body = pyast.copy_location(pyast.Return(value=value.body), st)
    orelse = pyast.copy_location(pyast.Return(value=value.orelse), st)
    return pyast.copy_location(pyast.If(test=value.test, body=[body], orelse=[orelse]), st)


def _loop_lookup(st: pyast.stmt):
    """(the `==` test, the assignments `x = agent`, the loop variable) of `for agent in g.agents:
    if agent.name == ...: x = agent`, else None."""
    if not isinstance(st, pyast.For) or st.orelse or not isinstance(st.target, pyast.Name) \
            or not (isinstance(st.iter, pyast.Attribute) and st.iter.attr == "agents"):
        return None
    v = st.target.id
    body = [b for b in st.body if not isinstance(b, pyast.Break)]
    if len(body) != 1 or not isinstance(body[0], pyast.If) or body[0].orelse:
        return None
    test, inner = body[0].test, [b for b in body[0].body if not isinstance(b, pyast.Break)]
    if not (isinstance(test, pyast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], pyast.Eq)):
        return None
    if not inner or not all(_assigns_loop_variable(b, v) for b in inner):
        return None
    return test, inner, v


def _assigns_loop_variable(st: pyast.stmt, v: str) -> bool:
    return isinstance(st, pyast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], pyast.Name) \
        and isinstance(st.value, pyast.Name) and st.value.id == v


def _same(a: list[Outcome], b: list[Outcome]) -> bool:
    return [(o.terms, o.target, o.maybe) for o in a] == [(o.terms, o.target, o.maybe) for o in b]


def _may_reach(target: object, x: str) -> bool:
    """Whether an outcome can give `x` the turn (a choice left to the model, `previous`, ... can)."""
    if isinstance(target, str):
        return target == x
    return isinstance(target, tuple) and target[0] in ("method", "model", "unknown", "candidates", "previous") \
        and (target[0] != "candidates" or x in target[1])


def emit(b, x: str, outcomes: list[Outcome], choices: Callable[[Outcome], list[str]],
         after: Callable[[list[str]], object], describe: Callable[[str], str],
         on_choice: Callable[[Outcome], None] = lambda o: None) -> None:
    """Rules for speaker `x` from its outcomes, in order: conditional ones as `when text
    contains` rules, the unreadable ones as routing tools, up to the first unconditional one.
    `choices(o)` lists the agents an outcome leaves to the model; `after(choices)` the fallback."""
    from turnflow.migrate.common import MAX_ROUTES

    tools: set[str] = set()

    def handoff(t) -> None:
        if isinstance(t, str):
            name, desc = f"transfer_to_{t}", describe(t)
        elif t[0] == "terminate":
            name, desc = "end_chat", "End the conversation"
        else:
            return
        if name not in tools:
            tools.add(name)
            b.handoff(x, t, name, desc)

    for o in outcomes:
        t = o.target
        if isinstance(t, tuple) and t[0] in ("method", "model", "unknown", "candidates"):
            options = choices(o)
            if len(options) == 1:
                t = options[0]
            else:
                on_choice(o)
                for y in options[:MAX_ROUTES]:
                    handoff(y)
                if o.maybe:
                    continue
                if o.terms:
                    b.rule(x, after(options), o.terms)
                    continue
                b.rule(x, after(options))
                return
        if o.maybe:
            handoff(t)
        elif o.terms:
            for tool in _tools(o.terms):  # `when tool T`: a routing tool of the speaker
                b.add_tool(x, tool)
            b.rule(x, t, o.terms)
        else:
            b.rule(x, t)
            return


def _tools(terms: list) -> list[str]:
    """The tool names `("tool", T)` terms test, nested ones included, in order."""
    out: list[str] = []
    for t in terms:
        if t[0] == "tool":
            out.append(t[1])
        elif t[0] == "not":
            out += _tools([t[1]])
        elif t[0] in ("any", "all"):
            out += _tools(t[1])
    return out


TASK_SOURCE = "user"  # the source AutoGen gives the task message


def read_selector(team: dict, order: list[str], names, b) -> Optional[dict]:
    """`selector_func` / `candidate_func` of a SelectorGroupChat written in Python → outcomes per
    last speaker (the task's source `user` included, for the first pick), the model's choices
    narrowed by `candidate_func`. None when the team has neither."""
    from turnflow.migrate.common import Pos

    py = team.get("_python") or {}
    for why in (py.get("unreadable") or {}).values():  # a live team's function without source
        b.note("TF404", f"{why}; the flow lets the selector model pick instead", Pos(1, 1))
    reader = py.get("reader")  # an autogen_py.Reader
    if reader is None or not (py.get("selector_func") or py.get("candidate_func")):
        return None
    speakers = order + [TASK_SOURCE]
    readings = _read_selection_functions(py, reader, order, names, b, speakers)
    if not readings:
        return None
    out: dict[str, list] = {"_comments": _reading_comments(readings, order, b)}  # type: ignore[dict-item]
    for x in speakers:
        sel = readings["selector"].outcomes[x] if "selector" in readings else [Outcome([], ("model",))]
        merged: list = []
        for o in sel:
            if o.target == ("model",) and "candidates" in readings:
                for c in readings["candidates"].outcomes[x]:  # the model picks among the candidates
                    merged.append(Outcome(o.terms + c.terms, c.target, o.maybe or c.maybe, c.at))
                    if not c.terms and not c.maybe:
                        break
            else:
                merged.append(o)
        out[x] = merged
    return out


def _read_selection_functions(py: dict, reader, order: list[str], names, b, speakers: list[str]) -> dict:
    """{"selector" / "candidates": the reading of `selector_func` / `candidate_func`}, each function
    that cannot be read a TF404 (the selector model's choice is kept)."""
    from turnflow.migrate.pyread import function_def, pos

    mod = reader.mod

    def agent_name(node) -> Optional[str]:
        a = reader.agent(node)
        raw = a["config"]["name"] if a is not None else mod.string(node)
        return names.map.get(raw) if raw is not None else None

    readings = {}
    for key, style in (("selector_func", "selector"), ("candidate_func", "candidates")):
        node = py.get(key)
        if node is None:
            continue
        fn = function_def(mod, node)
        if fn is None:
            b.note("TF404", f"`{key}` is not a function defined in this file; the selector model's choice is kept",
                   pos(node))
            continue
        ev = Evaluator(mod, fn, style, agent_name, order)
        ev.opening = TASK_SOURCE  # the task message: the selector's first call sees only it
        if not ev.messages_param:
            b.note("TF404", f"`{key}` takes no messages argument; the selector model's choice is kept", pos(node))
            continue
        reading = ev.read(speakers)
        for n in reading.notes:
            b.note(n.code, n.message, pos(n.at), comment=False)  # the comments go above the speaker's rules
        readings[style] = reading
    return readings


def _reading_comments(readings: dict, order: list[str], b) -> dict[str, list[str]]:
    """The readings' notes as comments above each speaker's rules (with the input position, except
    for a live object's)."""
    from turnflow.migrate.common import input_where
    from turnflow.migrate.pyread import pos

    comments: dict[str, list[str]] = {}
    for reading in readings.values():
        for n in reading.notes:
            where = n.speaker if n.speaker in order else order[0]
            text = f"{n.code}: {n.message}"
            comments.setdefault(where, []).append(f"{text} (input {input_where(pos(n.at))})"
                                                  if b.input_positions else text)
    return comments
