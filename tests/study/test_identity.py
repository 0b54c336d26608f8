"""Study identity and run identity: runs of different definitions are never pooled, a changed
study definition is a new revision (or refused), a run is reused only under the same model
version, old databases are upgraded with their runs of an unknown model version; and the
small CLI promises around sweeps and exports (--plan, study-key errors, export formats)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd  # type: ignore[import-untyped]
import pytest
from tcplab import _core
from tcplab.results.export import read_table
from tcplab.results.provenance import Build
from tcplab.study.grid import load_study, members, study_from_dict
from tcplab.study.store import Store
from tcplab.study.sweep import plan, run_study

TCPLAB = [sys.executable, "-m", "tcplab"]

#: 2 algorithms x 2 seeds of a 10 s, 4 Mbit/s path (a few ms per run).
STUDY = """\
duration = "10s"
[study]
name = "pool"
description = "pooling check"
[bottleneck]
rate = "4Mbps"
delay = "20ms"
queue = "1bdp"
per = 1e-3
[[flows]]
cca = "reno"
[sweep]
"flows.0.cca" = [{ccas}]
repetitions = 2
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*TCPLAB, *args], capture_output=True, text=True, check=False, env=env, cwd=cwd
    )


def write_study(path: Path, ccas: str = '"reno", "cubic"') -> Path:
    path.write_text(STUDY.format(ccas=ccas))
    return path


def aggregate_rows(db: Path, *extra: str) -> tuple[pd.DataFrame, str]:
    r = cli("results", str(db), "--table", "aggregate", "--format", "json", *extra)
    assert r.returncode == 0, r.stderr
    return pd.DataFrame(json.loads(r.stdout)["rows"]), r.stderr


# --- pooling: a changed definition is a new revision, never mixed into the old one --------


def test_rerun_with_another_duration_is_refused_then_a_revision_not_pooled(
    tmp_path: Path,
) -> None:
    study, db = write_study(tmp_path / "study.toml"), tmp_path / "r.duckdb"
    first = cli("sweep", str(study), "--db", str(db), "--no-progress")
    assert first.returncode == 0, first.stderr
    # the same command with --duration 20s is another definition: refused, in one line
    again = cli("sweep", str(study), "--db", str(db), "--no-progress", "--duration", "20s")
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1, again.stderr
    assert "--new-revision" in again.stderr and "--replace" in again.stderr
    assert "base_scenario.duration_ns" in again.stderr  # what differs
    agg, note = aggregate_rows(db)
    assert agg["n"].tolist() == [2, 2]  # not 4: the 20 s runs were not added to the 10 s ones
    assert "pool revision 1 of 1" in note
    # asked for, the 20 s runs are revision 2; each revision aggregates its own runs only
    new = cli("sweep", str(study), "--db", str(db), "--no-progress", "--duration", "20s",
              "--new-revision")  # fmt: skip
    assert new.returncode == 0, new.stderr
    assert "revision 2" in new.stdout
    latest, note = aggregate_rows(db)
    assert "pool revision 2 of 2" in note
    assert latest["n"].tolist() == [2, 2] and latest["revision"].tolist() == [2, 2]
    old, note = aggregate_rows(db, "--revision", "1")
    assert "pool revision 1 of 2" in note and old["n"].tolist() == [2, 2]
    store = Store(db, create=False)
    assert set(store.runs("pool")["duration_s"]) == {20.0}
    assert set(store.runs("pool", 1)["duration_s"]) == {10.0}
    # the report is of one revision and says which
    r = cli("report", str(db), "--revision", "1", "-o", str(tmp_path / "r1.html"))
    assert r.returncode == 0 and "pool revision 1 of 2" in r.stderr
    assert "revision 1</h1>" in (tmp_path / "r1.html").read_text()


def test_edited_study_file_makes_a_revision_with_its_own_text_and_definition(
    tmp_path: Path,
) -> None:
    study, db = write_study(tmp_path / "study.toml"), tmp_path / "r.duckdb"
    assert cli("sweep", str(study), "--db", str(db), "--no-progress").returncode == 0
    write_study(study, '"reno", "cubic", "vegas"')  # an algorithm added, same [study] name
    refused = cli("sweep", str(study), "--db", str(db), "--no-progress")
    assert refused.returncode == 2 and "sweep.flows.0.cca" in refused.stderr, refused.stderr
    r = cli("sweep", str(study), "--db", str(db), "--no-progress", "--new-revision",
            "--duration", "5s")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert cli("report", str(db), "-o", str(tmp_path / "new.html")).returncode == 0
    assert (
        cli("report", str(db), "--revision", "1", "-o", str(tmp_path / "old.html")).returncode == 0
    )
    new, old = (tmp_path / "new.html").read_text(), (tmp_path / "old.html").read_text()
    # each report shows its own revision's file text, and the effective definition with
    # the command line's override in it (5 s), not the file's 10 s
    assert "&quot;vegas&quot;" in new and "&quot;vegas&quot;" not in old
    assert '"duration_ns": 5000000000' in new.replace("&quot;", '"')
    assert '"duration_ns": 10000000000' in old.replace("&quot;", '"')
    store = Store(db, create=False)
    assert store.revisions("pool")["runs"].tolist() == [4, 6]


