"""The core's profile for profile-guided optimization (PGO): `make pgo` makes it, `make build`
compiles the extension with it.

    python -m tcplab.tools.pgo            # build an instrumented core, run the training, merge
    python -m tcplab.tools.pgo --check    # exit 1 when the sources changed since the profile

A compiler that knows which branches a run takes and which functions it calls most lays
out and inlines the hot paths for them; on this simulator that took 15-30 % of the CPU time
off a GEO study's runs (README, "Benchmark"). Only the code's layout changes: the
arithmetic and its order are the same, so results are bit-identical with or without the
profile (the golden results are checked on the profiled build).

The training is the work users give the core: every golden case (each shipped scenario and
each preset study's first point: all link kinds, AQMs, Wi-Fi, PEPs, cross traffic and the
algorithms they name), the `geo-leaky` study's three paths for each of its algorithms at a
clean and a lossy point (60 s each), a 1,000-flow dumbbell, and the GEO run of `make
bench`'s tracing line with both captures and the event log (60 s): code no training run
reaches is laid out as cold, and tracing would then pay for it. The simulations are
deterministic, so a second training counts the same, except in the extension's checks for
Ctrl-C while a run goes on, which follow the wall clock (a few dozen counts of `pyo3`'s
functions differ between two machines).

The profile (`packaging/pgo/tcplab.profdata`, LLVM's indexed format, which rustc reads) is
kept in the repository, so a clone builds the optimized core without training it; beside it
`profile.json` records the hash of the sources it was trained on, which `--check` (part of
`make lint`) compares with the tree. A stale profile still builds a correct core: the compiler
ignores what no longer matches, and the code that changed runs unprofiled.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from ..errors import ScenarioError
from .golden import cases, repo_root

#: Where the profile and its record live, relative to the checkout.
PROFILE: Final = Path("packaging/pgo/tcplab.profdata")
RECORD: Final = Path("packaging/pgo/profile.json")
#: What the profile depends on: the extension's Rust sources and its build settings.
SOURCES: Final = ("crates/core/src", "crates/py/src")
BUILD_FILES: Final = ("Cargo.toml", "Cargo.lock", "crates/core/Cargo.toml", "crates/py/Cargo.toml")
#: The preset study whose runs a study sweep spends its time in, and its training points.
STUDY: Final = "geo-leaky"
STUDY_DURATION: Final = "60s"
STUDY_PER_POINTS: Final = (0, 8)  # the cleanest and a lossy point of its 16
#: The many-flow point (the `make bench` scaling table's 1,000 flows, shorter).
MANY_FLOWS: Final = (1000, "1Gbps", "5s")
#: How long the traced training run lasts (`trace_bench`'s scenario, traced as it is there).
TRACED_DURATION: Final = "60s"
#: How a training run is made, as its users make it: `tcplab run`, a sweep's worker (series
#: streamed to a file), or a traced run (captures and event log written to files).
RUN, SWEEP, TRACE = "run", "sweep", "trace"


def sources_sha256(root: Path) -> str:
    """Hash of every file the profile was trained from (path and content, in path order)."""
    files = [root / f for f in BUILD_FILES]
    for d in SOURCES:
        files.extend(sorted((root / d).rglob("*.rs")))
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def training(root: Path) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, normalized scenario, how it is run: `RUN`, `SWEEP` or `TRACE`) of every
    training run."""
    from ..scenario.load import load_scenario
    from ..scenario.normalize import normalize
    from ..study.grid import load_study
    from .demo import builtin_scenario
    from .scaling import dumbbell
    from .trace_bench import OVERRIDES as TRACED

    for case in cases(root):
        yield case.name, case.scenario, RUN
    path = root / "python" / "tcplab" / "study" / "published" / f"{STUDY}.toml"
    study = load_study(path)
    per_values = next(a.values for a in study.axes if a.path == "bottleneck.per")
    picked = {per_values[i] for i in STUDY_PER_POINTS}
    for variant, params in study.points():
        if params["bottleneck.per"] not in picked:
            continue
        pairs = [
            *variant.overrides,
            *params.items(),
            ("seed", study.base_seed),
            ("duration", STUDY_DURATION),
        ]
        label = ",".join(f"{k}={v}" for k, v in params.items())
        scenario = normalize(load_scenario(study.base, pairs, base_dir=path.parent))
        yield f"{STUDY}:{variant.name}:{label}", scenario, SWEEP
    flows, rate, duration = MANY_FLOWS
    yield f"dumbbell-{flows}", dumbbell(flows, rate, duration), SWEEP
    geo = load_scenario(builtin_scenario("geo-sat.toml"), [*TRACED, ("duration", TRACED_DURATION)])
    yield "geo-4mbps traced", normalize(geo), TRACE


