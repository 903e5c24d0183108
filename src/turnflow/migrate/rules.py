"""TF4xx: diagnostics of `turnflow migrate`.

They are documented here, in `DOCS` (so that `turnflow rule`, docs/rules.md and SARIF
know them; name and severity: `turnflow.diagnostics.codes`); `turnflow.migrate` emits them, at positions of the migrated INPUT
file (a Python source or a JSON component), and writes each one as a `#`
comment above the statement it concerns. See docs/migrate.md.
"""

DOCS: dict[str, str] = {}

DOCS["TF401"] = """
    The input cannot be migrated: it is malformed or not a supported orchestration.

    ## What it does
    Reports a Python file that does not parse, a `GroupChat(...)` built in a
    loop over data known only at run time or in a comprehension (loops over
    literal lists are unrolled), a file with no group chat, pattern or team
    (with the `--from` to use when the file builds another family), a
    JSON file that is not an AutoGen team component (for example an agent or
    a model client), or a value that must be a literal and is not. The
    position is that of the offending code in the input. Nothing is written;
    `turnflow migrate` exits with status 1.

    ## Why is this bad?
    `turnflow migrate` never imports or runs your code: it reads it. What it
    cannot read without running it, it cannot translate faithfully.

    ## Example
    ```python
    for n in load_sizes("sizes.txt"):
        chat = GroupChat(agents=[a, b], messages=[], max_round=n)
    ```

    ## Use instead
    Build the group chat once, with literal arguments, at module level or in
    a function body:
    ```python
    chat = GroupChat(agents=[a, b], messages=[], max_round=5)
    ```
"""

DOCS["TF402"] = """
    An agent or tool name is not a valid `.flow` NAME and was renamed.

    ## What it does
    Names with spaces or other characters a NAME cannot hold, names starting
    with a digit, and keywords (`start`, `next`, `context`, ...) are rewritten
    deterministically: invalid characters become `_`, a leading digit gets an
    `agent_` prefix, a keyword gets a trailing `_`, and a clash with an earlier
    name gets `_2`, `_3`, ...

    ## Why is this bad?
    The migrated flow refers to the agent by a name your code does not use:
    the agents you bind to the flow at run time must use the new name.

    ## Example
    ```python
    planner = AssistantAgent(name="Senior Planner", llm_config=llm_config)
    ```
    becomes `participant Senior_Planner`.

    ## Use instead
    Give agents names made of letters, digits, `_` and `-`:
    `AssistantAgent(name="senior_planner", ...)`.
"""

DOCS["TF403"] = """
    A choice the source leaves to an LLM became routing tools plus a deterministic fallback.

    ## What it does
    Where the source lets a model pick the next speaker among two or more
    agents (classic `speaker_selection_method="auto"`, AG2 LLM conditions,
    `SelectorGroupChat`, Swarm and Magentic-One), the migrated flow gives
    the speaker one routing tool per possible successor
    (`handoff X -> Y via transfer_to_Y "..."`) and a fallback for the round in
    which the speaker calls none of them: the first eligible agent after the
    speaker (classic, selector), or the speaker again (Swarm).

    ## Why is this bad?
    The speaker now decides, by calling a tool, what a separate selector
    model used to decide from the whole transcript; a speaker that calls no
    tool gets the fallback. The speaker graph is the same, edge for edge.

    ## Example
    ```python
    GroupChat(agents=[user, planner, coder], speaker_selection_method="auto", ...)
    ```

    ## Use instead
    Keep the generated handoffs and give each tool a description that tells
    the speaker when to use it; or replace a choice that does not need a
    model with a plain rule (`planner -> coder`).
"""

DOCS["TF404"] = """
    A speaker selection method with no `.flow` equivalent was approximated.

    ## What it does
    `random` and `manual` selection, a custom selection function the
    migrator cannot read, `RandomPattern`, `ManualPattern` and
    `GroupManagerTarget` are translated as if a model picked among the same
    eligible agents (routing tools plus a fallback, see TF403).

    ## Why is this bad?
    The flow keeps every possible transition but not how the choice is made:
    randomness, a human's pick or your function's logic are gone.

    ## Example
    ```python
    GroupChat(agents=[a, b, c], speaker_selection_method="random", ...)
    ```

    ## Use instead
    Decide the order explicitly in the migrated flow, e.g. `a -> b`, or write
    the selection function as `if last_speaker is a: return b` branches,
    which the migrator translates exactly.
"""

