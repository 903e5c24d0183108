"""The AG2 1.2.1 TransitionGraph (`ag2.network.TransitionGraph.to_dict()`) as
pydantic models: conditions and targets are tagged unions on `name`.

    g = TransitionGraph.model_validate(data)    # the emitted form: every key present
    g = TransitionGraph.loads(data)             # AG2's `loads`: its defaults filled in
    g.to_dict()                                 # exactly AG2's `to_dict()`

Each condition and target says what it means, so every reader (the runtime's
dispatch tables, simulate, decompile, interop, the compiler's speaker-graph
analysis) shares one meaning. The meaning itself lives in `spec/meaning.py`
(`holds`, `decide`, `resolve`, `successors`; standard library only, so the
compiler's analysis reads the same kinds without pydantic); each model here
inherits its kind's, and adds:

- `Condition.partial(speaker, packet)`: True / False when the condition is
  decided by the last speaker and the envelope type alone, else the residual
  condition to test per envelope;
- `describe()`, `walk()`, `agent_refs()`, `with_agents()`.

Adding a kind is one class with its `Args` model and an entry in
`CONDITIONS` / `TARGETS` below.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Callable, ClassVar, Iterable, Iterator, Literal, Optional, Union, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter, ValidationError, ValidationInfo, field_validator, \
    model_validator

from turnflow.spec import meaning as m
from turnflow.spec.errors import SpecError, from_validation_error
from turnflow.spec.meaning import DEFAULT_REASON, NO_PARTICIPANTS_REASON, compare
from pydantic_core import PydanticCustomError

__all__ = ["DEFAULT_REASON", "NO_PARTICIPANTS_REASON", "compare"]  # re-exported with the models below
#: validation context asking for AG2's `loads` reading (defaults filled, max_turns 0 allowed)
LOADS = {"ag2_loads": True}

NonEmpty = Annotated[str, Field(min_length=1)]
#: a renaming of agent ids (`with_agents`)
Rename = Callable[[str], str]


def _loads(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("ag2_loads"))


class Model(BaseModel):
    """Strict (no coercion: `true` is not a number), closed (unknown keys are
    errors), immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (the form `turnflow compile` prints)."""
        return self.model_dump(mode="python")


class NoArgs(Model):
    """`args: {}`."""


class _Named(Model):
    """`{"name": ..., "args": {...}}`; AG2's `loads` reads a missing or null `args` as `{}`."""

    name: str  # each kind narrows it to its Literal
    args: Model
    #: the kind's `name` (set below for every condition and target class)
    KIND: ClassVar[str]

    @classmethod
    def data(cls, **args: Any) -> dict[str, Any]:
        """This kind as plain JSON data, `{"name": KIND, "args": args}`, unchecked:
        for valid args exactly `cls(name=KIND, args=...).to_dict()`. The compiler
        emits with it (building and dumping a model per condition made `compile`
        several times slower); tests validate what it emits against these models."""
        return {"name": cls.KIND, "args": args}

    @model_validator(mode="before")
    @classmethod
    def _ag2_args(cls, data: Any, info: ValidationInfo) -> Any:
        if _loads(info) and isinstance(data, dict) and data.get("args") is None:
            data = {**data, "args": {}}
        return data

    def describe(self) -> str:
        """A one-line reading for reports."""
        args = self.args.model_dump()
        return self.name + (" " + " ".join(f"{k}={json.dumps(v)}" for k, v in args.items()) if args else "")


# ---------------------------------------------------------------------------------------------
#  Conditions
# ---------------------------------------------------------------------------------------------
class BaseCondition(m.ConditionMeaning, _Named):
    #: False for turnflow's extensions (AG2 1.2.1 needs `turnflow.interop.ag2.register_extensions()`)
    builtin: ClassVar[bool] = True

    def partial(self, speaker: str, packet: bool) -> Union[bool, "BaseCondition"]:
        return self

    def children(self) -> tuple["BaseCondition", ...]:
        return ()

    def walk(self) -> Iterator["BaseCondition"]:
        """This condition and every nested one, outermost first."""
        yield self
        for c in self.children():
            yield from c.walk()

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        """Agent ids this condition names, with their JSON paths."""
        return iter(())

    def with_agents(self, rename: Rename) -> "BaseCondition":
        """This condition with every agent id `a` replaced by `rename(a)`."""
        return self


