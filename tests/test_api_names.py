"""The Python API speaks for itself: its errors name its own arguments (`overrides["KEY"]`,
not the command line's `--set`), and every quantity it returns names its unit in the field
(`_ns`, `_bps`, `_bytes`, ...) or is a count, an identifier or a ratio."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import tcplab
from tcplab.errors import ScenarioError, cli_names
from tcplab.results import parse
from tcplab.scenario.model import LinkSpec

REPO = Path(__file__).resolve().parents[1]
GEO = REPO / "scenarios" / "geo-sat.toml"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"bottleneck.rat": "4Mbps"},
            'overrides["bottleneck.rat"] = "4Mbps": unknown key \'rat\'; allowed: rate,',
        ),
        (
            {"flows.3.cca": "reno"},
            'overrides["flows[3].cca"] = "reno": flows has no entry 3; allowed: 0 to 0',
        ),
        (["nonsense"], 'overrides = "nonsense": expected key.path=value'),
        ({"bottleneck..per": 1}, 'overrides = "bottleneck..per": malformed key path'),
    ],
)
def test_api_errors_name_the_overrides_argument(overrides: object, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        tcplab.run(GEO, duration="1s", overrides=overrides)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
    assert "--set" not in str(info.value)


def test_the_command_line_says_set_for_the_same_mistakes() -> None:
    assert cli_names('overrides["bottleneck.rat"] = "4Mbps": unknown key') == (
        '--set bottleneck.rat = "4Mbps": unknown key'
    )
    assert cli_names('overrides = "nonsense": expected key.path=value') == (
        '--set = "nonsense": expected key.path=value'
    )
    assert (
        cli_names("bottleneck.per = 2: must be in [0, 1)")
        == "bottleneck.per = 2: must be in [0, 1)"
    )


#: numeric result fields without a unit suffix, and why none is needed
DIMENSIONLESS = {
    # identifiers and versions
    "id", "seed", "model_version",
    # counts of events, packets or segments
    "events", "count", "intervals", "retransmits", "rto_count", "fast_recoveries", "spurious_undos",
    "segments_sent", "packets_sent", "packets_received", "packets_tx", "queue_drops",
    "error_drops", "ecn_marks", "outage_drops", "aqm_drops",
    # byte counts (the unit leads the name, as in the core's JSON)
    "bytes_delivered", "bytes_sent", "bytes_tx",
    # fractions of 1
    "utilization", "bottleneck_utilization",
    # the pass-through counters (tlp_probes, dup_bytes_received, acks_sent)
    "extra",
}  # fmt: skip
UNITS = ("_ns", "_s", "_bps", "_bytes", "_pkts", "_ratio")


def test_every_result_quantity_names_its_unit() -> None:
    classes = [
        parse.RunResult, parse.FlowResult, parse.LinkResult, parse.RttStats, parse.CbrStats,
        parse.LegResult, parse.PepBufferStats, parse.Series, parse.FlowSeries,
    ]  # fmt: skip
    unnamed = [
        f"{cls.__name__}.{f.name}"
        for cls in classes
        for f in dataclasses.fields(cls)
        if any(t in str(f.type) for t in ("int", "float"))
        and not f.name.endswith(UNITS)
        and f.name not in DIMENSIONLESS
    ]
    assert unnamed == []


def test_scenario_times_name_their_unit() -> None:
    """A scenario's durations are ns in Python (`delay_ns`, `outages_ns`) and strings with a
    unit in the file (`delay = "250ms"`, `outages = [["10s", "12s"]]`)."""
    link = LinkSpec.model_validate(
        {"rate": "4Mbps", "delay": "250ms", "outages": [["10s", "12.5s"]]}
    )
    assert link.delay_ns == 250_000_000
    assert link.outages_ns == [(10_000_000_000, 12_500_000_000)]
    assert link.direction(forward=False).outages_ns == ((10_000_000_000, 12_500_000_000),)
