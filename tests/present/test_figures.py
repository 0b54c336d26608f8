"""Figures of stored studies as a reader sees them: every point of the table in its figure
(PER = 0 on a log axis included), intervals inside what a metric can be, human axis names
and units, legend titles, captions that say what was fixed and which run a series is from,
kinds refused where they mean nothing, and the report's SVG in headless Chromium."""

from __future__ import annotations

import csv
import io
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest
from conftest import render_in_chromium
from figure_studies import PAIR_STUDY, PER_STUDY, RATE_STUDY, stored
from tcplab.errors import ScenarioError
from tcplab.present.chart import data_points
from tcplab.present.charts import _above_link, summary_chart
from tcplab.present.draw import render, to_svg
from tcplab.present.plots import available, chart
from tcplab.present.plotspecs import PLOTS
from tcplab.present.report import write_report
from tcplab.present.study_view import Selection, view_of
from tcplab.present.style import make_style
from tcplab.present.svg_pool import svgs_of
from tcplab.study.store import Store

TCPLAB = [sys.executable, "-m", "tcplab"]


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    tmp = tmp_path_factory.mktemp("figures")
    return {raw["study"]["name"]: stored(tmp, raw) for raw in (PER_STUDY, PAIR_STUDY, RATE_STUDY)}


def _groups(svg: str, prefix: str) -> dict[str, str]:
    return {m[1]: m[2] for m in re.finditer(rf'<g id="({prefix}[^"]*)">(.*?)</g>', svg, re.S)}


def test_zero_error_rate_is_a_point_left_of_a_log_axis_break(studies: dict[str, Store]) -> None:
    store = studies["per"]
    c = chart("goodput", store.runs("per"), store)
    pts = [p for _, _, p in data_points(c)]
    # 3 error rates x 2 algorithms, each a mean over the 2 seeds
    assert sorted({float(p.x) for p in pts}) == [0.0, 1e-3, 1e-2]
    assert len(pts) == 6 and {p.n for p in pts} == {2}
    panel = c.panels[0]
    assert panel.xscale == "log"
    # one decade (the swept values' ratio, at least 10) below the smallest positive value
    assert panel.zero_at == pytest.approx(1e-4)
    svg = to_svg(render(c, make_style(), caption=False))
    markers = _groups(svg, "pts-")
    # every point is an SVG marker: the zero ones in a group of their own, never dropped
    assert sum(body.count("<use") for body in markers.values()) == 6
    assert sum(body.count("<use") for g, body in markers.items() if g.endswith("-zero")) == 2
    assert ">0<" in svg and "//" in svg  # the "0" tick and the break mark
    assert "packet error rate = 0 is drawn left of the break" in c.caption.lower()


def test_intervals_stay_inside_the_metric_range_and_the_link_rate() -> None:
    # Two repetitions: goodput 40 and 50 Mbit/s on a 50 Mbit/s link, Jain's index 0.9 and 1.
    # Mean 45, s = 7.071, half-width t(1) x s / sqrt(2) = 12.706 x 5 = 63.53 Mbit/s: the
    # interval 45 ± 63.5 is cut to [0, 50]; Jain's 0.95 ± 0.635 to [0.315, 1].
    runs = pd.DataFrame(
        {
            "study": ["s", "s"],
            "revision": [1, 1],
            "variant": ["", ""],
            "flows.0.cca": ["reno", "reno"],
            "bottleneck.per": [1e-3, 1e-3],
            "seed": [1, 2],
            "n_flows": [2, 2],
            "rate_bps": [50e6, 50e6],
            "goodput_bps": [40e6, 50e6],
            "jain_fairness": [0.9, 1.0],
        }
    )
    view = view_of(runs, {})
    (goodput,) = [p for _, _, p in data_points(summary_chart(PLOTS["goodput"], view))]
    assert goodput.y == pytest.approx(45.0)
    assert (goodput.low, goodput.high) == (0.0, 50.0)
    (jain,) = [p for _, _, p in data_points(summary_chart(PLOTS["fairness"], view))]
    assert jain.high == 1.0 and jain.low == pytest.approx(0.95 - 12.706 * 0.05, abs=1e-3)
    c = summary_chart(PLOTS["fairness"], view)
    assert "n = 2" in c.caption and "t factor is 12.7" in c.caption
    assert "±9 standard deviations" in c.caption  # 12.706 / sqrt(2) = 8.98


