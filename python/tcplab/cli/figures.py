"""Figure options shared by `tcplab plot` and `tcplab compare`: the look (`--style`,
`--size`, `--font-size`), which runs a time series shows (`--run`, `--seed`, `--point`) and
`--data` (the plotted numbers as CSV). Nothing heavy is imported here.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ScenarioError

if TYPE_CHECKING:
    from ..present.chart import Chart
    from ..present.study_view import Selection
    from ..present.style import Style

STYLE_NAMES = ("web", "paper", "slides")


def point_arg(text: str) -> tuple[str, str]:
    """`KEY=VALUE` of `--point`."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: not KEY=VALUE; allowed: e.g. bottleneck.per=1e-3 or variant=NAME"
        )
    return key.strip(), value.strip()


def font_size_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number; allowed: 4 to 40") from None


def add_figure_options(p: argparse.ArgumentParser, *, selection: bool = True) -> None:
    p.add_argument(
        "--style",
        choices=STYLE_NAMES,
        default="web",
        help="web: a 1200 px page; paper: a 7 in two-column text width, 8 pt; slides: 16:9",
    )
    p.add_argument(
        "--size", metavar="WxH", help="figure size, e.g. 7x3 (inches), 17x8cm, 1200x600px"
    )
    p.add_argument("--font-size", type=font_size_arg, metavar="PT", help="base font size (pt)")
    p.add_argument(
        "--data", metavar="FILE.csv", help="also write the plotted numbers (with the caption)"
    )
    if selection:
        p.add_argument("--run", metavar="ID", help="time series: this run (id or unique prefix)")
        p.add_argument("--seed", type=int, metavar="N", help="time series: runs of this seed")
        p.add_argument(
            "--point",
            type=point_arg,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="time series: runs with this swept value (repeatable), e.g. "
            "bottleneck.per=1e-3, variant=NAME",
        )


def style_of(args: argparse.Namespace) -> Style:
    from ..present.style import make_style

    return make_style(args.style, args.size, args.font_size)


def selection_of(args: argparse.Namespace) -> Selection:
    from ..present.study_view import Selection

    return Selection(run=args.run, seed=args.seed, point=tuple(args.point))


def check_data_path(path: str | None) -> None:
    if path is not None and Path(path).suffix.lower() != ".csv":
        raise ScenarioError(f"--data = {path!r}: the plotted numbers are CSV; allowed: *.csv")
    if path is not None:
        from ..files import check_output_file

        check_output_file("--data", path)


def write_data(chart: Chart, path: str | None) -> None:
    if path is None:
        return
    try:
        Path(path).write_text(chart.to_csv(), encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"--data = {path!r}: cannot write ({exc.strerror})") from None
    print(f"wrote {path}")
