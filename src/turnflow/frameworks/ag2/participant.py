"""`kind: ag2`: an AG2 1.2.1 `ag2.Agent` takes the participant's turn (`pip install
'turnflow[ag2]'`; docs/agents.md §2).

`ref: "module:attribute"` names an `ag2.Agent` or a factory `(tools, ctx) -> ag2.Agent` that
gets turnflow's session tools as AG2 `FunctionTool`s. A prebuilt agent gets the same tools on
every `ask` (`tools=`), except names it already has: its own tool named like a routing tool of
the flow routes the round when the model calls it.

A turn: `agent.ask(*new_messages, stream=<history>, tools=..., prompt=<the agent's own system
prompt + the session prompt>)`; the stream's tool calls, results and errors become
`env_action`, `tool_response` and `error` telemetry; the reply's body is the round's body.
"""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.contract import AgentContext, SessionTools
from turnflow.runtime.agents.framework import FrameworkAgent, ToolSlot, emit_tool, keyword_function
from turnflow.frameworks.ag2.history import to_ag2


def _tool_name(t: Any) -> Any:
    name = getattr(t, "name", None)
    if isinstance(name, str):
        return name
    schema = getattr(t, "schema", None)
    fn = getattr(schema, "function", None)
    return getattr(fn, "name", None)


class AG2Agent(FrameworkAgent):
    framework = "ag2"
    what = "an ag2.Agent"

    def accepts(self, obj: Any) -> bool:
        from ag2 import Agent

        return isinstance(obj, Agent)

    def make_tools(self, specs: list[dict[str, Any]], slot: ToolSlot) -> list[Any]:
        from ag2.tools import tool

        out = []
        for d in specs:
            def call(_name: str = d["name"], **kwargs: Any) -> str:
                return slot.call(_name, kwargs)
            out.append(tool(keyword_function(call, d["parameters"]), name=d["name"], description=d["description"] or d["name"],
                            schema=d["parameters"]))
        return out

    async def run(self, obj: Any, msg: list[dict[str, Any]], tools: SessionTools, slot: ToolSlot, native: list[Any],
                  ctx: AgentContext, prompt: str) -> str:
        from ag2.events import ToolCallEvent, ToolErrorEvent, ToolResultEvent

        stream, inputs = await to_ag2(msg, self.agent_id, self.history_converter)
        own = {_tool_name(t) for t in getattr(obj, "tools", ()) or ()}
        extra = [t for t in native if _tool_name(t) not in own]
        failures: list[tuple[BaseException, Any]] = []  # tool errors with their tracebacks, as raised

        async def watch(event: Any) -> None:
            if isinstance(event, ToolCallEvent):
                emit_tool(tools, self.framework, "start", event.name, event.arguments)
                if event.name in own:
                    slot.observed(event.name, event.arguments)
            elif isinstance(event, ToolErrorEvent):
                err = getattr(event, "error", None)
                emit_tool(tools, self.framework, "error", event.name, f"{type(err).__name__}: {err}")
                if isinstance(err, BaseException):
                    failures.append((err, err.__traceback__))
            elif isinstance(event, ToolResultEvent):
                emit_tool(tools, self.framework, "end", event.name, _result_text(getattr(event, "result", None)))

        stream.subscribe(watch)
        try:
            if getattr(obj, "dynamic_prompt", ()):  # its own prompts are built per turn: the session's goes first
                reply = await obj.ask(prompt, *inputs, stream=stream, tools=extra)
            else:
                reply = await obj.ask(*inputs, stream=stream, tools=extra, prompt=[*obj.system_prompt, prompt])
        except Exception as exc:
            # AG2 re-raises a tool's error without the tool's frames: give it back the traceback it
            # had when the tool raised, so the failure names the user's file:line
            for err, tb in failures:
                if err is exc or (type(err) is type(exc) and str(err) == str(exc)):
                    raise exc.with_traceback(tb) from None
            raise
        body = reply.body
        return body if isinstance(body, str) else ""



def _result_text(result: Any) -> str:
    """The text of an AG2 `ToolResult` (its text parts), else its string form."""
    parts = getattr(result, "parts", None)
    if isinstance(parts, (list, tuple)):
        texts = [p.content for p in parts if isinstance(getattr(p, "content", None), str)]
        if texts:
            return "\n".join(texts)[:1000]
    return str(result)[:1000]
