"""The study benchmark's targets: which measurements they judge and how (the speed itself is
measured by `make bench`, not here). The limits are the published ones: the whole study in
90 s of wall time, `tcplab report` alone in 3 s, 85 % of the sweep's CPU time in the core,
and the 60 s variant three times faster than the 14.0 CPU-s it took when they were set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tcplab.tools.bench import write_json
from tcplab.tools.studybench import (
    FULL_ROLE,
    REPORT_ROLE,
    SHORT_ROLE,
    StudyBench,
    print_study_benchmarks,
    study_targets,
)


def _row(role: str, wall_s: float, cpu_s: float, core_cpu_s: float = 0.0) -> StudyBench:
    return StudyBench(
        command=f"tcplab ({role})",
        runs=2880 if role == FULL_ROLE else (288 if role == SHORT_ROLE else 0),
        wall_s=wall_s,
        cpu_s=cpu_s,
        # `tcplab report` alone runs no sweep
        sweep_wall_s=0.0 if role == REPORT_ROLE else wall_s,
        sweep_cpu_s=0.0 if role == REPORT_ROLE else cpu_s,
        core_cpu_s=core_cpu_s,
        report_wall_s=0.5,
        report_cpu_s=0.5,
        role=role,
    )


def test_each_target_is_judged_against_its_published_limit() -> None:
    rows = [
        _row(SHORT_ROLE, 2.6, 4.6),  # 14.0 / 3 = 4.67 CPU-s: met
        _row(FULL_ROLE, 92.6, 182.1, core_cpu_s=172.1),  # 92.6 > 90: missed; 94.5 % core
        _row(REPORT_ROLE, 3.2, 1.3),  # 3.2 > 3: missed
    ]
    verdicts = {t.what: t.met for t in study_targets(rows)}
    assert verdicts == {
        "60 s variant, CPU": True,
        "whole study, wall": False,
        "whole study, core share of the sweep's CPU": True,
        "report alone, wall": False,
    }


@pytest.mark.parametrize(
    ("wall_s", "cpu_s", "core_cpu_s", "met"),
    [
        (90.0, 170.0, 144.5, (True, True)),  # on both limits: 90 s, 144.5 / 170 = 85 %
        (90.1, 170.0, 144.4, (False, False)),  # just beyond both
    ],
)
def test_limits_are_inclusive(
    wall_s: float, cpu_s: float, core_cpu_s: float, met: tuple[bool, bool]
) -> None:
    wall, share = study_targets([_row(FULL_ROLE, wall_s, cpu_s, core_cpu_s)])
    assert (wall.met, share.met) == met


def test_shortened_runs_are_not_judged() -> None:
    assert study_targets([_row("", 1.0, 1.0)]) == []


def test_the_table_prints_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    print_study_benchmarks([_row(SHORT_ROLE, 3.0, 5.0)])
    out = capsys.readouterr().out
    assert "study target, 60 s variant, CPU: 5.00 s (target <= 4.67 s): missed" in out


def test_bench_json_is_strict_json_with_nulls_for_undefined_numbers(tmp_path: Path) -> None:
    # `tcplab report` alone runs no sweep: its core share and runs per second are undefined
    report_row = _row(REPORT_ROLE, 1.3, 1.4)
    path = tmp_path / "bench.json"
    write_json({"studies": [report_row.as_dict()], "x": (float("inf"), 1.5)}, path)

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    data = json.loads(path.read_text(), parse_constant=refuse)
    (row,) = data["studies"]
    assert row["core_share"] is None and row["runs_per_s"] is None
    assert row["wall_s"] == 1.3
    assert data["x"] == [None, 1.5]
