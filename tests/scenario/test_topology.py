"""`[path]` scenarios (segments, PEPs), `[flows.pep]` and CBR flows → the normalized JSON of
docs/interface.md ("Paths, PEPs, mixed traffic and changing links"), their one-line errors
through the CLI, and `--set`/sweep keys that reach into segments.

Expected numbers are worked out by hand in the comments. None of this needs the core's support
for the new features (Python produces the JSON); the runs at the end skip until it has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tcplab
from conftest import SCENARIOS, assert_user_error, run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.catalogue import ccas
from tcplab.scenario.load import raw_scenario
from tcplab.scenario.normalize import normalize
from tcplab.study.grid import study_from_dict
from test_tcp_options import LINUX_TCP

#: The issue's example (scenarios/pep-geo.toml) as TOML text, for error variants.
PEP_TOML = """\
name = "pep"
duration = "60s"

[path]
pep = "distributed"

[[path.segments]]
name = "internet"
rate = "100Mbps"
delay = "10ms"

[[path.segments]]
name = "satellite"
rate = "10Mbps"
return_rate = "2Mbps"
delay = "260ms"
per = 1e-4
queue = "2bdp"

[[path.segments]]
name = "access"
rate = "100Mbps"
delay = "5ms"

[[flows]]
cca = "cubic"
app = "file"
size = "5MB"

