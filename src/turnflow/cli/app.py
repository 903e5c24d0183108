"""The `turnflow` command. Exit codes (turnflow.cli.util, the command-line policy): 0 clean,
1 findings, 2 usage or unreadable input, 3 internal error. Subcommands live in
`turnflow.cli.commands`, one module each; their modules import only argparse-level things at the
top, so `turnflow --help` loads no parser, graph library or schema validator."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Optional, Sequence

import turnflow
from turnflow.cli.util import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, CommandError, err


class Parser(argparse.ArgumentParser):
    """argparse's parser, except that a word that starts with `-` and then a digit, `.`, `inf` or
    `nan` (`-5s`, `-1e3`, `-.5`, `-inf`) is a value, as argparse already takes `-5` and `-1.5`: after
    `--timeout` it is the flag's value, and the flag's type refuses it by name (`argument --timeout:
    expected a positive duration ..., got '-5s'`) instead of argparse's `expected one argument`.
    No turnflow option looks like that. Its subcommands' parsers are of this class too."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # argparse's own rule (3.10-3.12: `^-\d+$|^-\d*\.\d+$`; 3.13 and later 3.12s: `-\.?\d`, a prefix as
        # here), the one place it decides what looks like a negative number: an attribute every version from
        # 3.10 on sets in `_ActionsContainer.__init__` and reads with `.match` (`_parse_optional`, and
        # `_add_action` for options that look like numbers: turnflow has none). Were it ever renamed, `-5s`
        # would only go back to `expected one argument` (tests/test_cli_conventions.py fails then).
        self._negative_number_matcher = re.compile(r"^-(?:\.?\d|inf|nan)", re.IGNORECASE)

    def parse_args(self, args=None, namespace=None):
        """argparse's, except that the words it cannot place are quoted as a shell needs them
        (`unrecognized arguments: ''`, not a blank after the colon)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            import shlex

            self.error(f"unrecognized arguments: {' '.join(shlex.quote(word) for word in extras)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    from turnflow.cli.commands import COMMANDS

    p = Parser(prog="turnflow", description="Lint, compile, draw and run .flow speaker graphs.")
    p.add_argument("--version", action="version", version=f"turnflow {turnflow.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    from turnflow.cli.help import apply

    apply(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    from turnflow import process

    process.enable_cli_switches()  # GC pausing while parsing, the parser-table cache: this process only
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except CommandError as exc:
        err(f"turnflow {args.command}: {exc.message}")
        return exc.status
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # pragma: no cover
        return EXIT_OK
    except Exception as exc:  # pragma: no cover - a bug: say so plainly, exit 3
        err(f"turnflow: internal error: {type(exc).__name__}: {exc}\n"
            "Please report this with the input that caused it (set TURNFLOW_DEBUG=1 for a traceback).")
        if os.environ.get("TURNFLOW_DEBUG"):
            import traceback

            traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
