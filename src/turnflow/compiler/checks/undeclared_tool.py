from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import names
from turnflow.compiler.checks.suggest import Suggester
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


def _did_you_mean(name: str, suggest: Suggester) -> Optional[str]:
    close = suggest(name)
    return f"did you mean `{close}`?" if close else None


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
    # indexed once per block (per source): bounded work per term, however many terms there are
    suggest_any = Suggester(every_tool)
    suggest_own: dict[str, Suggester] = {}
    owned_by_some = set().union(*(graph.owned[s] for s in graph.participants))
    for st in block.of_type(ast.Rule):
        terms = [t for t in st.terms if isinstance(t, ast.ToolTerm)]
        if not terms:
            continue
        if st.source is not None:
            owned = graph.owned.get(st.source.name)
            if owned is not None and st.source.name not in suggest_own:
                suggest_own[st.source.name] = Suggester(sorted(owned)) if owned else suggest_any
            yield from _not_owned(st.source.name, terms, graph, suggest_own.get(st.source.name, suggest_any))
        else:
            yield from _owned_by_nobody(terms, graph, owned_by_some, suggest_any)


def _undeclared_anywhere(block: ast.Block) -> Iterator[Finding]:
    """A block that declares no tools: each tool name once, at its first `tool` term."""
    terms = [t for st in block.of_type(ast.Rule) for t in ast.leaf_terms(st.terms) if isinstance(t, ast.ToolTerm)]
    uses: dict[str, int] = {}
    for t in terms:
        uses[t.tool.name] = uses.get(t.tool.name, 0) + 1
    # a name used once that is close to one used more often is most likely a typo of it: the
    # candidates of a name used k times are the names used more than k times (one suggester per k)
    by_uses: dict[int, Suggester] = {}
    seen: set[str] = set()
    for t in terms:
        if t.tool.name in seen:
            continue
        seen.add(t.tool.name)
        k = uses[t.tool.name]
        if k not in by_uses:
            by_uses[k] = Suggester(sorted(n for n, m in uses.items() if m > k))
        yield Finding(t.span, f"tool `{t.tool.name}` is declared nowhere in block `{block.name.name}`: "
                      "no participant lists it in `tools [...]` and no `handoff` routes through it",
                      help=_did_you_mean(t.tool.name, by_uses[k])
                      or "declare it on the participant that calls it, e.g. "
                         f"`participant NAME tools [{t.tool.name}]`")


def _not_owned(source: str, terms: list[ast.ToolTerm], graph: SpeakerGraph, suggest: Suggester) -> Iterator[Finding]:
    """SOURCE `A`: each tool term naming a tool `A` does not own."""
    owned = graph.owned.get(source)
    if owned is None:
        return
    for t in terms:
        if t.tool.name not in owned:
            yield Finding(t.span, f"`{source}` does not declare tool `{t.tool.name}`, so this "
                          "condition never holds",
                          help=_did_you_mean(t.tool.name, suggest)
                          or f"add `{t.tool.name}` to `tools [...]` of `{source}`, or fix the "
                             "tool name")


def _owned_by_nobody(terms: list[ast.ToolTerm], graph: SpeakerGraph, owned_by_some: set[str],
                     suggest: Suggester) -> Iterator[Finding]:
    """SOURCE `*`: tools no participant owns, or (each owned) no single participant owns them all."""
    wanted = {t.tool.name for t in terms}
    if any(wanted <= graph.owned[s] for s in graph.participants):
        return
    orphans = [t for t in terms if t.tool.name not in owned_by_some]
    for t in orphans:
        yield Finding(t.span, f"no participant declares tool `{t.tool.name}`, so this condition never holds",
                      help=_did_you_mean(t.tool.name, suggest)
                      or "declare the tool with `tools [...]` or a `handoff`, or fix the tool name")
    if not orphans:
        tools = sorted(wanted)
        yield Finding(terms[0].span, f"no participant declares all of the tools {names(tools)}, so this "
                      "rule never fires")
