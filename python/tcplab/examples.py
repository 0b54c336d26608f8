"""The examples shipped with tcplab: the scenario files, the study files, the traces they read
and the notebook (`tcplab examples list | copy DIR`).

In a source tree they are the repository's `scenarios/` directory itself; a wheel carries a
copy of it as `tcplab/examples/` (made by `make dist`). Trace files are named relative to the
scenario file that reads them, so a copied directory runs as it is.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .errors import ScenarioError

#: python/tcplab/examples.py → the package directory, and the repository root in a source tree
_PACKAGE_DIR: Final = Path(__file__).resolve().parent
_REPO_EXAMPLES: Final = _PACKAGE_DIR.parents[1] / "scenarios"

#: what an example is, by where it lies (first match wins)
_KINDS: Final = (
    ("studies/*.toml", "study"),
    ("traces/*", "trace"),
    ("*.toml", "scenario"),
    ("*.ipynb", "notebook"),
    ("README.md", "reference"),
)


@dataclass(frozen=True)
class Example:
    """One shipped file: its path relative to the examples directory, its kind (scenario,
    study, trace, notebook, reference) and what it shows (from the file's opening comment or
    its `[study] description`)."""

    name: str
    kind: str
    description: str
    path: Path


def examples_dir() -> Path:
    """The directory the examples are read from: the package's `examples/` in a wheel, the
    repository's `scenarios/` in a source tree."""
    packaged = _PACKAGE_DIR / "examples"
    if packaged.is_dir():
        return packaged
    if _REPO_EXAMPLES.is_dir():
        return _REPO_EXAMPLES
    raise ScenarioError(
        f"{packaged}: this installation has no examples; allowed: a wheel built by "
        "`make dist`, or a source tree (its scenarios/ directory)"
    )


def _kind(relative: Path) -> str | None:
    return next((kind for pattern, kind in _KINDS if relative.match(pattern)), None)


def _description(path: Path, kind: str) -> str:
    """The first sentence-bearing line of the file's opening comment; a study's
    `[study] description` when it has one."""
    if kind == "trace":
        return "trace file read by a scenario"
    if kind == "reference":
        return "every scenario key: units, defaults, allowed values"
    if kind == "notebook":
        return "run a scenario and a sweep from Python; pandas, a figure, theory"
    text = path.read_text(encoding="utf-8")
    if kind == "study":
        try:
            study = tomllib.loads(text).get("study", {})
        except tomllib.TOMLDecodeError:
            study = {}
        if isinstance(study, dict) and isinstance(study.get("description"), str):
            return str(study["description"])
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        words = stripped.lstrip("#").strip()
        if words:
            return words
    return ""


def examples() -> list[Example]:
    """Every shipped example, scenarios first, each group in name order."""
    root = examples_dir()
    found: list[Example] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        kind = _kind(relative) if path.is_file() else None
        if kind is not None:
            found.append(Example(relative.as_posix(), kind, _description(path, kind), path))
    order = ["scenario", "study", "notebook", "trace", "reference"]
    return sorted(found, key=lambda e: (order.index(e.kind), e.name))


def copy_examples(destination: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Copy every example into `destination` (created if missing), keeping the layout, so
    relative trace names still resolve. An existing file is not replaced unless `overwrite`:
    the copy stops before writing anything, naming the first such file."""
    target = Path(destination)
    if target.exists() and not target.is_dir():
        raise ScenarioError(f"DIR = {str(target)!r}: is a file; allowed: a directory")
    chosen = examples()
    if not overwrite:
        clash = next((e for e in chosen if (target / e.name).exists()), None)
        if clash is not None:
            raise ScenarioError(
                f"DIR = {str(target)!r}: {clash.name} exists there; allowed: another "
                "directory, or --force to replace the examples' files"
            )
    written = []
    try:
        for example in chosen:
            out = target / example.name
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(example.path, out)
            written.append(out)
    except OSError as exc:
        raise ScenarioError(f"DIR = {str(target)!r}: cannot write: {exc.strerror}") from None
    return written
