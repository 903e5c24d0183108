"""`turnflow migrate`: fixtures as data.

tests/fixtures/migrate/<family>/<case>.{py,json} is an input written in the
shape of public AG2 / AutoGen examples; <case>.flow is the golden migrated
flow and <case>.expected the golden TF4xx diagnostics of the migration; the
migrated flow must parse, check without errors and compile, and the command
must print exactly the migration's diagnostics followed by `turnflow check`'s
findings on the migrated flow. For every case the speaker graph
of the migrated flow must equal the source's graph, edge for edge: EDGES below
lists each source's edges, derived by hand from the source's semantics (the
comment above each says how).

tests/fixtures/migrate/errors/<case>.* are inputs that cannot be migrated:
exit 1, a TF401 with a position, nothing written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import turnflow
from turnflow.cli import main
from turnflow.dsl import ast
from turnflow.migrate import detect, migrate
from golden import check_golden

ROOT = Path(__file__).parent / "fixtures" / "migrate"
FAMILIES = {"classic": "classic", "autogen": "autogen", "ag2-patterns": "ag2-patterns"}
CASES = sorted(p for fam in FAMILIES for p in (ROOT / fam).glob("*") if p.suffix in (".py", ".json", ".ipynb"))
ERRORS = sorted(p for p in (ROOT / "errors").glob("*") if p.suffix in (".py", ".json", ".ipynb"))
END = "<END>"

E = END
# (block name or None for the only block) -> edges of the SOURCE, from its semantics
EDGES: dict[str, dict] = {
    # -- classic GroupChat ------------------------------------------------------------------
    # allowed dict: Admin->[Planner]; Planner->[Admin, Critic, Engineer]; Engineer->[Executor];
    # Executor->[Engineer, Critic]; Critic->[Engineer, Planner]; the manager's
    # is_termination_msg can end the chat after any message.
    "classic/fsm_allowed": {None: {
        ("Admin", "Planner"), ("Planner", "Admin"), ("Planner", "Critic"), ("Planner", "Engineer"),
        ("Engineer", "Executor"), ("Executor", "Engineer"), ("Executor", "Critic"),
        ("Critic", "Engineer"), ("Critic", "Planner"),
        ("Admin", E), ("Planner", E), ("Engineer", E), ("Executor", E), ("Critic", E)}},
    # disallowed, inverted from the complete graph WITH self-loops: A0 -> all but B1; A1 -> all but
    # B0, B1; B0 -> all but A1; B1 -> all but A0, A1; the manager's check ends after any message.
    "classic/disallowed": {None: {
        ("A0", "A0"), ("A0", "A1"), ("A0", "B0"), ("A1", "A0"), ("A1", "A1"),
        ("B0", "A0"), ("B0", "B0"), ("B0", "B1"), ("B1", "B0"), ("B1", "B1"),
        ("A0", E), ("A1", E), ("B0", E), ("B1", E)}},
    # issue 31 (3): round robin analyst -> writer -> executor -> analyst, the initiator user ->
    # analyst; `func_call_filter`: after analyst calls lookup_price, executor (it runs the tool).
    "classic/tool_executor": {None: {
        ("user", "analyst"), ("analyst", "writer"), ("analyst", "executor"), ("writer", "executor"),
        ("executor", "analyst")}},
    # issue 31 (5): crew = [planner] + [coder], extended by [reviewer], appended tester: round robin
    # from the initiator user.
    "classic/list_building": {None: {
        ("user", "planner"), ("planner", "coder"), ("coder", "reviewer"), ("reviewer", "tester"),
        ("tester", "planner")}},
    # issue 31 (5): ReviewTeam([author, critic], 6), built once: round robin author <-> critic.
    "classic/class_once": {None: {("author", "critic"), ("critic", "author")}},
    # one successor each; `editor` is not a key: NoEligibleSpeaker ends the chat.
    "classic/sink_pipeline": {None: {
        ("user", "researcher"), ("researcher", "writer"), ("writer", "editor"), ("editor", E)}},
    # round robin over [Boss_Assistant, PM, engineer, reviewer] (next in `agents` order); every
    # agent's successor has an is_termination_msg, so every speaker may end the chat.
    "classic/rag_round_robin": {None: {
        ("Boss_Assistant", "Product_Manager"), ("Product_Manager", "Senior_Python_Engineer"),
        ("Senior_Python_Engineer", "Code_Reviewer"), ("Code_Reviewer", "Boss_Assistant"),
        ("Boss_Assistant", E), ("Product_Manager", E), ("Senior_Python_Engineer", E), ("Code_Reviewer", E)}},
    # state_transition(): Init -> coder -> executor -> (coder | scientist); scientist -> None (end).
    "classic/stateflow": {None: {
        ("Init", "Retrieve_Action_1"), ("Retrieve_Action_1", "Retrieve_Action_2"),
        ("Retrieve_Action_2", "Retrieve_Action_1"), ("Retrieve_Action_2", "Research_Action_1"),
        ("Research_Action_1", E)}},
    # auto, allow_repeat_speaker=False, no dict: every ordered pair of distinct agents; nothing
    # but max_round ends the chat.
    "classic/research_auto": {None: {
        (x, y) for x in ("Admin", "Engineer", "Research_Scientist", "next_", "Executor")
        for y in ("Admin", "Engineer", "Research_Scientist", "next_", "Executor") if x != y}},
    # two functions, same variable names: research() is a round robin Admin -> Planner -> Critic;
    # review() follows its allowed dict (Developer -> Reviewer -> {Tester, Developer}, Tester ->
    # Reviewer); agents come from a factory; nothing but max_round ends either.
    "classic/scoped_chats": {
        "groupchat_research": {("Admin", "Planner"), ("Planner", "Critic"), ("Critic", "Admin")},
        "groupchat_review": {("Developer", "Reviewer"), ("Reviewer", "Tester"), ("Reviewer", "Developer"),
                             ("Tester", "Reviewer")}},
    # team = [user] + three agents appended in a loop over a literal table: round robin in that
    # order; the manager's TERMINATE check can end after any message.
    "classic/loop_built_team": {None: {
        ("user", "analyst"), ("analyst", "writer"), ("writer", "editor"), ("editor", "user"),
        ("user", E), ("analyst", E), ("writer", E), ("editor", E)}},
    # custom_speaker_selection_func, speaker by speaker: the opening guard (only the initiator `user`
    # precedes it) and `user` -> planner; planner -> engineer ("approved") else user; engineer ->
    # executor; executor -> engineer (exit code 1) else critic; critic -> planner (random draw)
    # else "auto": any agent (allow_repeat_speaker defaults to True).
    "classic/selection_precise": {None: {
        ("user", "planner"), ("planner", "engineer"), ("planner", "user"), ("engineer", "executor"),
        ("executor", "engineer"), ("executor", "critic"), ("critic", "planner")} | {
        ("critic", y) for y in ("user", "planner", "engineer", "executor", "critic")}},
    # ResearchTeam.select (a method; agents are attributes): user -> searcher -> summarizer -> None.
    "classic/class_builder": {None: {("user", "searcher"), ("searcher", "summarizer"), ("summarizer", E)}},
    # agents from create_agents() (returned as a tuple); the selection function is the closure
    # engineer_selection() returns: user -> engineer; engineer -> executor on a code block, else
    # engineer; executor -> engineer.
    "classic/builder_and_closure": {None: {("user", "engineer"), ("engineer", "executor"), ("engineer", "engineer"),
                                           ("executor", "engineer")}},
    # create_group_chat(agents, ...) called twice: research_chat ("auto", no repeats: every ordered
    # pair of distinct agents) and review_chat (round robin writer <-> analyst); the manager's
    # TERMINATE check can end either after any message.
    "classic/chat_factory": {
        "research_chat": {(x, y) for x in ("user", "analyst", "writer") for y in ("user", "analyst", "writer", E)
                          if x != y},
        "review_chat": {("writer", "analyst"), ("analyst", "writer"), ("writer", E), ("analyst", E)}},
    # CustomGroupChat.select_speaker: Admin -> Topic_Analyzer -> Title_Writer ("NEEDS TITLE") else
    # Paraphraser -> Task_Creator; anyone else -> Admin (max_round=6 comes from super().__init__).
    "classic/select_speaker_override": {None: {
        ("Admin", "Topic_Analyzer"), ("Topic_Analyzer", "Title_Writer"), ("Topic_Analyzer", "Paraphraser"),
        ("Paraphraser", "Task_Creator"), ("Title_Writer", "Admin"), ("Task_Creator", "Admin")}},
    # a Jupyter notebook (magics, top-level await): its allowed dict planner -> coder -> runner ->
    # {coder, planner}; the manager's DONE check can end after any message.
    "classic/notebook_fsm": {None: {
        ("planner", "coder"), ("coder", "runner"), ("runner", "coder"), ("runner", "planner"),
        ("planner", E), ("coder", E), ("runner", E)}},
    # round robin drafter -> checker -> publisher -> drafter (checker opens); the agents'
    # max_consecutive_auto_reply is TF405 only, its comment above that agent's participant.
    "classic/agent_limits": {None: {("drafter", "checker"), ("checker", "publisher"), ("publisher", "drafter")}},
    # -- AutoGen 0.4 -----------------------------------------------------------------------
    # generator -> reviewer; reviewer -> summarizer on APPROVE, -> generator on REVISE, neither:
    # no edge matched (end); summarizer is a leaf (end).
    "autogen/graphflow_review_loop": {None: {
        ("generator", "reviewer"), ("reviewer", "summarizer"), ("reviewer", "generator"), ("reviewer", E),
        ("summarizer", E)}},
    # round robin of two; TextMentionTermination("APPROVE") after any message.
    "autogen/round_robin_reflection": {None: {
        ("primary", "critic"), ("critic", "primary"), ("primary", E), ("critic", E)}},
    # round robin of two; the reviewer's `approve` call ends (FunctionCallTermination); the team's
    # max_turns 8 is below MaxMessageTermination(12) - 1.
    "autogen/round_robin_function_call": {None: {
        ("writer", "reviewer"), ("reviewer", "writer"), ("reviewer", E)}},
    # the selector may pick anyone (allow_repeated_speaker=True); TERMINATE ends after any message.
    "autogen/selector_web_search": {None: {
        (x, y) for x in ("PlanningAgent", "WebSearchAgent", "DataAnalystAgent")
        for y in ("PlanningAgent", "WebSearchAgent", "DataAnalystAgent", E)}},
    # handoffs between the two agents; a handoff to `user` ends (HandoffTermination); no handoff:
    # the same agent again; TERMINATE ends.
    "autogen/swarm_handoff_to_user": {None: {
        ("travel_agent", "flights_refunder"), ("travel_agent", "travel_agent"), ("travel_agent", E),
        ("flights_refunder", "travel_agent"), ("flights_refunder", "flights_refunder"), ("flights_refunder", E)}},
    # source: writer -> {editor1, editor2} (parallel) -> final_reviewer (join) -> end. TF407's
    # documented sequential approximation runs the branches in edge order: writer -> editor1 ->
    # editor2 -> final_reviewer, i.e. writer->editor2 and editor1->final_reviewer become editor1->editor2.
    "autogen/graphflow_fan_out_join": {None: {
        ("writer", "editor1"), ("editor1", "editor2"), ("editor2", "final_reviewer"), ("final_reviewer", E)}},
    # two teams: a one-agent round robin (the agent speaks again; TERMINATE ends; `user` is the
    # added task sender, which only ends), and Magentic-One: the orchestrator may pick anyone,
    # user_proxy's message always ends (SourceMatchTermination, `&` approximated by `|`).
    "autogen/studio_gallery": {
        "RoundRobin_Team": {("assistant_agent", "assistant_agent"), ("assistant_agent", E), ("user", E)},
        "Web_Agent_Team_Operator_": {
            (x, y) for x in ("websurfer_agent", "assistant_agent")
            for y in ("websurfer_agent", "assistant_agent", "user_proxy", E)} | {("user_proxy", E)}},
    # -- AutoGen 0.4 written in Python ----------------------------------------------------------
    # issue 31 (4): round robin writer -> reviewer_view; the filter agent's messages carry the wrapped
    # agent's name, `reviewer`: SourceMatchTermination(["reviewer"]) ends after reviewer_view speaks.
    "autogen/message_filter": {None: {("writer", "reviewer_view"), ("reviewer_view", E)}},
    # issue 31 (5): the inner round robin (EDITED ends it after any message); the outer selector_func:
    # planner -> writing_team, anyone else -> planner; DONE ends after any message.
    "autogen/nested_team": {
        "writing_team": {("drafter", "editor"), ("editor", "drafter"), ("drafter", E), ("editor", E)},
        "team": {("planner", "writing_team"), ("writing_team", "planner"), ("planner", E), ("writing_team", E)}},
    # round robin of two; APPROVE ends after any message (`|` with MaxMessageTermination(10)).
    "autogen/round_robin_python": {None: {("primary", "critic"), ("critic", "primary"), ("primary", E),
                                          ("critic", E)}},
    # selector_func: anyone but the planner -> the planner; after the planner the model picks among
    # candidate_func's list: WebSearchAgent when the planner names it, else all three
    # (allow_repeated_speaker=True); TERMINATE ends after any message.
    "autogen/selector_python": {None: {
        ("PlanningAgent", "PlanningAgent"), ("PlanningAgent", "WebSearchAgent"), ("PlanningAgent", "DataAnalystAgent"),
        ("WebSearchAgent", "PlanningAgent"), ("DataAnalystAgent", "PlanningAgent"),
        ("PlanningAgent", E), ("WebSearchAgent", E), ("DataAnalystAgent", E)}},
    # Swarm: each agent hands off to the other or to the user (HandoffTermination: the end); no
    # handoff: the same agent again; TERMINATE ends.
    "autogen/swarm_python": {None: {
        ("travel_agent", "flights_refunder"), ("travel_agent", "travel_agent"), ("travel_agent", E),
        ("flights_refunder", "travel_agent"), ("flights_refunder", "flights_refunder"), ("flights_refunder", E)}},
    # DiGraphBuilder: generator -> reviewer -> summarizer (lambda: APPROVE) / generator ("REVISE") /
    # archivist (a length test: a routing tool, TF406) / nothing matched (end); leaves end.
    "autogen/graphflow_python": {None: {
        ("generator", "reviewer"), ("reviewer", "summarizer"), ("reviewer", "generator"), ("reviewer", "archivist"),
        ("reviewer", E), ("summarizer", E), ("archivist", E)}},
    # two start nodes (chained: researcher -> outliner), writer joins them, fans out to the two
    # editors (chained, TF407), final_reviewer joins them; its message ends the run
    # (SourceMatchTermination); DONE ends after any message (`&` approximated by `|`).
    "autogen/graphflow_parallel": {None: {
        ("researcher", "outliner"), ("outliner", "writer"), ("writer", "grammar_editor"),
        ("grammar_editor", "style_editor"), ("style_editor", "final_reviewer")} | {
        (x, E) for x in ("researcher", "outliner", "writer", "grammar_editor", "style_editor", "final_reviewer")}},
    # Magentic-One: the orchestrator may pick either participant after each turn.
    "autogen/magentic_python": {None: {(x, y) for x in ("WebSurfer", "Coder") for y in ("WebSurfer", "Coder")}},
    # older Studio gallery (items.teams): a round robin of writer and critic; APPROVE ends.
    "autogen/studio_items_gallery": {None: {("writer", "critic"), ("critic", "writer"), ("writer", E),
                                            ("critic", E)}},
    # -- AG2 patterns ------------------------------------------------------------------------
    # router: context conditions -> tech / finance / the user (`len(...) > 3`), tools ->
    # tech / finance / user, after-work -> user; tech -> user (tool and after-work); finance ->
    # router (LLM condition) / user; the user (no after-work of its own) -> back to whichever agent
    # spoke before it (AG2 determine_next_agent): router, tech or finance.
    "ag2-patterns/context_router": {None: {
        ("router_agent", "tech_specialist"), ("router_agent", "finance_specialist"), ("router_agent", "user"),
        ("tech_specialist", "user"), ("finance_specialist", "router_agent"), ("finance_specialist", "user"),
        ("user", "router_agent"), ("user", "tech_specialist"), ("user", "finance_specialist")}},
    # stage conditions, tools with targets (finalize ends; the revision tool goes to review or
    # entry), StayTarget after-works, user -> initial agent.
    # issue 31 (1): the keyword forms: intake -> tech when escalated (context condition), routing
    # tools to billing and tech, after-work to the user; billing -> intake; tech ends; user -> intake.
    "ag2-patterns/keyword_handoffs": {None: {
        ("intake", "tech"), ("intake", "billing"), ("intake", "user"), ("billing", "intake"), ("tech", E),
        ("user", "intake")}},
    # issue 31 (2): drafter <-> reviewer after-works; the agents' own limits are TF405 only.
    "ag2-patterns/agent_termination": {None: {("drafter", "reviewer"), ("reviewer", "drafter")}},
    "ag2-patterns/feedback_loop": {None: {
        ("entry_agent", "planning_agent"), ("entry_agent", E), ("entry_agent", "user"),
        ("planning_agent", "drafting_agent"), ("planning_agent", "planning_agent"),
        ("drafting_agent", "review_agent"), ("drafting_agent", "drafting_agent"),
        ("review_agent", "revision_agent"), ("review_agent", "review_agent"),
        ("revision_agent", "entry_agent"), ("revision_agent", "review_agent"), ("revision_agent", "revision_agent"),
        ("user", "entry_agent")}},
    # `for specialist in (billing, support): specialist.handoffs.set_after_work(AgentTarget(triage))`,
    # unrolled: billing -> triage, support -> triage; triage has no after-work: the group's default
    # (terminate).
    "ag2-patterns/after_work_loop": {None: {("triage", E), ("billing", "triage"), ("support", "triage")}},
    # legacy swarm: triage -> refund / order (ON_CONDITION), no after-work of its own: the swarm's
    # AFTER_WORK(TERMINATE); refund -> the user (REVERT_TO_USER); order -> triage (ON_CONDITION and
    # AFTER_WORK), -> refund (update_order's SwarmResult); the customer returns to the agent before
    # it, which can only be refund.
    "ag2-patterns/swarm_legacy": {None: {
        ("triage", "refund"), ("triage", "order"), ("triage", E), ("refund", "customer"),
        ("order", "triage"), ("order", "refund"), ("customer", "refund")}},
    # the manager's is_termination_msg can end after any message; triage's classify -> billing /
    # tech / the user (target assigned in branches), no after-work: the default (terminate);
    # billing: `billing.functions = [close_ticket]` after construction registers no tool in AG2
    # (TF409), so billing only hands back to the user (after-work); tech: escalate ->
    # supervisor (register_function), after-work -> user; supervisor -> triage; the customer
    # returns to whichever of triage, billing, tech spoke before it.
    "ag2-patterns/tool_routing": {None: {
        ("triage", "billing"), ("triage", "tech"), ("triage", "customer"), ("billing", "customer"),
        ("tech", "supervisor"), ("tech", "customer"), ("supervisor", "triage"),
        ("customer", "triage"), ("customer", "billing"), ("customer", "tech")} | {
        (x, E) for x in ("triage", "billing", "tech", "supervisor", "customer")}},
    # context expressions with comparisons: intake -> escalation (`> 2 or >= 3`) / solver
    # (`len() > 0 and not`), after-work -> the customer; solver -> closer (`!= & !(<)`) / the
    # customer; escalation -> end (`0 < x <= 5 | len() == 0`) / the customer; closer: the group's
    # after-work (terminate); the customer returns to whichever of intake, solver, escalation
    # spoke before it.
    "ag2-patterns/context_compare": {None: {
        ("intake", "escalation"), ("intake", "solver"), ("intake", "customer"), ("solver", "closer"),
        ("solver", "customer"), ("escalation", E), ("escalation", "customer"), ("closer", E),
        ("customer", "intake"), ("customer", "solver"), ("customer", "escalation")}},
    # router -> billing when domain is billing (register_handoffs: a context condition), -> tech
    # (its LLM condition), after-work -> the user; tech -> billing (register_handoff: an LLM
    # condition), after-work -> router; billing -> router; only router hands over to the user,
    # who returns to it.
    "ag2-patterns/register_handoffs": {None: {
        ("router", "billing"), ("router", "tech"), ("router", "user"), ("tech", "billing"), ("tech", "router"),
        ("billing", "router"), ("user", "router")}},
    # one block (not a second copy of main's chat): intake -> solver (LLM condition), after-work ->
    # the customer, who returns to intake; solver -> intake.
    "ag2-patterns/main_function": {None: {
        ("intake", "solver"), ("intake", "customer"), ("solver", "intake"), ("customer", "intake")}},
    # RandomPattern: every agent, the user included, hands over to a random other one.
    "ag2-patterns/random_pattern": {None: {
        (x, y) for x in ("poet", "critic", "editor", "user") for y in ("poet", "critic", "editor", "user")
        if x != y}},
    # fixed order outliner -> writer -> editor -> user -> outliner (the user is last in the rotation).
    "ag2-patterns/round_robin_pattern": {None: {
        ("outliner", "writer"), ("writer", "editor"), ("editor", "user"), ("user", "outliner")}},
    # the group manager may pick any agent (the user included) after each agent, the agent that just
    # spoke too: AG2's pattern GroupChat keeps allow_repeat_speaker=None, which GroupChat turns into
    # True; the user goes back to the agent that spoke before it, which can be any of them.
    "ag2-patterns/auto_pattern": {None: {
        (x, y) for x in ("triage_agent", "tech_agent", "general_agent", "user")
        for y in ("triage_agent", "tech_agent", "general_agent", "user") if x != y or x != "user"}},
}


# --------------------------------------------------------------------------
#  A tiny reference edge extractor (docs/analysis.md) over the emitted AST
# --------------------------------------------------------------------------
def reference_edges(block: ast.Block) -> set[tuple[str, str]]:
    parts = [p.name.name for p in block.participants]
    owned: dict[str, set[str]] = {p.name.name: {t.name for t in (p.tools or [])} for p in block.participants}
    for st in block.statements:
        if isinstance(st, ast.Handoff):
            owned.setdefault(st.source.name, set()).add(st.tool.name)
    declares_tools = any(owned.values())
    initiators = [p.name.name for p in block.participants if p.role == "initiator"]
    rules = sorted(enumerate(block.rules), key=lambda ir: (
        (ir[1].priority.value if isinstance(ir[1], ast.Rule) and ir[1].priority else 0), ir[0]))
    otherwise = next((s for s in block.statements if isinstance(s, ast.Otherwise)), None)

    def resolve(s: str, t: ast.Target) -> list[str]:
        if t.kind == "participant":
            return [t.name.name]
        if t.kind == "terminate":
            return [END]
        if t.kind == "stay":
            return [s]
        if t.kind == "next":
            return [parts[(parts.index(s) + 1) % len(parts)]]
        if t.kind == "previous":  # who can speak right before s: resolved after the other edges
            return []
        return initiators[:1] or list(parts)

    edges = set()
    for s in parts:
        always = False
        for _, r in rules:
            if isinstance(r, ast.Handoff):
                src, terms = r.source.name, [ast.ToolTerm(span=r.span, tool=r.tool)]
            else:
                src, terms = (r.source.name if r.source else None), r.terms
            if src is not None and src != s:
                continue
            if any(isinstance(t, ast.ToolTerm) and declares_tools and t.tool.name not in owned.get(s, set())
                   for t in terms):
                continue
            edges.update((s, x) for x in resolve(s, r.target))
            if not terms:
                always = True
                break
        if not always:
            target = otherwise.target if otherwise else ast.Target(span=block.span, kind="terminate")
            edges.update((s, x) for x in resolve(s, target))
    # `previous` after s: every participant with an edge into s (and, on the first turn, the one
    # after `start`), until nothing changes
    previous = {r.source.name if r.source else None for r in block.rules
                if not isinstance(r, ast.Handoff) and r.target.kind == "previous"}
    previous |= {r.source.name for r in block.rules if isinstance(r, ast.Handoff) and r.target.kind == "previous"}
    if otherwise is not None and otherwise.target.kind == "previous":
        previous.add(None)
    start = next((st.name.name for st in block.statements if isinstance(st, ast.Start)), None)
    sources = set(parts) if None in previous else previous
    changed = True
    while changed:
        changed = False
        for s in sources:
            new = {(s, p) for p, q in edges if q == s and p in parts}
            if s == start:
                new.add((s, parts[(parts.index(s) + 1) % len(parts)]))
            if not new <= edges:
                edges |= new
                changed = True
    return edges


def graph_edges(block: ast.Block) -> set[tuple[str, str]]:
    """The project's speaker graph when issue 3 has landed, else the reference extractor."""
    try:
        from turnflow.compiler.speaker_graph import build_graph
    except ImportError:
        return reference_edges(block)
    return set(build_graph(block).speaker_edges())


