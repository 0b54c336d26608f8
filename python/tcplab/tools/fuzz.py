"""Structure-aware fuzzing of the input boundary: scenario and study files and the CLI.

Each case starts from a shipped scenario or study (every section of the format appears in one
of them), mutates it where the scenario schema says keys are (values of the right kind, of the
wrong kind, hostile ones: deep nesting, integers of thousands of digits, huge strings and
exponents), sometimes garbles the TOML text itself, and runs a command line built from the
options of `run`, `check`, `sweep`, `results` and `ccas` with mutated arguments. The contract:

* exit 0, with one valid JSON document on stdout when the command prints JSON; for a run,
  bytes delivered <= bytes sent, goodput <= the path's capacity, utilization <= 1, no negative
  counter, and the same result when run again (determinism);
* or exit 2 with at most 3 lines on stderr, the first `error: `;
* never exit 1 or any other status, never a traceback, never longer than `CASE_LIMIT_S`.

Cases run in this process through `cli.main` (cheap); every `SUBPROCESS_EVERY`-th runs as
`python -m tcplab` under a hard timeout, so the process-level contract is checked too.
Valid inputs that would take long to simulate are only checked (`tcplab check`): refusing an
expensive run is the resource budget's job, not the input boundary's.

    python -m tcplab.tools.fuzz --cases 10000 [--seed 1]     (make fuzz FUZZ_CASES=10000)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: A case (one command) that takes longer than this failed ("never a timeout").
CASE_LIMIT_S: Final = 60.0
#: One case in this many runs in a subprocess.
SUBPROCESS_EVERY: Final = 50
#: What a run may cost to be simulated here: bits through the fastest link, flows, seconds.
RUN_BUDGET_BITS: Final = 4e8
RUN_BUDGET_FLOWS: Final = 40
RUN_BUDGET_S: Final = 120.0
#: Keys of a run's JSON that differ between two identical runs (time and place of the run).
_UNSTABLE: Final = frozenset({"wall_s", "events_per_wall_s", "started_utc", "host"})


class Raw(str):
    """TOML text put into a document as it is (what a dict cannot hold)."""


def _toml_value(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def _toml_key(key: str) -> str:
    return json.dumps(str(key))


def to_toml(doc: dict[str, Any]) -> str:
    """A document as TOML text: one line per top-level key, inline tables below it."""
    return "".join(f"{_toml_key(k)} = {_toml_value(v)}\n" for k, v in doc.items())


DURATIONS: Final = (
    "1ms", "20ms", "250ms", "1s", "2s", "5s", "0s", "-1s", "1e99999999s", "1e-99999999s",
    "0.5us", "30d", "600", "1min", "3601s", "1e-30s", "nans", "inf s", "2592001s", "1e3ms",
    "100 ms", "1.5s", "7ns", "  2s  ",
)  # fmt: skip
RATES: Final = (
    "1kbps", "100kbps", "1Mbps", "4Mbps", "10Mbps", "100Mbps", "0bps", "1e30Mbps", "10MBps",
    "-5Mbps", "20Tbps", "10Tbps", "1.5Mbit/s", "1e999999999Gbps", "3bps",
)  # fmt: skip
SIZES: Final = (1500, "64KB", "1MiB", 0, -1, "1e40B", "100kb", 2**40, "2bdp", "100pkts", "1pkt")
NUMBERS: Final = (
    0, 1, -1, 2, 10, 0.5, 1e-4, 1e-2, 0.99, 1e308, math.inf, -math.inf, math.nan, 2**63 - 1,
    2**64 - 1, -(2**63), 4.5, 1024, 100_001,
)  # fmt: skip
STRINGS: Final = (
    "", "reno", "cubic", "bbr", "lp", "veno", "x", "linux", "ns2", "bulk", "file", "cbr",
    "red", "codel", "droptail", "\u0000", "../../nope", "=flows.0.cca", "é", "traces/cell.down",
    "traces/leo-pass.csv", "satellite",
)  # fmt: skip


def _hostile(rng: random.Random) -> Any:
    depth = rng.choice((17, 200, 3000))
    return rng.choice(
        (
            Raw("[" * depth + "]" * depth),
            Raw("{a = " * min(depth, 500) + "1" + "}" * min(depth, 500)),
            Raw("9" * rng.choice((21, 4400, 6000))),
            Raw("-" + "1" * 30),
            "y" * rng.choice((4097, 100_000)),
            list(range(rng.choice((5, 100_001)))),
            {f"k{i}": i for i in range(rng.choice((3, 50)))},
            Raw("1e999999999"),
            Raw('"""multi\nline"""'),
        )
    )


def _value_like(rng: random.Random, old: Any) -> Any:
    """A value of the kind `old` is (mostly valid), sometimes any other kind."""
    roll = rng.random()
    if roll < 0.08:
        return _hostile(rng)
    if roll < 0.25:
        pool = rng.choice((DURATIONS, RATES, SIZES, NUMBERS, STRINGS, (True, False)))
        return rng.choice(pool)
    if isinstance(old, bool):
        return not old
    if isinstance(old, int | float):
        return rng.choice((old * rng.choice((0.5, 2, 10, 0.1, -1)), *NUMBERS))
    if isinstance(old, str):
        low = old.lower()
        for units, pool in (
            (("ms", "us", "ns", "s", "min"), DURATIONS),
            (("bps", "bit/s"), RATES),
            (("b", "bdp", "pkts"), SIZES),
        ):
            if low.endswith(units):
                return rng.choice(pool)
        return rng.choice(STRINGS)
    if isinstance(old, list):
        return [_value_like(rng, v) for v in old[: rng.randint(0, len(old))]]
    return rng.choice(NUMBERS + STRINGS)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


def _get(doc: Any, path: Sequence[Any]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _schema_keys(path: Sequence[Any]) -> list[str]:
    """The keys the scenario schema has at `path` (a table), or none."""
    from ..scenario.schema import keys_of, model_at

    loc = tuple(p for p in path if not isinstance(p, int))
    try:
        model = model_at(loc)
    except (KeyError, TypeError, ValueError, AttributeError):
        return []
    return list(keys_of(model)) if model is not None else []


def mutate(rng: random.Random, doc: dict[str, Any]) -> None:
    """One structure-aware change of `doc` in place."""
    paths = list(_paths(doc))
    op = rng.random()
    if op < 0.45 and paths:  # a value of its kind (or not)
        path = rng.choice(paths)
        parent = _get(doc, path[:-1])
        parent[path[-1]] = _value_like(rng, parent[path[-1]])
    elif op < 0.7:  # a key the schema knows (or an unknown one) in some table
        tables = [p for p in paths if isinstance(_get(doc, p), dict)]
        path = rng.choice([(), *tables])
        keys = _schema_keys(path) or ["nope"]
        key = rng.choice([*keys, "unknown_key"]) if rng.random() < 0.9 else "sweep"
        table = _get(doc, path)
        table[key] = _value_like(rng, table.get(key, rng.choice(STRINGS + DURATIONS + RATES)))
    elif op < 0.85 and paths:  # a key removed
        path = rng.choice(paths)
        parent = _get(doc, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        elif parent:
            parent.pop(path[-1])
    else:  # a flow more (or a copy of one with a count)
        flows = doc.get("flows")
        if isinstance(flows, list) and flows and isinstance(flows[0], dict):
            extra = dict(rng.choice([f for f in flows if isinstance(f, dict)] or [{}]))
            extra["count"] = rng.choice((1, 2, 3, 0, -1, 100_001))
            flows.append(extra)


def _as_study(rng: random.Random, doc: dict[str, Any]) -> None:
    """Add a `[sweep]` (and maybe `[study]`) over keys the document has."""
    leaves = [p for p in _paths(doc) if not isinstance(_get(doc, p), dict | list)]
    sweep: dict[str, Any] = {}
    for path in rng.sample(leaves, min(len(leaves), rng.randint(1, 2))):
        key = ".".join(str(p) for p in path)
        old = _get(doc, path)
        if rng.random() < 0.3 and isinstance(old, int | float) and not isinstance(old, bool):
            kind = rng.choice(("log", "lin", "nope"))
            sweep[key] = {kind: [old, _value_like(rng, old)], "points": rng.choice((1, 2, 0))}
        else:
            sweep[key] = [old, _value_like(rng, old)][: rng.randint(1, 2)]
    if rng.random() < 0.5:
        sweep["repetitions"] = rng.choice((1, 2, 1, 2, 0, 100_001, "2"))
    if rng.random() < 0.3:
        sweep["variants"] = [
            {"name": "a"},
            {"name": rng.choice(("b", "a", "")), "set": {"duration": rng.choice(DURATIONS)}},
        ]
    doc["sweep"] = sweep
    if rng.random() < 0.4:
        doc["study"] = {
            "name": rng.choice(("fz", "", "x" * 5000)),
            "base_seed": rng.choice((1, -1)),
        }


def garble(rng: random.Random, text: str) -> str:
    """A text-level change: truncated, characters inserted or deleted, lines repeated."""
    op = rng.random()
    if op < 0.3 and text:
        return text[: rng.randint(0, len(text))]
    if op < 0.6 and text:
        at = rng.randint(0, len(text))
        return text[:at] + rng.choice(('"', "[", "]", "=", "\n", "{", "\x00", "é", "#")) + text[at:]
    if op < 0.8:
        lines = text.splitlines(keepends=True)
        if lines:
            line = rng.choice(lines)
            return text + line
        return text
    return text.replace("=", rng.choice(("==", ":", "")), 1)


def _shipped(root: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((root / "scenarios").glob("*.toml")) + sorted(
        (root / "scenarios" / "studies").glob("*.toml")
    ):
        out.append((path.name, tomllib.loads(path.read_text(encoding="utf-8"))))
    return out


def _cheap(doc: dict[str, Any]) -> dict[str, Any]:
    """A template made cheap to run: short, so valid cases simulate in milliseconds."""
    doc = json.loads(json.dumps(doc))
    doc["duration"] = "2s"
    doc["interval"] = "500ms"
    for flow in doc.get("flows", []):
        if isinstance(flow, dict) and "start" in flow:
            flow["start"] = "500ms"
    sweep = doc.get("sweep")
    if isinstance(sweep, dict):
        # two values per axis and one repetition keep a study to a few runs
        for key, value in list(sweep.items()):
            if isinstance(value, list) and key != "variants":
                sweep[key] = value[:2]
        sweep["repetitions"] = 1
        if isinstance(sweep.get("variants"), list):
            sweep["variants"] = sweep["variants"][:2]
    return doc


@dataclass
class Case:
    number: int
    argv: list[str]
    files: dict[str, str]
    json_out: bool
    subprocess: bool
    deterministic: bool


def _argument(rng: random.Random, option: str) -> str:
    pools: dict[str, Sequence[Any]] = {
        "--seed": ("1", "0", "-1", "18446744073709551615", "18446744073709551616", "x", "0x10",
                   "9" * 5000),
        "--duration": DURATIONS,
        "--jobs": ("1", "2", "0", "-3", "1025", "x"),
        "--repetitions": ("1", "2", "0", "-1", "x", "1e3"),
        "--db-wait": ("0", "1", "-1", "nan", "inf", "1e309", "x"),
        "--trace-window": ("0s:1s", "1s:", ":1s", "2s:1s", "x", "-1s:", "1e99999s:"),
        "--trace-flow": ("0", "1", "-1", "9999", "x"),
        "--snaplen": ("64", "63", "100000", "x", "-1"),
        "--revision": ("1", "0", "99", "x"),
        "--study": ("fz", "nope", "", "'; DROP TABLE runs; --"),
        "--table": ("runs", "flows", "aggregate", "nope"),
        "--executor": ("local", "dask", "nope"),
        "--scheduler": ("foo://x:1", "nonsense", "", "tcp://"),
    }  # fmt: skip
    return str(rng.choice(pools.get(option, ("x", "", "-x", "--"))))


def make_case(
    rng: random.Random,
    number: int,
    templates: list[tuple[str, dict[str, Any]]],
    subprocess_every: int = SUBPROCESS_EVERY,
) -> Case:
    _name, template = rng.choice(templates)
    doc = _cheap(template)
    is_study = "sweep" in doc
    if not is_study and rng.random() < 0.15:
        _as_study(rng, doc)
        is_study = True
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        mutate(rng, doc)
    try:
        text = to_toml(doc)
    except ValueError:  # an integer Python will not print: write it as text
        text = "seed = " + "9" * 5000 + "\n"
    if rng.random() < 0.12:
        text = garble(rng, text)
    files = {"case.toml": text}
    command = rng.choices(
        ("run", "check", "sweep", "results", "ccas", "bad"), (50, 15, 22, 5, 3, 5)
    )[0]
    if command == "sweep" or (is_study and command == "run" and rng.random() < 0.5):
        command = "sweep"
    argv: list[str]
    json_out = False
    if command == "run":
        argv = ["run", "case.toml"]
        json_out = rng.random() < 0.85
        if json_out:
            argv.append("--json")
        for option in ("--seed", "--duration"):
            if rng.random() < 0.1:
                argv += [option, _argument(rng, option)]
        if rng.random() < 0.08:
            argv += ["--pcap", "pcap"]
            for option in ("--trace-window", "--trace-flow", "--snaplen"):
                if rng.random() < 0.4:
                    argv += [option, _argument(rng, option)]
        elif rng.random() < 0.02:
            argv += ["--trace-flow", "0"]
        if rng.random() < 0.15:
            paths = [".".join(map(str, p)) for p in _paths(doc)] or ["seed"]
            key = rng.choice([*paths, "nope", "flows.9.cca", "", "a..b"])
            argv += ["--set", f"{key}={_toml_value(_value_like(rng, None))[:6000]}"]
        if rng.random() < 0.05:
            argv += ["--series", rng.choice(("s.parquet", "s.csv", "s.txt"))]
    elif command == "check":
        argv = ["check", "case.toml"]
        json_out = True
        if rng.random() < 0.3:
            argv += ["--duration", _argument(rng, "--duration")]
    elif command == "sweep":
        argv = ["sweep", "case.toml", "--db", "fz.duckdb", "--no-progress", "--jobs", "2"]
        for option in ("--duration", "--repetitions", "--jobs", "--db-wait"):
            if rng.random() < 0.08:
                argv += [option, _argument(rng, option)]
        if rng.random() < 0.03:
            argv += ["--executor", "dask", "--scheduler", _argument(rng, "--scheduler")]
        if rng.random() < 0.05:
            argv.append("--plan")
    elif command == "plan":
        argv = ["sweep", "case.toml", "--db", "fz.duckdb", "--plan"]
        if rng.random() < 0.2:
            argv += ["--repetitions", _argument(rng, "--repetitions")]
    elif command == "results":
        argv = ["results", rng.choice(("fz.duckdb", "case.toml", "missing.duckdb"))]
        for option in ("--study", "--revision", "--table"):
            if rng.random() < 0.4:
                argv += [option, _argument(rng, option)]
    elif command == "ccas":
        argv = ["ccas", rng.choice(("reno", "nope", "", "CUBIC")), "--json"]
        json_out = True
    else:
        argv = rng.choice(
            (
                [],
                ["nope"],
                ["run"],
                ["run", "case.toml", "--nope"],
                ["run", "case.toml", "--duration"],
                ["run", "missing.toml"],
                ["run", "."],
                ["sweep"],
                ["run", "case.toml", "--seed", "1", "--seed"],
            )
        )
    deterministic = command == "run" and json_out and number % 4 == 0
    return Case(number, argv, files, json_out, number % subprocess_every == 0, deterministic)


@dataclass
class Outcome:
    status: int
    out: str
    err: str
    wall_s: float


def _run_in_process(argv: list[str]) -> Outcome:
    from .. import cli

    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exc:  # argparse's --help and friends
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # anything escaping main is a failure
            status = -1
            err.write(f"escaped main: {type(exc).__name__}: {exc}\n")
    return Outcome(status, out.getvalue(), err.getvalue(), time.perf_counter() - started)


def _run_subprocess(argv: list[str], cwd: Path) -> Outcome:
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "TCPLAB_TRACEBACK"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tcplab", *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=CASE_LIMIT_S,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Outcome(-2, "", "timed out", time.perf_counter() - started)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started)


def _too_costly(case: Case, cwd: Path) -> bool:
    """Whether the case's scenario (valid or not) would take long to simulate."""
    from ..errors import ScenarioError
    from ..scenario.load import load_scenario
    from ..scenario.normalize import normalize

    try:
        if case.argv[:1] == ["sweep"]:
            from ..study.grid import load_study

            study = load_study(cwd / "case.toml")
            if study.n_runs > 16:
                return True
            # every grid point: an axis may lengthen the run or speed up the link
            points = [spec.normalized for spec in study.runs()]
        else:
            points = [normalize(load_scenario(cwd / "case.toml"))]
    except (ScenarioError, ValueError, TypeError, KeyError, RecursionError):
        return False  # an invalid base: the command must say so (cheaply)
    return any(_point_too_costly(case, normalized, len(points)) for normalized in points)


