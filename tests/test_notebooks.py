"""The notebooks run top to bottom without errors (on the fixture matches, so the test is fast)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import FIXTURES

pytestmark = pytest.mark.e2e  # each notebook runs in its own kernel

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"


def run_with_model(name: str, checkpoint: str, monkeypatch, **env: str) -> list:
    """Notebook `name` run in its own kernel on the fixture matches with the model `checkpoint` (and any
    more settings in `env`), its figures inline; its code cells' outputs, none an error."""
    monkeypatch.setenv("CRICKET_ATTN_MODEL", checkpoint)
    monkeypatch.setenv("CRICKET_ATTN_SOURCES", str(FIXTURES))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend, so figures are outputs
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


@pytest.mark.parametrize("name", ["01_explore_data.ipynb"])
def test_notebook_executes(name, monkeypatch):
    monkeypatch.setenv("CRICKET_ATTN_SOURCES", str(FIXTURES))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("matches:      20" in o.get("text", "") for o in outputs)


def test_experiments_notebook_reads_the_runs_back(baselines_run, tracked_run, monkeypatch):
    monkeypatch.setenv("CRICKET_ATTN_MLFLOW_URI", tracked_run["uri"])
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend, so figures are outputs
    nb = nbformat.read(NOTEBOOKS / "02_experiments.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = "".join(o.get("data", {}).get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "gradient_boosting" in html and "transformer" in html
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= 2


def test_attention_notebook_walks_through_a_real_innings(tracked_run, monkeypatch):
    outputs = run_with_model("03_attention.ipynb", tracked_run["results"]["checkpoint"], monkeypatch)
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) == 2  # the innings and the ball
    text = "".join(o.get("text", "") for o in outputs)
    assert "1 layers x 2 heads" in text and "layer 0 head 1:" in text
    assert any("previous ball" in o.get("data", {}).get("text/markdown", "") for o in outputs)


def test_simulation_notebook_projects_a_match_and_answers_what_if(tracked_run, monkeypatch):
    checkpoint = tracked_run["results"]["checkpoint"]
    outputs = run_with_model("04_simulation.ipynb", checkpoint, monkeypatch, CRICKET_ATTN_SIMS="8")
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) == 2  # the worm and the win probability
    tables = [o["data"]["text/plain"] for o in outputs if o.output_type == "execute_result"]
    assert len(tables) == 3 and "win_probability" in tables[0]
    assert "position" in tables[1] and "overs_bowled" in tables[2]  # who comes in, who bowls
    assert "8 simulations per state" in "".join(o.get("text", "") for o in outputs)


def test_players_notebook_ranks_a_seasons_leaders_and_draws_a_card(tracked_run, monkeypatch):
    checkpoint = tracked_run["results"]["checkpoint"]
    env = {"CRICKET_ATTN_SEASON": "2024", "CRICKET_ATTN_MIN_BALLS": "20"}
    outputs = run_with_model("05_players.ipynb", checkpoint, monkeypatch, **env)
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) == 2  # the leaders and the card
    tables = [o["data"]["text/plain"] for o in outputs if o.output_type == "execute_result"]
    assert len(tables) == 3 and "runs_above_expected" in tables[0] and "runs_saved" in tables[1]
    assert "season 2024: 3 matches" in "".join(o.get("text", "") for o in outputs)


def test_projections_notebook_plays_a_match_before_the_toss_and_its_matchups(tracked_run, monkeypatch):
    checkpoint = tracked_run["results"]["checkpoint"]
    outputs = run_with_model("06_projections.ipynb", checkpoint, monkeypatch, CRICKET_ATTN_SIMS="8")
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) == 3  # the chance, the lines, the matchups
    tables = [o["data"]["text/plain"] for o in outputs if o.output_type == "execute_result"]
    assert len(tables) == 4 and "order_weight" in tables[0] and "fantasy_mean" in tables[1]
    printed = "".join(o.get("text", "") for o in outputs)
    pairs = re.search(
        r"six players with the most expected points, .* \(pairs from ([-+]\d\.\d\d) to ([-+]\d\.\d\d)\)", printed
    )
    assert pairs and -1 <= float(pairs[1]) <= float(pairs[2]) <= 1 and "8 simulations" in printed
    assert "model_runs" in tables[3] and "8 simulations of the match" in printed
