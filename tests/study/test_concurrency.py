"""Readers beside writers, with real processes: DuckDB lets one process write a file or any
number read it, so the sweep holds the database for one commit at a time and readers open it
read only and retry. A reader during a sweep succeeds; two sweeps into one database both make
progress; a `Store` kept open elsewhere does not make a sweep fail; a process that keeps the
file itself open makes the other side wait and then say in one line that the database is
busy."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tcplab.study.store import Store, StoreError

TCPLAB = [sys.executable, "-m", "tcplab"]

#: A 50 Mbit/s GEO path: 0.1-0.2 s of simulation per 100 s simulated.
STUDY = """\
duration = "{duration}"
[study]
name = "{name}"
[bottleneck]
rate = "50Mbps"
return_rate = "20Mbps"
delay = "250ms"
queue = "2bdp"
[[flows]]
cca = "cubic"
[sweep]
"bottleneck.per" = {{ log = [{low}, {high}], points = 8 }}
repetitions = {reps}
"""


def study_file(
    tmp_path: Path,
    name: str,
    low: str = "1e-6",
    high: str = "1e-4",
    reps: int = 3,
    duration: str = "300s",
) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(STUDY.format(name=name, low=low, high=high, reps=reps, duration=duration))
    return path


def finish(proc: subprocess.Popen[str]) -> None:
    """Stop a helper process and close its pipes."""
    proc.kill()
    proc.communicate()


def sweep(study: Path, db: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*TCPLAB, "sweep", str(study), "--db", str(db), "--jobs", "1", "--no-progress", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return int(Store(db, create=False).query("SELECT count(*) FROM runs")[0][0])
    except StoreError:  # being created
        return 0


def wait_for(db: Path, runs: int, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while stored(db) < runs:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "the sweep stored nothing"
        time.sleep(0.2)  # a look opens the store (~60 ms of CPU): not faster than this


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TCPLAB, *args], capture_output=True, text=True, check=False, timeout=300
    )


#: A process that opens the database with DuckDB itself and keeps it open (as a notebook's
#: raw connection would), says "ready", and lets go after `hold_s` seconds.
HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
con.execute("SELECT count(*) FROM runs").fetchall()
print("ready", flush=True)
time.sleep(float(sys.argv[3]))
con.close()
"""


