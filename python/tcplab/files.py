"""The files users name on the command line: reading their input files with a bound, and
checking their output paths before any work starts.

Input (scenarios, studies, traces, exports read back) is read only from regular files, and
at most a documented number of bytes of it: `/dev/zero` would otherwise be read until memory
runs out, and a FIFO nobody writes to would block forever. The file is opened without
blocking and checked on the opened descriptor, so it cannot be swapped in between.

Output paths (`--db`, `--report`, `-o`, `--series`, `--events`, `--pcap`, `--out`, `--data`)
are checked when the command starts, so a missing folder, a directory where a file should
be, or a read-only place fails at once and not after an hour of simulation. A full disk can
only show when writing: `disk_full` names it ("no space left on device: PATH").
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from .errors import ScenarioError

#: The largest scenario or study file read (bytes). The largest shipped one is a few KiB; a
#: study grid of 100,000 values written out fits many times over.
MAX_SCENARIO_FILE_BYTES: Final = 16 * 1024 * 1024
#: The largest rate or delivery trace file read (bytes): the core's longest trace
#: (`LIMITS.max_trace_len` lines) at 64 characters per line.
MAX_TRACE_FILE_BYTES_PER_LINE: Final = 64

_KINDS: Final = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class FileError(ScenarioError):
    """`PATH: PROBLEM[; allowed: ALLOWED]` about an input file; `problem` and `allowed` are
    there for callers that place the file in a message of their own."""

    def __init__(self, path: str | os.PathLike[str], problem: str, allowed: str | None = None):
        tail = "" if allowed is None else f"; allowed: {allowed}"
        super().__init__(f"{path}: {problem}{tail}")
        self.problem = problem
        self.allowed = allowed


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The contents of the regular file `path`, of at most `max_bytes` bytes. Raises
    `FileError` for a missing, unreadable, special or too large file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except OSError as exc:
        raise FileError(path, f"cannot read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileError(path, f"is {_kind(mode)}", "a regular file")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise FileError(path, f"cannot read: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise FileError(path, f"larger than {max_bytes} bytes", f"at most {max_bytes} bytes")
    return data


def read_text(path: str | os.PathLike[str], max_bytes: int) -> str:
    """`read_bytes` decoded as UTF-8."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileError(path, "not a UTF-8 text file") from None


def check_regular(path: str | os.PathLike[str]) -> Path:
    """`path` names a regular file (for files another library opens and reads whole)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except OSError as exc:
        raise FileError(path, f"cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise FileError(path, f"is {_kind(mode)}", "a regular file")
    return Path(path)


def check_output_file(option: str, path: str | os.PathLike[str]) -> Path:
    """`path` can be written as a file: its folder exists and is writable, and it is not a
    directory or a special file (an existing regular file is replaced). Raises `ScenarioError`
    naming `option`."""
    target = Path(path)
    shown = f"{option} = {str(path)!r}"
    if target.is_dir():
        raise ScenarioError(f"{shown}: is a directory; allowed: a file name")
    if target.exists() and not target.is_file():
        raise ScenarioError(f"{shown}: is {_kind(target.stat().st_mode)}; allowed: a regular file")
    _check_folder(shown, target.parent)
    if target.exists() and not os.access(target, os.W_OK):
        raise ScenarioError(f"{shown}: not writable")
    return target


def check_output_dir(option: str, path: str | os.PathLike[str]) -> Path:
    """`path` is a writable directory, or one that can be made (with its missing parents) in
    the nearest folder that exists."""
    target = Path(path)
    shown = f"{option} = {str(path)!r}"
    if target.exists():
        if not target.is_dir():
            raise ScenarioError(f"{shown}: not a directory; allowed: a directory")
        _check_folder(shown, target, what="directory")
        return target
    ancestor = target.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ScenarioError(f"{shown}: {str(ancestor)!r} is not a directory")
    _check_folder(shown, ancestor)
    return target


def _check_folder(shown: str, folder: Path, what: str = "folder") -> None:
    folder = folder if str(folder) else Path(".")
    if not folder.is_dir():
        raise ScenarioError(f"{shown}: the {what} {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        problem = "is on a read-only file system" if _read_only_fs(folder) else "is not writable"
        raise ScenarioError(f"{shown}: the {what} {str(folder)!r} {problem}")


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def is_disk_full(exc: BaseException) -> bool:
    """An error (from the OS, DuckDB or pyarrow) that says the disk is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc)
    return "No space left on device" in text or "Disk quota exceeded" in text


def disk_full(path: str | os.PathLike[str]) -> ScenarioError:
    return ScenarioError(f"no space left on device: {path}")


def os_error(exc: OSError) -> ScenarioError | None:
    """An error of the OS about a file the user named, as the one line to print (None: no
    file named, so not one to blame on the user's paths)."""
    name = exc.filename if exc.filename is not None else None
    if is_disk_full(exc):
        return disk_full(name if name is not None else "(the file being written)")
    if name is None:
        return None
    return ScenarioError(f"{name}: {exc.strerror or type(exc).__name__}")
