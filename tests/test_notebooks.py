"""The notebooks run top to bottom without errors (on the fixture matches, so the test is fast)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import FIXTURES

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"


@pytest.mark.parametrize("name", ["01_explore_data.ipynb"])
def test_notebook_executes(name, monkeypatch):
    monkeypatch.setenv("CRICKET_ATTN_SOURCES", str(FIXTURES))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("matches:      20" in o.get("text", "") for o in outputs)
