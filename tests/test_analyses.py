"""The record's analysis scripts (docs/analyses/) still run against today's package: each answers `--help`,
every name each imports from cricket_attn, at the top or inside a function, exists, and each runs on a tiny
run over the fixture matches (their full runs need trained models and the whole archive: the record says which)."""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import FIXTURES, empty_store

ANALYSES = sorted((Path(__file__).parents[1] / "docs" / "analyses").glob("*.py"))


def analysis(name: str):
    """The script `docs/analyses/<name>.py` loaded as `python docs/analyses/<name>.py` loads it (in this process:
    the imports are the suite's own)."""
    script = next(p for p in ANALYSES if p.name == f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"analysis_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_analysis(name: str, argv: list, monkeypatch, capsys) -> str:
    """What `python docs/analyses/<name>.py *argv` prints."""
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv)])
    analysis(name).main()
    return capsys.readouterr().out


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
    module = analysis(script.stem)
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {script.name}")


def test_the_calibration_before_the_first_ball_is_fitted_on_the_validation_season_alone(tmp_path, monkeypatch, capsys):
    """A simulator whose chances are 0.5 where the chasing side wins about 70% of the validation season: b moves
    them to that season's rate, and the same b (not refitted) is what the test's chances get."""
    module = analysis("before_calibration")
    script = next(p for p in ANALYSES if p.name == "before_calibration.py")
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


def test_the_chasing_sides_share_is_counted_over_the_games_before_eval_scores(monkeypatch, capsys):
    """Each season's row and a span's are the share the chasing side won (a tie half) of the games
    `cricket-attn-before-eval` scores: what the pre-match forecasts are scored against."""
    from cricket_attn.data.deliveries import config_tables
    from cricket_attn.simulation.before_eval import games_at_the_toss

    module = analysis("chasing")
    out = run_analysis("chasing", ["--sources", FIXTURES, "--spans", "2000-2030"], monkeypatch, capsys)
    rows = {r[0].strip("| "): r for r in (line.split(" | ") for line in out.splitlines()[3:]) if len(r) > 2}
    tables = config_tables("ipl", [FIXTURES])
    _, games, _ = games_at_the_toss(tables.deliveries, tables.matches)
    assert len(games) >= 5 and f"{len(games)} matches scored" in out
    for season, g in games.groupby("season"):
        assert int(rows[str(season)][1]) == len(g) and float(rows[str(season)][2]) == pytest.approx(
            g["won"].mean(), abs=5e-4
        )
    assert int(rows["2000-2030"][1]) == len(games)
    assert float(rows["2000-2030"][2]) == pytest.approx(games["won"].mean(), abs=5e-4)
    wilson = module.share(pd.Series([1.0] * 8 + [0.0] * 2))  # 8 of 10: Wilson's interval 0.490-0.943
    assert (round(wilson["ci_low"], 3), round(wilson["ci_high"], 3)) == (0.490, 0.943)
    assert module.span("2025") == (2025, 2025)
    for wrong in ("twenty-five", "2024-2008"):
        with pytest.raises(argparse.ArgumentTypeError, match="FIRST-LAST"):
            module.span(wrong)
    none = run_analysis("chasing", ["--sources", FIXTURES, "--competition", "Big Bash League"], monkeypatch, capsys)
    assert none.startswith("0 matches scored")  # the fixtures' matches are the IPL's


def test_the_teachers_trees_are_compared_on_the_fixture_matches(monkeypatch, capsys):
    """Two settings of the teacher's trees, fitted to 2024 on the fixture matches and scored on 2025: each a row
    with its out-of-fold and next-season log loss; settings that differ give other figures."""
    out = run_analysis(
        "teacher_trees",
        ["--sources", FIXTURES, "--fit-until", "2024", "--season", "2025", "--set", "today=",
         "--set", "small=num_leaves=3,feature_fraction=0.5"],
        monkeypatch, capsys,
    )  # fmt: skip
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| today") or line.startswith("| small")]
    assert [r[0] for r in rows] == ["| today", "| small"] and rows[1][1] == "num_leaves=3, feature_fraction=0.5"
    losses = [(float(r[2]), float(r[3])) for r in rows]
    assert all(1.0 < x < 2.5 for pair in losses for x in pair) and losses[0] != losses[1]
    with pytest.raises(argparse.ArgumentTypeError, match="give NAME=KEY=VALUE"):
        analysis("teacher_trees").setting("=num_leaves=3")


