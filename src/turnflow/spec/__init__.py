"""One model of what the compiler emits (pydantic v2): the session spec, the
AG2 TransitionGraph with its conditions and targets, tools, expectations and
the knobs of each kind. A leaf package: it imports only the standard library
and pydantic, and every stage (compiler, runtime, simulate, decompile,
interop, the shipped JSON Schemas) reads these models.

    from turnflow.spec import TransitionGraph, parse_spec, SpecError

Every name loads on first use (module `__getattr__`), so `turnflow.spec.meaning` (what each
condition and target means, standard library only) is read without importing pydantic; the
runtime reads only the TransitionGraph models and never builds the session-spec classes.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.spec.errors import SpecError, json_path
    from turnflow.spec.graph import (CONDITION, CONDITIONS, DEFAULT_REASON, EXTENSION_CONDITIONS, LOADS,
                                     NO_PARTICIPANTS_REASON, TARGETS, EXTENSION_TARGETS, AllOf, AnyOf, ContextCompare,
                                     Not, PreviousSpeaker, any_of, compare, context_compare, negate, previous_speaker,
                                     Always, AgentTarget, BaseCondition, BaseTarget, Condition, ContextEquals,
                                     FromSpeaker, RevertToInitiator, RoundRobin, Stay, Target, Terminate, TextContains,
                                     ToolCalled, Transition, TransitionGraph, agent, all_of, always, context_equals,
                                     from_speaker, parse, revert_to_initiator, round_robin, stay, terminate,
                                     text_contains, tool_called)

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.spec.session import (KINDS, KNOBS, SESSION_SPEC, SESSION_SPECS, TOOL_TARGET_KEYWORDS,
                                       ConsultingKnobs, ConsultingSpec, ConversationKnobs, ConversationSpec,
                                       DiscussionKnobs, DiscussionSpec, Expectation, ExpectationParams, Participant,
                                       SessionSpec, Tool, WorkflowKnobs, WorkflowSpec, check_spec, parse_spec)

#: the names of `turnflow.spec.session`, loaded on first use
_SESSION = ("KINDS", "KNOBS", "SESSION_SPEC", "SESSION_SPECS", "TOOL_TARGET_KEYWORDS", "ConsultingKnobs",
            "ConsultingSpec", "ConversationKnobs", "ConversationSpec", "DiscussionKnobs", "DiscussionSpec",
            "Expectation", "ExpectationParams", "Participant", "SessionSpec", "Tool", "WorkflowKnobs", "WorkflowSpec",
            "check_spec", "parse_spec")

__all__ = ["SpecError", "json_path", "CONDITION", "CONDITIONS", "DEFAULT_REASON", "EXTENSION_CONDITIONS", "LOADS",
           "NO_PARTICIPANTS_REASON", "TARGETS", "EXTENSION_TARGETS", "AllOf", "AnyOf",
           "ContextCompare", "Not", "PreviousSpeaker", "any_of", "compare", "context_compare", "negate",
           "previous_speaker", "Always", "AgentTarget", "BaseCondition",
           "BaseTarget", "Condition", "ContextEquals", "FromSpeaker", "RevertToInitiator", "RoundRobin",
           "Stay", "Target", "Terminate", "TextContains", "ToolCalled", "Transition", "TransitionGraph",
           "agent", "all_of", "always", "context_equals", "from_speaker", "parse", "revert_to_initiator",
           "round_robin", "stay", "terminate", "text_contains", "tool_called", "KINDS", "KNOBS",
           "SESSION_SPEC", "SESSION_SPECS", "TOOL_TARGET_KEYWORDS", "ConsultingKnobs", "ConsultingSpec",
           "ConversationKnobs", "ConversationSpec", "DiscussionKnobs", "DiscussionSpec", "Expectation",
           "ExpectationParams", "Participant", "SessionSpec", "Tool", "WorkflowKnobs", "WorkflowSpec",
           "check_spec", "parse_spec"]


_ERRORS = ("SpecError", "json_path")


def __getattr__(name: str) -> Any:
    if name in _SESSION:
        from turnflow.spec import session as module
    elif name in _ERRORS:
        from turnflow.spec import errors as module  # type: ignore[no-redef]
    elif name in __all__:
        from turnflow.spec import graph as module  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module 'turnflow.spec' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
