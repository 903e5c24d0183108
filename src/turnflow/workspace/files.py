"""Finding `.flow` files and reading them as text (TF000 when that fails)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from turnflow.diagnostics.codes import diagnostic
from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.source import SourceText, Span

MAX_BYTES = 64 * 1024 * 1024  # larger inputs are refused rather than read into memory

DOCS: dict[str, str] = {}  # the documentation of TF000 (name and severity: turnflow.diagnostics.codes)

DOCS["TF000"] = """
    A file could not be read as UTF-8 text.

    ## What it does
    Reports a path that cannot be opened, or whose bytes are not UTF-8 text
    (binary files, other encodings). The position is that of the first bad byte,
    counted as every diagnostic counts: a line ends at `\\n`, `\\r\\n` or a lone
    `\\r`, and the column counts the characters before the byte (a leading
    byte order mark not included), not its bytes.

    ## Why is this bad?
    Nothing in the file can be checked; `turnflow check` exits with status 2.

    ## Example
    A `.flow` file saved as UTF-16, or an image renamed to `.flow`.

    ## Use instead
    Save `.flow` files as UTF-8.
"""


@dataclass
class Loaded:
    path: str
    source: Optional[SourceText]
    error: Optional[Diagnostic] = None

    @property
    def text(self) -> str:
        """The text (only after checking that `error` is None)."""
        assert self.source is not None, self.error
        return self.source.text


def discover(paths: list[str], config=None) -> tuple[list[str], list[Diagnostic]]:
    """Expand files and folders (recursively, `*.flow`, sorted) into file paths.
    Inside folders, hidden folders, `node_modules`, what `.gitignore` ignores and the
    configuration's `exclude` globs are skipped (`turnflow.workspace.config.Config`; defaults when None);
    a file named explicitly is kept unless the configuration has `force_exclude`.
    A missing path, or a folder holding no `.flow` file, is a TF000 diagnostic. A file reached
    twice (`a.flow ./a.flow`, a folder and a file in it) is listed once, under its first name."""
    from turnflow.workspace.ignore import DEFAULT_EXCLUDE, excluded, walk_flow_files

    excludes = config.excludes if config is not None else DEFAULT_EXCLUDE
    files: list[str] = []
    problems: list[Diagnostic] = []
    for p in paths:
        if p == "-":
            files.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            unreadable: list[tuple[str, str]] = []
            found = [str(path / f) for f in walk_flow_files(
                path, excludes, root=config.root if config is not None else None,
                respect_gitignore=config.respect_gitignore if config is not None else True, problems=unreadable)]
            for folder, why in unreadable:
                problems.append(_tf000(folder, f"cannot read folder `{folder}`: {why}"))
            if not found and not unreadable:
                problems.append(_tf000(p, f"no .flow files found under `{p}`"))
            files.extend(found)
        elif path.exists() or os.path.islink(path):  # a dangling symlink or a loop: reading it says so
            if config is not None and config.force_exclude and excluded(path, excludes, config.root,
                                                                         config.respect_gitignore):
                continue
            files.append(p)
        else:
            problems.append(_tf000(p, missing_path(p)))
    # one file named several ways (`a.flow`, `./a.flow`, an absolute path, a folder's walk): checked
    # once, under the first name given
    first: dict[str, str] = {}
    for f in files:
        first.setdefault(f if f == "-" else os.path.abspath(f), f)
    return list(first.values()), problems


def missing_path(path: str) -> str:
    """The one wording of a missing path, in every command."""
    return f"no such file or directory: `{path}`"


def _tf000(path: str, message: str, span: Optional[Span] = None) -> Diagnostic:
    return diagnostic("TF000", message, span or Span.point(), path)


# the messages `decode` gives bytes it cannot read as text: their span is where the bad byte is
UNDECODABLE = ("binary file (it contains NUL bytes)", "not UTF-8 text")


def _bad_byte(data: bytes, offset: int) -> Span:
    """The span of the bad byte at `offset`, in the numbers every diagnostic uses: a line ends at
    `\n`, `\r\n` or a lone `\r`; columns count characters (what comes before the byte read as
    UTF-8, any bad byte there as one character), not bytes, and not a leading byte order mark (as
    `turnflow check` counts line 1's columns); the offsets are character offsets."""
    head = data[:offset].decode("utf-8", "replace")
    line, column = SourceText(head).position(len(head))
    if line == 1 and head.startswith("\ufeff"):
        column -= 1
    return Span(line=line, column=column, end_line=line, end_column=column + 1, start=len(head),
                end=len(head) + 1)


def decode(data: bytes, path: str) -> Loaded:
    if b"\x00" in data[: 1 << 20] or b"\x00" in data:
        return Loaded(path, None, _tf000(path, f"{UNDECODABLE[0]}, not UTF-8 text",
                                         _bad_byte(data, data.index(b"\x00"))))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return Loaded(path, None, _tf000(path, f"{UNDECODABLE[1]}: invalid byte 0x{data[err.start]:02x}",
                                         _bad_byte(data, err.start)))
    return Loaded(path, SourceText(text, path))


def refuse_special(path: str) -> None:
    """Raise OSError unless `path` is a regular file (or missing: the open then says so): a FIFO
    or a device named as an input would block the command forever."""
    import errno
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise OSError(errno.EINVAL, "not a regular file", path)


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file `path` under MAX_BYTES (the limit of every input: a
    flow, an agents or task file, standard input). OSError when it is missing, not a regular file
    (EINVAL) or too large (EFBIG, never read); UnicodeDecodeError for bytes that are not UTF-8."""
    import errno

    refuse_special(path)  # a FIFO would block forever
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_BYTES:
            raise OSError(errno.EFBIG, f"file too large ({size} bytes; the limit is {MAX_BYTES})", path)
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:  # grew while we read it
        raise OSError(errno.EFBIG, f"file too large (over {MAX_BYTES} bytes)", path)
    return data.decode("utf-8")


def load(path: str) -> Loaded:
    try:
        if path == "-":
            import sys

            data = sys.stdin.buffer.read(MAX_BYTES + 1)  # standard input has the files' limit too
            if len(data) > MAX_BYTES:
                return Loaded(path, None, _tf000(path, f"standard input too large (over {MAX_BYTES} bytes)"))
        else:
            import stat

            st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(st.st_mode):  # a FIFO or a device: reading it could block forever
                return Loaded(path, None, _tf000(path, f"`{path}` is not a regular file"))
            size = st.st_size
            if size > MAX_BYTES:
                return Loaded(path, None, _tf000(path, f"file too large ({size} bytes; the limit is {MAX_BYTES})"))
            with open(path, "rb") as fh:
                data = fh.read()
    except FileNotFoundError:
        if path != "-" and os.path.islink(path):
            return Loaded(path, None, _tf000(path, f"`{path}` is a symbolic link to `{os.readlink(path)}`, "
                                                   "which does not exist"))
        return Loaded(path, None, _tf000(path, missing_path(path)))
    except IsADirectoryError:
        return Loaded(path, None, _tf000(path, f"`{path}` is a directory; give a file"))
    except OSError as err:
        import errno

        if err.errno == errno.ELOOP:
            return Loaded(path, None, _tf000(path, f"`{path}` is a symbolic link loop (it never reaches a file)"))
        return Loaded(path, None, _tf000(path, f"cannot read `{path}`: {err.strerror or err}"))
    return decode(data, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str, text: "str | bytes") -> None:
    """Replace `path` with `text` (or bytes) so that a crash leaves either the old or the new file.

    An existing file keeps its mode bits and (when we may) its owner and group; a new file
    gets the mode `open()` would give it (0666 minus the umask). A symlink is not replaced:
    the file it points to is rewritten in place. What is not a regular file (a device such as
    `/dev/null`, a FIFO) is written into, not replaced. Raises `OSError` (a missing folder, a
    folder given as the file, an unwritable folder, a read-only file)."""
    import stat
    import tempfile

    path = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st: Optional[os.stat_result] = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", path)
    # a lone surrogate (half an emoji from a `\ud83d` escape, a file name that is not UTF-8) is
    # written as its escape, `\ud83d`: in JSON and in a .flow string that is the same text
    data = text.encode("utf-8", "backslashreplace") if isinstance(text, str) else text
    if st is not None and not stat.S_ISREG(st.st_mode):
        # a device (`/dev/null`, a terminal), a FIFO or a socket is written into, as a shell
        # redirection writes; replacing it would leave a regular file in its place
        with open(path, "wb") as fh:
            fh.write(data)
        return
    if st is not None and not st.st_mode & 0o222:
        raise PermissionError(13, "the file is read-only (no write permission bits); not changed", path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".turnflow-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is None:
            os.chmod(tmp, 0o666 & ~_umask())
        else:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:  # not allowed to give it away: keep what we may
                    try:
                        os.chown(tmp, -1, st.st_gid)
                    except OSError:
                        pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_error(path: str, exc: OSError) -> str:
    """The one-line reason a write to `path` failed."""
    return f"cannot write `{path}`: {exc.strerror or exc}"
