"""Run generated classic GroupChat modules (`--target ag2-groupchat`) with scripted replies,
in the classic AG2 0.9 interpreter (tests/test_target_ag2_groupchat.py starts it).

stdin: a JSON list of {"source": module text, "steps": [step, ...], "model": optional bool}, a step
being {"say": str or null (no content: an LLM's tool call alone), "tool": str or null, optionally
"tools": the names of several tool calls in one reply, in order, or "function": the name of a legacy
function call} taken by whoever speaks that turn
(step 0: the start speaker's opening message, given to the module's `run`); a run whose steps run
out ends with the reason "script_end". stdout: one JSON list of {"speakers": [...], "reason": ...}.

A reply is scripted right after AG2's own checks, which run as they would before a model's reply
(`check_termination_and_human_reply`: an agent's `is_termination_msg`, its
`max_consecutive_auto_reply`). With "model": true, in the model's place (`generate_oai_reply`), so
AG2's tool-call reply runs before it too: an agent answers the tool calls left in the message it
replies to (the module consumes the flow's routing tools; a tool nobody has gets "Error: Function
... not found" as that agent's turn).
Imports only the standard library and `autogen`."""

import contextlib
import json
import sys
import types

from autogen import ConversableAgent


def message(step, i):
    msg = {"content": step["say"], "role": "assistant"}
    names = step.get("tools") or ([step["tool"]] if step.get("tool") else [])
    if step.get("function"):  # a legacy function call (OpenAI's `function_call`)
        msg["function_call"] = {"name": step["function"], "arguments": "{}"}
    elif names:
        msg["tool_calls"] = [{"id": f"call_{i}_{k}", "type": "function",
                              "function": {"name": name, "arguments": "{}"}} for k, name in enumerate(names)]
    return msg


def run(source, steps, in_model_place=False):
    mod = types.ModuleType("generated_chat")
    exec(compile(source, "<generated>", "exec"), mod.__dict__)  # noqa: S102 - the test's own generated code
    taken = [1]  # step 0 is the start speaker's opening message
    ended_by = []

    def reply(recipient, messages=None, sender=None, config=None):
        i = taken[0]
        taken[0] += 1
        if i >= len(steps):  # the plan ran out: this speaker's turn ends the run (as a `finish` does)
            ended_by.append(recipient.name)
            raise StopIteration
        return True, message(steps[i], i)

    for agent in mod.AGENTS:
        if in_model_place:  # AG2's own reply functions before the model's run, the tool-call reply too
            agent.replace_reply_func(ConversableAgent.generate_oai_reply, reply)
        else:  # right after AG2's own checks (termination, auto-reply limit), before its tool-call reply
            funcs = [f["reply_func"] for f in agent._reply_func_list]
            agent.register_reply(trigger=[object, None], reply_func=reply,
                                 position=funcs.index(ConversableAgent.check_termination_and_human_reply) + 1)
    try:
        mod.run(message(steps[0], 0))
        reason = mod.OUTCOME["reason"]
    except StopIteration:
        reason = "script_end"
    return {"speakers": [m["name"] for m in mod.groupchat.messages] + ended_by, "reason": reason}


def main():
    jobs = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # AG2 prints the chat
        results = [run(j["source"], j["steps"], j.get("model", False)) for j in jobs]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
