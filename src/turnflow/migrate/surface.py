"""The reading surface of `turnflow migrate`: every parameter of every framework call the front
ends recognise, and how the migrator treats it.

Each parameter is *read* (and the text says where it goes in the flow), *irrelevant* to who
speaks next (and the text says why), or *not modelled*: the framework does something with it
that can change the order of turns and the flow does not say, so an argument given to it is a
finding at the argument (its TF4xx code is in the table). The parameter lists (names, order,
kinds, which are required) are those of `inspect.signature` in the installed frameworks —
`tests/test_migrate_surface.py` derives them from AG2 0.9 (the classic `autogen` package) and
autogen-agentchat 0.7 and fails on any parameter this table does not classify — and `bind`
applies them to a call as Python would (`inspect.Signature.bind` on the AST): positional and
keyword forms are one form, `*args` / `**kwargs` and a call that does not bind are findings
(TF411). docs/migrate.md holds the table as `markdown()` prints it.
"""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass, field
from typing import Optional

READ, IRRELEVANT, NOT_MODELLED = "read", "irrelevant", "not modelled"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str      # "/" positional-only, "p" positional or keyword, "k" keyword-only, "*", "**"
    required: bool
    how: str       # READ, IRRELEVANT or NOT_MODELLED
    why: str       # where it goes / why it does not matter / what the framework does with it
    code: str = ""  # the finding's code when NOT_MODELLED


@dataclass(frozen=True)
class Api:
    family: str    # "ag2" (AG2 0.9, the classic `autogen` package) or "agentchat" (autogen-agentchat 0.7)
    name: str      # as the front ends recognise it: "GroupChat", "Handoffs.add_llm_condition"
    target: str    # module:qualname of the framework object (for the surface test)
    params: tuple[Param, ...]
    base: str = ""  # the Api its `**kwargs` go to
    method: bool = False  # a method (Python counts `self` in its errors)
    note: str = ""  # for a call without parameters: how it is read
    init: str = ""  # the class whose `__init__` Python names in its errors, when not this one (pydantic models)


API: dict[tuple[str, str], Api] = {}
# classes that are pydantic models without an `__init__` of their own: Python's TypeError names
# `BaseModel.__init__()`
_PYDANTIC = {"OnCondition", "OnContextCondition", "StringContextCondition", "ReplyResult", "GroupManagerTarget",
             "Handoff"}

# ---------------------------------------------------------------------------------------------
#  Reasons used more than once
# ---------------------------------------------------------------------------------------------
_PROMPT = "what the agent says, not who speaks next"
_MODEL = "the model and its settings: what the agent says, not who speaks next"
_PRINT = "what is printed, not who speaks next"
_RUNTIME = "where the team runs, not who speaks next"
_TYPES = "which message types the team accepts, not who speaks next"
_EVENTS = "which events the team emits, not who speaks next"
_SUMMARY = "the chat's summary after it ends, not who speaks next"


def _api(family: str, name: str, target: str, table: str, base: str = "", method: bool = False,
         note: str = "") -> None:
    init = "BaseModel" if name in _PYDANTIC else ""
    """One row per parameter: `NAME KIND HOW TEXT`, KIND one of / p k * ** (a trailing `!`: required),
    HOW `read`, `irr` or a TF4xx code (not modelled)."""
    params = []
    rows: list[str] = []
    for line in filter(str.strip, table.splitlines()):
        if line[:1].isspace() and rows:  # an indented line continues the row above
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    for line in rows:
        pname, kind, how, why = line.split(None, 3)
        code = how if how.startswith("TF4") else ""
        params.append(Param(pname, kind.rstrip("!"), kind.endswith("!"),
                            READ if how == "read" else NOT_MODELLED if code else IRRELEVANT, why, code))
    API[(family, name)] = Api(family, name, target, tuple(params), base, method, note, init)


