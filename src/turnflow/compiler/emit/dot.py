"""Picture → Graphviz DOT text (deterministic). `render` turns it into SVG/PNG
through the `graphviz` package, which needs Graphviz's `dot` program."""

from __future__ import annotations

from turnflow.compiler.emit.picture import Edge, Node, Picture
from turnflow.term import visible
from collections import deque
import shutil
import signal
import subprocess

FONT = "Helvetica"
RED, GREY, LIGHT = "#c62828", "#9e9e9e", "#f2f2f2"


def quote(text: str) -> str:
    """A DOT string: control and bidi characters and lone surrogates of the flow's own strings
    shown as escapes (`term.visible`: a label never acts on a terminal or fails to encode)."""

    return '"' + visible(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(items: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={quote(str(v))}" for k, v in items.items()) + "]"


def _node(n: Node, nid: str) -> str:
    if n.kind == "start":
        return f"{quote(nid)} {_attrs({'shape': 'point', 'width': '0.15', 'label': '', 'tooltip': 'start'})}"
    if n.kind == "end":
        return f"{quote(nid)} " + _attrs({"shape": "box", "style": "rounded,filled", "fillcolor": "#263238",
                                           "fontcolor": "white", "label": f"END\n{n.label}",
                                           "tooltip": f"close reason: {n.label}"})
    if n.kind == "any":
        return f"{quote(nid)} " + _attrs({"shape": "plaintext", "label": "any speaker", "fontcolor": GREY})
    label = n.label
    roles = [r for r, on in (("initiator", n.initiator), ("respondent", n.respondent)) if on]
    if roles:
        label += f"\n({', '.join(roles)})"
    attrs = {"label": label, "shape": "box", "style": "rounded,filled", "fillcolor": "white"}
    tooltip = [n.description] if n.description else []
    if n.start:
        attrs["penwidth"] = "2"
    if n.unreachable:
        attrs.update({"style": "rounded,filled,dashed", "fillcolor": LIGHT, "fontcolor": GREY, "color": GREY})
        tooltip.append("unreachable from start (TF203)")
    if n.trapped:
        attrs.update({"color": RED, "fontcolor": RED, "fillcolor": "#fdecea", "penwidth": "2"})
        tooltip.append("trapped: cannot reach END (TF202/TF209)")
    if n.notes:
        attrs["label"] = label + "\n⚠ " + ", ".join(note.split(":", 1)[0] for note in n.notes)
        attrs["color"] = attrs.get("color", "#ef6c00")
        tooltip.extend(n.notes)
    if tooltip:
        attrs["tooltip"] = "\n".join(tooltip)
    return f"{quote(nid)} {_attrs(attrs)}"


def _edge_attrs(e: Edge) -> dict[str, str]:
    attrs: dict[str, str] = {}
    if e.kind == "maybe":
        attrs["style"] = "dashed"
    elif e.kind == "otherwise":
        attrs["color"] = "#616161"
        attrs["fontcolor"] = "#616161"
    elif e.kind == "shadowed":
        attrs.update({"style": "dotted", "color": GREY, "fontcolor": GREY, "arrowhead": "tee"})
    elif e.kind == "turn":
        attrs["color"] = "#455a64"
    if e.trapped:
        attrs["color"] = RED
        attrs["fontcolor"] = RED
    if e.lines:
        attrs["tooltip"] = "line " + ", ".join(map(str, e.lines)) + (f": {e.note}" if e.note else "")
    return attrs


def _edge(e: Edge, src: str, dst: str, label_id: str, back: bool = False) -> list[str]:
    """The edge's statements. A labelled edge is drawn through a label node (plain text, on the
    edge's path): Graphviz clips edges at a node's border, so no edge ever crosses its label —
    with `rankdir=LR`, an edge label proper is often drawn across its own edge. A `back` edge
    (towards a speaker nearer the start) is written the other way round with `dir=back`, so its
    label node is ranked between its ends rather than beyond its source."""
    attrs = _edge_attrs(e)
    if e.label and src == dst:  # a loop: Graphviz sets its label beside it
        attrs = {"label": e.label, **attrs}
    if not e.label or src == dst:
        return [f"{quote(src)} -> {quote(dst)}" + (f" {_attrs(attrs)}" if attrs else "")]
    text = {"shape": "plaintext", "label": e.label, "fontsize": "9", "width": "0", "height": "0", "margin": "0.04"}
    for key in ("fontcolor", "tooltip"):
        if key in attrs:
            text[key] = attrs[key]
    attrs.pop("fontcolor", None)
    head = attrs.pop("arrowhead", "normal")
    plain = {**attrs, "dir": "none"}
    if back:
        arrow = {**attrs, "dir": "back", "arrowtail": head}
        halves = [f"{quote(dst)} -> {quote(label_id)} {_attrs(arrow)}",
                  f"{quote(label_id)} -> {quote(src)} {_attrs(plain)}"]
    else:
        arrow = {**attrs, "arrowhead": head} if head != "normal" else attrs
        halves = [f"{quote(src)} -> {quote(label_id)} {_attrs(plain)}",
                  f"{quote(label_id)} -> {quote(dst)}" + (f" {_attrs(arrow)}" if arrow else "")]
    return [f"{quote(label_id)} {_attrs(text)}", *halves]


def _depths(p: Picture) -> dict[str, int]:
    """Each node's distance from the start (breadth first over the edges), as Graphviz ranks them
    left to right; a node the start cannot reach counts from the first such node in file order."""

    nexts: dict[str, list[str]] = {}
    for e in p.edges:
        nexts.setdefault(e.src, []).append(e.dst)
    seeds = [n.id for n in p.nodes if n.kind in ("start", "any")] + [n.id for n in p.nodes]
    out: dict[str, int] = {}
    for seed in seeds:
        if seed in out:
            continue
        out[seed] = 0
        queue = deque([seed])
        while queue:
            node = queue.popleft()
            for dst in nexts.get(node, ()):
                if dst not in out:
                    out[dst] = out[node] + 1
                    queue.append(dst)
    return out


def _body(p: Picture, prefix: str, indent: str) -> list[str]:
    def nid(x: str) -> str:
        return prefix + x

    depth = _depths(p)
    out = [indent + _node(n, nid(n.id)) + ";" for n in p.nodes]
    for i, e in enumerate(p.edges):
        back = depth.get(e.dst, 0) <= depth.get(e.src, 0)
        out += [indent + line + ";" for line in _edge(e, nid(e.src), nid(e.dst), nid(f"<label {i}>"), back)]
    return out


def _caption(p: Picture) -> str:
    return f"{p.kind} {p.block}" + (f" — {p.title}" if p.title else "")


def to_dot(pictures: list[Picture], name: str = "flow") -> str:
    header = [f"  graph {_attrs({'fontname': FONT, 'rankdir': 'LR', 'labelloc': 't'})};",
              f"  node {_attrs({'fontname': FONT, 'fontsize': '11'})};",
              f"  edge {_attrs({'fontname': FONT, 'fontsize': '9'})};"]
    if len(pictures) == 1:
        p = pictures[0]
        lines = [f"digraph {quote(p.block)} {{", *header, f"  label={quote(_caption(p))};"]
        lines += _body(p, "", "  ")
    else:
        lines = [f"digraph {quote(name)} {{", *header]
        for p in pictures:
            lines.append(f"  subgraph {quote('cluster_' + p.block)} {{")
            lines.append(f"    label={quote(_caption(p))};")
            lines += _body(p, p.block + "/", "    ")
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


class DotMissing(RuntimeError):
    pass


class DotFailed(RuntimeError):
    """Graphviz's `dot` ran but gave no picture: it failed, was killed or timed out."""


DEFAULT_TIMEOUT = 60.0


def render(dot_text: str, fmt: str, timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """SVG or PNG bytes from DOT text, by running Graphviz's `dot` (the program the
    `graphviz` package runs, called directly so that it can be given a time limit).
    `DotMissing` when `dot` is not installed; `DotFailed` when it exits with an error,
    is killed, or runs longer than `timeout` seconds (it is then killed)."""

    exe = shutil.which("dot")
    if exe is None:
        raise DotMissing("Graphviz's `dot` program is not installed (e.g. `apt-get install graphviz`); "
                         "`--format dot` and `--format mermaid` need nothing")
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise DotFailed(f"Graphviz's `dot` did not finish within {timeout:g} s and was stopped "
                        "(raise the limit with --timeout SECONDS, or use --format dot)") from None
    except OSError as exc:
        raise DotFailed(f"cannot run Graphviz's `dot` ({exe}): {exc.strerror or exc}") from None
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise DotFailed(f"Graphviz's `dot` was killed ({name}) before it finished")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        first = detail[0][:200] if detail else "no message"
        raise DotFailed(f"Graphviz's `dot` failed (exit {done.returncode}): {first}")
    return done.stdout
