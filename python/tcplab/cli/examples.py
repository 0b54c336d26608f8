"""`tcplab examples list | copy DIR`: the scenario and study files, traces and notebook that
ship with tcplab (`tcplab.examples`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ScenarioError


def cmd_examples(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..examples import copy_examples, examples, examples_dir

    if args.action == "list":
        table = Table(title=f"examples in {examples_dir()}")
        for column in ("file", "kind", "what it shows"):
            table.add_column(column)
        for example in examples():
            table.add_row(example.name, example.kind, example.description)
        Console().print(table)
        print("copy them with: tcplab examples copy DIR")
        return 0
    if args.dir is None:
        raise ScenarioError("examples copy: missing DIR; allowed: a directory to copy them into")
    written = copy_examples(args.dir, overwrite=args.force)
    print(f"copied {len(written)} files to {args.dir}; e.g. tcplab run {args.dir}/geo-sat.toml")
    return 0


def add_commands(sub: Any) -> None:
    """Register `examples` on the main parser's subparsers."""
    ex = sub.add_parser(
        "examples",
        help="list the example scenarios and studies, or copy them into DIR",
        description="list: the example files and what each shows; copy DIR: copy every "
        "example into DIR (created if missing), keeping the layout",
    )
    ex.add_argument("action", choices=("list", "copy"))
    ex.add_argument("dir", nargs="?", metavar="DIR", help="copy: the directory to copy into")
    ex.add_argument("--force", action="store_true", help="copy: replace files already in DIR")
    ex.set_defaults(handler=cmd_examples)
