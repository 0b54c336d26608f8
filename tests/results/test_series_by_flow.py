"""`series.by_flow`: a run's series split by flow, each flow's rows in time order."""

from __future__ import annotations

import math

import pandas as pd  # type: ignore[import-untyped]
from tcplab.results.series import by_flow


def test_flows_in_order_rows_in_time_order() -> None:
    # rows as a file might hold them: interleaved, flow 10 before flow 2, times shuffled
    frame = pd.DataFrame(
        {
            "t_s": [2.0, 1.0, 1.0, 3.0, 2.0, 3.0],
            "flow_id": [10, 10, 2, 2, 2, 10],
            "goodput_bps": [20.0, 10.0, 1.0, 3.0, 2.0, math.nan],
            "cca": ["bbr", "bbr", "cubic", "cubic", "cubic", "bbr"],
        }
    )
    got = by_flow(frame, ("t_s", "goodput_bps", "cca"))
    assert [flow for flow, _ in got] == [2, 10]
    assert got[0][1] == {
        "t_s": [1.0, 2.0, 3.0],
        "goodput_bps": [1.0, 2.0, 3.0],
        "cca": ["cubic", "cubic", "cubic"],
    }
    assert got[1][1]["t_s"] == [1.0, 2.0, 3.0]
    assert got[1][1]["goodput_bps"][:2] == [10.0, 20.0]
    assert math.isnan(got[1][1]["goodput_bps"][2])
    assert all(type(flow) is int for flow, _ in got)


def test_an_empty_series_has_no_flows() -> None:
    frame = pd.DataFrame({"t_s": [], "flow_id": [], "goodput_bps": []})
    assert by_flow(frame, ("t_s", "goodput_bps")) == []