# ---------------------------------------------------------------------------------------------
#  AG2 0.9: agents (ConversableAgent and its subclasses), GroupChat, GroupChatManager
# ---------------------------------------------------------------------------------------------
_api("ag2", "ConversableAgent", "autogen:ConversableAgent", f"""
name p! read the participant's name
system_message p irr {_PROMPT}
is_termination_msg p TF405 when the agent is picked to reply to a message the test matches, AG2 ends the chat
    (human_input_mode NEVER) or asks a person, whose empty answer ends it; a classic chat reads it as
    `terminate when` rules where the test reads as one, a pattern's flow has no such rule
max_consecutive_auto_reply p TF405 when the agent is picked once more after this many automatic replies in the chat,
    AG2 ends the chat (human_input_mode NEVER) or asks a person, who may end it; the flow has no such limit
human_input_mode p irr who writes the agent's reply (a person or the model), not who is picked
function_map p irr how the agent runs the tools it is asked to run
code_execution_config p irr how code in a reply is run
llm_config p irr {_MODEL}
default_auto_reply p irr {_PROMPT}
description p read the participant's description (and the selector's prompt)
chat_messages p irr the history the agent starts with
silent p irr {_PRINT}
context_variables p irr the agent's own context; a pattern gives every agent the pattern's (read there)
functions p read the tools offered to the agent's model: routing tools in patterns (ReplyResult targets); in a
    classic chat the agent that runs one speaks after it is called (`func_call_filter`)
update_agent_state_before_reply p irr changes the prompt before each reply
handoffs p TF408 handoffs given to the constructor; read only through `agent.handoffs.<method>(...)`
""")
_AGENT_KW = "kwargs ** irr forwarded to ConversableAgent: each keyword is classified there"
_api("ag2", "AssistantAgent", "autogen:AssistantAgent", f"""
name p! read the participant's name
system_message p irr {_PROMPT}
llm_config p irr {_MODEL}
is_termination_msg p TF405 as ConversableAgent's
max_consecutive_auto_reply p TF405 as ConversableAgent's
human_input_mode p irr as ConversableAgent's
description p read the participant's description
{_AGENT_KW}
""", base="ConversableAgent")
_api("ag2", "UserProxyAgent", "autogen:UserProxyAgent", f"""
name p! read the participant's name
is_termination_msg p TF405 as ConversableAgent's
max_consecutive_auto_reply p TF405 as ConversableAgent's
human_input_mode p irr as ConversableAgent's
function_map p irr as ConversableAgent's
code_execution_config p irr as ConversableAgent's
default_auto_reply p irr {_PROMPT}
llm_config p irr {_MODEL}
system_message p irr {_PROMPT}
description p read the participant's description
{_AGENT_KW}
""", base="ConversableAgent")
_SELECTOR = "the prompt of the LLM that picks the speaker (TF403 says the flow's choice is the LLM's)"
_api("ag2", "GroupChat", "autogen:GroupChat", f"""
agents p! read the participants, in order (the rotation of round_robin)
messages p irr the history the chat starts with
max_round p read `max_turns`
admin_name p irr the name used when a person interrupts, not the order of turns
func_call_filter p read after a tool call, the agent that runs the tool speaks next (read with `register_for_execution`)
speaker_selection_method p read the selection rules (`next`, `any`, routing tools)
max_retries_for_selecting_speaker p irr how often the picking LLM is asked again (TF403)
allow_repeat_speaker p read whether a speaker may follow itself
allowed_or_disallowed_speaker_transitions p read the edges of the speaker graph
speaker_transitions_type p read whether the dict is allowed or disallowed transitions
enable_clear_history p irr lets a person clear the history
send_introductions p irr {_PROMPT}
select_speaker_message_template p irr {_SELECTOR}
select_speaker_prompt_template p irr {_SELECTOR}
select_speaker_auto_multiple_template p irr {_SELECTOR}
select_speaker_auto_none_template p irr {_SELECTOR}
select_speaker_transform_messages p irr {_SELECTOR}
select_speaker_auto_verbose p irr {_PRINT}
select_speaker_auto_model_client_cls p irr {_SELECTOR}
select_speaker_auto_llm_config p irr {_SELECTOR}
role_for_select_speaker_messages p irr {_SELECTOR}
""")
_api("ag2", "GroupChatManager", "autogen:GroupChatManager", f"""
groupchat p! read the group chat it runs
name p irr the manager is not a participant
max_consecutive_auto_reply p irr the manager's replies are the chat's rounds (`max_round` is read)
human_input_mode p irr the manager asks no person
system_message p irr {_PROMPT}
silent p irr {_PRINT}
kwargs ** irr forwarded to ConversableAgent; `is_termination_msg` is read as the chat's termination
""")
_api("ag2", "ConversableAgent.initiate_chat", "autogen:ConversableAgent.initiate_chat", f"""
recipient p! read the group chat manager: the caller is the initiator and speaks first
clear_history p irr the history, not the order of turns
silent p irr {_PRINT}
cache p irr where model answers are cached
max_turns p TF405 the initiator and the manager exchange this many turns: after the group chat ends and the
    initiator replies, the group chat runs again; the flow shows one run
summary_method p irr {_SUMMARY}
summary_args p irr {_SUMMARY}
message p irr the first message's text
kwargs ** irr context for a callable message
""", method=True)
_api("ag2", "initiate_chats", "autogen:initiate_chats", """
chat_queue p! read each chat's `recipient` and `sender`, as `initiate_chat`
""")
_api("ag2", "register_function", "autogen:register_function", """
f p! read the tool (its name and what it returns)
caller k! read the agent the tool is given to (a routing tool when it returns a ReplyResult target)
executor k! read the agent that runs the tool (next speaker after a tool call with func_call_filter)
name k read the tool's name
description k! irr what the model is told about the tool
""")
_api("ag2", "ConversableAgent.register_for_llm", "autogen:ConversableAgent.register_for_llm", """
name k read the tool's name
description k irr what the model is told about the tool
api_style k irr how the tool is described to the model
silent_override k irr the tool's printing
""", method=True)
_api("ag2", "ConversableAgent.register_for_execution", "autogen:ConversableAgent.register_for_execution", """
name p read the tool's name
description p irr what the model is told about the tool
serialize k irr how the tool's result is written
silent_override k irr the tool's printing
""", method=True)

