"""What a user waits for: the whole `turnflow check examples/support.flow` command,
`turnflow --help`, and `turnflow run` / `turnflow run --tasks` of a tiny flow (three turns of
python agents, the store in a temporary folder), as child processes, in CPU time (user + system
of the child, from `getrusage(RUSAGE_CHILDREN)`), median of N runs. Goals (issue 11): `--help`
<= 0.1 s CPU, a small-file check <= 0.3 s CPU. A `run` is mostly startup (imports, building
the models it validates with): every `turnflow run` and every batch worker process pays it.

    python3 bench/cli_startup.py                         # this tree only
    python3 bench/cli_startup.py --baseline main         # paired against another revision

With `--baseline REV` the `src/` of REV is extracted (`git archive`) to a temporary folder and
the two trees run alternately in the same process (same machine load); the report gives each
tree's median and the median of the paired ratios (baseline / this tree).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from revision import extract

REPO = Path(__file__).resolve().parent.parent
AGENTS_PY = "def speak(msg, tools):\n    return f'{tools.agent_id}: turn {len(msg)}'\n"


def commands(tmp: Path) -> dict[str, list[str]]:
    """The timed commands; the `run` ones read a tiny flow written to `tmp` (a three-turn
    workflow and a discussion, each with python agents, and a one-task list)."""
    parts = [{"agent_id": a, "role": "participant"} for a in "abc"]
    workflow = {"kind": "workflow", "name": "chain", "participants": parts, "knobs": {"graph": {
        "initial_speaker": "a", "transitions": [
            {"when": {"name": "from_speaker", "args": {"agent_id": x}},
             "then": {"name": "agent", "args": {"agent_id": y}}, "priority": 0}
            for x, y in (("a", "b"), ("b", "c"), ("c", "a"))],
        "default_target": {"name": "terminate", "args": {"reason": "after_work"}}, "max_turns": 3}}}
    discussion = {"kind": "discussion", "name": "panel", "participants": parts, "knobs": {}}
    (tmp / "workflow.json").write_text(json.dumps(workflow), encoding="utf-8")
    (tmp / "discussion.json").write_text(json.dumps(discussion), encoding="utf-8")
    (tmp / "startup_agents.py").write_text(AGENTS_PY, encoding="utf-8")
    (tmp / "agents.yaml").write_text("agents:\n" + "".join(
        f"  {a}: {{kind: python, ref: 'startup_agents:speak'}}\n" for a in "abc"), encoding="utf-8")
    (tmp / "tasks.jsonl").write_text('{"id": "t1", "task": "go"}\n', encoding="utf-8")
    agents = ["--agents", str(tmp / "agents.yaml")]
    return {
        "--help": ["--help"],
        "--version": ["--version"],
        "check support.flow": ["check", str(REPO / "examples" / "support.flow")],
        "run workflow": ["run", str(tmp / "workflow.json"), *agents, "--task", "go"],
        "run --tasks workflow": ["run", str(tmp / "workflow.json"), *agents, "--tasks", str(tmp / "tasks.jsonl")],
        "run discussion": ["run", str(tmp / "discussion.json"), *agents, "--task", "go", "--max-turns", "3"],
    }


def child_cpu(src: Path, args: list[str]) -> float:
    """CPU seconds (user + sys) of one `python -m turnflow.cli ARGS` child with `src` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up writes the .pyc files an installed package has
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "turnflow.cli", *args], env=env, cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"turnflow {' '.join(args)} exited {proc.returncode} with src={src}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", help="a git revision to compare against (e.g. main)")
    ap.add_argument("-n", "--repeat", type=int, default=15, help="runs per command and tree (default 15)")
    args = ap.parse_args()
    trees = {"this tree": REPO / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            trees = {f"baseline {args.baseline}": extract(args.baseline, Path(tmp)), **trees}
        (Path(tmp) / "flows").mkdir()
        cmds = commands(Path(tmp) / "flows")
        for src in trees.values():  # warm caches (parser tables, .pyc) outside the timing
            for cmd in cmds.values():
                child_cpu(src, cmd)
        print(f"{'command':<22}" + "".join(f"{name:>22}" for name in trees)
              + ("   ratio (median of pairs)" if args.baseline else ""))
        for label, cmd in cmds.items():
            samples: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.repeat):
                for name, src in trees.items():
                    samples[name].append(child_cpu(src, cmd))
            row = f"{label:<22}" + "".join(f"{statistics.median(s):>20.3f} s" for s in samples.values())
            if args.baseline:
                base, this = list(samples.values())
                row += f"   {statistics.median(b / t for b, t in zip(base, this)):.2f}x faster"
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
