"""Workflow fold throughput: validate_send + fold + on_accepted per envelope, the same 3-agent
graph and the same 100,000-envelope stream through turnflow's workflow adapter and AG2 1.2.1's
`WorkflowAdapter`, in one run: --repeat interleaved rounds (ours, then AG2's), garbage collector
off during the timed loops (as `timeit` does), envelopes built before timing. Reports the
best-of throughput of each side and the median of the per-round CPU-time ratios (the figure
that holds on a shared, loaded machine).

    PYTHONPATH=src python3 bench/fold_vs_ag2.py [--envelopes 100000]

`--old-adapter FILE`: a before/after pair in one process. FILE is another revision's
`runtime/adapters/workflow.py` (`git show REV:src/turnflow/runtime/adapters/workflow.py > FILE`),
loaded beside this tree's (it imports the rest of turnflow from this tree); each round then runs
the old adapter, this tree's and AG2's (the order of the first two swapped every round), and the
script prints the median of the paired CPU ratios old / new and AG2 / each.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import statistics
import time

from ag2 import network as n

from turnflow.runtime.adapters.workflow import WorkflowAdapter
from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.session import Participant, SessionMetadata

PEOPLE = ["planner", "coder", "reviewer"]


def fs(a):
    return {"name": "from_speaker", "args": {"agent_id": a}}


def ag(a):
    return {"name": "agent", "args": {"agent_id": a}}


GRAPH = {"initial_speaker": "planner", "transitions": [
    {"when": {"name": "tool_called", "args": {"tool_name": "to_reviewer"}}, "then": ag("reviewer"), "priority": -1},
    {"when": {"name": "context_equals", "args": {"key": "status", "value": "blocked"}}, "then": ag("planner"),
     "priority": 0},
    {"when": fs("planner"), "then": ag("coder"), "priority": 0},
    {"when": fs("coder"), "then": ag("planner"), "priority": 0},
    {"when": fs("reviewer"), "then": {"name": "round_robin", "args": {}}, "priority": 1}],
    "default_target": {"name": "terminate", "args": {"reason": "after_work"}}, "max_turns": None}


def stream(count: int):
    """A valid stream (never closes): text, routing-tool packets, packets with context, context sets."""
    a = WorkflowAdapter()
    md = SessionMetadata("0" * 32, a.manifest, "planner",
                         [Participant(p, "participant", i) for i, p in enumerate(PEOPLE)], {"graph": GRAPH}, 0.0)
    st = a.initial_state(md)
    out = []
    for i in range(count):
        who = st.expected_next_speaker
        k = i % 8
        if k == 3:
            item = (PEOPLE[i % 3], EV_CONTEXT_SET, {"set": {"status": "ok"}, "delete": []})
        elif k == 5 and who == "coder":
            item = (who, EV_PACKET, {"routing": {"kind": "handoff", "tool": "to_reviewer", "reason": "ready"},
                                     "context_updates": {"set": {}, "delete": []}, "body": "code"})
        elif k in (1, 6):
            item = (who, EV_PACKET, {"routing": {"kind": "text"},
                                     "context_updates": {"set": {"n": i}, "delete": []}, "body": f"round {i}"})
        else:
            item = (who, EV_TEXT, {"text": f"turn {i}"})
        env = Envelope(md.session_id, item[0], None, item[1], item[2], f"e{i}")
        a.validate_send(md, env, st)
        st = a.fold(env, st)
        assert a.on_accepted(md, env, st).close_reason is None
        out.append(item)
    return out


def run_ours(items, adapter=WorkflowAdapter):
    a = adapter()
    md = SessionMetadata("0" * 32, a.manifest, "planner",
                         [Participant(p, "participant", i) for i, p in enumerate(PEOPLE)], {"graph": GRAPH}, 0.0)
    a.validate_create(md)
    st = a.initial_state(md)
    envs = [Envelope(md.session_id, s, None, et, d, f"e{i}") for i, (s, et, d) in enumerate(items)]
    validate, fold, accepted = a.validate_send, a.fold, a.on_accepted
    t0, c0 = time.perf_counter(), time.process_time()
    for env in envs:
        validate(md, env, st)
        st = fold(env, st)
        accepted(md, env, st)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dt, st.turn_count, st.expected_next_speaker, cpu


def run_ag2(items):
    a = n.WorkflowAdapter()
    md = n.ChannelMetadata("ch", a.manifest, "planner",
                           [n.Participant(p, n.ParticipantRole.PARTICIPANT, i) for i, p in enumerate(PEOPLE)],
                           n.ChannelState.ACTIVE, "2026-01-01T00:00:00+00:00", knobs={"graph": copy.deepcopy(GRAPH)})
    a.validate_create(md)
    st = a.initial_state(md)
    ev = {EV_TEXT: n.EV_TEXT, EV_PACKET: n.EV_PACKET, EV_CONTEXT_SET: n.EV_CONTEXT_SET}
    envs = [n.Envelope("ch", s, None, ev[et], d, envelope_id=f"e{i}") for i, (s, et, d) in enumerate(items)]
    validate, fold, accepted = a.validate_send, a.fold, a.on_accepted
    t0, c0 = time.perf_counter(), time.process_time()
    for env in envs:
        validate(md, env, st)
        st = fold(env, st)
        accepted(md, env, st)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dt, st.turn_count, st.expected_next_speaker, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envelopes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs for each side, interleaved")
    ap.add_argument("--old-adapter", metavar="FILE",
                    help="another revision's runtime/adapters/workflow.py: alternate it with this tree's, same process")
    args = ap.parse_args()
    items = stream(args.envelopes)
    if args.old_adapter:
        pair(items, args.old_adapter, args.repeat)
        return
    ours_runs, theirs_runs = [], []
    gc.disable()  # as timeit does, for both sides
    try:
        for _ in range(args.repeat):
            ours_runs.append(run_ours(items))
            theirs_runs.append(run_ag2(items))
    finally:
        gc.enable()
    ours, theirs = min(ours_runs), min(theirs_runs)
    assert ours[1:3] == theirs[1:3], (ours, theirs)  # same turn count and expected speaker at the end
    paired = sorted(t[3] / o[3] for o, t in zip(ours_runs, theirs_runs))
    r_ours, r_theirs = args.envelopes / ours[0], args.envelopes / theirs[0]
    print(f"envelopes: {args.envelopes} (turns {ours[1]})")
    print(f"turnflow workflow adapter: {r_ours:,.0f} envelopes/s ({ours[0] / args.envelopes * 1e6:.2f} us/envelope)")
    print(f"ag2 1.2.1 WorkflowAdapter: {r_theirs:,.0f} envelopes/s ({theirs[0] / args.envelopes * 1e6:.2f} us/envelope)")
    print(f"ratio: {r_ours / r_theirs:.1f}")
    print(f"paired CPU ratios: {' '.join(f'{r:.1f}' for r in paired)}; median {statistics.median(paired):.1f}")


def pair(items, path: str, rounds: int) -> None:
    """Old adapter, new adapter and AG2 in each round (old and new alternating which goes first)."""
    spec = importlib.util.spec_from_file_location("_old_workflow", path)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    olds, news, theirs = [], [], []
    gc.disable()
    try:
        for r in range(rounds):
            if r % 2:
                news.append(run_ours(items))
                olds.append(run_ours(items, old.WorkflowAdapter))
            else:
                olds.append(run_ours(items, old.WorkflowAdapter))
                news.append(run_ours(items))
            theirs.append(run_ag2(items))
    finally:
        gc.enable()
    assert olds[0][1:3] == news[0][1:3] == theirs[0][1:3], (olds[0], news[0], theirs[0])

    def median(xs, ys):
        return statistics.median(x[3] / y[3] for x, y in zip(xs, ys))

    n = len(items)
    print(f"envelopes: {n}, {rounds} rounds; min CPU per envelope: old {min(o[3] for o in olds) / n * 1e6:.3f} us, "
          f"new {min(o[3] for o in news) / n * 1e6:.3f} us, ag2 {min(o[3] for o in theirs) / n * 1e6:.2f} us")
    print(f"paired CPU ratios (medians): old / new {median(olds, news):.3f}; "
          f"ag2 / old {median(theirs, olds):.1f}; ag2 / new {median(theirs, news):.1f}")


if __name__ == "__main__":
    main()
