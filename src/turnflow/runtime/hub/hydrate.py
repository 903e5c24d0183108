"""Hydrate: rebuild a hub's sessions from the log, streaming each session's envelopes through
`initial_state` + fold (docs/runtime.md, "Hydrate")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Union

from turnflow.runtime.adapters.protocol import SessionAdapter
from turnflow.runtime.envelope import SUBSTANTIVE, Envelope
from turnflow.runtime.errors import ProtocolError, RuntimeErrorBase
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import (NO_ACKS, Participant, SessionManifest, SessionMetadata, SessionState,
                                      shared_participant)
from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import Corrupt

AdapterLookup = Callable[[tuple[Any, Any]], Optional[SessionAdapter]]


@dataclass
class HydrateReport:
    sessions: int = 0
    envelopes: int = 0
    problems: list[Corrupt] = field(default_factory=list)
    completed_closes: list[str] = field(default_factory=list)
    completed_opens: list[str] = field(default_factory=list)


def hydrate(store: Store, adapter_for: AdapterLookup, only: Optional[str] = None, *, ended: bool = True,
            keep: bool = True) -> tuple[dict[str, LiveSession], HydrateReport]:
    """Every session of `store` (creation order), rebuilt — with `only`, that one session alone,
    read by itself (`store.load`; with `keep=False`, `store.read_range`: nothing kept by the
    store), never the whole store — and what was found. Terminal sessions stay terminal; with
    `ended=False` those whose log ends with `session.closed` / `session.expired` are left in the
    store, not read (`store.open_sessions`). A corrupt record is reported (session, seq) and
    neither it nor anything after it in that session is folded."""
    report = HydrateReport()
    sessions: dict[str, LiveSession] = {}
    items: Iterable[Union[Envelope, Corrupt]]
    if only is None:  # (both streamed: read as they are iterated)
        records: Iterable[Union[dict[str, Any], Corrupt]] = store.sessions() if ended else store.open_sessions()
        wanted: Optional[set[str]] = None if ended else set()
    else:
        record = store.session_record(only)
        records = () if record is None else (record,)
        wanted = None
    for rec in records:
        if wanted is not None:
            wanted.add(rec.session_id if isinstance(rec, Corrupt) else str(rec.get("session_id")))
        live = _session(rec, adapter_for, report)
        if live is not None:
            sessions[live.session_id] = live
            report.sessions += 1
    if only is None:
        items = store.stream() if wanted is None else store.stream(only=wanted)
    else:
        items = store.load(only) if keep else store.read_range(only)
    for item in items:
        _record(sessions, item, report)
    report.completed_closes = [sid for sid, live in sessions.items()
                               if live.pending_close is not None and live.corrupt is None
                               and not live.metadata.state.terminal]
    return sessions, report


def _session(rec: Union[dict[str, Any], Corrupt], adapter_for: AdapterLookup,
             report: HydrateReport) -> Optional[LiveSession]:
    """A session from its creation record, before any envelope; None (reported) when it cannot be."""
    if isinstance(rec, Corrupt):
        report.problems.append(rec)
        return None
    try:
        md = SessionMetadata.from_creation_record(rec)
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase) as exc:
        report.problems.append(Corrupt(str(rec.get("session_id")), 0,
                                       f"session record has the wrong shape: {type(exc).__name__}"))
        return None
    adapter = adapter_for((md.manifest.type, md.manifest.version))
    if adapter is None:
        report.problems.append(Corrupt(md.session_id, 0, f"no adapter for {md.manifest.type!r} "
                                                         f"v{md.manifest.version}"))
        return None
    if md.manifest == adapter.manifest:  # the adapter's own, as the session had it when it ran (its
        md.manifest = adapter.manifest  # dicts in their order, not the record's sorted one; one object)
    md.expires_at = md.created_at + md.ttl_seconds if md.ttl_seconds else None
    try:
        state = adapter.initial_state(md)
    except ProtocolError as exc:
        report.problems.append(Corrupt(md.session_id, 0, f"session record is invalid: {exc}"))
        return None
    return LiveSession(md, adapter, state)


def end_record(md: SessionMetadata, membership: bool) -> str:
    """What a session's end settled that its creation record does not say (`from_end_record`
    reads it back), as a JSON array: its terminal state, when and why it ended, when it opened,
    the invites still unacked, and — for a kind whose roster can change (`membership`) — the
    roster, each participant as [id, role, order, description, tools]."""
    acks = md.pending_acks
    rec: list[Any] = [md.state.value, md.closed_at, md.close_reason, md.activated_at, sorted(acks) if acks else []]
    if membership:
        rec.append([[p.agent_id, p.role, p.order, p.description, list(p.tools)] for p in md.participants])
    return _dumps(rec)


_dumps = json.JSONEncoder(separators=(",", ":")).encode  # (one encoder: `json.dumps` with options makes one a call)


_MANIFEST_DICTS: dict[int, tuple[SessionManifest, dict[str, Any]]] = {}  # id -> (an adapter's manifest, its dict)


def _manifest_dict(manifest: SessionManifest) -> dict[str, Any]:
    kept = _MANIFEST_DICTS.get(id(manifest))
    if kept is None or kept[0] is not manifest:
        if len(_MANIFEST_DICTS) >= 256:
            _MANIFEST_DICTS.clear()
        kept = _MANIFEST_DICTS[id(manifest)] = (manifest, manifest.to_dict())
    return kept[1]


def from_end_record(rec: dict[str, Any], end: str, adapter_for: AdapterLookup) -> Optional[SessionMetadata]:
    """An ended session's metadata from its creation record and its `end_record`, equal to the
    one its log folds to (tests/test_hub_ended.py compares them), without reading the log; None
    when either record cannot be read (the caller reads the session back instead)."""
    try:
        m = rec["manifest"]
        adapter = adapter_for((m["type"], m["version"]))
        if adapter is None:
            return None
        own = adapter.manifest  # (the adapter's own when equal, as `_session` has it: its dict compared, not parsed)
        md = SessionMetadata.from_creation_record(rec, own if m == _manifest_dict(own) else None)
        if md.manifest == own:
            md.manifest = own
        md.expires_at = md.created_at + md.ttl_seconds if md.ttl_seconds else None
        state, md.closed_at, md.close_reason, md.activated_at, acks, *roster = json.loads(end)
        md.state = SessionState(state)
        if not md.state.terminal or len(roster) > 1:
            return None
        md.pending_acks = set(acks) or NO_ACKS
        stored = roster[0] if roster else None
        if stored is not None and stored != [[p.agent_id, p.role, p.order, p.description, list(p.tools)]
                                             for p in md.participants]:  # (a roster that changed)
            roster = [shared_participant(Participant(a, r, o, d, tuple(t))) for a, r, o, d, t in stored]
            if roster != list(md.participants):
                md.participants = roster
                md.__post_init__()  # (the roster's shared tuple and its pset)
        return md
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase):
        return None


def _record(sessions: dict[str, LiveSession], item: Union[Envelope, Corrupt], report: HydrateReport) -> None:
    """Fold one logged envelope into its session, or stop that session at a bad record."""
    live = sessions.get(item.session_id)
    if isinstance(item, Corrupt):
        if live is not None and live.corrupt is None:
            live.corrupt = str(item)
        report.problems.append(item)
        return
    if live is None or live.corrupt is not None:
        return
    if item.seq != live.last_seq + 1:
        live.corrupt = f"session {item.session_id} seq {live.last_seq + 1}: missing record"
        report.problems.append(Corrupt(item.session_id, live.last_seq + 1, "missing record (gap)"))
        return
    try:
        live.apply(item)
        if item.event_type in SUBSTANTIVE and not live.metadata.state.terminal:
            res = live.adapter.on_accepted(live.metadata, item, live.state)
            if res.close_reason is not None:
                live.pending_close = res.close_reason
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase) as exc:
        # a record with a good checksum that the session cannot fold: stop this session here
        live.corrupt = f"session {item.session_id} seq {item.seq}: record does not fold"
        report.problems.append(Corrupt(item.session_id, item.seq,
                                       f"record does not fold ({type(exc).__name__}: {str(exc)[:120]})"))
        return
    report.envelopes += 1
