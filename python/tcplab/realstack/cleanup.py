"""Everything an emulation creates is removed again — after success, an error, Ctrl-C,
SIGTERM or an exception anywhere:

- `Cleanup` is a stack of undo actions pushed as things are created, run once, newest
  first; `guarded()` runs it when its block ends, turns SIGINT/SIGTERM into an
  `Interrupted` exception inside the block (so the block unwinds normally) and registers it
  with `atexit` for exits that skip the block.
- Children get `PR_SET_PDEATHSIG` (see `procs`), so even `kill -9` of tcplab stops them; the
  namespaces such a kill leaves behind are what `cleanup_leftovers()` (`tcplab emulate
  --cleanup`) removes: every `tcplab-*` namespace whose creating process is gone.
"""

from __future__ import annotations

import atexit
import os
import secrets
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from ..processes import alive as _alive
from . import commands
from .plan import PREFIX


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during an emulation."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Cleanup:
    """Undo actions, run newest first, at most once; failures are collected, not raised."""

    def __init__(self) -> None:
        self._actions: list[tuple[str, Callable[[], None]]] = []
        self._lock = threading.Lock()
        self.errors: list[str] = []

    def push(self, what: str, action: Callable[[], None]) -> None:
        with self._lock:
            self._actions.append((what, action))

    def run(self) -> None:
        while True:
            with self._lock:
                if not self._actions:
                    return
                what, action = self._actions.pop()
            try:
                action()
            except Exception as exc:  # keep undoing the rest whatever one step does
                self.errors.append(f"{what}: {exc}")


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextmanager
def guarded(cleanup: Cleanup) -> Iterator[Cleanup]:
    """Run `cleanup` when the block ends, however it ends. Signals are turned into
    exceptions only in the main thread (Python delivers them nowhere else); during the
    cleanup itself they are ignored, so a second Ctrl-C cannot leave half a topology."""
    main = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in signals} if main else {}
    atexit.register(cleanup.run)
    try:
        for sig in previous:
            signal.signal(sig, _raise_interrupted)
        yield cleanup
    finally:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        try:
            cleanup.run()
        finally:
            atexit.unregister(cleanup.run)
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def namespaces() -> list[str]:
    """Every network namespace named `tcplab-*`."""
    out = commands.run(["ip", "netns", "list"], check=False)
    names = (line.split()[0] for line in out.splitlines() if line.strip())
    return [name for name in names if name.startswith(PREFIX)]


def kill_netns_processes(netns: str) -> None:
    """SIGKILL every process inside `netns` (by pid, as `ip netns pids` lists them)."""
    for pid_text in commands.run(["ip", "netns", "pids", netns], check=False).split():
        try:
            os.kill(int(pid_text), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def delete_netns(netns: str) -> None:
    """Stop the namespace's processes and delete it (its devices and rules go with it)."""
    kill_netns_processes(netns)
    commands.run(["ip", "netns", "del", netns], check=False)


def new_run_id() -> str:
    """`<pid>x<tag>`: the pid lets `--cleanup` tell leftovers from a running emulation."""
    return f"{os.getpid()}x{secrets.token_hex(2)}"


def owner_pid(netns: str) -> int | None:
    """The pid of the tcplab process that created `netns` (`tcplab-<pid>x<tag>-<node>`)."""
    run_id = netns.removeprefix(PREFIX).split("-", 1)[0]
    pid_text = run_id.split("x", 1)[0]
    return int(pid_text) if pid_text.isdigit() else None


def cleanup_leftovers(*, include_running: bool = False) -> tuple[list[str], list[str]]:
    """Delete leftover `tcplab-*` namespaces; returns (removed, kept because their creator
    still runs). `include_running` removes those too."""
    removed, kept = [], []
    for netns in namespaces():
        pid = owner_pid(netns)
        if not include_running and pid is not None and pid != os.getpid() and _alive(pid):
            kept.append(netns)
            continue
        delete_netns(netns)
        removed.append(netns)
    return removed, kept
