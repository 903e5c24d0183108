"""One module per `turnflow` subcommand; each has `register(subparsers)`.
A new command is one module plus one line in COMMANDS."""

from turnflow.commands import check, fmt, graph, migrate, rule

COMMANDS = [check, fmt, rule, graph, migrate]
