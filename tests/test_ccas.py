"""`tcplab ccas` and `tcplab ccas NAME`: every algorithm the core lists, with feedback type,
design, reference and parameters shown the way a scenario file writes them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import tcplab
from conftest import run_cli
from tcplab import ScenarioError, _core, cli, load_scenario
from tcplab.catalogue import CcaParamInfo
from tcplab.scenario.normalize import normalize


def param(name: str, default: float, unit: str = "", help: str = "") -> CcaParamInfo:
    return CcaParamInfo(name=name, default=default, unit=unit, help=help)


@pytest.mark.parametrize(
    ("info", "key", "text"),
    [
        (param("rtt0_ns", 25_000_000.0, "ns"), "rtt0", "25ms"),
        (param("min_rtt_win_ns", 10_000_000_000.0, "ns"), "min_rtt_win", "10000ms"),
        (param("tick_ns", 100_000.0, "ns"), "tick", "0.1ms"),
        (param("max_rate_bps", 10_000_000.0, "bps"), "max_rate", "10Mbps"),
        (param("beta", 717.0, "/1024"), "beta", "717/1024"),
        (param("hystart", 1.0, "bool"), "hystart", "true"),
        (param("ecn_fallback", 0.0, "bool"), "ecn_fallback", "false"),
        (param("low_window", 16.0, "pkts"), "low_window", "16 pkts"),
        (param("gain", 2.885, ""), "gain", "2.885"),
        (param("alpha", 1.0, ""), "alpha", "1"),
    ],
)
def test_param_as_written_in_a_scenario(info: CcaParamInfo, key: str, text: str) -> None:
    assert (info.toml_key, info.default_text) == (key, text)


def _fake_entry(index: int) -> dict[str, Any]:
    return {
        "name": f"algo{index:02d}",
        "summary": f"design of algorithm {index}: a one-line description that is long enough "
        "to need wrapping in a narrow column of the table",
        "feedback": ["loss", "delay", "hybrid", "rate"][index % 4],
        "reference": f"RFC {9000 + index}",
        "params": [
            {"name": "rtt0_ns", "default": 25_000_000.0, "unit": "ns", "help": "target RTT"},
            {"name": "beta", "default": 717.0, "unit": "/1024", "help": "decrease factor"},
            {"name": "on", "default": 1.0, "unit": "bool", "help": f"switch {index}"},
        ],
    }


FAKE = [_fake_entry(i) for i in range(25)]


@pytest.fixture
def fake_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_core, "ccas_json", lambda: json.dumps(FAKE))


@pytest.mark.usefixtures("fake_catalogue")
def test_table_lists_every_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ccas"]) == 0
    out = capsys.readouterr().out
    assert "congestion-control algorithms (25)" in out
    for entry in FAKE:
        assert f"│ {entry['name']} " in out
        assert entry["reference"] in out
    for feedback in ("loss", "delay", "hybrid", "rate"):
        assert f"│ {feedback} " in out
    # durations in ms under the key a scenario uses; one parameter per line
    assert out.count("rtt0=25ms") == 25
    assert out.count("beta=717/1024") == 25
    assert out.count("on=true") == 25
    assert max(len(line) for line in out.splitlines()) <= 160  # wrapped to the console


@pytest.mark.usefixtures("fake_catalogue")
def test_json_is_the_core_catalogue_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ccas", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == FAKE


@pytest.mark.usefixtures("fake_catalogue")
def test_one_algorithm_in_detail(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ccas", "algo07"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("algo07 (rate-based)\n")  # 7 % 4 = 3 → "rate"
    assert "reference: RFC 9007" in out
    assert 'rtt0 = 25ms  (a duration, e.g. "25ms")\n      target RTT\n' in out
    assert "beta = 717/1024\n      decrease factor\n" in out
    assert "on = true  (true or false)\n      switch 7\n" in out
    assert cli.main(["ccas", "algo07", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == FAKE[7]


@pytest.mark.usefixtures("fake_catalogue")
def test_unknown_algorithm_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ccas", "algo99"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith('error: ccas NAME = "algo99": unknown algorithm; allowed: ')
    assert captured.err.count("\n") == 1


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_real_catalogue_every_algorithm_and_help() -> None:
    catalogue = tcplab.ccas()
    if not catalogue:
        pytest.skip("the core lists no algorithms (stub core)")
    table = run_cli("ccas")
    assert table.returncode == 0, table.stderr
    for info in catalogue:
        assert f"│ {info.name} " in table.stdout
        detail = run_cli("ccas", info.name)
        assert detail.returncode == 0, detail.stderr
        flat = _flat(detail.stdout)
        assert flat.startswith(f"{info.name} ({info.feedback}-based)")
        assert _flat(info.summary) in flat and _flat(info.reference) in flat
        for p in info.params:
            assert f"{p.toml_key} = {p.default_text}" in flat
            assert _flat(p.help) in flat


def test_real_unknown_algorithm_through_the_cli() -> None:
    proc = run_cli("ccas", "no-such-cca")
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith('error: ccas NAME = "no-such-cca": unknown algorithm')


def test_ns2_stack_reno_and_vegas_take_the_agents_parameters() -> None:
    # on tcp.stack = "ns2", reno and vegas run ns-2's agents, which have an RTO clock
    # (tcpTick_); Linux's reno module has no parameter at all
    def flows(cca: str, stack: str) -> dict[str, Any]:
        return {
            "duration": "1s",
            "bottleneck": {"rate": "10Mbps", "delay": "3ms"},
            "flows": [{"cca": cca, "cca_params": {"tick": "500ms"}, "tcp": {"stack": stack}}],
        }

    for cca in ("reno", "vegas"):
        out = normalize(load_scenario(flows(cca, "ns2")))
        assert out["flows"][0]["cca_params"] == {"tick_ns": 500_000_000}
    with pytest.raises(ScenarioError) as err:
        load_scenario(flows("reno", "linux"))
    assert str(err.value).startswith(
        'flows[0].cca_params.tick = "500ms": unknown parameter of reno; allowed: none'
    )
