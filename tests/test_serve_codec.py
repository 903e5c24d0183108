"""The served hub's fast paths give what the plain library calls give: `wire.iso` (the date and
time formatted once per second) is `datetime.fromtimestamp(t, timezone.utc).isoformat()` to the
character, microsecond rounding and carries included."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

from turnflow.serve import frames, wire

from ops_here import Conn, open_ops


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def test_iso_is_datetimes_isoformat_also_at_rounding_edges_and_second_changes():
    rng = random.Random(36)
    base = 1_764_000_000.0
    values = [base + rng.uniform(-86400, 86400) for _ in range(20000)]
    values += [rng.uniform(0, 4e9) for _ in range(5000)]
    # the halfway microseconds (rounded half to even), a fraction that rounds up into the next second
    values += [base + k / 1e6 + d for k in range(0, 3000) for d in (0.0, 5e-7, 4.999e-7, 5.001e-7)]
    values += [base + 0.9999995, base + 0.99999949, base + 0.0000005, base + 0.0000015, base, 0.0, 1.5,
               -1.5, -0.0000004, 1e9 + 0.9999996]
    for t in values + values[::-1]:  # each value after a different one: the cached second changes
        assert wire.iso(t) == _iso(t), t
    # a channel record's creation and expiry (hours apart) between envelopes of this second, more
    # seconds than are kept: each prefix is its own second's
    for k in range(200):
        for t in (base + k + 0.25, base + k + 7200.5, base + k + 0.75, base - k - 0.5, base + k + 7200.0):
            assert wire.iso(t) == _iso(t), t
    assert wire.iso(None) is None


# -- the frames' JSON codec: msgspec where it gives what the standard library gives ---------------

def _json_values(rng: random.Random, depth: int = 0):
    pick = rng.randrange(12 if depth < 4 else 7)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        return rng.choice([0, -1, 7, 2**63 - 1, -2**63, 2**64, 10**30, -10**25])  # big ones: exact, never floats
    if pick == 2:
        return rng.choice([0.5, -0.0, 1e-05, 1e-9, 1e16, 1e22, 123456789012345680.0, 5e-324, 0.1])
    if pick in (3, 4, 5, 6):
        alphabet = "ab\"\\/\n\t\x00\x1f\x7fé😀\u2028\u2029\ufeff0123456789e-."
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
    if pick in (7, 8, 9):
        return {"".join(rng.choice("ké\"\n") for _ in range(rng.randrange(3))): _json_values(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    return [_json_values(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_frames_decode_gives_the_standard_librarys_values_and_refusals():
    import json

    from turnflow.serve import frames

    rng = random.Random(7)
    texts = [json.dumps(_json_values(rng), ensure_ascii=rng.random() < 0.5) for _ in range(3000)]
    texts += ['{"a":1e400}', '[NaN]', '{"a":Infinity}', '"\\ud800"', '["\\udc00x"]', '{"a":1,"a":2}', '[1,]',
              '{"a":1} x', ' {"a":"\\ud83d\\ude00"} ', '01', '"a\nb"', '[' * 70 + ']' * 70, '-0', '[1.]',
              '{"k":123456789012345678901234567890}', '\ufeff{}', '"\\u12"']
    for text in texts:
        try:
            want = ("ok", frames._strict(text))
        except Exception:
            want = ("error",)
        try:
            got = ("ok", frames._load(text))
        except frames.FrameError:
            got = ("error",)
        if want[0] == "ok" and frames.unsendable(want[1]) is not None:
            want = ("error",)  # (refused after reading: NaN, a lone surrogate, too deep)
        assert repr(got) == repr(want), text  # (repr: -0.0 against 0.0, 1 against 1.0, True against 1)


def test_frames_decode_of_receipts_and_requests_is_the_standard_librarys_frame_or_refusal():
    """`decode` checks receipts and requests of the usual shape on its own fast path (a receipt's
    brackets are not counted: its fields are strings): the same frame, or the same refusal, as the
    standard library's reading of the text (`_strict`, the walk `unsendable`, `_frame`)."""
    import json

    from turnflow.serve import frames

    def reference(text):
        try:
            data = frames._strict(text)
        except Exception:
            return ("error",)
        if frames.unsendable(data) is not None:
            return ("error",)
        try:
            return ("ok", frames._frame(data))
        except frames.FrameError:
            return ("error",)

    rng = random.Random(11)
    pieces = ["", "a", "[", "{", "]", "}", "\\ud800", "\\udc00x", "\\ud83d\\ude00", "é", '\\"', "[" * 70]
    texts = []
    for _ in range(400):
        field = lambda: "".join(rng.choice(pieces) for _ in range(rng.randrange(4)))  # noqa: E731
        receipt = {"kind": "receipt", "envelope_id": field(), "status": field(), "recipient_id": field(),
                   "channel_id": field(), "reason": field()}
        if rng.random() < 0.2:
            receipt[rng.choice(list(receipt))] = rng.choice([1, None, [field()], {"x": field()}])
        nest = rng.choice([0, 1, 30, 63, 64, 70])
        value = field()
        for _ in range(nest):
            value = [value]
        request = {"kind": "request", "request_id": field(), "op": field(), "params": {"v": value}}
        for frame in (receipt, request):
            text = json.dumps(frame, ensure_ascii=rng.random() < 0.5)
            texts.append(text.replace("\\\\u", "\\u"))  # (an escape in a field as the client wrote it)
    assert sum('"\\ud800' in t or '\\udc00' in t for t in texts) > 100
    for text in texts:
        try:
            got = ("ok", frames.decode(text))
        except frames.FrameError:
            got = ("error",)
        assert repr(got) == repr(reference(text)), text