# ---------------------------------------------------------------------------------------------
#  AG2 0.9 group patterns, handoffs, targets, conditions, initiate_group_chat
# ---------------------------------------------------------------------------------------------
_PATTERN_HEAD = """
initial_agent p! read `start`: the first speaker
agents p! read the participants, in order
user_agent p read the initiator (RevertToUserTarget)
group_manager_args p read its `is_termination_msg` is the chat's termination; its other settings are the manager's
    model and prompt (TF403 where the manager's LLM picks)
context_variables p read the initial `context`
"""
_PATTERN_TAIL = f"""
exclude_transit_message p irr whether tool-routing messages stay in the history
summary_method p irr {_SUMMARY}
"""
for _kind in ("DefaultPattern", "RoundRobinPattern", "RandomPattern"):
    _api("ag2", _kind, f"autogen.agentchat.group.patterns:{_kind}", _PATTERN_HEAD + """
group_after_work p read `otherwise`: after an agent without its own after-work
""" + _PATTERN_TAIL)
_api("ag2", "AutoPattern", "autogen.agentchat.group.patterns:AutoPattern", _PATTERN_HEAD + f"""
selection_message p irr {_SELECTOR}
""" + _PATTERN_TAIL)
_api("ag2", "ManualPattern", "autogen.agentchat.group.patterns:ManualPattern", _PATTERN_HEAD + _PATTERN_TAIL)
_api("ag2", "initiate_group_chat", "autogen.agentchat:initiate_group_chat", """
pattern p! read the pattern run
messages p! irr the first message's text
max_rounds p read `max_turns`
""")
for _m, _arg, _what in (("set_after_work", "target", "the agent's after-work (its last rule)"),
                        ("add_llm_condition", "condition", "a routing tool (LLM condition)"),
                        ("add_llm_conditions", "conditions", "routing tools (LLM conditions)"),
                        ("add_context_condition", "condition", "a `when context` rule"),
                        ("add_context_conditions", "conditions", "`when context` rules"),
                        ("add_after_work", "condition", "a conditional after-work rule"),
                        ("add_after_works", "conditions", "conditional after-work rules"),
                        ("add", "condition", "a rule of its kind"),
                        ("add_many", "conditions", "rules of their kinds")):
    _api("ag2", f"Handoffs.{_m}", f"autogen.agentchat.group:Handoffs.{_m}", f"{_arg} p! read {_what}",
         method=True)
