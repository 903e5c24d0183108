"""`turnflow rule CODE` / `turnflow rule --list`: the rule catalogue's documentation."""

from __future__ import annotations

from turnflow.cli_util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, err, out

from turnflow.diagnostics.registry import all_rules, get_rule


def register(sub) -> None:
    r = sub.add_parser("rule", help="print a rule's documentation")
    r.add_argument("code", nargs="?")
    r.add_argument("--list", action="store_true", help="list every rule")
    r.set_defaults(func=run)


def run(args) -> int:
    if args.list or not args.code:
        for r in all_rules():
            out(f"{r.code}  {r.name:<28} {r.severity:<8} {r.summary}\n")
        return EXIT_OK
    info = get_rule(args.code)
    if info is None:
        err(f"turnflow rule: unknown rule code `{args.code}` (see `turnflow rule --list`)")
        return EXIT_USAGE
    out(f"# {info.name} ({info.code})\n\nDefault severity: {info.severity}\n\n{info.doc}\n")
    return EXIT_OK
