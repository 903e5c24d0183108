"""What migrate's messages say (issue 31, observation 6): each message names what the source does,
not a guess — a context value known only at run time is not "a list or dict", a function's
parameter holds its caller's argument (no NameError), a chat started by `initiate_chats` has that
sender as initiator, and a `selector_func` returning a name that is not a participant (AutoGen
raises ValueError there) is a finding."""

from __future__ import annotations

import textwrap

from turnflow.migrate import migrate


def _run(source: str, name: str = "case.py"):
    result = migrate(textwrap.dedent(source), name)
    return result, [(d.code, d.span.line, d.message) for d in result.diagnostics]


def test_a_context_value_known_at_run_time_is_not_called_a_list_or_dict():
    _, diags = _run('''
        import os
        from autogen import ConversableAgent
        from autogen.agentchat import initiate_group_chat
        from autogen.agentchat.group import AgentTarget, ContextVariables
        from autogen.agentchat.group.patterns import DefaultPattern

        a = ConversableAgent(name="a")
        b = ConversableAgent(name="b")
        a.handoffs.set_after_work(AgentTarget(b))
        ctx = ContextVariables(data={"lang": os.environ.get("LANG", "en"), "items": [], "n": 1})
        pattern = DefaultPattern(initial_agent=a, agents=[a, b], context_variables=ctx)
        initiate_group_chat(pattern=pattern, messages="x", max_rounds=5)
        ''')
    tf409 = {m.split("`")[1]: m for code, _, m in diags if code == "TF409"}
    assert "known only when the program runs" in tf409["lang"] and "list" not in tf409["lang"]
    assert "starts as a list" in tf409["items"]
    assert "n" not in tf409


def test_a_parameter_bound_in_one_branch_holds_the_callers_argument_otherwise():
    _, diags = _run('''
        from autogen import AssistantAgent, GroupChat, GroupChatManager


        def build(critic, strict):
            writer = AssistantAgent(name="writer")
            if strict:
                critic = AssistantAgent(name="strict_critic")
            chat = GroupChat(agents=[writer, critic], messages=[], max_round=6)
            return GroupChatManager(groupchat=chat)
        ''')
    (message,) = [m for code, _, m in diags if code == "TF410"]
    assert "the argument passed for the parameter `critic`" in message
    assert "NameError" not in message


def test_a_name_bound_in_one_branch_only_still_says_name_error():
    _, diags = _run('''
        import sys
        from autogen import AssistantAgent, GroupChat

        writer = AssistantAgent(name="writer")
        if "--strict" in sys.argv:
            critic = AssistantAgent(name="strict_critic")
        chat = GroupChat(agents=[writer, critic], messages=[], max_round=6)
        ''')
    (message,) = [m for code, _, m in diags if code == "TF410"]
    assert "NameError" in message


CHATS = '''
    import autogen
    from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

    user = UserProxyAgent(name="user", code_execution_config=False)
    writer = AssistantAgent(name="writer")
    critic = AssistantAgent(name="critic")
    chat = GroupChat(agents=[writer, critic], messages=[], max_round=6, speaker_selection_method="round_robin")
    manager = GroupChatManager(groupchat=chat)
    {start}
    '''


def test_a_chat_started_by_initiate_chats_has_that_sender_as_initiator():
    for start in ('user.initiate_chats([{"recipient": manager, "message": "go"}])',
                  'autogen.initiate_chats([{"sender": user, "recipient": manager, "message": "go"}])'):
        result, diags = _run(CHATS.format(start=start))
        assert "participant user initiator" in result.text and "start user" in result.text, start
        assert not [m for code, _, m in diags if code == "TF408"], start


def test_no_start_found_says_what_was_looked_for():
    _, diags = _run(CHATS.format(start="run(manager)"))
    (message,) = [m for code, _, m in diags if code == "TF408"]
    assert "initiate_chats" in message and "assumed the first agent, `writer`" in message