_api("ag2", "OnCondition", "autogen.agentchat.group:OnCondition", """
target k! read the routing tool's target
condition k! read the routing tool (its prompt is the tool's description)
available k TF406 the condition applies only while the test holds; the flow's routing tool is always offered
llm_function_name k irr the name of the routing tool the model is offered; the flow names it `transfer_to_TARGET`
""")
_api("ag2", "OnContextCondition", "autogen.agentchat.group:OnContextCondition", """
target k! read the rule's target
condition k read the rule's `when context` test
available k TF406 the condition applies only while the test holds; not in the flow's test
""")
_api("ag2", "AgentTarget", "autogen.agentchat.group:AgentTarget", """
agent p! read the target participant
data ** irr pydantic fields, set from `agent`
""")
_api("ag2", "AgentNameTarget", "autogen.agentchat.group:AgentNameTarget", """
agent_name p! read the target participant
data ** irr pydantic fields
""")
for _t, _to in (("RevertToUserTarget", "`initiator`"), ("TerminateTarget", "`terminate`"), ("StayTarget", "the speaker")):
    _api("ag2", _t, f"autogen.agentchat.group:{_t}", "", note=f"read: the target {_to}")
_api("ag2", "GroupManagerTarget", "autogen.agentchat.group.targets.group_manager_target:GroupManagerTarget", f"""
selection_message k irr {_SELECTOR}
""")
_api("ag2", "StringLLMCondition", "autogen.agentchat.group:StringLLMCondition", """
prompt p! read the routing tool's description
data ** irr pydantic fields
""")
_api("ag2", "StringContextCondition", "autogen.agentchat.group:StringContextCondition", """
variable_name k! read `when context.NAME`
""")
_api("ag2", "ExpressionContextCondition", "autogen.agentchat.group:ExpressionContextCondition", """
expression p! read the `when context` comparison
data ** irr pydantic fields
""")
_api("ag2", "ContextExpression", "autogen.agentchat.group:ContextExpression", """
expression p! read the `when context` comparison
""")
_api("ag2", "ContextVariables", "autogen.agentchat.group:ContextVariables", """
data p read the initial `context`
kwargs ** irr AG2 0.9 ignores them: `ContextVariables(lang="en")` holds no variable (its `data` is empty)
""")
_api("ag2", "ReplyResult", "autogen.agentchat.group:ReplyResult", """
message k! irr the tool result's text
target k read the routing tool's target
context_variables k irr context changes at run time (TF406 where a condition depends on them)
""")

# ---------------------------------------------------------------------------------------------
#  autogen-agentchat 0.7: teams, agents, termination conditions, DiGraphBuilder
# ---------------------------------------------------------------------------------------------
_PARTICIPANTS = "participants p! read the participants, in order\n"
_TEAM = f"""
name k irr the team's name, not its order of turns
description k irr the team's description
termination_condition k read `terminate` rules
max_turns k read `max_turns`
runtime k irr {_RUNTIME}
"""
_api("agentchat", "RoundRobinGroupChat", "autogen_agentchat.teams:RoundRobinGroupChat",
     _PARTICIPANTS + _TEAM + f"custom_message_types k irr {_TYPES}\nemit_team_events k irr {_EVENTS}")
_api("agentchat", "Swarm", "autogen_agentchat.teams:Swarm",
     _PARTICIPANTS + _TEAM + f"custom_message_types k irr {_TYPES}\nemit_team_events k irr {_EVENTS}")