def render(diags) -> str:
    return "".join(f"{d.path}:{d.span.line}:{d.span.column}: {d.code} {d.severity}: {d.message}\n"
                   for d in diags)


def _key(case: Path) -> str:
    return f"{case.parent.name}/{case.stem}"


@pytest.mark.parametrize("case", CASES, ids=[_key(c) for c in CASES])
def test_migrate_fixture(case: Path, update_goldens):
    text = case.read_text(encoding="utf-8")
    family = case.parent.name
    assert detect(text) == FAMILIES[family]
    result = migrate(text, case.name)
    # the migrated flow parses, checks, compiles
    flow = turnflow.parse(result.text, path=case.stem + ".flow")
    flow_diags = turnflow.check(result.text, path=case.stem + ".flow")
    assert not [d for d in flow_diags if d.severity == "error"], render(flow_diags)
    compile_ = getattr(turnflow, "compile", None)
    if compile_ is not None:  # issue 4: runs once turnflow.compile is on the branch
        specs = compile_(result.text, path=case.stem + ".flow")
        assert [s["name"] for s in specs] == [b.name.name for b in flow.blocks]
    # goldens: the text and every diagnostic
    check_golden(case.with_suffix(".flow"), result.text, update_goldens)
    # (the golden holds the migration's own TF4xx diagnostics; `turnflow check`'s findings on the
    # migrated flow grow with the rule catalogue, so they are asserted error-free above, not pinned)
    check_golden(case.with_suffix(".expected"), render(result.diagnostics), update_goldens)
    # every TF4xx diagnostic is also a comment in the flow, with its input position
    lines = text.splitlines()
    comments = " ".join(c.text.lstrip("# ") for c in flow.comments)
    cited = {(code, pos.strip()) for code, where in re.findall(r"(TF4\d\d): .*?\(input ([0-9:, cel]+)\)", comments)
             for pos in where.split(",")}
    for d in result.diagnostics:
        assert d.code.startswith("TF4")
        assert 1 <= d.span.line <= len(lines) and 1 <= d.span.column <= len(lines[d.span.line - 1]) + 1
        # in a notebook, the cell and the line in it (as the diagnostic prints), else the file's line
        where = f"cell {d.cell.cell}:{d.cell.line}:{d.cell.column}" if d.cell else f"{d.span.line}:{d.span.column}"
        assert (d.code, where) in cited, d
    # the speaker graph equals the source's, edge for edge
    expected = EDGES.get(_key(case))
    assert expected is not None, f"add the source's edges for {_key(case)} to EDGES"
    for block in flow.blocks:
        want = expected.get(block.name.name, expected.get(None))
        assert want is not None, block.name.name
        got = graph_edges(block)
        assert got == want, f"{block.name.name}: extra {sorted(got - want)}, missing {sorted(want - got)}"
        assert reference_edges(block) == want


