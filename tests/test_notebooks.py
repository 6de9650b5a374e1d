"""Every notebook in notebooks/ runs top to bottom (its cells assert the numbers they show), and is stored executed.

The stored outputs are what a reader sees on a code host: `python notebooks/execute.py` re-executes the notebooks in
place and stores each chart as a PNG.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
VEGA_LITE = "application/vnd.vegalite."  # Altair's mimetype renderer: a spec that a code host cannot draw
MAX_STORED_BYTES = 300_000


def test_there_is_at_least_one_notebook():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_executes(path):
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_is_stored_executed(path):
    code = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), "not executed top to bottom"
    outputs = [output for cell in code for output in cell.outputs]
    failures = [output for output in outputs if output.output_type == "error" or output.get("name") == "stderr"]
    assert not failures, "an error or stderr output"
    shown = [output.get("data", {}) for output in outputs]
    # An Altair chart: its text repr is alt.Chart(...), alt.LayerChart(...) whatever the renderer
    charts = [data for data in shown
              if data.get("text/plain", "").startswith("alt.") or any(key.startswith(VEGA_LITE) for key in data)]
    assert all("image/png" in data for data in charts), "a chart stored without its PNG"
    assert any("image/png" in data or "<table" in data.get("text/html", "") for data in shown), "no table, no plot"
    assert path.stat().st_size < MAX_STORED_BYTES
