from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast


@rule("TF002")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A literal, duration or number is malformed or out of range.

    ## What it does
    Reports strings with invalid escapes and malformed numbers or durations
    (found while parsing), and values outside their range: `max_turns` below
    1, a zero `ttl` or expectation duration, an unknown expectation evaluator
    or action, an unknown discussion `ordering`.

    ## Why is this bad?
    The compiled session spec would be rejected by the runtime, or would
    silently mean something else than what was written.

    ## Example
    ```
    max_turns 0
    expect turn_within 0s explode
    ```

    ## Use instead
    ```
    max_turns 12
    expect turn_within 120s warn
    ```
    """
    for block in flow.blocks:
        for st in block.statements:
            if isinstance(st, ast.MaxTurns) and st.value.value < 1:
                yield Finding(st.value.span, f"`max_turns` must be at least 1, found {st.value.raw}")
            elif isinstance(st, ast.Ttl) and st.duration.amount == 0:
                yield Finding(st.duration.span, "`ttl` must be longer than zero")
            elif isinstance(st, ast.Expect):
                if st.name.name not in ast.EXPECT_EVALUATORS:
                    yield Finding(st.name.span, f"unknown expectation `{st.name.name}`; expected one of "
                                  + ", ".join(f"`{e}`" for e in ast.EXPECT_EVALUATORS))
                if st.duration.amount == 0:
                    yield Finding(st.duration.span, "an expectation's duration must be longer than zero")
                if st.action.name not in ast.EXPECT_ACTIONS:
                    yield Finding(st.action.span, f"unknown expectation action `{st.action.name}`; expected one of "
                                  + ", ".join(f"`{a}`" for a in ast.EXPECT_ACTIONS))
            elif isinstance(st, ast.Ordering) and st.value.name not in ast.ORDERINGS:
                yield Finding(st.value.span, f"unknown ordering `{st.value.name}`; expected `round_robin`")
