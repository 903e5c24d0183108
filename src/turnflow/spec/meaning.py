"""What each condition and target kind means: the one home of it (standard library only).

The pydantic models of `turnflow.spec.graph` inherit these classes, and so do the
*plain* twins built by `plain(...)`: the same kinds, read from the same `args`,
without pydantic. The compiler lowers a workflow to plain kinds for the
speaker-graph analysis (`turnflow/compiler/lower.py`): `turnflow check` never
imports pydantic (importing it and building the models took longer than the
whole check of a small file), yet a condition means one thing everywhere.

Conditions, per turn and over every turn of a speaker:

- `holds(speaker, context, tool, text)`: `tool` is the routing tool of an
  `ag2.packet` (None for anything else), `text` the body of the round;
- `decide(speaker, owned)`: True / False when the condition holds on every / no
  turn `speaker` takes, None when it depends on the turn (docs/analysis.md).

Targets:

- `resolve(speaker, order, initiator, previous)`: (next speaker or None, close
  reason, chosen by round robin);
- `successors(speaker, order, initiator, previous)`: every next speaker the
  target can give (None: the session closes), the abstract `resolve`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Collection, Iterable, Optional

#: the close reason of a `terminate` target without one, and of the default target AG2 fills in
DEFAULT_REASON = "after_work"
#: the close reason of a `round_robin` target with nobody to hand to
NO_PARTICIPANTS_REASON = "no_participants"

#: the shared context a condition reads (JSON values by key)
Context = dict[str, Any]
#: the participants in speaking order
Order = tuple[str, ...]
#: what a target resolves to: (next speaker or None, close reason, chosen by round robin)
Resolved = tuple[Optional[str], str, bool]


# ---------------------------------------------------------------------------------------------
#  Conditions
# ---------------------------------------------------------------------------------------------
class ConditionMeaning:
    __slots__ = ()
    args: Any

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        raise NotImplementedError

    def decide(self, speaker: str, owned: Optional[Collection[str]]) -> Optional[bool]:
        """The analysis's reading (docs/analysis.md, "Classification"): True when the
        condition holds on every turn `speaker` takes, False when on none, None when it
        depends on the turn. `owned`: the tools `speaker` owns (it never routes by another
        one), or None when the flow declares no tools. Only who spoke and which tools it
        owns decide, and only at the top of the condition (`all_of` of them): a guard on
        context or text, `any_of` and `not` (`not tool t` may well hold) are undecided."""
        return None


class AlwaysMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        return True

    def decide(self, speaker: str, owned: Optional[Collection[str]]) -> Optional[bool]:
        return True


class FromSpeakerMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        agent_id: str = self.args.agent_id
        return agent_id == speaker

    def decide(self, speaker: str, owned: Optional[Collection[str]]) -> Optional[bool]:
        agent_id: str = self.args.agent_id
        return agent_id == speaker


class ToolCalledMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        name: str = self.args.tool_name
        return tool == name

    def decide(self, speaker: str, owned: Optional[Collection[str]]) -> Optional[bool]:
        return False if owned is not None and self.args.tool_name not in owned else None


class ContextEqualsMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        equal: bool = context.get(self.args.key) == self.args.value  # (a JSON value's `==` is a bool)
        return equal


class TextContainsMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        return isinstance(text, str) and self.args.text in text


class ContextCompareMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        a = self.args
        return compare(context.get(a.key), a.op, a.value, a.len)


class AllOfMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        return all(c.holds(speaker, context, tool, text) for c in self.args.conditions)

    def decide(self, speaker: str, owned: Optional[Collection[str]]) -> Optional[bool]:
        verdict: Optional[bool] = True
        for c in self.args.conditions:
            d = c.decide(speaker, owned)
            if d is False:
                return False
            if d is None:
                verdict = None
        return verdict


class AnyOfMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        return any(c.holds(speaker, context, tool, text) for c in self.args.conditions)


class NotMeaning(ConditionMeaning):
    __slots__ = ()

    def holds(self, speaker: str, context: Context, tool: Optional[str], text: Optional[str]) -> bool:
        return not self.args.condition.holds(speaker, context, tool, text)


def compare(actual: Any, op: str, value: Any, length: bool = False) -> bool:
    """The meaning of `context_compare` (docs/language.md, "Comparisons"):

    - a missing key reads as null (`actual` None);
    - with `length`, the operand is the length of a string, array or object;
      any other value (null, a number, a boolean) has no length: false for every `op`;
    - `==` / `!=` are JSON equality and its negation, as `context_equals` reads it
      (Python `==`: `1 == 1.0`; `true == 1` too, as in AG2);
    - `<`, `<=`, `>`, `>=` hold between two numbers (booleans are not numbers) or two
      strings (code point order); any other pair is incomparable: false.
    """
    if length:
        if not isinstance(actual, (str, list, dict)):
            return False
        actual = len(actual)
    if op == "==":
        return bool(actual == value)
    if op == "!=":
        return bool(actual != value)
    if not (isinstance(actual, str) and isinstance(value, str)) and not (_number(actual) and _number(value)):
        return False
    return bool(_ORDER[op](actual, value)) if op in _ORDER else False


_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------------
#  Targets
# ---------------------------------------------------------------------------------------------
class TargetMeaning:
    __slots__ = ()
    args: Any
    #: True when the target also depends on who spoke before the last speaker (`previous_speaker`)
    uses_previous: ClassVar[bool] = False
    #: True when `successors` does not depend on the speaker (nor on who spoke before)
    speaker_free: ClassVar[bool] = False

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        """`previous`: the participant who spoke before `speaker` (None on the first turn);
        only `previous_speaker` reads it."""
        raise NotImplementedError

    def successors(self, speaker: str, order: Order, initiator: Optional[str],
                   previous: Iterable[Optional[str]] = (None,)) -> list[Optional[str]]:
        """The abstract `resolve` (the speaker-graph analysis, docs/analysis.md): every next
        speaker (None: the session closes) this target can give when `speaker` spoke last,
        in first-seen order. `previous`: every participant who may have spoken before
        `speaker` (None: nobody, the first turn), read only when `uses_previous`;
        `initiator` None: the flow names none."""
        out: list[Optional[str]] = []
        for p in (previous if self.uses_previous else (None,)):
            nxt = self.resolve(speaker, order, initiator or "", p)[0]
            if nxt not in out:
                out.append(nxt)
        return out


class AgentMeaning(TargetMeaning):
    __slots__ = ()
    speaker_free: ClassVar[bool] = True

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return self.args.agent_id, "", False

    def successors(self, speaker: str, order: Order, initiator: Optional[str],
                   previous: Iterable[Optional[str]] = (None,)) -> list[Optional[str]]:
        return [self.args.agent_id]


def next_in_order(speaker: str, order: Order) -> Resolved:
    """`round_robin`: the participant after `speaker` (the first one when `speaker` is none)."""
    if not order:
        return None, NO_PARTICIPANTS_REASON, False
    if speaker in order:
        return order[(order.index(speaker) + 1) % len(order)], "", True
    return order[0], "", True


class RoundRobinMeaning(TargetMeaning):
    __slots__ = ()

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return next_in_order(speaker, order)


class StayMeaning(TargetMeaning):
    __slots__ = ()

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return speaker, "", False

    def successors(self, speaker: str, order: Order, initiator: Optional[str],
                   previous: Iterable[Optional[str]] = (None,)) -> list[Optional[str]]:
        return [speaker]


class RevertToInitiatorMeaning(TargetMeaning):
    __slots__ = ()
    speaker_free: ClassVar[bool] = True

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return initiator, "", False

    def successors(self, speaker: str, order: Order, initiator: Optional[str],
                   previous: Iterable[Optional[str]] = (None,)) -> list[Optional[str]]:
        return [initiator] if initiator is not None else list(order)  # no initiator: anyone may be it


class TerminateMeaning(TargetMeaning):
    __slots__ = ()
    speaker_free: ClassVar[bool] = True

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return None, self.args.reason, False

    def successors(self, speaker: str, order: Order, initiator: Optional[str],
                   previous: Iterable[Optional[str]] = (None,)) -> list[Optional[str]]:
        return [None]


def resolve_previous(speaker: str, order: Order, previous: Optional[str]) -> Resolved:
    """`previous_speaker`: who spoke before `speaker`; on the first turn nobody did: round robin."""
    if previous is None:
        return next_in_order(speaker, order)
    return previous, "", False


class PreviousSpeakerMeaning(TargetMeaning):
    __slots__ = ()
    uses_previous: ClassVar[bool] = True

    def resolve(self, speaker: str, order: Order, initiator: str, previous: Optional[str] = None) -> Resolved:
        return resolve_previous(speaker, order, previous)

    resolve_previous = staticmethod(resolve_previous)


# ---------------------------------------------------------------------------------------------
#  Plain kinds: the same meaning without pydantic
# ---------------------------------------------------------------------------------------------
MEANINGS: dict[str, type] = {
    "always": AlwaysMeaning, "from_speaker": FromSpeakerMeaning, "tool_called": ToolCalledMeaning,
    "context_equals": ContextEqualsMeaning, "text_contains": TextContainsMeaning,
    "context_compare": ContextCompareMeaning, "all_of": AllOfMeaning, "any_of": AnyOfMeaning, "not": NotMeaning,
    "agent": AgentMeaning, "round_robin": RoundRobinMeaning, "stay": StayMeaning,
    "revert_to_initiator": RevertToInitiatorMeaning, "terminate": TerminateMeaning,
    "previous_speaker": PreviousSpeakerMeaning,
}


class Args:
    """A kind's `args` as attributes, unchecked."""

    def __init__(self, **args: Any) -> None:
        self.__dict__.update(args)

    if TYPE_CHECKING:  # pragma: no cover - the attributes are the kind's args
        def __getattr__(self, name: str) -> Any: ...

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Args) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Args(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


class Plain:
    """A condition or target as `{"name", "args"}` with its kind's meaning, unchecked (the
    caller builds it from input already checked, as the compiler does from the AST)."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: Args) -> None:
        self.name = name
        self.args = args

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plain) and self.name == other.name and self.args == other.args

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"plain({self.name!r}, {self.args!r})"

    def data(self) -> dict[str, Any]:
        """The JSON form (`{"name": ..., "args": {...}}`, nested kinds too)."""
        return {"name": self.name, "args": {k: _data(v) for k, v in self.args.__dict__.items()}}


def _data(v: Any) -> Any:
    if isinstance(v, Plain):
        return v.data()
    if isinstance(v, list):
        return [_data(x) for x in v]
    return v


_PLAIN: dict[str, type] = {name: type(f"Plain_{name}", (m, Plain), {"__slots__": ()}) for name, m in MEANINGS.items()}


def plain_class(name: str) -> Any:
    """The class `plain(name, ...)` builds: called as `cls(name, args)` with an `Args`."""
    return _PLAIN[name]


def plain(name: str, **args: Any) -> Any:
    """The kind `name` with `args` (nested kinds as plain ones), e.g. `plain("from_speaker", agent_id="a")`."""
    a = Args.__new__(Args)
    a.__dict__ = args
    return _PLAIN[name](name, a)

