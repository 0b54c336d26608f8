"""Whether a process still runs: what tells a leftover of a killed tcplab (a network
namespace, a half-written series file) from one a running tcplab still uses."""

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
