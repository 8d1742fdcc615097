"""The record's analysis scripts (docs/analyses/) still run against today's package: each answers `--help`,
and every name each imports from cricket_attn, at the top or inside a function, exists. (Their full runs need
trained models and the whole archive: the record says which.)"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ANALYSES = sorted((Path(__file__).parents[1] / "docs" / "analyses").glob("*.py"))


def test_there_are_analyses():
    assert len(ANALYSES) >= 5


@pytest.mark.parametrize("script", ANALYSES, ids=lambda p: p.name)
def test_an_analysis_imports_only_what_exists(script):
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cricket_attn"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cricket_attn"):
                    importlib.import_module(alias.name)
    assert missing == []


@pytest.mark.parametrize("script", ANALYSES, ids=lambda p: p.name)
def test_an_analysis_answers_help(script, monkeypatch, capsys):
    """Loaded as `python docs/analyses/<script>` loads it (in this process: the imports are the suite's own)."""
    spec = importlib.util.spec_from_file_location(f"analysis_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {script.name}")


def test_the_calibration_before_the_first_ball_is_fitted_on_the_validation_season_alone(tmp_path, monkeypatch, capsys):
    """A simulator whose chances are 0.5 where the chasing side wins about 70% of the validation season: b moves
    them to that season's rate, and the same b (not refitted) is what the test's chances get."""
    script = next(p for p in ANALYSES if p.name == "before_calibration.py")
    spec = importlib.util.spec_from_file_location("analysis_before_calibration", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    for name, rate in (("validation", 0.7), ("test", 0.4)):
        won = (rng.random(400) < rate).astype(float)
        folder = tmp_path / name
        folder.mkdir()
        pd.DataFrame({"match_id": range(400), "won": won, "simulator": 0.5, "logistic": rate, "elo": 0.5}).to_csv(
            folder / "before.csv", index=False
        )
    won = pd.read_csv(tmp_path / "validation" / "before.csv")["won"].to_numpy()
    b = module.fit_shift(np.full(400, 0.5), won)
    assert module.shifted(np.array([0.5]), b)[0] == pytest.approx(won.mean(), abs=1e-3) and won.mean() > 0.6
    argv = [str(script), "--validation", str(tmp_path / "validation"), "--test", str(tmp_path / "test")]
    monkeypatch.setattr(sys, "argv", argv)
    module.main()
    out = capsys.readouterr().out
    assert f"b = {b:+.3f}" in out and "test: 400 matches" in out
    test = out[out.index("test: 400 matches") :]
    calibrated = float(test.split("| simulator_calibrated | ")[1].split(" |")[0])  # its Brier on the test
    assert calibrated > 0.25  # the validation's shift, wrong for the test's rate: worse than a coin there