def test_rates_on_the_x_axis_are_in_the_unit_the_study_wrote(studies: dict[str, Store]) -> None:
    store = studies["rate"]
    c = chart("goodput", store.runs("rate"), store)
    assert c.panels[0].xlabel == "bottleneck rate (Mbit/s)"
    assert sorted({float(p.x) for _, _, p in data_points(c)}) == [1.0, 4.0, 10.0]
    fig = render(c, make_style())
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.xaxis.get_offset_text().get_text() == ""  # no "x1e7" offset


def test_two_flow_legend_says_which_flow_runs_what(studies: dict[str, Store]) -> None:
    store = studies["pair"]
    runs = store.runs("pair")
    assert set(available(runs, store)) == set(PLOTS)
    c = chart("fairness", runs, store)
    # nothing numeric swept: bars per algorithm of flow 0; the axis names it
    assert c.kind == "bars" and c.panels[0].xlabel == "flow 0 algorithm"
    assert [p.title for p in c.panels] == ["fast", "slow"]
    assert {str(p.x) for _, _, p in data_points(c)} == {"bbr", "reno"}
    # the variants' settings, in the unit written
    assert "slow: bottleneck rate 2Mbps" in c.caption
    series = chart("cwnd", runs, store)
    # each run its own panel, titled by what each flow runs, a line per flow
    titles = [p.title for p in series.panels]
    assert "fast: flow 0 bbr, flow 1 cubic" in titles
    assert all({s.label for s in p.series} == {"flow 0", "flow 1"} for p in series.panels)
    assert series.legend_title == "flow"


def test_single_flow_study_refuses_fairness_and_shares(studies: dict[str, Store]) -> None:
    store = studies["per"]
    runs = store.runs("per")
    assert "fairness" not in available(runs, store) and "shares" not in available(runs, store)
    for kind in ("fairness", "shares"):
        with pytest.raises(ScenarioError) as err:
            chart(kind, runs, store)
        assert "has one flow" in str(err.value) and "\n" not in str(err.value)


def test_series_caption_names_the_run_and_the_user_can_choose(studies: dict[str, Store]) -> None:
    store = studies["per"]
    runs = store.runs("per")
    c = chart("goodput-series", runs, store)
    # the median of [0, 1e-3, 1e-2] and the lower of seeds 1, 2; both algorithms shown
    assert "packet error rate = 0.001 (the median" in c.caption
    assert "seed 1 (the lowest of seeds 1 to 2" in c.caption
    assert {s.label for s in c.panels[0].series} == {"cubic", "reno"}
    assert c.panels[0].hlines == [(4.0, "bottleneck rate")]
    chosen = chart("cwnd", runs, store, Selection(seed=2, point=(("bottleneck.per", "0.01"),)))
    sources = {p.note.split()[0] for _, _, p in data_points(chosen)}
    expected = runs[(runs["seed"] == 2) & (runs["bottleneck.per"] == 0.01)]["run_id"]
    assert sources == set(expected)
    assert "packet error rate = 0.01" in chosen.caption and "seed 2" in chosen.caption
    with pytest.raises(ScenarioError, match=r"allowed: 0\.0, 0\.001, 0\.01"):
        chart("cwnd", runs, store, Selection(point=(("bottleneck.per", "0.5"),)))
    with pytest.raises(ScenarioError, match=r"'flows\.0\.tcp\.mss' is not swept"):
        chart("cwnd", runs, store, Selection(point=(("flows.0.tcp.mss", "536"),)))


