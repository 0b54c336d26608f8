"""The `tcplab` command: run | check | ccas | demo (`run.py`), sweep | report | plot | results
| study (`study.py`), emulate | validate (`realstack.py`), compare (`compare.py`), examples
(`examples.py`).

User mistakes, and files that cannot be read or written (damaged, missing, a full disk), print
one line `error: ...` on stderr and exit with status 2; anything else that goes wrong is a
bug: it prints `internal error: ...` with a request to report it and exits with 1 (set
TCPLAB_TRACEBACK=1 to see the traceback). Tables go to stdout through rich; `--json` prints
exactly one JSON document.

Building the parser imports no command's dependencies: `tcplab --version` and `--help` load
neither pydantic nor pandas, matplotlib, DuckDB or pyarrow (asserted by the tests).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..errors import ScenarioError, cli_names
from . import compare, examples, realstack, run, study
from .options import Parser

COMMANDS = (
    "run, check, ccas, demo, sweep, report, plot, results, study, emulate, validate, compare, "
    "examples"
)


#: What an internal error adds: it is a bug, and how to show it.
BUG_HINT = (
    "a bug in tcplab, not in your input: please report it with the output of the same "
    "command run with TCPLAB_TRACEBACK=1"
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tcplab", description="TCP congestion-control lab")
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    run.add_commands(sub)
    study.add_commands(sub)
    realstack.add_commands(sub)
    compare.add_commands(sub)
    examples.add_commands(sub)
    return parser


def _versions() -> str:
    """`tcplab 0.1.0 (core 0.1.0, git v0.1.0-3-g1a2b3c4d5e6f, model version 3)`; the git part
    (see `provenance.git_describe`) is left out when the source is unknown."""
    from .. import __version__, _core
    from ..results.provenance import git_describe

    source = git_describe()
    git = f", git {source}" if source else ""
    return (
        f"tcplab {__version__} (core {_core.core_version()}{git}, "
        f"model version {_core.model_version()})"
    )


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        print(_versions())
        return 0
    if args.command is None:
        raise ScenarioError(f"missing command; allowed: {COMMANDS}")
    status: int = args.handler(args)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status (0 ok, 1 internal error, 2 user error)."""
    try:
        return _run(argv)
    except ScenarioError as exc:
        print(f"error: {cli_names(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): silence the flush at exit, like other CLI tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if os.environ.get("TCPLAB_TRACEBACK"):
            raise
        from ..files import os_error

        # a file the user named that cannot be written (a full disk, a folder gone meanwhile)
        error = os_error(exc) if isinstance(exc, OSError) else None
        if error is not None:
            print(f"error: {error}", file=sys.stderr)
            return 2
        # never the user's mistake (those are ScenarioErrors): ask for a report
        print(
            " ".join(f"internal error: {type(exc).__name__}: {exc}".split()) + f" ({BUG_HINT})",
            file=sys.stderr,
        )
        return 1
