"""A workflow block's transitions lowered to `turnflow.spec` kinds: what the
speaker-graph analysis (`compiler/speaker_graph.py`) reads, so a condition or target
means one thing everywhere (`spec/meaning.py`: `holds` / `resolve` for a turn,
`decide` / `successors` over every turn of a speaker).

The kinds are the plain twins of the spec models (`turnflow.spec.meaning.plain`:
same names, args and meaning, no pydantic): `turnflow check` imports no
pydantic, and validating a model per term would cost a large check a third of
its time. `RuleInfo.when.data()` is the JSON form the models validate.

Each lowered rule keeps the statement it came from, so diagnostics point at
the source. The mapping is the language's (docs/compiler.md): a rule's SOURCE
is a `from_speaker` test, its terms the conditions joined by `all_of`, a
handoff `SOURCE -> TARGET via TOOL` the rule `SOURCE -> TARGET when tool TOOL`.
The compiler's emitted knobs (`emit/knobs.py`), the `ag2-builtin` profile's
graph (`frameworks/ag2/writer_builtin.py`) and its TF301 check serialise this lowering
(`Plain.data()`), dropping only the `from_speaker` test of a tool only its
source owns (implied at run time); the analysis gets the same verdicts either
way (tests/test_graph.py checks both).

Equal leaves share one object (a `from_speaker p1`, a target `p2`, a
`text contains "x"` are built once per block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from turnflow.dsl import ast
from turnflow.spec.meaning import DEFAULT_REASON, Args, ConditionMeaning, TargetMeaning, plain, plain_class


@dataclass(eq=False)
class RuleInfo:
    """One transition rule lowered (treat as read-only): its condition and target as
    `turnflow.spec` kinds, and the statement (spans) it came from."""

    __slots__ = ("stmt", "order", "source", "when", "then", "priority")

    stmt: Union[ast.Rule, ast.Handoff]
    order: int  # position in evaluation order
    source: Optional[str]  # the SOURCE name (None: `*`), to index rules by speaker; `when` tests it
    when: ConditionMeaning
    then: TargetMeaning
    priority: int

    @property
    def target(self) -> ast.Target:
        """The target as written (its span)."""
        return self.stmt.target


#: what makes two leaves equal (their kind and args, a literal's kind too: `true` is not `1`)
Memo = tuple[ast.LiteralValue, ...]


_ALL_OF = plain_class("all_of")


def _all_of(conditions: list[ConditionMeaning]) -> ConditionMeaning:
    """`plain("all_of", conditions=conditions)`, built directly (a large block has one per rule)."""
    args = Args.__new__(Args)
    args.__dict__ = {"conditions": conditions}
    kind: ConditionMeaning = _ALL_OF("all_of", args)
    return kind


def _condition(name: str, **args: Any) -> ConditionMeaning:
    """`plain(name, **args)` for a condition kind (`plain` returns `Any`: it picks the class by name)."""
    kind: ConditionMeaning = plain(name, **args)
    return kind


class Lowering:
    """Lowers the statements of one block; equal leaves share one object."""

    def __init__(self) -> None:
        self._conditions: dict[Memo, ConditionMeaning] = {}
        self._targets: dict[Memo, TargetMeaning] = {}
        self._speakers: dict[str, ConditionMeaning] = {}
        self._tools: dict[str, ConditionMeaning] = {}
        self._agents: dict[str, TargetMeaning] = {}

    def leaves(self) -> list[ConditionMeaning]:
        """Every leaf condition built so far (each once): tools, texts, context tests."""
        return [*self._tools.values(), *self._conditions.values()]

    def _leaf(self, memo: Memo, name: str, **args: Any) -> ConditionMeaning:
        kind = self._conditions.get(memo)
        if kind is None:
            kind = self._conditions[memo] = plain(name, **args)
        return kind

    def _target(self, memo: Memo, name: str, **args: Any) -> TargetMeaning:
        kind = self._targets.get(memo)
        if kind is None:
            kind = self._targets[memo] = plain(name, **args)
        return kind

    def target(self, t: Optional[ast.Target]) -> TargetMeaning:
        """A target (None: the default `otherwise`, `terminate "after_work"`)."""
        if t is None:
            return self._target(("terminate", DEFAULT_REASON), "terminate", reason=DEFAULT_REASON)
        if t.kind == "participant":
            assert t.name is not None  # a participant target names one (the parser guarantees it)
            name = t.name.name
            kind = self._agents.get(name)
            if kind is None:
                kind = self._agents[name] = plain("agent", agent_id=name)
            return kind
        if t.kind == "terminate":
            reason = t.reason.value if t.reason is not None else DEFAULT_REASON
            return self._target(("terminate", reason), "terminate", reason=reason)
        return self._target((t.kind,), _SIMPLE_TARGETS[t.kind])

    def term(self, t: ast.Term) -> ConditionMeaning:
        if type(t) is ast.ToolTerm:
            return self.tool(t.tool.name)
        if type(t) is ast.TextTerm:
            text = t.text.value
            return self._leaf(("text", text), "text_contains", text=text)
        if type(t) is ast.ContextTerm:  # the literal's kind in the key: `true` is not `1`
            key, lit = t.key.name, t.value
            return self._leaf(("ctx", key, lit.kind, lit.value), "context_equals", key=key, value=lit.value)
        if isinstance(t, ast.CompareTerm):
            key, lit = t.key.name, t.value
            return self._leaf(("cmp", key, t.op, lit.kind, lit.value, t.length), "context_compare",
                              key=key, op=t.op, value=lit.value, len=t.length)
        if isinstance(t, ast.AllTerm):
            return _all_of([self.term(x) for x in t.terms])
        if isinstance(t, ast.AnyTerm):
            return _condition("any_of", conditions=[self.term(x) for x in t.terms])
        assert isinstance(t, ast.NotTerm)
        return _condition("not", condition=self.term(t.term))

    def tool(self, name: str) -> ConditionMeaning:
        kind = self._tools.get(name)
        if kind is None:
            kind = self._tools[name] = plain("tool_called", tool_name=name)
        return kind

    def speaker(self, name: str) -> ConditionMeaning:
        kind = self._speakers.get(name)
        if kind is None:
            kind = self._speakers[name] = plain("from_speaker", agent_id=name)
        return kind

    def condition(self, source: Optional[str], terms: tuple[ast.Term, ...]) -> ConditionMeaning:
        """A source test plus terms → one condition (no source, no terms: `always`)."""
        term = self.term
        conds = [term(t) for t in terms] if source is None else [self.speaker(source), *[term(t) for t in terms]]
        if not conds:
            return self._leaf(("always",), "always")
        return conds[0] if len(conds) == 1 else _all_of(conds)

    def rule(self, stmt: Union[ast.Rule, ast.Handoff], order: int) -> RuleInfo:
        if type(stmt) is ast.Handoff:
            source: Optional[str] = stmt.source.name
            when = _all_of([self.speaker(stmt.source.name), self.tool(stmt.tool.name)])
            priority = 0
        else:
            assert isinstance(stmt, ast.Rule)
            source = stmt.source.name if stmt.source is not None else None
            when = self.condition(source, stmt.terms)
            priority = stmt.priority.value if stmt.priority is not None else 0
        return RuleInfo(stmt, order, source, when, self.target(stmt.target), priority)


#: the targets without args: language keyword → kind
_SIMPLE_TARGETS = {"stay": "stay", "next": "round_robin", "initiator": "revert_to_initiator",
                   "previous": "previous_speaker"}


def priority_of(stmt: Union[ast.Rule, ast.Handoff]) -> int:
    if isinstance(stmt, ast.Rule) and stmt.priority is not None:
        return stmt.priority.value
    return 0


def lower_rules(block: ast.Block, lowering: Optional[Lowering] = None) -> list[RuleInfo]:
    """The block's rules and handoffs lowered, in evaluation order: ascending priority, ties in file order."""
    lowering = lowering or Lowering()
    stmts = block.rules
    priorities = [priority_of(st) for st in stmts]
    keyed = sorted(range(len(stmts)), key=priorities.__getitem__)  # stable: ties stay in file order
    rule = lowering.rule
    return [rule(stmts[i], n) for n, i in enumerate(keyed)]
