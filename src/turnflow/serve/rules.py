"""AG2 1.2.1's per-agent `Rule`, enforced as its default arbiter (`RuleBasedArbiter`,
`ag2/network/hub/arbiter.py`) enforces it, with the same messages. Each function is one of the
arbiter's gates and returns why the action is denied, or None:

- `channel_open`: every invitee's `access.inbound_from` must match the creator's name, then the
  creator's `limits.max_concurrent_channels` (0: no cap) must exceed its channels not yet ended.
- `send`: the sender's `access.outbound_to` must match every explicitly addressed recipient but
  itself (a broadcast is not checked), then `depth` must not exceed the sender's
  `limits.delegation_depth` (0: no cap). AG2's hub also applies this to the invites it posts for a
  new channel, so an invitee outside the creator's `outbound_to` fails `create_channel`.
- `inbox`: a substantive envelope is refused while a recipient has `limits.inbox.max_pending`
  (0: no cap) notifications outstanding (AG2's `InboxFull`, which its wire carries as code
  `error`); a recipient's count grows with each substantive notification sent to it and shrinks
  by one with each substantive envelope it posts (AG2 keeps these counts in memory; so does
  turnflow).
- `accepts`: a recipient whose `access.inbound_from` does not match the sender is silently not
  notified (the envelope is still in the log).

What AG2's arbiter does not check is not checked here either: `access.channel_types`,
`limits.rate`, `limits.inbox.overflow` (always "reject") and `high_water` (a listener signal).
Names are matched with `fnmatch.fnmatchcase` globs, as AG2 matches them. Rules are full records
(shapes.RULE: every field present), so no default is looked up here."""

from __future__ import annotations

import fnmatch
from typing import Iterable, Optional

from turnflow.serve.registry import Agent

INBOX_FULL = "error"  # the wire code of AG2's `InboxFull` (not in its hub's code map)


def matches(name: str, patterns: list[str]) -> bool:
    return "*" in patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def channel_open(creator: Agent, invitees: Iterable[Agent], open_channels: int) -> Optional[str]:
    for invitee in invitees:
        if invitee.agent_id != creator.agent_id and not matches(creator.name, invitee.rule["access"]["inbound_from"]):
            return f"invitee {invitee.name!r} does not accept inbound from {creator.name!r}"
    cap = creator.rule["limits"]["max_concurrent_channels"]
    if cap > 0 and open_channels >= cap:
        return f"creator {creator.agent_id!r} exceeded max_concurrent_channels ({open_channels} >= {cap})"
    return None


def send(sender: Agent, recipients: Iterable[Agent], depth: int) -> Optional[str]:
    outbound = sender.rule["access"]["outbound_to"]
    for recipient in recipients:
        if recipient.agent_id != sender.agent_id and not matches(recipient.name, outbound):
            return f"sender {sender.name!r} not permitted to send to {recipient.name!r}"
    cap = sender.rule["limits"]["delegation_depth"]
    if cap > 0 and depth > cap:
        return f"sender {sender.name!r} exceeded delegation_depth ({depth} > {cap})"
    return None


def inbox(recipient: Agent, pending: int) -> Optional[str]:
    cap = recipient.rule["limits"]["inbox"]["max_pending"]
    if cap > 0 and pending >= cap:
        return f"recipient {recipient.agent_id!r} inbox at capacity ({pending} >= {cap})"
    return None


def accepts(recipient: Agent, sender: Agent) -> bool:
    return matches(sender.name, recipient.rule["access"]["inbound_from"])
