"""When a sweep commits its finished runs: every 0.5 s, less often when commits are slow
(at most 2 % of the sweep's time), but never more than 10 s apart."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tcplab.study.sweep import _Committer


class _Recorder:
    """A store that only records the batches it is given."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def add_runs(self, study: str, revision: int, records: list[Any], wait_s: float) -> None:
        self.batches.append(len(records))


@pytest.mark.parametrize(
    ("cost_s", "gap_s"),
    [
        (0.001, 0.5),  # a fast commit: every interval (0.5 s)
        (0.05, 2.5),  # 50 ms at 2 % of the sweep's time: one every 2.5 s
        (1.0, 10.0),  # 1 s would mean one every 50 s: capped at 10 s
    ],
)
def test_the_gap_after_a_commit(cost_s: float, gap_s: float) -> None:
    c = _Committer(_Recorder(), "s", 1, 0.5, 1.0)  # type: ignore[arg-type]
    c.cost_s = cost_s
    assert c.gap_s() == pytest.approx(gap_s)


def test_a_slow_commit_puts_the_next_off_by_at_most_ten_seconds() -> None:
    store = _Recorder()
    c = _Committer(store, "s", 1, 0.5, 1.0)  # type: ignore[arg-type]
    c.cost_s = 1.0
    c.last = time.monotonic() - 9.0
    c.add(object())  # type: ignore[arg-type]
    assert store.batches == []  # 9 s after the last: not yet
    c.last = time.monotonic() - 10.5
    c.add(object())  # type: ignore[arg-type]
    assert store.batches == [2]  # both runs, in one commit
