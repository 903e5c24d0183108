"""Picture → JSON for tools: `{block, kind, nodes, edges: [{from, to, kind, label, rules: [line…]}]}`."""

from __future__ import annotations

import json

from typing import Any

from turnflow.compiler.emit.picture import Picture


def picture_dict(p: Picture) -> dict[str, Any]:
    nodes = []
    for n in p.nodes:
        node: dict[str, object] = {"id": n.id, "kind": n.kind, "label": n.label}
        if n.kind == "participant":
            node.update({"description": n.description, "start": n.start, "initiator": n.initiator,
                         "respondent": n.respondent, "unreachable": n.unreachable, "trapped": n.trapped,
                         "notes": n.notes})
        nodes.append(node)
    edges = [{"from": e.src, "to": e.dst, "kind": e.kind, "label": e.label, "rules": e.lines,
              "trapped": e.trapped, **({"note": e.note} if e.note else {})} for e in p.edges]
    return {"block": p.block, "kind": p.kind, "title": p.title, "nodes": nodes, "edges": edges}


def to_json(pictures: list[Picture]) -> str:
    data = picture_dict(pictures[0]) if len(pictures) == 1 else [picture_dict(p) for p in pictures]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