def test_the_analyses_run_on_a_fixture_run(tracked_run, tmp_path, monkeypatch, capsys):
    """Each analysis that reads models, scored tables or simulations runs on the tiny run over the fixture matches
    (refitted through 2024; its selected model, fitted to 2023, is the model a season back) and answers with its
    tables: a model paired with itself is level to the last digit."""
    from cricket_attn.commands.simulate_eval import main as simulate_eval
    from cricket_attn.data.deliveries import config_tables
    from cricket_attn.inference.serving import from_checkpoint

    model = tracked_run["results"]["checkpoint"]
    (season_back,) = (tracked_run["folder"] / "run" / "checkpoints").glob("best-*.ckpt")
    data = ["--sources", FIXTURES]

    out = run_analysis("arms", ["--split", "test", "--arm", f"a={model}", "--arm", f"b={model}", "--n-boot", 50, *data],
                       monkeypatch, capsys)  # fmt: skip
    assert "test (2025, 2026), 5 matches" in out and "| b | +0.00000 [+0.00000, +0.00000] |" in out

    run = tracked_run["folder"] / "run"  # calibrated on 2024 by its selected model, its refit tested on 2025-2026
    out = run_analysis("calibration", ["--run", run, "--n-boot", 50, *data], monkeypatch, capsys)
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith(f"| {run} |")]
    assert [row[1] for row in rows] == ["temperature and wicket offset", "temperature alone", "neither"]
    assert rows[1][3] == rows[2][3] == "+0.000" and rows[2][2] == "1.000" and rows[0][3] != "+0.000"
    calibration = from_checkpoint(model).model.cfg  # the run's own calibration, fitted the same way
    own = rows[0] if tracked_run["cfg"].calibrate_wickets else rows[1]
    assert own[2:4] == [f"{calibration.temperature:.3f}", f"{calibration.wicket_offset:+.3f}"]
    assert "| neither |" in out.split("mean of the runs")[1]

    d = config_tables("ipl", [str(FIXTURES)]).deliveries
    scored = from_checkpoint(model).score(d[d["season"] >= 2025])
    scored.to_parquet(tmp_path / "a.parquet")
    out = run_analysis("leagues", ["--pooled", tmp_path / "a.parquet", "--against", f"same={tmp_path / 'a.parquet'}",
                                   "--data", "ipl", "--min-matches", 1, *data], monkeypatch, capsys)  # fmt: skip
    assert "#### IPL (2025-2026): 5 matches" in out and "| same - pooled [95% CI] | +0.0000 [+0.0000, +0.0000] |" in out

    out = run_analysis("since_training", ["--model", model, "--seasons", 2025, 2026, *data], monkeypatch, capsys)
    assert f"{len(scored):,} balls of [2025, 2026]" in out and "players' form" in out

    out = run_analysis("form", ["--model", model, "--season-back-model", season_back, *data], monkeypatch, capsys)
    assert "balls chosen on 2024:" in out  # 2024's 3 matches by the model a season back, 2025-2026's 5 by the model
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [row[:3] for row in rows] == [["2024", "so", "far"], ["2024", "oracle", "745"],
                                         ["2025-2026", "so", "far"], ["2025-2026", "oracle", "1,200"]]  # fmt: skip

    out = run_analysis("bowler_rule", ["--model", model, "--seasons", 2025, *data], monkeypatch, capsys)
    assert "| 2025 | 111 |" in out  # the overs after each innings' first, of 2025's 3 matches

    uri = empty_store(tmp_path)
    sim = ["--model", model, "--sims", "4", "--plots", "0", "--check-sims", "0", "--tracking-uri", uri, *map(str, data)]
    assert simulate_eval([*sim, "--out", str(tmp_path / "sim")]) == 0
    capsys.readouterr()
    out = run_analysis("win_model", ["--chases", tmp_path / "sim" / "chases.parquet", *data], monkeypatch, capsys)
    assert out.startswith("93 chase over starts of 5 matches")
    assert "| simulator |" in out and "| logistic |" in out
    out = run_analysis("paired_simulations", [tmp_path / "sim", tmp_path / "sim"], monkeypatch, capsys)
    lines = out.splitlines()  # a run paired with itself: level in every figure
    assert len(lines) == 5 and all("+0.00" in line and " -> " in line for line in lines)
    before, after = out.split("Brier: ")[1].split(",")[0].split(" -> ")
    assert before == after and "+0.0000 [+0.0000, +0.0000]" in lines[0]
