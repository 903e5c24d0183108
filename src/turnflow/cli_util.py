"""Shared bits of the command-line layer: exit codes and output helpers."""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def out(text: str) -> None:
    sys.stdout.write(text)


def err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
