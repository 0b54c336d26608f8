"""Every preset names its paper (`[study.paper]`) in `study list`, `study show` and its
report; a paper is no part of the study's definition."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tcplab.errors import ScenarioError
from tcplab.study.grid import load_study, study_from_dict
from tcplab.study.paper import Paper
from tcplab.study.presets import presets

TCPLAB = [sys.executable, "-m", "tcplab"]

#: The titles as the papers (/work/shared/seeds) print them, written out here.
TITLES = {
    "geo-leaky": "Steady-State Performance Evaluation of Linux TCPs versus TCP Wave over Leaky "
    "Satellite Links",
    "goodput-ns2": "Experimented Goodput Measurement of Standard TCP Versions over "
    "Large-Bandwidth Low-Latency Bottleneck",
    "pep-split": "Performance Evaluation of PEP based TCP Splitting Scheme in Satellite "
    "Communication Systems",
    "cca-survey": "Extensive Evaluation of TCP Congestion Control Algorithms under Varied "
    "Network Environments",
    "sat-train": "TCP Performance for Vehicular Users through Satellite Links",
}

TINY_STUDY = """\
name = "cites"
duration = "2s"
[study]
name = "cites"
[study.paper]
authors = ["Ada Lovelace", "Charles Babbage"]
title = "Notes on an Engine"
venue = "Scientific Memoirs 3"
year = 1843
doi = "10.1234/notes.1843"
[bottleneck]
rate = "10Mbps"
delay = "10ms"
[[flows]]
cca = "reno"
[sweep]
"flows.0.cca" = ["reno", "cubic"]
"""


def tcplab(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TCPLAB, *argv], cwd=cwd, capture_output=True, text=True)


def test_every_part_of_every_preset_cites_its_paper() -> None:
    found = presets()
    assert set(found) == set(TITLES)
    for name, paths in found.items():
        papers = {load_study(p).paper for p in paths}
        assert len(papers) == 1, f"{name}: its parts cite {len(papers)} papers"
        paper = papers.pop()
        assert paper is not None and paper.title == TITLES[name], name


def test_study_list_names_each_paper() -> None:
    proc = subprocess.run(
        [*TCPLAB, "study", "list"], capture_output=True, text=True, env={"COLUMNS": "400"}
    )
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    for title in TITLES.values():
        assert f'"{title}"' in flat
    assert "Ahmed Abdelsalam, Cesare Roseti, Francesco Zampognaro" in flat
    assert "China Communications 14(3), 2017" in flat


def test_study_show_prints_the_paper_table() -> None:
    proc = tcplab("study", "show", "geo-leaky")
    assert proc.returncode == 0, proc.stderr
    paper = tomllib.loads(proc.stdout)["study"]["paper"]
    assert paper["title"] == TITLES["geo-leaky"]
    assert paper["year"] == 2017


def test_a_paper_is_no_part_of_the_definition() -> None:
    raw = tomllib.loads(TINY_STUDY)
    cited = study_from_dict(raw)
    del raw["study"]["paper"]
    assert study_from_dict(raw).definition() == cited.definition()


def test_the_report_names_the_paper(tmp_path: Path) -> None:
    (tmp_path / "cites.toml").write_text(TINY_STUDY)
    sweep = tcplab("sweep", "cites.toml", "--db", "r.duckdb", "--no-progress", cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    report = tcplab("report", "r.duckdb", "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text()
    assert (
        "The study reproduces: Ada Lovelace, Charles Babbage, &quot;Notes on an Engine&quot;, "
        "Scientific Memoirs 3, 1843. doi:10.1234/notes.1843"
    ) in html


def test_citation_forms() -> None:
    paper = Paper(("Ada Lovelace", "Charles Babbage"), "Notes", "Memoirs 3", 1843)
    assert paper.citation() == 'Ada Lovelace, Charles Babbage, "Notes", Memoirs 3, 1843.'
    assert paper.short() == "Lovelace & Babbage, Memoirs 3, 1843"
    four = Paper(("A One", "B Two", "C Three", "D Four"), "T", "V")
    assert four.short() == "One et al., V"
    anonymous = Paper((), "T", "a thesis", note="undated")
    assert anonymous.citation() == '(author not named), "T", a thesis. (undated)'


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"journal": "x"},
            'study.paper.journal = "x": unknown key; allowed: authors, title, venue, year, '
            "doi, url, note",
        ),
        ({"doi": "doi:10.1/x"}, 'study.paper.doi = "doi:10.1/x": not a DOI; allowed: e.g.'),
        ({"year": "1843"}, 'study.paper.year = "1843": must be an integer'),
        ({"authors": "Ada"}, 'study.paper.authors = "Ada": must be an array of names'),
        ({"title": None}, "study.paper.title: missing required key"),
    ],
)
def test_a_bad_paper_table_is_one_line(change: dict[str, object], message: str) -> None:
    raw = tomllib.loads(TINY_STUDY)
    for key, value in change.items():
        if value is None:
            del raw["study"]["paper"][key]
        else:
            raw["study"]["paper"][key] = value
    with pytest.raises(ScenarioError) as info:
        study_from_dict(raw)
    assert str(info.value).startswith(message)