def test_a_selector_returning_a_name_that_is_no_participant_is_a_finding():
    result, diags = _run('''
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.teams import SelectorGroupChat
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        client = OpenAIChatCompletionClient(model="gpt-4o")
        planner = AssistantAgent("planner", model_client=client)
        coder = AssistantAgent("coder", model_client=client)


        def pick(messages):
            if messages[-1].source == "planner":
                return "Coder"
            return None


        team = SelectorGroupChat([planner, coder], model_client=client, selector_func=pick)
        ''')
    (hit,) = [(line, m) for code, line, m in diags if code == "TF408"]
    assert hit[0] == 13 and "`Coder`, which is not a participant" in hit[1] and "ValueError" in hit[1]


def test_a_source_match_on_no_participant_is_a_finding_not_silence():
    """Issue 31 (4): a SourceMatchTermination naming neither a participant nor a wrapped agent
    never fires on the team's turns; it was dropped without a word."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "migrate" / "autogen" / "message_filter.py").read_text(
        encoding="utf-8").replace('SourceMatchTermination(sources=["reviewer"])', 'SourceMatchTermination(sources=["nobody"])')
    result, diags = _run(text, "team.py")
    (message,) = [m for code, _, m in diags if code == "TF405" and "nobody" in m]
    assert "not a participant" in message
    assert "terminate" not in result.text.split("max_turns", 1)[1].split("* -> next")[0]


def test_initiate_chat_max_turns_is_a_finding_at_the_argument():
    """`initiate_chat(manager, max_turns=2)` runs the group chat again after the initiator replies
    (AG2's initiate_chat loop); the flow shows one run: TF405 at `max_turns`, not silence."""
    _, diags = _run(CHATS.format(start='user.initiate_chat(manager, message="go", max_turns=2)'))
    (hit,) = [(line, m) for code, line, m in diags if code == "TF405"]
    assert hit[0] == 10 and "`max_turns`" in hit[1] and "runs again" in hit[1]


def test_a_tool_given_by_functions_is_run_by_its_executor_next():
    """Issue 31 (3), the constructor form: `ConversableAgent(functions=[f])` registers `f` for the
    model (AG2's _add_single_function); the agent whose function_map runs it speaks after the call."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "migrate" / "classic" / "tool_executor.py").read_text(encoding="utf-8")
    text = text.replace("@executor.register_for_execution()\n@analyst.register_for_llm(description=\"The current price "
                        "of a product.\")\n", "")
    text = text.replace('analyst = AssistantAgent(name="analyst", llm_config=llm_config, system_message="Price the '
                        'order; call tools.")', "")
    text = text.replace("\n\nchat = GroupChat(", '\n\nanalyst = AssistantAgent(name="analyst", llm_config=llm_config, '
                        'functions=[lookup_price])\nexecutor.register_for_execution()(lookup_price)\n\nchat = GroupChat(')
    result, _ = _run(text)
    assert 'handoff analyst -> executor via lookup_price' in result.text, result.text


def test_a_tool_several_agents_run_is_a_finding_not_an_edge():
    """With two executors AG2 picks among them after the call (by its rules): no single handoff."""
    from pathlib import Path

    text = (Path(__file__).parent / "fixtures" / "migrate" / "classic" / "tool_executor.py").read_text(encoding="utf-8")
    text = text.replace("@executor.register_for_execution()\n", "@executor.register_for_execution()\n"
                        "@writer.register_for_execution()\n")
    text = text.replace('writer = AssistantAgent(name="writer", llm_config=llm_config, system_message="Write the quote.")\n',
                        "")
    text = text.replace("executor = ConversableAgent(", 'writer = AssistantAgent(name="writer", llm_config=llm_config)\n'
                        "executor = ConversableAgent(")
    result, diags = _run(text)
    assert "handoff analyst" not in result.text
    assert [m for code, _, m in diags if code == "TF406" and "picks among them" in m]
