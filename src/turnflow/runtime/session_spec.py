"""The session spec at run time: `SessionSpec`, parsed once at the boundary (CLI, serve, task
list, simulate, Python API) and handed as that object to the runner, the hub and the agents.

    spec = SessionSpec.parse(obj)          # ProtocolError (its `path`: where) for a bad spec
    spec.to_dict()                         # the input object again (what the store persists)
    spec.replace(max_turns=3, ttl_seconds=60)

It checks what the hub needs to open a session (kinds, participant fields, name, limits,
expectations, tools); what a kind's knobs mean is its adapter's (`validate_create`). Plain frozen
dataclasses: a run of consulting, conversation or discussion sessions never loads pydantic; a
workflow's graph is read with the `turnflow.spec` models when first asked for, once per spec.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Expectation, Participant, check_agent_id, check_name, shared_participant

if TYPE_CHECKING:
    from turnflow.spec import TransitionGraph

_UNSET: Any = object()


class SpecProblem(ProtocolError):
    """A session spec the runtime cannot open; `path` is where in it (a JSON path)."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


def _participant(p: Any, i: int, path: str) -> Participant:
    """One participant from an id, a `Participant` or a spec's object (user input: ProtocolError, never TypeError)."""
    if isinstance(p, Participant):
        check_agent_id(p.agent_id)
        return shared_participant(p)
    if isinstance(p, str):
        return shared_participant(Participant(check_agent_id(p), "participant", i))
    if not isinstance(p, dict):
        raise SpecProblem("session spec: `participants` must be a list of objects", path)
    role, order, desc, tools = p.get("role", "participant"), p.get("order", i), p.get("description"), p.get("tools")
    if not isinstance(role, str):
        raise SpecProblem(f"participant role must be a string, got {type(role).__name__}", f"{path}.role")
    if isinstance(order, bool) or not isinstance(order, int):
        raise SpecProblem(f"participant order must be an integer, got {type(order).__name__}", f"{path}.order")
    if desc is not None and not isinstance(desc, str):
        raise SpecProblem(f"participant description must be a string, got {type(desc).__name__}",
                          f"{path}.description")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        raise SpecProblem("participant tools must be a list of tool names", f"{path}.tools")
    try:
        agent_id = check_agent_id(p.get("agent_id"))
    except ProtocolError as exc:
        raise SpecProblem(str(exc), f"{path}.agent_id") from None
    return shared_participant(Participant(agent_id, role, order, desc or "", tuple(tools or ())))


def _ttl(ttl_seconds: Any) -> Optional[float]:
    if ttl_seconds is not None and (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float))
                                    or ttl_seconds <= 0):
        raise SpecProblem(f"ttl_seconds must be a positive number or null, got {ttl_seconds!r}", "$.ttl_seconds")
    return ttl_seconds


