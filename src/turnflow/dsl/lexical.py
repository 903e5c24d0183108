"""The `.flow` language's lexical facts, in one place (standard library only, so the
editor, migration and decompile helpers read them without loading the parser).

The grammar (`flow.lark`) stays the grammar's home: `NAME` and `STRING` are its
terminals' patterns, and `KEYWORDS` its `%declare`d reserved words, lower-cased
(tests/test_lexical.py keeps them equal). The word lists below are the
vocabularies the tools offer or check: a statement's first word, a target, a
condition term.
"""

from __future__ import annotations

import re

#: a name: a letter or `_`, then letters, digits, `_` or `-`, not ending in `-` (the grammar's NAME)
NAME = r"[^\W\d](?:[\w-]*\w)?"
#: a JSON string on one line (the grammar's STRING): runs of plain characters between
#: escapes, so matching a long string costs no memory per character
STRING = r'"[^"\\\n\r]*(?:\\[^\n\r][^"\\\n\r]*)*"'
#: a STRING without escapes, as `STRING` matches it (the common case, cheaper to match)
PLAIN_STRING = r'"[^"\\\n\r]*"'
#: the whole text is a NAME (`NAME_RE.match(s)`)
NAME_RE = re.compile(NAME + r"\Z")

#: the block kinds, in the order the docs list them
BLOCK_KINDS = ("workflow", "consulting", "conversation", "discussion")

#: the reserved words: never a name
KEYWORDS = frozenset(
    """workflow consulting conversation discussion participant start max_turns
    context handoff via otherwise when and tool text contains priority terminate
    stay next initiator respondent tools ordering expect ttl true false null
    or not len previous""".split()
)

#: the words a statement other than a rule starts with
STATEMENT_KEYWORDS = ("participant", "start", "max_turns", "context", "handoff", "otherwise", "ordering",
                      "expect", "ttl")
#: the targets that are not a participant (a rule's `-> ...`, a handoff's `tools[].target`)
TARGET_KEYWORDS = ("terminate", "stay", "next", "previous", "initiator")
#: what a condition term starts with
TERM_KEYWORDS = ("tool", "context", "text contains", "not", "len")
