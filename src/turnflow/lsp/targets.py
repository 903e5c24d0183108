"""The language server's "compile to a framework" source actions (`turnflow compile --target`).

With the cursor on a workflow block's header line, the editor offers one action per target:
"Compile `support` to LangGraph (support_graph.py)" creates that file beside the flow. A target
that cannot express the block exactly offers the action disabled, its reason the first refusal
(the target's TF3xx finding with its line), so the user sees why before choosing."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import TARGETS, TargetError, compile_target, writer
from turnflow.dsl import ast

#: target -> the suffix of the file it writes (as docs/targets.md's examples name them)
SUFFIX: dict[str, str] = {"langgraph": "_graph.py", "ag2-groupchat": "_chat.py", "autogen": "_team.py",
                          "autogen-json": "_team.json"}


@dataclass(frozen=True)
class TargetAction:
    title: str
    target: str
    file_name: str              # the module, beside the flow
    source: Optional[str]       # the generated code; None when the target refuses the block
    refusal: str                # why not ('' when `source` is set)


def module_name(block: str, target: str) -> str:
    """`support` + langgraph -> `support_graph.py` (a block name that is not an identifier has its
    other characters replaced by `_`, so the module can be imported)."""
    stem = re.sub(r"\W", "_", block, flags=re.ASCII) or "flow"
    return ("_" + stem if stem[0].isdigit() else stem) + SUFFIX[target]


def header_block(flow: ast.FlowFile, line: int) -> Optional[ast.Block]:
    """The workflow block whose header starts on `line` (1-based), if any."""
    for block in flow.blocks:
        if block.kind == "workflow" and block.kind_span.line == line:
            return block
    return None


def target_actions(flow: ast.FlowFile, path: str, line: int) -> list[TargetAction]:
    """One action per target for the workflow block whose header is on `line` (1-based)."""
    block = header_block(flow, line)
    if block is None:
        return []
    name = block.name.name
    alone = ast.FlowFile(span=flow.span, blocks=(block,))  # the block alone: the cost of one block, not the file
    out = []
    for target in TARGETS:
        framework = writer(target).FRAMEWORK
        file_name = module_name(name, target)
        title = f"Compile `{name}` to {framework} ({file_name})"
        try:
            source = compile_target(alone, target, block=name, path=path)
        except CompileError as exc:
            errors = [d for d in exc.diagnostics if d.severity == "error"] or list(exc.diagnostics)
            first = errors[0]
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            out.append(TargetAction(title, target, file_name, None,
                                    f"{first.code} at line {first.span.line}: {first.message}{more}"))
            continue
        except (TargetError, LookupError) as exc:
            out.append(TargetAction(title, target, file_name, None, str(exc)))
            continue
        out.append(TargetAction(title, target, file_name, source, ""))
    return out


def beside(path: str, file_name: str) -> str:
    return os.path.join(os.path.dirname(path), file_name)
