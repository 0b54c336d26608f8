"""The input-boundary fuzz (`tcplab.tools.fuzz`, `make fuzz`) with a few hundred seeded cases,
and the checks of its judge: each would fail on the outcome it is meant to catch."""

from __future__ import annotations

import json

from conftest import REPO
from tcplab.tools.fuzz import Case, Outcome, check_run_json, fuzz, judge

CASES = 200
SEED = 20


def test_seeded_fuzz_of_files_and_arguments_has_no_failure() -> None:
    report = fuzz(CASES, SEED, REPO, subprocess_every=100)
    assert report.failures == [], "\n\n".join(report.failures or [])
    assert report.cases == CASES
    exits = report.exits or {}
    assert set(exits) <= {0, 2}
    # the cases reach both sides of the boundary: valid runs and one-line refusals
    assert exits.get(0, 0) >= CASES // 10 and exits.get(2, 0) >= CASES // 2, exits


def _case(argv: list[str], json_out: bool = True) -> Case:
    return Case(0, argv, {"case.toml": ""}, json_out, False, False)


def test_the_judge_refuses_internal_errors_tracebacks_and_long_errors() -> None:
    run = _case(["run", "case.toml", "--json"])
    assert judge(run, Outcome(1, "", "internal error: KeyError: 'x'\n", 0.1))
    assert judge(run, Outcome(2, "", "Traceback (most recent call last):\nerror: x\n", 0.1))
    assert judge(run, Outcome(2, "", "error: a\nb\nc\nd\n", 0.1))
    assert judge(run, Outcome(2, "", "no error prefix\n", 0.1))
    assert judge(run, Outcome(0, "not json", "", 0.1))
    assert judge(run, Outcome(-2, "", "timed out", 61.0))
    assert judge(run, Outcome(2, "", "error: x: bad; allowed: y\n", 0.1)) == []


def _result(**flow: float) -> str:
    base = {"id": 0, "bytes_sent": 1000, "bytes_delivered": 1000, "goodput_bps": 1e6}
    return json.dumps(
        {
            "flows": [{**base, **flow}],
            "links": [{"name": "bottleneck.forward", "utilization": 0.5}],
            "scenario": {"bottleneck": {"rate_bps": 4_000_000}},
        }
    )


def test_the_run_invariants_catch_what_cannot_happen() -> None:
    assert check_run_json(_result()) == []
    assert check_run_json(_result(bytes_delivered=1001))  # more delivered than sent
    assert check_run_json(_result(goodput_bps=4_100_000))  # faster than the 4 Mbit/s link
    assert check_run_json(_result(retransmits=-1))
    broken = json.loads(_result())
    broken["links"][0]["utilization"] = 1.2
    assert check_run_json(json.dumps(broken))