class Always(m.AlwaysMeaning, BaseCondition):
    name: Literal["always"]
    args: NoArgs

    def partial(self, speaker: str, packet: bool) -> Union[bool, BaseCondition]:
        return True


class FromSpeakerArgs(Model):
    agent_id: NonEmpty


class FromSpeaker(m.FromSpeakerMeaning, BaseCondition):
    name: Literal["from_speaker"]
    args: FromSpeakerArgs

    def partial(self, speaker: str, packet: bool) -> Union[bool, BaseCondition]:
        return self.args.agent_id == speaker

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        yield self.args.agent_id, f"{path}.args.agent_id"

    def with_agents(self, rename: Rename) -> "FromSpeaker":
        return from_speaker(rename(self.args.agent_id))

    def describe(self) -> str:
        return f"speaker {self.args.agent_id}"


class ToolCalledArgs(Model):
    tool_name: NonEmpty


class ToolCalled(m.ToolCalledMeaning, BaseCondition):
    name: Literal["tool_called"]
    args: ToolCalledArgs

    def partial(self, speaker: str, packet: bool) -> Union[bool, BaseCondition]:
        return self if packet else False  # only a packet carries a routing tool

    def describe(self) -> str:
        return f"tool {self.args.tool_name}"


class ContextEqualsArgs(Model):
    key: NonEmpty
    value: Any


class ContextEquals(m.ContextEqualsMeaning, BaseCondition):
    name: Literal["context_equals"]
    args: ContextEqualsArgs

    def describe(self) -> str:
        return f"context.{self.args.key} == {json.dumps(self.args.value)}"


class TextContainsArgs(Model):
    text: str


class TextContains(m.TextContainsMeaning, BaseCondition):
    """Extension: the round's body contains `text` (case-sensitive)."""

    builtin: ClassVar[bool] = False
    name: Literal["text_contains"]
    args: TextContainsArgs

    def describe(self) -> str:
        return f"text contains {json.dumps(self.args.text)}"


class ConditionListArgs(Model):
    # `{"conditions": [...]}`, the args of `all_of` and `any_of` (no docstring: it would
    # become the description of both in the shipped JSON Schemas)
    conditions: list["Condition"]


class _Junction(BaseCondition):
    """`all_of` / `any_of`: nested conditions joined by `and` / `or`; one class holds
    what both mean alike, each says which value of one nested condition decides it."""

    #: the value of one nested condition that decides the whole (False for `and`, True for `or`)
    decisive: ClassVar[bool]
    args: ConditionListArgs

    def join(self, conditions: list[BaseCondition]) -> "_Junction":
        """A junction of the same kind over `conditions`."""
        raise NotImplementedError

    def partial(self, speaker: str, packet: bool) -> Union[bool, BaseCondition]:
        rest = []
        for c in self.args.conditions:
            p = c.partial(speaker, packet)
            if p is self.decisive:
                return p
            if not isinstance(p, bool):  # the other boolean is neutral: dropped
                rest.append(p)
        if not rest:
            return not self.decisive
        if len(rest) == 1:
            return rest[0]
        return self.join(rest)

    def children(self) -> tuple[BaseCondition, ...]:
        return tuple(self.args.conditions)

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        for i, c in enumerate(self.args.conditions):
            yield from c.agent_refs(f"{path}.args.conditions[{i}]")

    def with_agents(self, rename: Rename) -> "_Junction":
        return self.join([c.with_agents(rename) for c in self.args.conditions])


class AllOfArgs(ConditionListArgs):
    pass


class AllOf(m.AllOfMeaning, _Junction):
    """Extension: every nested condition holds (an empty list holds)."""

    builtin: ClassVar[bool] = False
    decisive: ClassVar[bool] = False
    name: Literal["all_of"]
    args: AllOfArgs

    def join(self, conditions: list[BaseCondition]) -> "AllOf":
        return all_of(conditions)

    def describe(self) -> str:
        return " and ".join(c.describe() for c in self.args.conditions)


CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]


class ContextCompareArgs(Model):
    key: NonEmpty
    op: CompareOp
    value: Any
    len: bool = False


