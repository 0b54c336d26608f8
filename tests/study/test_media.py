"""Results databases on a read-only medium and on a full disk, each in a mount namespace of
its own (a tmpfs or a read-only bind mount that vanishes with the process: nothing to clean
up, and the machine's mounts are never touched)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SMALL_STUDY

TCPLAB = f"{sys.executable} -m tcplab"


def _namespace() -> list[str]:
    """A prefix running a shell script in a new mount namespace (as root, or as a user
    mapped to root in a user namespace)."""
    prefix = ["unshare", "-m", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix.insert(1, "-r")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespaces here: {probe.stderr.decode().strip()}")
    return prefix


def _script(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_namespace(), "sh", "-c", f"set -e\n{script}"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def _sections(out: str) -> dict[str, str]:
    """`== NAME` headed parts of a script's output."""
    parts: dict[str, str] = {}
    name = ""
    for line in out.splitlines(keepends=True):
        if line.startswith("== "):
            name = line[3:].strip()
            parts[name] = ""
        else:
            parts[name] = parts.get(name, "") + line
    return parts


def test_database_on_read_only_medium_is_read_and_not_written(tmp_path: Path) -> None:
    (tmp_path / "study.toml").write_text(SMALL_STUDY, encoding="utf-8")
    media = tmp_path / "media"
    media.mkdir()
    setup = subprocess.run(
        [sys.executable, "-m", "tcplab", "sweep", "study.toml", "--db", "media/r.duckdb"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert setup.returncode == 0, setup.stderr
    proc = _script(
        "mount --bind media media && mount -o remount,bind,ro media media\n"
        "! touch media/probe 2>/dev/null\n"
        f"echo '== results'; {TCPLAB} results media/r.duckdb --table flows 2>&1\n"
        f"echo '== sweep'; {TCPLAB} sweep study.toml --db media/r.duckdb 2>&1 || echo exit $?\n"
        f"echo '== report'; {TCPLAB} report media/r.duckdb -o media/r.html 2>&1 || echo exit $?\n",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = _sections(proc.stdout)
    # readable: two flows rows (two runs of one flow) after the header lines
    rows = [line for line in out["results"].splitlines() if line.startswith("small,")]
    assert len(rows) == 2, out["results"]
    assert out["sweep"] == (
        "error: --db = 'media/r.duckdb': the folder 'media' is on a read-only file system\nexit 2\n"
    )
    assert out["report"] == (
        "error: -o = 'media/r.html': the folder 'media' is on a read-only file system\nexit 2\n"
    )


#: Fills a tmpfs to 16 KiB short of full after the database exists, then stores 400 runs:
#: their rows need more than that, so DuckDB's COMMIT (or checkpoint) hits ENOSPC.
COMMIT_ON_FULL_DISK = """
import os, sys
from pathlib import Path
import tcplab
from tcplab import _core
from tcplab.results.provenance import Build
from tcplab.study.store import Member, RevisionPlan, RunKey, RunRecord, Store, StoreError

where = Path(sys.argv[1])
store = Store(where / "r.duckdb")
result = tcplab.run({"duration": "1s", "bottleneck": {"rate": "4Mbps", "delay": "20ms"},
                     "flows": [{"cca": "reno"}]})
model = _core.model_version()
keys = [RunKey(f"h{i:04d}", 1, model) for i in range(400)]
plan = RevisionPlan("s", "", "", "{}", "h", model, len(keys))
choice = store.open_revision(plan, [Member(k.run_id, "", "{}") for k in keys], Build.current())
fs = os.statvfs(where)
with open(where / "filler", "wb") as f:
    f.write(bytes(fs.f_bavail * fs.f_frsize - 16384))
try:
    store.add_runs("s", choice.revision, [RunRecord(k, "", {}, result.scenario, result, "x")
                                          for k in keys])
    print("stored")
except StoreError as exc:
    print(f"StoreError: {exc}")
(where / "filler").unlink()
print(f"runs: {len(store.query('SELECT run_id FROM runs'))}")
"""


def test_full_disk_during_commit_is_named(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "commit.py").write_text(COMMIT_ON_FULL_DISK, encoding="utf-8")
    proc = _script(
        f"mount -t tmpfs -o size=4m tmpfs full\n{sys.executable} commit.py full", tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    # the disk is named (not "cannot rollback - no transaction is active"), nothing half
    # stored, and the database reads fine once there is room again
    assert proc.stdout == "StoreError: no space left on device: full/r.duckdb\nruns: 0\n"


def test_full_disk_during_sweep_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "study.toml").write_text(SMALL_STUDY, encoding="utf-8")
    (tmp_path / "full").mkdir()
    proc = _script(
        "mount -t tmpfs -o size=300k tmpfs full\n"
        f"{TCPLAB} sweep study.toml --db full/r.duckdb --no-progress || echo exit $?",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "error: no space left on device: full/r.duckdb.series\n"
    assert proc.stdout.endswith("exit 2\n")
