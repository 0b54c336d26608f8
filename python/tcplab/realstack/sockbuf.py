"""Socket-buffer ceilings for flows whose receive window is not Linux's default.

Such a flow runs iperf3 with `-w W`: SO_SNDBUF and SO_RCVBUF of W on both hosts. The kernel
caps them at `net.core.wmem_max` / `rmem_max` (and doubles what it keeps), and iperf3 gives
up ("socket buffer size not set correctly") when it reads back less than W. So both ceilings
are raised to at least W for the run:

- `net.ipv4.tcp_rmem` / `tcp_wmem` are per network namespace: `kernel_tcp` sets them on each
  host along with the other TCP sysctls.
- `net.core.rmem_max` / `wmem_max` are global on most kernels (Linux 6.18 here: read-only in
  a child namespace, where the value of the initial namespace applies). `raise_ceilings`
  writes them in the hosts' namespaces where the kernel allows that, and otherwise raises
  the initial namespace's value and puts the old value back when the emulation ends (a
  `Cleanup` action, so also after an error or Ctrl-C) — unless something else changed it
  meanwhile, which is then left alone. Only a ceiling below W is touched; raising a ceiling
  changes no existing socket.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from . import commands
from .cleanup import Cleanup
from .errors import EmulationError

#: The global ceilings of SO_RCVBUF / SO_SNDBUF.
CORE_CEILINGS: Final = ("net.core.rmem_max", "net.core.wmem_max")


def _host_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_host(key: str) -> int:
    """`key`'s value in tcplab's own (normally the initial) network namespace."""
    return int(_host_path(key).read_text().split()[0])


def write_host(key: str, value: int) -> None:
    try:
        _host_path(key).write_text(f"{value}\n")
    except OSError as exc:
        raise EmulationError(f"sysctl {key}={value}: {exc.strerror}") from None


def _read_in(netns: str, key: str) -> int:
    return int(commands.run(commands.in_netns(netns, ["sysctl", "-n", key])).split()[0])


def _write_in(netns: str, key: str, value: int) -> bool:
    """Whether the kernel let `key` be written inside `netns` (read back: procps' sysctl
    exits with 0 even when the kernel refused the write)."""
    argv = commands.in_netns(netns, ["sysctl", "-q", "-w", f"{key}={value}"])
    commands.run(argv, check=False)
    return _read_in(netns, key) == value


def _restore(key: str, raised: int, old: int, say: Callable[[str], None]) -> None:
    current = read_host(key)
    if current == raised:
        write_host(key, old)
    else:
        say(f"{key} is {current} (was raised to {raised} for the emulation); left as it is")


def raise_ceilings(
    needed_bytes: int | None,
    hosts: Sequence[str],
    cleanup: Cleanup,
    say: Callable[[str], None],
) -> None:
    """Make `net.core.rmem_max` and `wmem_max` at least `needed_bytes` as the namespaces
    `hosts` see them (per namespace where the kernel allows it, else globally and undone by
    `cleanup`). Nothing to do for `needed_bytes` None."""
    if needed_bytes is None or not hosts:
        return
    for key in CORE_CEILINGS:
        if _read_in(hosts[0], key) >= needed_bytes:
            continue
        before = read_host(key)
        if _write_in(hosts[0], key, needed_bytes):
            if read_host(key) == before:  # a per-namespace value: set it on every host
                for netns in hosts[1:]:
                    if not _write_in(netns, key, needed_bytes):
                        raise EmulationError(f"sysctl {key}={needed_bytes} in {netns}: refused")
                continue
            # the write went through to the global value: undo it like the global path
        else:
            write_host(key, needed_bytes)
        cleanup.push(f"restore {key}", functools.partial(_restore, key, needed_bytes, before, say))
        say(f"{key} raised from {before} to {needed_bytes} for the run (restored afterwards)")
        if _read_in(hosts[0], key) < needed_bytes:
            raise EmulationError(f"{key}: raised to {needed_bytes}, but the hosts do not see it")
