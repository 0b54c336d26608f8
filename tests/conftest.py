"""Shared helpers: run the CLI in a subprocess, write scenario files, build results."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tcplab import _core

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"
#: recorded emulations (iperf3 and emulator JSON; made by tests/data/realstack/record.py)
REALSTACK_FIXTURES = REPO / "tests" / "data" / "realstack"

#: Tests that run real emulations: they take the machine's emulation lock one after another and
#: time the kernel's TCP on the wall clock, so a CPU-bound test beside them at the same priority
#: would disturb what they measure. `make test` runs them in one process beside the rest, which
#: it spreads over the cores (pytest-xdist) at the lowest CPU priority (nice 19).
REAL_TIME_TESTS = ("tests/realstack/", "tests/trace/test_emulate_capture.py")
#: ... except these, which read recorded kernel runs and simulate, and so run with the rest.
SIMULATION_ONLY = ("tests/realstack/test_kernel_records.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(REAL_TIME_TESTS) and not item.nodeid.startswith(SIMULATION_ONLY):
            item.add_marker(pytest.mark.real_time)


#: The columns of the series schema, written out here rather than taken from the code, so a
#: change of the schema shows in a test.
SERIES_COLUMNS = [
    "t_s",
    "flow_id",
    "kind",
    "cca",
    "goodput_bps",
    "throughput_bps",
    "rtt_ms",
    "cwnd_bytes",
    "retransmits",
    "bottleneck_queue_pkts",
    "bottleneck_utilization",
]

#: A valid scenario (the GEO demo path); tests derive broken variants by replacing one line.
GEO_TOML = """\
name = "geo-sat"
duration = "600s"
seed = 1

[bottleneck]
rate = "4Mbps"
delay = "250ms"
per = 1e-4
queue = "2bdp"

[access]
rate = "1Gbps"
delay = "0.1ms"

[[flows]]
cca = "cubic"
app = "bulk"

