"""Golden results: the core's exact answer for every shipped scenario and study, so a change
of the simulator's numbers cannot go unnoticed (and unversioned).

    python -m tcplab.tools.golden                      # compare; exit 1 when anything differs
    python -m tcplab.tools.golden --update             # after bumping MODEL_VERSION
    python -m tcplab.tools.golden --update --reason "flows[1] of two-flows.toml starts later"

Cases: every `scenarios/*.toml`, and the first grid point of every preset study
(`python/tcplab/study/published`), each run with its own seed for at most 30 s of simulated time (or
until 10 s after its last flow starts, if that is later). A golden file
`tests/golden/<case>.json` holds the model version, the normalized scenario and the core's
result JSON without its volatile fields (`core_version`, the crate's release number).
`MANIFEST.json` records the model version the files were made with and why they last changed.

`--update` rewrites the files only when that is legitimate: the core's MODEL_VERSION differs
from the manifest's (the numbers were declared changed), or `--reason` says why they change
without a bump (e.g. a scenario file was edited: its run key changes with it). New cases are
added and vanished ones removed without either. Otherwise it refuses, naming the cases that
differ: a change of results under the same model version would let stale stored runs count
as "already stored".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .. import _core
from ..errors import ScenarioError
from ..scenario.load import load_scenario
from ..scenario.normalize import normalize
from ..study.grid import load_study

#: Simulated time of a golden run: at most this, unless a flow starts late (see the note).
MAX_DURATION_NS: Final = 30 * 10**9
AFTER_LAST_START_NS: Final = 10 * 10**9
#: Fields of the core's result that change without the numbers changing.
VOLATILE: Final = ("core_version",)
MANIFEST: Final = "MANIFEST.json"


def repo_root() -> Path:
    """The checkout this package runs from (the goldens and scenarios live beside it)."""
    root = Path(__file__).resolve().parents[3]
    if not (root / "scenarios").is_dir() or not (root / "tests").is_dir():
        raise ScenarioError(
            f"{root}: not a tcplab checkout (no scenarios/ and tests/); allowed: run from a "
            "source checkout installed with `make build`"
        )
    return root


def default_dir() -> Path:
    return repo_root() / "tests" / "golden"


@dataclass(frozen=True)
class Case:
    """One golden run: a scenario (a file, or a study's first grid point) with overrides."""

    name: str
    source: str
    scenario: dict[str, Any]

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(_core.run_json(json.dumps(self.scenario)))
        for key in VOLATILE:
            out.pop(key, None)
        return out

    def document(self) -> dict[str, Any]:
        return {
            "case": self.name,
            "source": self.source,
            "model_version": _core.model_version(),
            "scenario": self.scenario,
            "result": self.result(),
        }


def golden_duration_ns(normalized: dict[str, Any]) -> int:
    last_start = max((int(f.get("start_ns", 0)) for f in normalized["flows"]), default=0)
    limit = max(MAX_DURATION_NS, last_start + AFTER_LAST_START_NS)
    return min(int(normalized["duration_ns"]), limit)


def _shortened(source: Any, pairs: list[tuple[str, Any]], base_dir: Path) -> dict[str, Any]:
    normalized = normalize(load_scenario(source, pairs, base_dir=base_dir))
    duration_ns = golden_duration_ns(normalized)
    if duration_ns != normalized["duration_ns"]:
        pairs = [*pairs, ("duration", f"{duration_ns // 10**6}ms")]
        normalized = normalize(load_scenario(source, pairs, base_dir=base_dir))
    return normalized


def cases(root: Path | None = None) -> list[Case]:
    """Every golden case, in name order."""
    root = root or repo_root()
    out = []
    for path in sorted((root / "scenarios").glob("*.toml")):
        normalized = _shortened(path, [], path.parent)
        out.append(Case(f"scenario-{path.stem}", f"scenarios/{path.name}", normalized))
    studies = root / "python" / "tcplab" / "study" / "published"
    for path in sorted(studies.rglob("*.toml")):
        study = load_study(path)
        variant, params = next(study.points())
        pairs = [*variant.overrides, *params.items(), ("seed", study.base_seed)]
        normalized = _shortened(study.base, pairs, path.parent)
        out.append(Case(f"study-{study.name}", str(path.relative_to(root)), normalized))
    return sorted(out, key=lambda c: c.name)


def documents(selected: Sequence[Case]) -> dict[str, dict[str, Any]]:
    """The golden document of each case (run in parallel: the core releases the GIL)."""
    with ThreadPoolExecutor() as pool:
        docs = list(pool.map(Case.document, selected))
    return {case.name: doc for case, doc in zip(selected, docs, strict=True)}


def text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def first_difference(old: Any, new: Any, where: str = "") -> str | None:
    """The path of the first field where two JSON values differ (None: equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{where}.{key}".lstrip(".")
            found = first_difference(old[key], new[key], f"{where}.{key}")
            if found:
                return found.lstrip(".")
        return None
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return f"{where} (length {len(old)} -> {len(new)})".lstrip(".")
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    if old != new or type(old) is not type(new):
        return f"{where}: {old!r} -> {new!r}".lstrip(".")
    return None


def verdict(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why a golden document no longer holds (None: it does), in one line."""
    if old.get("scenario") != new["scenario"]:
        where = first_difference(old.get("scenario"), new["scenario"], "scenario")
        return (
            f"{new['case']}: the normalized scenario changed ({where}); its run key changes "
            "with it: regenerate with `python -m tcplab.tools.golden --update --reason ...`"
        )
    if old.get("model_version") != new["model_version"]:
        return (
            f"{new['case']}: golden made with MODEL_VERSION {old.get('model_version')}, the "
            f"core has {new['model_version']}: regenerate with "
            "`python -m tcplab.tools.golden --update`"
        )
    if old.get("result") != new["result"]:
        where = first_difference(old.get("result"), new["result"], "result")
        return (
            f"{new['case']}: results changed: bump MODEL_VERSION and regenerate "
            f"(crates/core/src/model.rs, then `python -m tcplab.tools.golden --update`); "
            f"first difference: {where}"
        )
    return None


def read_dir(directory: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The manifest ({} if none) and the golden documents of `directory`."""
    manifest_path = directory / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    docs = {
        p.stem: json.loads(p.read_text())
        for p in sorted(directory.glob("*.json"))
        if p.name != MANIFEST
    }
    return manifest, docs


def update(directory: Path, reason: str | None, selected: Sequence[Case]) -> list[str]:
    """Rewrite the goldens if allowed (see the module note); returns what was done."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest, old = read_dir(directory)
    new = documents(selected)
    model = _core.model_version()
    recorded = manifest.get("model_version")
    changed = sorted(n for n in new if n in old and text(old[n]) != text(new[n]))
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    bumped = recorded is not None and recorded < model
    if changed and not bumped and not reason:
        shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
        raise ScenarioError(
            f"--update: {len(changed)} golden results differ under MODEL_VERSION {model} "
            f"({shown}); allowed: bump MODEL_VERSION in crates/core/src/model.rs, or "
            "--reason TEXT when the numbers change without a model change"
        )
    for name in [*changed, *added]:
        (directory / f"{name}.json").write_text(text(new[name]))
    for name in removed:
        (directory / f"{name}.json").unlink()
    why = reason or (f"MODEL_VERSION {recorded} -> {model}" if bumped else manifest.get("reason"))
    manifest_text = text(
        {"model_version": model, "reason": why or "first recording", "cases": sorted(new)}
    )
    manifest_path = directory / MANIFEST
    if not manifest_path.exists() or manifest_path.read_text() != manifest_text:
        manifest_path.write_text(manifest_text)
    return [
        *(f"updated {n}" for n in changed),
        *(f"added {n}" for n in added),
        *(f"removed {n}" for n in removed),
    ]


def check(directory: Path, selected: Sequence[Case]) -> Iterator[str]:
    """One line per golden that does not hold (missing and extra files included)."""
    _, old = read_dir(directory)
    new = documents(selected)
    for name in sorted(set(new) | set(old)):
        if name not in old:
            yield f"{name}: no golden file: add it with `python -m tcplab.tools.golden --update`"
        elif name not in new:
            yield f"{name}: golden file of no case: remove it with --update"
        else:
            problem = verdict(old[name], new[name])
            if problem:
                yield problem


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tcplab.tools.golden", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    parser.add_argument("--reason", help="why results change without a MODEL_VERSION bump")
    parser.add_argument("--dir", type=Path, default=None, help="golden directory (tests/golden)")
    args = parser.parse_args(argv)
    try:
        directory = args.dir or default_dir()
        selected = cases()
        if args.update:
            done = update(directory, args.reason, selected)
            print("\n".join(done) if done else "golden results unchanged")
            return 0
        problems = list(check(directory, selected))
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    if not problems:
        print(f"{len(selected)} golden results hold (MODEL_VERSION {_core.model_version()})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
