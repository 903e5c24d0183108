"""`turnflow compile --target ag2-groupchat`: the generated classic GroupChat, run by AG2 0.9.9
(the classic interpreter, `.venv-ag2-classic/bin/python`, or TURNFLOW_AG2_CLASSIC_PYTHON), makes
the decisions turnflow's hub makes, and `turnflow migrate` reads it back to the same speaker graph,
routing (tool and text tests) and max_turns.

Generated flows (tests/flow_strategies.py) lose their context statements and the rules that test
context (TF303 refuses those for this target: a classic GroupChat has no shared context), then
run with the same scripted plan (text and tool calls) on the hub and in one classic process;
speakers and the close reason must be equal; the routing of every example workflow too (5 plans
each). The suite runs 40 generated flows; the larger run:

    TURNFLOW_TARGET_EXAMPLES=500 python3 -m pytest -q -p no:cacheprovider tests/test_target_ag2_groupchat.py
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

import turnflow
from flow_strategies import workflow_blocks
from target_harness import DIFF_TOOLS, plans, run_hub, step, without_context
from test_migrate import reference_edges
from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import compile_target
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow
from turnflow.migrate import migrate

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted(ROOT.glob("examples/*.flow"))
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "40"))


def classic_python():
    exe = os.environ.get("TURNFLOW_AG2_CLASSIC_PYTHON") or str(ROOT / ".venv-ag2-classic" / "bin" / "python")
    return exe if Path(exe).exists() else None


def generated(n: int) -> list:
    """`n` draws of (flow text, plan), flows without errors only (derandomized: the same list each run)."""
    found: list = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(workflow_blocks(tools=DIFF_TOOLS), plans)
    def gather(block, plan):
        block = without_context(block)
        text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
        assume(not any(d.severity == "error" for d in turnflow.check(text)))
        found.append((text, plan))

    gather()
    return found


def example_cases(per_example: int = 5) -> list:
    """The routing of every example workflow (context removed), each with `per_example` plans."""
    drawn: list = []

    @settings(max_examples=per_example, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(plans)
    def gather(plan):
        drawn.append(plan)

    gather()
    out = []
    for path in EXAMPLES:
        for block in turnflow.parse(path.read_text(encoding="utf-8")).blocks:
            if block.kind == "workflow":
                block = without_context(block)
                out.extend((print_flow(ast.FlowFile(span=block.span, blocks=[block])), plan) for plan in drawn)
    return out


def run_classic(jobs: list) -> list:
    exe = classic_python()
    run = subprocess.run([exe, str(ROOT / "tests" / "classic_target_runner.py")], input=json.dumps(jobs),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout)


def _steps(spec: dict, plan: list, speakers: list[str]) -> list:
    """The classic side's replies: the plan's steps as the turns' speakers take them on the hub
    (`speakers`: the hub run's, `run_hub(spec, plan, classic=True)[0]`; the same function, so the
    same step for the same turn and speaker)."""
    order = [p["agent_id"] for p in spec["participants"]]
    owned = {p["agent_id"]: list(p["tools"]) for p in spec["participants"]}
    out = []
    for i, who in enumerate(speakers[:len(plan)]):
        s = step(plan, i, who, order, owned, classic=True)
        out.append({"say": s.get("say", ""), "tool": s.get("tool")})
    return out


@pytest.mark.skipif(classic_python() is None, reason="no classic AG2 0.9 interpreter (.venv-ag2-classic)")
def test_generated_flows_decide_alike_in_classic_groupchat_and_on_the_hub():
    cases = generated(N)
    assert len(cases) >= N // 2
    examples = example_cases()  # and the routing of every example workflow
    assert len(examples) >= 5 * len(WORKFLOWS)
    cases += examples
    jobs, want = [], []
    for text, plan in cases:
        spec = turnflow.compile(text)[0]
        hub = run_hub(spec, plan, classic=True)
        want.append({"speakers": hub[0], "reason": hub[2]})
        jobs.append({"source": compile_target(text, "ag2-groupchat"), "steps": _steps(spec, plan, hub[0])})
    got = run_classic(jobs)
    diffs = [(text, w, g) for (text, _p), w, g in zip(cases, want, got) if w != g]
    assert not diffs, f"{len(diffs)} of {len(cases)} differ; first:\n{diffs[0][0]}\nhub: {diffs[0][1]}\nclassic: {diffs[0][2]}"


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_blocks(tools=DIFF_TOOLS))
def test_migrate_reads_the_emitted_groupchat_back_to_the_same_speaker_graph(block):
    """Round trip: migrate(compile --target ag2-groupchat (flow)) has the flow's participants, start,
    speaker graph, max_turns, and every speaker's decisions with their close reasons."""
    block = without_context(block)
    # flows with `previous`: test_previous_reads_back_as_previous (run_graph and reference_edges
    # resolve `previous` differently, so the graphs are compared on the others)
    assume(not any(isinstance(s, (ast.Rule, ast.Handoff, ast.Otherwise)) and s.target.kind == "previous"
                   for s in block.statements))
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    source = compile_target(text, "ag2-groupchat")
    back = turnflow.parse(migrate(source, "chat.py").text).blocks[0]
    parts = [p.name.name for p in block.participants]
    assert [p.name.name for p in back.participants] == parts
    start = block.of_type(ast.Start)[0].name.name
    assert back.of_type(ast.Start)[0].name.name == start
    runs = run_graph(turnflow.compile(text)[0])
    assert reference_edges(back) == runs
    assert max_turns(back) == (max_turns(block) or 100_000)  # no max_turns: GroupChat's backstop
    assert same_decisions(print_flow(ast.FlowFile(span=back.span, blocks=[back])), text)
    # the analysis's graph of the flow holds it (it may hold more: it does not know that `not tool t`
    # always holds for a speaker that does not own `t`, which the hub and the emitted chat do)
    assert runs <= reference_edges(with_opener_as_initiator(block, start))


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflow_blocks(tools=DIFF_TOOLS))
def test_previous_reads_back_as_previous(block):
    """A flow with `previous`: the module names the speaker of the message before the last (round
    robin on the first turn, as the flow's `previous`), which migrate reads back as `previous`; every
    speaker decides alike."""
    block = without_context(block)
    assume(any(isinstance(s, (ast.Rule, ast.Handoff, ast.Otherwise)) and s.target.kind == "previous"
               for s in block.statements))
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    back = turnflow.parse(migrate(compile_target(text, "ag2-groupchat"), "chat.py").text).blocks[0]
    assert [p.name.name for p in back.participants] == [p.name.name for p in block.participants]
    assert max_turns(back) == (max_turns(block) or 100_000)
    assert same_decisions(print_flow(ast.FlowFile(span=back.span, blocks=[back])), text)