[flows.tcp]
mss = 1448
"""

#: A study of two runs of two seconds each (a results database to damage, copy, mount).
SMALL_STUDY = """\
duration = "2s"
[study]
name = "small"
[bottleneck]
rate = "4Mbps"
delay = "20ms"
queue = "1bdp"
[[flows]]
cca = "reno"
[sweep]
"bottleneck.per" = [1e-3, 1e-2]
"""


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m tcplab ARGS` with the interpreter running the tests (the project venv)."""
    return subprocess.run(
        [sys.executable, "-m", "tcplab", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        check=False,
    )


def _like_a_terminal() -> None:
    """In a child before it runs: Ctrl-C as a shell's foreground command gets it (default
    action, not blocked), whatever the test runner's worker process has done to its own."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def interruptible(argv: list[str]) -> subprocess.Popen[str]:
    """`argv` started for a test that interrupts it with SIGINT, pipes for its output."""
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_like_a_terminal,
    )


def assert_user_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed the way user mistakes do: exit 2, nothing on stdout, one line
    `error: ...` on stderr containing every fragment; returns that line."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("error: ")
    for fragment in fragments:
        assert fragment in line, line
    return line


def render_in_chromium(page: Path, tmp_path: Path) -> str:
    """Load an HTML report in headless Chromium; the attributes of its rendered `<body>`
    (where the reports' check script records `data-figures` and `data-errors`). Skips when
    Chromium is not installed (`make test` installs Debian's)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    proc = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    return proc.stdout[proc.stdout.index("<body") :].split(">", 1)[0]


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str], Path]:
    """Write TOML text to a fresh file and return its path."""
    counter = iter(range(1_000_000))

    def write(text: str) -> Path:
        path = tmp_path / f"scenario{next(counter)}.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


def store_run(
    store: Any,
    study: str,
    run: Any,
    params: dict[str, Any] | None = None,
    *,
    scenario_hash: str = "h1",
    seed: int = 1,
) -> str:
    """Store one hand-made `RunResult` as the only run of a new revision of `study` (what a
    sweep does, without a grid); returns its run id."""
    from tcplab.results.provenance import Build
    from tcplab.study.store import Member, RevisionPlan, RunKey, RunRecord

    params = params or {}
    key = RunKey(scenario_hash, seed, run.model_version or _core.model_version())
    plan = RevisionPlan(
        study, "", "", "{}", f"hand-{scenario_hash}-{seed}", key.model_version or 0, 1
    )
    member = Member(key.run_id, "", json.dumps(params, sort_keys=True))
    choice = store.open_revision(plan, [member], Build.current(), on_change="new")
    store.add_runs(study, choice.revision, [RunRecord(key, "", params, run.scenario, run)])
    return key.run_id


def recorded(name: str) -> tuple[dict[str, Any], Any, list[Any], dict[str, Any]]:
    """A recorded emulation `tests/data/realstack/NAME.json`: its normalized scenario, the
    emulation plan, the flows' runs (with their PEPs' reports) and the emulator's report."""
    from tcplab.realstack.convert import FlowRun
    from tcplab.realstack.pep_report import PepRun
    from tcplab.realstack.plan import plan_topology

    data = json.loads((REALSTACK_FIXTURES / f"{name}.json").read_text())
    plan = plan_topology(data["normalized"], "1x0")
    peps = data.get("peps") or [[] for _ in plan.flows]
    runs = [
        FlowRun(f, c, tuple(PepRun(p["node"], p["report"]) for p in flow_peps))
        for f, c, flow_peps in zip(plan.flows, data["clients"], peps, strict=True)
    ]
    return data["normalized"], plan, runs, data["emu"]


#: The first results-database schema (tcplab before study revisions): old files to upgrade.
V1_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE studies (
    name VARCHAR PRIMARY KEY, description VARCHAR, text VARCHAR, created TIMESTAMP);
CREATE TABLE runs (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL,
    scenario_json VARCHAR, tcplab_version VARCHAR, core_version VARCHAR, created TIMESTAMP,
    wall_s DOUBLE, events UBIGINT, duration_s DOUBLE, n_flows INTEGER,
    rate_bps DOUBLE, return_rate_bps DOUBLE, base_rtt_ms DOUBLE, per DOUBLE, mss_bytes INTEGER,
    goodput_bps DOUBLE, mean_flow_goodput_bps DOUBLE, throughput_bps DOUBLE,
    rtt_mean_ms DOUBLE, rtt_p95_ms DOUBLE, retransmits UBIGINT, rto_count UBIGINT,
    jain_fairness DOUBLE, minmax_ratio DOUBLE, utilization DOUBLE, goodput_utilization DOUBLE,
    queue_drops UBIGINT, error_drops UBIGINT, ecn_marks UBIGINT, queue_mean_pkts DOUBLE,
    completion_s DOUBLE, series_file VARCHAR,
    PRIMARY KEY (scenario_hash, seed));
CREATE TABLE study_runs (
    study VARCHAR NOT NULL, scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL,
    variant VARCHAR, params_json VARCHAR,
    PRIMARY KEY (study, scenario_hash, seed));
CREATE TABLE flows (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, flow_id INTEGER NOT NULL,
    cca VARCHAR, start_s DOUBLE, goodput_bps DOUBLE, throughput_bps DOUBLE,
    bytes_delivered UBIGINT, retransmits UBIGINT, rto_count UBIGINT,
    rtt_mean_ms DOUBLE, rtt_min_ms DOUBLE, rtt_p50_ms DOUBLE, rtt_p95_ms DOUBLE,
    completion_s DOUBLE,
    PRIMARY KEY (scenario_hash, seed, flow_id));
CREATE TABLE links (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, name VARCHAR NOT NULL,
    rate_bps DOUBLE, utilization DOUBLE, queue_drops UBIGINT, error_drops UBIGINT,
    ecn_marks UBIGINT, queue_mean_pkts DOUBLE, queue_max_pkts UBIGINT,
    PRIMARY KEY (scenario_hash, seed, name));
INSERT INTO meta VALUES ('schema_version', '1'), ('created_by', 'tcplab 0.1.0');
INSERT INTO studies VALUES ('old', 'an old study', 'name = "old"', '2024-01-01 00:00:00');
INSERT INTO study_runs VALUES ('old', 'aaaa', 1, '', '{"bottleneck.per": 0.001}');
INSERT INTO study_runs VALUES ('old', 'bbbb', 1, '', '{"bottleneck.per": 0.01}');
INSERT INTO runs (scenario_hash, seed, n_flows, duration_s, rate_bps, goodput_bps,
    throughput_bps, jain_fairness, series_file)
    VALUES ('aaaa', 1, 2, 30.0, 4000000.0, 3000000.0, 3100000.0, 0.8, 'aaaa-1.parquet'),
           ('bbbb', 1, 1, 30.0, 4000000.0, 2500000.0, 2600000.0, 1.0, 'bbbb-1.parquet');
INSERT INTO flows (scenario_hash, seed, flow_id, cca, start_s, goodput_bps, bytes_delivered)
    VALUES ('aaaa', 1, 0, 'reno', 0.0, 2000000.0, 7500000),
           ('aaaa', 1, 1, 'cubic', 10.0, 1000000.0, 2500000),
           ('bbbb', 1, 0, 'reno', 0.0, 2500000.0, NULL);
INSERT INTO links (scenario_hash, seed, name, queue_drops)
    VALUES ('aaaa', 1, 'bottleneck.forward', 4);
"""