@pytest.mark.parametrize("case", CASES, ids=[_key(c) for c in CASES])
def test_migrate_is_deterministic_and_idempotent_under_fmt(case: Path):
    text = case.read_text(encoding="utf-8")
    first = migrate(text, case.name).text
    assert migrate(text, case.name).text == first
    # the printed flow is already canonical: `turnflow fmt` would not change it
    from turnflow.dsl.printer import format_flow

    assert format_flow(turnflow.parse(first)) == first


@pytest.mark.parametrize("case", ERRORS, ids=[c.stem for c in ERRORS])
def test_unsupported_input_is_refused_with_a_position(case: Path, tmp_path, capsys, update_goldens):
    out = tmp_path / "out.flow"
    code = main(["migrate", str(case), "-o", str(out), "--format", "json"])
    assert code == 1
    assert not out.exists()
    diags = json.loads(capsys.readouterr().out)
    assert diags and all(d["code"] == "TF401" and d["line"] >= 1 and d["column"] >= 1 for d in diags)
    check_golden(case.with_suffix(".expected"),
                 "".join(f"{d['line']}:{d['column']}: {d['code']} {d['severity']}: {d['message']}\n" for d in diags),
                 update_goldens)


# --------------------------------------------------------------------------
#  The command
# --------------------------------------------------------------------------
def test_cli_writes_the_flow_and_reports_like_check(tmp_path, capsys):
    case = ROOT / "classic" / "fsm_allowed.py"
    out = tmp_path / "fsm.flow"
    assert main(["migrate", str(case), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{case}:60:24: TF405 warning:" in printed
    assert "^" in printed  # caret under the input span, like `turnflow check`
    assert out.read_text(encoding="utf-8") == migrate(case.read_text(encoding="utf-8"), str(case)).text
    assert main(["check", str(out)]) == 0


def test_cli_stdout_holds_only_the_flow(capsys):
    case = ROOT / "autogen" / "graphflow_review_loop.json"
    assert main(["migrate", str(case)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# Migrated by `turnflow migrate`")
    turnflow.parse(captured.out)
    assert "Migrated" in captured.err


def test_cli_from_overrides_detection(tmp_path, capsys):
    case = ROOT / "classic" / "fsm_allowed.py"
    assert main(["migrate", str(case), "--from", "autogen"]) == 1
    assert "TF401" in capsys.readouterr().err


def test_cli_missing_input_is_a_usage_error(tmp_path, capsys):
    assert main(["migrate", str(tmp_path / "nope.py")]) == 2


def test_cli_never_overwrites_on_failure(tmp_path, capsys):
    out = tmp_path / "keep.flow"
    out.write_text("workflow keep {}\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("from autogen import GroupChat\nchat = GroupChat(agents=[\n", encoding="utf-8")
    assert main(["migrate", str(bad), "-o", str(out)]) == 1
    assert out.read_text(encoding="utf-8") == "workflow keep {}\n"


def test_python_module_entry_point(tmp_path):
    repo = Path(__file__).parent.parent
    case = ROOT / "autogen" / "graphflow_review_loop.json"
    proc = subprocess.run([sys.executable, "-m", "turnflow", "migrate", str(case), "-q"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(repo / "src")}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "workflow GraphFlow" in proc.stdout


def test_rule_docs_for_every_tf4xx_code():
    from turnflow.diagnostics.registry import get_rule

    for code in ["TF401", "TF402", "TF403", "TF404", "TF405", "TF406", "TF407", "TF408", "TF409"]:
        info = get_rule(code)
        assert info is not None and info.check is None, code
        assert info.name.startswith("migrate-"), code


@pytest.mark.parametrize("case", CASES[::3], ids=[_key(c) for c in CASES[::3]])
def test_cli_reports_migration_and_check_diagnostics(case: Path, tmp_path, capsys):
    out = tmp_path / "out.flow"
    assert main(["migrate", str(case), "-o", str(out), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    result = migrate(case.read_text(encoding="utf-8"), str(case))
    expected = [d.to_json() for d in result.diagnostics]
    expected += [d.to_json() for d in turnflow.check(out.read_text(encoding="utf-8"), path=str(out))]
    assert printed == expected


def test_cli_json_diagnostics_with_output_file(tmp_path, capsys):
    case = ROOT / "autogen" / "graphflow_fan_out_join.json"
    out = tmp_path / "fan.flow"
    assert main(["migrate", str(case), "-o", str(out), "--format", "json"]) == 0
    diags = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["line"], d["column"]) for d in diags if d["code"].startswith("TF4")] == [
        ("TF407", 171, 19), ("TF407", 213, 27)]  # the fan-out at `writer`, the join at `final_reviewer`
    assert out.exists()


def test_migrated_feedback_loop_runs_on_the_turnflow_runtime(tmp_path, capsys):
    """lint, draw, compile and *run*: the migrated AG2 feedback loop, with scripted agents, follows
    the stages its context conditions and tools define and ends through `finalize_document`."""
    flow = tmp_path / "feedback.flow"
    assert main(["migrate", str(ROOT / "ag2-patterns" / "feedback_loop.py"), "-o", str(flow), "-q"]) == 0
    agents = tmp_path / "agents.yaml"
    agents.write_text("""agents:
  entry_agent:
    kind: scripted
    steps:
      - {say: "Starting.", set: {loop_started: true, current_stage: "planning"}}
      - {say: "Final version.", tool: finalize_document}
  planning_agent: {kind: scripted, steps: [{say: "Outline.", set: {current_stage: "drafting"}}]}
  drafting_agent: {kind: scripted, steps: [{say: "Draft v1.", set: {current_stage: "review"}}]}
  review_agent: {kind: scripted, steps: [{say: "Tighten it.", set: {current_stage: "revision"}}]}
  revision_agent: {kind: scripted, steps: [{say: "Draft v2.", tool: submit_revised_document_to_entry_agent}]}
  user: {kind: scripted, steps: [{say: "unused"}]}
""", encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(flow), "--agents", str(agents), "--task", "Write an essay", "--format", "json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert [t["speaker"] for t in run["turns"]] == ["entry_agent", "planning_agent", "drafting_agent",
                                                    "review_agent", "revision_agent", "entry_agent"]
    assert run["close_reason"] == "after_work"


def test_builder_emits_comparisons_or_not_and_previous():
    """The front ends' builder takes the new condition forms and the target `previous`, and the
    result is a flow that checks and compiles to the extensions."""
    from turnflow.migrate.common import FlowBuilder, render

    b = FlowBuilder("w")
    for p in ("user", "agent"):
        b.participant(p)
    b.start("agent")
    b.max_turns(10)
    b.rule("user", ("previous",))
    b.rule("agent", ("terminate", "done"), [("any", [("compare", "tries", ">=", 3), ("not", ("text", "MORE"))])])
    b.rule("agent", "user", [("compare", "notes", ">", 0, True)])
    out = render([b], [], "x.py", None, "ag2")
    assert "user  -> previous" in out.text
    assert 'when context.tries >= 3 or not text contains "MORE"' in out.text
    assert "when len(context.notes) > 0" in out.text
    graph = turnflow.compile(out.text)[0]["knobs"]["graph"]
    assert {"previous_speaker"} <= {t["then"]["name"] for t in graph["transitions"]}
