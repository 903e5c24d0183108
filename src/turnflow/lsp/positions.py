"""Offsets ↔ LSP positions (0-based line, column in the negotiated encoding units).

turnflow spans count code points; LSP clients count UTF-16 code units unless
they negotiated `utf-32` (code points) or `utf-8` (bytes). A line ends at `\n`, `\r\n` or a
lone `\r`, as in LSP and the DSL's lexer (not at the other characters `str.splitlines` knows)."""

from __future__ import annotations

import bisect
import re

_LINE_END = re.compile(r"\r\n|\r|\n")


class LineIndex:
    def __init__(self, text: str, encoding: str = "utf-16"):
        self.text = text
        self.encoding = encoding
        starts = [0]
        if "\r" in text:  # \r\n is one line end, a lone \r one too (LSP, and the DSL's lexer)
            starts += [m.end() for m in _LINE_END.finditer(text)]
            self.stops = [m.start() for m in _LINE_END.finditer(text)] + [len(text)]
        else:
            i = text.find("\n")
            while i != -1:
                starts.append(i + 1)
                i = text.find("\n", i + 1)
            self.stops = [start - 1 for start in starts[1:]] + [len(text)]
        self.starts = starts

    def _units(self, chunk: str) -> int:
        if self.encoding == "utf-32" or chunk.isascii():
            return len(chunk)
        # surrogatepass: a lone surrogate (a JSON `"\ud800"` escape decodes to one) is one UTF-16
        # code unit, as in the editor's string, and three bytes in UTF-8 (as WTF-8 writes it)
        if self.encoding == "utf-8":
            return len(chunk.encode("utf-8", "surrogatepass"))
        return len(chunk.encode("utf-16-le", "surrogatepass")) // 2

    def position(self, offset: int) -> tuple[int, int]:
        """A character offset → (line, character) in LSP terms."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        offset = min(offset, self.stops[line])  # between a \r and its \n: the line's end
        return line, self._units(self.text[self.starts[line]:offset])

    def offset(self, line: int, character: int) -> int:
        """An LSP (line, character) → a character offset (clamped to the line)."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        start, stop = self.starts[line], self.stops[line]
        if self.encoding == "utf-32" or self.text[start:stop].isascii():
            return min(start + max(character, 0), stop)
        units = 0
        for i in range(start, stop):
            if units >= character:
                return i
            units += self._units(self.text[i])
        return stop

    def range(self, start: int, end: int) -> tuple[tuple[int, int], tuple[int, int]]:
        return self.position(start), self.position(max(start, end))

    @property
    def end(self) -> tuple[int, int]:
        return self.position(len(self.text))