class ContextCompare(m.ContextCompareMeaning, BaseCondition):
    """Extension: `context[key] op value`, or with `len` the length of `context[key]` (see `compare`)."""

    builtin: ClassVar[bool] = False
    name: Literal["context_compare"]
    args: ContextCompareArgs

    def describe(self) -> str:
        a = self.args
        key = f"len(context.{a.key})" if a.len else f"context.{a.key}"
        return f"{key} {a.op} {json.dumps(a.value)}"


class AnyOfArgs(ConditionListArgs):
    pass


class AnyOf(m.AnyOfMeaning, _Junction):
    """Extension: some nested condition holds (an empty list never holds)."""

    builtin: ClassVar[bool] = False
    decisive: ClassVar[bool] = True
    name: Literal["any_of"]
    args: AnyOfArgs

    def join(self, conditions: list[BaseCondition]) -> "AnyOf":
        return any_of(conditions)

    def describe(self) -> str:
        return " or ".join(f"({c.describe()})" if isinstance(c, AllOf) else c.describe()
                           for c in self.args.conditions)


class NotArgs(Model):
    condition: "Condition"


class Not(m.NotMeaning, BaseCondition):
    """Extension: the nested condition does not hold."""

    builtin: ClassVar[bool] = False
    name: Literal["not"]
    args: NotArgs

    def partial(self, speaker: str, packet: bool) -> Union[bool, BaseCondition]:
        p = self.args.condition.partial(speaker, packet)
        if p is True or p is False:
            return not p
        return negate(p)

    def children(self) -> tuple[BaseCondition, ...]:
        return (self.args.condition,)

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        yield from self.args.condition.agent_refs(f"{path}.args.condition")

    def with_agents(self, rename: Rename) -> "Not":
        return negate(self.args.condition.with_agents(rename))

    def describe(self) -> str:
        inner = self.args.condition
        text = inner.describe()
        return f"not ({text})" if isinstance(inner, (AllOf, AnyOf)) else f"not {text}"


#: every condition kind; a new one is a class above plus an entry here
Condition = Annotated[Union[Always, FromSpeaker, ToolCalled, ContextEquals, AllOf, TextContains, ContextCompare,
                            AnyOf, Not],
                      Field(discriminator="name")]
CONDITIONS: tuple[type[BaseCondition], ...] = get_args(get_args(Condition)[0])
#: validates one condition (plain data → its model)
CONDITION: TypeAdapter[BaseCondition] = TypeAdapter(Condition, config=ConfigDict(defer_build=True))
EXTENSION_CONDITIONS = tuple(get_args(c.model_fields["name"].annotation)[0] for c in CONDITIONS if not c.builtin)


# ---------------------------------------------------------------------------------------------
#  Targets
# ---------------------------------------------------------------------------------------------
class BaseTarget(m.TargetMeaning, _Named):
    #: False for turnflow's extensions (AG2 1.2.1 needs `turnflow.interop.ag2.register_extensions()`)
    builtin: ClassVar[bool] = True
    #: True when the target also depends on who spoke before the last speaker (`previous_speaker`)
    uses_previous: ClassVar[bool] = False

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        return iter(())

    def with_agents(self, rename: Rename) -> "BaseTarget":
        return self


class AgentArgs(Model):
    agent_id: NonEmpty


class AgentTarget(m.AgentMeaning, BaseTarget):
    name: Literal["agent"]
    args: AgentArgs

    def agent_refs(self, path: str) -> Iterator[tuple[str, str]]:
        yield self.args.agent_id, f"{path}.args.agent_id"

    def with_agents(self, rename: Rename) -> "AgentTarget":
        return agent(rename(self.args.agent_id))

    def describe(self) -> str:
        return self.args.agent_id


class RoundRobin(m.RoundRobinMeaning, BaseTarget):
    name: Literal["round_robin"]
    args: NoArgs


class Stay(m.StayMeaning, BaseTarget):
    name: Literal["stay"]
    args: NoArgs


class RevertToInitiator(m.RevertToInitiatorMeaning, BaseTarget):
    name: Literal["revert_to_initiator"]
    args: NoArgs


class TerminateArgs(Model):
    reason: str

    @model_validator(mode="before")
    @classmethod
    def _ag2_reason(cls, data: Any, info: ValidationInfo) -> Any:
        if _loads(info) and isinstance(data, dict) and "reason" not in data:
            data = {**data, "reason": DEFAULT_REASON}
        return data