def test_replace_discards_a_revision_but_keeps_runs_other_revisions_use(tmp_path: Path) -> None:
    base = {
        "duration": "5s",
        "bottleneck": {"rate": "4Mbps", "delay": "20ms", "queue": "1bdp"},
        "flows": [{"cca": "reno"}],
    }

    def study(name: str, ccas: list[str]) -> object:
        return study_from_dict({**base, "study": {"name": name}, "sweep": {"flows.0.cca": ccas}})

    store = Store(tmp_path / "r.duckdb")
    run_study(study("main", ["reno", "cubic", "hybla"]), store, progress=False)  # type: ignore[arg-type]
    run_study(study("other", ["cubic"]), store, progress=False)  # type: ignore[arg-type]
    ids = store.runs("main").set_index("flows.0.cca")["run_id"].to_dict()
    series = {cca: store.series_dir / f"{run_id}.parquet" for cca, run_id in ids.items()}
    assert all(path.exists() for path in series.values())
    with pytest.raises(Exception, match="--new-revision"):
        run_study(study("main", ["reno", "vegas"]), store, progress=False)  # type: ignore[arg-type]
    summary = run_study(
        study("main", ["reno", "vegas"]),  # type: ignore[arg-type]
        store,
        progress=False,
        on_change="replace",
    )
    assert (summary.revision, summary.ran, summary.skipped) == (1, 1, 1)  # vegas new, reno kept
    stored = {r[0] for r in store.query("SELECT run_id FROM runs")}
    # hybla was only in the discarded revision: gone, with its series; cubic is "other"'s
    assert ids["hybla"] not in stored and not series["hybla"].exists()
    assert ids["cubic"] in stored and series["cubic"].exists()
    assert ids["reno"] in stored
    assert sorted(store.runs("main")["flows.0.cca"]) == ["reno", "vegas"]
    assert store.runs("other")["flows.0.cca"].tolist() == ["cubic"]


# --- run identity: model version ---------------------------------------------------------


def test_runs_of_another_model_version_are_not_already_stored(tmp_path: Path) -> None:
    st = study_from_dict(
        {
            "duration": "5s",
            "study": {"name": "m"},
            "bottleneck": {"rate": "4Mbps", "delay": "20ms", "queue": "1bdp"},
            "flows": [{"cca": "reno"}],
            "sweep": {"flows.0.cca": ["reno", "cubic"]},
        }
    )
    store = Store(tmp_path / "r.duckdb")
    first = run_study(st, store, progress=False)
    assert (first.revision, first.ran, first.model_version) == (1, 2, _core.model_version())
    assert set(store.runs("m")["model_version"]) == {_core.model_version()}
    # the same study under the next model version: same definition, other runs
    bumped = _core.model_version() + 1
    grid = plan(st, bumped)
    assert store.stored_run_ids([spec.run_id for spec in grid]) == set()
    choice = store.open_revision(st.revision_plan(bumped), members(grid), Build.current())
    assert (choice.revision, choice.status, choice.stored) == (2, "model", frozenset())
    assert "model version" in choice.note
    # and the first revision still has its runs, under its model version
    assert len(store.runs("m", 1)) == 2 and store.runs("m", 2).empty


def test_old_database_is_upgraded_and_its_runs_never_count_as_stored(tmp_path: Path) -> None:
    from conftest import V1_SCHEMA

    st = study_from_dict(
        {
            "duration": "5s",
            "study": {"name": "old"},
            "bottleneck": {"rate": "4Mbps", "delay": "20ms", "queue": "1bdp"},
            "flows": [{"cca": "reno"}],
        }
    )
    spec = next(st.runs())
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute(V1_SCHEMA)
    # the old file holds this very run (same scenario hash and seed) for the same study
    con.execute(
        "INSERT INTO runs (scenario_hash, seed, n_flows, duration_s, series_file) "
        "VALUES (?, ?, 1, 5.0, 'x.parquet')",
        [spec.scenario_hash, spec.seed],
    )
    con.execute(
        "INSERT INTO study_runs VALUES ('old', ?, ?, '', '{}')", [spec.scenario_hash, spec.seed]
    )
    con.close()
    store = Store(path, create=False)
    summary = run_study(st, store, progress=False)
    assert (summary.ran, summary.skipped, summary.revision) == (1, 0, 2)
    assert "unknown model version" in summary.revision_note
    rows = store.query(
        "SELECT run_id, model_version FROM runs WHERE scenario_hash = ? ORDER BY run_id",
        [spec.scenario_hash],
    )
    assert rows == sorted(
        [
            (f"{spec.scenario_hash}-1-unknown", None),
            (f"{spec.scenario_hash}-1-m{_core.model_version()}", _core.model_version()),
        ]
    )
    assert store.runs("old")["model_version"].tolist() == [_core.model_version()]