def _expectations(declared: Any) -> tuple[Expectation, ...]:
    if declared is None:
        return ()
    if not isinstance(declared, (list, tuple)):
        raise SpecProblem(f"expectations must be a list, got {type(declared).__name__}", "$.expectations")
    out = []
    for i, e in enumerate(declared):
        try:
            out.append(e if isinstance(e, Expectation) else Expectation.from_dict(e))
        except ProtocolError as exc:
            raise SpecProblem(str(exc), f"$.expectations[{i}]") from None
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """One session spec, checked. `participants` and `expectations` are the runtime's own values;
    `knobs` is the kind's knobs object as given (its adapter checks it); `tools` the tool objects."""

    kind: str
    participants: tuple[Participant, ...]
    name: str = ""
    title: Any = ""
    knobs: Any = field(default_factory=dict)
    expectations: tuple[Expectation, ...] = ()
    ttl_seconds: Optional[float] = None
    tools: tuple[Any, ...] = ()
    source: Optional[dict[str, Any]] = field(default=None, repr=False, compare=False)
    _graph: Any = field(default=_UNSET, init=False, repr=False, compare=False)

    # -- making one -----------------------------------------------------------------------------
    @classmethod
    def parse(cls, obj: Any) -> "SessionSpec":
        """A compiled session spec (a JSON object), checked; `SpecProblem` (a `ProtocolError`) names
        the first problem and where. A `SessionSpec` is returned as it is."""
        if isinstance(obj, SessionSpec):
            return obj
        if not isinstance(obj, dict):
            raise SpecProblem(f"a session spec must be an object, got {type(obj).__name__}")
        for key in ("kind", "participants"):
            if key not in obj:
                raise SpecProblem(f"session spec is missing {key!r}")
        parts = obj["participants"]
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise SpecProblem("session spec: `participants` must be a list of objects", "$.participants")
        return cls.of(obj["kind"], parts, knobs=obj.get("knobs") or {}, name=obj.get("name") or "",
                      title=obj.get("title") or "", expectations=obj.get("expectations") or [],
                      ttl_seconds=obj.get("ttl_seconds"), tools=obj.get("tools") or [], source=obj)

    @classmethod
    def of(cls, kind: Any, participants: Iterable[Union[Participant, dict[str, Any], str]], *,
           knobs: Any = None, name: Any = "", title: Any = "", expectations: Any = None,
           ttl_seconds: Any = None, tools: Any = None, source: Optional[dict[str, Any]] = None) -> "SessionSpec":
        """A spec from its parts (the wire's create request, `Hub.open_session`), checked in the
        order the hub always checked them: participants, name, tools, limits, expectations."""
        if not isinstance(kind, str):
            raise SpecProblem(f"session kind must be a string, got {type(kind).__name__}", "$.kind")
        parts = tuple(_participant(p, i, f"$.participants[{i}]") for i, p in enumerate(participants))
        if not isinstance(name, str):
            raise SpecProblem(f"session name must be a string, got {type(name).__name__}", "$.name")
        if name:
            try:
                check_name(name)
            except ProtocolError as exc:
                raise SpecProblem(str(exc), "$.name") from None
        if tools is not None and not isinstance(tools, list):
            raise SpecProblem(f"tools must be a list, got {type(tools).__name__}", "$.tools")
        ttl = _ttl(ttl_seconds)
        exps = _expectations(expectations)
        return cls(kind, parts, name, title, knobs if knobs is not None else {}, exps, ttl, tuple(tools or ()),
                   source)

    def replace(self, *, max_turns: Optional[int] = None, ttl_seconds: Optional[float] = None,
                context_vars: Optional[dict[str, Any]] = None) -> "SessionSpec":
        """This spec for one run: `ttl_seconds`, a workflow graph's `max_turns`, more `context_vars`
        (a workflow's; added to the declared ones) replaced where given."""
        if max_turns is None and ttl_seconds is None and not context_vars:
            return self
        out = dict(self.source) if self.source is not None else self.to_dict()
        if ttl_seconds is not None:
            out["ttl_seconds"] = ttl_seconds
        if (max_turns is not None or context_vars) and self.kind == "workflow":
            knobs = dict(self.knobs) if isinstance(self.knobs, dict) else {}
            if max_turns is not None and isinstance(knobs.get("graph"), dict):
                knobs["graph"] = {**knobs["graph"], "max_turns": max_turns}
            if context_vars:
                base = knobs.get("context_vars")
                knobs["context_vars"] = {**(base if isinstance(base, dict) else {}), **context_vars}
            out["knobs"] = knobs
        spec = SessionSpec.parse(out)
        if max_turns is None and self._graph is not _UNSET:  # the same graph: read once
            object.__setattr__(spec, "_graph", self._graph)
        return spec

    def with_participants(self, participants: Iterable[Participant]) -> "SessionSpec":
        """This spec with the roster `participants` (a session's after `participant.added`)."""
        return dataclasses.replace(self, participants=tuple(participants), source=None)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON object: a copy of the object it was parsed from; one built from its
        parts (`of`) in the compiled form."""
        if self.source is not None:
            return copy.deepcopy(self.source)
        return copy.deepcopy({"kind": self.kind, "name": self.name, "participants": [_participant_dict(p) for p in
                                                                                     self.participants],
                              "knobs": self.knobs, "expectations": [e.to_dict() for e in self.expectations],
                              "ttl_seconds": self.ttl_seconds, "tools": list(self.tools)})

    # -- reading it -----------------------------------------------------------------------------
    @property
    def participant_ids(self) -> list[str]:
        return [p.agent_id for p in self.participants]

    @property
    def graph_source(self) -> Any:
        """A workflow's `knobs.graph` as given (None for the other kinds, or when absent)."""
        return self.knobs.get("graph") if self.kind == "workflow" and isinstance(self.knobs, dict) else None

    @property
    def graph(self) -> Optional[TransitionGraph]:
        """A workflow's graph as the `turnflow.spec` model, read once (AG2's `loads` reading); None
        for the other kinds, or when it is not a valid graph (the adapter refuses the session then,
        naming the problem)."""
        if self._graph is _UNSET:
            object.__setattr__(self, "_graph", _graph_model(self.graph_source))
        graph: Optional[TransitionGraph] = self._graph  # what `_graph_model` returned
        return graph

    @property
    def context_vars(self) -> dict[str, Any]:
        declared = self.knobs.get("context_vars") if isinstance(self.knobs, dict) else None
        return dict(declared) if isinstance(declared, dict) else {}

    @property
    def opener(self) -> Optional[str]:
        """Who opens a session of this spec: the `initiator`, else the workflow's start speaker,
        else the first participant; None when it names nobody. (A workflow's graph is read then,
        whoever opens: the one reading of it that the adapter and the agents' contexts share.)"""
        graph = self.graph
        initiator = next((p.agent_id for p in self.participants if p.role == "initiator"), None)
        if initiator is not None:
            return initiator
        if graph is not None:
            return graph.initial_speaker
        return self.participants[0].agent_id if self.participants else None

    def tools_of(self, agent_id: str) -> tuple[dict[str, Any], ...]:
        return tuple(t for t in self.tools if isinstance(t, dict) and t.get("owner") == agent_id)


def _participant_dict(p: Participant) -> dict[str, Any]:
    return {"agent_id": p.agent_id, "role": p.role, "order": p.order, "description": p.description,
            "tools": list(p.tools)}


#: canonical JSON text of a graph -> the model a spec read from it, for the workflow adapter's
#: compiled-graph cache (`adapters.workflow.compiled_graph`): the graph of a run is read once
_MODELS: dict[str, Any] = {}
_MODELS_MAX = 64
graph_key = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode


def known_graph(key: str) -> Optional[TransitionGraph]:
    """The model a spec already read from the graph whose canonical JSON text is `key`, or None."""
    return _MODELS.get(key)


def _graph_model(graph: Any) -> Optional[TransitionGraph]:
    if graph is None:
        return None  # pydantic is not loaded for a spec without a graph
    from turnflow.spec import SpecError, TransitionGraph

    if isinstance(graph, TransitionGraph):
        return graph
    if not isinstance(graph, dict):
        return None
    try:
        model = TransitionGraph.loads(graph)
    except SpecError:
        return None
    try:
        key = graph_key(graph)
    except (TypeError, ValueError):  # not plain JSON: the adapter compiles it on its own
        return model
    if len(_MODELS) >= _MODELS_MAX:
        _MODELS.clear()
    _MODELS[key] = model
    return model