def test_previous_of_the_opening_speaker_reads_back_as_previous():
    text = ("workflow w {\n    participant a\n    participant b\n    participant c\n    start a\n    max_turns 9\n"
            "    a -> previous\n    b -> terminate \"done\" when text contains \"BYE\"\n    b -> previous\n"
            "    c -> a\n}\n")
    back = migrate(compile_target(text, "ag2-groupchat"), "chat.py")
    assert "    a -> previous\n" in back.text and "    b -> previous\n" in back.text, back.text
    assert '    b -> terminate "done" when text contains "BYE"\n' in back.text
    assert not back.diagnostics


def _rows(text: str) -> dict:
    """Per speaker, the hub's dispatch rows of the flow's only workflow (`pyroute.routing`), each
    (its condition as Python source over `tool` and `content`, or None; its target as (kind, name,
    close reason))."""
    from turnflow.compiler.emit.pyroute import routing
    from turnflow.spec import parse_spec

    r = routing(parse_spec(turnflow.compile(text)[0]), text="content")
    return {s: [(row.cond, (row.then.kind, row.then.name, (row.then.reason or "workflow_terminated")
                            if row.then.kind == "end" else None)) for row in r.rows[s]] for s in r.order}


def same_decisions(a: str, b: str) -> bool:
    """Flows `a` and `b` (no context) send every turn to the same place: for each
    speaker, every routing tool (or none) and every text made of the conditions' strings, the first
    row that holds has the same target (the rows themselves may differ: `x or y` reads back as two
    rules)."""
    import ast as pyast
    import itertools

    rows_a, rows_b = _rows(a), _rows(b)
    if list(rows_a) != list(rows_b):
        return False
    conds = [c for rows in (*rows_a.values(), *rows_b.values()) for c, _t in rows if c is not None]
    strings = sorted({n.value for c in conds for n in pyast.walk(pyast.parse(c, mode="eval"))
                      if isinstance(n, pyast.Constant) and isinstance(n.value, str)})
    contents = {"".join(p) for k in range(len(strings) + 1) for p in itertools.combinations(strings, k)}
    code = {c: compile(c, "<condition>", "eval") for c in conds}  # the writer's own expressions

    def decide(rows, tool, content):
        for c, target in rows:
            if c is None or eval(code[c], {"__builtins__": {}}, {"tool": tool, "content": content, "ctx": {}}):
                return target
        return None

    return all(decide(rows_a[s], tool, content) == decide(rows_b[s], tool, content)
               for s in rows_a for tool in [None, *strings] for content in sorted(contents))


