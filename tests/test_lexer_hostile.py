"""No regex in the lexer/parser backtracks super-linearly (issue 14, defect 1).

Each hostile input runs in a subprocess with a timeout, so a regression fails
the test instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")

# (name, python expression building the text); every text is ~20-60 KB
HOSTILE = [
    ("blanks then a bad character", "'workflow w {\\n    participant writer' + ' ' * 25 + \"'Edits'\\n}\\n\""),
    ("long blank run then a bad character", "'workflow w {\\n    participant writer' + ' \\t\\f\\r' * 5000 + \"'x\\n}\\n\""),
    ("blank runs between tokens", "'workflow w {\\n' + '    participant a' + ' ' * 20000 + '\\n}\\n'"),
    ("comments full of hashes", "'workflow w {\\n    participant a # ' + '# ;' * 10000 + '\\n}\\n'"),
    ("separators and blanks", "'workflow w {\\n    participant a' + ';  \\t# x\\n' * 5000 + '  ~\\n}\\n'"),
    ("name ending in dashes", "'workflow w {\\n    participant a' + '-' * 20000 + '\\n}\\n'"),
    ("number-like run", "'workflow w {\\n    max_turns 1' + '1' * 20000 + 'e+\\n}\\n'"),
    ("duration-like run", "'workflow w {\\n    ttl 1' + '0' * 20000 + 'ms-\\n}\\n'"),
    ("unterminated string of escapes", "'workflow w {\\n    participant a \"' + '\\\\\\\\a' * 10000 + '\\n}\\n'"),
    ("line ends of every kind and blanks", "'workflow w {\\r' + ' \\r\\n\\r \\n;' * 5000 + '  ~\\n}\\n'"),
    ("blank lines before a bad character", "'workflow w {\\n' + '\\n \\t' * 10000 + '~\\n}\\n'"),
    ("suppression comment runs", "'workflow w {\\n    participant a # ' + 'turnflow: ignore[' * 3000 + '\\n}\\n'"),
]


def test_hostile_inputs_finish_quickly():
    cases = ",\n".join(f"({name!r}, {expr})" for name, expr in HOSTILE)
    script = textwrap.dedent("""
        import sys, time
        from turnflow.dsl.parser import build_parser, parse_source
        from turnflow.diagnostics.suppress import parse as suppressions
        build_parser()
        worst = []
        for name, text in [%s]:
            t0 = time.process_time()
            parse_source(text)
            flow, _ = parse_source(text.replace('~', ''))
            suppressions(flow.comments if flow is not None else [])
            worst.append((time.process_time() - t0, name))
        from turnflow.frameworks.ag2.reader_patterns import _VAR  # ContextExpression `${var}`
        t0 = time.process_time()
        _VAR.sub("x", "${" * 20000 + "a}")
        worst.append((time.process_time() - t0, "context expression of `${` runs"))
        print(max(worst))
    """) % cases
    env = {**os.environ, "PYTHONPATH": SRC, "TURNFLOW_NO_CACHE": "1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    seconds = float(proc.stdout.split(",")[0].strip("( "))
    assert seconds < 2.0, proc.stdout


def test_blanks_before_a_bad_character_do_not_hang():
    """The reported case: 25 blanks took ~11 s, each further blank doubled it."""
    script = ("from turnflow.dsl.parser import parse_source\n"
              "f, d = parse_source('workflow w {\\n    participant writer' + ' ' * 40 + \"'Edits'\\n}\\n\")\n"
              "print(d[0].code, d[0].span.line, d[0].span.column)")
    env = {**os.environ, "PYTHONPATH": SRC, "TURNFLOW_NO_CACHE": "1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=20)
    assert proc.stdout.split() == ["TF001", "2", str(4 + len("participant writer") + 40 + 1)]
