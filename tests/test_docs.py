"""The documentation in the repository says what the code does: docs/algorithms.md has an
entry for every algorithm of the catalogue with its reference, its parameters and defaults and
its known differences; relative links of the Markdown files lead to files of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tcplab

REPO = Path(__file__).resolve().parents[1]
ALGORITHMS = REPO / "docs" / "algorithms.md"
MARKDOWN = [
    REPO / "README.md",
    REPO / "CHANGELOG.md",
    REPO / "scenarios" / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
]


def _sections() -> dict[str, str]:
    """Each `#### ...` entry of docs/algorithms.md by every algorithm name its heading names."""
    text = ALGORITHMS.read_text()
    parts = re.split(r"^#### ", text, flags=re.M)[1:]
    out: dict[str, str] = {}
    for part in parts:
        heading = part.splitlines()[0]
        body = " ".join(re.split(r"^##+ ", part, flags=re.M)[0].split())
        for name in re.findall(r"`([a-z0-9]+)`", heading.split("—")[0]):
            out[name] = body
    return out


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@pytest.mark.parametrize("info", tcplab.ccas(), ids=lambda info: info.name)
def test_every_algorithm_has_its_entry(info: tcplab.CcaInfo) -> None:
    sections = _sections()
    assert info.name in sections, f"docs/algorithms.md has no entry for {info.name}"
    body = sections[info.name]
    assert " ".join(info.reference.split()) in body, f"{info.name}: reference differs"
    for param in info.params:
        shown = f"`{param.name}` = {_number(param.default)}"
        assert shown in body, f"{info.name}: {shown} missing (catalogue default)"
    if not info.params:
        assert "**Parameters:** none." in body
    assert "**Modelled:**" in body and "**Differences from" in body


def test_the_entries_name_no_algorithm_the_catalogue_lacks() -> None:
    assert set(_sections()) == {info.name for info in tcplab.ccas()}


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_stay_in_the_repository(path: Path) -> None:
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        resolved = (path.parent / target).resolve()
        assert resolved.is_relative_to(REPO), f"{path.name}: {target} leads outside"
        assert resolved.exists(), f"{path.name}: {target} does not exist"


def _listed(text: str, label: str) -> set[str]:
    """The backquoted keys of the list item of docs/results.md that starts with `label`."""
    item = re.search(rf"^- {label}(.*?)(?=^- |^$)", text, flags=re.M | re.S)
    assert item is not None, label
    return set(re.findall(r"`([a-z0-9_]+)`", item.group(1)))


def test_the_json_keys_documented_are_the_ones_printed() -> None:
    """docs/results.md lists the keys of `tcplab run --json`; a run of a shipped scenario
    prints exactly those (the optional ones of CBR and PEP flows aside)."""
    text = (REPO / "docs" / "results.md").read_text()
    out = tcplab.run(REPO / "scenarios" / "lan.toml", duration="1s").to_json_dict()
    assert set(out) == _listed(text, "run:") - {"cbr_goodput_bps", "cross"}
    flow_keys = _listed(text, "a TCP flow:") - {"legs", "pep_buffer", "goodput_bps"}
    assert set(out["flows"][0]) == flow_keys | {"goodput_bps"}
    link_only = {"packets_tx", "bytes_tx", "queue_mean_bytes", "queue_max_bytes"}
    links = _listed(text, "`bottleneck`:") - {"bottleneck", "links"}
    assert set(out["bottleneck"]) == links - link_only
    assert set(out["links"][0]) == links


def test_the_input_limits_documented_are_the_ones_checked() -> None:
    """docs/limits.md states each limit with its value; a changed constant must change it."""
    from tcplab import files
    from tcplab import input_limits as il
    from tcplab.limits import LIMITS

    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in (REPO / "docs" / "limits.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| limit")
    }
    expected = {
        "bytes of a scenario or study file": f"{files.MAX_SCENARIO_FILE_BYTES} (16 MiB)",
        "bytes of a trace file per allowed line": str(files.MAX_TRACE_FILE_BYTES_PER_LINE),
        "nesting of arrays and tables": f"{il.MAX_NESTING_DEPTH} levels",
        "characters of a string or key": str(il.MAX_STRING_CHARS),
        "entries of one array or table": str(il.MAX_ITEMS),
        "integers": f"{il.MIN_INTEGER} to {il.MAX_INTEGER}",
        "characters of the number in a quantity": str(il.MAX_NUMBER_CHARS),
        "decimal exponent of a quantity": f"-{il.MAX_EXPONENT} to {il.MAX_EXPONENT}",
        "lines of a trace file": str(il.MAX_TRACE_LINES),
        "values of one swept range (`{log = [a, b], points = n}`)": str(il.MAX_POINTS),
        "repetitions of each grid point": str(il.MAX_REPETITIONS),
        "runs of one study (grid points x repetitions)": str(il.MAX_RUNS),
        "flows (after `count` expansion)": str(LIMITS.max_flows),
        "path segments": str(LIMITS.max_segments),
        "seed": f"0 to {LIMITS.max_seed}",
        "duration": f"at most {LIMITS.max_duration_ns // 10**9}s (30 days)",
        "one-way delay": f"at most {LIMITS.max_delay_ns // 10**9}s",
    }
    for name, value in expected.items():
        assert rows.get(name) == value, (name, rows.get(name))
