"""Wi-Fi links in scenario files: the `wifi` table, its units, the core's range checks and
the real-stack refusal."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.realstack.emulate import emulate_normalized
from tcplab.scenario.normalize import normalize


def wifi(**table: Any) -> dict[str, Any]:
    return {
        "name": "w",
        "duration": "2s",
        "bottleneck": {
            "rate": "54Mbps",
            "delay": "10us",
            "queue": "100pkts",
            "wifi": {"standard": "g", "band": "2.4GHz", **table},
        },
        "access": {"rate": "1Gbps", "delay": "1ms"},
        "flows": [{"cca": "cubic"}, {"cca": "cubic"}],
    }


def norm(raw: dict[str, Any]) -> dict[str, Any]:
    return normalize(load_scenario(raw, [], catalogue=()))


def test_powers_in_mw_become_dbm_and_the_band_its_core_name() -> None:
    n = norm(wifi(tx_power="20mW", ap_tx_power="0.1W", stations=[{"tx_power": "5dBm"}]))
    w = n["bottleneck"]["wifi"]
    # 10·log10(20) = 13.0103 dBm; 0.1 W = 100 mW = 20 dBm
    assert math.isclose(w["tx_power_dbm"], 13.0103, abs_tol=1e-4)
    assert w["ap_tx_power_dbm"] == 20.0
    assert w["stations"] == [{"tx_power_dbm": 5.0, "distance_m": None}]
    assert w["band"] == "2.4"


def test_a_wired_link_has_no_wifi_key() -> None:
    raw = wifi()
    del raw["bottleneck"]["wifi"]
    assert "wifi" not in norm(raw)["bottleneck"]


def test_an_ac_link_in_24_ghz_is_refused_by_the_core(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        'name = "w"\nduration = "2s"\n[bottleneck]\nrate = "54Mbps"\ndelay = "10us"\n'
        '[bottleneck.wifi]\nstandard = "ac"\nband = "2.4GHz"\nwidth_mhz = 80\n'
        '[[flows]]\ncca = "cubic"\n'
    )
    proc = run_cli("run", str(path))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "bottleneck.wifi.standard" in line and "2.4" in line, line


def test_emulate_refuses_wifi_in_one_line() -> None:
    with pytest.raises(ScenarioError, match=r"^bottleneck\.wifi: a Wi-Fi link exists only"):
        emulate_normalized(norm(wifi()))


def test_ap_queue_reaches_the_core_only_when_written_and_is_checked() -> None:
    assert "ap_queue" not in norm(wifi())["bottleneck"]["wifi"]
    assert norm(wifi(ap_queue="fifo"))["bottleneck"]["wifi"]["ap_queue"] == "fifo"
    assert norm(wifi(ap_queue="fq-codel"))["bottleneck"]["wifi"]["ap_queue"] == "fq-codel"
    with pytest.raises(ScenarioError, match=r"ap_queue.*per-station.*fifo.*fq-codel"):
        norm(wifi(ap_queue="sfq"))
    assert "server_on_wifi" not in norm(wifi())["bottleneck"]["wifi"]
    assert norm(wifi(server_on_wifi=True))["bottleneck"]["wifi"]["server_on_wifi"] is True


@pytest.mark.parametrize("where", ["stations", "background"])
def test_an_infinite_station_distance_is_one_line_through_run_and_sweep(
    tmp_path: Path, where: str
) -> None:
    # JSON, which carries the scenario to the core, has no infinity: refuse it up front
    entry = (
        '{ distance_m = inf, load = "1Mbps" }' if where == "background" else "{ distance_m = inf }"
    )
    path = tmp_path / "w.toml"
    path.write_text(
        'name = "w"\nduration = "2s"\n[bottleneck]\nrate = "54Mbps"\ndelay = "10us"\n'
        f'[bottleneck.wifi]\nstandard = "g"\nband = "2.4GHz"\n{where} = [{entry}]\n'
        '[[flows]]\ncca = "cubic"\n'
    )
    for args in (["run", str(path)], ["sweep", str(path), "--db", str(tmp_path / "w.duckdb")]):
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith(f"error: bottleneck.wifi.{where}[0].distance_m = inf"), line
        assert "finite" in line, line
