"""`turnflow run FILE --agents AGENTS.yaml [--block NAME] [--task TEXT] [--store hub.db]
[--durability process|full] [--format text|json] [--quiet] [--verbose] [--max-turns N] [--timeout DURATION]
[--hub ws://HOST:PORT [--hub-keys FILE]]`: run one session on the hub with the given agents (docs/runtime.md);
with `--hub`, on a served hub next to remote participants (docs/serve.md).

Output: in text format each turn is printed as the hub accepts it, then the final state (and,
on a terminal, a summary line); `--quiet` prints only the final state line and `--format json`
only the JSON document, so stdout stays machine-readable (progress goes to stderr, and only
when stderr is a terminal). Expectation warnings go to stderr; `--verbose` prints telemetry
to stderr as it is stored.

Exit 0 when the session closed normally; 1 when a file's content is wrong (the flow, the agents
file) or the session ended abnormally (an agent failing, expectation_violated:*, expired,
agent_error); 2 when an input cannot be read, the command line is wrong, or the agents need a
package or an API key the machine lacks (docs/cli.md, "Unreadable vs. invalid"). The
first Ctrl-C / SIGTERM closes the session with the reason `interrupted`, prints what happened
so far and exits 130 / 143 (a temporary store is removed; a `--store` session is closed)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Optional

from turnflow.cli.util import (EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_block, a_file, a_file_or_stdin, a_store,
                               duration, err, out, positive_int, text_type, write_text)
from turnflow.cli.run_inputs import (RunInputError, check_agents, fill_absent, load_agents_file, load_specs,
                                     parse_spec, pick, read_input, refuse_names_the_hub_cannot_run)
from turnflow.term import visible

if TYPE_CHECKING:
    from turnflow.runtime.session_spec import SessionSpec

EXIT_ERROR = EXIT_FINDINGS


def register(sub) -> None:
    p = sub.add_parser("run", help="run a session on the hub with scripted (or other) agents")
    p.add_argument("file", metavar="FILE", type=a_file_or_stdin, help="a compiled session spec (.json) or a .flow file; `-` reads standard input")
    p.add_argument("--agents", required=True, metavar="AGENTS.yaml", type=a_file, help="maps participant names to agents")
    p.add_argument("--block", metavar="NAME", type=a_block, help="the block (session spec) to run when FILE has several")
    p.add_argument("--task", metavar="TEXT", help="the start speaker's first input")
    p.add_argument("--store", metavar="hub.db", type=a_store,
                   help="keep the session in this SQLite file or postgresql:// database (default: a temporary file)")
    p.add_argument("--durability", choices=("process", "full"), default="process",
                   help="what a returned post survives: process (default) a crash or kill -9 of this process; "
                        "full a power loss too (an fsync / WAL flush per group commit; docs/runtime.md)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="the transcript as text (default) or json")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="print only the final state line (text format); with --tasks, the summary's totals line")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="print agents' telemetry to stderr as it is stored (with --tasks, after each task's id)")
    p.add_argument("--max-turns", type=positive_int, metavar="N", help="end the session after N turns (this run only)")
    p.add_argument("--timeout", type=duration, metavar="DURATION",
                   help="the session's TTL for this run: 90, 90s, 250ms, 5m or 1h")
    p.add_argument("--hub", metavar="ws://HOST:PORT", type=text_type("a served hub's address, ws://HOST:PORT"),
                   help="take part in the session on a served hub (turnflow serve): the agents file's agents are "
                        "registered there under their participant names, the other participants are remote "
                        "(docs/serve.md)")
    p.add_argument("--hub-keys", metavar="FILE", type=a_file,
                   help="with --hub: JSON object of agent name -> API key for the agents file's agents, for a hub "
                        "started with --auth-keys (same shape); keys are sent in AG2's ApiKeyAuth shape, never printed")
    from turnflow.cli.commands.run_batch import add_arguments

    add_arguments(p)  # --tasks, --concurrency, --lease: batch runs (commands/run_batch.py)
    p.set_defaults(func=run)


def _hub_keys(args) -> Optional[dict]:
    """`--hub-keys FILE` read (only with `--hub`), or None."""
    path = getattr(args, "hub_keys", None)
    if path is None:
        return None
    if not getattr(args, "hub", None):
        raise RunInputError("--hub-keys needs --hub ws://HOST:PORT", EXIT_USAGE)
    from turnflow.serve.app import OptionError, load_keys

    try:
        return load_keys(path, "--hub-keys")
    except OptionError as exc:
        raise RunInputError(str(exc), EXIT_USAGE) from None


def _specs(args) -> tuple["SessionSpec", list["SessionSpec"]]:
    """The spec to run and, with `--hub`, the other form of its workflow graph a remote opener
    may have used: served, a .flow's workflow is compiled in AG2's built-in conditions wherever
    they are exact (so AG2's unchanged client can take part), and an opener's session on the
    graph with turnflow's extension conditions (`turnflow.compile`'s default) is joined too."""
    text = read_input(args.file)
    if not getattr(args, "hub", None):
        spec = pick(load_specs(args.file, text), args.block, args.file)
        refuse_names_the_hub_cannot_run(args.file, text, [spec.get("name")])
        return parse_spec(spec, args.file), []
    spec = pick(load_specs(args.file, text, builtin=True), args.block, args.file)
    refuse_names_the_hub_cannot_run(args.file, text, [spec.get("name")])
    plain = pick(load_specs(args.file, text), args.block, args.file)
    return parse_spec(spec, args.file), [parse_spec(plain, args.file)] if plain != spec else []


def run(args) -> int:
    from turnflow.runtime.errors import RuntimeErrorBase, StoreError

    if getattr(args, "tasks", None) is not None:
        from turnflow.cli.commands.run_batch import run_batch

        return run_batch(args)
    from turnflow.cli.commands.run_batch import refuse_batch_options

    if refuse_batch_options(args):
        return EXIT_USAGE
    try:
        spec, args.other_forms = _specs(args)
        file = load_agents_file(args.agents)
        agents = file.agents
        names = list(spec.participant_ids)
        if set(agents) <= set(names):
            check_agents(spec, file)
        if not getattr(args, "hub", None):  # served, the participants the file lacks are the remote ones
            agents = fill_absent(names, agents, args.agents)
        args.keys = _hub_keys(args)
    except RunInputError as exc:
        err(f"turnflow run: {exc}")
        return exc.status
    import asyncio  # here, not at import time: every `turnflow` command would pay for it

    printer = Printer(args)
    try:
        if args.store:
            result = asyncio.run(_run(spec, agents, args, args.store, printer))
        else:
            import tempfile  # only a run without --store needs it

            with tempfile.TemporaryDirectory(prefix="turnflow-run-") as tmp:
                result = asyncio.run(_run(spec, agents, args, os.path.join(tmp, "hub.db"), printer))
    except StoreError as exc:  # the store cannot be used (not a store, in use): unreadable input
        err(f"turnflow run: {exc}")
        return EXIT_USAGE
    except RuntimeErrorBase as exc:
        err(f"turnflow run: {args.file}: {exc}")
        return EXIT_ERROR
    printer.finish(result)
    if result.error:
        err(f"turnflow run: {result.error}")
    if printer.broken is not None and not isinstance(printer.broken, BrokenPipeError):
        err(f"turnflow run: the output could not be written ({type(printer.broken).__name__}: {printer.broken}); "
            f"the session ran to its end{' and is stored: turnflow inspect ' + args.store if args.store else ''}")
        return EXIT_USAGE
    if printer.signals:
        return 128 + printer.signals[0]
    return EXIT_OK if result.ok else EXIT_ERROR


async def _run(spec: "SessionSpec", agents: dict, args, store_path: str, printer: "Printer"):
    import asyncio

    from turnflow.runtime.hub import Hub
    from turnflow.runtime.runner import RunControl, run_session
    from turnflow.runtime.store import open_store

    control = RunControl()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        printer.signals.append(signum)
        name = signal.Signals(signum).name
        if len(printer.signals) == 1:
            err(f"turnflow run: {name}: closing the session (reason: interrupted)")
            control.interrupt("interrupted")
        else:
            err(f"turnflow run: {name} again: still closing the session, one moment")

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, int(sig))
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # no signal support here (Windows, a thread)
            pass
    try:
        if getattr(args, "hub", None):  # the file's agents on a served hub, the others remote (docs/serve.md)
            return await _run_served(spec, agents, args, printer, control)
        store = open_store(store_path, durability=args.durability)
        if store.dialect.shared:
            # a database other runs and batch workers share: this run hydrates nothing and writes only
            # its own session (a whole-store hydrate would also complete other sessions' pending closes)
            hub = Hub(store)
        else:
            hub = await Hub.open(store)
        hub.subscribe(printer.envelope)
        if args.verbose:
            hub.subscribe_telemetry(printer.telemetry)
        try:
            return await run_session(hub, spec, agents, args.task, control=control, max_turns=args.max_turns,
                                     ttl_seconds=args.timeout)
        finally:
            await hub.aclose()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def _run_served(spec: "SessionSpec", agents: dict, args, printer: "Printer", control):
    """`run --hub`: the session on the served hub, driven through its port; no hub in this process.
    With `--store`, the session as the run saw it and the agents' telemetry are written there at the end."""
    from turnflow.runtime.store import open_store
    from turnflow.serve.remote import run_remote

    store = open_store(args.store, durability=args.durability) if args.store else None  # refused before connecting
    ports = []

    def on_port(port) -> None:
        ports.append(port)
        port.subscribe(printer.envelope)
        if args.verbose:
            port.telemetry_listeners.append(printer.telemetry)

    try:
        result = await run_remote(args.hub, spec, agents, args.task, keys=getattr(args, "keys", None),
                                  notice=lambda text: err(f"turnflow run: {text}"), control=control,
                                  other_forms=getattr(args, "other_forms", ()), on_port=on_port,
                                  max_turns=args.max_turns, ttl_seconds=args.timeout)
        if store is not None and ports:
            await ports[0].copy_to(store)
        return result
    finally:
        if store is not None:
            store.close()


