"""A session spec: what `turnflow compile` emits per block and the runtime
consumes, as pydantic models (one per kind, a tagged union on `kind`).

    spec = parse_spec(data)       # schema + cross references; SpecError with a JSON path
    spec.to_dict()                # the JSON object `turnflow compile` prints
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import AfterValidator, ConfigDict, Field, StrictFloat, StrictInt, TypeAdapter, WithJsonSchema
from pydantic_core import PydanticCustomError

from turnflow.spec.errors import SpecError
from turnflow.spec.graph import Model, NonEmpty, TransitionGraph, parse

Role = Literal["initiator", "respondent", "participant"]
ExpectationName = Literal["acks_within", "reply_within", "turn_within", "max_silence"]
Action = Literal["warn", "hide", "audit", "auto_close"]
KINDS = ("workflow", "consulting", "conversation", "discussion")
#: what a handoff's `tools[].target` says for a target that is not a participant
TOOL_TARGET_KEYWORDS = ("terminate", "stay", "next", "initiator", "previous")


def _positive(v: Union[int, float]) -> Union[int, float]:
    if not v > 0:
        raise PydanticCustomError("greater_than", "greater than {gt}", {"gt": 0})
    return v


#: seconds: a positive JSON number (an int stays an int, so output is byte-identical)
Seconds = Annotated[Union[StrictInt, StrictFloat], AfterValidator(_positive),
                    WithJsonSchema({"type": "number", "exclusiveMinimum": 0})]


def _unique(v: list[str]) -> list[str]:
    for i, x in enumerate(v):
        if x in v[:i]:
            raise PydanticCustomError("unique", "{item!r} is listed twice", {"item": x})
    return v


class Participant(Model):
    agent_id: NonEmpty
    role: Role
    order: Annotated[StrictInt, Field(ge=0)]
    description: str
    tools: Annotated[list[NonEmpty], AfterValidator(_unique), Field(json_schema_extra={"uniqueItems": True})]


class ExpectationParams(Model):
    seconds: Seconds


class Expectation(Model):
    name: ExpectationName
    params: ExpectationParams
    on_violation: Action


class Tool(Model):
    owner: NonEmpty
    name: NonEmpty
    description: str
    target: Optional[NonEmpty] = Field(description="a handoff's target: the participant name, or terminate / stay / "
                                       "next / initiator; null for a tool declared only in tools [...]")


# -- knobs per kind ----------------------------------------------------------------------------
class WorkflowKnobs(Model):
    model_config = ConfigDict(title="Knobs of a workflow session")
    graph: TransitionGraph
    context_vars: dict[str, Any] = Field(default_factory=dict, description="initial context variables")


class DiscussionKnobs(Model):
    model_config = ConfigDict(title="Knobs of a discussion session")
    ordering: Literal["round_robin"] = "round_robin"


class ConsultingKnobs(Model):
    model_config = ConfigDict(title="Knobs of a consulting session (none)")


class ConversationKnobs(Model):
    model_config = ConfigDict(title="Knobs of a conversation session (none)")


# -- specs per kind ----------------------------------------------------------------------------
class _Spec(Model):
    kind: str
    name: NonEmpty
    title: Optional[str]
    participants: list[Participant]
    knobs: Any
    expectations: list[Expectation]
    ttl_seconds: Optional[Seconds]
    tools: list[Tool]

    @property
    def agent_ids(self) -> list[str]:
        return [p.agent_id for p in self.participants]


class WorkflowSpec(_Spec):
    kind: Literal["workflow"]
    participants: Annotated[list[Participant], Field(min_length=2)]
    knobs: WorkflowKnobs


class DiscussionSpec(_Spec):
    kind: Literal["discussion"]
    participants: Annotated[list[Participant], Field(min_length=2)]
    knobs: DiscussionKnobs


class ConsultingSpec(_Spec):
    kind: Literal["consulting"]
    participants: Annotated[list[Participant], Field(min_length=2, max_length=2)]
    knobs: ConsultingKnobs


class ConversationSpec(_Spec):
    kind: Literal["conversation"]
    participants: Annotated[list[Participant], Field(min_length=2, max_length=2)]
    knobs: ConversationKnobs


SessionSpec = Annotated[Union[WorkflowSpec, ConsultingSpec, ConversationSpec, DiscussionSpec],
                        Field(discriminator="kind")]
SESSION_SPEC: TypeAdapter[Any] = TypeAdapter(SessionSpec, config=ConfigDict(defer_build=True))
SESSION_SPECS: TypeAdapter[list[Any]] = TypeAdapter(list[SessionSpec], config=ConfigDict(defer_build=True))
KNOBS = {"workflow": WorkflowKnobs, "consulting": ConsultingKnobs, "conversation": ConversationKnobs,
         "discussion": DiscussionKnobs}


def parse_spec(data: Any, root: str = "$") -> Union[WorkflowSpec, ConsultingSpec, ConversationSpec, DiscussionSpec]:
    """One session spec, checked: the models, then that agent ids are unique,
    orders are unique, at most one initiator (a consulting spec: one initiator
    and one respondent), graph ids and tool owners are participants, each
    tool is listed in its owner's `tools`, and a tool's target is null, or
    (workflow only) a participant or one of terminate / stay / next /
    initiator. Raises `SpecError` at the JSON path of the first problem."""
    spec: Union[WorkflowSpec, ConsultingSpec, ConversationSpec, DiscussionSpec] = parse(SESSION_SPEC, data, root)
    check_spec(spec, root)
    return spec


def check_spec(spec: _Spec, root: str = "$") -> None:
    """The cross-reference checks of `parse_spec` on a spec model."""
    ids = _check_participants(spec, root)
    if isinstance(spec, WorkflowSpec):
        spec.knobs.graph.check_agents(ids, f"{root}.knobs.graph")
    _check_tools(spec, root)


def _check_participants(spec: _Spec, root: str) -> list[str]:
    """Distinct ids and orders, the roles the kind allows; returns the ids."""
    parts = spec.participants
    ids: list[str] = []
    orders: set[int] = set()
    for i, p in enumerate(parts):
        if p.agent_id in ids:
            raise SpecError(f"{root}.participants[{i}].agent_id", f"participant {p.agent_id!r} is listed twice")
        if p.order in orders:
            raise SpecError(f"{root}.participants[{i}].order", f"order {p.order} is used twice")
        ids.append(p.agent_id)
        orders.add(p.order)
    roles = [p.role for p in parts]
    if roles.count("initiator") > 1:
        raise SpecError(f"{root}.participants[{roles.index('initiator', roles.index('initiator') + 1)}].role",
                        "at most one participant is the initiator")
    if spec.kind == "consulting" and sorted(roles) != ["initiator", "respondent"]:
        raise SpecError(f"{root}.participants", "a consulting spec has one initiator and one respondent")
    if spec.kind not in ("consulting", "conversation") and "respondent" in roles:
        raise SpecError(f"{root}.participants[{roles.index('respondent')}].role",
                        f"`respondent` is a role of consulting and conversation specs, not {spec.kind}")
    return ids


def _check_tools(spec: _Spec, root: str) -> None:
    """Each tool belongs to a participant that lists it, once; only workflow tools route."""
    tools_of = {p.agent_id: p.tools for p in spec.participants}
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(spec.tools):
        path = f"{root}.tools[{i}]"
        if t.owner not in tools_of:
            raise SpecError(f"{path}.owner", f"{t.owner!r} is not a participant")
        if t.name not in tools_of[t.owner]:
            raise SpecError(f"{path}.name", f"tool {t.name!r} is not in participant {t.owner!r}'s tools")
        if (t.owner, t.name) in seen:
            raise SpecError(path, f"tool {t.name!r} of {t.owner!r} is listed twice")
        seen.add((t.owner, t.name))
        if t.target is not None and spec.kind != "workflow":
            raise SpecError(f"{path}.target", f"only workflow tools route (handoffs); a {spec.kind} tool's "
                            "target is null")
        if t.target is not None and t.target not in tools_of and t.target not in TOOL_TARGET_KEYWORDS:
            raise SpecError(f"{path}.target", f"{t.target!r} is neither a participant nor one of "
                            + ", ".join(TOOL_TARGET_KEYWORDS))
