"""One emulation at a time on a machine.

Two emulations at once share the CPU: `tcplab-emu` then releases packets late and the kernels'
TCP processing is delayed, so both measure the machine instead of the scenario. Every command
that runs traffic through the emulator (`emulate`, `validate`, `--calibrate`, the test suite's
real-stack tests) takes this exclusive lock first; a second one waits, saying so once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

#: Where the lock lives: /run/lock is a tmpfs on Debian, so a reboot clears it.
LOCK_DIRS: Final = (Path("/run/lock"), Path("/tmp"))
LOCK_NAME: Final = "tcplab-emulate.lock"


def lock_path() -> Path:
    for directory in LOCK_DIRS:
        if directory.is_dir() and os.access(directory, os.W_OK):
            return directory / LOCK_NAME
    return Path(LOCK_NAME)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        return "?"
    return text or "?"


@contextmanager
def exclusive(say: Callable[[str], None]) -> Iterator[None]:
    """Hold the machine's emulation lock for the block (released when the process dies)."""
    fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # The pid in the file is the last holder's; the one that just took the lock
            # over may not have written its own yet.
            holder = _holder(fd)
            who = "" if holder in ("?", str(os.getpid())) else f" (pid {holder})"
            say(
                f"waiting for another emulation{who} to finish: two at once "
                "share the CPU and spoil the emulator's timing"
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