def test_frames_encode_is_the_standard_librarys_text():
    import json

    from turnflow.serve import frames

    rng = random.Random(11)
    values = [_json_values(rng) for _ in range(3000)]
    values += [{"n": float("nan")}, [float("inf")], {"s": "bad \ud800"}, {1: "int key"}, {"t": (1, 2)}]
    for value in values:
        try:
            want = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:
            want = None  # (repaired below: compared with the repair of the standard library's path)
        got = frames.encode(value, "a test value")
        if want is not None and not frames._SURROGATE.search(want):
            assert got == want, value
        else:  # repaired as before: what the standard library's path gives with the fast codec off
            fast, frames._fast_dumps = frames._fast_dumps, None
            try:
                assert got == frames.encode(value, "a test value"), value
            finally:
                frames._fast_dumps = fast


def test_frames_clean_says_whether_encode_writes_a_value_without_a_repair():
    from turnflow.serve import frames

    rng = random.Random(13)
    for value in [_json_values(rng) for _ in range(500)]:
        assert frames.clean(value) is True, value  # (the generator's values are all sendable JSON)
    for value in ({"n": float("nan")}, [float("inf")], {"s": "bad \ud800"}, {"o": object()}, {"b": b"x"}):
        assert frames.clean(value) is False, value


def test_a_channel_record_built_around_its_kept_manifest_text_is_the_whole_records_encoding(tmp_path, monkeypatch):
    """`Ops._channel` writes a channel record as text around its manifest's JSON, kept per manifest
    and expectations, and around the parts of its session's record that stay while it lives: the
    same text as encoding `wire.channel_to_ag2` whole, for every kind, with labels, knobs and a TTL,
    sessions sharing a kept manifest text or not (declared expectations), in each state (invited,
    after each ack, closed), after a roster change, with a close reason to escape."""
    import asyncio

    from turnflow.serve import ops as ops_module

    from turnflow.serve import frames

    async def main() -> None:
        hub, ops = await open_ops(tmp_path)
        a, b, c = "a" * 32, "b" * 32, "c" * 32
        cases = [("consulting", [a, b], {}, None, None), ("consulting", [a, b], {"x": 1.5, "é": "\u00e9 😀"}, 30, None),
                 ("discussion", [a, b, c], {"n": 10**30, "l": [0.1, None, True]}, 2.5, None),
                 ("conversation", [a, b], {}, None, [{"name": "reply_within", "on_violation": "warn",
                                                     "params": {"seconds": 1.25}}])]
        try:
            for kind, people, labels, ttl, exps in cases:
                parts = [{"agent_id": p, "role": "initiator" if i == 0 else "respondent" if len(people) == 2
                          else "participant", "order": i} for i, p in enumerate(people)]
                for n in range(3):  # the later sessions of each: its manifest text is the kept one
                    md = await hub.open_session(kind, parts, creator_id=a, labels=labels, ttl_seconds=ttl,
                                                expectations=exps)
                    got = ops._channel(md)  # invited: its pending acks
                    assert got == frames.encode(wire.channel_to_ag2(md), "x"), (kind, got)
                    if n > 0:
                        for p in people[1:]:  # each ack: the state's parts again, the rest kept
                            await hub.ack(md.session_id, p)
                            assert ops._channel(md) == frames.encode(wire.channel_to_ag2(md), "x")
                    if n == 2 and kind == "discussion":  # another roster: its participants, not the kept ones
                        md.change_roster(True, {"agent_id": "d" * 32, "role": "participant"})
                        assert ops._channel(md) == frames.encode(wire.channel_to_ag2(md), "x")
                        assert '"agent_id":"' + "d" * 32 in ops._channel(md)
                    await hub.close(md.session_id, "done \u00e9" if n == 1 else "done")
                    assert md.session_id not in ops._channels and md.session_id not in ops._parts
                    # (terminal: not kept, written from the parts kept past its end)
                    assert ops._channel(md) == frames.encode(wire.channel_to_ag2(md), "x")
                    assert md.session_id in ops._ended_parts
            assert 1 <= len(ops._manifests) <= len(cases)
            # the parts of ended sessions are bounded: the oldest go first
            monkeypatch.setattr(ops_module, "ENDED_PARTS_KEPT", 3)
            for _ in range(4):
                md = await hub.open_session("consulting", [{"agent_id": a, "role": "initiator", "order": 0},
                                                           {"agent_id": b, "role": "respondent", "order": 1}],
                                            creator_id=a)
                ops._channel(md)
                await hub.close(md.session_id, "done")
            assert len(ops._ended_parts) == 3 and md.session_id in ops._ended_parts
        finally:
            ops.registry.close()
            await hub.aclose()

    asyncio.run(main())


