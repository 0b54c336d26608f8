"""`tcplab compare A B [C ...] [-o compare.html]`: runs, grid points, study revisions or a
simulation and its emulation side by side (the sources' forms: `present.compare`). A table
with differences on the terminal; with `-o`, an HTML page with the overlaid figures too.
Heavy imports happen in the handler."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ScenarioError

SOURCES_HELP = (
    "DB.duckdb[:STUDY[@REV]] (a study), DB.duckdb:STUDY,KEY=VALUE,...[,seed=N] (a grid point "
    "or run), DB.duckdb:run=ID, SERIES.parquet|csv (tcplab run/emulate --series)"
)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.output and Path(args.output).suffix.lower() not in (".html", ".htm"):
        raise ScenarioError(f"-o = {args.output!r}: the comparison page is HTML; allowed: *.html")
    if args.output:
        from ..files import check_output_file

        check_output_file("-o", args.output)
    from rich.table import Table as RichTable
    from rich.text import Text

    from ..present import compare
    from ..present.console import wide_console

    sides = compare.resolve(args.sources)
    table = compare.table(sides)
    console = wide_console()
    out = RichTable(title=table.title)
    for i, head in enumerate(table.head):
        out.add_column(head, justify="left" if i == 0 else "right")
    for row in table.rows:
        out.add_row(*(Text(c) for c in row))
    console.print(out)
    for note in table.notes:
        console.print(Text(note))
    if args.output:
        from ..present.compare_page import compare_page

        page = compare_page(sides, table, compare.charts(sides))
        try:
            Path(args.output).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"-o = {args.output!r}: cannot write ({exc.strerror})") from None
        console.print(f"wrote {args.output}")
    return 0


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="runs, grid points, studies or a simulation and its emulation side by side"
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE", help=SOURCES_HELP)
    p.add_argument("-o", "--output", metavar="OUT.html", help="also write an HTML page")
    p.set_defaults(handler=cmd_compare)