def _point_too_costly(case: Case, normalized: dict[str, Any], runs: int) -> bool:
    from ..errors import Problem
    from ..units import parse_duration_ns

    seconds = normalized["duration_ns"] / 1e9
    flows = len(normalized.get("flows", ()))
    if "--duration" in case.argv:
        given = case.argv[case.argv.index("--duration") + 1 :][:1]
        try:
            seconds = max(seconds, parse_duration_ns(given[0]) / 1e9)
        except (Problem, IndexError):
            pass  # refused before anything runs
    bits = _busiest_bps(normalized) * seconds * max(flows, 1) * runs
    return bits > RUN_BUDGET_BITS or flows > RUN_BUDGET_FLOWS or seconds > RUN_BUDGET_S


def _busiest_bps(normalized: dict[str, Any]) -> float:
    """What the simulator must move per second, about: the bottleneck's rate (the slowest
    segment; the fastest point of its rate trace), or the CBR flows' rates if more."""
    links = [normalized["bottleneck"]] if "bottleneck" in normalized else []
    links += normalized.get("path", {}).get("segments", [])
    slowest = min((float(link["rate_bps"]) for link in links if "rate_bps" in link), default=1.0)
    traced = max(_numbers([link.get("rate_trace") for link in links], "rate_bps"), default=0.0)
    cbr = sum(_numbers([f.get("app") for f in normalized.get("flows", [])], "rate_bps"))
    delivery = 0.0
    if any(link.get("delivery_trace") for link in links):
        delivery = 1e8  # Mahimahi cellular traces: tens of Mbit/s at their peaks
    return max(slowest, traced, cbr, delivery)


