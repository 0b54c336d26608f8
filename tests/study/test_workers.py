"""What the sweep's workers and its batched commits leave in the store: the series file a
worker wrote for every run, rows that hold the exact values (a seed above 2^63), and none of
the core's series files a run streamed on the way."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tcplab.study.grid import study_from_dict
from tcplab.study.store import Store
from tcplab.study.sweep import remove_stale_series, run_study

BASE: dict[str, object] = {
    "duration": "2s",
    "bottleneck": {"rate": "10Mbps", "delay": "10ms", "per": 1e-3},
    "flows": [{"cca": "cubic"}],
}
#: the largest seed a scenario takes is 2^64 - 1: seeds 2^64 - 2 and 2^64 - 1
HIGH_SEED = 2**64 - 2


def test_a_sweep_stores_exact_rows_and_a_series_file_per_run(tmp_path: Path) -> None:
    raw = {
        **BASE,
        "study": {"name": "w", "base_seed": HIGH_SEED},
        "sweep": {"flows.0.cca": ["reno", "cubic", "vegas"], "repetitions": 2},
    }
    store = Store(tmp_path / "w.duckdb")
    summary = run_study(study_from_dict(raw), store, jobs=2, progress=False)
    assert summary.ran == 6 and summary.core_cpu_s is not None and summary.core_cpu_s > 0
    runs = store.runs("w")
    assert sorted(int(s) for s in runs["seed"]) == [HIGH_SEED] * 3 + [HIGH_SEED + 1] * 3
    assert store.query("SELECT count(*) FROM flows")[0][0] == 6
    assert store.query("SELECT count(*) FROM links")[0][0] == 12  # each direction
    for _, run in runs.iterrows():
        series = store.series(str(run["run_id"]))
        assert len(series) == 2  # 2 s of 1 s intervals, one flow
        assert series["cca"].tolist() == [run["flows.0.cca"]] * 2
    # only the Parquet files: the core's streamed files are gone
    assert sorted(p.suffix for p in store.series_dir.iterdir()) == [".parquet"] * 6


def test_series_files_of_a_killed_sweep_go_those_of_a_running_one_stay(tmp_path: Path) -> None:
    store = Store(tmp_path / "k.duckdb")
    store.series_dir.mkdir()
    host = socket.gethostname()
    # a pid no process has (above the kernel's pid_max), and this process's
    dead = store.series_dir / f".abc-1-m3.{host}-{2**22 + 7}.1.series"
    running = store.series_dir / f".abc-2-m3.{host}-{os.getpid()}.1.series"
    elsewhere = store.series_dir / f".abc-3-m3.otherhost-{2**22 + 7}.1.series"
    for path in (dead, running, elsewhere):
        path.write_bytes(b"TCPLABSR")
    remove_stale_series(store)
    assert not dead.exists()
    assert running.exists() and elsewhere.exists()
