"""Every kind of scenario/command-line mistake → exit 2, ONE stderr line `error: ...` naming the
field, nothing on stdout, never a traceback. Runs the real CLI in a subprocess."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GEO_TOML, assert_user_error, run_cli
from tcplab.catalogue import ccas


def broken(old: str, new: str) -> str:
    """GEO_TOML with one piece replaced; fails loudly if the piece is not there."""
    assert old in GEO_TOML, old
    return GEO_TOML.replace(old, new, 1)


# (broken scenario text, expected start of the error line); the id says what is wrong
CASES = [
    pytest.param(
        broken("seed = 1", "seed = 1\nsede = 2"),
        "error: sede = 2: unknown key; allowed: name, duration, seed",
        id="unknown top-level key",
    ),
    pytest.param(
        broken('rate = "4Mbps"', 'rat = "4Mbps"'),
        'error: bottleneck.rat = "4Mbps": unknown key; allowed: rate, delay',
        id="unknown bottleneck key",
    ),
    pytest.param(
        broken("mss = 1448", "msss = 1448"),
        "error: flows[0].tcp.msss = 1448: unknown key; allowed: mss, sack",
        id="unknown flows.tcp key",
    ),
    pytest.param(
        broken('delay = "250ms"', 'delay = "250mss"'),
        "error: bottleneck.delay = \"250mss\": unknown duration unit 'mss'; "
        "allowed: ns, us, ms, s, min",
        id="wrong duration unit",
    ),
    pytest.param(
        broken('rate = "4Mbps"', 'rate = "4MBps"'),
        "error: bottleneck.rate = \"4MBps\": 'Bps' means bytes per second",
        id="bytes per second rate",
    ),
    pytest.param(
        broken('duration = "600s"', "duration = 600"),
        "error: duration = 600: a duration needs a unit",
        id="duration without unit",
    ),
    pytest.param(
        broken('delay = "250ms"', 'delay = "-250ms"'),
        'error: bottleneck.delay = "-250ms": must not be negative',
        id="negative delay",
    ),
    pytest.param(
        broken("per = 1e-4", "per = 1.5"),
        "error: bottleneck.per = 1.5: must be in [0, 1)",
        id="per out of range",
    ),
    pytest.param(
        broken('rate = "4Mbps"', 'rate = "0Mbps"'),
        'error: bottleneck.rate = "0Mbps": must be greater than 0',
        id="zero rate",
    ),
    pytest.param(
        broken('rate = "1Gbps"', 'rate = "0bps"'),
        'error: access.rate = "0bps": must be greater than 0',
        id="zero access rate",
    ),
    pytest.param(
        broken('duration = "600s"', 'duration = "0s"'),
        'error: duration = "0s": must be greater than 0',
        id="zero duration",
    ),
    pytest.param(
        broken("mss = 1448", "mss = 10"),
        "error: flows[0].tcp.mss = 10: out of range; allowed: 64 to 65495",
        id="mss too small",
    ),
    pytest.param(
        broken("mss = 1448", 'mss = "1448"'),
        'error: flows[0].tcp.mss = "1448": must be an integer',
        id="mss as string",
    ),
    pytest.param(
        broken("mss = 1448", "initial_window = 0"),
        "error: flows[0].tcp.initial_window = 0: out of range",
        id="initial window zero",
    ),
    pytest.param(
        broken("mss = 1448", "sack = 1"),
        "error: flows[0].tcp.sack = 1: must be true or false",
        id="bool as number",
    ),
    pytest.param(
        broken('app = "bulk"', 'app = "file"'),
        'error: flows[0].size: required when app = "file"; allowed: a size such as "5MB"',
        id="file without size",
    ),
    pytest.param(
        broken('app = "bulk"', 'app = "bulk"\nsize = "5MB"'),
        'error: flows[0].size = 5000000: only allowed with app = "file"',
        id="bulk with size",
    ),
    pytest.param(
        broken('app = "bulk"', 'app = "stream"'),
        'error: flows[0].app = "stream": not an allowed value; allowed: bulk, file or cbr',
        id="unknown app",
    ),
    pytest.param(
        broken('app = "bulk"', 'app = "bulk"\nstart = "700s"'),
        'error: flows[0].start = "700s": starts after the run ends; '
        "allowed: less than duration (600s)",
        id="start after end",
    ),
    pytest.param(
        broken('app = "bulk"', 'app = "bulk"\ncount = 0'),
        "error: flows[0].count = 0: out of range; allowed: 1 to 100000",
        id="count zero",
    ),
    pytest.param(
        broken('queue = "2bdp"', "queue = 200"),
        "error: bottleneck.queue = 200: a queue limit needs a unit",
        id="queue without unit",
    ),
    pytest.param(
        broken('queue = "2bdp"', 'queue = "-2bdp"'),
        'error: bottleneck.queue = "-2bdp": must be greater than 0',
        id="queue negative bdp",
    ),
    pytest.param(
        broken('queue = "2bdp"', 'queue = "2bdp"\necn_threshold = "20KB"'),
        'error: bottleneck.ecn_threshold = "20KB": not a packet count; '
        'allowed: a packet count such as "20pkts" (or 20)',
        id="ecn threshold not in packets",
    ),
    pytest.param(
        broken("mss = 1448", "mss = 1448\nsack = false\nrack = true"),
        "error: flows[0].tcp.rack = true: needs SACK, but sack = false",
        id="rack without sack",
    ),
    pytest.param(
        broken("per = 1e-4", "ber = -0.1"),
        "error: bottleneck.ber = -0.1: must be in [0, 1)",
        id="ber out of range",
    ),
    pytest.param(
        broken("[[flows]]", "[flows]").replace("[flows.tcp]\nmss = 1448\n", ""),
        "error: flows = {",
        id="flows as a table",
    ),
    pytest.param(
        broken('rate = "4Mbps"\n', ""),
        'error: bottleneck.rate: missing required key; allowed: a rate such as "4Mbps"',
        id="missing bottleneck rate",
    ),
    pytest.param(
        GEO_TOML.split("[[flows]]")[0],
        "error: flows: missing required key; allowed: at least one [[flows]] table",
        id="missing flows",
    ),
    pytest.param(
        broken("mss = 1448", "mss = 1448\nrwnd = 1000"),
        "error: flows[0].tcp.rwnd = 1000: smaller than one segment",
        id="window scaling cap below mss",
    ),
]


@pytest.mark.parametrize(("text", "expected_start"), CASES)
def test_scenario_mistake(
    text: str, expected_start: str, write_toml: Callable[[str], Path]
) -> None:
    line = assert_user_error(run_cli("run", str(write_toml(text))))
    assert line.startswith(expected_start), line


def test_flows_written_as_table_says_how_to_fix(write_toml: Callable[[str], Path]) -> None:
    text = broken("[[flows]]", "[flows]").replace("[flows.tcp]\nmss = 1448\n", "")
    assert_user_error(run_cli("run", str(write_toml(text))), "must be an array", "[[flows]]")


def test_unknown_cca(write_toml: Callable[[str], Path]) -> None:
    names = [info.name for info in ccas()]
    if not names:
        pytest.skip("the core's catalogue is empty (stub core): nothing to check names against")
    line = assert_user_error(run_cli("run", str(write_toml(broken('"cubic"', '"cubik"')))))
    assert line == f'error: flows[0].cca = "cubik": unknown algorithm; allowed: {", ".join(names)}'


def test_bad_toml_reports_line_and_column(write_toml: Callable[[str], Path]) -> None:
    # line 3 is `seed 1`: the parser expects '=' right after the key, at column 6
    path = write_toml(broken("seed = 1", "seed 1"))
    line = assert_user_error(run_cli("run", str(path)))
    assert line.startswith(f"error: {path}: invalid TOML at line 3 column 6: expected '='"), line


def test_duplicate_toml_key(write_toml: Callable[[str], Path]) -> None:
    path = write_toml(broken("seed = 1", "seed = 1\nseed = 2"))
    assert_user_error(run_cli("run", str(path)), str(path), "invalid TOML at line")


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    line = assert_user_error(run_cli("run", str(missing)))
    assert line == f"error: {missing}: no such file"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (
            "bottleneck.rat=4Mbps",
            "error: --set bottleneck.rat = \"4Mbps\": unknown key 'rat'; allowed: rate,",
        ),
        (
            "flows.3.cca=reno",
            'error: --set flows[3].cca = "reno": flows has no entry 3; allowed: 0 to 0',
        ),
        ("bottleneck.per.x=1", "error: --set bottleneck.per.x = 1: bottleneck.per is a value"),
        ("nonsense", 'error: --set = "nonsense": expected key.path=value'),
        ("bottleneck..per=1", 'error: --set = "bottleneck..per": malformed key path'),
        ("bottleneck.per=2", "error: bottleneck.per = 2: must be in [0, 1)"),
    ],
)
def test_bad_set(setting: str, expected: str, write_toml: Callable[[str], Path]) -> None:
    line = assert_user_error(run_cli("run", str(write_toml(GEO_TOML)), "--set", setting))
    assert line.startswith(expected), line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--seed", "abc"],
            'error: --seed = "abc": not an integer; allowed: 0 to 18446744073709551615',
        ),
        (["--seed", "-1"], 'error: --seed = "-1": out of range'),
        (["--seed", str(2**64)], "error: --seed = "),
        (["--duration", "60"], 'error: --duration = "60": missing duration unit'),
        (["--duration", "0s"], 'error: --duration = "0s": must be greater than 0'),
        (
            ["--series", "out.txt"],
            'error: --series = "out.txt": unknown file extension; allowed: .parquet, .csv',
        ),
        (["--bogus"], "error: unrecognized arguments: --bogus"),
    ],
)
def test_bad_option(args: list[str], expected: str, write_toml: Callable[[str], Path]) -> None:
    line = assert_user_error(run_cli("run", str(write_toml(GEO_TOML)), *args))
    assert line.startswith(expected), line


def test_missing_command() -> None:
    assert_user_error(run_cli(), "missing command; allowed: run, check, ccas, demo")


def test_missing_scenario_argument() -> None:
    assert_user_error(run_cli("run"), "SCENARIO.toml")


@pytest.mark.parametrize("per", ["1", "x", "-0.1"])
def test_demo_bad_per(per: str, tmp_path: Path) -> None:
    assert_user_error(run_cli("demo", "--per", per, "--out", str(tmp_path)), "--per = ")


def test_validate_scenario_errors_the_same_way(write_toml: Callable[[str], Path]) -> None:
    path = write_toml(broken("per = 1e-4", "per = 1.5"))
    line = assert_user_error(run_cli("check", str(path)))
    assert line == "error: bottleneck.per = 1.5: must be in [0, 1)"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--jobs", "0"], "error: --jobs: 0: out of range; allowed: 1 ..= 1024"),
        (["--jobs", "two"], "error: --jobs: 'two': must be an integer; allowed: 1 ..= 1024"),
        (["--repetitions", "-3"], "error: --repetitions: -3: out of range; allowed: 1 ..= 1024"),
    ],
)
def test_bad_sweep_count(args: list[str], expected: str, write_toml: Callable[[str], Path]) -> None:
    line = assert_user_error(run_cli("sweep", str(write_toml(GEO_TOML)), *args))
    assert line == expected, line
