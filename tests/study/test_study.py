"""Studies: grid expansion, the results store, resuming after a kill, Dask, aggregation and
the HTML report in a real headless browser."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest
from conftest import render_in_chromium
from tcplab.errors import ScenarioError
from tcplab.present.report import write_report
from tcplab.study.aggregate import aggregate, ci95, t975
from tcplab.study.grid import load_study, study_from_dict
from tcplab.study.store import Store, StoreError
from tcplab.study.sweep import run_study

TCPLAB = [sys.executable, "-m", "tcplab"]

BASE = {
    "duration": "20s",
    "bottleneck": {"rate": "4Mbps", "delay": "100ms", "queue": "1bdp"},
    "flows": [{"cca": "reno"}],
}


def small_study(reps: int = 2, **sweep: object) -> dict[str, object]:
    raw: dict[str, object] = json.loads(json.dumps(BASE))
    raw["study"] = {"name": "small"}
    raw["sweep"] = {
        "bottleneck.per": [1e-3, 1e-2],
        "flows.0.cca": ["reno", "cubic"],
        "repetitions": reps,
        **sweep,
    }
    return raw


def test_log_range_has_exact_endpoints_and_constant_ratio() -> None:
    st = study_from_dict({**BASE, "sweep": {"bottleneck.per": {"log": [1e-6, 5e-2], "points": 16}}})
    values = st.axes[0].values
    assert len(values) == 16
    assert values[0] == 1e-6 and values[-1] == 0.05
    # ratio between points: (5e-2 / 1e-6)^(1/15) = (5e4)^(1/15) = 2.0568...
    ratio = (5e4) ** (1 / 15)
    for a, b in itertools.pairwise(values):
        assert math.isclose(b / a, ratio, rel_tol=1e-5)


def test_grid_is_cartesian_product_times_repetitions_and_variants() -> None:
    raw = small_study(reps=3)
    raw["sweep"]["variants"] = [{"name": "a"}, {"name": "b", "set": {"bottleneck.rate": "8Mbps"}}]  # type: ignore[index]
    st = study_from_dict(raw)
    # 2 PER values x 2 algorithms x 2 variants x 3 seeds = 24 runs.
    assert st.n_runs == 24
    runs = list(st.runs())
    assert len({r.key for r in runs}) == 24
    assert {r.seed for r in runs} == {1, 2, 3}
    b = [r for r in runs if r.variant == "b"]
    assert all(r.normalized["bottleneck"]["forward"]["rate_bps"] == 8_000_000 for r in b)


@pytest.mark.parametrize(
    ("sweep", "needle"),
    [
        ({"bottleneck.per": []}, "sweep.bottleneck.per"),
        ({"bottleneck.per": {"log": [0, 1], "points": 3}}, "positive bounds"),
        ({"bottleneck.per": {"lin": [0, 1]}}, "points"),
        ({"bottleneck.pre": [0.1]}, "unknown key 'pre'"),
        ({"bottleneck.per": [1.5]}, "bottleneck.per = 1.5"),
        ({"repetitions": 0}, "sweep.repetitions"),
    ],
)
def test_bad_sweeps_name_the_field(sweep: dict[str, object], needle: str) -> None:
    with pytest.raises(ScenarioError) as err:
        st = study_from_dict({**BASE, "sweep": sweep})
        list(st.runs())
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_store_round_trip_and_resume_skip(tmp_path: Path) -> None:
    st = study_from_dict(small_study())
    with Store(tmp_path / "r.duckdb") as store:
        first = run_study(st, store, jobs=2, progress=False)
        again = run_study(st, store, jobs=2, progress=False)
        runs = store.runs("small")
        flows = store.flows("small")
        series = store.series(str(runs["run_id"].iloc[0]))
    assert (first.ran, first.skipped) == (8, 0)
    assert (again.ran, again.skipped) == (0, 8)
    assert len(runs) == 8 and len(flows) == 8
    assert set(runs["flows.0.cca"]) == {"reno", "cubic"}
    assert set(runs["bottleneck.per"]) == {1e-3, 1e-2}
    # 20 s at 1 s intervals: 20 series rows for the single flow.
    assert len(series) == 20 and {"cwnd_bytes", "rtt_ms", "bottleneck_queue_pkts"} <= set(series)


def test_second_study_shares_runs_it_has_in_common(tmp_path: Path) -> None:
    one = study_from_dict(small_study())
    raw = small_study()
    raw["study"] = {"name": "other"}
    raw["sweep"]["bottleneck.per"] = [1e-2, 5e-2]  # type: ignore[index]
    two = study_from_dict(raw)
    with Store(tmp_path / "r.duckdb") as store:
        run_study(one, store, jobs=2, progress=False)
        s2 = run_study(two, store, jobs=2, progress=False)
        assert (s2.ran, s2.skipped, s2.linked) == (4, 4, 4)
        assert len(store.runs("other")) == 8 and len(store.runs()) == 16
        # 12 distinct runs, 4 of them in both studies
        assert store.query("SELECT count(*) FROM runs") == [(12,)]


def test_aggregate_mean_std_ci_match_hand_values(tmp_path: Path) -> None:
    # Student t(0.975) with 1..3 degrees of freedom: 12.706, 4.303, 3.182.
    assert t975(1) == 12.706 and t975(3) == 3.182
    assert math.isclose(t975(100), 1.984, abs_tol=2e-3)
    # samples 1, 2, 3: std = 1, CI = 4.303 / sqrt(3)
    assert math.isclose(ci95(1.0, 3), 4.303 / math.sqrt(3))
    st = study_from_dict(small_study(reps=3))
    with Store(tmp_path / "r.duckdb") as store:
        run_study(st, store, jobs=2, progress=False)
        runs = store.runs("small")
    agg = aggregate(runs)
    assert len(agg) == 4 and set(agg["n"]) == {3}
    cell = runs[(runs["flows.0.cca"] == "reno") & (runs["bottleneck.per"] == 1e-2)]["goodput_bps"]
    row = agg[(agg["flows.0.cca"] == "reno") & (agg["bottleneck.per"] == 1e-2)].iloc[0]
    assert math.isclose(row["goodput_bps_mean"], sum(cell) / 3)
    assert math.isclose(row["goodput_bps_ci95"], 4.303 * cell.std(ddof=1) / math.sqrt(3))
    # physical RTT of the path: 2 x (100 ms + 2 x 0.1 ms) = 200.4 ms
    assert math.isclose(row["base_rtt_ms"], 200.4)


def test_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    bogus = tmp_path / "x.duckdb"
    bogus.write_text("hello")
    with pytest.raises(StoreError) as err:
        Store(bogus, create=False)
    assert "not a tcplab results database" in str(err.value)
    proc = subprocess.run(
        [*TCPLAB, "report", str(bogus), "-o", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")


def test_sweep_killed_hard_resumes_without_losing_or_duplicating(tmp_path: Path) -> None:
    """kill -9 at (seeded) random moments, three times, then a full rerun: every committed
    run survives each kill, none is stored twice, and the rerun completes the grid. Progress
    is read from the database itself, in this process, while the sweep writes it."""
    import random

    # 192 runs of a 50 Mbit/s GEO path (about 0.2-0.6 s each, ~25 s on two idle cores):
    # long enough to kill mid-sweep three times, even when a commit (about every 2.5 s, at
    # most 10 s apart: commits take at most 2 % of a sweep) stores dozens of runs at once.
    study_file = tmp_path / "kill.toml"
    study_file.write_text(
        'duration = "600s"\n[study]\nname = "kill"\n'
        '[bottleneck]\nrate = "50Mbps"\nreturn_rate = "20Mbps"\ndelay = "250ms"\n'
        'queue = "2bdp"\n[[flows]]\ncca = "cubic"\n'
        '[sweep]\n"bottleneck.per" = { log = [1e-6, 1e-4], points = 8 }\nrepetitions = 24\n'
    )
    db = tmp_path / "kill.duckdb"
    cmd = [*TCPLAB, "sweep", str(study_file), "--db", str(db), "--jobs", "2", "--no-progress"]
    rng = random.Random(20240611)

    def stored() -> int:
        if not db.exists():
            return 0
        try:
            return int(Store(db, create=False).query("SELECT count(*) FROM runs")[0][0])
        except StoreError:  # not created yet
            return 0

    counts = [0]
    for _ in range(3):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a random moment: after a random number of new commits, plus a random delay
        target = counts[-1] + rng.randint(1, 8)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and stored() < target:
            # a look costs ~60 ms of CPU (opening the store): more often would slow the sweep
            time.sleep(0.2)
        time.sleep(rng.uniform(0.0, 0.4))
        assert proc.poll() is None, "the sweep ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = stored()
        # nothing committed is lost by a kill (and the sweep made progress in between)
        assert counts[-1] <= now < 192, [*counts, now]
        counts.append(now)
    resumed = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    with Store(db) as store:
        runs = store.runs("kill")
        assert store.query("SELECT count(*), count(DISTINCT run_id) FROM runs") == [(192, 192)]
        orphans = store.query(
            "SELECT count(*) FROM runs WHERE run_id NOT IN (SELECT run_id FROM revision_runs)"
        )
    assert len(runs) == 192 and orphans == [(0,)]
    assert not runs.duplicated(["scenario_hash", "seed"]).any()
    assert counts[-1] > counts[0]
    assert f"{counts[-1]} already stored" in resumed.stdout
    # every stored run has its series file
    assert all((db.parent / "kill.duckdb.series" / f).exists() for f in runs["series_file"])


def test_dask_local_cluster_runs_the_same_sweep(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    st = study_from_dict(small_study(reps=1))
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
        ) as cluster,
        Store(tmp_path / "d.duckdb") as store,
    ):
        summary = run_study(
            st, store, executor="dask", scheduler=cluster.scheduler_address, progress=False
        )
        dask_runs = store.runs("small")
    with Store(tmp_path / "l.duckdb") as store:
        run_study(st, store, jobs=2, progress=False)
        local_runs = store.runs("small")
    assert summary.ran == 4
    cols = ["scenario_hash", "seed", "goodput_bps", "events"]
    assert (
        dask_runs[cols]
        .sort_values(cols)
        .reset_index(drop=True)
        .equals(local_runs[cols].sort_values(cols).reset_index(drop=True))
    )


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    st = study_from_dict(small_study())
    with Store(tmp_path / "r.duckdb") as store:
        run_study(st, store, jobs=2, progress=False)
        out = write_report(store, tmp_path / "report.html")
    text = out.read_text()
    # self-contained: nothing is fetched (namespace URIs in xmlns attributes are names only)
    assert not re.search(
        r"""(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?https?:|@import""", text
    )
    body = render_in_chromium(out, tmp_path)
    # every figure rendered with a non-zero size, and no script error happened
    n_figs = text.count("class='fig'")
    assert n_figs >= 6
    assert f'data-figures="{n_figs}"' in body, body
    assert 'data-errors="0"' in body, body


def test_cli_sweep_report_plot_results(tmp_path: Path) -> None:
    study_file = tmp_path / "s.toml"
    study_file.write_text(
        'duration = "10s"\n[study]\nname = "cli"\n[bottleneck]\nrate = "4Mbps"\n'
        'delay = "50ms"\nqueue = "1bdp"\n[[flows]]\ncca = "reno"\n'
        '[sweep]\n"bottleneck.per" = [1e-3, 1e-2]\nrepetitions = 2\n'
    )
    db = str(tmp_path / "c.duckdb")
    env = {**os.environ, "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TCPLAB, *args], capture_output=True, text=True, env=env, check=False
        )

    r = run("sweep", str(study_file), "--db", db, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "goodput Mbit/s" in r.stdout
    r = run("report", db, "-o", str(tmp_path / "rep.html"))
    assert r.returncode == 0 and (tmp_path / "rep.html").stat().st_size > 10_000
    for ext in ("png", "svg", "pdf"):
        r = run("plot", db, "--kind", "goodput", "-o", str(tmp_path / f"g.{ext}"))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"g.{ext}").stat().st_size > 1000
    r = run("results", db, "--format", "json")
    doc = json.loads(r.stdout)
    rows = doc["rows"]
    assert len(rows) == 4 and {"bottleneck.per", "goodput_bps", "seed"} <= set(rows[0])
    assert doc["provenance"]["studies"][0]["revision"] == 1
    assert "cli revision 1 of 1" in r.stderr
    r = run("results", db, "--format", "parquet", "-o", str(tmp_path / "x.parquet"))
    assert r.returncode == 0
    r = run("plot", db, "-o", str(tmp_path / "g.gif"))
    assert r.returncode == 2 and "allowed: .png, .svg, .pdf" in r.stderr
    r = run("sweep", str(tmp_path / "missing.toml"))
    assert r.returncode == 2 and "no such file" in r.stderr
    # a second study in the database: a report or a figure is of one, named with --study
    other = tmp_path / "other.toml"
    other.write_text(study_file.read_text().replace('name = "cli"', 'name = "other"'))
    assert run("sweep", str(other), "--db", db, "--no-progress").returncode == 0
    two = [
        ["report", db, "-o", str(tmp_path / "two.html")],
        ["plot", db, "--kind", "goodput", "-o", str(tmp_path / "two.svg")],
    ]
    for command in two:
        r = run(*command)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "--study: the database holds several studies; allowed: cli, other" in r.stderr
    r = run("report", db, "--study", "other", "-o", str(tmp_path / "other.html"))
    assert r.returncode == 0 and "report of other revision 1 of 1" in r.stderr


def test_every_preset_study_loads() -> None:
    from tcplab.study.presets import presets

    found = presets()
    assert set(found) == {"geo-leaky", "cca-survey", "goodput-ns2", "pep-split", "sat-train"}
    for name, paths in found.items():
        for path in paths:
            st = load_study(path)
            assert st.name.startswith(name)
            assert st.n_runs >= 1
            for _ in st.runs():  # every grid point validates
                pass


def test_reference_values_and_duplicate_runs(tmp_path: Path) -> None:
    raw = json.loads(json.dumps(BASE))
    raw["flows"] = [{"cca": "reno"}, {"cca": "cubic"}]
    raw["sweep"] = {"flows.0.cca": ["reno", "cubic"], "flows.1.cca": ["cubic", "=flows.0.cca"]}
    st = study_from_dict(raw)
    pts = [p["flows.1.cca"] for _, p in st.points()]
    assert pts == ["cubic", "reno", "cubic", "cubic"]
    with Store(tmp_path / "r.duckdb") as store:
        summary = run_study(st, store, jobs=2, progress=False)
    # cubic vs cubic appears twice in the grid but is one run
    assert summary.ran == 3
    bad = json.loads(json.dumps(raw))
    bad["sweep"]["flows.1.cca"] = ["=flows.9.cca"]
    with pytest.raises(ScenarioError, match="refers to no other swept key"):
        list(study_from_dict(bad).points())


def test_study_axes_numbers_units_and_names_lines_by_every_other_key() -> None:
    from tcplab.study.axes import line_labels, study_axes

    runs = pd.DataFrame(
        {
            "scenario_hash": list("abcdefgh"),
            "seed": [1] * 8,
            "variant": [""] * 8,
            "path.pep": ["none", "gateway"] * 4,
            "path.segments.1.rate": ["1Mbps", "1Mbps", "4Mbps", "4Mbps"] * 2,
            "flows.0.cca": ["sack"] * 4 + ["vegas"] * 4,
            "flows.0.pep.cca": ["sack"] * 4 + ["vegas"] * 4,
            "goodput_bps": [1.0] * 8,
        }
    )
    df, axes = study_axes(runs)
    # No error rate and no numeric key: the rate written with units becomes the x axis.
    assert axes.x == "path.segments.1.rate"
    assert df["path.segments.1.rate"].tolist()[:3] == [1e6, 1e6, 4e6]
    assert axes.x_label == "path.segments.1.rate (bit/s)"
    assert axes.format_x(4e6) == "4Mbps"
    # The PEP's algorithm repeats the flow's row by row: not part of the label.
    assert axes.lines == ("flows.0.cca", "path.pep")
    assert line_labels(df, axes.lines).tolist()[:2] == ["sack, none", "sack, gateway"]
    # An error rate wins over other numbers, as x.
    runs["bottleneck.per"] = [1e-3, 1e-2] * 4
    _, axes = study_axes(runs.drop(columns=["path.pep"]))
    assert axes.x == "bottleneck.per"
    assert axes.lines == ("flows.0.cca", "path.segments.1.rate")
    assert line_labels(runs, axes.lines).tolist()[:3] == [
        "sack, 1Mbps",
        "sack, 1Mbps",
        "sack, 4Mbps",
    ]


def test_shares_plot_splits_each_interval_among_the_flows(tmp_path: Path) -> None:
    from tcplab.present.plots import available, figure

    raw = json.loads(json.dumps(BASE))
    raw["flows"] = [{"cca": "reno"}, {"cca": "cubic", "start": "5s"}]
    raw["study"] = {"name": "two"}
    raw["sweep"] = {"flows.0.cca": ["reno", "cubic"]}
    with Store(tmp_path / "t.duckdb") as store:
        run_study(study_from_dict(raw), store, jobs=1, progress=False)
        runs = store.runs("two")
        assert "shares" in available(runs)
        fig = figure("shares", runs, store)
    ax = fig.axes[0]
    flows = [ln for ln in ax.get_lines() if str(ln.get_label()).startswith("flow")]
    fair = [ln for ln in ax.get_lines() if str(ln.get_label()).startswith("fair")]
    assert len(flows) == 2 and np.asarray(fair[0].get_ydata(), float)[0] == 0.5
    total = np.asarray(flows[0].get_ydata(), float) + np.asarray(flows[1].get_ydata(), float)
    total = total[~np.isnan(total)]
    # Shares of one interval add up to 1, and the late flow has nothing before it starts.
    assert len(total) > 10 and np.allclose(total, 1.0)
    t = np.asarray(flows[1].get_xdata(), float)
    late = np.asarray(flows[1].get_ydata(), float)[t <= 5.0]
    assert np.nan_to_num(late).max() == 0.0


def test_summary_names_swept_keys_by_the_shortest_unambiguous_suffix() -> None:
    from tcplab.cli.study import short_names

    keys = ["variant", "flows.0.pep.cca", "path.pep", "path.segments.1.per", "flows.0.cca"]
    assert short_names(keys) == {
        "variant": "variant",
        "flows.0.pep.cca": "pep.cca",
        "path.pep": "pep",
        "path.segments.1.per": "per",
        "flows.0.cca": "flows.0.cca",
    }
    assert short_names(["flows.0.cca", "flows.1.cca", "path.segments.1.rate"]) == {
        "flows.0.cca": "flows.0.cca",
        "flows.1.cca": "flows.1.cca",
        "path.segments.1.rate": "rate",
    }


def test_every_grid_point_of_every_preset_runs_briefly() -> None:
    # a smoke run of the shipped studies: every grid point (one seed, 1 s simulated, the
    # queue and start times as the study has them) builds and runs in the core; the goldens
    # pin the numbers of each part's first point
    from tcplab.runner import run_normalized_parallel
    from tcplab.study.presets import presets

    batch = []
    for paths in presets().values():
        for path in paths:
            study = load_study(path)
            for spec in study.runs():
                if spec.seed == study.base_seed:
                    batch.append({**spec.normalized, "duration_ns": 10**9})
    results = run_normalized_parallel(batch)
    assert len(results) == len(batch) > 900
    assert all(r.flows and r.duration_ns == 10**9 for r in results)