def hold(db: Path, mode: str, hold_s: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db), mode, str(hold_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.communicate()
    return proc


def test_reader_during_a_sweep_succeeds(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    proc = sweep(study_file(tmp_path, "conc", reps=3, duration="150s"), db)  # 24 runs
    wait_for(db, 1, proc)
    seen: list[int] = []
    reads_while_running = 0
    while proc.poll() is None and len(seen) < 4:
        running = proc.poll() is None
        r = cli("results", str(db), "--format", "json")
        assert r.returncode == 0, r.stderr
        seen.append(len(json.loads(r.stdout)["rows"]))
        # the same, in this process, through the Python API
        assert len(Store(db, create=False).runs("conc")) >= seen[-1]
        reads_while_running += running and proc.poll() is None
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert reads_while_running >= 1, seen
    assert seen == sorted(seen) and seen[0] >= 1
    assert len(Store(db, create=False).runs("conc")) == 24


def test_two_sweeps_into_one_database_both_progress(tmp_path: Path) -> None:
    db = tmp_path / "two.duckdb"
    one = sweep(study_file(tmp_path, "one", "1e-6", "1e-4", reps=2, duration="150s"), db)
    two = sweep(study_file(tmp_path, "two", "2e-6", "2e-4", reps=2, duration="150s"), db)
    # and a third, the same study as the first: it shares the runs, never duplicates one
    wait_for(db, 1, one)
    three = sweep(study_file(tmp_path, "one", "1e-6", "1e-4", reps=2, duration="150s"), db)
    results = [p.communicate(timeout=300) for p in (one, two, three)]
    assert [p.returncode for p in (one, two, three)] == [0, 0, 0], [e for _, e in results]
    store = Store(db, create=False)
    assert len(store.runs("one")) == 16 and len(store.runs("two")) == 16
    assert store.query("SELECT count(*), count(DISTINCT run_id) FROM runs") == [(32, 32)]
    assert store.revisions()["revision"].tolist() == [1, 1]  # the same definition: one revision
    # both made progress at the same time: each committed runs while the other was running
    spans = {
        name: store.query(
            "SELECT min(created), max(created) FROM runs WHERE run_id IN "
            "(SELECT run_id FROM revision_runs WHERE study = ?)",
            [name],
        )[0]
        for name in ("one", "two")
    }
    assert spans["one"][0] < spans["two"][1] and spans["two"][0] < spans["one"][1], spans


def test_store_held_open_elsewhere_does_not_fail_the_sweep(tmp_path: Path) -> None:
    db = tmp_path / "nb.duckdb"
    # a notebook: a Store kept for the whole sweep, read from again and again
    notebook = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom tcplab.study.store import Store\n"
            "store = Store(sys.argv[1])\nprint('ready', flush=True)\n"
            "end = time.time() + 4\nwhile time.time() < end:\n"
            "    store.runs()\n    time.sleep(0.05)\n",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert notebook.stdout is not None and notebook.stdout.readline().strip() == "ready"
    proc = sweep(study_file(tmp_path, "nb", reps=2, duration="150s"), db)
    wait_for(db, 1, proc)
    # and a raw DuckDB connection held for 2 s in the middle: the sweep waits and goes on
    holder = hold(db, "ro", 2.0)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    _out, notebook_err = notebook.communicate(timeout=60)
    assert notebook.returncode == 0, notebook_err
    holder.communicate(timeout=60)
    assert holder.returncode == 0
    assert len(Store(db, create=False).runs("nb")) == 16


def test_database_held_too_long_is_busy_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "busy.duckdb"
    study = study_file(tmp_path, "busy", reps=1)
    assert (
        cli("sweep", str(study), "--db", str(db), "--no-progress", "--duration", "10s").returncode
        == 0
    )
    # a writer that keeps the file (for longer than both commands below can take on a busy
    # machine; it is killed at the end): readers wait (5 s), then say so in one line
    writer = hold(db, "rw", 60.0)
    started = time.monotonic()
    r = cli("results", str(db))
    waited = time.monotonic() - started
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "the database is busy" in r.stderr, r.stderr
    assert waited >= 5.0
    # a second sweep with a short --db-wait says so too, and stores nothing
    r = cli(
        "sweep", str(study), "--db", str(db), "--no-progress", "--duration", "10s", "--db-wait", "1"
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "the database is busy" in r.stderr, r.stderr
    finish(writer)


def test_reader_retries_until_a_short_hold_ends(tmp_path: Path) -> None:
    db = tmp_path / "short.duckdb"
    study = study_file(tmp_path, "short", reps=1)
    assert (
        cli("sweep", str(study), "--db", str(db), "--no-progress", "--duration", "10s").returncode
        == 0
    )
    writer = hold(db, "rw", 1.5)
    r = cli("results", str(db), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["rows"]) == 8
    writer.communicate(timeout=60)
    assert writer.returncode == 0


@pytest.mark.parametrize("mode", ["ro", "rw"])
def test_python_store_beside_a_raw_connection(tmp_path: Path, mode: str) -> None:
    """Another reader does not stop a read; a writer that keeps the file does, for as long as
    the store waits, and then it says so in one line."""
    db = tmp_path / "api.duckdb"
    Store(db)  # created
    holder = hold(db, mode, 10.0)
    try:
        if mode == "ro":
            assert Store(db, create=False, wait_s=0.5).runs().empty
        else:
            with pytest.raises(StoreError, match="the database is busy") as err:
                Store(db, create=False, wait_s=0.5).runs()
            assert "\n" not in str(err.value)
    finally:
        finish(holder)
    assert Store(db, create=False).runs().empty


def test_a_reading_block_holds_one_read_connection_and_lets_it_go(tmp_path: Path) -> None:
    """A report's reads share one connection (`Store.reading`): inside the block the file is
    open read only, so a writer elsewhere is refused; after it, the writer gets the file."""
    db = tmp_path / "reading.duckdb"
    Store(db)  # created
    store = Store(db, create=False)
    writer = [
        sys.executable,
        "-c",
        f"import duckdb; duckdb.connect({str(db)!r}).execute('CHECKPOINT').close()",
    ]
    with store.reading():
        assert store.runs().empty
        assert store.study_names() == []
        inside = subprocess.run(writer, capture_output=True, text=True, check=False)
        assert store.query("SELECT 1") == [(1,)]
    assert inside.returncode != 0 and "lock" in inside.stderr.lower(), inside.stderr
    after = subprocess.run(writer, capture_output=True, text=True, check=False)
    assert after.returncode == 0, after.stderr
