"""conversation: exactly two participants speaking in any order; it never closes by itself
(explicit close, TTL or an expectation ends it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from turnflow.runtime.adapters.simple import SimpleAdapter
from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata

if TYPE_CHECKING:
    from turnflow.runtime.views import WindowedSummary


class ConversationAdapter(SimpleAdapter):
    manifest = SessionManifest(
        type="conversation", version=1, min_participants=2, max_participants=2,
        roles=("initiator", "respondent", "participant"), knobs_schema={}, default_view="windowed_summary:10",
        default_expectations=(Expectation("max_silence", 3600.0, "audit"),))
    knobs: dict[str, Any] = {}

    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> WindowedSummary:
        from turnflow.runtime.views import WindowedSummary

        return WindowedSummary(10)
