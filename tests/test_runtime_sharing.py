"""Sessions of one flow share their immutable values (knobs, participants, participant sets):
10,000 concurrent sessions then hold one copy instead of 10,000 (the cyclic GC scans every
object the hub keeps on each full collection). Sharing never changes what is stored or seen."""

from __future__ import annotations

import json
import sqlite3

from runtime_helpers import FakeClock, run
from turnflow.runtime.hub import Hub
from turnflow.runtime.session import Participant
from turnflow.runtime.store import SQLiteStore


def rr(people, turns):
    return {"initial_speaker": people[0], "max_turns": turns,
            "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}},
                             "priority": 0}],
            "default_target": {"name": "terminate", "args": {"reason": "done"}}}


def stored_records(db):
    con = sqlite3.connect(db)
    try:
        return {sid: json.loads(text) for sid, text in con.execute("SELECT session_id, record FROM sessions")}
    finally:
        con.close()


def test_sessions_opened_with_equal_knobs_and_participants_share_them_and_store_the_same_bytes(tmp_path):
    db = str(tmp_path / "hub.db")
    people = ["planner", "coder", "reviewer"]

    async def go():
        hub = await Hub.open(SQLiteStore(db), clock=FakeClock())
        given = [{"graph": rr(people, 4), "context_vars": {"topic": "x", "n": [1, 2.5, None, True]}}
                 for _ in range(3)]
        mds = [await hub.open_session("workflow", people, knobs=k) for k in given]
        first = mds[0]
        for md, k in zip(mds, given):
            assert md.knobs == k and md.knobs is first.knobs and md.knobs is not k  # one copy, equal to each
            assert md.pset is first.pset and md.participants is first.participants
            assert md.expectations is first.expectations and len(md.expectations) == 2
            assert md.tools == () and md.pending_acks == {"coder", "reviewer"}
        for md in mds:
            for who in ("coder", "reviewer"):
                await hub.ack(md.session_id, who)
            assert md.pending_acks == set() and md.pending_acks is mds[0].pending_acks  # one shared empty set
            assert md.state.value == "active"
        await hub.aclose()
        records = stored_records(db)
        for md, k in zip(mds, given):
            assert records[md.session_id]["knobs"] == k
        # the stored text is json.dumps of the record with the caller's own knobs, byte for byte
        con = sqlite3.connect(db)
        text = con.execute("SELECT record FROM sessions WHERE session_id = ?", (first.session_id,)).fetchone()[0]
        con.close()
        rec = first.creation_record()
        rec["knobs"] = given[0]
        assert text == json.dumps(rec, sort_keys=True, separators=(",", ":"))
        again = Hub(SQLiteStore(db))
        again.hydrate()
        assert again.report.problems == [] and len(again.sessions) == 3
        hydrated = [again.metadata(md.session_id) for md in mds]
        assert all(h.pset is hydrated[0].pset and h.participants is hydrated[0].participants for h in hydrated)
        assert [h.state.value for h in hydrated] == ["active"] * 3 and hydrated[2].pending_acks == set()
        again.store.close()
    run(go())


def test_knobs_that_json_would_change_are_kept_exactly_as_given():
    """A tuple, a non-string key, a NaN: the JSON text does not say everything, so the session
    keeps the caller's object (and the adapter judges that, not a JSON copy of it)."""
    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        graph = rr(["a", "b"], 3)
        tupled = {"graph": graph, "context_vars": {"pair": (1, 2)}}
        md = await hub.open_session("workflow", ["a", "b"], knobs=tupled)
        assert md.knobs is tupled and md.knobs["context_vars"]["pair"] == (1, 2)
        listed = {"graph": graph, "context_vars": {"pair": [1, 2]}}  # same JSON text as `tupled`
        md2 = await hub.open_session("workflow", ["a", "b"], knobs=listed)
        md3 = await hub.open_session("workflow", ["a", "b"], knobs=tupled)
        assert md2.knobs == listed and md3.knobs is tupled  # never a list where a tuple was given
        await hub.aclose()
    run(go())


