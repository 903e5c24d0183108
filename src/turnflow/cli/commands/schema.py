"""`turnflow schema [NAME]`: print a shipped JSON Schema, or list them."""

from __future__ import annotations

from turnflow.cli.util import EXIT_OK, EXIT_USAGE, err, out, text_type


def register(sub) -> None:
    s = sub.add_parser("schema", help="print a JSON Schema of the compiler's output (list them without NAME)")
    s.add_argument("name", nargs="?", metavar="NAME", type=text_type("a schema name (turnflow schema lists them)"),
                   help="the schema to print (e.g. session-spec); none: list them")
    s.set_defaults(func=run)


def run(args) -> int:
    from turnflow import schemas

    if not args.name:
        for name in schemas.names():
            out(f"{name:<20} {schemas.load(name).get('title', '')}\n")
        return EXIT_OK
    if args.name not in schemas.names():
        err(f"turnflow schema: unknown schema `{args.name}`; known: {', '.join(schemas.names())}")
        return EXIT_USAGE
    out(schemas.text(args.name))
    return EXIT_OK