def _numbers(doc: Any, key: str) -> Iterator[float]:
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key and isinstance(v, int | float):
                    yield float(v)
                else:
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)


def _capacity_bps(scenario: dict[str, Any]) -> float:
    """The fastest any link of the scenario carries bits (rates, rate traces, delivery traces)."""
    best = max(_numbers(scenario, "rate_bps"), default=0.0)
    stack: list[Any] = [scenario]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            trace = node.get("delivery_trace")
            if isinstance(trace, dict) and trace.get("opportunities_ns"):
                per_ns: dict[int, int] = {}
                for t in trace["opportunities_ns"]:
                    per_ns[t] = per_ns.get(t, 0) + 1
                # opportunities at one instant can all go at once: bound by the busiest second
                window = 1_000_000_000
                counts: dict[int, int] = {}
                for t, n in per_ns.items():
                    counts[t // window] = counts.get(t // window, 0) + n
                bits = max(counts.values()) * trace.get("bytes_per_opportunity", 1500) * 8
                best = max(best, float(bits) * 2)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return best


def check_run_json(text: str) -> list[str]:
    """The invariants of a run's `--json` output; returns what is violated."""
    problems: list[str] = []
    try:
        result = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"stdout is not JSON: {exc}"]
    for value, where in _leaves(result):
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                problems.append(f"{where} = {value}: not finite")
            elif value < 0 and not where.endswith(("_delta", "offset")):
                problems.append(f"{where} = {value}: negative")
    capacity = _capacity_bps(result.get("scenario", {}))
    for flow in result.get("flows", []):
        fid = flow.get("id")
        if flow.get("bytes_delivered", 0) > flow.get("bytes_sent", 0):
            problems.append(f"flow {fid}: delivered {flow['bytes_delivered']} > sent")
        goodput = flow.get("goodput_bps") or 0
        if capacity and goodput > capacity * 1.001:
            problems.append(f"flow {fid}: goodput {goodput} > capacity {capacity}")
    for link in result.get("links", []):
        if (link.get("utilization") or 0) > 1.0 + 1e-9:
            problems.append(f"link {link.get('name')}: utilization {link['utilization']} > 1")
    return problems


