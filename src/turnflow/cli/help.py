"""Examples shown under every subcommand's `--help` (one place, so they read alike and a test
can check that none is missing). Applied by `turnflow.cli.app.build_parser`."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, tuple[str, ...]] = {
    "check": ("turnflow check                              # every .flow file under the current folder",
              "turnflow check flows/ --strict              # warnings fail too",
              "turnflow check --select TF2 --ignore TF205 flows/",
              "turnflow check --format sarif . > turnflow.sarif",
              "turnflow check --fix flows/                 # apply the safe did-you-mean fixes",
              "turnflow check --statistics --exit-zero     # count per code; never fail"),
    "fmt": ("turnflow fmt flows/                 # rewrite in place",
            "turnflow fmt --check flows/         # exit 1 if a file would change (CI)",
            "turnflow fmt - < a.flow             # standard input to standard output"),
    "rule": ("turnflow rule TF204",
             "turnflow rule shadowed-rule",
             "turnflow rule --list"),
    "compile": ("turnflow compile examples/support.flow > support.json",
                "turnflow compile --knobs --block support examples/support.flow",
                "turnflow compile examples/support.flow --target langgraph -o support_graph.py"),
    "decompile": ("turnflow decompile support.json -o support.flow",),
    "schema": ("turnflow schema                 # list the schemas",
               "turnflow schema session-spec"),
    "graph": ("turnflow graph examples/support.flow --format svg -o support.svg",
              "turnflow graph examples/onboarding.flow --block intake --format mermaid"),
    "run": ("turnflow run examples/support.flow --agents examples/support_agents.yaml --task \"my invoice is wrong\"",
            "turnflow run support.json --agents agents.yaml --store hub.db --format json",
            "turnflow run support.json --agents agents.yaml --tasks tasks.jsonl --store runs.db --durability full",
            "turnflow run ask.flow --agents agents.yaml --hub ws://127.0.0.1:8765   # with remote AG2 agents"),
    "inspect": ("turnflow inspect hub.db",
                "turnflow inspect hub.db --session SESSION_ID --format json",
                "turnflow inspect postgresql://turnflow@db.internal/evals --summary"),
    "simulate": ("turnflow simulate examples/support.flow --runs 1000 --seed 7",
                 "turnflow compile a.flow | turnflow simulate - --format json"),
    "migrate": ("turnflow migrate orchestration.py -o flow.flow",
                "turnflow migrate --from autogen team.json"),
    "serve": ("turnflow serve --listen 127.0.0.1:8765 --store hub.db",
              "turnflow serve --listen 0.0.0.0:8765 --auth-keys keys.json --store postgresql://turnflow@db.internal/hub"),
    "lsp": ("turnflow lsp        # started by the editor; see docs/editors.md",),
    "completion": ("eval \"$(turnflow completion bash)\"",
                   "turnflow completion bash > ~/.local/share/bash-completion/completions/turnflow",
                   "turnflow completion zsh > \"${fpath[1]}/_turnflow\"",
                   "turnflow completion fish > ~/.config/fish/completions/turnflow.fish"),
}


def apply(sub: argparse._SubParsersAction) -> None:
    """Give every subcommand a description (its one-line help when it has none) and its examples."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, parser in sub.choices.items():
        if not parser.description:
            parser.description = (helps.get(name) or "").rstrip(".").capitalize() + "."
        examples = EXAMPLES.get(name)
        if examples and (not parser.epilog or "example" not in parser.epilog):
            text = "examples:\n" + "\n".join(f"  {line}" for line in examples)
            parser.epilog = f"{parser.epilog}\n\n{text}" if parser.epilog else text
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