[flows.pep]
cca = "hybla"
initial_window = 10
"""


def norm(raw: dict[str, Any], overrides: list[str] | None = None) -> dict[str, Any]:
    return normalize(load_scenario(raw, overrides or [], catalogue=()))


def segment(name: str, rate: str, delay: str, **keys: Any) -> dict[str, Any]:
    return {"name": name, "rate": rate, "delay": delay, **keys}


def pep_raw(mode: str = "distributed", **flow: Any) -> dict[str, Any]:
    return {
        "duration": "60s",
        "path": {
            "pep": mode,
            "segments": [
                segment("internet", "100Mbps", "10ms"),
                segment(
                    "satellite", "10Mbps", "260ms", return_rate="2Mbps", per=1e-4, queue="2bdp"
                ),
                segment("access", "100Mbps", "5ms"),
            ],
        },
        "flows": [{"cca": "cubic", "app": "file", "size": "5MB", **flow}],
    }


def broken(old: str, new: str) -> str:
    assert old in PEP_TOML, old
    return PEP_TOML.replace(old, new, 1)


# --- normalization ----------------------------------------------------------------------------


def test_pep_geo_example_normalizes_to_the_contract() -> None:
    out = normalize(load_scenario(SCENARIOS / "pep-geo.toml"))
    assert "bottleneck" not in out
    path = out["path"]
    assert path["pep"] == "distributed"
    assert [s["name"] for s in path["segments"]] == ["internet", "satellite", "access"]
    sat = path["segments"][1]
    # base RTT = 2 x (10 + 260 + 5 ms) + 4 x 0.1 ms = 550.4 ms
    # "2bdp" forward: ceil(2 x 10e6 x 0.5504 / 12000) = ceil(917.33) = 918 packets
    # return (2 Mbit/s): ceil(2 x 2e6 x 0.5504 / 12000) = ceil(183.47) = 184 packets
    assert sat["forward"] == {
        "rate_bps": 10_000_000,
        "delay_ns": 260_000_000,
        "per": 1e-4,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": 918},
        "ecn_threshold_pkts": None,
    }
    assert sat["reverse"]["rate_bps"] == 2_000_000
    assert sat["reverse"]["delay_ns"] == 260_000_000
    assert sat["reverse"]["queue"] == {"kind": "droptail", "limit_pkts": 184}
    assert sat["reverse"]["per"] == 0.0
    # default "1bdp" at 100 Mbit/s: ceil(1e8 x 0.5504 / 12000) = ceil(4586.67) = 4587
    assert path["segments"][0]["forward"]["queue"] == {"kind": "droptail", "limit_pkts": 4587}
    flow = out["flows"][0]
    assert flow["app"] == {"kind": "file", "size_bytes": 5_000_000}
    assert flow["pep"] == {
        "cca": "hybla",
        "cca_params": {},
        "tcp": {**LINUX_TCP, "initial_window_pkts": 10},
        "buffer_bytes": 4 * 1024 * 1024,
    }


def test_return_delay_counts_in_the_path_rtt() -> None:
    raw = pep_raw()
    raw["path"]["segments"][1]["return_delay"] = "60ms"
    # RTT = (10 + 260 + 5) + (10 + 60 + 5) + 0.4 = 350.4 ms
    # satellite 2bdp: ceil(2 x 10e6 x 0.3504 / 12000) = ceil(584.0) = 584 exactly
    out = norm(raw)
    assert out["path"]["segments"][1]["forward"]["queue"]["limit_pkts"] == 584


def test_pep_defaults_to_the_flows_algorithm_and_profile() -> None:
    raw = pep_raw(cca="reno", cca_params={"beta": 0.7}, tcp={"mss": 1000}, pep={"rwnd": "16MiB"})
    pep = norm(raw)["flows"][0]["pep"]
    # no cca: the flow's, with its parameters; TCP keys not given come from the Linux
    # profile, not from the flow's [flows.tcp] (mss stays 1448)
    assert pep["cca"] == "reno" and pep["cca_params"] == {"beta": 0.7}
    assert pep["tcp"] == {**LINUX_TCP, "rwnd_bytes": 16 * 1024 * 1024}
    assert pep["buffer_bytes"] == 4_194_304


def test_pep_own_cca_does_not_inherit_the_flows_parameters() -> None:
    raw = pep_raw(cca="cubic", cca_params={"beta": 717}, pep={"cca": "hybla", "buffer": "1MB"})
    pep = norm(raw)["flows"][0]["pep"]
    assert (pep["cca"], pep["cca_params"], pep["buffer_bytes"]) == ("hybla", {}, 1_000_000)


def test_pep_table_is_left_out_when_no_pep_splits_the_flow() -> None:
    # pep = "none": the table is accepted (a sweep may switch the PEP on) but has no effect
    assert "pep" not in norm(pep_raw("none", pep={"cca": "hybla"}))["flows"][0]
    # a flow without [flows.pep] on a PEP path: no key either (the core's default, null)
    assert "pep" not in norm(pep_raw("gateway"))["flows"][0]


def test_gateway_with_two_segments_and_satellite_by_delay() -> None:
    raw = {
        "duration": "10s",
        "path": {
            "pep": "gateway",
            # no segment named "satellite": the largest forward delay (geo, 250 ms) is it,
            # and it has a segment before it, so one gateway PEP fits
            "segments": [
                segment("terrestrial", "50Mbps", "20ms"),
                segment("geo", "8Mbps", "250ms"),
            ],
        },
        "flows": [{"cca": "cubic", "pep": {"cca": "hybla"}}],
    }
    out = norm(raw)
    assert out["path"]["pep"] == "gateway"
    assert out["flows"][0]["pep"]["cca"] == "hybla"


def test_cbr_flows_normalize() -> None:
    out = normalize(load_scenario(SCENARIOS / "mixed-cbr.toml"))
    flows = out["flows"]
    assert len(flows) == 8
    assert [f["app"]["kind"] for f in flows] == ["bulk"] * 6 + ["cbr"] * 2
    assert flows[6]["app"] == {"kind": "cbr", "rate_bps": 250_000, "packet_bytes": 1200}
    assert flows[7]["start_ns"] == 2 * 10**9
    assert "pep" not in flows[6]
    assert out["bottleneck"]["forward"]["queue"] == {"kind": "droptail", "limit_pkts": 200}
    assert out["bottleneck"]["forward"]["rate_bps"] == 4_000_000


def test_cbr_packet_size_default_and_forms() -> None:
    raw = pep_raw("none")
    raw["flows"] = [
        {"app": "cbr", "rate": "64kbps"},
        {"app": "cbr", "rate": "1Mbps", "packet_size": 160},
    ]
    apps = [f["app"] for f in norm(raw)["flows"]]
    assert apps == [
        {"kind": "cbr", "rate_bps": 64_000, "packet_bytes": 1200},
        {"kind": "cbr", "rate_bps": 1_000_000, "packet_bytes": 160},
    ]


def test_dumbbell_scenarios_are_unchanged() -> None:
    # The normalized JSON is a run's identity (results databases find runs by its hash):
    # it changes only by a deliberate schema change. Path and PEP keys left these dumbbells
    # as they were; the explicit `tcp.tso` key (Linux: true, ns-2: false) changed them.
    from tcplab.study.grid import scenario_hash

    expected = {
        "geo-sat.toml": "3772ec1b24dd5e897ba5ea8d",
        "ecn-reno.toml": "b5ba7f040dc2890ffb333679",
        "two-flows.toml": "ee35616ad50b221139f4e7a7",
        "ns2-goodput.toml": "c6528f5f66790ab460cd6629",
    }
    for name, digest in expected.items():
        assert scenario_hash(normalize(load_scenario(SCENARIOS / name))) == digest, name


def test_rich_scenario_round_trips_through_its_dump(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("0,10Mbps,20ms\n5,5Mbps,\n")
    (tmp_path / "c.down").write_text("1\n2\n2\n4\n")
    raw = pep_raw(pep={"cca": "hybla", "initial_window": 20, "buffer": "2MiB"})
    sat = raw["path"]["segments"][1]
    sat.update(
        aqm="red",
        red={"min_th": 10, "max_th": "30pkts", "max_p": 0.2},
        return_codel={"target": "10ms"},
        outages=[["10s", "12.5s"]],
        return_outages=[],
        rate_trace="t.csv",
        return_delivery_trace="c.down",
    )
    del sat["per"]
    sat["loss"] = {"model": "gilbert-elliott", "p_gb": 0.01, "p_bg": 0.5}
    raw["flows"].append({"app": "cbr", "rate": "250kbps"})
    first = load_scenario(raw, catalogue=(), base_dir=tmp_path)
    dumped = raw_scenario(first)
    assert dumped["path"]["segments"][1]["rate_trace"] == str(tmp_path / "t.csv")
    again = load_scenario(dumped, catalogue=())  # absolute trace names: no base_dir needed
    assert again == first
    assert normalize(again) == normalize(first)


# --- overrides and sweeps ---------------------------------------------------------------------


def test_set_reaches_into_segments() -> None:
    out = norm(
        pep_raw(),
        [
            "path.segments.1.per=1e-3",
            "path.segments[2].delay=15ms",
            "path.pep=gateway",
            "flows.0.pep.cca=reno",
            "path.segments.0.red.max_p=0.5",  # creates the optional table
        ],
    )
    segs = out["path"]["segments"]
    assert segs[1]["forward"]["per"] == 1e-3
    assert segs[2]["forward"]["delay_ns"] == 15_000_000
    assert out["path"]["pep"] == "gateway"
    assert out["flows"][0]["pep"]["cca"] == "reno"
    assert segs[0]["forward"]["queue"]["kind"] == "red"  # a red table alone selects RED
    assert segs[0]["forward"]["queue"]["red"]["max_p"] == 0.5


def test_set_errors_name_the_path(write_toml: Callable[[str], Path]) -> None:
    path = str(write_toml(PEP_TOML))
    line = assert_user_error(run_cli("run", path, "--set", "path.segments.5.per=1e-3"))
    assert line.startswith(
        "error: --set path.segments[5].per = 0.001: path.segments has no entry 5; allowed: 0 to 2"
    ), line
    line = assert_user_error(run_cli("run", path, "--set", "path.segments.1.pre=1e-3"))
    assert line.startswith(
        "error: --set path.segments[1].pre = 0.001: unknown key 'pre'; allowed: name, rate"
    ), line
    line = assert_user_error(run_cli("run", path, "--set", "path.segments.1.per=2"))
    assert line.startswith("error: path.segments[1].per = 2: must be in [0, 1)"), line


def test_sweep_switches_the_pep_and_segment_loss() -> None:
    raw = pep_raw(pep={"cca": "hybla"})
    raw["sweep"] = {
        "path.pep": ["none", "gateway", "distributed"],
        "path.segments.1.per": [1e-5, 1e-3],
    }
    study = study_from_dict(raw)
    runs = list(study.runs())
    assert len(runs) == 6
    by_point = {(r.params["path.pep"], r.params["path.segments.1.per"]): r for r in runs}
    none = by_point[("none", 1e-5)].normalized
    assert none["path"]["pep"] == "none" and "pep" not in none["flows"][0]
    dist = by_point[("distributed", 1e-3)].normalized
    assert dist["flows"][0]["pep"]["cca"] == "hybla"
    assert dist["path"]["segments"][1]["forward"]["per"] == 1e-3
    assert len({r.scenario_hash for r in runs}) == 6  # every point is a different scenario


def test_study_trace_files_are_relative_to_the_study_file(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "r.csv").write_text("0,1Mbps\n1,2Mbps\n")
    (tmp_path / "traces" / "r2.csv").write_text("0,3Mbps\n")
    study_file = tmp_path / "s.toml"
    study_file.write_text(
        'duration = "10s"\n[bottleneck]\nrate = "1Mbps"\ndelay = "10ms"\n'
        'rate_trace = "traces/r.csv"\n[[flows]]\n[sweep]\n'
        '"bottleneck.return_rate_trace" = ["traces/r.csv", "traces/r2.csv"]\n'
    )
    from tcplab.study.grid import load_study

    # loaded from elsewhere: the base's and the axis's names are both next to the study file
    runs = list(load_study(study_file).runs())
    assert [r.normalized["bottleneck"]["forward"]["rate_trace"] for r in runs] == [
        [[0, 1_000_000, None], [1_000_000_000, 2_000_000, None]]
    ] * 2
    assert runs[1].normalized["bottleneck"]["reverse"]["rate_trace"] == [[0, 3_000_000, None]]


# --- errors (CLI: exit 2, one line, naming the field) ---------------------------------------

PATH_ERRORS = [
    pytest.param(
        PEP_TOML + '\n[bottleneck]\nrate = "1Mbps"\ndelay = "1ms"\n',
        "error: path: not allowed together with [bottleneck]; allowed: one of [bottleneck]",
        id="path and bottleneck",
    ),
    pytest.param(
        'duration = "10s"\n[[flows]]\ncca = "cubic"\n',
        "error: bottleneck: missing required key; allowed: a [bottleneck] table, or a [path]",
        id="neither path nor bottleneck",
    ),
    pytest.param(
        'duration = "10s"\n[path]\npep = "none"\n[[flows]]\n',
        "error: path.segments: missing required key",
        id="path without segments",
    ),
    pytest.param(
        broken('pep = "distributed"', 'pep = "gateway"').replace(
            PEP_TOML[PEP_TOML.index("[[path.segments]]") : PEP_TOML.index("[[flows]]")],
            '[[path.segments]]\nname = "satellite"\nrate = "10Mbps"\ndelay = "260ms"\n\n',
        ),
        'error: path.pep = "gateway": needs at least 2 segments, the path has 1',
        id="gateway on one segment",
    ),
    pytest.param(
        broken(
            'name = "internet"\nrate = "100Mbps"\ndelay = "10ms"',
            'name = "internet"\nrate = "100Mbps"\ndelay = "300ms"',
        ),
        # the largest delay is not what counts: the segment named "satellite" is (index 1)
        None,
        id="named satellite wins over the largest delay",
    ),
    pytest.param(
        broken('name = "satellite"', 'name = "geo"').replace(
            'name = "internet"\nrate = "100Mbps"\ndelay = "10ms"',
            'name = "internet"\nrate = "100Mbps"\ndelay = "300ms"',
        ),
        'error: path.pep = "distributed": needs a segment before the satellite segment '
        '"internet" (path.segments[0]): the PEP sits between them',
        id="satellite by delay is the first segment",
    ),
    pytest.param(
        broken('name = "access"', 'name = "satellite"').replace(
            'name = "satellite"\nrate = "10Mbps"', 'name = "sat"\nrate = "10Mbps"', 1
        ),
        'error: path.pep = "distributed": needs a segment after the satellite segment '
        '"satellite" (path.segments[2])',
        id="distributed with the satellite last",
    ),
    pytest.param(
        broken('name = "access"', 'name = "internet"'),
        'error: path.segments[2].name = "internet": duplicate segment name (also path.segments[0])',
        id="duplicate segment name",
    ),
    pytest.param(
        broken('name = "access"\n', ""),
        "error: path.segments[2].name: missing required key; allowed: a segment name",
        id="segment without name",
    ),
    pytest.param(
        broken('name = "access"', 'name = "last mile"'),
        'error: path.segments[2].name = "last mile": not a valid segment name',
        id="segment name with a space",
    ),
    pytest.param(
        broken('pep = "distributed"', 'pep = "split"'),
        'error: path.pep = "split": not an allowed value; allowed: none, gateway or distributed',
        id="unknown pep mode",
    ),
    pytest.param(
        broken("initial_window = 10", "initial_windo = 10"),
        "error: flows[0].pep.initial_windo = 10: unknown key; "
        "allowed: cca, cca_params, buffer, mss",
        id="unknown pep key",
    ),
    pytest.param(
        broken("initial_window = 10", "buffer = 2000"),
        "error: flows[0].pep.buffer = 2000: smaller than 2 segments; allowed: at least 2 x mss "
        "(2896 bytes)",
        id="pep buffer below two segments",
    ),
    pytest.param(
        broken("initial_window = 10", "sack = false\nrack = true"),
        "error: flows[0].pep.rack = true: needs SACK, but sack = false",
        id="pep tcp conflict",
    ),
    pytest.param(
        broken("initial_window = 10", "initial_window = 0"),
        "error: flows[0].pep.initial_window = 0: out of range",
        id="pep initial window zero",
    ),
    pytest.param(
        PEP_TOML + '\n[[flows]]\napp = "cbr"\n',
        'error: flows[1].rate: required when app = "cbr"; allowed: a rate such as "250kbps"',
        id="cbr without rate",
    ),
    pytest.param(
        PEP_TOML + '\n[[flows]]\napp = "cbr"\nrate = "1Mbps"\n[flows.pep]\ncca = "reno"\n',
        'error: flows[1].pep: only for TCP flows: PEPs do not split app = "cbr" (UDP)',
        id="pep on a cbr flow",
    ),
    pytest.param(
        PEP_TOML + '\n[[flows]]\napp = "cbr"\nrate = "1Mbps"\nsize = "1MB"\n',
        'error: flows[1].size = 1000000: only allowed with app = "file"',
        id="cbr with size",
    ),
    pytest.param(
        PEP_TOML + '\n[[flows]]\napp = "cbr"\nrate = "1Mbps"\npacket_size = 70000\n',
        "error: flows[1].packet_size = 70000: out of range; allowed: 1B to 65507B",
        id="cbr datagram too large",
    ),
    pytest.param(
        broken('size = "5MB"', 'size = "5MB"\nrate = "1Mbps"'),
        'error: flows[0].rate = "1Mbps": only allowed with app = "cbr"',
        id="rate on a tcp flow",
    ),
    pytest.param(
        broken('size = "5MB"', 'size = "5MB"\npacket_size = 100'),
        'error: flows[0].packet_size = 100: only allowed with app = "cbr"',
        id="packet size on a tcp flow",
    ),
    pytest.param(
        broken('rate = "10Mbps"', 'rate = "10Mbps"\nqueue_kind = "red"'),
        'error: path.segments[1].queue_kind = "red": unknown key; allowed: name, rate, delay',
        id="unknown segment key",
    ),
]


@pytest.mark.parametrize(("text", "expected_start"), PATH_ERRORS)
def test_path_mistake(
    text: str, expected_start: str | None, write_toml: Callable[[str], Path]
) -> None:
    proc = run_cli("check", str(write_toml(text)))
    if expected_start is None:  # a valid variant
        assert proc.returncode == 0, proc.stderr
        return
    line = assert_user_error(proc)
    assert line.startswith(expected_start), line


def test_pep_on_a_dumbbell(write_toml: Callable[[str], Path]) -> None:
    text = (
        'duration = "10s"\n[bottleneck]\nrate = "1Mbps"\ndelay = "10ms"\n'
        '[[flows]]\n[flows.pep]\ncca = "hybla"\n'
    )
    line = assert_user_error(run_cli("run", str(write_toml(text))))
    assert line == (
        "error: flows[0].pep: needs a [path]: a [bottleneck] dumbbell has no PEP; "
        'allowed: a [path] with pep = "gateway" or "distributed"'
    ), line


def test_pep_algorithm_is_checked_against_the_catalogue(write_toml: Callable[[str], Path]) -> None:
    names = [info.name for info in ccas()]
    assert names, "the core's catalogue is empty"
    line = assert_user_error(run_cli("run", str(write_toml(broken('"hybla"', '"hyblaa"')))))
    assert (
        line
        == f'error: flows[0].pep.cca = "hyblaa": unknown algorithm; allowed: {", ".join(names)}'
    )
    text = broken("initial_window = 10", "initial_window = 10\n[flows.pep.cca_params]\nbogus = 1")
    line = assert_user_error(run_cli("run", str(write_toml(text))))
    assert line.startswith(
        "error: flows[0].pep.cca_params.bogus = 1: unknown parameter of hybla"
    ), line


def test_python_api_reports_the_same_errors() -> None:
    raw = pep_raw("gateway")
    raw["path"]["segments"] = raw["path"]["segments"][1:]  # the satellite segment is first now
    with pytest.raises(ScenarioError, match=r'^path\.pep = "gateway": needs a segment before'):
        load_scenario(raw, catalogue=())


# --- runs on the core (skip until it implements the features) --------------------------------


@pytest.mark.parametrize("pep", ["none", "gateway", "distributed"])
def test_pep_geo_runs(pep: str) -> None:
    proc = run_cli(
        "run",
        str(SCENARIOS / "pep-geo.toml"),
        "--duration",
        "20s",
        "--set",
        f"path.pep={pep}",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    names = [link["name"] for link in out["links"]]
    assert names[:2] == ["internet.forward", "internet.reverse"]
    assert {"satellite.forward", "satellite.reverse", "access.forward"} <= set(names)
    flow = out["flows"][0]
    assert flow["bytes_delivered"] > 0
    if pep == "none":
        assert "legs" not in flow
    else:
        # server → pep1 → client (gateway) or server → pep1 → pep2 → client (distributed)
        assert len(flow["legs"]) == (2 if pep == "gateway" else 3)
        assert flow["legs"][0]["from"] == "server" and flow["legs"][-1]["to"] == "client"
        assert flow["pep_buffer"]


def test_mixed_cbr_runs() -> None:
    result = tcplab.run(SCENARIOS / "mixed-cbr.toml", duration="30s")
    assert [f.kind for f in result.flows] == ["tcp"] * 6 + ["cbr"] * 2
    for flow in result.cbr_flows:
        assert flow.cbr is not None
        # 250 kbit/s of 1200-byte payloads from 2 s to 30 s: 28 s x 250e3 / 9600 = 729.2
        assert 725 <= flow.cbr.packets_sent <= 733
        assert 0.0 <= flow.cbr.loss_ratio < 1.0
        # one way: at least the propagation delay of 250 ms + 2 x 0.1 ms
        assert flow.cbr.owd.min_ns is not None and flow.cbr.owd.min_ns >= 250_200_000


def test_cli_sweep_switches_the_pep(tmp_path: Path) -> None:
    study = tmp_path / "pep-sweep.toml"
    study.write_text(
        PEP_TOML.replace('duration = "60s"', 'duration = "10s"')
        + '\n[sweep]\n"path.pep" = ["none", "distributed"]\n'
    )
    db = str(tmp_path / "p.duckdb")
    proc = run_cli("sweep", str(study), "--db", db, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("results", db, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {row["path.pep"]: row for row in json.loads(proc.stdout)["rows"]}
    assert set(rows) == {"none", "distributed"}
    assert rows["distributed"]["pep"] == "distributed" and rows["none"]["pep"] == "none"
    assert rows["none"]["bottleneck"] == "satellite.forward"


# --- access-link queues ------------------------------------------------------------------------


def _ns2_access(queue: str | None) -> dict[str, Any]:
    """One ns-2 Reno flow, window 128 x 1460 B, on a 10 Mbit/s access link into an idle
    100 Mbit/s / 3 ms bottleneck."""
    raw: dict[str, Any] = {
        "name": "access-queue",
        "duration": "5s",
        "bottleneck": {"rate": "100Mbps", "delay": "3ms", "queue": "1000pkts"},
        "access": {"rate": "10Mbps", "delay": "0.1ms"},
        "flows": [
            {
                "cca": "reno",
                "tcp": {"stack": "ns2", "mss": 1460, "rwnd": 186880, "window_scaling": True},
            }
        ],
    }
    if queue is not None:
        raw["access"]["queue"] = queue
    return raw


def test_access_queue_is_written_only_when_given() -> None:
    assert "queue_pkts" not in norm(_ns2_access(None))["access"]
    assert norm(_ns2_access("64pkts"))["access"]["queue_pkts"] == 64


def test_access_queue_drops_what_the_window_cannot_fit() -> None:
    # The access link is the bottleneck: its pipe holds 10e6 x (2 x 3.2 ms) / (1500 x 8)
    # = 5.3 packets. A 128-packet window needs 128 - 5 = 123 packets of queue; a 64-packet
    # DropTail at the sender's access interface must overflow, so Reno retransmits. Without
    # a limit the sender's own queue never drops (Linux TSQ) and the bottleneck sees no loss.
    unlimited = tcplab.run(_ns2_access(None))
    limited = tcplab.run(_ns2_access("64pkts"))
    assert unlimited.flows[0].retransmits == 0
    assert limited.flows[0].retransmits > 0
    # Either way the 10 Mbit/s access link carries close to its payload rate
    # (1460/1500 x 10 Mbit/s = 9.73 Mbit/s) once the window has opened.
    for r in (unlimited, limited):
        assert 0.8 * 9.73e6 < r.flows[0].goodput_bps < 9.73e6