def _leaves(doc: Any, where: str = "") -> Iterator[tuple[Any, str]]:
    stack: list[tuple[Any, str]] = [(doc, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            if at.endswith("scenario") or at.endswith("provenance"):
                continue  # the input echoed, and where the run happened
            stack.extend((v, f"{at}.{k}") for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(node))
        else:
            yield node, at


def _stable(text: str) -> Any:
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _UNSTABLE}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads(text))


def judge(case: Case, outcome: Outcome) -> list[str]:
    """What is wrong with `outcome` (empty: the contract holds)."""
    problems: list[str] = []
    if outcome.wall_s > CASE_LIMIT_S or outcome.status == -2:
        problems.append(f"took {outcome.wall_s:.1f} s")
    if "Traceback" in outcome.err or "Traceback" in outcome.out:
        problems.append("traceback")
    if outcome.status == 0:
        if case.json_out:
            if case.argv[:1] == ["run"]:
                problems += check_run_json(outcome.out)
            else:
                try:
                    json.loads(outcome.out)
                except json.JSONDecodeError as exc:
                    problems.append(f"stdout is not JSON: {exc}")
    elif outcome.status == 2:
        lines = outcome.err.splitlines()
        error_lines = [line for line in lines if line.startswith("error: ")]
        if not error_lines or len([ln for ln in lines if ln.strip()]) > 3:
            problems.append(f"exit 2 without a short error: {outcome.err[:300]!r}")
    else:
        problems.append(f"exit {outcome.status}: {outcome.err.strip()[:300]}")
    return problems