class Terminate(m.TerminateMeaning, BaseTarget):
    name: Literal["terminate"]
    args: TerminateArgs

    def describe(self) -> str:
        return f"terminate {json.dumps(self.args.reason)}"


class PreviousSpeaker(m.PreviousSpeakerMeaning, BaseTarget):
    """Extension: the participant who spoke before the last speaker (the speaker of
    the turn before the one just taken). On the first turn nobody did: then it is
    `round_robin` (the participant after the last speaker)."""

    builtin: ClassVar[bool] = False
    uses_previous: ClassVar[bool] = True
    name: Literal["previous_speaker"]
    args: NoArgs

    def describe(self) -> str:
        return "previous"


#: every target kind; a new one is a class above plus an entry here
Target = Annotated[Union[AgentTarget, RoundRobin, Stay, RevertToInitiator, Terminate, PreviousSpeaker],
                   Field(discriminator="name")]
TARGETS: tuple[type[BaseTarget], ...] = get_args(get_args(Target)[0])
for _kind in CONDITIONS + TARGETS:
    _kind.KIND = get_args(_kind.model_fields["name"].annotation)[0]
EXTENSION_TARGETS = tuple(get_args(t.model_fields["name"].annotation)[0] for t in TARGETS if not t.builtin)


# -- constructors ------------------------------------------------------------------------------
def _members(conditions: Iterable[BaseCondition]) -> list[Condition]:
    """`conditions` as the `Condition` union the models declare: every `BaseCondition` is one of
    its members (a kind is a class plus its entry in `Condition`), which mypy cannot see."""
    return cast("list[Condition]", list(conditions))


def always() -> Always:
    return Always(name="always", args=NoArgs())


def from_speaker(agent_id: str) -> FromSpeaker:
    return FromSpeaker(name="from_speaker", args=FromSpeakerArgs(agent_id=agent_id))


def tool_called(tool_name: str) -> ToolCalled:
    return ToolCalled(name="tool_called", args=ToolCalledArgs(tool_name=tool_name))


def context_equals(key: str, value: Any) -> ContextEquals:
    return ContextEquals(name="context_equals", args=ContextEqualsArgs(key=key, value=value))


def text_contains(text: str) -> TextContains:
    return TextContains(name="text_contains", args=TextContainsArgs(text=text))


def all_of(conditions: Iterable[BaseCondition]) -> AllOf:
    return AllOf(name="all_of", args=AllOfArgs(conditions=_members(conditions)))


def context_compare(key: str, op: str, value: Any, length: bool = False) -> ContextCompare:
    return ContextCompare(name="context_compare", args=ContextCompareArgs(key=key, op=op, value=value, len=length))  # type: ignore[arg-type]


def any_of(conditions: Iterable[BaseCondition]) -> AnyOf:
    return AnyOf(name="any_of", args=AnyOfArgs(conditions=_members(conditions)))


def negate(condition: BaseCondition) -> Not:
    return Not(name="not", args=NotArgs(condition=cast("Condition", condition)))  # a member, as in _members


def previous_speaker() -> PreviousSpeaker:
    return PreviousSpeaker(name="previous_speaker", args=NoArgs())


def agent(agent_id: str) -> AgentTarget:
    return AgentTarget(name="agent", args=AgentArgs(agent_id=agent_id))


def round_robin() -> RoundRobin:
    return RoundRobin(name="round_robin", args=NoArgs())


def stay() -> Stay:
    return Stay(name="stay", args=NoArgs())


def revert_to_initiator() -> RevertToInitiator:
    return RevertToInitiator(name="revert_to_initiator", args=NoArgs())


def terminate(reason: str = DEFAULT_REASON) -> Terminate:
    return Terminate(name="terminate", args=TerminateArgs(reason=reason))


# ---------------------------------------------------------------------------------------------
#  The graph
# ---------------------------------------------------------------------------------------------
class Transition(Model):
    when: Condition
    then: Target
    priority: StrictInt

    @model_validator(mode="before")
    @classmethod
    def _ag2_priority(cls, data: Any, info: ValidationInfo) -> Any:
        if _loads(info) and isinstance(data, dict) and "priority" not in data:
            data = {**data, "priority": 0}
        return data


