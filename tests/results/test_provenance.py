"""Provenance and the one series schema: every run row, exported file and series file says
which tcplab, model version and checkout produced it, on which host, when and how long it
took; `tcplab run --series`, `RunResult.series_frame()` and the store's series files have the
same columns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tcplab import _core, run
from tcplab.results.export import read_table
from tcplab.results.provenance import build_info, git_commit, git_describe
from tcplab.results.series import SERIES_COLUMNS
from tcplab.study.store import Store

REPO = Path(__file__).resolve().parents[2]
TCPLAB = [sys.executable, "-m", "tcplab"]

#: A CBR flow beside two TCP flows: `kind` and `cca` differ by row.
SCENARIO = """\
name = "prov"
duration = "5s"
seed = 3
[bottleneck]
rate = "10Mbps"
delay = "20ms"
queue = "1bdp"
[[flows]]
cca = "reno"
[[flows]]
cca = "cubic"
start = "1s"
[[flows]]
app = "cbr"
rate = "500kbps"
"""

EXPECTED_COLUMNS = list(SERIES_COLUMNS)
PROVENANCE_KEYS = {
    "tcplab_version",
    "core_version",
    "model_version",
    "git_commit",
    "scenario_hash",
    "seed",
    "host",
    "started_utc",
    "wall_s",
}


def head_commit() -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def test_git_commit_of_a_checkout_and_outside_one(tmp_path: Path) -> None:
    commit = git_commit()
    head = head_commit()
    if head is None:
        pytest.skip("the tests do not run from a git checkout")
    assert commit is not None and commit.removesuffix("-dirty") == head
    assert git_commit(tmp_path) is None  # not a checkout: no commit, no error


def test_a_process_asks_git_for_its_commit_once_whatever_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # three git processes cost more than a short run: a sweep of 1,752 one-second runs spent
    # 25 ms per run on them before the commit was asked once per process
    from tcplab.results import provenance

    calls: list[list[str]] = []
    real = subprocess.run

    def counted(argv: list[str], *args: object, **kwargs: object) -> object:
        calls.append(list(argv))
        return real(argv, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", counted)
    provenance._own_commit.cache_clear()
    scenario = tmp_path / "prov.toml"
    scenario.write_text(SCENARIO)
    commits = {run(scenario, seed=s, duration="3s").git_commit for s in (1, 2, 3)}
    assert len(commits) == 1 and commits == {git_commit()}
    git = [c for c in calls if c[:1] == ["git"]]
    assert 1 <= len(git) <= 3, git  # ls-files, rev-parse, status: once


def test_git_describe_names_the_commit_and_whether_the_tree_is_modified() -> None:
    head, commit, describe = head_commit(), git_commit(), git_describe()
    if head is None or commit is None or describe is None:
        pytest.skip("the tests do not run from a git checkout")
    dirty = commit.endswith("-dirty")
    assert describe.endswith("-dirty") == dirty
    name = describe.removesuffix("-dirty")
    # before the first release tag: the abbreviated commit; after it: TAG-N-g<commit>
    assert name == head[:12] or re.fullmatch(rf"v[0-9][^ ]*-\d+-g{head[:12]}|v[0-9][^ ]*", name)


def test_build_info_of_a_built_package(tmp_path: Path) -> None:
    assert build_info(tmp_path) is None  # a source tree records nothing
    (tmp_path / "_build_info.json").write_text('{"git_commit": "abc", "git_describe": "v1-2-gabc"}')
    assert build_info(tmp_path) == {"git_commit": "abc", "git_describe": "v1-2-gabc"}
    (tmp_path / "_build_info.json").write_text("not json")
    assert build_info(tmp_path) is None
    # a package directory given explicitly is asked of git only, never of a recorded build
    assert git_commit(tmp_path) is None and git_describe(tmp_path) is None


def test_one_series_schema_with_provenance_everywhere(tmp_path: Path) -> None:
    scenario = tmp_path / "prov.toml"
    scenario.write_text(SCENARIO)
    # 1. tcplab run --series (Parquet and CSV)
    for ext in ("parquet", "csv"):
        proc = subprocess.run(
            [*TCPLAB, "run", str(scenario), "--series", str(tmp_path / f"s.{ext}")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
    from_cli, cli_prov = read_table(tmp_path / "s.parquet")
    from_csv, csv_prov = read_table(tmp_path / "s.csv")
    # 2. RunResult.series_frame()
    frame = run(scenario).series_frame()
    # 3. the store's series of the same scenario, swept
    study = tmp_path / "study.toml"
    study.write_text(SCENARIO + '[study]\nname = "prov"\n[sweep]\n"flows.0.cca" = ["reno"]\n')
    db = tmp_path / "p.duckdb"
    proc = subprocess.run(
        [*TCPLAB, "sweep", str(study), "--db", str(db), "--no-progress"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    store = Store(db, create=False)
    stored = store.series(str(store.runs("prov")["run_id"].iloc[0]))
    for df in (from_cli, from_csv, frame, stored):
        assert list(df.columns) == EXPECTED_COLUMNS
    assert list(SERIES_COLUMNS) == EXPECTED_COLUMNS
    # 5 s at 1 s intervals, 3 flows; the same numbers whichever way they were made
    assert len(frame) == len(from_cli) == len(stored) == 15
    for column in ("goodput_bps", "cwnd_bytes", "bottleneck_queue_pkts"):
        assert from_cli[column].tolist() == frame[column].tolist() == stored[column].tolist()
    rows = frame[frame["t_s"] == 5.0].set_index("flow_id")
    assert rows["kind"].tolist() == ["tcp", "tcp", "cbr"]
    assert rows["cca"].tolist() == ["reno", "cubic", ""]
    for prov in (cli_prov, csv_prov, frame.attrs["provenance"], stored.attrs["provenance"]):
        assert set(prov) >= PROVENANCE_KEYS, set(prov)
        assert prov["model_version"] == _core.model_version()
        assert prov["seed"] == 3 and prov["host"] and prov["started_utc"]
        assert prov["wall_s"] > 0
    assert cli_prov["scenario_hash"] == frame.attrs["provenance"]["scenario_hash"]
    assert cli_prov["scenario_hash"] == stored.attrs["provenance"]["scenario_hash"]
    head = head_commit()
    if head is not None:
        assert str(cli_prov["git_commit"]).removesuffix("-dirty") == head


def test_run_rows_and_run_json_carry_provenance(tmp_path: Path) -> None:
    scenario = tmp_path / "prov.toml"
    scenario.write_text(SCENARIO)
    proc = subprocess.run(
        [*TCPLAB, "run", str(scenario), "--json"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model_version"] == _core.model_version()
    assert set(out["provenance"]) >= PROVENANCE_KEYS
    assert out["provenance"]["seed"] == 3
    study = tmp_path / "study.toml"
    study.write_text(SCENARIO + '[study]\nname = "prov"\n[sweep]\n"flows.0.cca" = ["reno"]\n')
    db = tmp_path / "p.duckdb"
    assert (
        subprocess.run(
            [*TCPLAB, "sweep", str(study), "--db", str(db), "--no-progress"],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    row = Store(db, create=False).runs("prov").iloc[0]
    for key in PROVENANCE_KEYS - {"started_utc", "git_commit"}:
        assert row[key] is not None and row[key] == row[key], key
    assert row["model_version"] == _core.model_version()
    assert row["scenario_hash"] == out["provenance"]["scenario_hash"]
    assert row["started_utc"] <= row["created"]
    assert row["run_id"] == f"{row['scenario_hash']}-3-m{_core.model_version()}"
