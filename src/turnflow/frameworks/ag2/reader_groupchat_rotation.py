"""The agents of a classic group chat in `agents` order, and who may speak after whom.

The questions a migration asks for every speaker — its eligible successors in `agents` order,
the next eligible agent after it in the rotation, the nearest ones that get a routing tool —
answered from each agent's position instead of by scanning every agent, and "every agent
(but these)" kept as a view instead of a list per speaker: the work and memory stay linear in
the number of agents.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Union, overload


class Rotation:
    """`names` in `agents` order with their positions."""

    def __init__(self, names: Iterable[str]):
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.all = AllBut(self, ())

    def all_but(self, excluded: Iterable[str]) -> AllBut:
        return AllBut(self, excluded)

    def in_order(self, xs: Sequence[str]) -> Sequence[str]:
        """The agents of `xs` that are in the chat, once each, in `agents` order."""
        if isinstance(xs, AllBut) and xs.rotation is self:
            return xs
        index = self.index
        return [self.names[i] for i in sorted({index[n] for n in xs if n in index})]

    def _offset(self, start: int, name: str) -> int:
        """How many steps after position `start` the rotation reaches `name` (1 to n)."""
        return (self.index[name] - start - 1) % len(self.names) + 1

    def after(self, x: str, e: Sequence[str]) -> str:
        """The first agent of `e` after `x` in the rotation (`x` itself last; from the first agent
        when `x` is not in the chat); `e[0]` when none of `e` is in the chat."""
        n = len(self.names)
        start = self.index.get(x, -1)
        if isinstance(e, AllBut) and e.rotation is self:  # at most len(excluded) + 1 steps
            for k in range(1, n + 1):
                cand = self.names[(start + k) % n]
                if cand not in e.excluded:
                    return cand
            return e[0]
        present = [y for y in e if y in self.index]
        if not present:
            return e[0]
        return min(present, key=lambda y: self._offset(start, y))

    def nearest(self, x: str, targets: Sequence[str], limit: int) -> list[str]:
        """At most `limit` of `targets`, in their order; when capped, the ones that follow `x` in the
        rotation (so the fallback rotation and the routing tools reach every agent between them)."""
        if len(targets) <= limit:
            return list(targets)
        start = self.index.get(x, -1)
        if isinstance(targets, AllBut) and targets.rotation is self:  # walk at most limit + len(excluded)
            n = len(self.names)
            chosen: list[str] = []
            for k in range(1, n + 1):
                cand = self.names[(start + k) % n]
                if cand not in targets.excluded:
                    chosen.append(cand)
                    if len(chosen) == limit:
                        break
            return sorted(chosen, key=self.index.__getitem__)
        picked = set(heapq.nsmallest(limit, (y for y in targets if y in self.index),
                                     key=lambda y: self._offset(start, y)))
        return [y for y in targets if y in picked]


class AllBut(Sequence[str]):
    """Every agent of a rotation except `excluded`, in `agents` order: a view, built in
    O(len(excluded)), membership in O(1)."""

    def __init__(self, rotation: Rotation, excluded: Iterable[str]):
        self.rotation = rotation
        self.excluded = frozenset(n for n in excluded if n in rotation.index)

    def __len__(self) -> int:
        return len(self.rotation.names) - len(self.excluded)

    def __contains__(self, name: object) -> bool:
        return name in self.rotation.index and name not in self.excluded

    def __iter__(self) -> Iterator[str]:
        if not self.excluded:
            return iter(self.rotation.names)
        return (n for n in self.rotation.names if n not in self.excluded)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[str, list[str]]:
        if isinstance(i, slice):
            if (i.start or 0) >= 0 and (i.stop is None or i.stop >= 0) and i.step is None:
                return list(islice(iter(self), i.start or 0, i.stop))
            return list(self)[i]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return next(islice(iter(self), i, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (AllBut, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AllBut({sorted(self.excluded)!r} of {len(self.rotation.names)})"
