"""How `turnflow migrate` scales with the number of agents (issue 25, item 7).

    PYTHONPATH=src python3 bench/migrate_agents.py [--sizes 1000,2000,4000,8000] [--kind classic|everyone|pattern|all]

Two generated sources of N agents each, the shapes real programs have, only larger:
- classic: a GroupChat of N ConversableAgents whose allowed speaker transitions are
  a dict (agent i may hand the floor to i+1 and i+2);
- everyone: the same chat with no transitions dict (`speaker_selection_method="auto"`): every
  agent may follow every other, each speaker gets the 32 nearest as routing tools;
- pattern: an AG2 DefaultPattern of N ConversableAgents, each with an LLM handoff to
  the next agent and an after-work target back to the first.
Prints, per size, the CPU time of `turnflow.migrate.migrate` (the command's work
minus the check of the migrated flow, measured apart; both with the cyclic GC paused, as the
command runs them) and the time per agent:
a flat time per agent is linear scaling, a growing one is not.
"""

from __future__ import annotations

import argparse
import time


def classic_source(n: int) -> str:
    lines = ["import autogen", "from autogen import ConversableAgent, GroupChat, GroupChatManager", ""]
    lines += [f"a{i} = ConversableAgent(name='agent_{i}', description='Agent number {i}.', llm_config=False)"
              for i in range(n)]
    lines.append("graph = {")
    lines += [f"    a{i}: [a{(i + 1) % n}, a{(i + 2) % n}]," for i in range(n)]
    lines.append("}")
    lines.append("gc = GroupChat(agents=[" + ", ".join(f"a{i}" for i in range(n)) + "], messages=[], max_round=50,")
    lines.append("               allowed_or_disallowed_speaker_transitions=graph,")
    lines.append("               speaker_transitions_type='allowed')")
    lines.append("manager = GroupChatManager(groupchat=gc)")
    lines.append("a0.initiate_chat(manager, message='go')")
    return "\n".join(lines) + "\n"


def everyone_source(n: int) -> str:
    lines = ["from autogen import ConversableAgent, GroupChat, GroupChatManager", ""]
    lines += [f"a{i} = ConversableAgent(name='agent_{i}', description='Agent number {i}.', llm_config=False)"
              for i in range(n)]
    lines.append("gc = GroupChat(agents=[" + ", ".join(f"a{i}" for i in range(n)) + "], messages=[], max_round=50,")
    lines.append("               allow_repeat_speaker=False)")
    lines.append("manager = GroupChatManager(groupchat=gc, is_termination_msg=lambda m: 'DONE' in m['content'])")
    lines.append("a0.initiate_chat(manager, message='go')")
    return "\n".join(lines) + "\n"


def pattern_source(n: int) -> str:
    lines = ["from autogen import ConversableAgent, LLMConfig",
             "from autogen.agentchat import initiate_group_chat",
             "from autogen.agentchat.group import AgentTarget, OnCondition, StringLLMCondition",
             "from autogen.agentchat.group.patterns import DefaultPattern", "",
             "llm_config = LLMConfig(api_type='openai', model='gpt-4o-mini')", "",
             "with llm_config:"]
    lines += [f"    a{i} = ConversableAgent(name='agent_{i}', system_message='Agent number {i}.')" for i in range(n)]
    lines.append("")
    for i in range(n):
        lines.append(f"a{i}.handoffs.add_llm_conditions([OnCondition(target=AgentTarget(a{(i + 1) % n}), "
                     f"condition=StringLLMCondition(prompt='Pass to agent {(i + 1) % n}.'))])")
        lines.append(f"a{i}.handoffs.set_after_work(AgentTarget(a0))")
    lines.append("pattern = DefaultPattern(initial_agent=a0, agents=[" + ", ".join(f"a{i}" for i in range(n)) + "])")
    lines.append("initiate_group_chat(pattern=pattern, messages='go', max_rounds=50)")
    return "\n".join(lines) + "\n"


def graphflow_source(n: int) -> str:
    """An AgentChat GraphFlow: the first agent fans out to every other one (parallel branches)."""
    lines = ["from autogen_agentchat.agents import AssistantAgent",
             "from autogen_agentchat.conditions import MaxMessageTermination",
             "from autogen_agentchat.teams import DiGraphBuilder, GraphFlow",
             "from autogen_ext.models.openai import OpenAIChatCompletionClient", "",
             "client = OpenAIChatCompletionClient(model='gpt-4.1-nano')"]
    lines += [f"a{i} = AssistantAgent('agent_{i}', model_client=client, system_message='Agent number {i}.')"
              for i in range(n)]
    lines.append("builder = DiGraphBuilder()")
    lines += [f"builder.add_node(a{i})" for i in range(n)]
    lines += [f"builder.add_edge(a0, a{i})" for i in range(1, n)]
    lines.append("builder.set_entry_point(a0)")
    lines.append("flow = GraphFlow(participants=builder.get_participants(), graph=builder.build(), "
                 "termination_condition=MaxMessageTermination(20))")
    return "\n".join(lines) + "\n"


SOURCES = {"classic": classic_source, "everyone": everyone_source, "pattern": pattern_source,
           "graphflow": graphflow_source}


def measure(kind: str, n: int) -> tuple[float, float, int]:
    """(migrate CPU s, check-of-the-result CPU s, flow lines) for a generated source of n agents."""
    from turnflow.compiler.pipeline import check
    from turnflow.dsl.parser import gc_paused
    from turnflow.migrate import migrate

    text = SOURCES[kind](n)
    t0 = time.process_time()
    with gc_paused():  # as `turnflow migrate` runs it (turnflow/cli/commands/migrate.py)
        result = migrate(text, f"{kind}_{n}.py")
    t1 = time.process_time()
    with gc_paused():
        check(result.text, path="<migrated>")
    t2 = time.process_time()
    return t1 - t0, t2 - t1, result.text.count("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000")
    parser.add_argument("--kind", choices=(*SOURCES, "all"), default="all")
    args = parser.parse_args()
    from turnflow import process

    process.enable_cli_switches()  # the switches `turnflow migrate` turns on for its own process
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds = tuple(SOURCES) if args.kind == "all" else (args.kind,)
    print(f"{'kind':>8} {'agents':>7} {'lines':>7} {'migrate s':>10} {'ms/agent':>9} {'check s':>8} {'ms/agent':>9}")
    for kind in kinds:
        for n in sizes:
            mig, chk, lines = measure(kind, n)
            print(f"{kind:>8} {n:>7} {lines:>7} {mig:>10.2f} {1000 * mig / n:>9.3f} {chk:>8.2f} {1000 * chk / n:>9.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