_api("agentchat", "SelectorGroupChat", "autogen_agentchat.teams:SelectorGroupChat", _PARTICIPANTS + """
model_client p! irr the model that picks the speaker (TF403)
""" + _TEAM + f"""
selector_prompt k irr {_SELECTOR}
allow_repeated_speaker k read whether a speaker may follow itself
max_selector_attempts k irr how often the picking model is asked again
selector_func k read the selection rules (the function's returns)
candidate_func k read the candidates the model may pick
custom_message_types k irr {_TYPES}
emit_team_events k irr {_EVENTS}
model_client_streaming k irr {_MODEL}
model_context k irr the history the picking model sees
""")
_api("agentchat", "MagenticOneGroupChat", "autogen_agentchat.teams:MagenticOneGroupChat", _PARTICIPANTS + """
model_client p! irr the orchestrator's model (TF408: the orchestrator picks every speaker)
""" + _TEAM + f"""
max_stalls k read noted with the orchestrator (TF408)
final_answer_prompt k irr {_PROMPT}
custom_message_types k irr {_TYPES}
emit_team_events k irr {_EVENTS}
""")
_api("agentchat", "GraphFlow", "autogen_agentchat.teams:GraphFlow", _PARTICIPANTS + """
graph p! read the speaker graph (`builder.build()`)
""" + _TEAM + f"""
custom_message_types k irr {_TYPES}
""")
_api("agentchat", "DiGraphBuilder.add_node", "autogen_agentchat.teams:DiGraphBuilder.add_node", """
agent p! read a node of the graph
activation p read `all` / `any` join of the node's incoming edges
""", method=True)
_api("agentchat", "DiGraphBuilder.add_edge", "autogen_agentchat.teams:DiGraphBuilder.add_edge", """
source p! read an edge's speaker
target p! read an edge's successor
condition p read the edge's `when` test
activation_group p read which incoming edges a join waits for together (a join is TF407: one speaker at a time)
activation_condition p read whether the join waits for all or any of its group (TF407 for `all`)
""", method=True)
_api("agentchat", "DiGraphBuilder.add_conditional_edges", "autogen_agentchat.teams:DiGraphBuilder.add_conditional_edges", """
source p! read the speaker the conditional edges start from (the finding is at `condition_to_target`)
condition_to_target p! TF406 {text: target}: the conditional edges are not read, they are missing from the flow
""", method=True)
_api("agentchat", "DiGraphBuilder.set_entry_point", "autogen_agentchat.teams:DiGraphBuilder.set_entry_point", """
name p! read `start`: the first speaker
""", method=True)
_api("agentchat", "AssistantAgent", "autogen_agentchat.agents:AssistantAgent", f"""
name p! read the participant's name
model_client p! irr {_MODEL}
tools k read routing tools (with handoffs)
workbench k irr tools that do not hand off
handoffs k read `handoff` rules (in a Swarm)
model_context k irr the history the model sees
description k read the participant's description
system_message k irr {_PROMPT}
model_client_stream k irr {_MODEL}
reflect_on_tool_use k irr {_PROMPT}
max_tool_iterations k irr {_PROMPT}
tool_call_summary_format k irr {_PROMPT}
tool_call_summary_formatter k irr {_PROMPT}
output_content_type k irr {_PROMPT}
output_content_type_format k irr {_PROMPT}
memory k irr {_PROMPT}
metadata k irr data carried with the agent
""")
_api("agentchat", "UserProxyAgent", "autogen_agentchat.agents:UserProxyAgent", """
name p! read the participant's name
description k read the participant's description
input_func k irr how the person's reply is read
""")
_api("agentchat", "MessageFilterAgent", "autogen_agentchat.agents:MessageFilterAgent", """
name p! read the participant's name (and the source of its messages)
wrapped_agent p! read the agent that answers (its name is not a message source)
filter p! irr which messages the wrapped agent sees
""")
_api("agentchat", "CodeExecutorAgent", "autogen_agentchat.agents:CodeExecutorAgent", f"""
name p! read the participant's name
code_executor p! irr how code is run
model_client k irr {_MODEL}
model_context k irr the history the model sees
model_client_stream k irr {_MODEL}
max_retries_on_error k irr {_PROMPT}
description k read the participant's description
system_message k irr {_PROMPT}
sources k irr whose messages it runs code from
supported_languages k irr which code it runs
approval_func k irr whether a person approves the code
""")
_api("agentchat", "SocietyOfMindAgent", "autogen_agentchat.agents:SocietyOfMindAgent", f"""
name p! read the participant's name
team p! irr the inner team speaks inside this agent's turn
model_client p! irr {_MODEL}
description k read the participant's description
instruction k irr {_PROMPT}
response_prompt k irr {_PROMPT}
model_context k irr the history the model sees
""")
_api("agentchat", "MaxMessageTermination", "autogen_agentchat.conditions:MaxMessageTermination", """
max_messages p! read `max_turns`
include_agent_event p TF405 counts agent events as messages too
""")
_api("agentchat", "TextMentionTermination", "autogen_agentchat.conditions:TextMentionTermination", """
text p! read `terminate when text contains`
sources p read the speakers whose messages are tested
""")
_api("agentchat", "HandoffTermination", "autogen_agentchat.conditions:HandoffTermination", """
target p! read `terminate` after a handoff to the target
""")
_api("agentchat", "SourceMatchTermination", "autogen_agentchat.conditions:SourceMatchTermination", """
sources p! read `terminate` after these speakers
""")
_api("agentchat", "StopMessageTermination", "autogen_agentchat.conditions:StopMessageTermination", "",
     note="read: `terminate` (no arguments)")
