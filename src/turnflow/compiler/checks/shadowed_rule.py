from typing import Iterator

from turnflow.diagnostics.diagnostic import Related
from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.compiler.checks.graph_common import names, rule_text
from turnflow.diagnostics.listing import MAX_LISTED, bounded
from turnflow.compiler.firing import Firing, firing
from turnflow.compiler.lower import RuleInfo
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF204")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A rule never fires because earlier rules decide every turn it matches.

    ## What it does
    Rules are evaluated in ascending `priority`, ties in file order, and the
    first rule whose condition holds for the last speaker decides. A rule is
    reported, at the rule and naming the rules that shadow it, when for every
    speaker that could take it (its SOURCE, or every participant for `*`) and
    that gets the turn on some run, no turn fires it: an earlier rule without
    a condition (an *always* rule) decides first, or earlier guarded rules
    hold on every turn on which its condition holds — e.g. a `handoff` of the
    same tool (`handoff planner -> writer via delegate` before
    `planner -> critic when tool delegate`), or `when context.k == 1` before
    `when context.k == 1 and text contains "x"`. The proof reads every input
    a turn can have: the routing tool, the body text and any context value an
    agent may set (docs/analysis.md, "Dead rules"). A rule that is dead only
    because its `tool` term names an undeclared tool is TF207, one whose
    condition can never hold is TF212, one whose speakers never get the turn
    is TF203 (or TF213 for the initiator), not TF204.

    ## Why is this bad?
    The rule is dead code: whoever wrote it expected it to route some turns,
    and it routes none. Often the order (or a `priority`) is wrong.

    ## Example
    ```
    writer -> reviewer
    writer -> terminate when text contains "DONE"
    ```

    ## Use instead
    ```
    writer -> terminate when text contains "DONE"
    writer -> reviewer
    ```
    """
    f = firing(graph)
    for r in graph.rules:
        reached = dead_for(graph, f, r)
        if not reached or all(f.can(s, r.when, []) is False for s in reached):
            continue  # fires, dead only by TF207 / TF203 / TF213, or its condition never holds (TF212)
        kind = "handoff" if isinstance(r.stmt, ast.Handoff) else "rule"
        early = [s for s in reached if _decided_before(graph, s, r)]
        parts, rel = _always_parts(graph, r, early)
        for s in reached:
            if s not in early:
                part, more = _jointly(graph, f, r, s)
                parts.append(part)
                rel += more
        yield Finding(r.stmt.span, f"this {kind} never fires: " + bounded(parts, "; "), related=rel[:MAX_LISTED],
                      help="move it above the rules that shadow it, give it a lower `priority`, "
                           "or remove it")


def _decided_before(graph: SpeakerGraph, s: str, r: RuleInfo) -> bool:
    """Does `s`'s deciding *always* rule come before `r`?"""
    first = graph.first_always[s]
    return first is not None and first.order < r.order


def dead_for(graph: SpeakerGraph, f: Firing, r: RuleInfo) -> list[str]:
    """The speakers that get the turn and could take `r` (its SOURCE, or everyone for `*`, minus
    those a `tool` term rules out) when `r` never fires on any run; [] when it fires on some run,
    or is dead only because nobody who could take it gets the turn."""
    if f.fires_on_some_run(r):
        return []
    sources = [r.source] if r.source is not None else list(graph.participants)
    return [s for s in sources if s in graph.index and not graph.never(r, s) and s in f.speaks]


def _always_parts(graph: SpeakerGraph, r: RuleInfo, speakers: list[str]) -> tuple[list[str], tuple[Related, ...]]:
    """`X (line N) always decides first for a, b`: the speakers whose *always* rule comes first."""
    by_shadow: dict[int, list[str]] = {}
    shadows: dict[int, RuleInfo] = {}
    for s in speakers:
        first = graph.first_always[s]
        assert first is not None
        by_shadow.setdefault(first.order, []).append(s)
        shadows[first.order] = first
    parts: list[str] = []
    rel: tuple[Related, ...] = ()
    for order in sorted(by_shadow):
        first = shadows[order]
        who = by_shadow[order]
        if r.source is None and len(shadows) == 1 and len(who) == len(graph.participants):
            whom = "for every speaker"
        else:
            whom = "for " + names(who, limit=5)
        why = ""
        if first.stmt.span.start > r.stmt.span.start:
            why = f", evaluated first because of its priority {first.priority}"
        parts.append(f"`{rule_text(first.stmt)}` (line {first.stmt.span.line}{why}) always decides first {whom}")
        rel += related(first.stmt.span, "this rule decides first")
    return parts, rel


def _jointly(graph: SpeakerGraph, f: Firing, r: RuleInfo, s: str) -> tuple[str, tuple[Related, ...]]:
    """For speaker `s`: the earlier rules that hold on every turn on which `r`'s condition holds
    (those that can hold together with it), e.g. a handoff of the same tool."""
    if f.can(s, r.when, []) is False:
        return f"its condition never holds for `{s}`", ()
    takes = f.takes[s]
    before = takes[:next(i for i, x in enumerate(takes) if x is r)]
    live = [e for e in before if f.fires_for(e, s)]
    # one earlier rule that holds whenever `r`'s condition does (a handoff of the same tool, say);
    # else every earlier rule that can hold together with it
    alone = next((e for e in live if f.can(s, r.when, [e]) is False), None)
    blockers = [alone] if alone is not None else [e for e in live if f.can(s, r.when, [], also=e.when) is not False]
    shown = [f"`{rule_text(e.stmt)}` (line {e.stmt.span.line})" for e in blockers]
    verb = "decides" if len(blockers) == 1 else "decide"
    rel: tuple[Related, ...] = ()
    for e in blockers:
        rel += related(e.stmt.span, "this rule decides first")
    return f"for `{s}`, {bounded(shown, ', ')} {verb} every turn it matches", rel