def _rustc_host() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def _profdata_tool(host: str) -> Path:
    sysroot = subprocess.run(
        ["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.is_file():
        raise ScenarioError(
            f"{tool}: not found; allowed: install it with `rustup component add llvm-tools` "
            "(`make pgo` does)"
        )
    return tool


def _build_instrumented(root: Path, host: str, target_dir: Path, out: Path) -> Path:
    """The extension as `make build` compiles it (maturin, the same crate features and
    target, hence the same symbol and module names the profile is keyed by), compiled to
    count what it executes. Where it writes the counts is set per run; a fixed path here
    keeps the build, and the binary's identity that the profile records, the same from one
    training to the next."""
    env = dict(
        os.environ,
        RUSTFLAGS=f"-Cprofile-generate={target_dir / 'raw'}",
        CARGO_BUILD_TARGET=host,
    )
    # The host's own linker: this library only runs here, and the portable builds' zig
    # front end (packaging/zig-cc) does not take the profiler's `-u __llvm_profile_runtime`.
    env.pop(f"CARGO_TARGET_{host.upper().replace('-', '_')}_LINKER", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "maturin",
            "build",
            "--release",
            "-q",
            "--interpreter",
            sys.executable,
            "--compatibility",
            "linux",
            "--target-dir",
            str(target_dir),
            "-o",
            str(out),
        ],
        cwd=root,
        env=env,
        check=True,
    )
    wheel = next(out.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        member = next(n for n in z.namelist() if n.startswith("tcplab/_core."))
        target = out / "_core.so"
        target.write_bytes(z.read(member))
    return target


#: A training worker: loads the instrumented extension by path and runs the scenarios whose
#: files it is given (the counts are written when the process exits), each through the call
#: its users make: a study's runs stream their series to a file, as a sweep's workers do.
_WORKER: Final = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("_core", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
for path in sys.argv[2:]:
    with open(path) as f:
        text = f.read()
    how = os.path.basename(path).split("-", 1)[0]
    if how == "sweep":
        core.run_json_series(text, path + ".series")
    elif how == "trace":
        out = path + ".trace"
        os.mkdir(out)
        spec = {"pcap_dir": out, "events_path": os.path.join(out, "events.raw")}
        core.run_traced_json(text, json.dumps(spec))
    else:
        core.run_json(text)
"""


def _run(extension: Path, scenario_paths: list[Path], raw: Path) -> None:
    env = dict(os.environ, LLVM_PROFILE_FILE=str(raw / "%m-%p.profraw"))
    subprocess.run(
        [sys.executable, "-c", _WORKER, str(extension), *map(str, scenario_paths)],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )


def make_profile(root: Path, jobs: int) -> tuple[int, Path]:
    """Train and write the profile and its record; returns (training runs, profile path)."""
    host = _rustc_host()
    tool = _profdata_tool(host)
    target_dir = root / "target" / "pgo-train"
    with tempfile.TemporaryDirectory(prefix="tcplab-pgo-") as tmp:
        work = Path(tmp)
        (work / "raw").mkdir()
        extension = _build_instrumented(root, host, target_dir, work / "wheel")
        runs = list(training(root))
        paths = []
        for i, (_, scenario, how) in enumerate(runs):
            p = work / f"{how}-{i:03d}.json"
            p.write_text(json.dumps(scenario))
            paths.append(p)
        # dealt round-robin: each worker gets a share of the long runs
        shares = [paths[i::jobs] for i in range(jobs)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(lambda share: _run(extension, share, work / "raw"), shares))
        out = root / PROFILE
        out.parent.mkdir(parents=True, exist_ok=True)
        raws = sorted(str(p) for p in (work / "raw").glob("*.profraw"))
        subprocess.run([str(tool), "merge", "--sparse", "-o", str(out), *raws], check=True)
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True, check=True)
    record = {
        "sources_sha256": sources_sha256(root),
        "rustc": rustc.stdout.strip(),
        "training_runs": [name for name, _, _ in runs],
    }
    (root / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return len(runs), out


def check(root: Path) -> str | None:
    """Why the profile does not match the sources, or None when it does."""
    record_path = root / RECORD
    if not (root / PROFILE).is_file() or not record_path.is_file():
        return f"{PROFILE}: missing; make it with `make pgo`"
    try:
        recorded = json.loads(record_path.read_text())["sources_sha256"]
    except (ValueError, KeyError, TypeError):
        return f"{RECORD}: unreadable (no sources_sha256); make it again with `make pgo`"
    if recorded != sources_sha256(root):
        return (
            f"{PROFILE}: trained on other sources than these ({', '.join(SOURCES)}, "
            "the Cargo files); refresh it with `make pgo` and commit it"
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcplab.tools.pgo", description=__doc__)
    ap.add_argument("--check", action="store_true", help="only check the profile is current")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="training runs at once")
    args = ap.parse_args(argv)
    try:
        root = repo_root()
        if args.check:
            problem = check(root)
            if problem is not None:
                print(f"error: {problem}", file=sys.stderr)
                return 1
            print(f"{PROFILE}: current")
            return 0
        if shutil.which("cargo") is None:
            raise ScenarioError("cargo: not found; allowed: a Rust toolchain on PATH")
        n, out = make_profile(root, max(1, args.jobs))
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(
            f"error: {' '.join(map(str, e.cmd[:3]))}… failed (exit {e.returncode})", file=sys.stderr
        )
        return 2
    print(f"{out.relative_to(root)}: {n} training runs, {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