def test_a_shared_copy_that_somebody_changed_is_not_given_to_new_sessions():
    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        knobs = {"graph": rr(["a", "b"], 3)}
        md = await hub.open_session("workflow", ["a", "b"], knobs=knobs)
        md.knobs["graph"]["max_turns"] = 99
        md2 = await hub.open_session("workflow", ["a", "b"], knobs={"graph": rr(["a", "b"], 3)})
        assert md2.knobs["graph"]["max_turns"] == 3 and md2.knobs is not md.knobs
        await hub.aclose()
    run(go())


def test_participants_are_shared_only_when_equal_in_type_too():
    """`order=True` equals 1 in Python but is stored as `true`: it is not the participant of order 1."""
    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        plain = [Participant("a", "participant", 0), Participant("b", "participant", 1)]
        odd = [Participant("a", "participant", 0), Participant("b", "participant", True)]
        md1 = await hub.open_session("conversation", plain)
        md2 = await hub.open_session("conversation", odd)
        md3 = await hub.open_session("conversation", [Participant("a", "participant", 0),
                                                     Participant("b", "participant", 1)])
        assert md2.participants[1].order is True and md2.participants[1] is not md1.participants[1]
        assert md3.participants[1] is md1.participants[1]
        assert md2.creation_record()["participants"][1]["order"] is True
        await hub.aclose()
    run(go())


def test_a_state_somebody_holds_never_changes():
    """`fold` never changes its input: a workflow state handed out by `adapter_state` stays as it
    was after the next turns (no state is updated in place: docs/benchmarks.md measured that it
    did not pay); the live state ends equal to a fresh hydrate of the log."""
    from turnflow.runtime.envelope import EV_TEXT, Envelope

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        people = ["a", "b", "c"]
        md = await hub.open_session("workflow", people, knobs={"graph": rr(people, 9)})
        for p in people[1:]:
            await hub.ack(md.session_id, p)
        held = hub.adapter_state(md.session_id)
        before = held.snapshot()
        await hub.post(Envelope(md.session_id, "a", None, EV_TEXT, {"text": "one"}))
        after = hub.adapter_state(md.session_id)
        assert held.snapshot() == before and after is not held
        assert after.snapshot()["turn_count"] == 1 and after.expected_next_speaker == "b"
        live = hub.sessions[md.session_id]
        own = live.state
        for who, text in (("b", "two"), ("c", "three")):
            await hub.post(Envelope(md.session_id, who, None, EV_TEXT, {"text": text}))
        assert after.snapshot()["turn_count"] == 1 and own.turn_count == 1 and live.state is not own
        now = hub.adapter_state(md.session_id)
        assert (now.turn_count, now.expected_next_speaker, now.last_speaker_id) == (3, "a", "c")
        again = Hub(hub.store)
        again.hydrate()
        assert again.adapter_state(md.session_id).snapshot() == hub.adapter_state(md.session_id).snapshot()
        await hub.aclose()
    run(go())