# --- small promises: --plan, study-key errors, export formats ----------------------------


def test_sweep_key_typo_names_the_study_key_and_leaves_no_database(tmp_path: Path) -> None:
    study = write_study(tmp_path / "typo.toml")
    study.write_text(study.read_text().replace('"flows.0.cca"', '"flows.0.cac"'))
    db = tmp_path / "typo.duckdb"
    r = cli("sweep", str(study), "--db", str(db))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: sweep.flows.0.cac = \"reno\": unknown key 'cac'"), r.stderr
    assert "--set" not in r.stderr
    assert not db.exists() and not (tmp_path / "typo.duckdb.series").exists()
    # a variant's key is named as the variant's
    study.write_text(
        STUDY.format(ccas='"reno"')
        + '[[sweep.variants]]\nname = "fast"\nset = { "bottleneck.rat" = "8Mbps" }\n'
    )
    r = cli("sweep", str(study), "--db", str(db))
    assert r.returncode == 2 and "sweep.variants[0].set.bottleneck.rat" in r.stderr, r.stderr
    assert not db.exists()


def test_plan_prints_the_grid_and_counts_without_running(tmp_path: Path) -> None:
    study = tmp_path / "plan.toml"
    study.write_text(
        STUDY.format(ccas='"reno", "cubic"')
        + '[[sweep.variants]]\nname = "slow"\n'
        + '[[sweep.variants]]\nname = "fast"\nset = { "bottleneck.rate" = "8Mbps" }\n'
    )
    db = tmp_path / "plan.duckdb"
    r = cli("sweep", str(study), "--db", str(db), "--plan")
    assert r.returncode == 0, r.stderr
    # 2 algorithms x 2 variants x 2 repetitions = 8 runs
    assert "sweep flows.0.cca: 2 values: reno, cubic" in r.stdout
    assert "fast: bottleneck.rate = 8Mbps" in r.stdout
    assert "4 grid points x 2 repetitions (seeds 1..2) = 8 runs" in r.stdout
    assert "does not exist yet; 8 to simulate" in r.stdout
    assert not db.exists()
    assert cli("sweep", str(study), "--db", str(db), "--no-progress").returncode == 0
    r = cli("sweep", str(study), "--db", str(db), "--plan", "--repetitions", "3")
    assert "8 of 12 already stored" in r.stdout and "4 to simulate" in r.stdout, r.stdout


def test_export_format_follows_or_matches_the_file_extension(tmp_path: Path) -> None:
    study, db = write_study(tmp_path / "study.toml"), tmp_path / "r.duckdb"
    assert cli("sweep", str(study), "--db", str(db), "--no-progress").returncode == 0
    r = cli("results", str(db), "--format", "csv", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "the extension says json but --format is csv" in r.stderr
    assert not (tmp_path / "x.json").exists()
    assert cli("results", str(db), "-o", str(tmp_path / "x.txt")).returncode == 2
    # without --format the extension decides; each format carries the provenance
    for ext in ("json", "csv", "parquet"):
        out = tmp_path / f"x.{ext}"
        r = cli("results", str(db), "-o", str(out))
        assert r.returncode == 0, r.stderr
        frame, provenance = read_table(out)
        assert len(frame) == 4 and provenance["model_versions"] == [_core.model_version()]
        assert provenance["studies"][0]["revision"] == 1
        assert provenance["studies"][0]["definition"]["repetitions"] == 2
        assert {"run_id", "model_version", "git_commit", "host", "started_utc"} <= set(frame)
    assert (tmp_path / "x.csv").read_text().startswith("# table: ")
    json.loads((tmp_path / "x.json").read_text())["provenance"]  # one JSON document
    # `tcplab results` reads its own exports back, provenance included
    r = cli("results", str(tmp_path / "x.parquet"), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["rows"]) == 4 and doc["provenance"]["table"] == "runs"


def test_every_preset_study_has_an_effective_definition() -> None:
    from tcplab.study.presets import presets

    for paths in presets().values():
        for path in paths:
            st = load_study(path)
            plan_ = st.revision_plan(_core.model_version())
            definition = json.loads(plan_.definition_json)
            assert definition["repetitions"] == st.repetitions
            assert len(plan_.definition_hash) == 16