class TransitionGraph(Model):
    """Rules are evaluated by priority ascending, ties in list order; the first
    that holds decides, else `default_target`; `max_turns` closes the session
    after that many turns."""

    initial_speaker: NonEmpty
    transitions: list[Transition]
    default_target: Target
    max_turns: Optional[StrictInt] = Field(json_schema_extra={"minimum": 1})

    @model_validator(mode="before")
    @classmethod
    def _ag2_defaults(cls, data: Any, info: ValidationInfo) -> Any:
        if _loads(info) and isinstance(data, dict):
            data = dict(data)
            if data.get("transitions") is None:
                data["transitions"] = []
            if data.get("default_target") is None:
                data["default_target"] = {"name": "terminate", "args": {"reason": DEFAULT_REASON}}
            data.setdefault("max_turns", None)
        return data

    @field_validator("max_turns")
    @classmethod
    def _max_turns(cls, v: Optional[int], info: ValidationInfo) -> Optional[int]:
        least = 0 if _loads(info) else 1  # AG2 accepts 0 (the session closes after one turn)
        if v is not None and v < least:
            raise PydanticCustomError("greater_than_equal", "at least {ge}", {"ge": least})
        return v

    @classmethod
    def loads(cls, data: Any, root: str = "$") -> "TransitionGraph":
        """Read `data` the way AG2 1.2.1's `TransitionGraph.loads` does (missing
        `transitions` = [], `priority` = 0, `args` = {}, `default_target` =
        terminate "after_work", `max_turns` = null; 0 allowed); `SpecError` otherwise."""
        graph: TransitionGraph = parse(cls, data, root, LOADS)
        return graph

    def to_dict(self) -> dict[str, Any]:
        """Exactly `ag2.network.TransitionGraph.to_dict()`."""
        return self.model_dump(mode="python")

    def evaluation_order(self) -> list[int]:
        """Transition indices in evaluation order: priority ascending, ties in list order."""
        return sorted(range(len(self.transitions)), key=lambda i: (self.transitions[i].priority, i))

    def conditions(self) -> Iterator[BaseCondition]:
        """Every condition of every transition, nested ones included, in order."""
        for tr in self.transitions:
            yield from tr.when.walk()

    def agent_refs(self, root: str = "$", speakers: bool = True) -> Iterator[tuple[str, str]]:
        """Every agent id the graph names, with its JSON path, in order: the
        initial speaker, then per transition its condition (`from_speaker`,
        nested too; only with `speakers`) and its target, the default target last."""
        yield self.initial_speaker, f"{root}.initial_speaker"
        for i, tr in enumerate(self.transitions):
            if speakers:
                yield from tr.when.agent_refs(f"{root}.transitions[{i}].when")
            yield from tr.then.agent_refs(f"{root}.transitions[{i}].then")
        yield from self.default_target.agent_refs(f"{root}.default_target")

    def check_agents(self, participants: Iterable[str], root: str = "$", speakers: bool = True) -> None:
        """Every agent id named (see `agent_refs`) is a participant, else `SpecError`."""
        known = set(participants)
        for agent_id, path in self.agent_refs(root, speakers):
            if agent_id not in known:
                raise SpecError(path, f"{agent_id!r} is not a participant (participants: {', '.join(participants)})")

    def with_agents(self, rename: Rename) -> "TransitionGraph":
        """The graph with every agent id `a` replaced by `rename(a)`."""
        return TransitionGraph(
            initial_speaker=rename(self.initial_speaker),
            transitions=[Transition(when=t.when.with_agents(rename), then=t.then.with_agents(rename),  # type: ignore[arg-type]
                                    priority=t.priority) for t in self.transitions],
            default_target=self.default_target.with_agents(rename), max_turns=self.max_turns)  # type: ignore[arg-type]


def parse(model: Any, data: Any, root: str = "$", context: Optional[dict[str, Any]] = None) -> Any:
    """`model.model_validate(data)` (a model class, or a pydantic TypeAdapter),
    with pydantic's first error as a `SpecError` at its JSON path."""
    try:
        if hasattr(model, "model_validate"):
            return model.model_validate(data, context=context)
        return model.validate_python(data, context=context)
    except ValidationError as exc:
        raise from_validation_error(exc, data, root) from None
