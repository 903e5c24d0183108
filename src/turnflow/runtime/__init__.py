"""turnflow's minimal hub runtime (docs/runtime.md). It reads only compiled session specs (the JSON
objects of docs/compiler.md, parsed once into a `SessionSpec`); it never imports the DSL or the compiler.

    hub = await Hub.open(SQLiteStore("hub.db"))
    md = await hub.open_spec(spec)            # INVITED; one invite per target
    await hub.ack(md.session_id, "billing")   # ... ACTIVE once every target acked
    await hub.post(Envelope(md.session_id, "triage", None, EV_TEXT, {"text": "hi"}))
"""

from turnflow.runtime.adapters import (ConsultingAdapter, ConversationAdapter, DiscussionAdapter, WorkflowAdapter,
                                       builtin_adapters)
from turnflow.runtime.agents import Capabilities, ScriptedAgent, SessionTools
from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_EXPECTATION_VIOLATED, EV_PACKET, EV_SESSION_ACK,
                                       EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_SESSION_INVITE, EV_SESSION_OPENED,
                                       EV_SESSION_REJECT, EV_TELEMETRY, EV_TEXT, Envelope, packet)
from turnflow.runtime.errors import AdapterError, ProtocolError, StoreError
from turnflow.runtime.hub import Hub, HydrateReport
from turnflow.runtime.runner import RunResult, run_session
from turnflow.runtime.session import Expectation, Participant, SessionMetadata, SessionState
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.store import Corrupt, SQLiteStore, Store
from turnflow.runtime.views import (FullTranscript, NamedFullTranscript, NamedWindowedSummary, WindowedSummary)

__all__ = [
    "Hub", "HydrateReport", "Store", "SQLiteStore", "Corrupt", "Envelope", "packet", "ProtocolError", "AdapterError",
    "StoreError", "SessionSpec", "SessionState", "SessionMetadata", "Participant", "Expectation", "ConsultingAdapter",
    "ConversationAdapter", "DiscussionAdapter", "WorkflowAdapter", "builtin_adapters", "FullTranscript",
    "WindowedSummary", "NamedFullTranscript", "NamedWindowedSummary", "ScriptedAgent", "Capabilities",
    "SessionTools", "run_session", "RunResult", "EV_TEXT", "EV_PACKET", "EV_CONTEXT_SET", "EV_SESSION_INVITE",
    "EV_SESSION_ACK", "EV_SESSION_REJECT", "EV_SESSION_OPENED", "EV_SESSION_CLOSED", "EV_SESSION_EXPIRED",
    "EV_EXPECTATION_VIOLATED", "EV_TELEMETRY",
]
