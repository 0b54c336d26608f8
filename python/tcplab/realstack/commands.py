"""Running the system commands that build a topology (`ip`, `nft`, `sysctl`), with failures
reported as one line naming the command."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from .errors import EmulationError

#: No topology command should take long; a hung one is a bug worth a clear message.
COMMAND_TIMEOUT_S = 30.0


def run(argv: Sequence[str], *, stdin: str | None = None, check: bool = True) -> str:
    """Run `argv`, return its stdout; a non-zero exit raises `EmulationError` with stderr's
    first line (unless `check` is false)."""
    try:
        done = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        raise EmulationError(f"{argv[0]}: command not found") from None
    except subprocess.TimeoutExpired:
        raise EmulationError(f"{' '.join(argv)}: timed out") from None
    if check and done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        reason = lines[0] if lines else f"exit status {done.returncode}"
        raise EmulationError(f"{' '.join(argv)}: {reason}")
    return done.stdout


def in_netns(netns: str, argv: Sequence[str]) -> list[str]:
    """`argv` run inside network namespace `netns`."""
    return ["ip", "netns", "exec", netns, *argv]