def test_get_channel_shows_the_roster_after_a_participant_joins(tmp_path):
    """A participant added to a live discussion (a `participant.added` envelope, posted as AG2's
    client posts any event) is in the channel record read after it, though the session's state and
    pending acks are what they were when the record was read before."""
    import asyncio


    async def main() -> None:
        hub, ops = await open_ops(tmp_path)
        try:
            a, b, c = Conn(), Conn(), Conn()
            ids = [(await ops.register(conn, {"passport": {"name": name}}))["agent_id"]
                   for conn, name in ((a, "alice"), (b, "bob"), (c, "carol"))]
            md = await hub.open_session("discussion", [{"agent_id": ids[0], "role": "initiator", "order": 0},
                                                       {"agent_id": ids[1], "role": "participant", "order": 1}],
                                        creator_id=ids[0])
            await hub.ack(md.session_id, ids[1])
            sid = md.session_id
            before = json.loads(await ops.get_channel(a, {"channel_id": sid}))
            assert [p["agent_id"] for p in before["participants"]] == ids[:2]
            await ops.post_envelope(a, {"envelope": {"channel_id": sid, "sender_id": ids[0], "audience": None,
                                                     "event_type": "participant.added",
                                                     "event_data": {"agent_id": ids[2], "role": "participant"}}})
            after = json.loads(await ops.get_channel(a, {"channel_id": sid}))
            assert after["state"] == before["state"] and after["pending_acks"] == before["pending_acks"]
            assert [p["agent_id"] for p in after["participants"]] == ids
            assert await ops.get_channel(a, {"channel_id": sid}) == frames.encode(wire.channel_to_ag2(md), "x")
        finally:
            ops.registry.close()
            await hub.aclose()

    asyncio.run(main())


def test_an_envelopes_ag2_text_is_the_encoding_of_its_ag2_record():
    """`wire.envelope_json` (only `audience` and `event_data` walked for the fast codec) writes what
    `frames.encode` of the whole `envelope_to_ag2` record writes: random JSON data (floats, big
    integers, escapes), audiences, lifecycle kinds, task fields as an earlier version may have
    stored them (floats, containers), and records that need a repair (NaN, a lone surrogate)."""
    from turnflow.runtime.envelope import Envelope
    from turnflow.runtime.session import Participant, SessionMetadata, SessionState
    from turnflow.serve import frames

    from turnflow.runtime.adapters.consulting import ConsultingAdapter

    rng = random.Random(17)
    md = SessionMetadata(session_id="a" * 32, manifest=ConsultingAdapter().manifest, creator_id="b" * 32,
                         participants=[Participant("b" * 32, "initiator", 0), Participant("c" * 32, "respondent", 1)],
                         knobs={"k": [1, 2.5]}, created_at=1.7e9, labels={"x": "é"})
    md.state = SessionState.ACTIVE
    kinds = ["text", "packet", "session.invite", "session.ack", "session.opened", "session.closed", "my.event"]
    odd = [None, "t-1", 0, 3, 2.5, 1e-05, 1e16, float("nan"), [1e16], {"a": 1e-05}, "bad \ud800", True]
    for i in range(1500):
        data = _json_values(rng)
        env = Envelope("a" * 32, rng.choice(["b" * 32, "c" * 32]), rng.choice([None, ["c" * 32], ["b" * 32, "x"]]),
                       rng.choice(kinds), data if isinstance(data, dict) else {"v": data},
                       causation_id=rng.choice([None, "0001"]), trace_id=rng.choice([None, "t"]),
                       extra=None if i % 3 else {k: rng.choice(odd) for k in ("task_id", "priority", "depth",
                                                                               "idempotency_key", "ttl_seconds")
                                                 if rng.random() < 0.4} or None)
        env.envelope_id, env.seq, env.created_at = f"{i:020d}", i + 1, 1.7e9 + rng.random()
        if i % 50 == 0:
            env.event_data = rng.choice([{"n": float("nan")}, {"s": "bad \ud800"}, {"v": [float("inf")]}])
        if i % 37 == 0:  # ids an earlier version may have stored: not strings, a lone surrogate
            setattr(env, rng.choice(["causation_id", "trace_id", "sender_id", "envelope_id"]),
                    rng.choice([5, 1e-05, 1e16, True, ["x", 1e-05], "bad \ud800"]))
        want = frames.encode(wire.envelope_to_ag2(env, md), f"envelope {env.envelope_id}")
        assert wire.envelope_json(env, md) == want, (env, want)
