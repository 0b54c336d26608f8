"""The `tcplab` console script and `python -m tcplab`: loads the command line (`cli.main`)
inside the guard, so Ctrl-C while Python is still importing it ends the command quietly
with status 130 instead of a traceback. (`tcplab/__init__.py` imports nothing heavy, so the
window before this guard is the interpreter's own start-up.)"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (see `cli.main.main`)."""
    try:
        from .cli.main import main as run
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return run(argv)
