"""Special, unreadable and too large input files, and output paths that cannot be written:
each is refused in one line (exit 2) before any work starts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import GEO_TOML, SMALL_STUDY, assert_user_error, run_cli
from tcplab.files import MAX_SCENARIO_FILE_BYTES


def test_dev_zero_is_not_read() -> None:
    line = assert_user_error(run_cli("run", "/dev/zero"))
    assert line == "error: /dev/zero: is a character device; allowed: a regular file"


def test_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    started = time.monotonic()
    proc = run_cli("run", str(fifo))
    assert time.monotonic() - started < 30  # no writer ever comes: it must not wait for one
    line = assert_user_error(proc)
    assert line == f"error: {fifo}: is a FIFO; allowed: a regular file"


def test_directory_as_scenario(tmp_path: Path) -> None:
    line = assert_user_error(run_cli("sweep", str(tmp_path)))
    assert line == f"error: {tmp_path}: is a directory; allowed: a regular file"


def test_scenario_larger_than_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    # a valid file padded with a comment one byte past the documented 16 MiB
    body = GEO_TOML + "#"
    big.write_text(body + "x" * (16 * 1024 * 1024 + 1 - len(body) - 1) + "\n")
    assert big.stat().st_size == MAX_SCENARIO_FILE_BYTES + 1 == 16 * 1024 * 1024 + 1
    line = assert_user_error(run_cli("check", str(big)))
    assert line == (f"error: {big}: larger than 16777216 bytes; allowed: at most 16777216 bytes")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "geo.toml").write_text(GEO_TOML.replace('"600s"', '"1s"'), encoding="utf-8")
    (tmp_path / "study.toml").write_text(SMALL_STUDY, encoding="utf-8")
    (tmp_path / "a-dir.html").mkdir()
    (tmp_path / "a-dir.parquet").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["run", "geo.toml", "--series", "nope/s.parquet"],
            "--series = 'nope/s.parquet': the folder 'nope' does not exist",
        ),
        (
            ["run", "geo.toml", "--series", "a-dir.parquet"],
            "--series = 'a-dir.parquet': is a directory; allowed: a file name",
        ),
        (
            ["run", "geo.toml", "--events", "nope/e.parquet"],
            '--events = "nope/e.parquet": directory does not exist',
        ),
        (
            ["run", "geo.toml", "--pcap", "geo.toml/x"],
            '--pcap = "geo.toml/x": cannot create the directory',
        ),
        (
            ["sweep", "study.toml", "--report", "nope/r.html"],
            "--report = 'nope/r.html': the folder 'nope' does not exist",
        ),
        (
            ["sweep", "study.toml", "--report", "a-dir.html"],
            "--report = 'a-dir.html': is a directory; allowed: a file name",
        ),
        (
            ["sweep", "study.toml", "--db", "nope/r.duckdb"],
            "--db = 'nope/r.duckdb': the folder 'nope' does not exist",
        ),
        (
            ["demo", "--out", "geo.toml/x"],
            "--out = 'geo.toml/x': '",  # the nearest existing path is a file
        ),
    ],
)
def test_bad_output_path_fails_before_work(files: Path, args: list[str], expected: str) -> None:
    started = time.monotonic()
    proc = run_cli(*args, cwd=files)
    assert_user_error(proc, expected)
    # nothing was simulated or created: refused at once
    assert time.monotonic() - started < 20
    assert not (files / "study.duckdb").exists() and not (files / "results.duckdb").exists()


def test_report_and_export_outputs_checked_first(files: Path) -> None:
    """Reading commands check `-o` before opening the database (which does not exist)."""
    assert_user_error(
        run_cli("report", "missing.duckdb", "-o", "nope/r.html", cwd=files),
        "-o = 'nope/r.html': the folder 'nope' does not exist",
    )
    assert_user_error(
        run_cli("results", "missing.duckdb", "-o", "a-dir.parquet", cwd=files),
        "-o = 'a-dir.parquet': is a directory",
    )
