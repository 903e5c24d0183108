from typing import Iterator

from turnflow.diagnostics.diagnostic import Related
from turnflow.compiler.checks.base import Finding, related, rule
from turnflow.compiler.checks.graph_common import names, rule_text
from turnflow.diagnostics.listing import MAX_LISTED, bounded
from turnflow.compiler.graph import RuleInfo, SpeakerGraph
from turnflow.dsl import ast


@rule("TF204")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A rule never fires because an earlier rule without a condition always decides first.

    ## What it does
    Rules are evaluated in ascending `priority`, ties in file order, and the
    first rule without a condition (an *always* rule) for the last speaker
    decides. A rule that comes after such a rule for every speaker it could
    match (its SOURCE, or every participant for `*`) can never fire; it is
    reported at the rule, naming the rule that shadows it. A rule that is
    dead only because its `tool` term names an undeclared tool is TF207, not
    TF204.

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
    for r in graph.rules:
        if r.order in graph.live:
            continue
        sources = [r.source] if r.source is not None else list(graph.participants)
        candidates = [s for s in sources if s in graph.index and not graph.never(r, s)]
        if not candidates:
            continue  # dead only because of TF207 (or an undeclared source)
        by_shadow: dict[int, list[str]] = {}
        shadows: dict[int, RuleInfo] = {}
        for s in candidates:
            first = graph.first_always[s]
            assert first is not None and first.order < r.order
            by_shadow.setdefault(first.order, []).append(s)
            shadows[first.order] = first
        kind = "handoff" if isinstance(r.stmt, ast.Handoff) else "rule"
        parts = []
        rel: tuple[Related, ...] = ()
        for order in sorted(by_shadow):
            first = shadows[order]
            speakers = by_shadow[order]
            if r.source is None and len(shadows) == 1 and len(speakers) == len(graph.participants):
                whom = "for every speaker"
            else:
                whom = "for " + names(speakers, limit=5)
            why = ""
            if first.stmt.span.start > r.stmt.span.start:
                why = f", evaluated first because of its priority {first.priority}"
            parts.append(f"`{rule_text(first.stmt)}` (line {first.stmt.span.line}{why}) always decides first "
                         f"{whom}")
            rel += related(first.stmt.span, "this rule decides first")
        yield Finding(r.stmt.span, f"this {kind} never fires: " + bounded(parts, "; "), related=rel[:MAX_LISTED],
                      help="move it above the rule that shadows it, give it a lower `priority`, "
                           "or remove it")
