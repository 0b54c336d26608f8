"""Hostile input at the boundary: files and arguments that once ended in a traceback, an
`internal error` or a run that never ended are refused in one line with exit 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import GEO_TOML
from tcplab import ScenarioError, cli
from tcplab.runner import core_error
from tcplab.scenario.load import load_scenario


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_line_error(status: int, out: str, err: str, *fragments: str) -> str:
    assert status == 2, err
    assert out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    for fragment in fragments:
        assert fragment in err, err
    return err


def _file(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


SHORT = GEO_TOML.replace('duration = "600s"', 'duration = "2s"')


@pytest.mark.parametrize("depth", [17, 3000])
def test_deep_nesting_in_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    path = _file(tmp_path, SHORT.replace('name = "geo-sat"', f"name = {nested}"))
    _one_line_error(*_main(capsys, "run", path), "nested more than 16 deep", "at most 16 levels")


def test_deep_nesting_in_set_and_in_a_dict_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, SHORT)
    err = _one_line_error(*_main(capsys, "run", path, "--set", "name=" + "[" * 2000 + "]" * 2000))
    assert err.startswith("error: --set name: ")
    deep: list[object] = []
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = [deep]
    with pytest.raises(ScenarioError, match="nested more than 16 deep"):
        load_scenario({"name": deep, "duration": "1s"}, catalogue=())


def test_an_integer_of_4400_digits_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, SHORT.replace("seed = 1", "seed = " + "9" * 4400))
    _one_line_error(
        *_main(capsys, "run", path),
        "an integer of 4400 digits at line 3 column 8 is outside the 64-bit range",
        "allowed: -9223372036854775808 to 18446744073709551615",
    )
    err = _one_line_error(
        *_main(capsys, "run", _file(tmp_path, SHORT), "--set", "seed=" + "9" * 21)
    )
    assert "--set seed: an integer of 21 digits" in err
    # 2**64 - 1 is the largest seed; one more is out of range, not a crash
    big = SHORT.replace("seed = 1", f"seed = {2**64}")
    _one_line_error(*_main(capsys, "check", _file(tmp_path, big)), "seed", "out")


def test_an_absurd_duration_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    path = _file(tmp_path, SHORT.replace('duration = "2s"', 'duration = "1e99999999s"'))
    _one_line_error(*_main(capsys, "run", path), 'duration = "1e99999999s": out of range')
    _one_line_error(
        *_main(capsys, "run", _file(tmp_path, SHORT), "--duration", "1e99999999s"),
        '--duration = "1e99999999s"',
        "exponents from -30 to 30",
    )
    # the number is never expanded: ten to the hundred millionth takes minutes to build
    assert time.monotonic() - started < 5.0


def test_a_negative_duration_argument_is_a_value_not_an_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _one_line_error(
        *_main(capsys, "run", _file(tmp_path, SHORT), "--duration", "-1s"),
        '--duration = "-1s": must not be negative',
    )


STUDY = (
    SHORT.replace('cca = "cubic"', 'cca = "reno"\ncount = 4', 1)
    + '\n[[flows]]\ncca = "veno"\ncca_params = { beta = 4.5 }\n'
    + '\n[sweep]\n"bottleneck.per" = [1e-4]\n'
)


def test_a_study_given_to_run_points_to_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _one_line_error(
        *_main(capsys, "run", _file(tmp_path, STUDY)),
        "error: sweep: a study's [sweep] table",
        "tcplab sweep FILE",
    )


def test_sweep_translates_core_errors_numbering_flows_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the veno flow is the fifth flow the core sees (after four reno copies), the second table
    expected = "simulation core: flows[1].cca_params.beta: 4.5 is invalid for veno"
    scenario = _file(tmp_path, STUDY.split("[sweep]")[0], "one.toml")
    _one_line_error(*_main(capsys, "run", scenario), expected)
    study = _file(tmp_path, STUDY)
    db = str(tmp_path / "s.duckdb")
    _one_line_error(*_main(capsys, "sweep", study, "--db", db, "--no-progress"), expected)


def test_core_error_numbers_flows_by_table() -> None:
    tables = (1, 4, 2)  # flows 0 | 1 2 3 4 | 5 6 as the core numbers them
    for core, user in ((0, 0), (1, 1), (4, 1), (5, 2), (6, 2)):
        message = str(core_error(ValueError(f"flows[{core}].cca: bad"), tables))
        assert message == f"simulation core: flows[{user}].cca: bad"
    # without the tables, or past them, the core's number stays
    assert str(core_error(ValueError("flows[9].x: bad"), tables)).startswith(
        "simulation core: flows[9]"
    )
    assert str(core_error(ValueError("flows[3].x: bad"))) == "simulation core: flows[3].x: bad"


def test_results_of_an_unknown_study_and_a_bad_scheduler_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = _file(tmp_path, SHORT + '\n[sweep]\n"bottleneck.per" = [1e-4]\n')
    db = str(tmp_path / "r.duckdb")
    status, _out, err = _main(capsys, "sweep", study, "--db", db, "--no-progress")
    assert status == 0, err
    _one_line_error(*_main(capsys, "results", db, "--study", "nope"), "--study = 'nope'")
    _one_line_error(
        *_main(
            capsys, "sweep", study, "--db", db, "--executor", "dask", "--scheduler", "foo://x:1"
        ),
        "--scheduler = 'foo://x:1': not a scheduler address",
        "allowed: tcp://HOST:PORT",
    )


def test_rate_trace_errors_name_the_trace_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("time,rate\n0,4Mbps\n1s,20Tbps\n", encoding="utf-8")
    text = SHORT.replace('rate = "4Mbps"', 'rate = "4Mbps"\nrate_trace = "t.csv"', 1)
    _one_line_error(
        *_main(capsys, "run", _file(tmp_path, text)),
        "line 3: the rate 20Tbps is too large",
        "at most 10Tbps",
    )
    trace.write_text("1\n" + "9" * 30 + "\n", encoding="utf-8")
    text = SHORT.replace('rate = "4Mbps"', 'rate = "4Mbps"\ndelivery_trace = "t.csv"', 1)
    _one_line_error(*_main(capsys, "run", _file(tmp_path, text)), "line 2: ", "ms is too late")


def test_random_ts_offset_off_lets_lp_yield_to_reno(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TCP-LP (Kuzmanovic & Knightly 2003) uses only the capacity others leave: against a
    Reno flow it should get almost nothing. With Linux's random timestamp offsets it cannot
    read one-way delays and competes like Reno (README, "Notes on fidelity")."""
    import json

    text = (
        'name = "lp"\nduration = "20s"\n[bottleneck]\nrate = "10Mbps"\ndelay = "20ms"\n'
        '[[flows]]\ncca = "reno"\n[[flows]]\ncca = "lp"\n'
    )
    path = _file(tmp_path, text)
    shares = {}
    for offset in ("true", "false"):
        status, out, err = _main(
            capsys, "run", path, "--json", "--set", f"flows.1.tcp.random_ts_offset={offset}"
        )
        assert status == 0, err
        reno, lp = (f["goodput_bps"] for f in json.loads(out)["flows"])
        shares[offset] = lp / (reno + lp)
    assert shares["false"] < 0.1  # LP yields
    assert shares["true"] > 0.3  # LP blind to delay: a fair share, about


def test_a_swept_seed_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz: a `seed` axis collided with the run's own seed column (exit 1)."""
    study = _file(tmp_path, SHORT + '\n[sweep]\n"seed" = [1, 2]\n')
    _one_line_error(
        *_main(capsys, "sweep", study, "--db", str(tmp_path / "x.duckdb"), "--no-progress"),
        "sweep.seed = [1, 2]: a study's runs take their seeds from base_seed and repetitions",
    )
    assert not (tmp_path / "x.duckdb").exists()  # refused before the database is made
