"""Record the kernel-run fixtures of tests/test_matrix.py (needs root; ~40 s per case).

    .venv/bin/python tests/data/kernel/record_matrix.py [--db FILE]

Runs the cases of `FIXTURES` through `tcplab validate --matrix`'s own machinery (cases,
emulation, cache; a case already in `--db` under this machine's identity is not emulated
again) and writes each kernel run as `<cca>-<path>-per<PER>-seed<N>-<D>s.json`:
`{"case": {cca, path, per, seed, duration}, "identity": {kernel_release, emulator,
tcplab_version}, "created", "producer", "notes", "scenario": the effective normalized
scenario, "result": the result JSON (per-second series included; `RunResult.from_json` reads
it)}`. The raw iperf3 recording stays in the cache only (it would make each file ~0.5 MB).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tcplab.realstack import matrix
from tcplab.realstack.emulate import emulate_normalized
from tcplab.realstack.kernel_cache import KernelCache, current_identity
from tcplab.realstack.options import EmulateOptions

HERE = Path(__file__).resolve().parent
DURATION = "30s"
#: (cca, path, PER, seed)
FIXTURES = (
    ("cubic", "geo", 0.0, 1),
    ("cubic", "geo", 1e-3, 1),
    ("cubic", "geo", 1e-3, 2),
    ("reno", "geo", 0.0, 1),
    ("reno", "geo", 1e-3, 1),
    ("bbr", "terrestrial", 1e-3, 1),
)


def fixture_name(cca: str, path: str, per: float, seed: int, duration: str) -> str:
    return f"{cca}-{path}-per{per:g}-seed{seed}-{duration}.json"


def record(db: Path) -> None:
    identity = current_identity()
    cases = [
        case
        for cca, path, per, seed in FIXTURES
        for case in matrix.cases([cca], [path], [per], seed, DURATION)
        if case.seed == seed
    ]
    options = EmulateOptions(link="emu", note=lambda m: print(f"note: {m}", file=sys.stderr))
    with KernelCache(db) as cache:
        matrix.run_matrix(
            cases,
            cache,
            identity,
            emulate=lambda normalized: emulate_normalized(normalized, options),
            progress=lambda m: print(m, file=sys.stderr),
        )
        for case in cases:
            stored = cache.get(case.key(identity))
            assert stored is not None
            doc = {
                "case": {
                    "cca": case.cca,
                    "path": case.path,
                    "per": case.per,
                    "seed": case.seed,
                    "duration": DURATION,
                },
                "identity": identity.to_json_dict(),
                "created": stored.created.isoformat(timespec="seconds") + "Z",
                "producer": stored.producer,
                "notes": list(stored.notes),
                "scenario": case.normalized,
                "result": stored.result_data,
            }
            name = fixture_name(case.cca, case.path, case.per, case.seed, DURATION)
            (HERE / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
            print(f"recorded {name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--db", type=Path, help="kernel-run cache to use (default: a temporary one)"
    )
    args = parser.parse_args()
    if args.db is not None:
        record(args.db)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            record(Path(tmp) / "record.duckdb")
