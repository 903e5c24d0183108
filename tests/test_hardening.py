"""Regression tests for issue 14 (hardening): each test names the defect it pins.
Bad or hostile input gets a clear message and exit 0/1/2, never an internal error (3)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

import turnflow
from turnflow.cli import main

SILENCED_ERROR = """workflow w {
    participant a
    participant b
    start a
    a -> zzz  # turnflow: ignore
    otherwise -> terminate "x"
}
"""


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- defect 3: an error silenced with `ignore` still blocks compile ---------------------------------
def test_defect3_silenced_error_still_blocks_compile_api():
    assert turnflow.check(SILENCED_ERROR) == []  # `check` honours the suppression
    with pytest.raises(turnflow.CompileError) as info:
        turnflow.compile(SILENCED_ERROR)
    assert [d.code for d in info.value.diagnostics if d.severity == "error"] == ["TF103"] or \
        any(d.severity == "error" and d.span.line == 5 for d in info.value.diagnostics)


def test_defect3_silenced_error_still_blocks_compile_cli(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text(SILENCED_ERROR, encoding="utf-8")
    code, out, err = run_cli(capsys, "compile", str(f))
    assert code == 1 and out == ""
    assert "w.flow:5:" in err


def test_defect3_silenced_warning_does_not_block_compile():
    text = SILENCED_ERROR.replace("a -> zzz  # turnflow: ignore", "a -> b")
    assert turnflow.compile(text)


# -- defect 4: internal errors on input --------------------------------------------------------------
HUGE = "9" * 5000


@pytest.mark.parametrize("text", [
    f'workflow w {{\n participant a\n participant b\n start a\n max_turns {HUGE}\n a -> terminate "x"\n}}\n',
    f'workflow w {{\n participant a\n participant b\n start a\n context k = {HUGE}\n a -> b\n}}\n',
    f'workflow w {{\n participant a\n participant b\n start a\n ttl {HUGE}s\n a -> b\n}}\n',
    f'workflow w {{\n participant a\n participant b\n start a\n a -> b when context.k == -{HUGE}\n}}\n',
])
@pytest.mark.parametrize("command", ["check", "fmt", "compile", "graph"])
def test_defect4_huge_integers_are_tf002(tmp_path, capsys, text, command):
    diags = turnflow.check(text)  # never raises
    assert [d.code for d in diags] == ["TF002"]
    assert "too" in diags[0].message
    f = tmp_path / "w.flow"
    f.write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, command, str(f))
    assert code in (1, 2), err
    assert "internal error" not in err and "TF002" in err + _


def test_defect4_migrate_huge_integer(tmp_path, capsys):
    f = tmp_path / "team.json"
    f.write_text('{"provider": "autogen_agentchat.teams.RoundRobinGroupChat", "config": {"participants": [],'
                 f' "max_turns": {HUGE}}}}}', encoding="utf-8")
    code, _, err = run_cli(capsys, "migrate", str(f))
    assert code in (1, 2) and "internal error" not in err


def _spec_json(tmp_path):
    spec = turnflow.compile('workflow w {\n participant a\n participant b\n start a\n a -> b\n'
                            ' b -> terminate "done"\n}\n')
    return spec


@pytest.mark.parametrize("mutate", ["nested", "surrogate_reason", "surrogate_name", "e300_turns",
                                    "e300_priority", "e300_context", "big_int"])
def test_defect4_decompile_hostile_json(tmp_path, capsys, mutate):
    spec = _spec_json(tmp_path)
    text = json.dumps(spec)
    if mutate == "nested":
        text = text.replace('"title": null', '"title": ' + "[" * 100000 + "]" * 100000)
    elif mutate == "surrogate_reason":
        text = text.replace('"done"', '"\\ud800done"')
    elif mutate == "surrogate_name":
        text = text.replace('"w"', '"\\udc00"')
    elif mutate == "e300_turns":
        text = text.replace('"max_turns": null', '"max_turns": 1e300')
    elif mutate == "e300_priority":
        text = text.replace('"priority": 0', '"priority": 1e300')
    elif mutate == "e300_context":
        text = text.replace('"context_vars": {}', '"context_vars": {"k": 1e300}')
    elif mutate == "big_int":
        text = text.replace('"max_turns": null', f'"max_turns": {HUGE}')
    assert text != json.dumps(spec)
    f = tmp_path / "s.json"
    f.write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "decompile", str(f))
    assert code in (0, 1, 2) and "internal error" not in err, err
    if code == 0:  # what decompile prints compiles back
        assert turnflow.check(out) == [] or all(d.severity != "error" for d in turnflow.check(out))


def test_defect4_decompile_api_deeply_nested_data():
    data = []
    for _ in range(5000):
        data = [data]
    with pytest.raises(turnflow.DecompileError):
        turnflow.decompile({"initial_speaker": "a", "transitions": data})


def test_defect4_graph_output_missing_dir_or_directory(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text('workflow w {\n participant a\n participant b\n start a\n a -> b\n}\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "graph", str(f), "-o", str(tmp_path / "missing" / "x.dot"))
    assert code == 2 and "cannot write" in err
    code, _, err = run_cli(capsys, "graph", str(f), "-o", str(tmp_path))
    assert code == 2 and "cannot write" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_defect4_fmt_unwritable_directory(tmp_path, capsys):
    d = tmp_path / "ro"
    d.mkdir()
    f = d / "w.flow"
    f.write_text('workflow w {\nparticipant a\n participant b\n start a\n a -> b\n}\n', encoding="utf-8")
    d.chmod(0o555)
    try:
        code, _, err = run_cli(capsys, "fmt", str(f))
    finally:
        d.chmod(0o755)
    assert code == 2 and "cannot write" in err and "internal error" not in err


# -- defect 10: files written by the tool ------------------------------------------------------------
UNFORMATTED = 'workflow w {\nparticipant a\n participant b\n start a\n a -> b\n}\n'


def test_defect10_output_honours_umask(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text(UNFORMATTED, encoding="utf-8")
    old = os.umask(0o022)
    try:
        assert main(["compile", str(f), "-o", str(tmp_path / "out.json")]) == 0
        assert main(["graph", str(f), "-o", str(tmp_path / "out.dot")]) == 0
    finally:
        os.umask(old)
    for name in ("out.json", "out.dot"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644


def test_defect10_fmt_keeps_mode_bits(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text(UNFORMATTED, encoding="utf-8")
    f.chmod(0o640)
    assert main(["fmt", str(f)]) == 0
    assert f.read_text(encoding="utf-8") != UNFORMATTED
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_defect10_fmt_keeps_owner(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text(UNFORMATTED, encoding="utf-8")
    os.chown(f, 12345, 12346)
    assert main(["fmt", str(f)]) == 0
    assert (f.stat().st_uid, f.stat().st_gid) == (12345, 12346)


def test_defect10_fmt_formats_a_symlinks_target_in_place(tmp_path, capsys):
    target = tmp_path / "real.flow"
    target.write_text(UNFORMATTED, encoding="utf-8")
    link = tmp_path / "link.flow"
    link.symlink_to(target)
    assert main(["fmt", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") != UNFORMATTED
    assert turnflow.check(target.read_text(encoding="utf-8")) == turnflow.check(UNFORMATTED)


def test_defect10_fmt_refuses_read_only_file_and_continues(tmp_path, capsys):
    ro = tmp_path / "a_ro.flow"
    ro.write_text(UNFORMATTED, encoding="utf-8")
    ro.chmod(0o444)
    rw = tmp_path / "b_rw.flow"
    rw.write_text(UNFORMATTED, encoding="utf-8")
    code, out, err = run_cli(capsys, "fmt", str(ro), str(rw))
    assert code == 2
    assert f"cannot write `{ro}`" in err and "read-only" in err
    assert ro.read_text(encoding="utf-8") == UNFORMATTED  # untouched
    assert rw.read_text(encoding="utf-8") != UNFORMATTED  # the next file was still formatted
    assert f"reformatted {rw}" in out and "internal error" not in err


def test_defect4_fmt_write_failure_in_folder_is_reported(tmp_path, capsys, monkeypatch):
    """An unwritable folder (simulated: root ignores permission bits) is exit 2, not 3."""
    import tempfile

    f = tmp_path / "w.flow"
    f.write_text(UNFORMATTED, encoding="utf-8")

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, _, err = run_cli(capsys, "fmt", str(f))
    assert code == 2 and f"cannot write `{f}`: Permission denied" in err
    assert f.read_text(encoding="utf-8") == UNFORMATTED


# -- defects 4, 7, 8: stores --------------------------------------------------------------------------
from pathlib import Path  # noqa: E402
import hashlib  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import subprocess  # noqa: E402

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"
SPEC = str(RUNTIME / "support.json")
AGENTS = str(RUNTIME / "support_agents.yaml")


def _digest(path) -> "str | None":
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if os.path.exists(path) else None


def _store_with_unflushed_wal(tmp_path, capsys) -> Path:
    """A store whose newest records are only in its -wal file (as after a crash)."""
    db = tmp_path / "live" / "hub.db"
    db.parent.mkdir()
    assert main(["run", SPEC, "--agents", AGENTS, "--store", str(db), "--format", "json"]) == 0
    capsys.readouterr()
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("INSERT INTO telemetry (session_id, record) VALUES ('x', '{}')")  # a write that stays in the WAL
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        shutil.copy(str(db) + suffix, copy / ("hub.db" + suffix))
    con.close()
    assert (copy / "hub.db-wal").stat().st_size > 0
    return copy / "hub.db"


def test_defect7_inspect_is_read_only(tmp_path, capsys):
    db = _store_with_unflushed_wal(tmp_path, capsys)
    before = (_digest(db), _digest(str(db) + "-wal"))
    code, out, err = run_cli(capsys, "inspect", str(db))
    assert code == 0 and "session" in out, err
    assert (_digest(db), _digest(str(db) + "-wal")) == before  # no checkpoint, -wal kept
    assert not os.path.exists(str(db) + ".lock")


@pytest.mark.parametrize("kind", ["empty_file", "empty_sqlite", "foreign", "foreign_with_meta", "junk"])
def test_defect7_inspect_and_run_refuse_what_is_not_a_store(tmp_path, capsys, kind):
    db = tmp_path / "x.db"
    if kind == "empty_file":
        db.write_bytes(b"")
    elif kind == "junk":
        db.write_bytes(b"this is not sqlite at all" * 100)
    else:
        con = sqlite3.connect(db)
        con.execute("PRAGMA user_version = 7")
        if kind == "foreign":
            con.execute("CREATE TABLE accounts (id INTEGER, name TEXT)")
        if kind == "foreign_with_meta":
            for t in ("meta", "sessions", "envelopes", "telemetry"):
                con.execute(f"CREATE TABLE {t} (key TEXT, value TEXT)")
        con.commit()
        con.close()
    before = _digest(db)
    code, _, err = run_cli(capsys, "inspect", str(db))
    assert code == 2 and "internal error" not in err
    assert "not a turnflow store" in err or "cannot open" in err
    assert _digest(db) == before
    assert not os.path.exists(str(db) + "-wal")
    if kind in ("empty_file", "empty_sqlite"):
        return  # `run --store` may make an empty database a store
    code, _, err = run_cli(capsys, "run", SPEC, "--agents", AGENTS, "--store", str(db))
    assert code == 2 and ("not a turnflow store" in err or "cannot open" in err), err
    assert _digest(db) == before


def test_defect8_second_writer_is_told_the_store_is_in_use(tmp_path, capsys):
    from turnflow.runtime.errors import StoreError
    from turnflow.runtime.store import SQLiteStore

    db = str(tmp_path / "hub.db")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time\nfrom turnflow.runtime.store import SQLiteStore\n"
                               f"s = SQLiteStore({db!r})\nprint('ready', flush=True)\nsys.stdin.read()\n"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match=f"store in use by pid {holder.pid}"):
            SQLiteStore(db)
        code, _, err = run_cli(capsys, "run", SPEC, "--agents", AGENTS, "--store", db)
        assert code == 2 and f"store in use by pid {holder.pid}" in err
        code, out, err = run_cli(capsys, "inspect", db)  # reading is fine meanwhile
        assert code == 0, err
    finally:
        holder.stdin.close()
        holder.wait(10)
    SQLiteStore(db).close()  # the lock went away with the process


def test_defect8_inspect_warns_when_sessions_were_lost(tmp_path, capsys):
    db = tmp_path / "hub.db"
    for _ in range(2):
        assert main(["run", SPEC, "--agents", AGENTS, "--store", str(db), "--format", "json"]) == 0
    capsys.readouterr()
    con = sqlite3.connect(db)  # what a lost -wal looks like: the newest session is gone
    con.execute("DELETE FROM envelopes WHERE session_id = (SELECT session_id FROM sessions ORDER BY n DESC LIMIT 1)")
    con.execute("DELETE FROM sessions WHERE n = (SELECT MAX(n) FROM sessions)")
    con.commit()
    con.close()
    code, out, err = run_cli(capsys, "inspect", str(db))
    assert code == 2  # a store that lost committed records is damaged (issue #25): what survived is shown
    assert "records are missing" in err and "committed 2 sessions" in err and "it holds 1" in err, err
    assert "1 session\n" in out


@pytest.mark.parametrize("table,record", [
    ("sessions", "[]"),
    ("sessions", '{"session_id": 5}'),
    ("envelopes", '{"session_id": "S", "seq": 9}'),
    ("envelopes", "[1, 2]"),
    ("envelopes", "ENV_EVENT_DATA_LIST"),
])
def test_defect4_records_with_valid_checksum_but_wrong_shape(tmp_path, capsys, table, record):
    from turnflow.runtime.store.records import checksum

    db = tmp_path / "hub.db"
    assert main(["run", SPEC, "--agents", AGENTS, "--store", str(db), "--format", "json"]) == 0
    sid = json.loads(capsys.readouterr().out)["session_id"]
    con = sqlite3.connect(db)
    if table == "sessions":
        con.execute("UPDATE sessions SET record = ?, crc = ?", (record, checksum(sid, 0, record)))
    else:
        seq = 9
        if record == "ENV_EVENT_DATA_LIST":
            (text,) = con.execute("SELECT record FROM envelopes WHERE seq = ?", (seq,)).fetchone()
            rec = json.loads(text)
            rec["event_data"] = ["not", "a", "mapping"]
            record = json.dumps(rec)
        record = record.replace('"S"', json.dumps(sid))
        con.execute("UPDATE envelopes SET record = ?, crc = ? WHERE seq = ?", (record, checksum(sid, seq, record), seq))
    con.commit()
    con.close()
    code, out, err = run_cli(capsys, "inspect", str(db))
    assert code == 1 and "internal error" not in err, err
    assert "corrupt record" in err
    code, out, err = run_cli(capsys, "run", SPEC, "--agents", AGENTS, "--store", str(db))
    assert code in (0, 1, 2) and "internal error" not in err, err


# -- defect 6 and 4: hostile agents files --------------------------------------------------------------
def _bomb(levels: int, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"agents:\n  triage: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def test_defect6_yaml_alias_bomb_is_refused_quickly(tmp_path, capsys):
    import time

    f = tmp_path / "agents.yaml"
    f.write_text(_bomb(6), encoding="utf-8")  # a million leaves once expanded
    t0 = time.process_time()
    code, _, err = run_cli(capsys, "run", SPEC, "--agents", str(f))
    assert time.process_time() - t0 < 2.0
    assert code == 1 and "alias" in err and f"{f}:2:" in err
    assert len(err) < 500


def test_defect6_messages_never_repr_unbounded_values(tmp_path, capsys):
    f = tmp_path / "agents.yaml"
    f.write_text("agents:\n  triage: [" + ", ".join(["'" + "x" * 1000 + "'"] * 1000) + "]\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "run", SPEC, "--agents", str(f))
    assert code == 1 and "triage" in err and len(err) < 500


def test_defect4_deeply_nested_agents_file(tmp_path, capsys):
    f = tmp_path / "agents.yaml"
    f.write_text("agents: " + "[" * 50000 + "]" * 50000 + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "run", SPEC, "--agents", str(f))
    assert code == 1 and "internal error" not in err and "nested" in err


# -- defect 4: Graphviz failing, killed or hanging ------------------------------------------------------
FLOW_OK = 'workflow w {\n participant a\n participant b\n start a\n a -> b\n b -> terminate "done"\n}\n'


def _fake_dot(tmp_path, monkeypatch, body: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    dot = bin_dir / "dot"
    dot.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    dot.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.mark.parametrize("body,expected", [
    ("echo 'Error: syntax error in line 3' >&2; exit 1", "failed (exit 1): Error: syntax error in line 3"),
    ("kill -9 $$", "was killed (SIGKILL)"),
    ("cat > /dev/null; printf '<svg/>'", None),
])
def test_defect4_graphviz_failing_or_killed(tmp_path, capsys, monkeypatch, body, expected):
    _fake_dot(tmp_path, monkeypatch, body)
    f = tmp_path / "w.flow"
    f.write_text(FLOW_OK, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(f), "--format", "svg")
    if expected is None:
        assert code == 0 and out == "<svg/>"
    else:
        assert code == 2 and expected in err and "internal error" not in err


def test_defect4_graphviz_timeout(tmp_path, capsys, monkeypatch):
    import time

    _fake_dot(tmp_path, monkeypatch, "exec sleep 30")
    f = tmp_path / "w.flow"
    f.write_text(FLOW_OK, encoding="utf-8")
    t0 = time.monotonic()
    code, _, err = run_cli(capsys, "graph", str(f), "--format", "svg", "--timeout", "0.5")
    assert time.monotonic() - t0 < 10
    assert code == 2 and "did not finish within 0.5 s" in err and "--timeout" in err


# -- defect 5: "did you mean" in bounded time -----------------------------------------------------------
def _many_typos(n: int) -> str:
    lines = ["workflow w {"] + [f"    participant agent_{i:05d}" for i in range(n)] + ["    start agent_00000"]
    lines += [f"    agent_{i:05d} -> agnet_{i:05d}x" for i in range(n)]
    return "\n".join(lines + ["}"]) + "\n"


def test_defect5_did_you_mean_on_a_91kb_file_is_fast():
    import time

    text = _many_typos(1500)
    assert 85_000 < len(text) < 95_000
    t0 = time.process_time()
    diags = turnflow.check(text)
    spent = time.process_time() - t0
    assert spent < 6.0, spent  # 33 s before the fix
    typos = [d for d in diags if d.code == "TF102"]
    assert len(typos) == 1500
    assert typos[7].help == "did you mean `agent_00007`?"


def test_defect5_small_sets_suggest_exactly_as_difflib():
    import difflib

    from turnflow.compiler.checks.suggest import Suggester

    names = ["writer", "critic", "editor", "reviewer", "wrter2", "a", "b1"]
    s = Suggester(names)
    for q in ["writter", "critc", "edtor", "x", "b", "reviewr", "riter", "aa"]:
        close = difflib.get_close_matches(q, names, n=1, cutoff=0.6)
        assert s(q) == (close[0] if close else None)


def test_defect5_large_sets_still_find_a_typo_of_a_declared_name():
    from turnflow.compiler.checks.suggest import Suggester

    names = [f"{w}_{i}" for i in range(300) for w in ("writer", "critic")]
    s = Suggester(names)
    assert s("writter_123") == "writer_123"
    assert s("critic_2999") is not None
    assert s("zzzzzzzz") is None


# -- defect 12: output injection ------------------------------------------------------------------------
HOSTILE = ('workflow w {\n participant a "<img src=x onerror=alert(1)>"\n participant b\n start a\n'
           ' a -> b when text contains "<script>alert(1)</script>"\n'
           ' b -> terminate "</b><script>x()</script> #quot; `md` &amp;"\n}\n')


def test_defect12_mermaid_labels_are_escaped(tmp_path, capsys):
    f = tmp_path / "w.flow"
    f.write_text(HOSTILE, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(f), "--format", "mermaid")
    assert code == 0, err
    for raw in ("<script>", "</script>", "<img", "</b>", "&amp;", "`md`"):
        assert raw not in out
    assert "#lt;script#gt;" in out
    assert "<br/>" not in out or all("<" not in line.replace("<br/>", "") for line in out.splitlines()
                                     if line.strip().startswith(("n", "b")))


# -- defect 13: malformed packets in the plain kinds ----------------------------------------------------
@pytest.mark.parametrize("kind,people", [("consulting", "consult"), ("conversation", ["x", "y"]),
                                         ("discussion", ["x", "y"])])
@pytest.mark.parametrize("bad", [
    {"routing": {"kind": "text"}, "context_updates": ["set", "k"], "body": "hi"},
    {"routing": {"kind": "text"}, "context_updates": "delete everything", "body": "hi"},
    {"routing": ["text"], "context_updates": {}, "body": "hi"},
    {"routing": {"kind": "text"}, "context_updates": {"set": ["k"]}, "body": "hi"},
])
def test_defect13_malformed_packets_are_protocol_errors(kind, people, bad):
    import asyncio

    from runtime_helpers import active, new_hub
    from turnflow.runtime.envelope import EV_PACKET, Envelope
    from turnflow.runtime.errors import ProtocolError
    from turnflow.runtime.session import Participant

    if people == "consult":
        people = [Participant("x", "initiator", 0), Participant("y", "respondent", 1)]

    async def go():
        hub = await new_hub()
        md = await active(hub, kind, people)
        before = hub.info(md.session_id)
        with pytest.raises(ProtocolError):
            await hub.post(Envelope(md.session_id, "x", None, EV_PACKET, bad))
        assert hub.info(md.session_id) == before  # nothing changed
    asyncio.run(go())


@pytest.mark.parametrize("kind", ["consulting", "conversation", "discussion"])
def test_defect13_the_differences_from_ag2_listed_in_runtime_md_hold(kind):
    """docs/runtime.md "Consulting, conversation and discussion vs AG2 1.2.1": each listed
    difference is real (AG2 accepts, turnflow refuses or counts), so the list cannot go stale."""
    import asyncio

    from ag2.network.adapters.consulting import ConsultingAdapter
    from ag2.network.adapters.conversation import ConversationAdapter
    from ag2.network.adapters.discussion import DiscussionAdapter
    from ag2.network.channel import ChannelMetadata, ChannelState
    from ag2.network.channel import Participant as AG2Participant
    from ag2.network.channel import ParticipantRole
    from ag2.network.envelope import EV_CONTEXT_SET as AG2_SET, EV_PACKET as AG2_PACKET, Envelope as AG2Env

    from runtime_helpers import active, new_hub
    from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, Envelope, packet
    from turnflow.runtime.errors import ProtocolError
    from turnflow.runtime.session import Participant

    ag2 = {"consulting": ConsultingAdapter, "conversation": ConversationAdapter,
           "discussion": DiscussionAdapter}[kind]()
    md = ChannelMetadata(channel_id="c", manifest=ag2.manifest, creator_id="x", state=ChannelState.ACTIVE,
                         created_at="", knobs={"bogus": 1},
                         participants=[AG2Participant("x", ParticipantRole.INITIATOR, 0),
                                       AG2Participant("y", ParticipantRole.RESPONDENT, 1)])
    ag2.validate_create(md)  # 1. unknown knobs: AG2 ignores them
    state = ag2.initial_state(md)
    for et, data in [(AG2_PACKET, {"body": "hi"}),  # 2. a packet is not a round in AG2 (even out of turn)
                     (AG2_PACKET, {"body": "", "routing": {"kind": "handoff", "target": "x"}}),  # 3.
                     (AG2_SET, {"set": {"k": 1}})]:  # 4. context sets are informational in AG2
        env = AG2Env("c", "y", None, et, data)
        ag2.validate_send(md, env, state)
        assert ag2.fold(env, state) == state

    people = [Participant("x", "initiator", 0), Participant("y", "respondent", 1)]

    async def go():
        hub = await new_hub()
        with pytest.raises(ProtocolError, match="unknown knob"):
            await hub.open_session(kind, people, creator_id="x", knobs={"bogus": 1})
        md2 = await active(hub, kind, people)
        if kind != "conversation":
            with pytest.raises(ProtocolError, match="expects 'x'"):
                await hub.post(Envelope(md2.session_id, "y", None, EV_PACKET, packet("hi")))
        await hub.post(Envelope(md2.session_id, "x", None, EV_PACKET, packet("hi")))
        assert hub.info(md2.session_id)["turn_count"] == 1
        with pytest.raises(ProtocolError, match="plain rounds only"):
            await hub.post(Envelope(md2.session_id, "y", None, EV_PACKET, packet("", kind="handoff", target="x")))
        with pytest.raises(ProtocolError, match="no context"):
            await hub.post(Envelope(md2.session_id, "y", None, EV_CONTEXT_SET, {"set": {"k": 1}}))
    asyncio.run(go())


# -- defect 9: line endings -----------------------------------------------------------------------------
def test_defect9_cr_only_file_is_read_line_by_line():
    text = 'workflow w {\r participant a\r participant b\r start a\r a -> zzz\r}\r'
    diags = turnflow.check(text)
    assert [(d.code, d.span.line, d.span.column) for d in diags] == [("TF102", 5, 7)]


@pytest.mark.parametrize("eol", ["\r\n", "\r", "\n"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_defect9_fmt_keeps_line_endings_and_bom(tmp_path, capsys, eol, bom):
    f = tmp_path / "w.flow"
    f.write_bytes((bom + UNFORMATTED.replace("\n", eol)).encode("utf-8"))
    assert main(["fmt", str(f)]) == 0
    data = f.read_bytes().decode("utf-8")
    assert data.startswith(bom + "workflow w {" + eol)
    assert data.replace(eol, "") == data.replace(eol, "").replace("\r", "").replace("\n", "")  # one style only
    assert data.count(eol) == 6
    assert main(["fmt", "--check", str(f)]) == 0  # stable


@pytest.mark.parametrize("flag", ["--check", "--diff"])
def test_defect9_fmt_stdin_honours_check_and_diff(capsys, monkeypatch, flag):
    import io

    class Stdin:
        buffer = io.BytesIO(UNFORMATTED.encode("utf-8"))

    monkeypatch.setattr(sys, "stdin", Stdin)
    code, out, err = run_cli(capsys, "fmt", flag, "-")
    assert code == 1
    if flag == "--check":
        assert out == "would reformat -\n"
    else:
        assert out.startswith("--- -\n+++ -\n") and "-participant a" in out and "+    participant a" in out


# -- defect 2: fmt never changes the findings ----------------------------------------------------------
def test_defect2_numbers_out_of_json_range_are_tf002():
    for lit in ("1e309", "-1e309", "1e400"):
        diags = turnflow.check(f'workflow w {{\n participant a\n participant b\n start a\n'
                               f' a -> b when context.k == {lit}\n}}\n')
        assert [d.code for d in diags] == ["TF002"] and "out of the JSON number range" in diags[0].message


@pytest.mark.parametrize("text", [
    "workflow w {\n participant a\n participant b\n start a\n a -> zz; a -> b # turnflow: ignore\n}\n",
    "workflow w {\n participant a\n participant b\n start a\n a -> zz\n ; # turnflow: ignore\n}\n",
])
def test_defect2_fmt_cli_never_changes_the_findings(tmp_path, capsys, text):
    f = tmp_path / "w.flow"
    f.write_text(text, encoding="utf-8")
    before = [(d.code, d.severity) for d in turnflow.check(text)]
    code, out, err = run_cli(capsys, "fmt", str(f))
    after = f.read_text(encoding="utf-8")
    assert sorted((d.code, d.severity) for d in turnflow.check(after)) == sorted(before)
    if after == text:  # refused: said why
        assert code == 1 and "would change its findings" in err


def test_defect6_spec_messages_are_bounded(tmp_path, capsys):
    spec = _spec_json(tmp_path)
    spec[0]["knobs"]["graph"]["max_turns"] = {"x": ["y" * 100] * 10000}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(spec), encoding="utf-8")
    code, _, err = run_cli(capsys, "decompile", str(f))
    assert code == 1 and "max_turns" in err and len(err) < 600


def test_defect4_decompile_knobs_with_bad_context_vars(tmp_path, capsys):
    f = tmp_path / "k.json"
    f.write_text('{"graph": {"initial_speaker": "a", "transitions": [{"when": {"name": "always", "args": {}}, '
                 '"then": {"name": "agent", "args": {"agent_id": "b"}}}]}, "context_vars": true}', encoding="utf-8")
    code, _, err = run_cli(capsys, "decompile", str(f))
    assert code == 1 and "$.context_vars" in err and "internal error" not in err


@pytest.mark.parametrize("mutate", [
    lambda s: s["participants"][0].__setitem__("order", "x"),
    lambda s: s["participants"][0].__setitem__("role", ["initiator"]),
    lambda s: s["participants"][1].__setitem__("tools", 5),
    lambda s: s.__setitem__("kind", []),
    lambda s: s["knobs"]["graph"].__setitem__("initial_speaker", {"a": 1}),
    lambda s: s["knobs"]["graph"]["transitions"][0]["then"].__setitem__("name", ["agent"]),
])
def test_defect4_run_on_a_malformed_spec_is_a_clear_error(tmp_path, capsys, mutate):
    spec = json.loads(Path(SPEC).read_text(encoding="utf-8"))
    mutate(spec)
    f = tmp_path / "s.json"
    f.write_text(json.dumps(spec), encoding="utf-8")
    code, _, err = run_cli(capsys, "run", str(f), "--agents", AGENTS)
    assert code == 1 and "internal error" not in err and err.startswith("turnflow run:"), err


def test_compile_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path, capsys):
    """`-o` naming something that is not a regular file (a FIFO here; `/dev/null`, a terminal) is
    written into, as a shell redirection would: it was replaced by a regular file, which as root
    turned `/dev/null` into a file for the whole machine."""
    import threading

    src = tmp_path / "s.flow"
    src.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n    b -> terminate\n}\n", encoding="utf-8")
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run_cli(capsys, "compile", str(src), "-o", str(fifo))
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and json.loads(got[0])
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".turnflow-")]  # no temporary file left
