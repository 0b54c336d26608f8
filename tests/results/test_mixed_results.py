"""Results of paths, PEPs and CBR flows (docs/interface.md "Results (additions)"): parsing,
Jain's index over TCP flows, `--json`, the rich summary and the results database (schema 2,
and version-1 files upgraded in place). The core's answer is hand-written here, so none of
this needs a core that implements the features."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import SCENARIOS, V1_SCHEMA, store_run
from tcplab import _core, cli, load_scenario
from tcplab.results.parse import RTT_KEYS, ResultFormatError, RunResult
from tcplab.scenario.normalize import normalize
from tcplab.study.store import SCHEMA_VERSION, Store, StoreError

#: pep-geo (internet 100 Mbit/s, satellite 10/2 Mbit/s, access 100 Mbit/s) plus a CBR flow.
SCENARIO_TOML = (SCENARIOS / "pep-geo.toml").read_text() + (
    '\n[[flows]]\napp = "cbr"\nrate = "250kbps"\n'
)


def _rtt(mean_ms: float, p95_ms: float) -> dict[str, Any]:
    return {
        "count": 50,
        "mean_ns": mean_ms * 1e6,
        "min_ns": 550_400_000,
        "p50_ns": mean_ms * 1e6,
        "p95_ns": p95_ms * 1e6,
        "max_ns": p95_ms * 1e6 + 1e7,
        "srtt_time_mean_ns": mean_ms * 1e6,
    }


def _link(name: str, rate_bps: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "rate_bps": rate_bps,
        "packets_tx": 100,
        "bytes_tx": 150_000,
        "utilization": 0.5,
        "queue_drops": 1,
        "error_drops": 2,
        "ecn_marks": 0,
        "queue_mean_pkts": 3.0,
        "queue_max_pkts": 9,
        "queue_mean_bytes": 4500.0,
        "queue_max_bytes": 13_500,
        "outage_drops": 0,
        "aqm_drops": 0,
        **extra,
    }


TCP_FLOW: dict[str, Any] = {
    "id": 0,
    "kind": "tcp",
    "cca": "cubic",
    "start_ns": 0,
    "app": "file",
    "bytes_delivered": 5_000_000,
    "bytes_sent": 5_100_000,
    "segments_sent": 3500,
    "retransmits": 12,
    "goodput_bps": 3_000_000.0,
    "throughput_bps": 3_100_000.0,
    "active_ns": 13_333_333_333,
    "completion_ns": 13_333_333_333,
    "server_done_ns": 9_000_000_000,
    "closed_ns": 13_343_000_000,
    "rtt": _rtt(25.0, 30.0),
    "rto_count": 0,
    "fast_recoveries": 1,
    "spurious_undos": 0,
    "final_cwnd_bytes": 144_800,
    "final_ssthresh_bytes": 100_000,
    "tlp_probes": 2,
    "dup_bytes_received": 0,
    "acks_sent": 1700,
    "legs": [
        {
            "from": "server",
            "to": "pep1",
            "cca": "cubic",
            "goodput_bps": 3.2e6,
            "retransmits": 0,
            "rtt": _rtt(20.4, 22.0),
            "bytes_delivered": 5_000_000,
            "rto_count": 0,
            "sender_done_ns": 9_000_000_000,
            "closed_ns": 13_628_000_000,
        },
        {
            "from": "pep1",
            "to": "pep2",
            "cca": "hybla",
            "goodput_bps": 3.1e6,
            "retransmits": 12,
            "rtt": _rtt(530.0, 610.0),
            "bytes_delivered": 5_000_000,
            "rto_count": 1,
            "sender_done_ns": None,
            "closed_ns": None,
        },
        {  # a leg the real stack could not observe: its figures are null
            "from": "pep2",
            "to": "client",
            "cca": None,
            "goodput_bps": None,
            "retransmits": None,
            "rtt": {**dict.fromkeys(RTT_KEYS), "count": 0},
            "bytes_delivered": None,
            "rto_count": None,
            "sender_done_ns": None,
            "closed_ns": None,
        },
    ],
    "pep_buffer": [
        {"node": "pep1", "mean_bytes": 524_288.0, "max_bytes": 2_097_152, "limit_bytes": 4_194_304},
        {"node": "pep2", "mean_bytes": 1024.0, "max_bytes": 65_536, "limit_bytes": 4_194_304},
    ],
}

CBR_FLOW: dict[str, Any] = {
    "id": 1,
    "kind": "cbr",
    "app": "cbr",
    "cca": "",
    "start_ns": 0,
    "bytes_sent": 1_875_000,
    "segments_sent": 1250,
    "retransmits": 0,
    "throughput_bps": 250_000.0,
    "active_ns": 60_000_000_000,
    "completion_ns": None,
    "server_done_ns": None,
    "closed_ns": None,
    "rtt": {**dict.fromkeys(RTT_KEYS), "count": 0},
    "rto_count": 0,
    "fast_recoveries": 0,
    "spurious_undos": 0,
    "final_cwnd_bytes": 0,
    "final_ssthresh_bytes": 0,
    "tlp_probes": 0,
    "dup_bytes_received": 0,
    "acks_sent": 0,
    "packets_sent": 1250,
    "packets_received": 1200,
    "loss_ratio": 0.04,
    "owd": {
        "count": 1200,
        "mean_ns": 290_500_000,
        "min_ns": 275_200_000,
        "p50_ns": 285_000_000,
        "p95_ns": 330_000_000,
        "max_ns": 400_000_000,
        "srtt_time_mean_ns": None,
    },
    "goodput_bps": 240_000.0,
    "bytes_delivered": 1_800_000,  # 240 kbit/s for the whole 60 s run
}

LINKS = [
    _link("internet.forward", 100_000_000),
    _link("internet.reverse", 100_000_000),
    _link("satellite.forward", 10_000_000, outage_drops=7, aqm_drops=0),
    _link("satellite.reverse", 2_000_000, outage_drops=3),
    _link("access.forward", 100_000_000),
    _link("access.reverse", 100_000_000),
]

RESULT: dict[str, Any] = {
    "name": "pep-geo",
    "seed": 1,
    "duration_ns": 60_000_000_000,
    "events": 10_000,
    "core_version": "0.2.0",
    "model_version": 2,
    "flows": [TCP_FLOW, CBR_FLOW],
    "links": LINKS,
    "series": {
        "interval_ns": 30_000_000_000,
        "t_ns": [30_000_000_000, 60_000_000_000],
        "flows": [
            {
                "id": 0,
                "goodput_bps": [2e6, 4e6],
                "throughput_bps": [2e6, 4e6],
                "rtt_mean_ns": [25e6, None],
                "cwnd_bytes": [100_000, 144_800],
                "retransmits": [12, 0],
            },
            # a UDP flow: no RTT, cwnd or retransmission
            {
                "id": 1,
                "goodput_bps": [240_000.0, 240_000.0],
                "throughput_bps": [250_000.0, 250_000.0],
                "rtt_mean_ns": [None, None],
                "cwnd_bytes": [0, 0],
                "retransmits": [0, 0],
            },
        ],
        "bottleneck_queue_pkts": [1.0, 2.0],
        "bottleneck_utilization": [0.4, 0.6],
    },
}


def scenario() -> dict[str, Any]:
    import tomllib

    return normalize(load_scenario(tomllib.loads(SCENARIO_TOML), catalogue=()))


def make(result: dict[str, Any] | None = None) -> RunResult:
    return RunResult.from_json(json.dumps(result or RESULT), wall_s=0.25, scenario=scenario())


# --- parsing ----------------------------------------------------------------------------------


def test_parse_cbr_legs_and_pep_buffer() -> None:
    run = make()
    tcp, cbr = run.flows
    assert (tcp.kind, cbr.kind) == ("tcp", "cbr")
    assert [f.id for f in run.tcp_flows] == [0] and [f.id for f in run.cbr_flows] == [1]
    assert cbr.cbr is not None
    assert (cbr.cbr.packets_sent, cbr.cbr.packets_received, cbr.cbr.loss_ratio) == (
        1250,
        1200,
        0.04,
    )
    assert cbr.cbr.owd.p95_ns == 330_000_000
    assert cbr.retransmits == 0 and cbr.rtt.count == 0  # TCP counters a UDP flow lacks
    assert [leg.label for leg in tcp.legs] == ["server→pep1", "pep1→pep2", "pep2→client"]
    assert tcp.legs[1].cca == "hybla" and tcp.legs[1].rtt.mean_ns == 530e6
    assert tcp.legs[2].goodput_bps is None and tcp.legs[2].rtt.count == 0
    assert [(b.node, b.max_bytes) for b in tcp.pep_buffer] == [
        ("pep1", 2_097_152),
        ("pep2", 65_536),
    ]
    sat = run.link("satellite.forward")
    assert (sat.outage_drops, sat.aqm_drops) == (7, 0)
    assert run.link("internet.forward").outage_drops == 0
    assert run.series.flows[1].cwnd_bytes == (0, 0)
    assert run.series.flows[1].rtt_mean_ns == (None, None)


def test_bottleneck_of_a_path_is_the_slowest_forward_segment() -> None:
    run = make()
    # internet 100, satellite 10, access 100 Mbit/s forward: the satellite segment
    assert run.bottleneck.name == "satellite.forward"
    assert run.bottleneck_reverse.name == "satellite.reverse"


def test_jain_over_tcp_flows_only() -> None:
    result = copy.deepcopy(RESULT)
    second = copy.deepcopy(TCP_FLOW)
    second.update(id=2, goodput_bps=1_000_000.0)
    del second["legs"], second["pep_buffer"]
    result["flows"].append(second)
    # TCP goodputs 3 and 1 Mbit/s: (3 + 1)^2 / (2 x (9 + 1)) = 0.8; the 0.24 Mbit/s CBR flow
    # would make it (4.24)^2 / (3 x 10.0576) = 0.596 if it counted
    scen = scenario()
    scen["flows"].append(copy.deepcopy(scen["flows"][0]))
    run = RunResult.from_json(json.dumps(result), wall_s=0.25, scenario=scen)
    assert run.jain_fairness == pytest.approx(0.8)


def test_cbr_flow_without_counts_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["flows"][1]["packets_sent"]
    with pytest.raises(ResultFormatError, match="flow 1 has no 'packets_sent'"):
        make(broken)


def test_leg_without_end_point_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["flows"][0]["legs"][0]["to"]
    with pytest.raises(ResultFormatError, match="flow 0 leg has no 'to'"):
        make(broken)


def test_cbr_flow_without_loss_ratio_is_a_format_error() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["flows"][1]["loss_ratio"]
    with pytest.raises(ResultFormatError, match="flow 1 has no 'loss_ratio'"):
        make(broken)


def test_series_need_every_column() -> None:
    broken = copy.deepcopy(RESULT)
    del broken["series"]["flows"][0]["cwnd_bytes"]
    with pytest.raises(ResultFormatError, match="series flow has no 'cwnd_bytes'"):
        make(broken)


def test_to_json_dict() -> None:
    out = make().to_json_dict()
    tcp, cbr = out["flows"]
    assert tcp["kind"] == "tcp" and tcp["completion_s"] == pytest.approx(13.333333333)
    assert (tcp["server_done_s"], tcp["closed_s"]) == (9.0, 13.343)
    assert (tcp["legs"][0]["sender_done_s"], tcp["legs"][0]["closed_s"]) == (9.0, 13.628)
    assert (tcp["legs"][2]["sender_done_s"], tcp["legs"][2]["closed_s"]) == (None, None)
    assert [leg["from"] for leg in tcp["legs"]] == ["server", "pep1", "pep2"]
    assert tcp["legs"][1]["rtt_mean_ms"] == 530.0 and tcp["legs"][2]["rtt_mean_ms"] is None
    assert tcp["pep_buffer"][0] == {
        "node": "pep1",
        "mean_bytes": 524_288.0,
        "max_bytes": 2_097_152,
        "limit_bytes": 4_194_304,
    }
    # base RTT over every segment: 2 x (10 + 260 + 5) + 0.4 = 550.4 ms
    assert tcp["base_rtt_ms"] == pytest.approx(550.4)
    assert cbr == {
        "id": 1,
        "kind": "cbr",
        "app": "cbr",
        "start_s": 0.0,
        "rate_bps": 250_000,
        "packet_bytes": 1200,
        "goodput_bps": 240_000.0,
        "packets_sent": 1250,
        "packets_received": 1200,
        "loss_ratio": 0.04,
        "owd_samples": 1200,
        "owd_mean_ms": 290.5,
        "owd_min_ms": 275.2,
        "owd_p50_ms": 285.0,
        "owd_p95_ms": 330.0,
        "owd_max_ms": 400.0,
        "tlp_probes": 0,
        "dup_bytes_received": 0,
        "acks_sent": 0,
    }
    # bytes of the TCP flows over the run's 60 s: 5,000,000 x 8 / 60 = 666,666.67 bit/s (the
    # flow's own 3 Mbit/s is over its 13.3 s download)
    assert out["aggregate_goodput_bps"] == pytest.approx(666_666.667)
    assert out["cbr_goodput_bps"] == pytest.approx(240_000.0)  # 1,800,000 x 8 / 60
    assert out["bottleneck"]["name"] == "satellite.forward"
    assert out["bottleneck"]["outage_drops"] == 7 and out["bottleneck"]["aqm_drops"] == 0
    links = {link["name"]: link for link in out["links"]}
    assert links["satellite.reverse"]["outage_drops"] == 3
    assert links["internet.forward"]["outage_drops"] == 0
    json.dumps(out, allow_nan=False)


# --- the CLI: --json and the rich summary -----------------------------------------------------


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(_core, "run_json", lambda _text, **_watch: json.dumps(RESULT))
    # `tcplab run` keeps no series: it asks the core for a run without them
    monkeypatch.setattr(_core, "run_json_series", lambda _text, _path, **_watch: json.dumps(RESULT))
    path = tmp_path / "pep-cbr.toml"
    path.write_text(SCENARIO_TOML)
    return path


def test_cli_json(fake_core: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(fake_core), "--json", "--set", "flows.0.pep.cca=cubic"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["flows"][1]["loss_ratio"] == 0.04
    assert out["scenario"]["flows"][0]["pep"]["cca"] == "cubic"


def test_cli_summary_shows_cbr_legs_buffers_and_links(
    fake_core: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", str(fake_core)]) == 0
    text = capsys.readouterr().out
    assert "CBR flows (UDP)" in text
    cbr_row = next(line for line in text.splitlines() if "1250" in line)
    # rate 0.250, goodput 0.240 Mbit/s, loss 4.00 %, OWD mean 290.5, p95 330.0, max 400.0 ms
    for cell in ("0.250", "0.240", "1200", "4.00", "290.5", "330.0", "400.0"):
        assert cell in cbr_row, cbr_row
    assert "PEP legs (pep = distributed)" in text
    leg_row = next(line for line in text.splitlines() if "pep1→pep2" in line)
    for cell in ("hybla", "3.100", "530.0", "610.0"):
        assert cell in leg_row, leg_row
    assert "flow 0 PEP buffer at pep1: mean 512 KiB, max 2048 KiB of 4096 KiB" in text
    sat = next(line for line in text.splitlines() if line.startswith("satellite.forward"))
    assert "outage drops 7" in sat and "AQM drops" not in sat  # 0 AQM drops: not shown
    assert any(line.startswith("access.reverse 100 Mbit/s") for line in text.splitlines())
    assert "Jain" not in text  # one TCP flow


# --- the results database ---------------------------------------------------------------------

#: Version 1 of the schema exactly as tcplab 1 wrote it (a frozen copy: the store must keep
#: opening such files whatever its own code becomes).


def _v1_file(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute(V1_SCHEMA)
    con.close()
    return path


def test_new_database_stores_cbr_and_pep_data(tmp_path: Path) -> None:
    run = make()
    store = Store(tmp_path / "r.duckdb")
    store_run(store, "s", run, {"path.pep": "distributed"})
    runs = store.runs("s")
    flows = store.flows("s")
    legs = store.legs("s")
    links = store.query("SELECT name, outage_drops FROM links ORDER BY name")
    buffers = store.query("SELECT node, max_bytes FROM pep_buffers ORDER BY node")
    row = runs.iloc[0]
    assert row["path.pep"] == "distributed"
    assert (row["n_flows"], row["n_cbr_flows"]) == (1, 1)  # flow metrics are the TCP flows'
    # 5,000,000 B x 8 over the 60 s run; the flow's own rate (3 Mbit/s over 13.3 s) is kept
    assert row["goodput_bps"] == pytest.approx(666_666.667) and row["jain_fairness"] == 1.0
    assert row["mean_flow_goodput_bps"] == 3_000_000.0
    assert flows["flow_goodput_bps"].iloc[0] == 3_000_000.0
    assert row["cbr_goodput_bps"] == pytest.approx(240_000.0)
    assert row["cbr_loss_ratio"] == pytest.approx(0.04)  # the core's ratio, weighted by sent
    assert (row["cbr_owd_mean_ms"], row["cbr_owd_p95_ms"]) == (290.5, 330.0)
    assert (row["pep"], row["bottleneck"]) == ("distributed", "satellite.forward")
    assert row["rate_bps"] == 10_000_000 and row["return_rate_bps"] == 2_000_000
    assert row["base_rtt_ms"] == pytest.approx(550.4)
    assert row["per"] == 1e-4
    assert (row["outage_drops"], row["aqm_drops"]) == (10, 0)  # 7 + 3 outage drops, 0 AQM
    assert list(flows["kind"]) == ["tcp", "cbr"]
    assert flows["loss_ratio"].iloc[1] == 0.04 and flows["owd_p95_ms"].iloc[1] == 330.0
    assert list(legs["from_node"]) == ["server", "pep1", "pep2"]
    assert list(legs["closed_s"].iloc[:1]) == [13.628] and legs["closed_s"].isna().iloc[1:].all()
    assert (flows["server_done_s"].iloc[0], flows["closed_s"].iloc[0]) == (9.0, 13.343)
    assert legs["rtt_mean_ms"].iloc[1] == 530.0
    assert ("satellite.forward", 7) in links and ("internet.forward", 0) in links
    assert buffers == [("pep1", 2_097_152), ("pep2", 65_536)]


def test_version_1_database_is_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "old.duckdb")
    store = Store(path, create=False)
    assert store.query("SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    old = store.runs("old").set_index("scenario_hash")
    assert len(old) == 2
    # runs of before model versions: model version unknown, never "already stored" for today
    assert old["model_version"].isna().all()
    assert set(old["run_id"]) == {"aaaa-1-unknown", "bbbb-1-unknown"}
    # run goodput under today's definition, from the stored flow bytes over the duration:
    # (7,500,000 + 2,500,000) x 8 / 30 s = 2,666,666.7 bit/s (the old file summed the flows'
    # own rates: 3 Mbit/s); 2,666,666.7 / 4 Mbit/s = 0.6667 of the link
    assert old.loc["aaaa", "goodput_bps"] == pytest.approx(2_666_666.667)
    assert old.loc["aaaa", "goodput_utilization"] == pytest.approx(2 / 3)
    # the second flow started at 10 s: the old throughput summed rates over different spans
    assert old["throughput_bps"].isna().loc["aaaa"]
    # a run whose flow bytes the old file lacks: unknown, not a number of another definition
    assert old["goodput_bps"].isna().loc["bbbb"]
    assert old.loc["bbbb", "throughput_bps"] == 2_600_000.0  # one flow for the whole run
    # what version 1 implies: TCP flows only, no PEP, the dumbbell's bottleneck
    assert (old.loc["aaaa", "n_cbr_flows"], old.loc["aaaa", "pep"]) == (0, "none")
    assert old.loc["aaaa", "bottleneck"] == "bottleneck.forward"
    flows = store.flows("old")
    assert list(flows["kind"]) == ["tcp", "tcp", "tcp"]
    assert list(flows["flow_goodput_bps"]) == [2_000_000.0, 1_000_000.0, 2_500_000.0]
    assert flows["closed_s"].isna().all()  # version 3: unknown for old runs
    # the old study is revision 1, of an unknown definition and model version
    info = store.revision_info("old")
    assert (info["revision"], info["definition"], info["model_version"]) == (1, None, None)
    assert info["file_text"] == 'name = "old"'
    run = make()
    store_run(store, "new", run)
    again = Store(path, create=False)  # opens again without another migration
    assert len(again.runs()) == 3
    assert len(again.legs("new")) == 3


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "future.duckdb")
    con = duckdb.connect(str(path))
    future = SCHEMA_VERSION + 1
    con.execute(f"UPDATE meta SET value = '{future}' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError) as err:
        Store(path, create=False)
    assert str(err.value) == (
        f"{path}: results schema version {future}; this tcplab reads versions 1 to {SCHEMA_VERSION}"
    )


def test_cbr_loss_of_a_run_weights_each_flow_by_datagrams_sent(tmp_path: Path) -> None:
    result = copy.deepcopy(RESULT)
    second = copy.deepcopy(CBR_FLOW)
    second.update(id=2, packets_sent=3000, packets_received=2900, loss_ratio=0.02)
    result["flows"][1].update(packets_sent=1000, packets_received=880, loss_ratio=0.1)
    result["flows"].append(second)
    result["series"]["flows"].append({**RESULT["series"]["flows"][1], "id": 2})
    scen = scenario()
    scen["flows"].append(copy.deepcopy(scen["flows"][1]))
    run = RunResult.from_json(json.dumps(result), wall_s=0.1, scenario=scen)
    store = Store(tmp_path / "w.duckdb")
    store_run(store, "w", run)
    row = store.runs("w").iloc[0]
    # (0.1 x 1000 + 0.02 x 3000) / 4000 = 160 / 4000 = 0.04 (not the mean 0.06 of the ratios)
    assert row["cbr_loss_ratio"] == pytest.approx(0.04)
    # two flows of 1,800,000 B over the 60 s run: 2 x 240 kbit/s
    assert row["n_cbr_flows"] == 2 and row["cbr_goodput_bps"] == pytest.approx(480_000.0)
