"""Damaged, partial and foreign results databases: every one ends in a one-line user error
(exit 2), never an internal error, a traceback or a network access.

One small study is swept once; ~100 variants of its file are made from it (truncated at many
offsets, each block zeroed, bytes flipped, tables dropped, the schema version changed, the
series folder or files missing or damaged, foreign files) and each goes through
`tcplab results`, `tcplab report` (in this process: a subprocess per case would cost minutes)
and `Store(...)` with its readers.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from conftest import SMALL_STUDY
from tcplab.cli.main import main
from tcplab.database import SAFE_CONFIG, connect
from tcplab.errors import ScenarioError
from tcplab.study.store import Store, StoreError

#: DuckDB's file layout (storage version 64+): a 4 KiB main header, two 4 KiB database
#: headers, then 256 KiB blocks.
HEADERS_BYTES = 3 * 4096
BLOCK_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("good")
    (where / "study.toml").write_text(SMALL_STUDY, encoding="utf-8")
    db = where / "good.duckdb"
    code = main(["sweep", str(where / "study.toml"), "--db", str(db), "--no-progress"])
    assert code == 0
    return db


def _cli(*argv: str) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, err.getvalue()


def _variants(good: Path, into: Path) -> Iterator[tuple[str, Path]]:
    """(name, path) of each damaged copy of `good`, written under `into`."""
    data = good.read_bytes()
    series = good.with_name(good.name + ".series")

    def copy(name: str, content: bytes | None = None, *, with_series: bool = True) -> Path:
        path = into / f"{name}.duckdb"
        path.write_bytes(data if content is None else content)
        if with_series:
            shutil.copytree(series, into / f"{name}.duckdb.series")
        return path

    yield "without its series folder", copy("noseries", with_series=False)
    for offset in (0, 1, 8, 16, 64, 100, 512, 2048, 4095, 4096, 6000, 8192, 10000):
        yield f"truncated at {offset}", copy(f"trunc{offset}", data[:offset])
    for offset in (HEADERS_BYTES, HEADERS_BYTES + 1, 20000, 65536, 100000, 200000):
        yield f"truncated at {offset}", copy(f"trunc{offset}", data[:offset])
    for offset in range(HEADERS_BYTES + BLOCK_BYTES, len(data), BLOCK_BYTES):
        yield f"truncated at {offset}", copy(f"trunc{offset}", data[:offset])
    yield "truncated by one byte", copy("trunc-1", data[:-1])
    for start in (0, 4096, 8192, *range(HEADERS_BYTES, len(data), BLOCK_BYTES)):
        size = 4096 if start < HEADERS_BYTES else BLOCK_BYTES
        zeroed = bytearray(data)
        zeroed[start : start + size] = bytes(len(zeroed[start : start + size]))
        yield f"zeroed at {start}", copy(f"zero{start}", bytes(zeroed))
    rng = random.Random(22)
    for i in range(16):
        flipped = bytearray(data)
        for _ in range(8):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        yield f"bit flips {i}", copy(f"flip{i}", bytes(flipped))
    for table in ("meta", "runs", "flows", "links", "study_revisions", "revision_runs"):
        path = copy(f"drop-{table}")
        with contextlib.closing(duckdb.connect(str(path))) as con:
            con.execute(f"DROP TABLE {table}")
        yield f"without table {table}", path
    path = copy("drop-column")
    with contextlib.closing(duckdb.connect(str(path))) as con:
        con.execute("ALTER TABLE runs DROP COLUMN series_file")
    yield "without column runs.series_file", path
    for version in ("99", "0", "-1", "four", ""):
        path = copy(f"version{version}")
        with contextlib.closing(duckdb.connect(str(path))) as con:
            con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [version])
        yield f"schema version {version!r}", path
    path = copy("one-series-missing")
    next((into / "one-series-missing.duckdb.series").iterdir()).unlink()
    yield "one series file missing", path
    for name, content in (("empty", b""), ("truncated", b"PAR1\0\0"), ("text", b"x,y\n1,2\n")):
        path = copy(f"series-{name}")
        for f in (into / f"series-{name}.duckdb.series").iterdir():
            f.write_bytes(content)
        yield f"series files {name}", path
    path = copy("series-dirs")
    for f in (into / "series-dirs.duckdb.series").iterdir():
        f.unlink()
        f.mkdir()
    yield "series files are directories", path
    yield "empty file", copy("empty", b"", with_series=False)
    yield "random bytes", copy("random", rng.randbytes(300_000), with_series=False)
    yield "text", copy("text", b"name = 'not a database'\n", with_series=False)
    yield "DuckDB magic only", copy("magic", data[:16] + bytes(100), with_series=False)
    sqlite_path = into / "sqlite.duckdb"
    with contextlib.closing(sqlite3.connect(sqlite_path)) as lite:
        lite.execute("CREATE TABLE runs (a)")
        lite.commit()
    yield "a SQLite file", sqlite_path
    other = into / "other.duckdb"
    with contextlib.closing(duckdb.connect(str(other))) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    yield "another program's DuckDB file", other
    (into / "dir.duckdb").mkdir()
    yield "a directory", into / "dir.duckdb"
    yield "missing", into / "missing.duckdb"


def _store_reads(path: Path) -> None:
    """Everything a notebook reads through `Store`."""
    store = Store(path, create=False)
    runs = store.runs()
    for run_id in runs["run_id"]:
        store.series(str(run_id))


#: Variants `tcplab report` is run on too (a report of an intact study takes seconds).
REPORTED = (
    "without its series folder",
    "one series file missing",
    "truncated at 65536",
    "truncated by one byte",
    f"zeroed at {HEADERS_BYTES}",
    "without column runs.series_file",
    "a SQLite file",
    "a directory",
)


def _one_line(name: str, code: int, err: str) -> None:
    """Exit 0 (a damaged block nothing reads may go unnoticed), or the one-line error."""
    assert code in (0, 2), f"{name}: exit {code}: {err}"
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{name}: {err}"


def test_every_damaged_database_is_a_one_line_user_error(good: Path, tmp_path: Path) -> None:
    outcomes: dict[str, tuple[int, str]] = {}
    for name, path in _variants(good, tmp_path):
        code, err = _cli("results", str(path))
        _one_line(name, code, err)
        if name in REPORTED:
            report = _cli("report", str(path), "-o", str(tmp_path / "out.html"))
            _one_line(name, *report)
            assert report[0] == 2, name
        store, message = "ok", ""
        try:
            _store_reads(path)
        except StoreError as exc:
            store, message = "StoreError", str(exc)
        except ScenarioError as exc:  # a series file that cannot be read back
            store, message = "ScenarioError", str(exc)
        assert "\n" not in message
        outcomes[name] = (code, store)
    assert len(outcomes) >= 90, len(outcomes)
    # Whatever else is damaged must be noticed: only a block nobody reads may go unnoticed.
    # (`results` reads no series; `Store` reads them all.)
    for name, (code, store) in outcomes.items():
        if name.startswith(("zeroed at", "bit flips", "truncated at")):
            continue
        assert store != "ok", f"{name}: Store read it"
        if "series" not in name:
            assert code == 2, f"{name}: results exit {code}"
    # a file cut anywhere, or with its headers or first block zeroed, cannot be read
    for name in (
        "truncated at 0",
        "truncated at 65536",
        "zeroed at 0",
        f"zeroed at {HEADERS_BYTES}",
    ):
        assert outcomes[name] == (2, "StoreError"), name
    failed = sum(code == 2 for code, _ in outcomes.values())
    print(f"{len(outcomes)} damaged databases: {failed} refused in one line, none internal")


def test_connections_never_install_or_load_code() -> None:
    con = connect()
    try:
        settings = dict(
            con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name = ANY(?)",
                [list(SAFE_CONFIG)],
            ).fetchall()
        )
    finally:
        con.close()
    assert settings == {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_community_extensions": "false",
        "enable_external_access": "false",
        "lock_configuration": "true",
    }
    con = connect()
    try:
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET autoinstall_known_extensions = true")
    finally:
        con.close()


def _no_network() -> list[str]:
    """A prefix that runs a command without a network (a new network namespace), or [] when
    the machine cannot make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    for prefix in ([unshare, "-n"], [unshare, "-rn"]):
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0:
            return prefix
    return []


