"""Kernel runs as a file: `validate --matrix --export-kernel/--import-kernel`, and the runs
shipped with tcplab behind the README's agreement table, checked against today's simulator.

No kernel runs here: the runs were recorded (tests/data/kernel, and the shipped
`python/tcplab/data/kernel-matrix-runs.jsonl.gz`, 120 s each on Linux 6.18)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import assert_user_error, run_cli
from tcplab.realstack import kernel_records
from tcplab.realstack.kernel_cache import KernelCache
from test_matrix import CLI_CASE, NAMES, RECORDED, prefilled_db


def test_exported_runs_import_into_another_cache_as_cached(tmp_path: Path) -> None:
    db = prefilled_db(tmp_path)
    records = tmp_path / "runs.jsonl.gz"
    base = ["validate", "--matrix", *CLI_CASE, "--duration", "30s"]
    done = run_cli(*base, "--db", str(db), "--sim-only", "--export-kernel", str(records))
    assert done.returncode == 0, done.stderr
    assert "wrote 2 kernel run(s)" in done.stderr
    lines = gzip.decompress(records.read_bytes()).decode().splitlines()
    assert json.loads(lines[0]) == {"format": "tcplab-kernel-runs", "version": 1}
    assert len(lines) == 3
    # the same runs give the same bytes (no timestamp in the gzip header)
    again = tmp_path / "again.jsonl.gz"
    run_cli(*base, "--db", str(db), "--sim-only", "--export-kernel", str(again))
    assert again.read_bytes() == records.read_bytes()

    fresh = tmp_path / "fresh.duckdb"
    done = run_cli(*base, "--db", str(fresh), "--import-kernel", str(records), "--plan", "--json")
    assert done.returncode == 0, done.stderr
    assert "imported 2 kernel run(s)" in done.stderr
    assert [c["kernel"] for c in json.loads(done.stdout)["cases"]] == ["cached", "cached"]
    # importing twice adds nothing: a run already there stays
    with KernelCache(fresh) as cache:
        assert kernel_records.import_records(cache, records) == 0
    done = run_cli(*base, "--db", str(fresh), "--sim-only", "--json")
    assert done.returncode == 0, done.stderr
    kernel = [r["kernel"]["goodput_bps"] for r in json.loads(done.stdout)["rows"]]
    assert kernel == [RECORDED[name][0] for name in NAMES]


# mtime=0: the gzip header's timestamp is part of each case's id, and pytest-xdist's workers
# must collect the same ids (a second apart they did not)
@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"not gzip at all", "not a gzipped kernel-runs file"),
        (gzip.compress(b"", mtime=0), "empty"),
        (
            gzip.compress(b'{"format": "other", "version": 1}\n', mtime=0),
            "line 1: not a tcplab-kernel-runs",
        ),
        (
            gzip.compress(b'{"format": "tcplab-kernel-runs", "version": 1}\n{oops\n', mtime=0),
            "line 2: not JSON",
        ),
        (
            gzip.compress(b'{"format": "tcplab-kernel-runs", "version": 1}\n[1]\n', mtime=0),
            "line 2: not a JSON object",
        ),
        (
            gzip.compress(
                b'{"format": "tcplab-kernel-runs", "version": 1}\n{"key": {}}\n', mtime=0
            ),
            "line 2: missing scenario, result",
        ),
    ],
)
def test_a_bad_records_file_is_a_one_line_error(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(content)
    done = run_cli(
        "validate",
        "--matrix",
        *CLI_CASE,
        "--db",
        str(tmp_path / "c.duckdb"),
        "--import-kernel",
        str(bad),
        "--plan",
    )
    assert_user_error(done, "--import-kernel = ", fragment)


#: Rows whose mean RTT differs for a mechanism the simulator does not model (README, "Two
#: residual differences are the kernel's"): on a real host ACKs jitter, BBR's windowed-max
#: bandwidth filter keeps the high delivery-rate samples and BBR paces above the bottleneck,
#: so the kernel keeps more queue on the 20 ms path (more under load, but also when idle).
BBR_QUEUE_ROWS = {("bbr", "terrestrial", per) for per in (0.0, 1e-5, 1e-4, 1e-3, 1e-2)}


def test_the_shipped_kernel_runs_cover_every_cell_with_three_seeds() -> None:
    """The README's table is over seeds 1..3 of every cell: 3 algorithms x 2 paths x 5 PERs
    x 3 seeds = 90 kernel runs, each once."""
    lines = gzip.decompress(kernel_records.RECORDED.read_bytes()).decode().splitlines()
    runs = [json.loads(line) for line in lines[1:]]
    cells = {
        (
            r["scenario"]["flows"][0]["cca"],
            r["scenario"]["bottleneck"]["forward"]["delay_ns"],
            r["scenario"]["bottleneck"]["forward"]["per"],
            r["key"]["seed"],
        )
        for r in runs
    }
    assert len(runs) == len(cells) == 90
    assert {seed for *_, seed in cells} == {1, 2, 3}


def test_the_shipped_kernel_runs_agree_with_todays_simulator(tmp_path: Path) -> None:
    """The README's table for seed 1 (every cell has it), recomputed: every row within
    +-10 % of the kernel's goodput and mean RTT, except the named mechanism's RTT, which
    can only be above the simulator's."""
    assert kernel_records.RECORDED.is_file()
    done = run_cli("validate", "--matrix", "--sim-only", "--seeds", "1", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "the recorded runs shipped with tcplab" in done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert len(rows) == 30
    for row in rows:
        where = (row["cca"], row["path"], row["per"])
        assert row["kernel_seeds"] == 1, where
        assert row["goodput_ratio"] == pytest.approx(1.0, abs=0.1), where
        if where in BBR_QUEUE_ROWS:
            assert row["rtt_ratio"] > 1.0, where
        else:
            assert row["rtt_ratio"] == pytest.approx(1.0, abs=0.1), where
