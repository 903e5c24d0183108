"""A throw-away PostgreSQL server for the tests and bench/batch.py: `initdb` + `pg_ctl` on a
temporary directory and a free port on 127.0.0.1, trust authentication, no mocks. The first
server's fresh data directory is kept (`turnflow-pg-template-*` beside the servers' directories,
~40 MB) and copied for the next ones instead of running initdb again.

Binaries are looked up on PATH, then in Debian's /usr/lib/postgresql/*/bin (newest first).
initdb and postgres refuse to run as root: as root the server runs as the `postgres` user
(Debian's package creates it) or else `nobody`, through `runuser`, on a data directory owned
by that user.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Optional

SUPERUSER = "turnflow"
INITDB_ARGS = ("-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync")


def find_bindir() -> Optional[str]:
    """The directory holding initdb, pg_ctl and postgres, or None."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        real = os.path.dirname(os.path.realpath(found))
        if os.path.exists(os.path.join(real, "postgres")):
            return real
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        if all(os.path.exists(os.path.join(d, b)) for b in ("initdb", "pg_ctl", "postgres")):
            return d
    return None


def _version_key(path: str) -> tuple:
    v = path.split("/")[-2]
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> Optional[str]:
    """The unprivileged user to run the server as when we are root, else None."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists")


class PgServer:
    def __init__(self, bindir: str, *, fsync: bool = False) -> None:
        self.bindir = bindir
        self.fsync = fsync
        self.user = _run_as()
        # as root the server's user must reach the directory: /tmp, not a root-only $TMPDIR
        self.tmp = tempfile.mkdtemp(prefix="turnflow-pg-", dir="/tmp" if self.user is not None else None)
        self.data = os.path.join(self.tmp, "data")
        self.port = _free_port()
        self.log = os.path.join(self.tmp, "server.log")
        self.started = False
        self.databases: Optional["FreshDatabases"] = None  # set by whoever hands out databases (tests/conftest.py)

    def _cmd(self, *argv: str) -> list[str]:
        exe = [os.path.join(self.bindir, argv[0]), *argv[1:]]
        if self.user is None:
            return exe
        runuser = shutil.which("runuser") or shutil.which("su")
        if runuser is None:
            raise RuntimeError("running as root and neither runuser nor su exists")
        if runuser.endswith("runuser"):
            return [runuser, "-u", self.user, "--", *exe]
        return [runuser, "-s", "/bin/sh", self.user, "-c", shlex.join(exe)]

    def start(self) -> "PgServer":
        if self.user is not None:
            pw = pwd.getpwnam(self.user)
            os.chmod(self.tmp, 0o755)
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        template = self._template()
        copied = os.path.exists(os.path.join(template, "PG_VERSION")) and \
            subprocess.run(["cp", "-a", template, self.data], stderr=subprocess.DEVNULL).returncode == 0
        if not copied:
            shutil.rmtree(self.data, ignore_errors=True)  # (a copy that failed half-way)
            self._run(self._cmd("initdb", *INITDB_ARGS, "-D", self.data), env)
            self._publish(template)
        self.run_server()
        self.started = True
        return self

    def _template(self) -> str:
        """Where a data directory fresh from this initdb is kept for the next server (initdb costs
        ~2 s of wall and 0.6 s of CPU per server; a copy 0.15 s of CPU): one per binaries, user and
        arguments, in the folder the servers' directories are made in."""
        st = os.stat(os.path.join(self.bindir, "postgres"))
        key = hashlib.sha256(repr((self.bindir, st.st_size, st.st_mtime_ns, self.user, os.geteuid(), INITDB_ARGS))
                             .encode()).hexdigest()[:16]
        return os.path.join(os.path.dirname(self.tmp), f"turnflow-pg-template-{key}")

    def _publish(self, template: str) -> None:
        """A copy of the fresh (never started) data directory, renamed into place whole; whoever
        renames first wins, the others keep their own."""
        staging = tempfile.mkdtemp(prefix="turnflow-pg-template-", dir=os.path.dirname(self.tmp))
        try:
            subprocess.run(["cp", "-a", self.data, os.path.join(staging, "data")], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            os.rename(os.path.join(staging, "data"), template)
        except (OSError, subprocess.CalledProcessError):
            pass  # another process published it first, or the copy failed (a full disk): no template
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def run_server(self) -> None:
        """`pg_ctl start` on the data directory, with the same settings every time (also after a
        crash: a restart without `synchronous_commit=off` would lose no acknowledged commit)."""
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.tmp} -c max_connections=200"
                f" -c fsync={'on' if self.fsync else 'off'}"
                f" -c synchronous_commit={'on' if self.fsync else 'off'} -c full_page_writes=off")
        self._run(self._cmd("pg_ctl", "-D", self.data, "-l", self.log, "-o", opts, "-w", "-t", "60", "start"), env)

    def _run(self, argv: list[str], env: dict) -> None:
        res = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.tmp)
        if res.returncode != 0:
            log = ""
            if os.path.exists(self.log):
                with open(self.log, errors="replace") as fh:
                    log = fh.read()[-2000:]
            self.stop()
            raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}):\n{res.stdout[-2000:]}{log}")

    def postmaster_pid(self) -> int:
        """The server's postmaster process id (first line of postmaster.pid)."""
        with open(os.path.join(self.data, "postmaster.pid")) as fh:
            return int(fh.readline().strip())

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # a name we made (letters, digits, _), not user input
        return self.url(name)

    def fresh_databases(self) -> "FreshDatabases":
        """Empty databases made one ahead, in a background thread (see FreshDatabases)."""
        return FreshDatabases(self)

    def stop(self, wait: bool = True) -> None:
        """Stop the server at once (`-m immediate`: a throw-away server has nothing to flush) and
        remove its directory. `wait=False` leaves both to a detached process, so that the caller
        (the end of a test session) does not wait for hundreds of megabytes of databases to go."""
        if not wait:
            steps = [shlex.join(self._cmd("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"))] \
                if self.started else []
            steps.append(shlex.join(["rm", "-rf", self.tmp]))
            subprocess.Popen(["sh", "-c", "; ".join(steps)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
            self.started = False
            return
        if self.started:
            subprocess.run(self._cmd("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.tmp)
            self.started = False
        shutil.rmtree(self.tmp, ignore_errors=True)


class FreshDatabases:
    """Hands out empty databases, creating the next one in a background thread while a test uses
    the last (a `CREATE DATABASE` copies the template: a few tenths of a second each, done by the
    server on the other core instead of in the test's time)."""

    def __init__(self, server: PgServer) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.server = server
        self._maker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-fresh-db")
        self._count = 0
        self._next = self._maker.submit(self._make)

    def _make(self) -> str:
        self._count += 1
        name = f"fresh_{os.getpid()}_{self._count}"
        self.server.create_database(name)
        return name

    def take(self, name: str) -> str:
        """The url of an empty database, renamed `name` (a name we made: letters, digits, _)."""
        import psycopg

        ready = self._next.result()
        self._next = self._maker.submit(self._make)
        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{ready}" RENAME TO "{name}"')
        return self.server.url(name)

    def close(self) -> None:
        self._maker.shutdown(wait=True, cancel_futures=True)


def wait_for(pred, timeout: float = 20.0, interval: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return pred()
