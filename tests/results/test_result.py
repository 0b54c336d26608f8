"""The typed result, `--json` object, fairness and series files, from a hand-written core
result (docs/interface.md format), so none of this needs the real core."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest
from conftest import SERIES_COLUMNS
from tcplab import ScenarioError, load_scenario
from tcplab.results.metrics import jain_index
from tcplab.results.parse import ResultFormatError, RunResult
from tcplab.results.series import write_series
from tcplab.scenario.normalize import normalize


def _flow(flow_id: int, cca: str, goodput_bps: float) -> dict[str, Any]:
    return {
        "id": flow_id,
        "cca": cca,
        "start_ns": 0,
        "app": "bulk",
        "bytes_delivered": int(goodput_bps * 3 / 8),
        "bytes_sent": int(goodput_bps * 3 / 8) + 1448,
        "segments_sent": 100,
        "retransmits": 1,
        "goodput_bps": goodput_bps,
        "throughput_bps": goodput_bps * 1.01,
        "active_ns": 3_000_000_000,
        "completion_ns": None,
        "rtt": {
            "count": 10,
            "mean_ns": 520_000_000,
            "min_ns": 500_400_000,
            "p50_ns": 510_000_000,
            "p95_ns": 650_000_000,
            "max_ns": 700_000_000,
            "srtt_time_mean_ns": 515_000_000.0,
        },
        "rto_count": 0,
        "fast_recoveries": 1,
        "spurious_undos": 0,
        "final_cwnd_bytes": 14480,
        "final_ssthresh_bytes": None,
        "kind": "tcp",
        "server_done_ns": None,
        "closed_ns": None,
        "tlp_probes": 4,  # counters passed through to --json as they are
        "dup_bytes_received": 0,
        "acks_sent": 50,
    }


def _link(name: str, ecn_marks: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "rate_bps": 4_000_000,
        "packets_tx": 1000,
        "bytes_tx": 1_500_000,
        "utilization": 0.95,
        "queue_drops": 2,
        "error_drops": 3,
        "ecn_marks": ecn_marks,
        "queue_mean_pkts": 12.5,
        "queue_max_pkts": 40,
        "queue_mean_bytes": 18_000.0,
        "queue_max_bytes": 60_000,
        "outage_drops": 0,
        "aqm_drops": 0,
    }


SCENARIO = normalize(
    load_scenario(
        {
            "name": "two",
            "duration": "3s",
            "bottleneck": {"rate": "4Mbps", "delay": "250ms", "per": 1e-4, "queue": "2bdp"},
            "flows": [{"cca": "reno"}, {"cca": "cubic"}],
        },
        catalogue=(),
    )
)

RESULT: dict[str, Any] = {
    "name": "two",
    "seed": 1,
    "duration_ns": 3_000_000_000,
    "events": 123_456,
    "core_version": "0.1.0",
    "model_version": 2,
    "flows": [_flow(0, "reno", 3e6), _flow(1, "cubic", 1e6)],
    "links": [_link("bottleneck.forward", ecn_marks=17), _link("bottleneck.reverse")],
    "series": {
        "interval_ns": 1_000_000_000,
        "t_ns": [1_000_000_000, 2_000_000_000, 3_000_000_000],
        "flows": [
            {
                "id": 0,
                "goodput_bps": [1.0, 2.0, 3.0],
                "throughput_bps": [1.5, 2.5, 3.5],
                "rtt_mean_ns": [None, 501_000_000.0, 502_000_000.0],
                "cwnd_bytes": [14480, 28960, 43440],
                "retransmits": [0, 0, 1],
            },
            {
                "id": 1,
                "goodput_bps": [4.0, 5.0, 6.0],
                "throughput_bps": [4.5, 5.5, 6.5],
                "rtt_mean_ns": [600_000_000.0, None, 700_000_000.0],
                "cwnd_bytes": [14480, 14480, 14480],
                "retransmits": [0, 2, 0],
            },
        ],
        "bottleneck_queue_pkts": [0.0, 1.0, 2.0],
        "bottleneck_utilization": [0.1, 0.5, 0.9],
    },
}


def make(result: dict[str, Any] | None = None) -> RunResult:
    text = json.dumps(RESULT if result is None else result)
    return RunResult.from_json(text, wall_s=0.5, scenario=SCENARIO)


def test_parse_result() -> None:
    run = make()
    assert run.events == 123_456
    assert [f.cca for f in run.flows] == ["reno", "cubic"]
    assert run.flows[0].rtt.p95_ns == 650_000_000
    assert run.flows[0].final_ssthresh_bytes is None
    assert run.bottleneck.error_drops == 3
    assert run.bottleneck.ecn_marks == 17
    assert run.bottleneck.extra == {}
    assert run.link("bottleneck.reverse").queue_max_pkts == 40
    assert run.link("bottleneck.reverse").ecn_marks == 0
    assert run.series.flows[1].rtt_mean_ns[1] is None


def test_jain_fairness() -> None:
    # goodputs 3 and 1 Mbit/s: (3 + 1)^2 / (2 x (9 + 1)) = 16 / 20 = 0.8
    assert make().jain_fairness == pytest.approx(0.8)
    assert jain_index([5.0]) == 1.0  # a single flow is trivially fair
    assert jain_index([2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)  # one of n takes all: 1/n
    assert jain_index([0.0, 0.0]) == 1.0


def test_to_json_dict() -> None:
    out = make().to_json_dict()
    for key in ("name", "seed", "duration_s", "wall_s", "events", "flows", "bottleneck"):
        assert key in out
    assert out["duration_s"] == 3.0
    assert out["wall_s"] == 0.5
    assert out["jain_fairness"] == pytest.approx(0.8)
    flow = out["flows"][0]
    assert flow["rtt_mean_ms"] == 520.0
    assert flow["rtt_min_ms"] == 500.4
    assert flow["rtt_p95_ms"] == 650.0
    assert flow["completion_s"] is None
    assert flow["tlp_probes"] == 4
    assert flow["final_ssthresh_bytes"] is None
    assert out["flows"][1]["final_cwnd_bytes"] == 14480
    # Mathis for p = 1e-4 and base RTT 500.4 ms (see test_theory): 2,835,221 bit/s
    assert flow["mathis_bps"] == pytest.approx(2_835_220.7, rel=1e-7)
    assert out["bottleneck"] == {
        "name": "bottleneck.forward",
        "rate_bps": 4_000_000,
        "utilization": 0.95,
        "queue_drops": 2,
        "error_drops": 3,
        "ecn_marks": 17,
        "queue_mean_pkts": 12.5,
        "queue_max_pkts": 40,
        "outage_drops": 0,
        "aqm_drops": 0,
    }
    forward, reverse = out["links"]
    assert (forward["name"], forward["ecn_marks"], reverse["ecn_marks"]) == (
        "bottleneck.forward",
        17,
        0,
    )
    assert "extra" not in forward
    json.dumps(out, allow_nan=False)  # strict JSON: no NaN or Infinity anywhere


def test_series_frame_long_format() -> None:
    frame = make().series_frame()
    assert list(frame.columns) == SERIES_COLUMNS
    assert len(frame) == 6  # 3 intervals x 2 flows
    assert list(frame["t_s"]) == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert list(frame["flow_id"]) == [0, 1, 0, 1, 0, 1]
    assert list(frame["cca"]) == ["reno", "cubic"] * 3
    assert list(frame["kind"]) == ["tcp"] * 6
    assert list(frame["goodput_bps"]) == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    assert math.isnan(frame["rtt_ms"].iloc[0])  # interval without RTT sample
    assert frame["rtt_ms"].iloc[2] == 501.0
    # the bottleneck's value of the interval, on each flow's row
    assert list(frame["bottleneck_utilization"]) == [0.1, 0.1, 0.5, 0.5, 0.9, 0.9]
    assert frame.attrs["provenance"]["seed"] == 1


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_write_series_round_trip(tmp_path: Path, suffix: str) -> None:
    from tcplab.results.export import read_table

    path = write_series(make(), tmp_path / f"s{suffix}")
    back, provenance = read_table(path)
    assert len(back) == 6
    assert list(back["cwnd_bytes"]) == [14480, 14480, 28960, 14480, 43440, 14480]
    assert back["rtt_ms"].isna().sum() == 2
    assert provenance["seed"] == 1 and provenance["wall_s"] == 0.5
    # plain pandas reads the rows too: the CSV provenance is in "#" comment lines
    plain = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path, comment="#")
    assert list(plain.columns) == list(back.columns) and len(plain) == 6


def test_write_series_refuses_other_extensions(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"unknown file extension; allowed: \.parquet, \.csv"):
        write_series(make(), tmp_path / "s.xlsx")


def test_link_without_ecn_marks_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["links"][0]["ecn_marks"]
    with pytest.raises(ResultFormatError, match=r"link bottleneck\.forward has no 'ecn_marks'"):
        make(broken)


def test_an_unknown_key_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    broken["links"][0]["sojourn_max_ns"] = 9_000_000
    with pytest.raises(ResultFormatError, match="unknown field 'sojourn_max_ns'"):
        make(broken)


def test_missing_key_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["flows"][1]["goodput_bps"]
    with pytest.raises(ResultFormatError, match="flow 1 has no 'goodput_bps'"):
        make(broken)
