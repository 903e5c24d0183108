"""How `turnflow migrate` scales with the size of a classic GroupChat.

    PYTHONPATH=src python3 bench/migrate_scale.py

For N agents with `speaker_selection_method="auto"` and no transitions dict,
every speaker gets N-1 routing tools (N*(N-1) handoffs): the worst case for
the output size. Prints N, output lines, migrate time, check time, compile time.
"""

from __future__ import annotations

import time

import turnflow
from turnflow.migrate import migrate


def source(n: int) -> str:
    lines = ["import autogen"]
    lines += [f"a{i} = autogen.AssistantAgent(name='agent_{i}', description='Agent number {i}.')" for i in range(n)]
    lines.append("gc = autogen.GroupChat(agents=[" + ", ".join(f"a{i}" for i in range(n)) + "], messages=[], "
                 "max_round=200, allow_repeat_speaker=False)")
    lines.append("m = autogen.GroupChatManager(groupchat=gc, is_termination_msg=lambda x: 'TERMINATE' in x['content'])")
    lines.append("a0.initiate_chat(m, message='go')")
    return "\n".join(lines) + "\n"


def main() -> None:
    print(f"{'agents':>6} {'lines':>7} {'migrate s':>10} {'check s':>8} {'compile s':>10}")
    for n in (5, 10, 20, 40, 80):
        text = source(n)
        t0 = time.perf_counter()
        flow = migrate(text, "bench.py").text
        t1 = time.perf_counter()
        turnflow.check(flow)
        t2 = time.perf_counter()
        turnflow.compile(flow)
        t3 = time.perf_counter()
        print(f"{n:>6} {flow.count(chr(10)):>7} {t1 - t0:>10.3f} {t2 - t1:>8.3f} {t3 - t2:>10.3f}")


if __name__ == "__main__":
    main()
