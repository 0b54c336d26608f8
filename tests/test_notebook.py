"""The example notebook runs, as a user runs it: copied with `tcplab examples copy` and
executed cell by cell in a Jupyter kernel (nbclient), so it cannot rot. Its own cells assert
Reno against the Mathis bound written out by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]


def test_the_example_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's own paths, no warning
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    copy = subprocess.run(
        [sys.executable, "-m", "tcplab", "examples", "copy", "ex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert copy.returncode == 0, copy.stderr
    path = tmp_path / "ex" / "tutorial.ipynb"
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    text = "".join(out.get("text", "") for out in outputs)
    assert "goodput" in text and "mathis_bps" in text
    # the figure was drawn: an image among the outputs
    assert any("image/png" in out.get("data", {}) for out in outputs)
