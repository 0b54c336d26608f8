"""`tcplab examples list | copy DIR`: the shipped scenarios, studies, traces and notebook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tcplab.examples import examples, examples_dir

REPO = Path(__file__).resolve().parents[1]
TCPLAB = [sys.executable, "-m", "tcplab"]


def tcplab(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TCPLAB, *argv], cwd=cwd, capture_output=True, text=True)


def test_a_source_tree_lists_its_scenarios_directory() -> None:
    assert examples_dir() == REPO / "scenarios"
    listed = {e.name: e.kind for e in examples()}
    scenarios = {p.name for p in (REPO / "scenarios").glob("*.toml")}
    assert {n for n, k in listed.items() if k == "scenario"} == scenarios
    assert listed["studies/all-algorithms.toml"] == "study"
    assert listed["traces/leo-pass.csv"] == "trace"
    assert listed["README.md"] == "reference"


def test_list_shows_each_file_with_what_it_shows() -> None:
    proc = tcplab("examples", "list")
    assert proc.returncode == 0, proc.stderr
    assert "geo-sat.toml" in proc.stdout and "GEO satellite path" in proc.stdout
    # a study is described by its [study] description
    assert "all algorithms: GEO 4 Mbit/s" in proc.stdout


def test_a_copied_trace_scenario_runs_where_it_was_copied(tmp_path: Path) -> None:
    proc = tcplab("examples", "copy", "ex", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    copied = sorted(p.relative_to(tmp_path / "ex").as_posix() for p in tmp_path.rglob("*.*"))
    assert copied == sorted(e.name for e in examples())
    # trace names are relative to the scenario file: the copy reads its own traces
    run = tcplab("run", "ex/trace-driven.toml", "--duration", "5s", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (tmp_path / "ex" / "traces" / "cell.down").unlink()
    gone = tcplab("run", "ex/trace-driven.toml", "--duration", "5s", cwd=tmp_path)
    assert gone.returncode == 2
    assert gone.stderr == (
        'error: path.segments[2].delivery_trace = "traces/cell.down": no such file\n'
    )


def test_copy_replaces_nothing_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "geo-sat.toml").write_text("mine")
    proc = tcplab("examples", "copy", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"error: DIR = '{tmp_path}': geo-sat.toml exists there; allowed: another directory, "
        "or --force to replace the examples' files\n"
    )
    assert (tmp_path / "geo-sat.toml").read_text() == "mine"
    assert not (tmp_path / "codel.toml").exists()  # nothing was written
    forced = tcplab("examples", "copy", str(tmp_path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "geo-sat.toml").read_bytes() == (
        REPO / "scenarios/geo-sat.toml"
    ).read_bytes()


def test_copy_errors_are_one_line() -> None:
    missing = tcplab("examples", "copy")
    assert missing.returncode == 2
    assert missing.stderr == (
        "error: examples copy: missing DIR; allowed: a directory to copy them into\n"
    )
    onto_a_file = tcplab("examples", "copy", "README.md")
    assert onto_a_file.returncode == 2
    assert onto_a_file.stderr == ("error: DIR = 'README.md': is a file; allowed: a directory\n")
