"""Two AG2 1.2.1 agents on a `turnflow serve` hub, with AG2's own client: bob answers, alice consults him.

    turnflow serve --listen 127.0.0.1:8765 --store hub.db
    python examples/ag2_consult.py ws://127.0.0.1:8765

bob's model is AG2's scripted test model so that this runs without an API key: give `Agent` your
model config (e.g. `OpenAIConfig(...)`) instead.

A hub keeps registered names in its store (a name is registered once: "name 'bob' already
registered"), so the demo unregisters bob and alice when it is done and can be run again against
the same store. A run killed before that leaves the names taken: serve a fresh `--store`.
"""

import asyncio
import sys

from ag2 import Agent
from ag2.network import HubClient
from ag2.network.transport.ws import WsLink
from ag2.testing import TestConfig


async def main(url: str) -> None:
    hub = HubClient(WsLink(url))
    registered = []
    try:
        bob = await hub.register(Agent("bob", config=TestConfig("Add an index on orders(user_id, created_at).")))
        registered.append(bob.agent_id)
        alice = await hub.register(Agent("alice", config=TestConfig("-")))
        registered.append(alice.agent_id)
        channel = await alice.open(type="consulting", target="bob")
        await channel.send("Why is the orders query slow?")
        await alice.wait_for_channel_event(channel_id=channel.channel_id, timeout=60,
                                           predicate=lambda e: e.event_type == "ag2.channel.closed")
        for envelope in await hub.read_wal(channel.channel_id):
            if envelope.event_type == "ag2.msg.text":
                print(f"{hub.name_for(envelope.sender_id)}: {envelope.event_data['text']}")
        print(f"session {channel.channel_id}: {(await channel.info()).close_reason}")
    finally:
        for agent_id in registered:  # the names are free again: the demo can be run again
            await hub.unregister_agent(agent_id)
        await hub.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8765"))
