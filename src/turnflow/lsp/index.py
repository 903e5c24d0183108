"""The symbol index of one parsed `.flow` file: every participant, tool and
context-key occurrence with its offsets, which block it belongs to and whether
it is the declaration. Names are scoped to their block.

Declarations:
- participant: `participant NAME`;
- tool: an entry of `tools [...]` or the `via NAME` of a handoff (the first one
  in file order is the definition);
- context key: `context NAME = VALUE`.
References: rule sources and targets, `start`, handoff source/target,
`otherwise` target, `tool NAME` terms, `context.NAME` terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from turnflow.dsl import ast
from turnflow.dsl.lexical import KEYWORDS, NAME_RE
from turnflow.diagnostics.registry import get_rule
import bisect

KINDS = ("participant", "tool", "context")
CODE_RE = re.compile(r"TF[0-9]{3}", re.IGNORECASE)


@dataclass(frozen=True)
class Occurrence:
    kind: str        # participant | tool | context
    name: str
    block: int       # index of the block in the file
    start: int       # offsets of the name itself
    end: int
    declaration: bool
    statement: object = field(compare=False, default=None)  # the AST statement holding it


@dataclass
class BlockIndex:
    block: ast.Block
    participants: dict[str, ast.Participant] = field(default_factory=dict)
    tool_owners: dict[str, list[str]] = field(default_factory=dict)   # tool → participants declaring it
    handoffs: dict[str, list[ast.Handoff]] = field(default_factory=dict)
    context: dict[str, ast.ContextInit] = field(default_factory=dict)


class FlowIndex:
    """Built from a parsed file; answers position → name → occurrences."""

    def __init__(self, flow: ast.FlowFile, text: str):
        self.flow = flow
        self.text = text
        self.occurrences: list[Occurrence] = []
        self.blocks: list[BlockIndex] = []
        for i, block in enumerate(flow.blocks):
            self.blocks.append(self._index_block(i, block))
        self.occurrences.sort(key=lambda o: (o.start, o.end))
        self._starts = [o.start for o in self.occurrences]

    # -- building --------------------------------------------------------
    def _add(self, kind: str, ident: ast.Ident, block: int, declaration: bool, st) -> None:
        self.occurrences.append(Occurrence(kind, ident.name, block, ident.span.start, ident.span.end,
                                           declaration, st))

    def _index_block(self, i: int, block: ast.Block) -> BlockIndex:
        bi = BlockIndex(block)
        tool_declared: set[str] = set()
        for st in block.statements:
            if isinstance(st, ast.Participant):
                bi.participants.setdefault(st.name.name, st)
                self._add("participant", st.name, i, True, st)
                for tool in st.tools or ():
                    bi.tool_owners.setdefault(tool.name, []).append(st.name.name)
                    self._add("tool", tool, i, tool.name not in tool_declared, st)
                    tool_declared.add(tool.name)
            elif isinstance(st, ast.Start):
                self._add("participant", st.name, i, False, st)
            elif isinstance(st, ast.ContextInit):
                first = st.key.name not in bi.context
                bi.context.setdefault(st.key.name, st)
                self._add("context", st.key, i, first, st)
            elif isinstance(st, (ast.Rule, ast.Handoff, ast.Otherwise)):
                if not isinstance(st, ast.Otherwise) and st.source is not None:
                    self._add("participant", st.source, i, False, st)
                if st.target.kind == "participant" and st.target.name is not None:
                    self._add("participant", st.target.name, i, False, st)
                if isinstance(st, ast.Handoff):
                    bi.handoffs.setdefault(st.tool.name, []).append(st)
                    self._add("tool", st.tool, i, st.tool.name not in tool_declared, st)
                    tool_declared.add(st.tool.name)
                if isinstance(st, ast.Rule):
                    for term in ast.leaf_terms(st.terms):  # inside or / not / parentheses too
                        if isinstance(term, ast.ToolTerm):
                            self._add("tool", term.tool, i, False, st)
                        elif isinstance(term, (ast.ContextTerm, ast.CompareTerm)):
                            self._add("context", term.key, i, False, st)
        return bi

    # -- queries ---------------------------------------------------------
    def at(self, offset: int) -> Optional[Occurrence]:
        """The occurrence whose name covers `offset` (the end counts: a cursor just after a name)."""

        i = bisect.bisect_right(self._starts, offset)  # occurrences starting at or before offset: [:i]
        best = None
        for o in reversed(self.occurrences[max(0, i - 2):i]):  # names never overlap; one may end where the next starts
            if o.start <= offset < o.end:
                return o
            if offset == o.end and best is None:
                best = o
        return best

    def same(self, occ: Occurrence) -> list[Occurrence]:
        """Every occurrence of the same name, kind and block, in file order."""
        return [o for o in self.occurrences if o.kind == occ.kind and o.name == occ.name and o.block == occ.block]

    def definition(self, occ: Occurrence) -> Optional[Occurrence]:
        for o in self.same(occ):
            if o.declaration:
                return o
        return None

    def references(self, occ: Occurrence, include_declaration: bool = True) -> list[Occurrence]:
        return [o for o in self.same(occ) if include_declaration or not o.declaration]

    def rename(self, occ: Occurrence, new_name: str) -> list[tuple[int, int, str]]:
        """Edits (start, end, text) renaming a participant across its block; raises ValueError
        for a name the language cannot hold or one the block already declares."""
        if occ.kind != "participant":
            raise ValueError("only participants can be renamed")
        if not NAME_RE.match(new_name) or new_name in KEYWORDS:
            raise ValueError(f"`{new_name}` is not a valid participant name")
        if new_name != occ.name and new_name in self.blocks[occ.block].participants:
            raise ValueError(f"block `{self.blocks[occ.block].block.name.name}` already has a participant "
                             f"`{new_name}`")
        return [(o.start, o.end, new_name) for o in self.same(occ)]

    # -- hover -----------------------------------------------------------
    def hover(self, offset: int) -> Optional[tuple[int, int, str]]:
        """(start, end, Markdown) for what is under `offset`: a participant, tool,
        context key, or a rule code (e.g. in `# turnflow: ignore[TF203]`)."""
        occ = self.at(offset)
        if occ is None:
            return code_hover(self.text, offset)
        bi = self.blocks[occ.block]
        where = f"{bi.block.kind} `{bi.block.name.name}`"
        about = {"participant": self._participant_hover, "tool": self._tool_hover}.get(occ.kind, self._context_hover)
        return occ.start, occ.end, "\n\n".join(about(occ, bi, where))

    def _participant_hover(self, occ, bi, where: str) -> list[str]:
        decl = bi.participants.get(occ.name)
        if decl is None:
            return [f"**{occ.name}**: not a participant of {where}"]
        lines = [f"```flow\n{self._line_of(decl.span.start)}\n```", f"participant of {where}"]
        if decl.description is not None:
            lines.append(decl.description.value)
        if decl.role:
            lines.append(f"role: `{decl.role}`")
        if decl.tools:
            lines.append("tools: " + ", ".join(f"`{t.name}`" for t in decl.tools))
        return lines

    def _tool_hover(self, occ, bi, where: str) -> list[str]:
        lines = [f"tool **{occ.name}** in {where}"]
        owners = bi.tool_owners.get(occ.name, [])
        if owners:
            lines.append("declared by " + ", ".join(f"`{p}`" for p in owners))
        for h in bi.handoffs.get(occ.name, []):
            text = f"```flow\n{self._line_of(h.span.start)}\n```"
            if h.description is not None:
                text += f"\n{h.description.value}"
            lines.append(text)
        if not owners and not bi.handoffs.get(occ.name):
            lines.append("no participant declares this tool")
        uses = sum(1 for o in self.same(occ) if not o.declaration and isinstance(o.statement, ast.Rule))
        lines.append(f"named by {uses} rule condition{'s' if uses != 1 else ''}")
        return lines

    def _context_hover(self, occ, bi, where: str) -> list[str]:
        init = bi.context.get(occ.name)
        lines = [f"context key **{occ.name}** in {where}"]
        if init is not None:
            lines.append(f"```flow\n{self._line_of(init.span.start)}\n```")
            lines.append(f"initial value: `{init.value.raw}` ({init.value.kind})")
        else:
            lines.append("never initialised with `context`")
        uses = sum(1 for o in self.same(occ) if not o.declaration)
        lines.append(f"read by {uses} condition{'s' if uses != 1 else ''}")
        return lines

    def _line_of(self, offset: int) -> str:
        start = self.text.rfind("\n", 0, offset) + 1
        stop = self.text.find("\n", offset)
        return self.text[start:stop if stop != -1 else len(self.text)].strip()

    # -- outline ---------------------------------------------------------
    def symbols(self) -> list[dict]:
        """Blocks with their participants and context keys as children (plain dicts)."""
        out = []
        for bi in self.blocks:
            b = bi.block
            children = [{"name": p.name.name, "kind": "participant", "detail": p.description.value
                         if p.description is not None else (p.role or ""),
                         "range": (p.span.start, p.span.end), "selection": (p.name.span.start, p.name.span.end),
                         "children": []}
                        for p in b.participants]
            children += [{"name": k, "kind": "context", "detail": f"= {c.value.raw}",
                          "range": (c.span.start, c.span.end), "selection": (c.key.span.start, c.key.span.end),
                          "children": []}
                         for k, c in bi.context.items()]
            out.append({"name": b.name.name, "kind": b.kind,
                        "detail": b.kind + (f" {b.title.value}" if b.title is not None else ""),
                        "range": (b.span.start, b.span.end), "selection": (b.name.span.start, b.name.span.end),
                        "children": children})
        return out


def code_at(text: str, offset: int) -> Optional[tuple[int, int, str]]:
    """A rule code (`TF203`) covering `offset`, anywhere in the text."""
    lo = max(0, offset - 5)
    for m in CODE_RE.finditer(text, lo, offset + 5):
        if m.start() <= offset <= m.end():
            return m.start(), m.end(), m.group(0).upper()
    return None


def code_hover(text: str, offset: int) -> Optional[tuple[int, int, str]]:
    found = code_at(text, offset)
    if found is None:
        return None
    start, end, code = found
    info = get_rule(code)
    if info is None:
        return None
    return start, end, f"**{info.code} {info.name}** ({info.severity})\n\n{info.doc}"
