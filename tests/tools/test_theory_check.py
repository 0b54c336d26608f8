"""`python -m tcplab.tools.theory_check` (the README's theory table), on short runs."""

from __future__ import annotations

import pytest
from tcplab.tools import theory_check


def test_theory_check_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    theory_check.main(["--scale", "0.01"])
    out = capsys.readouterr().out
    for text in ("Mathis", "Padhye", "64 KB rwnd", "segments/RTT"):
        assert text in out
