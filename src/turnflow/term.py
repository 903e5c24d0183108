"""Foreign text made visible, and colour on terminals.

`visible(text)`: text that came from an agent, a model, a store or someone else's file, as it may
reach a terminal: every control character but newline and tab (C0, DEL, C1: the escape
sequences that clear the screen, set the window title, write the clipboard (OSC 52), make
hyperlinks, or a carriage return that overwrites the line), every bidirectional-text control
(U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), the line and paragraph separators and
every lone surrogate (half an emoji) written as a visible escape: `\x1b`, `\r`, `\u202e`,
`\ud83d`, as Python writes them. A CR LF line end is a newline.

Colour: `NO_COLOR` (any non-empty value) turns it off, `FORCE_COLOR`
(non-empty, not "0") turns it on even when the output is not a terminal; otherwise
colour is used when the stream is a terminal and `TERM` is not `dumb`
(https://no-color.org, https://force-color.org).

Colour is applied to already rendered text diagnostics, so renderers stay plain."""

from __future__ import annotations

import os
import re
from typing import IO, Mapping, Optional

RESET = "\033[0m"
BOLD = "\033[1m"
STYLES = {"error": "\033[1;31m", "warning": "\033[1;33m", "info": "\033[1;36m", "note": "\033[36m",
          "help": "\033[32m", "gutter": "\033[34m", "summary_bad": "\033[1;31m", "summary_ok": "\033[1;32m"}


_INVISIBLE = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                        r"\ud800-\udfff]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\r\n": "\n"}


def _shown(m: "re.Match[str]") -> str:
    c = m.group(0)
    named = _NAMED.get(c)
    if named is not None:
        return named
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible(text: str) -> str:
    """`text` with what a terminal would act on or hide written as visible escapes (the module's
    docstring says which); newlines and tabs are kept. Linear in the text; text without such
    characters is returned as it is."""
    return _INVISIBLE.sub(_shown, text)


def use_colour(stream: IO[str], env: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if env is None else env
    if env.get("NO_COLOR"):
        return False
    force = env.get("FORCE_COLOR")
    if force and force != "0":
        return True
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):
        return False


_HEAD = re.compile(r"^(?P<loc>.+?:\d+:\d+: )(?P<code>TF\d{3}) (?P<sev>error|warning|info)(?P<colon>:)(?P<msg>.*)$")
_GUTTER = re.compile(r"^(?P<g>\s*\d* \| )(?P<rest>.*)$")
_NOTE = re.compile(r"^(?P<pre>\s+= )(?P<kind>note|help)(?P<rest>:.*)$")
_SUMMARY = re.compile(r"^(Found .*|All checks passed .*)$")


def colourise(text: str) -> str:
    """ANSI colours for `render_text` output (headers by severity, carets, notes, help, summary)."""
    out = []
    severity = "error"
    for line in text.split("\n"):
        m = _HEAD.match(line)
        if m:
            severity = m["sev"]
            style = STYLES[severity]
            out.append(f"{BOLD}{m['loc']}{RESET}{style}{m['code']} {m['sev']}{RESET}{BOLD}{m['colon']}{m['msg']}{RESET}")
            continue
        m = _GUTTER.match(line)
        if m:
            rest = m["rest"]
            if rest.strip() and set(rest.strip()) == {"^"}:
                pad = len(rest) - len(rest.lstrip())
                rest = f"{rest[:pad]}{STYLES[severity]}{rest[pad:]}{RESET}"
            out.append(f"{STYLES['gutter']}{m['g']}{RESET}{rest}")
            continue
        m = _NOTE.match(line)
        if m:
            out.append(f"{m['pre']}{STYLES[m['kind']]}{m['kind']}{RESET}{m['rest']}")
            continue
        if _SUMMARY.match(line):
            key = "summary_ok" if line.startswith("All") else "summary_bad"
            out.append(f"{STYLES[key]}{line}{RESET}")
            continue
        out.append(line)
    return "\n".join(out)