def max_turns(block: ast.Block):
    """The block's `max_turns`, None without one."""
    caps = block.of_type(ast.MaxTurns)
    return caps[0].value.value if caps else None


def run_graph(spec: dict) -> set:
    """The speaker graph the hub runs: per speaker, the target of every dispatch row that can fire
    (tests/test_migrate.py's END for a terminate)."""
    from test_migrate import END
    from turnflow.compiler.emit.pyroute import routing
    from turnflow.spec import parse_spec

    r = routing(parse_spec(spec))
    return {(s, row.then.name if row.then.kind == "agent" else END) for s in r.order for row in r.rows[s]}


def with_opener_as_initiator(block: ast.Block, start: str) -> ast.Block:
    """Without a declared initiator, the session's opener is the start speaker (the hub's reading,
    and the generated chat's `INITIATOR`); the analysis reads `initiator` as anyone then (TF110).
    Declaring it makes the flow's graph the one it runs."""
    import dataclasses

    if any(p.role == "initiator" for p in block.participants):
        return block
    stmts = [dataclasses.replace(s, role="initiator", role_span=s.span)
             if isinstance(s, ast.Participant) and s.name.name == start else s for s in block.statements]
    return dataclasses.replace(block, statements=stmts)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_refused_where_it_uses_context(path):
    """Every example workflow that keeps state in the context (all but examples/helpdesk.flow),
    which a classic GroupChat lacks, is refused with TF303 at a context statement, and nothing is
    emitted."""
    text = path.read_text(encoding="utf-8")
    for spec in turnflow.compile(text):
        if spec["kind"] != "workflow" or not spec["knobs"]["context_vars"]:
            continue
        with pytest.raises(CompileError) as exc:
            compile_target(text, "ag2-groupchat", block=spec["name"])
        errors = [d for d in exc.value.diagnostics if d.severity == "error"]
        assert errors and {d.code for d in errors} == {"TF303"}
        assert any("context" in d.message for d in errors)


def test_output_is_deterministic_and_readable_python():
    import ast as pyast

    text = ("workflow w {\n    participant user initiator\n    participant bot-1 tools [t1]\n    start bot-1\n"
            "    max_turns 5\n    bot-1 -> user when tool t1\n    bot-1 -> previous\n    user -> terminate \"done\""
            " when text contains \"BYE\"\n    user -> bot-1\n}\n")
    a, b = compile_target(text, "ag2-groupchat"), compile_target(text, "ag2-groupchat")
    assert a == b
    pyast.parse(a)
    assert "agent_1 = ConversableAgent(name='bot-1'" in a and "user = ConversableAgent(name='user'" in a
    # a participant named like something the module defines gets a variable of its own
    clash = ("workflow w {\n    participant run\n    participant groupchat\n    participant content\n"
             "    start run\n    max_turns 3\n    run -> groupchat\n    groupchat -> content\n}\n")
    code = compile_target(clash, "ag2-groupchat")
    assert all(f"agent_{i} = ConversableAgent(name='{n}'" in code for i, n in enumerate(["run", "groupchat", "content"]))


WORKFLOWS = [(p, b) for p in EXAMPLES for b in turnflow.parse(p.read_text(encoding="utf-8")).blocks
             if b.kind == "workflow"]


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b.name.name}" for p, b in WORKFLOWS])
def test_every_examples_routing_round_trips_through_migrate(path, block):
    """The examples keep state in the context (refused above); their routing without it (text,
    tools, targets) compiles and migrates back to the same participants, start, graph and max_turns."""
    block = without_context(block)
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    source = compile_target(text, "ag2-groupchat")
    back = turnflow.parse(migrate(source, "chat.py").text).blocks[0]
    assert [p.name.name for p in back.participants] == [p.name.name for p in block.participants]
    assert back.of_type(ast.Start)[0].name.name == block.of_type(ast.Start)[0].name.name
    assert reference_edges(back) == run_graph(turnflow.compile(text)[0])
    assert max_turns(back) == max_turns(block) is not None  # every example sets one
    # the rows themselves: tool tests (`tool == "T"`: `when tool T`) and text tests come back as written
    assert _rows(print_flow(ast.FlowFile(span=back.span, blocks=[back]))) == _rows(text)