_api("agentchat", "ExternalTermination", "autogen_agentchat.conditions:ExternalTermination", "",
     note="read: `terminate` (no arguments)")
_api("agentchat", "TextMessageTermination", "autogen_agentchat.conditions:TextMessageTermination", """
source p read `terminate` after a text message of this speaker
""")
_api("agentchat", "TimeoutTermination", "autogen_agentchat.conditions:TimeoutTermination", """
timeout_seconds p! read `terminate` noted (TF405: wall-clock time)
""")
_api("agentchat", "TokenUsageTermination", "autogen_agentchat.conditions:TokenUsageTermination", """
max_total_token p read the whole condition is TF405 at the call: token use cannot be expressed, it is dropped
max_prompt_token p read as `max_total_token`
max_completion_token p read as `max_total_token`
""")
_api("agentchat", "FunctionCallTermination", "autogen_agentchat.conditions:FunctionCallTermination", """
function_name p! read `terminate` after the tool is run
""")
_api("agentchat", "FunctionalTermination", "autogen_agentchat.conditions:FunctionalTermination", """
func p! read a `terminate when` rule where its test reads as one (TF405)
""")
for _t in ("OrTerminationCondition", "AndTerminationCondition"):
    _api("agentchat", _t, f"autogen_agentchat.base:{_t}", "conditions * read the conditions (`|` / `&`)")
_api("agentchat", "Handoff", "autogen_agentchat.base:Handoff", """
target k! read the handoff's target
description k irr what the model is told
name k read the routing tool's name
message k irr the handoff message's text
""")


# ---------------------------------------------------------------------------------------------
#  Binding a call
# ---------------------------------------------------------------------------------------------
@dataclass
class Bound:
    """The arguments of one call, by parameter name; `problem` when it does not bind."""

    api: Api
    args: dict[str, pyast.AST] = field(default_factory=dict)
    extra: dict[str, pyast.AST] = field(default_factory=dict)  # `**kwargs` keywords, by name
    rest: list[pyast.AST] = field(default_factory=list)        # `*args` arguments
    problem: Optional[tuple[pyast.AST, str]] = None

    def get(self, name: str) -> Optional[pyast.AST]:
        return self.args.get(name, self.extra.get(name))