DOCS["TF405"] = """
    A termination condition was approximated or could not be translated.

    ## What it does
    Reports termination checks that `.flow` cannot state exactly:
    `endswith`/`startswith`/`==` tests and case-insensitive tests become
    `text contains`, an agent's own `is_termination_msg` (which ends the chat
    only when that agent is asked to reply) becomes a check after every
    message, `And` of conditions becomes "any of them", timeouts become `ttl`,
    and checks the migrator cannot read (token usage, external stops, custom
    functions) are dropped. A round or turn cap that is not a positive whole
    number (`max_round=0`, `-3`, `2.5`, `1e999`, `"10"`, `config["rounds"]`)
    is reported with the value used instead.

    ## Why is this bad?
    The migrated flow may end earlier or later than the original.

    ## Example
    ```python
    is_termination_msg=lambda m: m["content"].rstrip().endswith("TERMINATE")
    ```
    becomes `* -> terminate "is_termination_msg" when text contains "TERMINATE"`.

    ## Use instead
    Check the generated `terminate` rules; prefer explicit markers such as
    `"TERMINATE" in content`, which translate exactly.
"""

DOCS["TF406"] = """
    A condition cannot be expressed exactly in `.flow`: it was approximated, or its rule is kept as a comment.

    ## What it does
    `.flow` conditions combine `tool T`, `context.KEY == LITERAL`, comparisons
    (`context.KEY > LITERAL`, `len(context.KEY) > LITERAL`, `!=`, `<`, `<=`,
    `>=`) and `text contains STRING` with `and`, `or`, `not` and parentheses;
    context expressions in those terms are translated exactly. Context
    expressions that compare a variable with another variable, use `in`,
    arithmetic or calls other than `len`, and other condition classes cannot
    be stated: the rule is written as a comment so you can rewrite it.
    Conditions that can be stated approximately are translated and reported:
    a truthiness test (`${flag}`, `not ${flag}`, `StringContextCondition`)
    becomes `context.flag == true` / `not context.flag == true`; a length
    comparison that holds for 0 (`len(${xs}) == 0`) is false in the flow for
    a value without a length, which AG2 counts as 0; an `==` or `endswith`
    test on a message becomes `text contains`; an `available=` condition on
    an LLM handoff is dropped. A tool that returns different targets (a
    target assigned in branches) is split into one routing tool per target.
    In a custom speaker-selection function, a test that cannot be stated (a
    random draw, a guard on the number of messages) degrades only its own
    branch: the targets of that branch become routing tools.

    ## Why is this bad?
    A dropped rule is missing from the migrated flow (and so from its speaker
    graph) until you rewrite it; an approximated one may fire in slightly
    different situations than the original.

    ## Example
    ```python
    ExpressionContextCondition(ContextExpression("${retries} > ${max_retries}"))
    ```

    ## Use instead
    Compare with a literal (`context.retries > 3`), or keep a boolean context
    variable up to date in a tool (`context_variables["give_up"] = True`) and
    test it with `context.give_up == true`.
"""

DOCS["TF407"] = """
    Parallel fan-out, joins or activation groups of a GraphFlow were made sequential.

    ## What it does
    A `.flow` has one speaker at a time. A node with several unconditional
    edges (fan-out) is translated as a chain: the branches speak one after
    another in edge order, and the last branch goes where the branches go
    (the join). Activation groups and `any`/`all` activation conditions are
    dropped.

    ## Why is this bad?
    Branches that ran concurrently now run in sequence and see each other's
    messages; the speaker graph has chain edges between branches instead of
    the fan-out edges.

    ## Example
    ```json
    {"name": "writer", "edges": [{"target": "editor_a"}, {"target": "editor_b"}]}
    ```
    becomes `writer -> editor_a`, `editor_a -> editor_b`.

    ## Use instead
    Order the branches explicitly, or keep the parallel part in AutoGen and
    migrate the sequential parts.
"""

