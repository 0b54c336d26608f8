"""Sweeps too large to expand up front are planned chunk by chunk: the first run starts at once,
and a small grid planned this way gives the same runs, in the same order, as one planned whole."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import interruptible
from tcplab import _core
from tcplab.study import sweep
from tcplab.study.grid import Study, study_from_dict
from tcplab.study.store import Store

TCPLAB = [sys.executable, "-m", "tcplab"]

# 10 ms runs of a 4 Mbit/s path: each takes milliseconds, so the grid's size is all that
# could delay the first one.
BASE = {
    "duration": "10ms",
    "interval": "10ms",
    "bottleneck": {"rate": "4Mbps", "delay": "5ms", "queue": "1bdp"},
    "flows": [{"cca": "reno"}],
}


def _study(sweep_table: dict[str, object]) -> Study:
    return study_from_dict({**BASE, "study": {"name": "lazy"}, "sweep": sweep_table})


def _stored(db: Path) -> list[tuple[str, str]]:
    """(run_id, params) of the runs in the study's revision, and the runs table's key
    metric, in run-id order."""
    store = Store(db, create=False)
    rows = store.query(
        "SELECT m.run_id, m.params_json, r.seed FROM revision_runs m JOIN runs r "
        "USING (run_id) ORDER BY m.run_id"
    )
    return [(str(r[0]), f"{r[1]}|{r[2]}") for r in rows]


def test_a_ten_million_run_sweep_starts_its_first_run_within_seconds(tmp_path: Path) -> None:
    """Expanding 10^7 runs before the first one took ~15 min and 4 GiB; planned lazily the
    first result is stored within seconds, Ctrl-C then ends the sweep with 130, and the run
    stored is the grid's first (per = 0, seed 1)."""
    study_file = tmp_path / "big.toml"
    study_file.write_text(
        'duration = "10ms"\ninterval = "10ms"\n[study]\nname = "big"\n'
        '[bottleneck]\nrate = "4Mbps"\ndelay = "5ms"\nqueue = "1bdp"\n[[flows]]\ncca = "reno"\n'
        '[sweep]\n"bottleneck.per" = { lin = [0.0, 0.01], points = 100000 }\n'
        "repetitions = 100\n"
    )
    db = tmp_path / "big.duckdb"
    started = time.monotonic()
    proc = interruptible(
        [*TCPLAB, "sweep", str(study_file), "--db", str(db), "--jobs", "1", "--no-progress"]
    )
    series = tmp_path / "big.duckdb.series"
    try:
        while time.monotonic() - started < 30 and proc.poll() is None:
            if any(series.glob("*.parquet")) if series.is_dir() else False:
                break
            time.sleep(0.05)
        first_s = time.monotonic() - started
        assert proc.poll() is None, proc.communicate()
        # a few seconds on an idle machine (start-up included); the bound allows for a loaded one
        assert first_s < 15, f"first run stored after {first_s:.1f} s"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "10000000 runs" in out, out
    runs = Store(db, create=False).query(
        "SELECT seed, params_json FROM runs JOIN revision_runs USING (run_id) ORDER BY seed"
    )
    assert runs, err
    # the grid's order: seeds vary fastest, so the first stored runs are per = 0.0, seeds 1, 2, ...
    assert runs[0][0] == 1 and '"bottleneck.per": 0.0' in str(runs[0][1])
    # --plan counts what is stored without expanding the grid
    plan = subprocess.run(
        [*TCPLAB, "sweep", str(study_file), "--db", str(db), "--plan"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert plan.returncode == 0, plan.stderr
    assert f"{len(runs)} of 10000000 stored in this definition's revision" in plan.stdout


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan every grid lazily, in chunks of 3 then 5 runs, so a 24-run grid spans 6 chunks."""
    monkeypatch.setattr(sweep, "LAZY_FROM_RUNS", 0)
    monkeypatch.setattr(sweep, "FIRST_CHUNK_RUNS", 3)
    monkeypatch.setattr(sweep, "CHUNK_RUNS", 5)


def test_lazy_plan_lists_the_same_runs_in_the_same_order(small_chunks: None) -> None:
    # 3 x 2 points x 4 seeds = 24 runs; with flows.0.cca = cubic both values of flows.1.cca
    # are cubic, so each point has a twin: 12 distinct runs, the twins 4 runs apart, which
    # puts some twins in the next chunk
    st = study_from_dict(
        {
            **BASE,
            "flows": [{"cca": "reno"}, {"cca": "reno"}],
            "study": {"name": "lazy"},
            "sweep": {
                "bottleneck.per": [0.0, 0.001, 0.01],
                "flows.0.cca": ["cubic"],
                "flows.1.cca": ["cubic", "=flows.0.cca"],
                "repetitions": 4,
            },
        }
    )
    assert st.n_runs == 24
    whole = [s.run_id for s in sweep.plan(st, _core.model_version())]
    chunks = list(sweep.plan_chunks(st, _core.model_version()))
    assert [len(c) for c in chunks][:1] == [3]
    assert [s.run_id for c in chunks for s in c] == whole
    assert len(whole) == 12


def test_lazy_sweep_stores_what_the_whole_plan_stores_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = {"bottleneck.per": [0.0, 0.001, 0.01], "repetitions": 8}
    st = _study(table)
    eager_db = tmp_path / "eager.duckdb"
    summary = run_study(st, Store(eager_db), jobs=1, progress=False)
    assert (summary.total, summary.ran, summary.skipped) == (24, 24, 0)

    monkeypatch.setattr(sweep, "LAZY_FROM_RUNS", 0)
    monkeypatch.setattr(sweep, "FIRST_CHUNK_RUNS", 3)
    monkeypatch.setattr(sweep, "CHUNK_RUNS", 5)
    lazy_db = tmp_path / "lazy.duckdb"
    first = run_study(st, Store(lazy_db), jobs=1, progress=False, stop_after=7)
    assert first.interrupted and first.ran >= 7
    again = run_study(st, Store(lazy_db), jobs=1, progress=False)
    assert not again.interrupted
    assert again.ran + again.skipped == 24 and again.skipped == first.ran
    assert again.revision == first.revision == 1
    assert _stored(lazy_db) == _stored(eager_db)
    metric = "SELECT run_id, goodput_bps FROM runs ORDER BY run_id"
    assert Store(lazy_db, create=False).query(metric) == Store(eager_db, create=False).query(metric)


def test_replacing_a_lazily_planned_revision_keeps_the_runs_its_later_chunks_use(
    tmp_path: Path, small_chunks: None
) -> None:
    """The new definition shares 16 of its 24 runs with the old one (per 0 and 1e-3, seeds
    1..8); chunks of 3 then 5 runs put most of them after the first chunk, and replacing the
    revision must neither simulate them again nor keep the 8 runs (per 1e-2) nothing uses."""
    db = tmp_path / "replace.duckdb"
    old = run_study(
        _study({"bottleneck.per": [0.0, 0.001, 0.01], "repetitions": 8}),
        Store(db),
        jobs=1,
        progress=False,
    )
    assert (old.ran, old.skipped) == (24, 0)
    new_study = _study({"bottleneck.per": [0.0, 0.001, 0.02], "repetitions": 8})
    new = run_study(new_study, Store(db), jobs=1, progress=False, on_change="replace")
    assert (new.total, new.ran, new.skipped, new.revision) == (24, 8, 16, 1)
    store = Store(db, create=False)
    pers = store.query("SELECT DISTINCT params_json FROM revision_runs ORDER BY 1")
    assert ['"bottleneck.per": 0.01' in str(p[0]) for p in pers] == [False] * 3
    assert store.query("SELECT count(*) FROM runs") == [(24,)]
    assert len(list((tmp_path / "replace.duckdb.series").glob("*.parquet"))) == 24
    # the same runs, and the same numbers, as a sweep of the new definition alone
    alone = tmp_path / "alone.duckdb"
    run_study(new_study, Store(alone), jobs=1, progress=False)
    assert _stored(db) == _stored(alone)


def run_study(st: Study, store: Store, **kwargs: object) -> sweep.SweepSummary:
    return sweep.run_study(st, store, **kwargs)  # type: ignore[arg-type]
