"""Series that never sit whole in memory: the core streams them to a file in chunks, Python
converts a chunk at a time, and a run without `--series` keeps none. Memory is measured in a
fresh process (its peak RSS), so the numbers are the run's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tcplab
from tcplab import _core
from tcplab.errors import ScenarioError
from tcplab.results.series_file import SeriesFileError, convert, frames
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalized_json

GEO = """\
name = "geo"
duration = "{duration}"
interval = "10ms"
[bottleneck]
rate = "4Mbps"
delay = "250ms"
per = 1e-4
queue = "2bdp"
[[flows]]
cca = "cubic"
"""

#: A fresh interpreter runs the CLI and prints its peak RSS (KiB) on the last line.
PEAK = """
import sys
from tcplab.cli.main import main
status = main(sys.argv[1:])
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(status, peak)
"""


def peak_rss_mib(*argv: str) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, check=False
    )
    status, peak_kib = proc.stdout.split()[-2:]
    assert status == "0", proc.stderr
    return int(peak_kib) / 1024


def test_memory_of_a_streamed_run_does_not_grow_with_its_length(tmp_path: Path) -> None:
    # 10 ms intervals: 180,000 against 720,000 of them (3 and 11 chunks: past the first
    # few, where the Parquet writer and the allocator settle). Kept in memory, the long
    # run's series alone would take 540,000 x (48 bytes in the core, its JSON and Python's
    # tuples) more: about 80 MiB.
    peaks = []
    for duration in ("1800s", "7200s"):
        path = tmp_path / f"geo-{duration}.toml"
        path.write_text(GEO.format(duration=duration))
        out = tmp_path / f"series-{duration}.parquet"
        peaks.append(peak_rss_mib("run", str(path), "--series", str(out)))
        assert out.stat().st_size > 0
    assert peaks[1] - peaks[0] < 8, peaks


def test_a_day_of_a_thousand_idle_flows_without_series_runs_in_bounded_memory(
    tmp_path: Path,
) -> None:
    # 1,000 downloads of 10 kB, done in seconds, then idle for a day of 1 s intervals:
    # 86.4 million flow-intervals, 4 GiB in the core alone if they were kept.
    path = tmp_path / "idle.toml"
    path.write_text(
        'duration = "1440min"\n[bottleneck]\nrate = "100Mbps"\ndelay = "10ms"\n'
        '[[flows]]\ncca = "cubic"\napp = "file"\nsize = "10kB"\ncount = 1000\n'
    )
    assert peak_rss_mib("run", str(path), "--json") < 400


def test_a_streamed_series_file_equals_the_series_kept_in_memory(tmp_path: Path) -> None:
    scenario = tmp_path / "geo.toml"
    scenario.write_text(GEO.format(duration="60s"))
    kept = tcplab.run(scenario).series_frame()
    for suffix in (".parquet", ".csv"):
        streamed = tcplab.run(scenario, series=tmp_path / f"s{suffix}")
        assert streamed.series.streamed and streamed.series.intervals == 6000
        frame = streamed.series_frame()
        assert frame.shape == kept.shape == (6000, 11)
        assert frame.drop(columns=["rtt_ms"]).equals(kept.drop(columns=["rtt_ms"]))
        assert frame["rtt_ms"].equals(kept["rtt_ms"])  # NaN where no RTT was sampled
    dropped = tcplab.run(scenario, series=None)
    assert dropped.series.file is None and dropped.series.t_ns == ()
    with pytest.raises(ScenarioError, match="did not keep its series"):
        dropped.series_frame()
    # nothing left beside the target but the target
    assert sorted(p.name for p in tmp_path.iterdir()) == ["geo.toml", "s.csv", "s.parquet"]


def core_file(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    text = normalized_json(load_scenario(tmp_path / "geo.toml", []))
    path = tmp_path / "run.series"
    result = json.loads(_core.run_json_series(text, str(path)))
    return path, [(f["kind"], f["cca"]) for f in result["flows"]]


def test_a_series_file_cut_short_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "geo.toml").write_text(GEO.format(duration="10s"))
    path, flows = core_file(tmp_path)
    rows = sum(len(frame) for frame in frames(path, flows))
    assert rows == 1000  # 10 s of 10 ms intervals, one flow
    data = path.read_bytes()
    path.write_bytes(data[:-12])  # the end record gone: the run did not finish
    with pytest.raises(SeriesFileError) as info:
        convert(path, tmp_path / "out.parquet", flows, {})
    assert "cut short" in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "out.parquet").exists()  # nothing half-written
    path.write_bytes(b"PAR1" + data[4:])
    with pytest.raises(SeriesFileError, match="not a tcplab series file"):
        list(frames(path, flows))


def test_a_full_disk_ends_the_run_with_a_one_line_error(tmp_path: Path) -> None:
    # /dev/full accepts the open and refuses every write with ENOSPC
    (tmp_path / "geo.toml").write_text(GEO.format(duration="10s"))
    text = normalized_json(load_scenario(tmp_path / "geo.toml", []))
    with pytest.raises(ValueError) as info:
        _core.run_json_series(text, "/dev/full")
    assert str(info.value) == "series file /dev/full: No space left on device (os error 28)"
