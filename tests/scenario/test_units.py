"""Unit strings → integer base units, and the messages for every kind of bad value."""

from __future__ import annotations

import pytest
from tcplab.errors import Problem
from tcplab.units import (
    format_duration_ns,
    format_rate_bps,
    parse_duration_ns,
    parse_rate_bps,
    parse_size_bytes,
)


@pytest.mark.parametrize(
    ("text", "expected_ns"),
    [
        ("600s", 600_000_000_000),
        ("250ms", 250_000_000),
        ("0.1ms", 100_000),  # exact decimal: 0.1 x 1e6, no float rounding
        ("10us", 10_000),
        ("10µs", 10_000),
        ("5ns", 5),
        ("1.5min", 90_000_000_000),
        ("2 s", 2_000_000_000),
        ("1e-3s", 1_000_000),
        ("0s", 0),
        ("  7MS ", 7_000_000),  # units are case-insensitive
        ("1.0000000004s", 1_000_000_000),  # 0.4 ns rounds to the nearest ns
    ],
)
def test_durations(text: str, expected_ns: int) -> None:
    assert parse_duration_ns(text) == expected_ns


@pytest.mark.parametrize(
    ("text", "expected_bps"),
    [
        ("4Mbps", 4_000_000),
        ("1Gbps", 1_000_000_000),
        ("250kbps", 250_000),
        ("800bps", 800),
        ("2.5mbps", 2_500_000),
        ("0.5GBPS", 500_000_000),  # all upper case is still bits
        ("10Mbit/s", 10_000_000),
        ("1Tbps", 10**12),
    ],
)
def test_rates(text: str, expected_bps: int) -> None:
    assert parse_rate_bps(text) == expected_bps


@pytest.mark.parametrize(
    ("value", "expected_bytes"),
    [
        ("4MB", 4_000_000),
        ("64KB", 64_000),  # decimal: NOT the folklore 65535 window
        ("64KiB", 65_536),
        ("160KB", 160_000),
        ("1500B", 1_500),
        ("5MiB", 5 * 1_048_576),
        ("1.5kB", 1_500),
        ("1GB", 10**9),
        (65535, 65_535),  # a plain integer is a byte count
        ("1448", 1_448),
    ],
)
def test_sizes(value: object, expected_bytes: int) -> None:
    assert parse_size_bytes(value) == expected_bytes


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("250", "missing duration unit"),
        (600, "needs a unit"),
        (1.5, "needs a unit"),
        (True, "expected a duration string"),
        ("5 parsecs", "unknown duration unit 'parsecs'"),
        ("-5ms", "must not be negative"),
        ("ms", "not a number followed by a unit"),
        ("1.2.3s", "not a number followed by a unit"),
        ("", "not a number followed by a unit"),
        (None, "expected a duration string"),
    ],
)
def test_bad_durations(value: object, problem: str) -> None:
    with pytest.raises(Problem) as info:
        parse_duration_ns(value)
    assert problem in info.value.problem
    assert info.value.allowed is not None and "ms" in info.value.allowed


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("4MBps", "bytes per second"),
        ("4", "missing rate unit"),
        (4_000_000, "needs a unit"),
        ("4Mhz", "unknown rate unit 'Mhz'"),
        ("-1Mbps", "must not be negative"),
        ("fastbps", "not a number followed by a unit"),
    ],
)
def test_bad_rates(value: object, problem: str) -> None:
    with pytest.raises(Problem) as info:
        parse_rate_bps(value)
    assert problem in info.value.problem
    assert info.value.allowed is not None and "Mbps" in info.value.allowed


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("64kb", "lower-case 'b' means bits"),
        ("64Kbit", "unknown size unit"),
        ("64K", "unknown size unit"),
        (1500.0, "must be an integer"),
        (-1, "must not be negative"),
        ("-1KB", "must not be negative"),
        (False, "expected a size string"),
        ("1.5", "missing size unit"),
    ],
)
def test_bad_sizes(value: object, problem: str) -> None:
    with pytest.raises(Problem) as info:
        parse_size_bytes(value)
    assert problem in info.value.problem
    assert info.value.allowed is not None and "KiB" in info.value.allowed


def test_problem_message_has_allowed_part() -> None:
    with pytest.raises(Problem, match=r"^unknown duration unit 'h'; allowed: ns, us, ms, s, min"):
        parse_duration_ns("1h")


@pytest.mark.parametrize(
    ("value_ns", "text"),
    [(600_000_000_000, "600s"), (250_000_000, "250ms"), (100_000, "100us"), (5, "5ns"), (0, "0ns")],
)
def test_format_duration_round_trips(value_ns: int, text: str) -> None:
    assert format_duration_ns(value_ns) == text
    assert parse_duration_ns(text) == value_ns


@pytest.mark.parametrize(
    ("value_bps", "text"),
    [(4_000_000, "4Mbps"), (1_500_000, "1500kbps"), (10**9, "1Gbps"), (1234, "1234bps")],
)
def test_format_rate_round_trips(value_bps: int, text: str) -> None:
    assert format_rate_bps(value_bps) == text
    assert parse_rate_bps(text) == value_bps
