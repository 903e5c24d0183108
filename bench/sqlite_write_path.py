"""The SQLite store's write path alone: the rows of a real store (its sessions' creation records
and its envelopes, in the order the hub wrote them) written again into a fresh store with the
schema and settings of runtime/store/sqlite.py, in group commits of GROUP envelopes (the hub's
groups hold ~12 envelopes, 2 sessions, at 500 sessions at once), one `BEGIN IMMEDIATE ... COMMIT` each.
Prints the CPU per session (median of REPS writes), with a variant of the settings beside it:

    python3 bench/sqlite_write_path.py STORE.db [--group 12] [--reps 4] [--v7]
        [--variant default|noindex|syncoff|ckpt10000|exclusive] [--roster batch|commit|none] [--ends batch|none]

STORE.db: any store `turnflow serve` or `turnflow run` wrote (bench/serve_vs_ag2.py leaves its
hubs' stores in a temporary folder: `hub-*.db`). `--v7` renames the sessions to time-ordered ids
in their creation order, as the hub has minted them since session 11 (a store written before that
holds random ones, which scatter the `(session_id, seq)` index's inserts). The variants: `noindex`
without the `envelopes_by_session` index, `syncoff` with `synchronous=OFF`, `ckpt10000` with
`wal_autocheckpoint=10000`, `exclusive` with `locking_mode=EXCLUSIVE`. `--roster`: the rows of
`session_agents` (who has been on each session's roster) written every ROSTER_BATCH sessions, as
the store writes them (the default), with each group commit, or not at all. `--ends`: each session's
end record made and written every ENDS_BATCH sessions, as the hub hands them to the group commit
(the default), or not at all.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time

from turnflow.runtime.hub import ENDS_BATCH
from turnflow.runtime.store.records import checksum
from turnflow.runtime.store.sqlite import _AGENTS_OF, _AGENTS_TABLE, _ENDS_TABLE, _SCHEMA, ROSTER_BATCH

INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS envelopes_by_session ON envelopes (session_id, seq);"


def rows_of(path: str, v7: bool) -> tuple[dict[str, tuple], list[tuple]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    sessions = {sid: (sid, None, rec, crc) for sid, rec, crc in
                db.execute("SELECT session_id, record, crc FROM sessions ORDER BY n")}
    envs = db.execute("SELECT gseq, session_id, seq, record, crc FROM envelopes ORDER BY gseq").fetchall()
    db.close()
    if v7:  # 48 bits of "time" (the creation order), the rest of the old id
        new = {sid: "%012x" % (1 << 40 | i) + sid[12:] for i, sid in enumerate(sessions)}
        sessions = {new[k]: (new[k],) + v[1:] for k, v in sessions.items()}
        envs = [(g, new.get(sid, sid), seq, rec, crc) for g, sid, seq, rec, crc in envs]
    return sessions, envs


# an end record as the hub writes one for a session that closed (hub/hydrate.py `end_record`)
END = '["closed",1795979282.016926,"consulting_complete",1795979282.0166876,[]]'


def write_once(groups: list[tuple[list[tuple], list[tuple]]], variant: str, roster: str, ends: str = "none") -> float:
    folder = tempfile.mkdtemp()
    db = sqlite3.connect(os.path.join(folder, "replay.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF" if variant == "syncoff" else "PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-16384")
    if variant == "ckpt10000":
        db.execute("PRAGMA wal_autocheckpoint=10000")
    if variant == "exclusive":
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
    db.executescript(_SCHEMA.replace(INDEX, "") if variant == "noindex" else _SCHEMA)
    db.execute(_AGENTS_TABLE)
    db.execute(_ENDS_TABLE)
    held: list[tuple] = []
    ended: list[tuple] = []
    t0 = time.process_time()
    for sessions, rows in groups:
        db.execute("BEGIN IMMEDIATE")
        if sessions:
            db.executemany("INSERT INTO sessions (session_id, record, crc) VALUES (?1, ?3, ?4)", sessions)
        db.executemany("INSERT INTO envelopes (gseq, session_id, seq, record, crc) VALUES (?1, ?2, ?3, ?5, ?6)", rows)
        held += [(r[0], r[2]) for r in sessions] if roster != "none" else []
        if held and (roster == "commit" or len(held) >= ROSTER_BATCH):
            db.executemany(_AGENTS_OF, held)
            held = []
        if ends == "batch":  # (each session's end record, made and written ENDS_BATCH at a time, as the hub does)
            ended += [r[0] for r in sessions]
            if len(ended) >= ENDS_BATCH:
                db.executemany("INSERT OR REPLACE INTO session_ends (session_id, record, crc) VALUES (?, ?, ?)",
                               [(sid, END, checksum(sid, -1, END)) for sid in ended])
                ended = []
        db.execute("COMMIT")
    spent = time.process_time() - t0
    db.close()
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--group", type=int, default=12, help="envelopes per group commit")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--v7", action="store_true", help="time-ordered session ids, in creation order")
    ap.add_argument("--variant", default="default", choices=("default", "noindex", "syncoff", "ckpt10000", "exclusive"))
    ap.add_argument("--roster", default="batch", choices=("batch", "commit", "none"),
                    help="the session_agents rows: every ROSTER_BATCH sessions, as the store writes them; "
                         "with each commit; not at all")
    ap.add_argument("--ends", default="batch", choices=("batch", "none"),
                    help="the session_ends rows (end records): every ENDS_BATCH sessions, as the hub hands them "
                         "to the store; not at all (before branch ended-channels)")
    args = ap.parse_args()
    if INDEX not in _SCHEMA:
        raise SystemExit("the store's schema changed: update INDEX here")
    sessions, envs = rows_of(args.store, args.v7)
    groups = []
    for i in range(0, len(envs), args.group):
        chunk = envs[i:i + args.group]
        created = [sessions[e[1]] for e in chunk if e[2] == 1 and e[1] in sessions]
        groups.append((created, [(g, sid, seq, None, rec, crc) for g, sid, seq, rec, crc in chunk]))
    spent = statistics.median(write_once(groups, args.variant, args.roster, args.ends) for _ in range(args.reps))
    n = max(len(sessions), 1)
    print(f"{args.variant}, roster {args.roster}, ends {args.ends}: {len(sessions)} sessions, {len(envs)} envelopes, "
          f"{len(groups) / n:.2f} commits a session: "
          f"{spent / n * 1e6:.1f} µs of CPU per session (median of {args.reps})")


if __name__ == "__main__":
    main()
