"""Small stored studies the figure tests draw (simulated once per test session)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tcplab.study.grid import study_from_dict
from tcplab.study.store import Store
from tcplab.study.sweep import run_study

#: One flow over a lossy 4 Mbit/s path, PER 0 among the swept values, two seeds.
PER_STUDY: dict[str, Any] = {
    "duration": "6s",
    "study": {"name": "per"},
    "bottleneck": {"rate": "4Mbps", "delay": "50ms", "queue": "1bdp"},
    "flows": [{"cca": "reno"}],
    "sweep": {
        "bottleneck.per": [0.0, 1e-3, 1e-2],
        "flows.0.cca": ["reno", "cubic"],
        "repetitions": 2,
    },
}

#: Two flows, nothing numeric swept (bars), rates written in Mbps in the variants.
PAIR_STUDY: dict[str, Any] = {
    "duration": "4s",
    "study": {"name": "pair"},
    "bottleneck": {"rate": "10Mbps", "delay": "10ms", "queue": "1bdp"},
    "flows": [{"cca": "reno"}, {"cca": "cubic"}],
    "sweep": {
        "flows.0.cca": ["reno", "bbr"],
        "flows.1.cca": ["cubic"],
        "repetitions": 2,
        "variants": [{"name": "fast"}, {"name": "slow", "set": {"bottleneck.rate": "2Mbps"}}],
    },
}

#: A rate written in Mbps on the x axis.
RATE_STUDY: dict[str, Any] = {
    "duration": "3s",
    "study": {"name": "rate"},
    "bottleneck": {"rate": "4Mbps", "delay": "20ms", "queue": "1bdp"},
    "flows": [{"cca": "cubic"}],
    "sweep": {"bottleneck.rate": ["1Mbps", "4Mbps", "10Mbps"], "repetitions": 1},
}


def stored(tmp: Path, raw: dict[str, Any]) -> Store:
    store = Store(tmp / f"{raw['study']['name']}.duckdb")
    # a copy: loading a study consumes parts of the dict it is given
    run_study(study_from_dict(copy.deepcopy(raw)), store, jobs=2, progress=False)
    return store
