from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF213")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """The workflow's `initiator` is not `start` and no run gives it the turn.

    ## What it does
    In a workflow, `initiator` names who opens the session: the session's
    creator, and the participant the target `initiator` names. `start` names
    who speaks first. The two may differ (a user opens a session that a team
    then works on), so an initiator that never gets the turn is not reported
    as unreachable (TF203) but noted here, at its declaration: it opens the
    session and never speaks, and its own rules never fire.

    ## Why is this bad?
    Often it is intended, and this note can be ignored (`ignore = ["TF213"]`).
    When the initiator should answer (review a result, approve a plan), a
    rule giving it the turn is missing.

    ## Example
    ```
    participant user initiator
    participant triage
    start triage
    triage -> terminate
    user -> triage
    ```

    ## Use instead
    ```
    participant user initiator
    participant triage
    start triage
    triage -> initiator
    user -> terminate
    ```
    """
    init = graph.initiator
    if graph.start is None or init is None or init == graph.start or init not in graph.index:
        return
    if init in firing(graph).speaks:
        return
    decl = next(p for p in block.participants if p.name.name == init)
    own = [r for r in graph.rules if r.source == init]
    tail = "" if not own else "; its rule never fires" if len(own) == 1 else f"; its {len(own)} rules never fire"
    yield Finding(decl.name.span, f"the initiator `{init}` opens the session but never speaks: no run from "
                  f"`start` (`{graph.start}`) gives it the turn{tail}",
                  help="intended if it only opens the session; else give it the turn (e.g. `... -> initiator`)")
