from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.target_common import target_findings
from turnflow import spec
from turnflow.compiler.emit import knobs
from turnflow.frameworks.autogen.writer_json import FRAMEWORK, LACKS, TABLE, Part, Refusal, shape
from turnflow.dsl import ast
from turnflow.source import Span


@rule("TF305")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A flow no AutoGen AgentChat team component decides exactly (`turnflow compile --target autogen-json`).

    ## What it does
    Only when compiling with `--target autogen-json` (never in `turnflow check`): the JSON is a
    `RoundRobinGroupChat`, a `Swarm` or a `GraphFlow` component, and only where that team, loaded
    and run, decides every turn as turnflow's hub does (docs/targets.md, "AutoGen AgentChat
    component JSON"). It reports every construct no component can carry (context, conditions on
    it, `expect`, `ttl`, `previous`, `and` / `or` / `not`: a component's condition is one keyword
    or one handoff tool) and, for a block whose constructs all have a counterpart, the first rule
    that fits none of the three teams, saying what the team lacks: a speaker routing in turn
    order from the first participant is a round robin; by handoff tools and otherwise `stay`, a
    `Swarm`; by one successor, or one `text contains` edge and otherwise an end, a `GraphFlow`
    (which activates every edge whose condition holds, and refuses a cycle without a condition).
    A `terminate` on `text contains` must be every speaker's and come first (`* -> terminate "r"
    when text contains "X"` ahead of the other rules): in component JSON a
    `TextMentionTermination` keeps its text but not its `sources`, and AgentChat applies it to the
    whole turn before the team routes. A speaker that always ends is a `SourceMatchTermination`,
    except a participant named `user` (the task message's source is `user`).

    ## Why is this bad?
    The component would load and run, but not as the flow says: two edges whose keywords both
    appear would run two speakers at once, a Swarm speaker without a handoff would speak again
    where the flow hands over. Nothing is emitted silently different.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        participant c
        start a
        max_turns 6
        a -> b when text contains "BILL"
        a -> c
        b -> terminate "done"
        c -> terminate "done"
    }
    ```

    ## Use instead
    `--target autogen`, whose Python `SelectorGroupChat` runs any routing without context
    (a selector function decides as the flow does; component JSON cannot hold one), or reshape
    the flow: `a -> b when text contains "BILL"` then `a -> terminate "other"` is a GraphFlow.
    """

    refused = list(target_findings(flow, TABLE, FRAMEWORK, "autogen-json"))
    yield from refused
    for block in flow.blocks:
        if block.kind != "workflow" or any(block.span.start <= f.span.start < block.span.end for f in refused):
            continue  # a refused construct first: the team's shape is read once every construct has a counterpart
        refusal = _shape(block)
        if refusal is not None:
            yield Finding(_span(block, refusal.rule),
                          f"no AutoGen AgentChat team component decides as `{block.name.name}` does: {LACKS[refusal.why]} "
                          "(--target autogen-json)",
                          help="see docs/targets.md (AutoGen AgentChat component JSON); `--target autogen` "
                               "writes this flow as Python, or run it on turnflow's hub")


def _shape(block: ast.Block) -> Optional[Refusal]:
    """Why no team component decides as `block` does (None: one does, or the block cannot be read
    as a graph: its errors are reported by the other checks). The graph is the one `compile`
    emits (`emit/knobs.py`), validated as the spec model the writer reads."""
    tools = knobs.participant_tools(block)
    parts = [Part(p.name.name, i, p.role or "participant", tuple(tools.get(p.name.name, [])))
             for i, p in enumerate(block.participants)]
    try:
        graph = spec.TransitionGraph.model_validate(knobs.transition_graph(block))
        found = shape(parts, graph)
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None
    return found if isinstance(found, Refusal) else None


def _span(block: ast.Block, index: Optional[int]) -> Span:
    if index is not None and index < len(block.rules):
        return block.rules[index].span
    other = next((s for s in block.statements if isinstance(s, ast.Otherwise)), None)
    return other.span if other is not None else block.name.span
