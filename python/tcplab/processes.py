"""Processes: whether one still runs (what tells a leftover of a killed tcplab, a network
namespace or a half-written series file, from one a running tcplab still uses), and how many
workers this one may keep busy."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """The process `pid` exists on this host (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count): the
    default number of workers of sweeps, run batches and report figures."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1
