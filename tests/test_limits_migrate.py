"""Issue 25, item 7: `turnflow migrate` stays linear in the number of agents.

A 20,000-agent chat took minutes and gigabytes: agents were looked up by scanning every agent
so far, every speaker got a list of every agent, the next speaker was found by walking the
rotation. The work is measured as the number of Python function calls (deterministic, unlike
time on a shared machine) at n, 2n and 4n agents: linear work adds the same number of calls
per agent from 2n to 4n as from n to 2n; quadratic work adds more and more.
"""

from __future__ import annotations

import cProfile
import gc
import importlib.util
import pstats
from pathlib import Path

import pytest

from turnflow.migrate import migrate

_BENCH = Path(__file__).resolve().parents[1] / "bench" / "migrate_agents.py"
_spec = importlib.util.spec_from_file_location("migrate_agents_bench", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _calls(text: str) -> int:
    # the cyclic GC paused while counting, as `turnflow migrate` runs (gc_paused): its collections
    # over the test process's heap were a tenth of the time, and the finalizers they run added a
    # call or two at random to the count
    profile = cProfile.Profile()
    was = gc.isenabled()
    gc.disable()
    profile.enable()
    try:
        migrate(text, "generated.py")
    finally:
        profile.disable()
        if was:
            gc.enable()
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["classic", "everyone", "pattern", "graphflow"])
def test_migrate_work_per_agent_does_not_grow_with_the_number_of_agents(kind):
    source = bench.SOURCES[kind]
    migrate(source(3), "warm.py")  # imports and caches out of the count
    n = 100
    small, medium, large = (_calls(source(k)) for k in (n, 2 * n, 4 * n))
    first = (medium - small) / n  # calls per added agent from n to 2n
    second = (large - medium) / (2 * n)  # ... from 2n to 4n
    assert second <= first * 1.01, (kind, small, medium, large, round(first), round(second))


def test_generated_sources_migrate_to_every_agent():
    for kind, source in bench.SOURCES.items():
        result = migrate(source(40), f"{kind}.py")
        assert all(f"participant agent_{i}" in result.text for i in range(40)), kind
