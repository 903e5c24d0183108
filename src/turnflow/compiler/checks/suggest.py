""""Did you mean ...?" for a name among many, in bounded time.

`Suggester(names)` indexes the names once (by character trigrams, padded so
that short names have some); a query scores only the names that share a rare
trigram with it and runs `difflib`'s similarity on the best few. Small sets
(up to `EXACT_UP_TO` names) are compared exhaustively, exactly like
`difflib.get_close_matches(name, names, n=1, cutoff=0.6)`. The work per
suggester is capped (`BUDGET` index entries visited in all); beyond it a query
gets no suggestion rather than slowing the check down. Answers are cached per
name, so a misspelling repeated a thousand times costs one lookup."""

from __future__ import annotations

import difflib
import heapq
from collections import Counter, defaultdict
from typing import Optional

CUTOFF = 0.6
EXACT_UP_TO = 64
COMMON = 256  # a trigram shared by more names than this tells little: skipped
CANDIDATES = 8  # names compared with difflib per query
BUDGET = 2_000_000


def _grams(name: str) -> set[str]:
    padded = f"\x00{name}\x00"
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


class Suggester:
    def __init__(self, names: list[str]) -> None:
        self.names = list(dict.fromkeys(names))
        self.cache: dict[str, Optional[str]] = {}
        self.spent = 0
        self.index: dict[str, list[int]] = defaultdict(list)
        if len(self.names) > EXACT_UP_TO:
            for i, n in enumerate(self.names):
                for g in _grams(n):
                    self.index[g].append(i)

    def __call__(self, name: str) -> Optional[str]:
        """The declared name closest to `name` (similarity at least 0.6), or None."""
        if name not in self.cache:
            self.cache[name] = self._best(name)
        return self.cache[name]

    def _best(self, name: str) -> Optional[str]:
        if len(self.names) <= EXACT_UP_TO:
            close = difflib.get_close_matches(name, self.names, n=1, cutoff=CUTOFF)
            return close[0] if close else None
        counts: Counter[int] = Counter()
        for g in _grams(name):
            post = self.index.get(g)
            if not post or len(post) > COMMON or self.spent + len(post) > BUDGET:
                continue
            self.spent += len(post)
            counts.update(post)
        best: Optional[tuple[float, int]] = None
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(name)
        for i, _ in heapq.nlargest(CANDIDATES, counts.items(), key=lambda kv: (kv[1], -kv[0])):
            matcher.set_seq1(self.names[i])
            if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF:
                r = matcher.ratio()
                if r >= CUTOFF and (best is None or (r, -i) > (best[0], -best[1])):
                    best = (r, i)
        return self.names[best[1]] if best is not None else None