def api(family: str, name: str) -> Optional[Api]:
    return API.get((family, name))


def _short(a: Api) -> str:
    return a.name.split(".")[-1] if a.method else a.name


def _names(missing: list[str]) -> str:
    quoted = [f"'{m}'" for m in missing]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def bind(call: pyast.Call, a: Api) -> Bound:
    """`a`'s parameters bound to `call`'s arguments as Python binds them; `problem` is Python's
    own TypeError for the framework's signature (or an argument list known only at run time),
    at the argument concerned."""
    b = Bound(a)
    cls = not a.method and a.name[:1].isupper()
    where = f"{a.init or a.name}.__init__()" if cls else f"{a.name}()"
    b.problem = _bind_positional(b, call, where, 1 if (cls or a.method) else 0) \
        or _bind_keywords(b, call, where) or _missing(b, call, where)
    return b


def as_keywords(call: pyast.Call, a: Api) -> Optional[tuple[pyast.AST, str]]:
    """`call` bound to `a`: its positional arguments rewritten as the keywords they bind to (in
    place), so that every setting is read by its name; the problem (`bind`) when it does not bind,
    the call left as it is."""
    b = bind(call, a)
    if b.problem is not None:
        return b.problem
    if call.args and not b.rest:
        by_node = {id(v): k for k, v in b.args.items()}
        keywords = [pyast.copy_location(pyast.keyword(arg=by_node[id(arg)], value=arg), arg) for arg in call.args]
        call.args, call.keywords = [], keywords + call.keywords
    return None


def _bind_positional(b: Bound, call: pyast.Call, where: str, self_: int) -> Optional[tuple[pyast.AST, str]]:
    params = b.api.params
    positional = [p for p in params if p.kind in ("/", "p")]
    star = next((p for p in params if p.kind == "*"), None)
    for i, arg in enumerate(call.args):
        if isinstance(arg, pyast.Starred):
            return arg, f"`{pyast.unparse(arg)}` passes arguments known only when the program runs"
        if i < len(positional):
            b.args[positional[i].name] = arg
        elif star is not None:
            b.rest.append(arg)
        else:
            return arg, _too_many(b.api, call, where, self_)
    return None


def _too_many(a: Api, call: pyast.Call, where: str, self_: int) -> str:
    """Python's words for too many positional arguments."""
    positional = [p for p in a.params if p.kind in ("/", "p")]
    n, m = len(positional) + self_, len(call.args) + self_
    low = sum(p.required for p in positional) + self_
    takes = f"from {low} to {n}" if low != n else f"{n}"
    kw_only = sum(1 for k in call.keywords if any(p.name == k.arg and p.kind == "k" for p in a.params))
    given = f"{m} positional argument{'s' if m != 1 else ''} (and {kw_only} keyword-only " \
            f"argument{'s' if kw_only != 1 else ''})" if kw_only else f"{m}"
    return (f"{where} takes {takes} positional argument{'s' if n != 1 else ''} but {given} "
            f"{'were' if m != 1 or kw_only else 'was'} given")


def _bind_keywords(b: Bound, call: pyast.Call, where: str) -> Optional[tuple[pyast.AST, str]]:
    names = {p.name for p in b.api.params if p.kind in ("p", "k")}
    stars = any(p.kind == "**" for p in b.api.params)
    for kw in call.keywords:
        if kw.arg is None:
            return kw.value, f"`**{pyast.unparse(kw.value)}` passes keywords known only when the program runs"
        if kw.arg in names:
            if kw.arg in b.args:
                return kw.value, f"{where} got multiple values for argument '{kw.arg}'"
            b.args[kw.arg] = kw.value
        elif stars:
            b.extra[kw.arg] = kw.value
        else:
            return kw.value, f"{where} got an unexpected keyword argument '{kw.arg}'"
    return None


