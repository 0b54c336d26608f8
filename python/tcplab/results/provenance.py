"""Provenance: what produced a number — which tcplab, which simulation model, which checkout,
on which host, when and how long it took.

Every run row of the results database, every exported file and every series file carries
these fields (docs/results.md "Provenance"):

- `tcplab_version`: the Python package's version;
- `model_version`: the simulation core's `MODEL_VERSION` (asked from the core, never written
  here), or None for runs stored before model versions existed;
- `git_commit`: the commit of the checkout the package runs from, with `-dirty` when tracked
  files differ from it; None for an installed package (not a checkout);
- `host`: the machine that ran the simulation (a Dask worker's, not the client's);
- `started_utc`: when the run started (ISO 8601, UTC); `wall_s`: how long the core took;
- `scenario_hash`, `seed`: the run's identity together with `model_version`.
"""

from __future__ import annotations

import datetime as _dt
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import __version__, _core

#: How long a `git` query may take before the commit is reported as unknown.
_GIT_TIMEOUT_S = 5.0


def git_commit(package_dir: Path | None = None) -> str | None:
    """The commit of the checkout this package runs from (`<sha>` or `<sha>-dirty`), or None
    when the package is not a tracked part of a git checkout (an installed wheel, or a copy
    inside some unrelated repository) or git is missing."""
    where = package_dir or Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
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

    # a package file git does not track means this is not the checkout the code came from
    if git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    sha = git("rev-parse", "HEAD")
    if not sha:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"{sha}-dirty" if dirty else sha


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
