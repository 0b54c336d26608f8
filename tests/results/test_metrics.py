"""Run metrics as the store, the sweep table, the report and exports compute them: run goodput
is the bytes of all flows over the scenario's duration (never above the link's payload
capacity), a flow's own goodput is over its active time; confidence intervals of bounded
metrics stay in their range; identical repetitions are exact ("deterministic")."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd  # type: ignore[import-untyped]
import pytest
from tcplab.present.report import summary_table
from tcplab.present.study_view import view_of
from tcplab.results.metrics import METRICS
from tcplab.study.aggregate import aggregate
from tcplab.study.store import Store

TCPLAB = [sys.executable, "-m", "tcplab"]
REPO = Path(__file__).resolve().parents[2]

#: The issue's case: two flows on a 20 Mbit/s link, the second starting at 10 s, 30 s.
LATE_FLOW_STUDY = """\
duration = "30s"
[study]
name = "late"
[bottleneck]
rate = "20Mbps"
delay = "20ms"
queue = "1bdp"
per = 1e-4
[[flows]]
cca = "reno"
[[flows]]
cca = "cubic"
start = "10s"
[sweep]
"flows.0.cca" = ["reno", "cubic"]
repetitions = 2
"""

#: Payload capacity of 20 Mbit/s by hand: a full data packet is the 1448-byte MSS plus 20 B
#: IPv4 + 20 B TCP headers + 12 B timestamp option (crates/core/src/net/packet.rs) = 1500 B
#: on the wire, so 20e6 x 1448 / 1500 = 19,306,666.7 bit/s of payload at most.
CAPACITY_BPS = 20e6 * 1448 / (1448 + 20 + 20 + 12)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*TCPLAB, *args], capture_output=True, text=True, check=False, env=env)


def test_run_goodput_of_a_late_flow_stays_below_the_payload_capacity(tmp_path: Path) -> None:
    study, db = tmp_path / "late.toml", tmp_path / "late.duckdb"
    study.write_text(LATE_FLOW_STUDY)
    r = cli("sweep", str(study), "--db", str(db), "--no-progress")
    assert r.returncode == 0, r.stderr
    store = Store(db, create=False)
    runs, flows = store.runs("late"), store.flows("late")
    assert set(runs["mss_bytes"]) == {1448}  # the packet size CAPACITY_BPS assumes
    # the runs exercise the case: the flows' own rates sum to more than the link carries
    own = flows.groupby("run_id")["flow_goodput_bps"].sum()
    assert (own > CAPACITY_BPS).all(), own
    # the run goodput: all bytes delivered over the 30 s, recomputed here from the flows
    delivered = flows.groupby("run_id")["bytes_delivered"].sum() * 8 / 30.0
    for _, run in runs.iterrows():
        assert run["goodput_bps"] == pytest.approx(delivered[run["run_id"]], rel=1e-12)
        assert run["goodput_bps"] <= CAPACITY_BPS
        assert run["goodput_utilization"] == pytest.approx(run["goodput_bps"] / 20e6)
    # the sweep's table, the aggregate export and the report say the same
    cells = [float(x) for x in re.findall(r"(\d+\.\d+) / \d+", r.stdout)]
    assert len(cells) == 2 and all(0 < c <= CAPACITY_BPS / 1e6 for c in cells), r.stdout
    agg = cli("results", str(db), "--table", "aggregate", "--format", "json")
    means = [row["goodput_bps_mean"] for row in json.loads(agg.stdout)["rows"]]
    assert len(means) == 2 and all(m <= CAPACITY_BPS for m in means)
    assert all(math.isclose(c, m / 1e6, abs_tol=5e-4) for c, m in zip(cells, means, strict=True))
    assert cli("report", str(db), "-o", str(tmp_path / "r.html")).returncode == 0
    html = (tmp_path / "r.html").read_text()
    # the goodput column: the first mean with its CI in each row ("± half", or "+a/-b" where
    # the interval is clipped at zero or at the capacity)
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    cell = r"<td>(\d+\.\d+) (?:±|\+)"
    shown = [float(m.group(1)) for row in rows if (m := re.search(cell, row))]
    assert len(shown) == 2 and max(shown) <= CAPACITY_BPS / 1e6
    # `tcplab run --json` of the same scenario: the same definition
    scenario = tmp_path / "one.toml"
    scenario.write_text(LATE_FLOW_STUDY.split("[sweep]")[0].replace('[study]\nname = "late"\n', ""))
    out = json.loads(cli("run", str(scenario), "--json").stdout)
    total = sum(f["bytes_delivered"] for f in out["flows"])
    assert out["aggregate_goodput_bps"] == pytest.approx(total * 8 / 30.0)
    assert out["aggregate_goodput_bps"] <= CAPACITY_BPS


def _runs(**columns: list[float]) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    return pd.DataFrame(
        {
            "study": ["s"] * n,
            "revision": [1] * n,
            "variant": [""] * n,
            "base_rtt_ms": [40.0] * n,
            "mss_bytes": [1448] * n,
            "per": [0.0] * n,
            "rate_bps": [20e6] * n,
            "n_flows": [2] * n,
            **columns,
        }
    )


def test_bounded_metrics_have_intervals_inside_their_range() -> None:
    # Jain 1.0, 0.6, 1.0: mean 0.86667, s = sqrt(((2 x 0.13333^2) + 0.26667^2) / 2) = 0.23094,
    # half-width t(0.975, 2) s / sqrt 3 = 4.303 x 0.23094 / 1.73205 = 0.57373: the interval
    # [0.29294, 1.44040] is cut at 1, the largest value Jain's index can take.
    row = aggregate(_runs(jain_fairness=[1.0, 0.6, 1.0], utilization=[0.99, 0.7, 0.98])).iloc[0]
    assert row["jain_fairness_ci95"] == pytest.approx(0.57373, abs=1e-5)
    assert row["jain_fairness_ci_low"] == pytest.approx(0.29294, abs=1e-5)
    assert row["jain_fairness_ci_high"] == 1.0
    assert row["utilization_ci_high"] == 1.0 and row["utilization_ci_low"] > 0
    # an unbounded metric keeps its symmetric interval
    row = aggregate(_runs(goodput_bps=[10e6, 11e6, 12e6])).iloc[0]
    assert row["goodput_bps_ci_low"] == pytest.approx(11e6 - 4.303 * 1e6 / math.sqrt(3))
    assert row["goodput_bps_ci_high"] == pytest.approx(11e6 + 4.303 * 1e6 / math.sqrt(3))
    # ... clipped at zero, where a rate ends: 1, 1, 10 -> mean 4, half 12.91
    row = aggregate(_runs(goodput_bps=[1.0, 1.0, 10.0])).iloc[0]
    assert row["goodput_bps_ci_low"] == 0.0


def test_goodput_intervals_stop_at_the_payload_capacity() -> None:
    # 20 Mbit/s x 1448 / 1500 = 19.306667 Mbit/s payload capacity. Goodput 19.2, 18.0, 19.3
    # Mbit/s: mean 18.833333, s = sqrt((0.366667^2 + 0.833333^2 + 0.466667^2) / 2) = 0.723418,
    # half-width 4.303 x 0.723418 / sqrt 3 = 1.797215: the upper end 20.63 would be above what
    # the link can deliver, so it stops at the capacity; the lower end stays 17.036119.
    capacity = 20e6 * 1448 / 1500
    rates = [19.2e6, 18.0e6, 19.3e6]
    row = aggregate(_runs(goodput_bps=rates, capacity_bps=[capacity] * 3)).iloc[0]
    assert row["goodput_bps_ci_high"] == pytest.approx(19.306667e6, rel=1e-7)
    assert row["goodput_bps_ci_low"] == pytest.approx(17.036119e6, rel=1e-6)
    assert row["goodput_bps_ci95"] == pytest.approx(1.797215e6, rel=1e-6)
    # a run above the first flow's capacity means the flows did not share that bottleneck:
    # then the capacity bounds nothing and the interval stays symmetric
    row = aggregate(_runs(goodput_bps=[19.2e6, 25.0e6, 19.3e6], capacity_bps=[capacity] * 3))
    assert row.iloc[0]["goodput_bps_ci_high"] > 25.0e6


def test_identical_repetitions_are_deterministic_not_a_rounding_residue() -> None:
    # pandas' standard deviation of three 0.7s is 1.36e-16, not 0
    assert pd.Series([0.7, 0.7, 0.7]).std(ddof=1) != 0.0
    agg = aggregate(_runs(goodput_utilization=[0.7, 0.7, 0.7], goodput_bps=[14e6, 14e6, 14e6]))
    row = agg.iloc[0]
    assert (row["goodput_utilization_std"], row["goodput_utilization_ci95"]) == (0.0, 0.0)
    assert row["goodput_utilization_mean"] == 0.7
    runs = _runs(goodput_utilization=[0.7, 0.7, 0.7], goodput_bps=[14e6, 14e6, 14e6])
    table = summary_table(agg, view_of(runs, {}))
    # every metric of the row agrees across its 3 repetitions: said once, in the n column,
    # and the values at one precision per column (4 significant digits; whole numbers stay
    # whole), never "± 0"
    assert "<td>3 (deterministic)</td>" in table
    assert "<td>14</td>" in table and "<td>0.7000</td>" in table
    assert "e-1" not in table and "± 0" not in table


def test_goodput_ns2_report_says_deterministic(tmp_path: Path) -> None:
    db, html = tmp_path / "ns2.duckdb", tmp_path / "ns2.html"
    r = cli("study", "run", "goodput-ns2", "--duration", "1s", "--repetitions", "3",
            "--db", str(db), "--report", str(html), "--no-progress")  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    assert "(deterministic)" in text
    assert not re.search(r"± [0-9.]+e-1\d", text), re.findall(r"± [^<]*", text)[:5]


def test_every_run_metric_is_defined_in_the_docs() -> None:
    docs = (REPO / "docs" / "results.md").read_text()
    for metric in METRICS:
        assert f"`{metric.name}`" in docs, metric.name
    assert "`flow_goodput_bps`" in docs
