"""One module per `turnflow` subcommand; each has `register(subparsers)`.
A new command is one module plus one line in COMMANDS."""

from turnflow.cli.commands import check, compile, completion, decompile, fmt, graph, inspect, lsp, migrate, rule, run, schema, serve, simulate

COMMANDS = [check, fmt, rule, compile, decompile, schema, graph, run, inspect, simulate, migrate, serve, lsp, completion]