@pytest.mark.skipif(classic_python() is None, reason="no classic AG2 0.9 interpreter (.venv-ag2-classic)")
def test_a_silenced_context_refusal_reads_the_initial_context():
    """TF303 silenced knowingly: the condition is compiled against the initial context, which no
    classic reply can change (the hub's run with replies that set nothing decides the same)."""
    text = ("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 5\n"
            "    context done = false  # turnflow: ignore[TF303]\n"
            "    a -> terminate \"done\" when context.done == true  # turnflow: ignore[TF303]\n"
            "    a -> b\n    b -> a\n}\n")
    [got] = run_classic([{"source": compile_target(text, "ag2-groupchat"), "steps": [{"say": "ok"}] * 9}])
    assert got == {"speakers": ["a", "b", "a", "b", "a"], "reason": "max_turns"}
    plan = [("text", 1, 0, {}, [], 0, "")] * 9
    speakers, _ctx, reason = run_hub(turnflow.compile(text)[0], plan, classic=True)
    assert (speakers, reason) == (got["speakers"], got["reason"])


@pytest.mark.skipif(classic_python() is None, reason="no classic AG2 0.9 interpreter (.venv-ag2-classic)")
def test_participants_named_like_builtins_do_not_shadow_them():
    """Participants `str`, `isinstance`, `float`: their agents' variables must not shadow the
    builtins the module calls (`_compare` of a silenced TF303 comparison uses all three)."""
    import ast as pyast
    import builtins

    text = ("workflow w {\n    participant str\n    participant isinstance\n    participant float\n    start str\n"
            "    max_turns 5\n    context n = 1  # turnflow: ignore[TF303]\n"
            "    str -> isinstance when context.n > 0  # turnflow: ignore[TF303]\n"
            "    str -> terminate \"never\"\n    isinstance -> float\n    float -> terminate \"done\"\n}\n")
    source = compile_target(text, "ag2-groupchat")
    assigned = {t.id for node in pyast.parse(source).body if isinstance(node, pyast.Assign)
                for t in node.targets if isinstance(t, pyast.Name)}
    assert not assigned & set(dir(builtins)), assigned & set(dir(builtins))
    [got] = run_classic([{"source": source, "steps": [{"say": "ok"}] * 5}])
    assert got == {"speakers": ["str", "isinstance", "float"], "reason": "done"}


SUPPORT = ("workflow support {\n    participant user initiator\n    participant triage\n    participant billing\n"
           "    start triage\n    max_turns 12\n    handoff triage -> billing via transfer_to_billing \"money\"\n"
           "    billing -> user\n    user -> terminate \"resolved\" when text contains \"THANKS\"\n    user -> triage\n}\n")


def test_the_close_reasons_come_back_only_when_the_managers_check_ends_where_the_selection_does():
    """The reasons are read from `_end_reason`, which the manager's `is_termination_msg` calls; a
    module whose check ends the chat somewhere the selection function does not (edited by hand), or
    that tests a marker itself, is read as any classic chat: `custom_selection`, TF405."""
    source = compile_target(SUPPORT, "ag2-groupchat")
    back = migrate(source, "chat.py")
    assert '    user -> terminate "resolved" when text contains "THANKS"\n' in back.text
    assert '    triage -> terminate "after_work"\n' in back.text
    assert not back.diagnostics
    old = "    if last_speaker is billing:\n        return None\n    return None\n"
    assert source.count(old) == 1  # `_end_reason`'s last branch (select_speaker's returns `user`)
    edited = source.replace(old, "    if last_speaker is billing:\n        return 'billed'\n    return None\n")
    back = migrate(edited, "chat.py")
    assert "custom_selection" in back.text and "resolved" not in back.text and "billed" not in back.text
    assert [d.code for d in back.diagnostics] == ["TF405"]
    marker = source.replace('    reason = _end_reason(last, groupchat)\n',
                            '    reason = _end_reason(last, groupchat)\n    if "STOP" in message["content"]:\n'
                            '        reason = "stop"\n')
    back = migrate(marker, "chat.py")
    assert '* -> terminate "is_termination_msg" when text contains "STOP"' in back.text
    assert "resolved" not in back.text