def _missing(b: Bound, call: pyast.Call, where: str) -> Optional[tuple[pyast.AST, str]]:
    for kinds, what in ((("/", "p"), "positional"), (("k",), "keyword-only")):
        missing = [p.name for p in b.api.params if p.required and p.kind in kinds and p.name not in b.args]
        if missing:
            n = len(missing)
            return call, f"{where} missing {n} required {what} argument{'s' if n != 1 else ''}: {_names(missing)}"
    return None


def _none(node: pyast.AST) -> bool:
    """`param=None`: the framework's default for every not-modelled parameter, nothing to report."""
    return isinstance(node, pyast.Constant) and node.value is None


def _explained(family: str, p: Param) -> str:
    """What a parameter does: a `why` that points at another call's (`as ConversableAgent's`) is
    that call's own explanation of the parameter."""
    if p.why.startswith("as ") and p.why.endswith("'s"):
        other = API.get((family, p.why[3:-2]))
        q = next((q for q in other.params if q.name == p.name), None) if other is not None else None
        if q is not None:
            return q.why
    return p.why


def not_modelled(b: Bound) -> list[tuple[str, pyast.AST, str]]:
    """(code, argument, message) for each argument given to a parameter the flow does not model,
    the `**kwargs` keywords classified by the base Api."""
    out = []
    base = API.get((b.api.family, b.api.base)) if b.api.base else None
    for p in b.api.params:
        node = b.args.get(p.name)
        if node is not None and p.how == NOT_MODELLED and not _none(node):
            out.append((p.code, node, f"`{p.name}` of `{b.api.name}`: {_explained(b.api.family, p)}"))
    if base is not None:
        by_name = {p.name: p for p in base.params}
        for key, node in b.extra.items():
            q = by_name.get(key)
            if q is not None and q.how == NOT_MODELLED and not _none(node):
                out.append((q.code, node, f"`{q.name}` of `{base.name}`: {q.why}"))
    return out


AGENT_LIMITS = ("is_termination_msg", "max_consecutive_auto_reply")


def agent_findings(call: pyast.Call, cls: str, skip: tuple[str, ...] = ()) -> list[tuple[str, pyast.AST, str]]:
    """(code, argument, message) for an AG2 agent constructor: bound to its class's signature when
    the table has the class (TF411 when it does not bind), else its keywords named as
    ConversableAgent's (a subclass forwards them); each argument of a not-modelled parameter."""
    a = API.get(("ag2", cls))
    if a is None:
        spread = next((k.value for k in call.keywords if k.arg is None), None)
        if spread is not None:  # `**shared`: which settings it passes is known only at run time
            return [("TF411", spread, f"`{cls}(...)`: `**{pyast.unparse(spread)}` passes keywords known only when "
                                      "the program runs; the agent's settings are not read")]
        base = API[("ag2", "ConversableAgent")]
        b = Bound(base, extra={k.arg: k.value for k in call.keywords if k.arg is not None})
        b.api = Api("ag2", cls, "", (), base="ConversableAgent")
    else:
        b = bind(call, a)
        if b.problem is not None:
            node, error = b.problem
            return [("TF411", node, f"`{cls}(...)` does not bind to AG2's signature: {error}; the agent's "
                                    "settings are not read")]
    return [(code, node, f"`{pyast.unparse(node)[:60]}` as {message}") for code, node, message in not_modelled(b)
            if not any(f"`{name}` of" in message for name in skip)]


def markdown() -> str:
    """The table of docs/migrate.md: one row per parameter of every recognised call."""
    rows = ["| Call | Parameter | Treated as | Where it goes / why |", "|---|---|---|---|"]
    for a in API.values():
        label = "AG2 0.9" if a.family == "ag2" else "AgentChat 0.7"
        if not a.params:
            rows.append(f"| `{a.name}` ({label}) | (none) | read | {a.note.removeprefix('read: ')} |")
        for p in a.params:
            pname = {"*": f"*{p.name}", "**": f"**{p.name}"}.get(p.kind, p.name)
            how = f"not modelled ({p.code})" if p.code else p.how
            rows.append(f"| `{a.name}` ({label}) | `{pname}` | {how} | {p.why} |")
    return "\n".join(rows) + "\n"
