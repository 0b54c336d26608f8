"""`tcplab compare`: grid points, runs, series files and study revisions side by side, with
differences computed from the stored numbers, and one-line errors for sources it cannot
resolve."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCENARIOS, render_in_chromium
from figure_studies import PER_STUDY, stored
from tcplab.errors import ScenarioError
from tcplab.present import compare
from tcplab.study.store import Store

TCPLAB = [sys.executable, "-m", "tcplab"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = stored(tmp_path_factory.mktemp("compare"), PER_STUDY)
    return store.path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TCPLAB, *args], capture_output=True, text=True, check=False)


def test_two_grid_points_side_by_side_with_differences(db: Path, tmp_path: Path) -> None:
    a = f"{db}:per,bottleneck.per=0.001,flows.0.cca=reno"
    b = f"{db}:per,bottleneck.per=0.001,flows.0.cca=cubic"
    sides = compare.resolve([a, b])
    assert [s.kind for s in sides] == ["point", "point"] and len(sides[0].runs) == 2
    table = compare.table(sides)
    row = next(r for r in table.rows if r[0] == "goodput Mbit/s")
    runs = Store(db, create=False).runs("per")
    at = runs[runs["bottleneck.per"] == 0.001]
    mean = {c: at[at["flows.0.cca"] == c]["goodput_bps"].mean() / 1e6 for c in ("reno", "cubic")}
    # the difference is cubic's mean minus reno's, from the stored runs
    delta = float(re.match(r"[+-]?[\d.]+", row[3])[0])  # type: ignore[index]
    assert delta == pytest.approx(mean["cubic"] - mean["reno"], abs=0.01)
    # 4 significant digits, then "± half" or, clipped at zero or the capacity, "+a/-b"
    assert re.match(rf"{mean['reno']:.3f} (± |\+)", row[1]), row[1]
    out = _cli("compare", a, b, "-o", str(tmp_path / "c.html"))
    assert out.returncode == 0, out.stderr
    assert "B - A" in out.stdout
    page = (tmp_path / "c.html").read_text()
    assert page.count("<figure") == 1 and "<figcaption>" in page and "seed 1" in page
    body = render_in_chromium(tmp_path / "c.html", tmp_path)
    assert 'data-figures="1"' in body and 'data-errors="0"' in body


def test_one_run_and_a_series_file(db: Path, tmp_path: Path) -> None:
    runs = Store(db, create=False).runs("per")
    run_id = str(runs["run_id"].iloc[0])
    side = compare.resolve(
        [f"{db}:run={run_id}", f"{db}:per,seed=1,bottleneck.per=0,flows.0.cca=reno"]
    )
    assert side[0].kind == "run" and side[1].kind == "run"
    # a simulation's series file beside another seed's
    for seed in ("1", "2"):
        r = _cli("run", str(SCENARIOS / "lan.toml"), "--duration", "3s", "--seed", seed,
                 "--series", str(tmp_path / f"s{seed}.parquet"))  # fmt: skip
        assert r.returncode == 0, r.stderr
    sides = compare.resolve([str(tmp_path / "s1.parquet"), str(tmp_path / "s2.parquet")])
    table = compare.table(sides)
    assert any("summary from the series" in n for n in table.notes)
    series = compare.charts(sides)[0]
    assert [p.title for p in series.panels] == ["goodput", "RTT", "cwnd"]
    assert {s.label.split()[0] for s in series.panels[0].series} == {"A", "B"}


def test_two_revisions_of_a_study(db: Path, tmp_path: Path) -> None:
    study = tmp_path / "per.toml"
    raw = json.loads(json.dumps(PER_STUDY))
    raw["duration"] = "5s"
    lines = [f'duration = "{raw["duration"]}"', '[study]', 'name = "per"', "[bottleneck]",
             'rate = "4Mbps"', 'delay = "50ms"', 'queue = "1bdp"', "[[flows]]", 'cca = "reno"',
             "[sweep]", '"bottleneck.per" = [0.0, 0.001, 0.01]',
             '"flows.0.cca" = ["reno", "cubic"]', "repetitions = 2"]  # fmt: skip
    study.write_text("\n".join(lines) + "\n")
    r = _cli("sweep", str(study), "--db", str(db), "--new-revision", "--no-progress")
    assert r.returncode == 0, r.stderr
    sides = compare.resolve([f"{db}:per@1", f"{db}:per@2"])
    table = compare.table(sides)
    assert len(table.rows) == 6  # 3 error rates x 2 algorithms in both
    charts = compare.charts(sides)
    assert [c.name for c in charts] == ["compare-goodput", "compare-rtt"]
    labels = {s.label for p in charts[0].panels for s in p.series if not s.reference}
    assert labels == {"A: reno", "A: cubic", "B: reno", "B: cubic"}


@pytest.mark.parametrize(
    ("sources", "needle"),
    [
        (["{db}"], "two or more sources"),
        (["{db}", "{db}:nope"], "no study 'nope'"),
        (["{db}:per,flows.0.cca=reno", "{db}"], "matches 3 grid points"),
        (
            ["{db}:per,bottleneck.per=0,flows.0.cca=reno", "{db}"],
            "only be compared with other study",
        ),
        (["{db}:per,seed=x", "{db}"], "seed=x is not an integer"),
        (["{db}:run=zzz", "{db}"], "no run"),
        (["missing.duckdb", "{db}"], "no such file"),
    ],
)
def test_bad_sources_are_one_line_errors(db: Path, sources: list[str], needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        compare.resolve([s.format(db=db) for s in sources])
    assert needle in str(err.value) and "\n" not in str(err.value)
