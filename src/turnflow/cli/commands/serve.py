"""`turnflow serve --listen HOST:PORT [--store PATH | postgresql://…] [--auth-keys FILE]`: the hub
over WebSocket, speaking AG2 1.2.1's wire protocol, so AG2's `HubClient(WsLink(url))` works
unchanged (docs/serve.md). Needs the `serve` extra (the `websockets` library)."""

from __future__ import annotations

from turnflow.cli.util import (EXIT_USAGE, a_file, a_store, err, non_negative_int, non_negative_seconds,
                               positive_int, positive_seconds)
from turnflow.extras import pip_install


# the byte budgets and quotas (docs/serve.md, "Limits"): flag, type, default, what it bounds
LIMIT_FLAGS = [
    ("--send-buffer-bytes", positive_int, 8 << 20,
     "bytes waiting for one client (its queue and socket buffer) before it is disconnected as stalled (close code 1008)"),
    ("--total-send-bytes", positive_int, 256 << 20,
     "bytes waiting for all clients together; past it a client with a backlog is disconnected (1013)"),
    ("--max-reply-bytes", positive_int, 16 << 20, "a larger answer to one request is refused (read_wal: read in pages)"),
    ("--inflight-bytes", positive_int, 4 << 20,
     "bytes of request frames one connection has in hand; beyond, its frames wait"),
    ("--auth-timeout", positive_seconds, 10.0,
     "with --auth-keys: close a connection that binds no agent within this time"),
    ("--max-per-peer", non_negative_int("no limit"), 128, "connections from one IP address, 0 = no limit (1013 beyond)"),
    ("--max-unbound", non_negative_int("an eighth of --max-connections"), 0,
     "connections without a bound agent at once; 0 = an eighth of the connection cap, at least 8 (1013 beyond)"),
    ("--max-session-bytes", positive_int, 8 << 20,
     "a live session's log as AG2 envelopes; past it, posts to it are refused"),
    ("--max-channels-per-agent", positive_int, 1000, "live sessions one agent may have opened"),
    ("--max-labels-bytes", positive_int, 16 << 10, "a session's labels (with its intent) as JSON"),
    ("--max-live-bytes", positive_int, 512 << 20,
     "the logs of all live sessions together (as AG2 envelopes); past it, posts are refused until some end"),
    ("--max-live-sessions", positive_int, 50_000,
     "live sessions, all together (each ~8 KiB of the hub's memory); past it, create_channel is refused"),
    ("--max-knobs-bytes", positive_int, 64 << 20,
     "the knobs (a workflow's graph and context) and labels of all live sessions together, as JSON; past it, "
     "create_channel with knobs or labels is refused"),
    ("--max-agents", positive_int, 50_000, "registered agents; past it, register is refused until one unregisters"),
    ("--max-registry-bytes", positive_int, 64 << 20,
     "the registered agents' records (passport, résumé, rule, skill text) as stored JSON; past it, a register or "
     "set_resume / set_rule / set_skill that adds to them is refused"),
]


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the hub over WebSocket for AG2 clients (docs/serve.md)",
                       description="Run a long-lived hub that AG2 1.2.1's HubClient(WsLink(url)) talks to unchanged: "
                                   "agents register, open sessions of the four kinds, send and read back; turnflow's "
                                   "adapters, sweepers and durable store do the work. Needs the `serve` extra: "
                                   f"{pip_install('serve')}.")
    p.add_argument("--listen", default="127.0.0.1:8765", metavar="HOST:PORT",
                   help="address to listen on (default 127.0.0.1:8765; port 0 picks a free one)")
    p.add_argument("--store", default="turnflow-hub.db", metavar="PATH", type=a_store,
                   help="SQLite file or postgresql:// URL holding the sessions (default turnflow-hub.db)")
    p.add_argument("--registry", metavar="PATH", type=a_file,
                   help="SQLite file of the registered agents for a SQLite store (default: STORE.agents); with "
                        "a postgresql:// store the agents are kept in that database, and PATH names a registry "
                        "file of an earlier version to import into it while it holds no agent")
    p.add_argument("--auth-keys", metavar="FILE", type=a_file,
                   help="JSON object of agent name -> API key: clients must register and attach with AG2's "
                        "ApiKeyAuth shape (auth scheme 'api_key', claim {'token': KEY})")
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                   help="the event loop: uvloop (the serve extra installs it, but on Windows; about a tenth less "
                        "CPU per session), asyncio's own, or auto: uvloop where it is installed (default)")
    p.add_argument("--max-frame-bytes", type=positive_int, default=1 << 20, metavar="N", help="largest frame accepted (default 1 MiB)")
    p.add_argument("--max-connections", type=positive_int, default=1024, metavar="N", help="default 1024")
    p.add_argument("--send-queue", type=positive_int, default=4096, metavar="N",
                   help="frames queued for one client before it is disconnected as stalled (default 4096)")
    p.add_argument("--idle-timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
                   help="close a connection that binds no agent within this time (default 60)")
    p.add_argument("--max-inflight", type=positive_int, default=64, metavar="N",
                   help="requests of one connection handled at once; beyond that its frames wait (default 64)")
    for flag, kind, default, text in LIMIT_FLAGS:
        p.add_argument(flag, type=kind, default=default, metavar="SECONDS" if flag.endswith("-timeout") else "N",
                       help=f"{text} (default {default})")
    p.add_argument("--ping-interval", type=non_negative_seconds("off"), default=20.0, metavar="SECONDS",
                   help="WebSocket pings, and TCP keepalive probes after this long without traffic; a late pong "
                        "closes nothing (a busy client reads late); 0 turns both off (default 20)")
    p.add_argument("--ping-timeout", type=positive_seconds, default=20.0, metavar="SECONDS",
                   help="a peer whose host acknowledges neither probes nor data this much longer is closed by "
                        "the kernel (TCP keepalive, TCP_USER_TIMEOUT; default 20)")
    p.add_argument("--sweep-interval", type=positive_seconds, default=5.0, metavar="SECONDS",
                   help="how often TTLs and expectations are checked (default 5; AG2's hub checks every 10 and 30)")
    p.add_argument("--invite-timeout", type=positive_seconds, default=30.0, metavar="SECONDS",
                   help="a session whose invitees have not all acked this long after it was opened is closed "
                        "invite_timeout, also across a restart (default 30, AG2's invite_ack_timeout)")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        import websockets  # noqa: F401
    except ImportError:
        err(f"turnflow serve: needs the `serve` extra (the websockets library):\n    {pip_install('serve')}")
        return EXIT_USAGE
    from turnflow.runtime.errors import StoreError
    from turnflow.serve.app import OptionError, Options, is_loopback, load_keys, loop_runner, main, parse_listen
    from turnflow.serve.ops import Quotas
    from turnflow.serve.server import Limits

    try:
        host, port = parse_listen(args.listen)
        keys = load_keys(args.auth_keys) if args.auth_keys else None
        # (every number's range is its type's: turnflow.cli.util, refused by argparse with the flag's name)
        loop_runner(args.loop)  # (--loop uvloop without uvloop: refused here, before anything is opened)
    except OptionError as exc:
        err(f"turnflow serve: {exc}")
        return EXIT_USAGE
    if keys is None and not is_loopback(host):
        err(f"turnflow serve: warning: listening on {host} without --auth-keys: any client that reaches it "
            "can register, or attach as, any agent")
    limits = Limits(max_frame_bytes=args.max_frame_bytes, max_connections=args.max_connections,
                    send_queue=args.send_queue, idle_timeout=args.idle_timeout, max_inflight=args.max_inflight,
                    ping_interval=args.ping_interval or None, ping_timeout=args.ping_timeout,
                    send_buffer_bytes=args.send_buffer_bytes, total_send_bytes=args.total_send_bytes,
                    max_reply_bytes=args.max_reply_bytes, inflight_bytes=args.inflight_bytes,
                    auth_timeout=args.auth_timeout, max_per_peer=args.max_per_peer, max_unbound=args.max_unbound)
    quotas = Quotas(max_session_bytes=args.max_session_bytes, max_channels_per_agent=args.max_channels_per_agent,
                    max_labels_bytes=args.max_labels_bytes, max_agents=args.max_agents,
                    max_live_bytes=args.max_live_bytes, max_live_sessions=args.max_live_sessions,
                    max_knobs_bytes=args.max_knobs_bytes,
                    max_registry_bytes=args.max_registry_bytes)
    opts = Options(host=host, port=port, store=args.store, registry=args.registry, keys=keys, limits=limits,
                   quotas=quotas, sweep_interval=args.sweep_interval, invite_timeout=args.invite_timeout,
                   loop=args.loop)
    try:
        return main(opts)
    except StoreError as exc:
        err(f"turnflow serve: {exc}")
        return EXIT_USAGE
    except OSError as exc:  # the address is in use, not permitted...
        err(f"turnflow serve: cannot listen on {args.listen}: {exc.strerror or exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:  # pragma: no cover
        return 130