@dataclass
class Report:
    cases: int = 0
    exits: dict[int, int] | None = None
    failures: list[str] | None = None
    wall_s: float = 0.0


def _shard(args: tuple[int, int, int, Path, int]) -> Report:
    cases, seed, shard, root, subprocess_every = args
    return fuzz(cases, seed, root, subprocess_every=subprocess_every, shard=shard)


def fuzz_parallel(
    cases: int, seed: int, root: Path, jobs: int, subprocess_every: int = SUBPROCESS_EVERY
) -> Report:
    """`fuzz` split over `jobs` processes; shard k runs its share of the cases from the
    random stream (seed, k), so a run is reproduced by the same seed and jobs."""
    from concurrent.futures import ProcessPoolExecutor

    shares = [cases // jobs + (1 if k < cases % jobs else 0) for k in range(jobs)]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        reports = list(
            pool.map(_shard, [(n, seed, k, root, subprocess_every) for k, n in enumerate(shares)])
        )
    total = Report(0, {}, [], 0.0)
    assert total.exits is not None and total.failures is not None
    for report in reports:
        total.cases += report.cases
        for status, count in (report.exits or {}).items():
            total.exits[status] = total.exits.get(status, 0) + count
        total.failures += report.failures or []
    total.wall_s = time.perf_counter() - started
    return total


