"""Record the iperf3/emulator fixtures of tests/test_realstack.py (needs root).

    .venv/bin/python tests/data/realstack/record.py

Each fixture is `{"normalized": scenario, "clients": [iperf3 client JSON per flow],
"emu": tcplab-emu report}`, exactly what `convert.result_json` consumes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tcplab.realstack.cleanup import new_run_id
from tcplab.realstack.emulate import _run_traffic
from tcplab.realstack.options import EmulateOptions
from tcplab.realstack.plan import plan_topology
from tcplab.realstack.topology import topology

HERE = Path(__file__).resolve().parent


def _dir(rate_bps: int, delay_ns: int, limit_pkts: int, per: float = 0.0) -> dict[str, Any]:
    return {
        "rate_bps": rate_bps,
        "delay_ns": delay_ns,
        "per": per,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": limit_pkts},
        "ecn_threshold_pkts": None,
    }


def _flow(cca: str, app: dict[str, Any], start_ns: int = 0) -> dict[str, Any]:
    return {
        "cca": cca,
        "cca_params": {},
        "start_ns": start_ns,
        "app": app,
        "tcp": {},
        "access": None,
    }


def _scenario(
    name: str, seconds: int, rate_bps: int, delay_ns: int, flows: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "name": name,
        "seed": 1,
        "duration_ns": seconds * 10**9,
        "interval_ns": 10**9,
        "bottleneck": {
            "forward": _dir(rate_bps, delay_ns, 100, 1e-3),
            "reverse": _dir(rate_bps, delay_ns, 100),
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": flows,
    }


FIXTURES = {
    "bulk-cubic": _scenario(
        "bulk-cubic", 4, 10_000_000, 20_000_000, [_flow("cubic", {"kind": "bulk"})]
    ),
    "file-bbr": _scenario(
        "file-bbr",
        5,
        10_000_000,
        20_000_000,
        [_flow("bbr", {"kind": "file", "size_bytes": 1_000_000})],
    ),
    "two-flows": _scenario(
        "two-flows",
        5,
        10_000_000,
        20_000_000,
        [_flow("reno", {"kind": "bulk"}), _flow("cubic", {"kind": "bulk"}, 2 * 10**9)],
    ),
    "cbr": _scenario(
        "cbr",
        3,
        10_000_000,
        20_000_000,
        [_flow("cubic", {"kind": "cbr", "rate_bps": 1_000_000, "packet_bytes": 1000})],
    ),
}


def record(name: str, normalized: dict[str, Any]) -> None:
    plan = plan_topology(normalized, new_run_id())
    with topology(plan, normalized, EmulateOptions(), int(normalized["duration_ns"])) as topo:
        runs = _run_traffic(topo, normalized)
        report = topo.stop_emulator()
    data = {"normalized": normalized, "clients": [run.client for run in runs], "emu": report}
    (HERE / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    for fixture_name, scenario in FIXTURES.items():
        record(fixture_name, scenario)
        print(f"recorded {fixture_name}")