def test_a_creation_records_text_from_shared_parts_is_the_records_own_json():
    """`session_row_of(md)` builds the creation record's text from the parts sessions share (the
    manifest, participants and expectations encoded once); it must be `session_row(md.creation_record())`
    byte for byte, for every shape of metadata, and never reuse a part that changed."""
    import dataclasses
    import random

    from turnflow.runtime.adapters import builtin_adapters
    from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata, shared_participant
    from turnflow.runtime.store.records import session_row, session_row_of

    rng = random.Random(11)
    manifests = [a.manifest for a in builtin_adapters().values()]
    odd = SessionManifest("odd", 2, 1, None, ("a", "b"), {"z": [1.5, float("nan")], "a": {"é": True}}, "full",
                          (Expectation("acks_within", 1e-05, "warn"), Expectation("turn_within", float(2**60), "hide")))
    listed = SessionManifest("listed", 1, 2, 3, ["a"], {}, "full", ())  # type: ignore[arg-type]
    manifests += [odd, listed]
    values = [None, 0, -3, 2**70, 1.0, 0.1, 1e-05, 1e300, float("inf"), float("nan"), True, False, "", "é\u2028\"\\",
              "\ud800", [], {}, {"b": 1, "a": [None, {"y": 2.5, "x": "q"}]}, (1, 2)]

    def participants():
        parts = []
        for i in range(rng.randint(1, 4)):
            p = Participant(rng.choice(["a", "b:c", "d@e", "f.g"]) + str(i), rng.choice(["initiator", "respondent", "x"]),
                            rng.choice([i, True, 2**40]), rng.choice(["", "desc é", "\u2028"]),
                            tuple(rng.choice([(), ("t1",), ("t1", "t2")])))
            parts.append(shared_participant(p) if rng.random() < 0.7 else p)
        return parts

    for i in range(600):
        md = SessionMetadata(session_id=f"{i:032x}", manifest=rng.choice(manifests), creator_id=rng.choice(["a0", "é"]),
                             participants=participants(), knobs=rng.choice([{}, {"k": rng.choice(values)}, {"b": {}, "a": [1]}]),
                             created_at=rng.choice([1.5, 1_700_000_000.123456, 3, float("inf")]), name=rng.choice(["", "n.x"]),
                             expectations=rng.choice([(), [Expectation("reply_within", 600.0, "auto_close")],
                                                      (Expectation("acks_within", 30, "warn"),)]),
                             ttl_seconds=rng.choice([None, 60, 0.5, 1e-05]),
                             labels=rng.choice([{}, {"task_id": rng.choice([7, "t", None])}, {"z": values[rng.randrange(len(values))]}]),
                             tools=rng.choice([(), [{"name": "x", "params": {"b": 1, "a": 2}}]]),
                             extra=rng.choice([None, {"required_acks": 2}, {"b": [1.5], "a": None}]))
        assert session_row_of(md) == session_row(md.creation_record()), i
    # a part that changed after it was encoded (a manifest's knobs schema is a dict) is encoded again
    md = SessionMetadata(session_id="f" * 32, manifest=odd, creator_id="a", participants=[Participant("a")], knobs={},
                         created_at=1.0)
    assert session_row_of(md) == session_row(md.creation_record())
    odd.knobs_schema["new"] = 1
    assert session_row_of(md) == session_row(md.creation_record())
    md.manifest = listed
    assert session_row_of(md) == session_row(md.creation_record())
    listed.roles.append("b")  # type: ignore[attr-defined]
    assert session_row_of(md) == session_row(md.creation_record())
    md.participants = (*md.participants, Participant("b", order=1))
    assert session_row_of(md) == session_row(md.creation_record())
    # and a manifest of another type keeps its own `to_dict`
    @dataclasses.dataclass(frozen=True)
    class Mine(SessionManifest):
        def to_dict(self):
            return {"mine": True}
    md.manifest = Mine(*[getattr(odd, f.name) for f in dataclasses.fields(SessionManifest)])
    assert session_row_of(md) == session_row(md.creation_record())



def test_a_new_session_id_is_a_uuid7_that_sorts_by_when_it_was_made(monkeypatch):
    """`new_session_id`: a UUID version 7 (RFC 9562) as 32 hex digits — the steady clock's
    milliseconds, then random bits — so ids made later sort later (the store's indexes by session id
    then take new entries near their end: docs/benchmarks.md, "Serve hub CPU, session 11")."""
    import random
    import uuid

    from turnflow.runtime import session

    rng = random.Random(3)
    now = [1_795_000_000.0]
    monkeypatch.setattr(session, "STEADY", lambda: now[0], raising=False)
    made = []
    for _ in range(2000):
        raw = rng.randbytes(10)
        monkeypatch.setattr(session.os, "urandom", lambda n, raw=raw: raw[:n])
        sid = session.new_session_id()
        u = uuid.UUID(hex=sid)
        assert session.check_session_id(sid) == sid
        assert (u.version, u.variant) == (7, uuid.RFC_4122)
        assert u.int >> 80 == int(now[0] * 1000)  # the milliseconds, in the first 48 bits
        r = int.from_bytes(raw, "big")
        assert (u.int >> 64) & 0xFFF == r >> 68 and u.int & ((1 << 62) - 1) == r & ((1 << 62) - 1)
        made.append(sid)
        now[0] += rng.choice([0.001, 0.0015, 0.5, 3600.0])
    assert made == sorted(made) and len(set(made)) == len(made)
    monkeypatch.undo()
    a = session.new_session_id()
    b = session.new_session_id()
    assert a[:12] <= b[:12] and a != b
