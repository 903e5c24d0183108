"""`turnflow serve`: the hub over WebSocket, speaking AG2 1.2.1's wire protocol (docs/serve.md).

`frames` (the frame codec), `wire` (turnflow sessions and envelopes in AG2's shapes), `registry`
(registered agents: beside a SQLite store, inside a PostgreSQL one), `ops` (the request handlers) and `server` (the
connection loop, limits, notifications). Nothing here imports AG2: AG2 is a client."""
