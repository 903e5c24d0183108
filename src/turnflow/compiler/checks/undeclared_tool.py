from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import names
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast
import difflib


def _did_you_mean(name: str, candidates: list[str]) -> Optional[str]:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else None


@rule("TF207")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A `tool` term names a tool that its SOURCE participant does not declare.

    ## What it does
    When the block declares tools (some participant has `tools [...]` or
    there is a `handoff`): reports, at the term, a `tool t` condition whose
    SOURCE neither lists `t` in its `tools [...]` nor is the source of a
    `handoff ... via t`. For SOURCE `*` it reports a tool no participant
    declares (or, when each tool has an owner, a set of tools no single
    participant declares together). Only `tool` terms that stand directly in
    the rule's `and` are checked: inside `or`, `not` or parentheses a tool the
    speaker cannot call does not make the rule dead (`not tool t` then always
    holds). When the block declares no tools at all, it reports each tool name
    once, at its first `tool` term: the flow does not say who can call it, so a
    typo would pass silently. The closest declared tool name is suggested.

    ## Why is this bad?
    The speaker cannot call a tool it does not have, so the condition never
    holds and the rule never fires; usually a typo or a missing declaration.

    ## Example
    ```
    participant triage tools [to_billing]
    triage -> billing when tool to_biling
    ```

    ## Use instead
    ```
    participant triage tools [to_billing]
    triage -> billing when tool to_billing
    ```
    """
    if not graph.declares_tools:
        yield from _undeclared_anywhere(block)
        return
    every_tool = sorted(set().union(*graph.owned.values())) if graph.owned else []
    for st in block.of_type(ast.Rule):
        terms = [t for t in st.terms if isinstance(t, ast.ToolTerm)]
        if not terms:
            continue
        if st.source is not None:
            yield from _not_owned(st.source.name, terms, graph, every_tool)
        else:
            yield from _owned_by_nobody(terms, graph, every_tool)


def _undeclared_anywhere(block: ast.Block) -> Iterator[Finding]:
    """A block that declares no tools: each tool name once, at its first `tool` term."""
    terms = [t for st in block.of_type(ast.Rule) for t in ast.leaf_terms(st.terms) if isinstance(t, ast.ToolTerm)]
    uses: dict[str, int] = {}
    for t in terms:
        uses[t.tool.name] = uses.get(t.tool.name, 0) + 1
    seen: set[str] = set()
    for t in terms:
        if t.tool.name in seen:
            continue
        seen.add(t.tool.name)
        # a name used once that is close to one used more often is most likely a typo of it
        others = sorted(n for n, k in uses.items() if n != t.tool.name and k > uses[t.tool.name])
        yield Finding(t.span, f"tool `{t.tool.name}` is declared nowhere in block `{block.name.name}`: "
                      "no participant lists it in `tools [...]` and no `handoff` routes through it",
                      help=_did_you_mean(t.tool.name, others)
                      or "declare it on the participant that calls it, e.g. "
                         f"`participant NAME tools [{t.tool.name}]`")


def _not_owned(source: str, terms: list[ast.ToolTerm], graph: SpeakerGraph, every_tool: list[str]) -> Iterator[Finding]:
    """SOURCE `A`: each tool term naming a tool `A` does not own."""
    owned = graph.owned.get(source)
    if owned is None:
        return
    for t in terms:
        if t.tool.name not in owned:
            yield Finding(t.span, f"`{source}` does not declare tool `{t.tool.name}`, so this "
                          "condition never holds",
                          help=_did_you_mean(t.tool.name, sorted(owned) or every_tool)
                          or f"add `{t.tool.name}` to `tools [...]` of `{source}`, or fix the "
                             "tool name")


def _owned_by_nobody(terms: list[ast.ToolTerm], graph: SpeakerGraph, every_tool: list[str]) -> Iterator[Finding]:
    """SOURCE `*`: tools no participant owns, or (each owned) no single participant owns them all."""
    wanted = {t.tool.name for t in terms}
    if any(wanted <= graph.owned[s] for s in graph.participants):
        return
    orphans = [t for t in terms if not any(t.tool.name in graph.owned[s] for s in graph.participants)]
    for t in orphans:
        yield Finding(t.span, f"no participant declares tool `{t.tool.name}`, so this condition never holds",
                      help=_did_you_mean(t.tool.name, every_tool)
                      or "declare the tool with `tools [...]` or a `handoff`, or fix the tool name")
    if not orphans:
        tools = sorted(wanted)
        yield Finding(terms[0].span, f"no participant declares all of the tools {names(tools)}, so this "
                      "rule never fires")
