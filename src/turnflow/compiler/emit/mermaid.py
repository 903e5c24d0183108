"""Picture → Mermaid `flowchart` text (renders on GitHub; needs nothing installed)."""

from __future__ import annotations

from typing import Callable

from turnflow.compiler.emit.picture import Edge, Node, Picture


# Mermaid entity codes: a label is text, never HTML or Markdown. `#` first, since the
# codes themselves start with it; line breaks become `<br/>` after escaping.
_ESCAPES = (("#", "#35;"), ("&", "#amp;"), ("<", "#lt;"), (">", "#gt;"), ('"', "#quot;"), ("`", "#96;"))


def _text(label: str) -> str:
    for raw, code in _ESCAPES:
        label = label.replace(raw, code)
    return '"' + label.replace("\n", "<br/>") + '"'


_CLASS_DEFS = [
    "  classDef startdot fill:#263238,stroke:#263238",
    "  classDef endnode fill:#263238,color:#ffffff,stroke:#263238",
    "  classDef startnode stroke-width:3px",
    "  classDef unreachable fill:#f2f2f2,color:#9e9e9e,stroke:#9e9e9e,stroke-dasharray:4 3",
    "  classDef trapped fill:#fdecea,color:#c62828,stroke:#c62828,stroke-width:2px",
    "  classDef noted stroke:#ef6c00,stroke-width:2px",
    "  classDef shadow fill:#ffffff,color:#9e9e9e,stroke:#9e9e9e",
]


class _Chart:
    """The flowchart being written: lines, node ids, link styles, class members."""

    def __init__(self, several: bool) -> None:
        self.several = several
        self.indent = "    " if several else "  "
        self.lines = ["flowchart LR"]
        self.ids: dict[tuple[str, str], str] = {}
        self.link = 0
        self.styles: list[str] = []
        self.classes: dict[str, list[str]] = {}

    def node(self, nid: str, n: Node) -> None:
        shape = _SPECIAL_NODES.get(n.kind)
        if shape is not None:
            text, cls = shape(n)
            self.lines.append(f"{self.indent}{nid}{text}")
            self.classes.setdefault(cls, []).append(nid)
            return
        label = n.label
        roles = [r for r, on in (("initiator", n.initiator), ("respondent", n.respondent)) if on]
        if roles:
            label += f"\n({', '.join(roles)})"
        if n.notes:
            label += "\n⚠ " + "; ".join(n.notes)
        self.lines.append(f"{self.indent}{nid}[{_text(label)}]")
        for cls, on in (("unreachable", n.unreachable), ("trapped", n.trapped), ("noted", bool(n.notes)),
                        ("startnode", n.start)):
            if on:
                self.classes.setdefault(cls, []).append(nid)

    def edge(self, p: Picture, e: Edge) -> None:
        a, b = self.ids[(p.block, e.src)], self.ids[(p.block, e.dst)]
        label = f"|{_text(e.label)}|" if e.label else ""
        arrow = "-.->" if e.kind in ("maybe", "shadowed") else "-->"
        self.lines.append(f"{self.indent}{a} {arrow}{label} {b}")
        if e.kind == "shadowed":
            self.styles.append(f"  linkStyle {self.link} stroke:#9e9e9e,stroke-dasharray:2 4,color:#9e9e9e")
        elif e.trapped:
            self.styles.append(f"  linkStyle {self.link} stroke:#c62828,color:#c62828")
        self.link += 1

    def picture(self, bi: int, p: Picture) -> None:
        if self.several:
            caption = f"{p.kind} {p.block}" + (f" — {p.title}" if p.title else "")
            self.lines.append(f"  subgraph b{bi}[{_text(caption)}]")
        for ni, n in enumerate(p.nodes):
            nid = f"b{bi}n{ni}" if self.several else f"n{ni}"
            self.ids[(p.block, n.id)] = nid
            self.node(nid, n)
        for e in p.edges:
            self.edge(p, e)
        if self.several:
            self.lines.append("  end")


#: node kinds drawn as a fixed shape: kind → (shape text, class)
#: a special node's kind → its Mermaid text and class
_SPECIAL_NODES: dict[str, Callable[[Node], tuple[str, str]]] = {
    "start": lambda n: ("(( ))", "startdot"),
    "end": lambda n: (f"([{_text('END: ' + n.label)}])", "endnode"),
    "any": lambda n: (f"[{_text('any speaker')}]", "shadow"),
}


def to_mermaid(pictures: list[Picture]) -> str:
    chart = _Chart(len(pictures) > 1)
    for bi, p in enumerate(pictures):
        chart.picture(bi, p)
    lines = chart.lines + _CLASS_DEFS
    for cls in sorted(chart.classes):
        lines.append(f"  class {','.join(chart.classes[cls])} {cls}")
    lines += chart.styles
    return "\n".join(lines) + "\n"
