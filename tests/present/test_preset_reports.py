"""Every preset's report, from short runs, in headless Chromium: each figure renders, names
its axes in words, has a caption, and shows every grid point of the results table (slow:
`pytest -m slow tests/present/test_preset_reports.py`, about two minutes on two cores)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import render_in_chromium
from tcplab.study.presets import presets

TCPLAB = [sys.executable, "-m", "tcplab"]
#: Summary kinds: one marker (or bar) per grid point of the results table.
SUMMARY_KINDS = ("goodput", "rtt", "retransmits", "utilization", "fairness")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(presets()))
def test_preset_report_shows_every_point_with_names_and_captions(name: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.html"
    r = subprocess.run(
        [*TCPLAB, "study", "run", name, "--duration", "2s", "--repetitions", "1",
         "--db", str(tmp_path / "r.duckdb"), "--report", str(out), "--no-progress"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    text = out.read_text()
    body = render_in_chromium(out, tmp_path)
    figures = re.findall(r"<figure class='fig'.*?</figure>", text, re.S)
    assert figures and f'data-figures="{len(figures)}"' in body and 'data-errors="0"' in body
    sections = text.split("<h2>Figures</h2>")[1:] or text.split("Figures</h3>")[1:]
    for section in sections:
        table = re.search(r"<table class='results'>(.*?)</table>", section, re.S)
        assert table is not None
        points = table[1].count("<tr>") - 1
        for fig in re.findall(r"<figure class='fig'.*?</figure>", section, re.S):
            svg, caption = fig.split("<figcaption>")
            assert "Fixed:" in caption or "fixed:" in caption
            labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
            assert not any(re.fullmatch(r"[a-z_]+(\.[a-z_0-9]+)+", t) for t in labels), labels
            kind = re.search(r"data-kind='([^']+)'", fig)
            assert kind is not None
            if kind[1] in SUMMARY_KINDS:
                markers = sum(
                    b.count("<use") for b in re.findall(r'<g id="pts-[^"]*">(.*?)</g>', svg, re.S)
                )
                bars = len(re.findall(r'<g id="bar-', svg))
                assert markers + bars == points, (name, kind[1], markers, bars, points)
