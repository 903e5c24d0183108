"""One writer per SQLite store, whatever name it is opened by, and a lock file that is not trusted.

The writer's lock is taken on the store's identity, not on the name it was given: an exclusive
`flock` on the database file itself (its inode: a hard link or a symbolic link to the store is the
same file, so a second writer through it is refused), and one on `REAL.lock`, where REAL is the
store's real path (symbolic links resolved), which also holds the writer's pid and the store's
high-water mark. SQLite locks the database with POSIX record locks, which on Linux and the BSDs are
independent of `flock`; the database file's descriptor is opened before SQLite connects and closed
only after it has closed (closing any descriptor of a file drops the process's POSIX locks on it).

The lock file is opened without following a symbolic link (`O_NOFOLLOW`), without blocking
(`O_NONBLOCK`: a FIFO answers at once) and is refused unless it is a regular file: a link planted
as `STORE.lock` never has its target truncated, a FIFO never hangs `run` or `inspect`."""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from typing import Any, Optional

from turnflow.runtime.errors import StoreError

NOBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def lock_file(path: str) -> str:
    """Where the lock (and high-water mark) of the store at `path` lives: beside the real file."""
    return os.path.realpath(path) + ".lock"


class NotRegular(OSError):
    """The lock file is a symbolic link, a FIFO, a folder, a device: not ours to write."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"  # pragma: no cover


def open_lock(file: str, flags: int) -> int:
    """`file` opened with `flags`, never through a symbolic link and never blocking; `NotRegular`
    unless it is a regular file."""
    try:
        fd = os.open(file, flags | _NOFOLLOW | NOBLOCK | _CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(file):
            raise NotRegular(errno.ELOOP, "it is a symbolic link (never followed)") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, f"not a regular file: it is {_kind(mode)}")
    return fd


def _refused(path: str, file: str, exc: OSError) -> StoreError:
    if isinstance(exc, NotRegular):
        return StoreError(f"{path}: the lock file {file} is refused: {exc.strerror}; nothing was written. "
                          f"Remove it if no turnflow run is using this store")
    folder = os.path.dirname(file)
    if exc.errno == errno.ENOENT and not os.path.isdir(folder):  # the store's folder, not the lock, is missing
        return StoreError(f"{path}: no such folder {folder}; create it first (nothing was written)")
    return StoreError(f"{path}: cannot create the lock file {file}: {exc.strerror or exc}")


class WriterLock:
    """An exclusive `flock` on the store file and on `REAL.lock`, held while a writable store is
    open. The lock file holds the writer's pid (for the "in use" message) and the store's
    high-water mark: its id (meta `store_id`), how many sessions and the last envelope number
    committed to it. The mark is rewritten after every committed group (one `pwrite` of a
    fixed-size record), outside the database: a store holding less than its mark lost committed
    records (its `-wal` file deleted after a crash). Like the `-wal`, the mark survives a crash of
    the process in the OS's cache; at `durability="full"` it is also fdatasync'd at most once a
    second (and at close), so after a power loss it lags by at most the last second's commits —
    never ahead of what was committed, so never a false alarm. Where `fcntl` is missing (Windows)
    no lock is taken."""

    SIZE = 160  # the record is padded to this many bytes: each update is one write, never a truncate

    def __init__(self, path: str) -> None:
        self.file = lock_file(path)
        self.fd: Optional[int] = None
        self.store_fd: Optional[int] = None  # the database file itself: its identity, whatever its name
        self.recorded: dict[str, Any] = {}  # the mark as the previous writer left it
        self.state: dict[str, Any] = {}
        self.sync = False
        self.synced = 0.0  # time.monotonic() of the last fdatasync
        self.dirty = False
        self.store_json = b'""'
        try:
            import fcntl  # noqa: F401 - only to know whether flock exists here
        except ImportError:  # pragma: no cover - not POSIX
            return
        try:
            fd = open_lock(self.file, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise _refused(path, self.file, exc) from None
        try:  # an empty file is an empty SQLite database: made here so that its identity is locked too
            store_fd = os.open(path, os.O_RDWR | os.O_CREAT | NOBLOCK | _CLOEXEC, 0o666)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"{path}: cannot open the store file: {exc.strerror or exc}") from None
        if not (self._take(fd) and self._take(store_fd)):
            os.close(store_fd)
            os.close(fd)
            pid = self.mark(path).get("pid")
            who = f"pid {pid}" if isinstance(pid, int) else "another process (under another name of this file)"
            raise StoreError(f"{path}: store in use by {who}; wait for it to finish or use another store") from None
        self.fd, self.store_fd = fd, store_fd
        self.recorded = self.mark(path)

    @staticmethod
    def _take(fd: int) -> bool:
        """The exclusive lock, or False when another writer holds it. A few tries 10 ms apart: an
        `inspect` checking whether a writer is there holds a shared lock for microseconds."""
        import fcntl

        for attempt in range(4):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError:
                if attempt < 3:
                    time.sleep(0.01)
        return False

    @staticmethod
    def mark(path: str) -> dict[str, Any]:
        """What `REAL.lock` holds: {"pid", "store", "sessions", "gseq"} (ints and the store id), or {}
        (no lock file, or one that is not a regular file)."""
        try:
            fd = open_lock(lock_file(path), os.O_RDONLY)
        except OSError:
            return {}
        try:
            data = json.loads(os.read(fd, 4096).decode("utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        finally:
            os.close(fd)
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, (int, str)) and not isinstance(v, bool)}

    @staticmethod
    def in_use(path: str) -> bool:
        """Whether a writer holds the store's lock now (asked without creating the lock file)."""
        try:
            import fcntl

            fd = open_lock(lock_file(path), os.O_RDONLY)
        except (ImportError, OSError):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False

    def start(self, store_id: str, sessions: int, gseq: int, sync: bool) -> None:
        self.state = {"pid": os.getpid(), "store": store_id, "sessions": sessions, "gseq": gseq}
        self.store_json = json.dumps(store_id).encode()
        self.sync = sync
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, self.SIZE)  # whatever an older writer left past the record
            except OSError:  # pragma: no cover
                pass
        self._write()

    def committed(self, sessions: int, gseq: int) -> None:
        """A group was committed: `sessions` new sessions, envelopes up to number `gseq` (0: none)."""
        if not self.state:
            return
        self.state["sessions"] += sessions
        if gseq > self.state["gseq"]:
            self.state["gseq"] = gseq
        self._write()

    def _write(self) -> None:
        if self.fd is None:
            return
        st = self.state  # by hand: json.dumps would double this per-group cost (the same text)
        data = b'{"pid":%d,"store":%s,"sessions":%d,"gseq":%d}' % (
            st["pid"], self.store_json, st["sessions"], st["gseq"])
        try:
            if len(data) < self.SIZE:
                os.pwrite(self.fd, data + b" " * (self.SIZE - len(data)), 0)
            else:  # pragma: no cover - a record longer than SIZE (ids are 32 hex digits)
                os.ftruncate(self.fd, 0)
                os.pwrite(self.fd, data, 0)
            self.dirty = True
            if self.sync:
                now = time.monotonic()
                if now - self.synced >= 1.0:
                    os.fdatasync(self.fd)
                    self.synced, self.dirty = now, False
        except OSError:  # pragma: no cover - the mark is a check, the records are in the database
            pass

    def release(self) -> None:
        """Drops both locks. Called after SQLite has closed the database (see the module's note)."""
        if self.fd is not None:
            try:
                if self.sync and self.dirty:
                    os.fdatasync(self.fd)
            except OSError:  # pragma: no cover
                pass
        for name in ("store_fd", "fd"):
            fd = getattr(self, name)
            setattr(self, name, None)
            if fd is not None:
                os.close(fd)  # closing drops the flock