def test_sqlite_file_is_refused_without_network_or_extensions(tmp_path: Path) -> None:
    """DuckDB would download `sqlite_scanner` to read it; tcplab must not even try: no
    extension directory appears in a fresh HOME, the error names no download, and in a
    network namespace without a network the answer is the same one line."""
    path = tmp_path / "results.duckdb"
    with contextlib.closing(sqlite3.connect(path)) as con:
        con.execute("CREATE TABLE runs (a)")
        con.commit()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    lines = []
    for prefix in ([], _no_network()) if _no_network() else ([],):
        for argv in (["results", str(path)], ["report", str(path), "-o", str(tmp_path / "r.html")]):
            proc = subprocess.run(
                [*prefix, sys.executable, "-m", "tcplab", *argv],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
            assert proc.returncode == 2, proc.stderr
            assert len(proc.stderr.splitlines()) == 1, proc.stderr
            lines.append(proc.stderr.strip())
    assert len(set(lines)) == 1, lines
    assert lines[0].startswith(f"error: {path}: not a DuckDB database file")
    assert "download" not in lines[0].lower()
    assert not (home / ".duckdb").exists(), list(home.rglob("*"))


#: Runs a command as root without the capabilities that let root read any file, so file
#: modes apply (used when the tests run as root).
NO_DAC_OVERRIDE = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


def test_unreadable_database_is_a_user_error(good: Path, tmp_path: Path) -> None:
    db = tmp_path / "locked.duckdb"
    shutil.copy(good, db)
    db.chmod(0)
    prefix = NO_DAC_OVERRIDE if os.geteuid() == 0 else []
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "tcplab", "results", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {db}: permission denied"), proc.stderr
