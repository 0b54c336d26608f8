"""Runs are bounded and interruptible: the resource budget refuses what would take years or
more memory than allowed, and Ctrl-C stops a run or a sweep at once (real processes, real
SIGINT)."""

from __future__ import annotations

import importlib.abc
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_user_error, interruptible, run_cli
from tcplab import ScenarioError, runner

# 4 bulk CUBIC flows over 100 Mbit/s for an hour: minutes of simulation
LONG_TOML = """
name = "long"
duration = "3600s"
[bottleneck]
rate = "100Mbps"
delay = "10ms"
queue = "2bdp"
[[flows]]
cca = "cubic"
count = 4
"""

# 10 Tbit/s for a week
TERA_TOML = """
name = "tera"
duration = "604800s"
[bottleneck]
rate = "10Tbps"
delay = "10ms"
[[flows]]
cca = "cubic"
"""

# 1,000 downloads of 10 kB, then idle for a day
IDLE_TOML = """
name = "idle"
duration = "86400s"
[bottleneck]
rate = "10Mbps"
delay = "10ms"
[[flows]]
cca = "cubic"
app = "file"
size = "10kB"
count = 1000
"""


def _tcplab(*args: str) -> subprocess.Popen[str]:
    return interruptible([sys.executable, "-m", "tcplab", *args])


def test_ctrl_c_ends_a_long_run_within_a_second_with_exit_130(tmp_path: Path) -> None:
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_TOML)
    proc = _tcplab("run", str(scenario), "--progress")
    try:
        assert proc.stderr is not None
        # the first progress report (after 2 s of wall time) says the core is running
        first = proc.stderr.readline()
        assert first.startswith("simulated "), first
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took_s = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert took_s < 1.0, took_s
    assert out == ""
    assert err.splitlines()[-1] == "error: interrupted", err
    assert "Traceback" not in err


def test_a_week_at_ten_terabits_is_refused_up_front_naming_estimate_and_limit(
    tmp_path: Path,
) -> None:
    scenario = tmp_path / "tera.toml"
    scenario.write_text(TERA_TOML)
    started = time.monotonic()
    line = assert_user_error(run_cli("run", str(scenario)), "--force")
    assert time.monotonic() - started < 30
    # 1e13 bit/s x 604,800 s / (1,500 bytes x 8) = 5.04e14 data packets; as many ACKs; each
    # over 4 hops (two access links, the bottleneck, the endpoint): 4.03e15 events
    assert "about 4.0e15 events (limit 5.0e10)" in line, line


def test_series_kept_in_memory_for_a_thousand_flows_over_a_day_are_refused() -> None:
    # 1,000 flows x 86,401 intervals x 200 bytes (limits.rs) = 17.3e9 bytes = 16.1 GiB
    with pytest.raises(ScenarioError, match=r"16\.1 GiB of memory \(limit 4\.0 GiB\)"):
        runner.run(_idle_dict())


def _idle_dict() -> dict[str, object]:
    import tomllib

    return tomllib.loads(IDLE_TOML)


def test_ctrl_c_while_the_command_line_loads_prints_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Interrupting(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, *_args: object) -> None:
            if name == "tcplab.cli.main":
                raise KeyboardInterrupt

    from tcplab import entry

    monkeypatch.delitem(sys.modules, "tcplab.cli.main", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    assert entry.main(["--version"]) == 130
    assert capsys.readouterr().err == "error: interrupted\n"


SWEEP_TOML = """
name = "interrupted"
duration = "20s"
[bottleneck]
rate = "50Mbps"
delay = "10ms"
queue = "2bdp"
[[flows]]
cca = "cubic"
[sweep]
"bottleneck.per" = { log = [1e-6, 1e-3], points = 20 }
repetitions = 4
"""


def test_a_second_ctrl_c_while_exiting_still_ends_with_130(tmp_path: Path) -> None:
    """Ctrl-C pressed twice: the second one arrives while the command winds down (the
    interpreter's shutdown takes a few hundred ms) and used to end it by the signal (-2)."""
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_TOML)
    proc = _tcplab("run", str(scenario), "--progress")
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("simulated ")
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == "error: interrupted", err


def _pcapng_blocks(path: Path) -> int:
    """The number of blocks of a pcapng file, checked against the format (pcapng draft §3.1:
    a Section Header Block first, byte-order magic 0x1A2B3C4D; every block's total length is
    a multiple of 4, repeated at its end, and the file ends where the last block ends)."""
    import struct

    data = path.read_bytes()
    assert data[:4] == b"\x0a\x0d\x0d\x0a", "no Section Header Block"
    assert struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D, "not little-endian pcapng"
    offset, blocks = 0, 0
    while offset < len(data):
        assert offset + 12 <= len(data), f"a block cut short at byte {offset}"
        length = struct.unpack_from("<I", data, offset + 4)[0]
        assert length >= 12 and length % 4 == 0, f"bad block length {length} at {offset}"
        assert offset + length <= len(data), f"the last block is cut short at {offset}"
        assert struct.unpack_from("<I", data, offset + length - 4)[0] == length
        offset, blocks = offset + length, blocks + 1
    return blocks


def test_ctrl_c_leaves_complete_pcapng_captures_and_says_so(tmp_path: Path) -> None:
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG_TOML)
    caps = tmp_path / "caps"
    proc = _tcplab("run", str(scenario), "--pcap", str(caps))
    try:
        # interrupted while the captures are being written (past the headers)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            sizes = [f.stat().st_size for f in caps.glob("*.pcapng")] if caps.is_dir() else []
            if sizes and min(sizes) > 256 * 1024:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[-2:] == [
        f"note: the pcapng captures in {caps} end where the run was interrupted",
        "error: interrupted",
    ], err
    files = sorted(caps.glob("*.pcapng"))
    assert [f.name for f in files] == [
        "bottleneck.receiver-side.pcapng",
        "bottleneck.sender-side.pcapng",
    ]
    for f in files:
        # header blocks plus thousands of packets: 256 KiB holds more than 1,000 of them
        assert _pcapng_blocks(f) > 1000


def test_ctrl_c_on_a_sweep_stops_it_keeping_the_committed_runs(tmp_path: Path) -> None:
    from tcplab.study.store import Store

    study = tmp_path / "study.toml"
    study.write_text(SWEEP_TOML)
    db = tmp_path / "r.duckdb"
    series = tmp_path / "r.duckdb.series"
    proc = _tcplab("sweep", str(study), "--db", str(db), "--jobs", "2", "--no-progress")
    try:
        deadline = time.monotonic() + 120
        while not list(series.glob("*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(series.glob("*.parquet")), "no run finished"
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took_s = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "interrupted" in out, out
    assert took_s < 5.0, took_s
    runs = Store(db).runs("interrupted")
    assert 1 <= len(runs) < 80
    # every stored run has its series; no run stopped half way was stored
    for name in runs["series_file"]:
        assert (series / name).is_file()
    assert not list(series.glob(".*.series")), "partial series files were removed"


def test_a_sweep_point_beyond_the_budget_is_refused_before_the_database_is_made(
    tmp_path: Path,
) -> None:
    study = tmp_path / "study.toml"
    study.write_text(
        TERA_TOML.replace('"10Tbps"', '"10Mbps"')
        + '[sweep]\n"bottleneck.rate" = ["10Mbps", "10Tbps"]\n'
    )
    db = tmp_path / "r.duckdb"
    line = assert_user_error(run_cli("sweep", str(study), "--db", str(db)), "--force")
    assert line.startswith("error: sweep point bottleneck.rate = '10Tbps': resource budget"), line
    assert not db.exists()
