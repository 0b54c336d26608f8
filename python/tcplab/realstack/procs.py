"""Child processes of an emulation (emulator, PEPs, iperf3), each inside a namespace.

Every child gets `PR_SET_PDEATHSIG = SIGTERM` (kept across `ip netns exec`'s exec), so it
dies with tcplab even on `kill -9`, and its own session, so a terminal's Ctrl-C reaches only
tcplab, which then stops the children in order (the emulator must print its report first).
Output goes to files, not pipes, so a child never blocks on a full pipe while tcplab
waits for another; only a startup line (`ready`) is read from a pipe.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final

from .commands import in_netns
from .errors import EmulationError

_PR_SET_PDEATHSIG: Final = 1
_STOP_TIMEOUT_S: Final = 5.0


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Proc:
    """A child in namespace `netns`; stdout to `out` (or a pipe for `wait_line`), stderr to
    `out` + `.err`, or to `err` when stdout is a pipe (else discarded)."""

    def __init__(
        self,
        name: str,
        netns: str,
        argv: Sequence[str],
        out: Path | None,
        err: Path | None = None,
    ) -> None:
        self.name = name
        self.out = out
        self._err_path = out.with_name(out.name + ".err") if out else err
        stdout: IO[bytes] | int = open(out, "wb") if out else subprocess.PIPE
        stderr: IO[bytes] | int = (
            open(self._err_path, "wb") if self._err_path else subprocess.DEVNULL
        )
        try:
            self.popen = subprocess.Popen(
                in_netns(netns, argv),
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
                start_new_session=True,
            )
        except OSError as exc:
            raise EmulationError(f"{name}: cannot start {argv[0]}: {exc.strerror}") from None
        finally:
            for handle in (stdout, stderr):
                if not isinstance(handle, int):
                    handle.close()
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def wait_line(self, prefix: str, timeout_s: float) -> str:
        """The first stdout line starting with `prefix` (stdout must be a pipe)."""
        pipe = self.popen.stdout
        assert pipe is not None, "wait_line needs stdout on a pipe"
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode(errors="replace").strip()
                if text.startswith(prefix):
                    return text
            left = deadline - time.monotonic()
            if left <= 0:
                raise EmulationError(f"{self.name}: no {prefix!r} line after {timeout_s:g} s")
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    raise EmulationError(f"{self.name} exited: {self.stderr_tail()}")
                self._buffer += chunk

    def stderr_tail(self) -> str:
        """The last line the child wrote on stderr (for error messages)."""
        if self._err_path is None or not self._err_path.exists():
            return f"exit status {self.popen.poll()}"
        lines = self._err_path.read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {self.popen.poll()}"

    def send_signal(self, signum: int) -> None:
        if self.running():
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def wait(self, timeout_s: float) -> bool:
        """True if the child exited within `timeout_s`."""
        try:
            self.popen.wait(timeout=max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = _STOP_TIMEOUT_S) -> None:
        """`signum`, then SIGKILL if it has not exited after `timeout_s`."""
        self.send_signal(signum)
        if not self.wait(timeout_s):
            self.send_signal(signal.SIGKILL)
            self.wait(_STOP_TIMEOUT_S)
        if self.popen.stdout is not None:
            self.popen.stdout.close()