def test_samples_above_the_link_rate_are_marked() -> None:
    from tcplab.present.chart import Panel

    panel = Panel("p", "time (s)", "goodput (Mbit/s)")
    assert _above_link(panel, [3.9, 4.5, 2.0, 4.0, 6.1], 4.0) == 2
    assert panel.notes == ["2 samples above the bottleneck rate"]


def test_plot_data_export_holds_exactly_the_plotted_numbers(
    studies: dict[str, Store], tmp_path: Path
) -> None:
    db = str(studies["per"].path)
    out = subprocess.run(
        [*TCPLAB, "plot", db, "--kind", "goodput", "--style", "paper", "--size", "7x3",
         "-o", str(tmp_path / "g.pdf"), "--data", str(tmp_path / "g.csv")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "g.csv").read_text()
    assert text.startswith("# Goodput")
    rows = list(csv.DictReader(io.StringIO(text.split("\n", 1)[1])))
    data = [r for r in rows if r["reference"] == "False"]
    assert sorted({float(r["x"]) for r in data}) == [0.0, 1e-3, 1e-2] and len(data) == 6
    assert all(r["x_label"] == "packet error rate" for r in data)
    bad = subprocess.run(
        [*TCPLAB, "plot", db, "--kind", "goodput", "--seed", "1", "-o", str(tmp_path / "x.png")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    bad = subprocess.run(
        [*TCPLAB, "plot", db, "--size", "7by3", "-o", str(tmp_path / "x.png")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "--size" in bad.stderr


def test_report_svg_in_chromium_has_names_legend_titles_captions_and_every_point(
    studies: dict[str, Store], tmp_path: Path
) -> None:
    for name in ("per", "pair"):
        store = Store(studies[name].path, create=False)
        out = write_report(store, tmp_path / f"{name}.html")
        text = out.read_text()
        figures = re.findall(r"<figure class='fig'.*?</figure>", text, re.S)
        kinds = re.findall(r"data-kind='([^']+)'", text)
        assert set(kinds) == set(available(store.runs(name), store))
        for fig in figures:
            assert "<figcaption>" in fig and "Fixed:" in fig
            svg = fig.split("<figcaption>")[0]
            assert "bottleneck.per" not in svg and "flows.0.cca" not in svg  # no raw keys
            assert 'width="' not in fig.split(">", 2)[1]  # the SVG scales to the page
        body = render_in_chromium(out, tmp_path)
        assert f'data-figures="{len(figures)}"' in body and 'data-errors="0"' in body
        store.close()
    per = (tmp_path / "per.html").read_text()
    goodput = re.search(r"data-kind='goodput'>(.*?)</figure>", per, re.S)
    assert goodput is not None
    svg = goodput[1]
    assert "packet error rate" in svg and ">algorithm<" in svg  # axis name, legend title
    assert sum(b.count("<use") for b in _groups(svg, "pts-").values()) == 6
    # the table: the swept keys by name, one precision per column, no "± 0"
    assert "<th>packet error rate</th>" in per and "± 0<" not in per and "± -" not in per


def test_every_kind_renders_in_every_style(studies: dict[str, Store]) -> None:
    store = studies["pair"]
    store = Store(store.path, create=False)
    runs = store.runs("pair")
    for style in ("web", "paper", "slides"):
        for kind in available(runs, store):
            fig = render(chart(kind, runs, store), make_style(style))
            width, _ = fig.get_size_inches()
            assert width == make_style(style).width_in
            for ax in fig.axes:
                for label in ax.get_xticklabels() + ax.get_yticklabels():
                    assert float(label.get_fontsize()) >= 0.85 * make_style(style).font_pt
    store.close()
    assert math.isclose(make_style("paper").font_pt, 8.0)


def test_a_log_axis_keeps_its_minor_ticks_as_one_row_of_marks() -> None:
    """Unlabelled minor ticks of a log axis are drawn as one line of tick marks (a tick object
    each made a log figure about 35 % slower to draw): at 2..9 x 10^k inside the view, the
    positions a log axis puts them, and none where a label is."""
    from tcplab.present.chart import Chart, Panel, Point, Series
    from tcplab.present.style import line_style

    xs = [2e-6, 1e-5, 1e-4, 1e-3, 3e-2]
    series = Series("cubic", line_style(0), [Point(x, 1.0 + i) for i, x in enumerate(xs)])
    panel = Panel("p", "packet error rate", "goodput (Mbit/s)", [series], xscale="log")
    fig = render(Chart("t", "t", [panel], "algorithm", "caption"), make_style(), caption=False)
    ax = fig.axes[0]
    low, high = sorted(ax.get_xlim())
    expected = [
        k * 10.0**e for e in range(-7, 0) for k in range(2, 10) if low <= k * 10.0**e <= high
    ]
    from matplotlib.lines import Line2D

    marks = [a for a in ax.get_children() if isinstance(a, Line2D) and a.get_gid() == "minor-x"]
    assert len(marks) == 1
    drawn = np.asarray(marks[0].get_xdata(), dtype=float)
    assert drawn.tolist() == pytest.approx(expected, rel=1e-9)
    assert len(expected) >= 30  # four decades and more
    assert list(ax.xaxis.get_minorticklocs()) == []  # drawn once, not also as ticks
    assert 'id="minor-x"' in to_svg(fig)


def test_a_log_axis_labels_its_decades_as_powers_of_ten_in_plain_text() -> None:
    # 10 with a superscript exponent, as matplotlib's mathtext would draw it, but as text:
    # the labels a reader (or a search in the page) finds are "10⁻⁵" ... "10⁻²"
    from tcplab.present.chart import Chart, Panel, Point, Series
    from tcplab.present.style import line_style

    xs = [1e-5, 1e-4, 1e-3, 1e-2]
    series = Series("cubic", line_style(0), [Point(x, 1.0) for x in xs])
    panel = Panel("p", "packet error rate", "goodput (Mbit/s)", [series], xscale="log")
    svg = to_svg(render(Chart("t", "t", [panel], "algorithm", "c"), make_style(), caption=False))
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert ["10\u207b\u2075", "10\u207b\u2074", "10\u207b\u00b3", "10\u207b\u00b2"] == [
        t for t in texts if t.startswith("10")
    ]


def test_a_pages_figures_are_drawn_once_each_the_same_every_time(
    studies: dict[str, Store],
) -> None:
    # The page's figures come from the SVG writer, in order, one <svg> each, and the same
    # charts give the same bytes (a report of unchanged results is unchanged).
    from tcplab.present.svg_figure import svg_figure

    store = studies["pair"]
    runs = store.runs("pair")
    charts = [chart(kind, runs, store) for kind in available(runs, store)]
    style = make_style("web")
    assert len(charts) >= 3
    here = svgs_of(charts, style)
    assert svgs_of(charts, style) == here == [svg_figure(c, style) for c in charts]
    assert [svg.count("<svg") for svg in here] == [1] * len(charts)


def test_a_report_loads_no_matplotlib(studies: dict[str, Store], tmp_path: Path) -> None:
    # Its figures are written as SVG directly; importing matplotlib alone cost ~0.8 s. Its
    # packet-level figures simulate a stored, normalized scenario again, which needs no
    # scenario model (pydantic: ~0.25 s to import).
    out = tmp_path / "r.html"
    code = (
        "import sys\nfrom tcplab import cli\n"
        f"status = cli.main(['report', {str(studies['per'].path)!r}, '-o', {str(out)!r}])\n"
        "print('MODULES', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
        "sys.exit(status)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    modules = set(proc.stdout.rpartition("MODULES ")[2].split())
    assert "duckdb" in modules and "tcplab" in modules  # the report did run
    assert "matplotlib" not in modules and "pydantic" not in modules
    page = out.read_text()
    assert page.count("<svg") >= 3
    assert "data-kind='tseq'" in page  # a packet-level figure was drawn
