from typing import Iterator

from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.dsl import ast
from turnflow.source import Span

_MIN = {"workflow": 2, "discussion": 2, "consulting": 2, "conversation": 2}
_MAX = {"consulting": 2, "conversation": 2}
_RESPONDENT_KINDS = ("consulting", "conversation")


@rule("TF105")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A block has the wrong number of participants or roles for its kind.

    ## What it does
    Checks the participant schema of each session kind: `consulting` takes
    exactly two participants, one `initiator` and one `respondent`;
    `conversation` exactly two; `discussion` and `workflow` two or more. At
    most one participant is the `initiator`; `respondent` is a role of the
    two-party kinds (`consulting`, `conversation`) only.

    ## Why is this bad?
    The runtime's adapter rejects the session at creation (`validate_create`).

    ## Example
    ```
    consulting ask {
        participant user initiator
        participant expert
    }
    ```

    ## Use instead
    ```
    consulting ask {
        participant user   initiator
        participant expert respondent
    }
    ```
    """
    for block in flow.blocks:
        parts = block.participants
        n = len(parts)  # declarations (a duplicate is TF101's business, not a count error)
        kind = block.kind
        lo, hi = _MIN[kind], _MAX.get(kind)
        if n < lo or (hi is not None and n > hi):
            want = f"exactly {lo}" if hi == lo else f"at least {lo}"
            yield Finding(block.name.span, f"a {kind} block takes {want} participants, `{block.name.name}` "
                          f"declares {n}")
        initiators = [p for p in parts if p.role == "initiator"]
        for extra in initiators[1:]:
            yield Finding(_role_span(extra), f"`{extra.name.name}` is a second initiator; at most one participant "
                          "is the initiator", related(_role_span(initiators[0]), "first initiator"))
        respondents = [p for p in parts if p.role == "respondent"]
        if kind not in _RESPONDENT_KINDS:
            for p in respondents:
                yield Finding(_role_span(p), f"`respondent` is a role of consulting and conversation blocks, "
                              f"not of a {kind} block")
        elif kind == "consulting":
            if not initiators:
                yield Finding(block.name.span, f"consulting block `{block.name.name}` needs one participant "
                              "marked `initiator`")
            if not respondents:
                yield Finding(block.name.span, f"consulting block `{block.name.name}` needs one participant "
                              "marked `respondent`")
            for extra in respondents[1:]:
                yield Finding(_role_span(extra), f"`{extra.name.name}` is a second respondent; a consulting "
                              "block has exactly one", related(_role_span(respondents[0]), "first respondent"))


def _role_span(p: ast.Participant) -> Span:
    """Where a participant's role is written (the parser sets it with the role)."""
    assert p.role_span is not None
    return p.role_span
