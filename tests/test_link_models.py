"""Link models of issue 5: AQM (RED, CoDel), Gilbert-Elliott loss, outages and trace files
(CSV rate schedules, Mahimahi delivery traces) → the `DirConfig` of docs/interface.md, with
their one-line errors. Expected values are written out by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SCENARIOS, assert_user_error, run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.errors import Problem
from tcplab.results.theory import flow_bounds
from tcplab.scenario.normalize import normalize
from tcplab.scenario.traces import parse_delivery_trace_text, parse_rate_trace_text


def link(base_dir: Path | None = None, **bottleneck: Any) -> dict[str, Any]:
    """The normalized bottleneck of a 10 Mbit/s, 20 ms dumbbell with `bottleneck` keys."""
    raw = {
        "duration": "60s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms", "queue": "1000pkts", **bottleneck},
        "flows": [{"cca": "reno"}],
    }
    out: dict[str, Any] = normalize(load_scenario(raw, catalogue=(), base_dir=base_dir))
    normalized: dict[str, Any] = out["bottleneck"]
    return normalized


def error_of(**bottleneck: Any) -> str:
    with pytest.raises(ScenarioError) as err:
        link(**bottleneck)
    message = str(err.value)
    assert "\n" not in message
    return message


# --- AQM ------------------------------------------------------------------------------------


def test_red_defaults_are_written_out() -> None:
    out = link(aqm="red")
    assert out["forward"]["queue"] == {
        "kind": "red",
        "limit_pkts": 1000,
        "red": {
            "min_th_pkts": 5,
            "max_th_pkts": 15,
            "max_p": 0.1,
            "w_q": 0.002,
            "gentle": True,
            "ecn": True,
        },
    }
    # the ACK direction stays DropTail unless return_aqm says otherwise
    assert out["reverse"]["queue"] == {"kind": "droptail", "limit_pkts": 1000}


def test_red_table_alone_selects_red_and_return_aqm_is_separate() -> None:
    out = link(red={"min_th": 20, "max_th": "60pkts", "gentle": False}, return_aqm="codel")
    assert out["forward"]["queue"]["kind"] == "red"
    red = out["forward"]["queue"]["red"]
    assert (red["min_th_pkts"], red["max_th_pkts"], red["gentle"]) == (20, 60, False)
    assert out["reverse"]["queue"] == {
        "kind": "codel",
        "limit_pkts": 1000,
        "codel": {"target_ns": 5_000_000, "interval_ns": 100_000_000, "ecn": True},
    }


def test_explicit_aqm_ignores_the_other_table() -> None:
    # a sweep over aqm keeps its RED parameters in the base: with droptail they do nothing
    out = link(aqm="droptail", red={"max_p": 0.5})
    assert out["forward"]["queue"] == {"kind": "droptail", "limit_pkts": 1000}


def test_codel_parameters_and_bdp_limit() -> None:
    out = link(aqm="codel", queue="2bdp", codel={"target": "2ms", "interval": "50ms", "ecn": False})
    # 2 x 10e6 x (2 x 20 ms + 0.4 ms) / 12000 = 2 x 33.67 = 67.33 -> 68 packets
    assert out["forward"]["queue"] == {
        "kind": "codel",
        "limit_pkts": 68,
        "codel": {"target_ns": 2_000_000, "interval_ns": 50_000_000, "ecn": False},
    }


def test_scenario_files_for_aqm() -> None:
    codel = normalize(load_scenario(SCENARIOS / "codel.toml"))["bottleneck"]["forward"]["queue"]
    assert codel["kind"] == "codel" and codel["limit_pkts"] == 1000
    red = normalize(load_scenario(SCENARIOS / "red-ecn.toml"))
    queue = red["bottleneck"]["forward"]["queue"]
    assert (queue["red"]["min_th_pkts"], queue["red"]["max_th_pkts"]) == (20, 60)
    assert all(flow["tcp"]["ecn"] for flow in red["flows"])


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (
            {"aqm": "pie"},
            'bottleneck.aqm = "pie": not an allowed value; allowed: droptail, red or codel',
        ),
        (
            {"red": {"min_th": 5, "max_th": 5}},
            'bottleneck.red.max_th = "5pkts": must be above min_th (5 packets)',
        ),
        (
            {"queue": "50pkts", "red": {"max_th": 50}},
            'bottleneck.red.max_th = "50pkts": never reached: the queue holds at most 50 packets',
        ),
        (
            {"red": {"max_p": 0}},
            "bottleneck.red.max_p = 0: must be in (0, 1]",
        ),
        (
            {"red": {}, "codel": {}},
            "bottleneck.codel: both [bottleneck.red] and [bottleneck.codel] are given; "
            'allowed: aqm = "red" or "codel" to choose one',
        ),
        (
            {"return_red": {}, "return_codel": {}},
            "bottleneck.return_codel: both [bottleneck.return_red] and "
            "[bottleneck.return_codel] are given",
        ),
        (
            {"codel": {"target": "100ms"}},
            'bottleneck.codel.target = "100ms": must be shorter than interval (100ms)',
        ),
        (
            {"codel": {"interval": "0s"}},
            'bottleneck.codel.interval = "0s": must be greater than 0',
        ),
        (
            {"aqm": "red", "ecn_threshold": 20},
            'bottleneck.ecn_threshold = "20pkts": step marking is for DropTail queues, '
            'not aqm = "red"',
        ),
        (
            {"red": {"min_th": "5KB"}},
            'bottleneck.red.min_th = "5KB": not a packet count',
        ),
    ],
)
def test_aqm_mistakes(keys: dict[str, Any], expected: str) -> None:
    assert error_of(**keys).startswith(expected)


# --- Gilbert-Elliott loss ---------------------------------------------------------------------


def test_gilbert_elliott_model() -> None:
    model = {"model": "gilbert-elliott", "p_gb": 0.01, "p_bg": 0.1, "loss_good": 0, "loss_bad": 0.5}
    out = link(loss=model)
    assert out["forward"]["loss"] == {
        "kind": "gilbert_elliott",
        "p_gb": 0.01,
        "p_bg": 0.1,
        "loss_good": 0.0,
        "loss_bad": 0.5,
    }
    assert "loss" not in out["reverse"]  # return_loss is separate and off by default
    out = link(return_loss={"model": "gilbert-elliott", "p_gb": 0.2, "p_bg": 0.8})
    assert out["reverse"]["loss"]["loss_bad"] == 1.0  # the classic Gilbert model by default
    assert "loss" not in out["forward"]


def test_gilbert_elliott_mean_loss_and_no_mathis() -> None:
    scenario = normalize(load_scenario(SCENARIOS / "gilbert.toml"))
    bounds = flow_bounds(scenario, 0)
    # bad share 0.01 / (0.01 + 0.1) = 1/11; 1/11 x 0.5 = 0.0454545...
    assert bounds.p == pytest.approx(0.5 / 11)
    # the models assume independent losses: left out for bursty loss
    assert bounds.mathis_bps is None and bounds.padhye_bps is None


@pytest.mark.parametrize(
    ("loss", "expected"),
    [
        (
            {"model": "bernoulli", "p_gb": 0.1, "p_bg": 0.1},
            'bottleneck.loss.model = "bernoulli": not an allowed value; allowed: gilbert-elliott',
        ),
        (
            {"model": "gilbert-elliott", "p_gb": 0.1},
            "bottleneck.loss.p_bg: missing required key; allowed: the probability of going from "
            "bad to good, (0, 1]",
        ),
        (
            {"model": "gilbert-elliott", "p_gb": 0.1, "p_bg": 0},
            "bottleneck.loss.p_bg = 0: must be in (0, 1]",
        ),
        (
            {"model": "gilbert-elliott", "p_gb": 0.1, "p_bg": 0.5, "loss_bad": 1.5},
            "bottleneck.loss.loss_bad = 1.5: must be in [0, 1]",
        ),
        (
            {"p_gb": 0.1, "p_bg": 0.5},
            "bottleneck.loss.model: missing required key",
        ),
    ],
)
def test_loss_model_mistakes(loss: dict[str, Any], expected: str) -> None:
    assert error_of(loss=loss).startswith(expected)


def test_loss_model_replaces_per() -> None:
    model = {"model": "gilbert-elliott", "p_gb": 0.01, "p_bg": 0.1}
    assert error_of(loss=model, per=1e-3).startswith(
        "bottleneck.per = 0.001: loss replaces per and ber; allowed: per = 0 with a loss model"
    )
    assert error_of(return_loss=model, return_ber=1e-7).startswith(
        "bottleneck.return_ber = 1e-07: return_loss replaces per and ber"
    )
    link(loss=model, return_per=1e-3)  # the other direction keeps its own per


# --- outages ----------------------------------------------------------------------------------


def test_outages_apply_to_both_directions_by_default() -> None:
    out = link(outages=[["30s", "32s"], ["100s", "100.5s"]])
    expected = [[30 * 10**9, 32 * 10**9], [100 * 10**9, 100_500_000_000]]
    assert out["forward"]["outages"] == expected
    assert out["reverse"]["outages"] == expected


def test_return_outages_override() -> None:
    out = link(outages=[["1s", "2s"]], return_outages=[])
    assert out["forward"]["outages"] == [[10**9, 2 * 10**9]]
    assert "outages" not in out["reverse"]
    out = link(return_outages=[["5s", "6s"]])
    assert "outages" not in out["forward"]
    assert out["reverse"]["outages"] == [[5 * 10**9, 6 * 10**9]]


def test_outage_scenario_file() -> None:
    out = normalize(load_scenario(SCENARIOS / "outage.toml"))["bottleneck"]
    # 2 s at 30 s: [30 s, 32 s) in ns
    assert out["forward"]["outages"] == [[30_000_000_000, 32_000_000_000]]
    assert out["reverse"]["outages"] == [[30_000_000_000, 32_000_000_000]]


@pytest.mark.parametrize(
    ("outages", "expected"),
    [
        ([["12s", "10s"]], "bottleneck.outages[0] = "),
        ([["12s", "10s"]], "the outage ends before it starts; allowed: start < end"),
        ([["10s"]], 'bottleneck.outages[0] = ["10s"]: an outage is a [start, end] pair'),
        (["10s"], "an outage is a [start, end] pair"),
        ([[10, 12]], "bottleneck.outages[0] = [10, 12]: a duration needs a unit"),
        (
            [["10s", "20s"], ["15s", "30s"]],
            "outage 1 starts before outage 0 ends; allowed: intervals in time order",
        ),
        ([["10s", "20s"], ["1s", "2s"]], "outage 1 starts before outage 0 ends"),
    ],
)
def test_outage_mistakes(outages: list[Any], expected: str) -> None:
    assert expected in error_of(outages=outages)


# --- rate traces (CSV) ------------------------------------------------------------------------


def test_rate_trace_file_of_the_example() -> None:
    out = normalize(load_scenario(SCENARIOS / "trace-driven.toml"))
    leo = out["path"]["segments"][1]
    # traces/leo-pass.csv, line by line: units and plain numbers (s, bit/s, ms), empty delay
    assert leo["forward"]["rate_trace"] == [
        [0, 50_000_000, 25_000_000],
        [15_000_000_000, 20_000_000, 35_000_000],
        [30_000_000_000, 80_000_000, None],
        [45_000_000_000, 10_000_000, 40_000_000],
    ]
    assert "rate_trace" not in leo["reverse"]
    # base RTT 2 x (5 + 25 + 20 ms) + 0.4 = 100.4 ms; 2bdp at 50 Mbit/s:
    # ceil(2 x 50e6 x 0.1004 / 12000) = ceil(836.67) = 837
    assert leo["forward"]["queue"]["limit_pkts"] == 837


def test_rate_trace_starting_late_gets_the_links_own_values(tmp_path: Path) -> None:
    (tmp_path / "late.csv").write_text("time_s,rate_bps\n2.5,1e6\n")
    out = link(tmp_path, rate_trace="late.csv")
    # before 2.5 s: the link's 10 Mbit/s and its delay (null = keep the 20 ms)
    assert out["forward"]["rate_trace"] == [[0, 10_000_000, None], [2_500_000_000, 1_000_000, None]]


@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("0,1Mbps\n", [(0, 1_000_000, None)]),
        ("# c\n\n0 , 1 Mbps , 10\n", [(0, 1_000_000, 10_000_000)]),
        ("0,1000,0.5\n1.5,2000,\n", [(0, 1000, 500_000), (1_500_000_000, 2000, None)]),
        ("500ms,1kbps,1s  # inline comment\n", [(500_000_000, 1000, 1_000_000_000)]),
        ("time,rate,delay\n0,1e3,1e1\n", [(0, 1000, 10_000_000)]),
    ],
)
def test_rate_trace_parsing(text: str, points: list[tuple[int, int, int | None]]) -> None:
    assert list(parse_rate_trace_text(text.splitlines()).points) == points


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the trace has no entries"),
        ("# only a comment\n", "the trace has no entries"),
        ("0,1Mbps\n0,2Mbps\n", "line 2: time 0s is not after the previous line's (0s)"),
        ("1,1Mbps\n0.5,2Mbps\n", "line 2: time 0.5s is not after the previous line's (1s)"),
        ("0,0\n", "line 1: the rate must be greater than 0"),
        ("0,1Mbps,1,2\n", "line 1: expected 2 or 3 comma-separated fields"),
        ("0\n", "line 1: expected 2 or 3 comma-separated fields"),
        ("0,1MBps\n", "line 1: 'Bps' means bytes per second"),
        ("0,1Mbps\nx,1Mbps\n", "line 2: not a number followed by a unit"),
        ("0,1Mbps,-5\n", "line 1: must not be negative"),
    ],
)
def test_rate_trace_mistakes(text: str, problem: str) -> None:
    with pytest.raises(Problem) as err:
        parse_rate_trace_text(text.splitlines())
    assert str(err.value).startswith(problem), str(err.value)


# --- delivery traces (Mahimahi) -------------------------------------------------------------


def test_mahimahi_period_and_mean_rate() -> None:
    trace = parse_delivery_trace_text(["1", "1", "3", "", "10"])
    # the period is the last timestamp (10 ms); repeated lines are several opportunities
    assert trace.opportunities_ns == (1_000_000, 1_000_000, 3_000_000, 10_000_000)
    assert trace.period_ns == 10_000_000
    # 4 x 1500 B x 8 per 10 ms = 4.8 Mbit/s
    assert trace.mean_rate_bps == pytest.approx(4_800_000)


def test_mahimahi_example_file() -> None:
    out = normalize(load_scenario(SCENARIOS / "trace-driven.toml"))
    cell = out["path"]["segments"][2]["forward"]["delivery_trace"]
    # 1000 lines (1..1000 ms), 250 (every 2nd ms 1002..1500), 2 x 500 (1501..2000)
    assert len(cell["opportunities_ns"]) == 2250
    assert cell["opportunities_ns"][:2] == [1_000_000, 2_000_000]
    assert cell["period_ns"] == 2_000_000_000
    assert cell["bytes_per_opportunity"] == 1500
    # mean 2250 x 12000 bit / 2 s = 13.5 Mbit/s, the segment's written rate
    assert out["path"]["segments"][2]["forward"]["rate_bps"] == 13_500_000


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ([], "the trace has no entries"),
        (["0", "0"], "the last timestamp (the period) must be greater than 0 ms"),
        (["5", "4"], "line 2: 4 ms is before the previous line's 5 ms"),
        (["1", "2.5"], "line 2: '2.5' is not an integer"),
        (["1", "# x"], "line 2: '# x' is not an integer"),
    ],
)
def test_mahimahi_mistakes(lines: list[str], problem: str) -> None:
    with pytest.raises(Problem) as err:
        parse_delivery_trace_text(lines)
    assert str(err.value).startswith(problem), str(err.value)


# --- trace errors through the CLI -------------------------------------------------------------

TRACE_TOML = """\
duration = "10s"
[bottleneck]
rate = "10Mbps"
delay = "20ms"
{keys}
[[flows]]
"""


@pytest.mark.parametrize(
    ("files", "keys", "expected"),
    [
        (
            {},
            'rate_trace = "missing.csv"',
            'error: bottleneck.rate_trace = "missing.csv": no such file',
        ),
        (
            {"bad.csv": "0,10Mbps\n1,5Mbps\n1,2Mbps\n"},
            'rate_trace = "bad.csv"',
            'error: bottleneck.rate_trace = "bad.csv": line 3: time 1s is not after the '
            "previous line's (1s); allowed: strictly increasing times",
        ),
        (
            {"bad.down": "1\n2\nthree\n"},
            'delivery_trace = "bad.down"',
            "error: bottleneck.delivery_trace = \"bad.down\": line 3: 'three' is not an integer",
        ),
        (
            {"ok.csv": "0,1Mbps\n", "ok.down": "1\n"},
            'rate_trace = "ok.csv"\ndelivery_trace = "ok.down"',
            'error: bottleneck.delivery_trace = "',
        ),
        (
            {},
            "rate_trace = 5",
            "error: bottleneck.rate_trace = 5: expected a file name; "
            'allowed: e.g. "traces/sat.csv"',
        ),
    ],
)
def test_trace_mistakes_through_the_cli(
    files: dict[str, str], keys: str, expected: str, tmp_path: Path
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "s.toml"
    path.write_text(TRACE_TOML.format(keys=keys))
    line = assert_user_error(run_cli("run", str(path)))
    assert line.startswith(expected), line
    if "ok.down" in files:
        assert "cannot be combined with rate_trace" in line


def test_relative_trace_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.csv").write_text("0,5Mbps\n")
    path = tmp_path / "sub" / "s.toml"
    path.write_text(TRACE_TOML.format(keys='rate_trace = "r.csv"'))
    # run from another directory: the file's directory counts, not the working directory
    proc = run_cli("check", str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    forward = json.loads(proc.stdout)["bottleneck"]["forward"]
    assert forward["rate_trace"] == [[0, 5_000_000, None]]
    # a --set value is relative to the working directory
    (tmp_path / "w.csv").write_text("0,7Mbps\n")
    proc = run_cli("check", str(path), "--set", "bottleneck.rate_trace=w.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bottleneck"]["forward"]["rate_trace"][0][1] == 7_000_000


# --- runs on the core ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "features"),
    [
        ("codel.toml", ["codel"]),
        ("red-ecn.toml", ["red"]),
        ("gilbert.toml", ["gilbert_elliott"]),
        ("outage.toml", ["outages"]),
        ("trace-driven.toml", ["path", "rate_trace", "delivery_trace"]),
    ],
)
def test_link_model_scenarios_run_for_5s(
    name: str, features: list[str], write_toml: Callable[[str], Path]
) -> None:
    proc = run_cli("run", str(SCENARIOS / name), "--duration", "5s", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["duration_s"] == 5.0
    assert all(flow["goodput_bps"] > 0 for flow in out["flows"])


def test_outage_drops_packets() -> None:
    proc = run_cli("run", str(SCENARIOS / "outage.toml"), "--duration", "40s", "--json")
    assert proc.returncode == 0, proc.stderr
    link_out = json.loads(proc.stdout)["links"][0]
    # a bulk CUBIC flow has packets to send during [30 s, 32 s): some must be lost there
    assert link_out["name"] == "bottleneck.forward"
    assert link_out["outage_drops"] > 0


# --- token-bucket policer ---------------------------------------------------------------------


def test_policer_is_written_only_when_given_and_return_is_separate() -> None:
    out = link(policer={"rate": "1Mbps", "burst": "30KB"})
    # "30KB" = 30 000 bytes (decimal prefixes, as for queues and windows)
    assert out["forward"]["policer"] == {"rate_bps": 1_000_000, "burst_bytes": 30_000}
    assert "policer" not in out["reverse"]
    assert "policer" not in link()["forward"]  # off by default: the JSON (and hash) unchanged
    out = link(return_policer={"rate": "64kbps", "burst": "1500B"})
    assert out["reverse"]["policer"] == {"rate_bps": 64_000, "burst_bytes": 1500}


@pytest.mark.parametrize(
    ("policer", "expected"),
    [
        (
            {"rate": "1Mbps", "burst": "1KB"},
            'bottleneck.policer.burst = "1KB": is out of range; allowed: 1500 bytes (one full '
            "packet) ..= 1073741824 bytes",
        ),
        ({"burst": "30KB"}, "bottleneck.policer.rate: missing required key"),
        ({"rate": "0bps", "burst": "30KB"}, 'bottleneck.policer.rate = "0bps": must be greater'),
    ],
)
def test_policer_mistakes(policer: dict[str, Any], expected: str) -> None:
    assert error_of(policer=policer).startswith(expected)


def test_policed_cubic_loses_packets_to_the_policer_and_not_to_the_queue() -> None:
    import tcplab

    raw = {
        "duration": "30s",
        "bottleneck": {
            "rate": "100Mbps",
            "delay": "14.5ms",
            "queue": "100pkts",
            "policer": {"rate": "1Mbps", "burst": "30KB"},
        },
        "flows": [{"cca": "cubic"}],
    }
    result = tcplab.run(load_scenario(raw))
    forward = result.links[0]
    # the policer, not the 100 Mbit/s line, limits the flow: every loss is a policer drop, and
    # each is retransmitted (the last one may still be waiting when the run ends)
    assert forward.queue_drops == 0 and forward.error_drops == 0
    policed = forward.aqm_drops
    assert policed is not None and policed > 100
    assert 0 <= policed - result.flows[0].retransmits <= 1
    # conforming bytes over 30 s are at most burst + rate x T = 30 kB + 3.75 MB
    assert forward.bytes_tx <= 30_000 + 1_000_000 * 30 // 8
    assert result.flows[0].goodput_bps < 1_000_000
