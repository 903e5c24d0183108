"""`turnflow simulate FILE [--block NAME] [--runs N] [--seed S] [--format text|json]`: run N
random sessions of each workflow block (docs/agents.md; engine in `turnflow.runtime.simulate`)
and report close reasons, the turn-count distribution, sessions cut off by `max_turns`,
participants never reached and rules never fired. Deterministic for a seed. Blocks of the
other kinds have no rules to explore and are listed as skipped.

Exit 0 after a report (whatever it says); 1 when FILE has errors; 2 for bad arguments or a
missing file.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

from turnflow.cli.util import EXIT_FINDINGS, EXIT_OK, a_block, a_file_or_stdin, err, out, positive_int, whole_number
from turnflow.term import visible

DEFAULT_RUNS = 200


def register(sub) -> None:
    p = sub.add_parser("simulate", help="run many random sessions of a flow and report what happened")
    p.add_argument("file", metavar="FILE", type=a_file_or_stdin, help="a .flow file or a compiled session spec (.json); `-` reads standard input")
    p.add_argument("--block", metavar="NAME", type=a_block, help="only this block (default: every workflow block)")
    p.add_argument("--runs", type=positive_int, default=DEFAULT_RUNS, metavar="N",
                   help=f"sessions per block (default {DEFAULT_RUNS})")
    p.add_argument("--seed", type=whole_number, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="the report as text (default) or json")
    p.set_defaults(func=run)


def rule_labels(path: str, graphs: dict, text: Optional[str] = None) -> dict[str, list[dict]]:
    """Per block name (`graphs`: name → its `turnflow.spec.TransitionGraph`): one
    `{"index", "line", "text"}` per transition (file order). For a .flow file (or .flow text on
    standard input, given as `text`) the line and source text of the rule; for a spec, a reading
    of the transition."""
    labels: dict[str, list[dict]] = {}
    flow = None
    is_flow = path.endswith(".flow") or (path == "-" and text is not None and text.lstrip()[:1] not in ("{", "["))
    if is_flow:
        from turnflow.dsl.parser import parse

        if text is None:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        flow = parse(text, path)
        lines = text.splitlines()
    for name, graph in graphs.items():
        block = flow.block(name) if flow is not None else None
        rules = block.rules if block is not None else []  # a property that builds its list: read once
        out_: list[dict] = []
        for i, tr in enumerate(graph.transitions):
            if i < len(rules):
                line = rules[i].span.line
                out_.append({"index": i, "line": line, "text": lines[line - 1].strip()})
            else:
                out_.append({"index": i, "line": None, "text": f"when {tr.when.describe()} then {tr.then.describe()}"})
        labels[name] = out_
    return labels


class Progress:
    """`simulate NAME: i/N` on stderr, redrawn in place; only when stderr is a terminal."""

    def __init__(self, name: str, total: int) -> None:
        self.name, self.total = name, total
        self.on = sys.stderr.isatty()
        self.step = max(1, total // 50)

    def __call__(self, done: int) -> None:
        if self.on and (done % self.step == 0 or done == self.total):
            width = 30
            filled = width * done // self.total
            sys.stderr.write(f"\rsimulate {self.name} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}")
            if done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def block_json(report, labels: list[dict]) -> dict:
    return {"name": report.name, "kind": "workflow", "runs": report.runs,
            "close_reasons": dict(sorted(report.close_reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "turns": report.turn_stats(), "max_turns": report.max_turns, "cut_off_by_max_turns": report.cutoffs,
            "participants_never_reached": report.unreached(),
            "rules_never_fired": [labels[i] for i in report.never_fired()],
            "otherwise_taken": report.otherwise_taken}


def render_text(path: str, seed: int, blocks: list[dict]) -> str:
    lines = []
    for b in blocks:
        if "skipped" in b:
            lines.append(f"{path}: {b['kind']} {b['name']}: skipped ({b['skipped']})")
            continue
        lines.append(f"{path}: workflow {b['name']}: {b['runs']} runs, seed {seed}")
        reasons = ", ".join(f"{k} {v}" for k, v in b["close_reasons"].items())
        lines.append(f"  close reasons: {reasons}")
        t = b["turns"]
        lines.append(f"  turns: min {t['min']}  median {t['median']}  max {t['max']}")
        cap = f" (max_turns {b['max_turns']})" if b["max_turns"] is not None else " (no max_turns)"
        lines.append(f"  cut off by max_turns: {b['cut_off_by_max_turns']}{cap}")
        unreached = b["participants_never_reached"]
        lines.append(f"  participants never reached: {', '.join(unreached) if unreached else 'none'}")
        if b["rules_never_fired"]:
            lines.append("  rules never fired:")
            for r in b["rules_never_fired"]:
                where = f"{path}:{r['line']}" if r["line"] is not None else f"transitions[{r['index']}]"
                lines.append(f"    {where}: {r['text']}")
        else:
            lines.append("  rules never fired: none")
    return visible("\n".join(lines)) + "\n"  # names and reasons of a spec someone else wrote


def simulate_specs(path: str, specs: list[dict], runs: int, seed: int,
                   block: Optional[str] = None, text: Optional[str] = None) -> list[dict]:
    from turnflow.runtime.simulate import Simulator

    sims = {str(spec.get("name")): Simulator(spec) for spec in specs if spec.get("kind") == "workflow"}
    labels = rule_labels(path, {name: sim.graph.model for name, sim in sims.items()}, text)
    out_: list[dict] = []
    for spec in specs:
        name = str(spec.get("name"))
        if spec.get("kind") != "workflow":
            out_.append({"name": name, "kind": spec.get("kind"), "skipped": "not a workflow: no rules to explore"})
            continue
        report = sims[name].run(runs, seed, Progress(name, runs))
        out_.append(block_json(report, labels[name]))
    return out_


def run(args) -> int:
    from turnflow.cli.run_inputs import RunInputError, load_specs, pick, read_input, refuse_names_the_hub_cannot_run
    from turnflow.runtime.errors import RuntimeErrorBase

    text = None
    try:
        text = read_input(args.file)
        specs = load_specs(args.file, text)
        if not specs:  # as `run` and `graph` say it, not an empty report and exit 0
            raise RunInputError(f"{args.file}: nothing to simulate: the file declares no blocks")
        if args.block is not None:
            specs = [pick(specs, args.block, args.file)]
        refuse_names_the_hub_cannot_run(args.file, text, [s.get("name") for s in specs if s.get("kind") == "workflow"])
    except RunInputError as exc:
        err(f"turnflow simulate: {exc}")
        return exc.status
    try:
        blocks = simulate_specs(args.file, specs, args.runs, args.seed, text=text)
    except RuntimeErrorBase as exc:
        err(f"turnflow simulate: {args.file}: {exc}")
        return EXIT_FINDINGS
    if args.format == "json":
        out(json.dumps({"file": args.file, "seed": args.seed, "runs": args.runs, "blocks": blocks},
                       indent=2) + "\n")
    else:
        out(render_text(args.file, args.seed, blocks))
    return EXIT_OK