def fuzz(
    cases: int,
    seed: int,
    root: Path,
    *,
    subprocess_every: int = SUBPROCESS_EVERY,
    verbose: bool = False,
    shard: int | None = None,
) -> Report:
    """Run `cases` cases from `seed` (and `shard`, see `fuzz_parallel`); every failure is
    listed with the case's number, its command line and its file."""
    rng = random.Random(seed if shard is None else f"{seed}/{shard}")
    templates = _shipped(root)
    report = Report(0, {}, [])
    assert report.exits is not None and report.failures is not None
    started = time.perf_counter()
    here = Path.cwd()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    with tempfile.TemporaryDirectory(prefix="tcplab-fuzz-") as tmp:
        base = Path(tmp)
        # the shipped traces, where the templates name them
        (base / "traces").mkdir()
        for trace in (root / "scenarios" / "traces").iterdir():
            (base / "traces" / trace.name).write_bytes(trace.read_bytes())
        for number in range(cases):
            case = make_case(rng, number, templates, subprocess_every)
            for name, text in case.files.items():
                (base / name).write_text(text, encoding="utf-8", errors="surrogatepass")
            os.chdir(base)
            try:
                if case.argv[:1] in (["run"], ["sweep"]) and _too_costly(case, base):
                    case.argv[0] = "check"
                    case.argv = [a for a in case.argv if a not in ("--json", "--no-progress")]
                    case.argv = case.argv[:2] + _scenario_options(case.argv[2:])
                    case.json_out = True
                    case.deterministic = False
                if case.subprocess:
                    outcome = _run_subprocess(case.argv, base)
                else:
                    outcome = _run_in_process(case.argv)
                problems = judge(case, outcome)
                if not problems and case.deterministic and outcome.status == 0:
                    again = _run_in_process(case.argv)
                    if again.status != 0 or _stable(again.out) != _stable(outcome.out):
                        problems.append("a second run gave another result")
            finally:
                os.chdir(here)
                for leftover in ("fz.duckdb", "fz.duckdb.wal", "s.parquet", "s.csv", "s.txt"):
                    (base / leftover).unlink(missing_ok=True)
                for extra in ("fz.series", "pcap"):
                    _remove_tree(base / extra)
            report.cases += 1
            report.exits[outcome.status] = report.exits.get(outcome.status, 0) + 1
            if problems:
                command = " ".join(_short(a) for a in case.argv)
                report.failures.append(
                    f"case {number} (seed {seed}, shard {shard}): tcplab {command}: "
                    f"{'; '.join(problems)}\n"
                    f"--- case.toml ---\n{_short(case.files['case.toml'], 2000)}"
                )
            if os.environ.get("TCPLAB_FUZZ_TRACE"):
                print(
                    f"{number} {outcome.status} {outcome.wall_s:.2f}s {' '.join(case.argv)[:80]} "
                    f"| {outcome.err.strip()[:150]}",
                    file=sys.stderr,
                )
            if verbose and (number + 1) % 500 == 0:
                print(f"{number + 1} cases, {len(report.failures)} failures", file=sys.stderr)
    report.wall_s = time.perf_counter() - started
    return report


