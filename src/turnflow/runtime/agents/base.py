"""The participant side (RUNTIME.md §6): the agent protocol, `Capabilities`, and `SessionTools`,
the tool surface one turn gets. A turn's calls are collected into one round (one packet)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Protocol

from turnflow.runtime.errors import AdapterError


@dataclass(frozen=True)
class Capabilities:
    control_loop: str = "hub"  # "hub": the hub drives one turn at a time; "self": the agent loops itself
    supports_stepwise: bool = True
    telemetry_stream: bool = False

    def check(self, agent_id: str) -> "Capabilities":
        if self.control_loop not in ("hub", "self"):
            raise AdapterError(f"agent {agent_id!r}: control_loop must be 'hub' or 'self', got {self.control_loop!r}")
        return self


@dataclass(frozen=True)
class AgentContext:
    session_id: str
    agent_id: str
    kind: str
    participants: tuple
    tools: tuple  # this agent's routing tools: dicts {name, description, target}


class Agent(Protocol):
    async def open_session(self, ctx: AgentContext, emit: Callable[[dict], Awaitable[bool]]) -> Capabilities: ...
    async def on_message(self, msg: list[dict], tools: "SessionTools") -> None: ...
    async def close_session(self, session_id: str) -> None: ...


@dataclass
class SessionTools:
    """Collects one round. `round()` returns `{body, kind, tool, reason, target, set, delete}`."""

    agent_id: str
    participants: tuple
    routing_tools: tuple = ()  # dicts {name, description, target} owned by this agent
    any_tool: bool = False  # the session declares no tools at all: any routing tool name is allowed
    emit: Optional[Callable[[dict], Awaitable[bool]]] = None
    _body: list = field(default_factory=list)
    _routing: dict = field(default_factory=dict)
    _set: dict = field(default_factory=dict)
    _delete: list = field(default_factory=list)

    def send_message(self, text: str) -> None:
        if not isinstance(text, str):
            raise AdapterError(f"{self.agent_id}: send_message needs text, got {text!r}")
        self._body.append(text)

    def handoff(self, target: str, reason: str = "") -> None:
        if target not in self.participants:
            raise AdapterError(f"{self.agent_id}: cannot hand off to {target!r}: not a participant "
                               f"({', '.join(self.participants)})")
        if self._routing.get("kind") != "finish":
            self._routing.update({"kind": "handoff", "target": target, "reason": reason or None})

    def finish(self, reason: str = "", summary: str = "") -> None:
        self._routing = {"kind": "finish", "reason": reason or None, "tool": self._routing.get("tool")}
        if summary:
            self._body.append(summary)

    def set_context(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise AdapterError(f"{self.agent_id}: context keys are strings, got {key!r}")
        self._set[key] = value

    def delete_context(self, key: str) -> None:
        self._delete.append(key)

    async def emit_event(self, event: dict) -> bool:
        return await self.emit(event) if self.emit is not None else False

    def get_participants(self) -> list[str]:
        return list(self.participants)

    def get_tool_schemas(self, fmt: str = "openai") -> list[dict]:
        out = []
        for t in self.routing_tools:
            params = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": []}
            if fmt == "openai":
                out.append({"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
                                                             "parameters": params}})
            elif fmt == "anthropic":
                out.append({"name": t["name"], "description": t.get("description") or "", "input_schema": params})
            else:
                raise AdapterError(f"unknown tool schema format {fmt!r} (openai, anthropic)")
        return out

    def execute_tool_call(self, name: str, args: Optional[dict] = None) -> str:
        """Call a routing tool: this round becomes a handoff through that tool (the graph decides)."""
        names = [t["name"] for t in self.routing_tools]
        if name not in names and not self.any_tool:
            raise AdapterError(f"{self.agent_id} has no routing tool {name!r}"
                               + (f" (its tools: {', '.join(names)})" if names else " (it declares none)"))
        reason = (args or {}).get("reason") or None
        if self._routing.get("kind") == "finish":
            self._routing["tool"] = name
        else:
            self._routing.update({"kind": "handoff", "tool": name})
            if reason:
                self._routing["reason"] = reason
        return f"routed via {name}"

    def round(self) -> dict:
        r = {k: v for k, v in self._routing.items() if v is not None}
        return {"body": "\n".join(self._body), "kind": r.get("kind", "text"), "tool": r.get("tool"),
                "reason": r.get("reason"), "target": r.get("target"), "set": dict(self._set),
                "delete": list(self._delete)}
