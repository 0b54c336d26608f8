"""The `tcplab` console script and `python -m tcplab`: loads the command line (`cli.main`)
inside the guard, so Ctrl-C while Python is still importing it ends the command quietly
with status 130 instead of a traceback. (`tcplab/__init__.py` imports nothing heavy, so the
window before this guard is the interpreter's own start-up.)"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (see `cli.main.main`). When the process's own command (`argv`
    None) ends with 130 (Ctrl-C), further Ctrl-Cs are ignored: the interpreter takes a few
    hundred ms to wind down, and a second press would otherwise end the process by the
    signal instead of with 130. A caller passing `argv` keeps its own handler."""
    try:
        from .cli.main import main as run

        status = run(argv)
    except KeyboardInterrupt:  # while the command line loads, or past the command's handler
        print("error: interrupted", file=sys.stderr)
        status = 130
    if status == 130 and argv is None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status
