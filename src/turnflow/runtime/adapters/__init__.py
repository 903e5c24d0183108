"""The four built-in session adapters, registered by `(type, version)`."""

from typing import Any

from turnflow.runtime.adapters.protocol import AdapterResult, ExpectedTurn, SessionAdapter
from turnflow.runtime.adapters.consulting import ConsultingAdapter
from turnflow.runtime.adapters.conversation import ConversationAdapter
from turnflow.runtime.adapters.discussion import DiscussionAdapter
from turnflow.runtime.adapters.workflow import WorkflowAdapter, WorkflowState


def builtin_adapters() -> dict[tuple[str, int], Any]:
    return {(a.manifest.type, a.manifest.version): a
            for a in (ConsultingAdapter(), ConversationAdapter(), DiscussionAdapter(), WorkflowAdapter())}


__all__ = ["AdapterResult", "ExpectedTurn", "SessionAdapter", "ConsultingAdapter", "ConversationAdapter",
           "DiscussionAdapter", "WorkflowAdapter", "WorkflowState", "builtin_adapters"]