class Printer:
    """Live output of `turnflow run`: turn lines as the hub accepts them, warnings, telemetry."""

    def __init__(self, args) -> None:
        self.json = args.format == "json"
        self.quiet = args.quiet
        self.signals: list[int] = []
        self.turns = 0
        self.started = time.monotonic()
        self.stdout_tty = sys.stdout.isatty()
        if self.json or self.quiet:  # stdout stays machine-readable: progress on a terminal's stderr only
            self.progress = sys.stderr if sys.stderr.isatty() else None
        else:
            self.progress = sys.stdout
        self.header = False
        self.broken: Optional[OSError] = None  # why the live output could not be written

    def _line(self, text: str) -> None:
        """One line of live output: foreign text (agents' messages, their names, reasons) made
        visible (`term.visible`: control and bidi characters, lone surrogates as escapes), so
        nothing an agent says can act on the terminal or make the write fail."""
        if self.progress is None or self.broken is not None:
            return
        try:
            write_text(self.progress, visible(text) + "\n")
            self.progress.flush()
        except OSError as exc:  # a full disk, a closed pipe: the session goes on and is stored; said at the end
            self.broken = exc

    async def envelope(self, env, md) -> None:
        from turnflow.runtime.envelope import EV_EXPECTATION_VIOLATED
        from turnflow.runtime.runner import turn_of

        if not self.header:
            self.header = True
            self._line(f"session {md.session_id}")
        if env.event_type == EV_EXPECTATION_VIOLATED:
            d = env.event_data
            if d.get("action") in ("warn", "auto_close", "hide"):
                who = f": {d['agent_id']!r} did not speak in time" if d.get("agent_id") else ""
                what = {"warn": "warning", "auto_close": "closing the session", "hide": "skipping the participant"}
                err(f"turnflow run: {what[d['action']]}: expectation {d.get('name')} ({d.get('seconds'):g} s) "
                    f"violated{who}")
            return
        t = turn_of(env)
        if t is not None:
            self.turns += 1
            self._line(turn_line(self.turns, t))

    def telemetry(self, session_id: str, record: dict) -> None:
        from turnflow.cli.commands.inspect import render_telemetry

        err(render_telemetry(record).strip())

    def finish(self, result) -> None:
        if self.json:
            out(json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n")
            return
        if not self.header and not self.quiet:
            self._line(f"session {result.session_id}")
        final = f"{result.state}: {result.close_reason or '-'}"
        if result.close_reason == "invite_rejected" and not result.turns:  # the hub's word, told in the user's
            final = "closed before the first turn: an agent could not join the session (invite_rejected)"
        if self.quiet:
            out(visible(final) + "\n")
            return
        self._line(final)
        if self.stdout_tty:
            self._line(f"{len(result.turns)} turn{'s' if len(result.turns) != 1 else ''} "
                       f"in {time.monotonic() - self.started:.1f} s")


def turn_line(i: int, t: dict) -> str:
    notes = []
    if t["kind"] == "handoff":
        notes.append(f"handoff via {t['tool']}" if t["tool"] else f"handoff to {t['target']}")
        if t["tool"] and t["target"]:
            notes[-1] += f" to {t['target']}"
    elif t["kind"] == "finish":
        notes.append("finish")
    if t["set"]:
        notes.append("set " + json.dumps(t["set"], sort_keys=True))
    if t["delete"]:
        notes.append("delete " + ", ".join(t["delete"]))
    suffix = f"  [{'; '.join(notes)}]" if notes else ""
    return f"{i:>3} {t['speaker']}: {t['body']}{suffix}"


def render_text(result) -> str:
    """The whole text report of a finished run (what the live output adds up to)."""
    lines = [f"session {result.session_id}"]
    lines += [turn_line(i, t) for i, t in enumerate(result.turns, 1)]
    lines.append(f"{result.state}: {result.close_reason or '-'}")
    return visible("\n".join(lines)) + "\n"
