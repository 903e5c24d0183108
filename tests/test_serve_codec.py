"""The served hub's fast paths give what the plain library calls give: `wire.iso` (the date and
time formatted once per second) is `datetime.fromtimestamp(t, timezone.utc).isoformat()` to the
character, microsecond rounding and carries included."""

from __future__ import annotations

import random
from datetime import datetime, timezone

from turnflow.serve import wire


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