def _scenario_options(args: list[str]) -> list[str]:
    """Of a run's or sweep's options, those `check` takes (--seed, --duration, --set)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in ("--seed", "--duration", "--set") and i + 1 < len(args):
            out += args[i : i + 2]
            i += 2
        else:
            i += 1 + (i + 1 < len(args) and not args[i + 1].startswith("--"))
    return out


def _remove_tree(path: Path) -> None:
    if path.is_dir():
        for child in path.iterdir():
            child.unlink(missing_ok=True)
        path.rmdir()
    else:
        path.unlink(missing_ok=True)


def _short(text: str, most: int = 120) -> str:
    return text if len(text) <= most else f"{text[:most]}...({len(text)} chars)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcplab.tools.fuzz", description=__doc__)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--root", default=None, help="the tcplab checkout (default: this one)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--subprocess-every", type=int, default=SUBPROCESS_EVERY, help="one case in N as a process"
    )
    args = parser.parse_args(argv)
    from .golden import repo_root

    root = Path(args.root) if args.root else repo_root()
    if args.jobs > 1:
        report = fuzz_parallel(args.cases, args.seed, root, args.jobs, args.subprocess_every)
    else:
        report = fuzz(
            args.cases, args.seed, root, subprocess_every=args.subprocess_every, verbose=True
        )
    for failure in report.failures or []:
        print(failure, file=sys.stderr)
    exits = ", ".join(f"exit {k}: {v}" for k, v in sorted((report.exits or {}).items()))
    print(
        f"fuzz: {report.cases} cases (seed {args.seed}, jobs {args.jobs}), "
        f"{len(report.failures or [])} failures, "
        f"{exits}, {report.wall_s:.1f} s"
    )
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
