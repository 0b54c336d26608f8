"""Provenance: what produced a number — which tcplab, which simulation model, which checkout,
on which host, when and how long it took.

Every run row of the results database, every exported file and every series file carries
these fields (docs/results.md "Provenance"):

- `tcplab_version`: the Python package's version;
- `model_version`: the simulation core's `MODEL_VERSION` (asked from the core, never written
  here), or None for runs stored before model versions existed;
- `git_commit`: the commit the package comes from, with `-dirty` when tracked files differed
  from it: asked from git in a checkout, recorded at build time in a wheel or sdist
  (`_build_info.json`); None when neither knows;
- `host`: the machine that ran the simulation (a Dask worker's, not the client's);
- `started_utc`: when the run started (ISO 8601, UTC); `wall_s`: how long the core took;
- `scenario_hash`, `seed`: the run's identity together with `model_version`.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from .. import __version__, _core

#: How long a `git` query may take before the commit is reported as unknown.
_GIT_TIMEOUT_S = 5.0
#: The Parquet key-value metadata key under which a file holds its provenance as JSON
#: (tables, series files, event logs: docs/results.md "Exported files").
PARQUET_KEY: Final = b"tcplab.results.provenance"
#: The package directory (python/tcplab in a source tree).
_PACKAGE_DIR: Final = Path(__file__).resolve().parents[1]
#: What a built package records of the tree it was built from (`packaging/dist.py` writes it
#: into the wheel and the sdist; a source tree has none and asks git instead).
BUILD_INFO_FILE: Final = "_build_info.json"


def _git(where: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(where), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _in_checkout(where: Path) -> bool:
    """Whether `where` is a package directory git tracks: a package file git does not track
    means this is not the checkout the code came from (an installed wheel, or a copy inside
    some unrelated repository)."""
    return _git(where, "ls-files", "--error-unmatch", "__init__.py") is not None


def build_info(package_dir: Path | None = None) -> dict[str, str] | None:
    """The source a built package was made from (`git_commit`, `git_describe`), as
    `packaging/dist.py` recorded it; None in a source tree or when unreadable."""
    path = (package_dir or _PACKAGE_DIR) / BUILD_INFO_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def git_commit(package_dir: Path | None = None) -> str | None:
    """The commit the running package comes from (`<sha>`, or `<sha>-dirty` when tracked
    files differed from it): asked from git in a checkout, else the commit a wheel or sdist
    recorded when it was built (for the package itself, `package_dir` None); None when
    neither knows (git missing, a copy that is no checkout)."""
    return _own_commit() if package_dir is None else _commit_of(package_dir, recorded=False)


@functools.cache
def _own_commit() -> str | None:
    """The running package's commit, asked once per process: three `git` processes cost
    ~20 ms, more than a short run's simulation, and the code a process runs is the code it
    imported, whatever the checkout becomes after."""
    return _commit_of(_PACKAGE_DIR, recorded=True)


def _commit_of(where: Path, *, recorded: bool) -> str | None:
    if not _in_checkout(where):
        info = build_info() if recorded else None
        return info.get("git_commit") if info else None
    sha = _git(where, "rev-parse", "HEAD")
    if not sha:
        return None
    dirty = _git(where, "status", "--porcelain", "--untracked-files=no")
    return f"{sha}-dirty" if dirty else sha


def git_describe(package_dir: Path | None = None) -> str | None:
    """The source as `git describe` names it: the nearest release tag, the commits since and
    the abbreviated commit (`v0.1.0-3-g1a2b3c4d5e6f`), or the abbreviated commit alone before
    the first tag; `-dirty` for a modified tree. From git in a checkout, else as recorded in
    a built package (like `git_commit`)."""
    where = package_dir or _PACKAGE_DIR
    if not _in_checkout(where):
        info = build_info() if package_dir is None else None
        return info.get("git_describe") if info else None
    return _git(
        where, "describe", "--tags", "--match", "v[0-9]*", "--always", "--dirty", "--abbrev=12"
    )


def utc_now() -> str:
    """The current time, ISO 8601 in UTC with seconds' fractions (e.g. 2025-01-31T12:00:00.5Z)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Build:
    """The software that computes: the same for every run of one process."""

    tcplab_version: str
    core_version: str
    model_version: int
    git_commit: str | None

    @classmethod
    def current(cls) -> Build:
        return cls(__version__, _core.core_version(), _core.model_version(), git_commit())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunProvenance:
    """Where and when one run was simulated (see the module note)."""

    host: str
    started_utc: str
    wall_s: float

    @classmethod
    def here(cls, started_utc: str, wall_s: float) -> RunProvenance:
        return cls(socket.gethostname(), started_utc, wall_s)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_provenance(
    build: Build, run: RunProvenance | None, scenario_hash: str, seed: int
) -> dict[str, Any]:
    """The provenance of one run as a flat JSON-ready dict (the keys of the module note)."""
    out: dict[str, Any] = {**build.to_dict(), "scenario_hash": scenario_hash, "seed": seed}
    out.update(run.to_dict() if run else {"host": None, "started_utc": None, "wall_s": None})
    return out