DOCS["TF408"] = """
    A transition target with no `.flow` equivalent was approximated.

    ## What it does
    `RevertToUserTarget` without a user agent, `GroupManagerTarget` as the
    target of a condition, a user agent no agent hands over to,
    Magentic-One's orchestrator, handoffs to agents that are not in the team
    and other targets the language cannot state are replaced by the closest
    target, named in the message. ("Back to the agent that spoke before the
    user", AG2's behaviour after a human reply, is the target `previous`:
    exact, no TF408.) AG2's `RandomAgentTarget` (a draw among several agents),
    `AskUserTarget` and `NestedChatTarget` as the target of a condition or a
    tool, and `NestedChatTarget` as an after-work, are never replaced: the rule
    is left out of the flow, kept as a comment, and the message says why.

    ## Why is this bad?
    The turn may go to a different agent than in the original.

    ## Example
    ```python
    OnContextCondition(target=GroupManagerTarget(), condition=...)
    ```
    Here the group manager's LLM would pick the next speaker; the flow hands
    the turn to the pattern's initial agent.

    ## Use instead
    Add explicit rules, e.g. `router -> billing when context.topic == "billing"`.
"""

DOCS["TF409"] = """
    A setting of the source has no effect on the speaker graph and was not migrated.

    ## What it does
    Reports settings such as `func_call_filter`, `send_introductions`, the
    `select_speaker_*` prompt templates of a classic GroupChat, a non-default
    `emit_team_events` or `max_stalls` of an AutoGen team, a handoff outside
    a Swarm that no HandoffTermination gives effect to, or a context variable
    whose initial value is a list or dict, that `.flow` has no place for. In a
    module `turnflow compile --target langgraph|autogen` wrote, it reports the
    first line where the module differs from what the target writes for the
    flow read back (only the tables and routers are read), or that this flow
    does not compile for the target.

    ## Why is this bad?
    Behaviour that depended on the setting is not described by the migrated
    flow; it belongs to the agents or the runtime configuration.

    ## Example
    ```python
    GroupChat(agents=[a, b], messages=[], send_introductions=True)
    ```

    ## Use instead
    Configure the equivalent behaviour in the agents you bind to the flow.
"""

DOCS["TF410"] = """
    Who takes part, or what a setting is, is decided when the program runs.

    ## What it does
    Reports a binding the chat depends on that the source makes in one branch
    of an `if` / `try` / `match` (or with `a if flag else b`), with another
    binding in another branch or none: an agent chosen by a command-line flag,
    an agent appended to the team under a condition, `self.agents` set in
    `if` / `elif` branches, a termination condition built per branch, a pattern
    variable rebound in a branch. The flow follows the binding named in the
    message and says what the other branches bind; the diagnostic is at the
    branching statement. Also a call that configures the chat and runs only
    in a branch, an `except` handler or a loop the chat is not built in
    (`agent.handoffs.set_after_work(...)` under `if args.escalate:`,
    `builder.add_edge(...)` in a `for` over data read at run time): the flow
    reads it as if it always ran (once, for a loop); the diagnostic is at the
    call and names the `if` / `try` / loop and its line.

    ## Why is this bad?
    `turnflow migrate` reads your code without running it: it cannot know
    which branch runs, so the migrated flow holds one of the teams your
    program can build, not necessarily the one you run.

    ## Example
    ```python
    if args.fake:
        runner = AssistantAgent(name="fake_runner")
    else:
        runner = AssistantAgent(name="runner")
    ```
    The flow has `runner`; with `--fake` the program runs `fake_runner` in its place.

    ## Use instead
    Migrate each variant (bind the variable once per file), or use
    `turnflow migrate --import module:attribute` on the object your program
    builds, which reads the team that actually runs.
"""


DOCS["TF411"] = """
    A framework call whose arguments cannot be bound to the framework's signature.

    ## What it does
    Every call the migrator recognises (agents, group chats, patterns,
    handoffs, teams, termination conditions, graph builders: the table of
    docs/migrate.md) is bound to the framework's own signature before it is
    read, as Python binds it: `f(x)` and `f(condition=x)` are the same call.
    A call that does not bind is reported at the offending argument with the
    error the framework raises (`RoundRobinGroupChat.__init__() takes 2
    positional arguments but 3 were given`), and so is an argument list known
    only at run time (`f(*args)`, `f(**load_settings())`). The call is not read.
    A `**settings` of a dict literal (`settings = {"k": v}` or `dict(k=v)`)
    that nothing changes before the call is read as the keywords it holds.

    ## Why is this bad?
    The program fails at that call with a TypeError, or passes arguments the
    migrator cannot see: what the call would configure is missing from the
    flow.

    ## Example
    ```python
    team = RoundRobinGroupChat([writer, critic], termination)  # AutoGen 0.4's positional form
    ```

    ## Use instead
    ```python
    team = RoundRobinGroupChat([writer, critic], termination_condition=termination)
    ```
"""
