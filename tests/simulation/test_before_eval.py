"""The evaluation before the first ball (`cricket_attn.simulation.before_eval`): who chases as the toss decides,
the scores paired by match, each player's real figures and his last ten matches, the simulated lines, a stopped
run continued, the command."""

from __future__ import annotations

import argparse
from itertools import product

import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from cricket_attn.commands.before_eval import main, unfinished_folder
from cricket_attn.laws import bowler_wickets
from cricket_attn.simulation.before_eval import (
    LINE_FIGURES,
    before_matches,
    listed_players,
    real_figures,
    recent_quantiles,
    score,
    simulate_before,
    unknown_players,
)
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def ipl_games(ipl_tables):
    games, left = before_matches(ipl_tables.matches)
    return games, left


def test_the_chasing_side_is_the_one_the_toss_sends_in_second(ipl_tables, ipl_games):
    games, left = ipl_games
    d = ipl_tables.deliveries
    second = d[d["innings"] == 2].groupby(d["match_id"].astype(str))["batting_team"].first()
    assert (games["chasing"] == games["match_id"].map(second)).all()  # the real chase, every game with one
    winners = ipl_tables.matches.set_index(ipl_tables.matches["match_id"].astype(str))["winner"]
    decided = games[games["won"] != 0.5]
    assert (decided["won"] == (decided["match_id"].map(winners) == decided["chasing"])).all()
    assert left["no result"] > 0 and left["not simulated before the first ball"] > 0  # abandoned; XIs of 13
    assert len(games) + sum(left.values()) == len(ipl_tables.matches)
    assert games["date"].is_monotonic_increasing


def test_the_scores_are_paired_baseline_minus_simulator():
    games = pd.DataFrame(
        {
            "season": [2025] * 4,
            "competition": ["X"] * 4,
            "won": [1.0, 0.0, 1.0, 0.5],
            "simulator": [0.9, 0.1, 0.8, 0.5],
            "logistic": [0.5] * 4,
            "elo": [0.4, 0.6, 0.4, 0.5],
        }
    )
    table, paired = score(games, 1e-3)
    every = table.set_index("matches").loc["every match"]
    assert every["simulator_brier"] == pytest.approx((0.01 + 0.01 + 0.04 + 0) / 4)
    assert every["logistic_brier"] == pytest.approx(0.25 * 3 / 4)
    row = paired[(paired["against"] == "logistic") & (paired["metric"] == "brier")].iloc[0]
    assert row["diff"] == pytest.approx(every["logistic_brier"] - every["simulator_brier"]) and row["diff"] > 0
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]


def test_each_listed_players_real_figures_add_up_to_the_sides(ipl_tables):
    d, m = ipl_tables.deliveries, ipl_tables.matches
    some = m[m["season"] == 2025].head(4)
    figures = real_figures(d[d["match_id"].astype(str).isin(some["match_id"].astype(str))], some)
    regular = d[d["match_id"].astype(str).isin(some["match_id"].astype(str)) & ~d["is_super_over"].astype(bool)]
    runs = regular.groupby([regular["match_id"].astype(str), "batting_team"])["runs_batter"].sum()
    wickets = (
        pd.Series(bowler_wickets(regular))
        .groupby([regular["match_id"].astype(str).to_numpy(), regular["bowling_team"].astype(str).to_numpy()])
        .sum()
    )
    by_side = figures.groupby(["match_id", "team"])[["runs", "wickets"]].sum()
    assert np.allclose(by_side["runs"], runs.reindex(by_side.index)) and by_side["runs"].gt(100).all()
    assert np.allclose(by_side["wickets"], wickets.reindex(by_side.index))
    assert set(figures.groupby("match_id").size()) <= {22, 23, 24}  # both XIs, each with its impact player


def test_recent_quantiles_read_the_players_last_ten_earlier_matches(ipl_tables):
    figures = real_figures(ipl_tables.deliveries, ipl_tables.matches)
    recent = recent_quantiles(figures)
    row = figures[(figures["player"] == "V Kohli") & (figures["date"].dt.year == 2025)].index[0]
    his = figures[(figures["key"] == figures.loc[row, "key"]) & (figures["date"] < figures.loc[row, "date"])]
    last = his.sort_values("date")["runs"].tail(10).to_numpy()
    assert recent.loc[row, "recent_matches"] == 10
    assert recent.loc[row, ["recent_runs_q10", "recent_runs_q50", "recent_runs_q90"]].tolist() == pytest.approx(
        np.quantile(last, [0.1, 0.5, 0.9]).tolist()
    )
    debut = figures.sort_values("date").groupby("key").head(1).index
    assert recent.loc[debut, "recent_runs_q50"].isna().all() and (recent.loc[debut, "recent_matches"] == 0).all()


def test_unknown_players_are_one_match_renamed(ipl_tables):
    m = ipl_tables.matches
    match_id = str(m["match_id"].iloc[-1])
    (row,) = unknown_players(m, match_id).to_dict("records")
    real = m[m["match_id"].astype(str) == match_id].iloc[0]
    assert row["team1_players"].split(";") == [
        f"{real['team1']} #{i}" for i in range(len(real["team1_players"].split(";")))
    ]
    assert pd.isna(row["team1_player_ids"]) and pd.isna(row["team2_player_ids"]) and row["venue"] == real["venue"]


def test_the_lines_before_the_first_ball_hold_every_listed_player_twice(fixture_simulator, phases):
    from tests.simulation.test_before import MATCH, before

    matches, _ = before(phases)
    chances, lines = simulate_before(fixture_simulator, matches, pd.DataFrame({"match_id": [MATCH]}), 16, 0, True)
    assert 0 <= chances[0] <= 1
    assert len(lines) == len(listed_players(matches)) and lines["player"].is_unique
    for figure in LINE_FIGURES:
        assert lines[figure].notna().all() and lines[f"unknown_{figure}"].notna().all()
    for prefix, figure in product(("", "unknown_"), ("runs", "wickets")):  # the quantiles are the draws'
        draws = np.stack(lines[f"{prefix}{figure}_draws"].to_list())
        assert draws.shape == (len(lines), 16)
        assert np.allclose(lines[f"{prefix}{figure}_q90"], np.quantile(draws, 0.9, axis=1))


def test_a_stopped_evaluation_reads_the_matches_it_finished(fixture_simulator, phases, tmp_path):
    from tests.simulation.test_before import MATCH, before

    matches, _ = before(phases)
    games = pd.DataFrame({"match_id": [MATCH]})
    chances, lines = simulate_before(fixture_simulator, matches, games, 8, 0, True, tmp_path)
    kept = tmp_path / f"{MATCH}.parquet"
    assert kept.exists() and [p.name for p in tmp_path.iterdir()] == [kept.name]  # no temporary file left
    again, lines_again = simulate_before(fixture_simulator, matches, games, 8, 0, True, tmp_path)
    assert again.tolist() == chances.tolist()
    assert np.stack(lines_again["runs_draws"].to_list()).tolist() == np.stack(lines["runs_draws"].to_list()).tolist()
    pd.read_parquet(kept).assign(chance=0.123).to_parquet(kept)  # what is kept is read, not simulated again
    assert simulate_before(fixture_simulator, matches, games, 8, 0, True, tmp_path)[0].tolist() == [0.123]


def test_the_kept_matches_are_named_by_what_decides_them(ipl_tables, tmp_path):
    m = ipl_tables.matches
    test = pd.DataFrame({"match_id": [str(m["match_id"].iloc[-1])]})
    args = argparse.Namespace(out=tmp_path, sims=8, seed=0, players=True)
    torch.manual_seed(0)
    model, other = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    kept = unfinished_folder(args, model, "key", m, test)
    assert kept.parent == tmp_path and unfinished_folder(args, model, "key", m, test) == kept
    for changed in ({"sims": 9}, {"seed": 1}, {"players": False}):
        assert unfinished_folder(argparse.Namespace(**{**vars(args), **changed}), model, "key", m, test) != kept
    assert unfinished_folder(args, other, "key", m, test) != kept  # other weights
    assert unfinished_folder(args, model, "other data", m, test) != kept
    swapped = m.assign(toss_decision=m["toss_decision"].map({"bat": "field", "field": "bat"}))
    assert unfinished_folder(args, model, "key", swapped, test) != kept


def test_the_command_writes_and_logs_its_report(tracked_run, tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "before"
    model = tracked_run["results"]["checkpoint"]
    common = ["--model", model, "--sims", "4", "--sources", str(FIXTURES), "--tracking-uri", uri, "--out", str(out)]
    assert main([*common, "--test", "2025", "2026"]) == 0
    report = (out / "before.md").read_text()
    assert "5 matches of 2025, 2026, 4 simulations each" in report and "Each player's runs and wickets" in report
    games = pd.read_csv(out / "before.csv")
    assert len(games) == 5 and games[["simulator", "logistic", "elo"]].apply(lambda p: p.between(0, 1).all()).all()
    assert set(pd.read_csv(out / "players.csv")["match_id"].astype(str)) == set(games["match_id"].astype(str))
    assert not list(out.glob(".unfinished-*"))  # the matches kept while it ran go once the files are written
    (run,) = MlflowClient(uri).search_runs(MlflowClient(uri).get_experiment_by_name("cricket_attn").experiment_id)
    assert run.data.tags["model_family"] == "simulator" and "before/simulator_brier" in run.data.metrics
    capsys.readouterr()
    assert main([*common, "--train-until", "2017", "--test", "2025"]) == 2  # too few earlier matches to fit on
    assert capsys.readouterr().err.splitlines() == [
        "cricket-attn-before-eval: --train-until 2017: 4 matches won or lost to fit the baselines on (at least 10, "
        "some won by each side)"
    ]


def test_simulations_that_would_not_fit_in_memory_are_refused_before_anything_is_read(tmp_path, capsys, monkeypatch):
    """--sims of one match that would not fit is one line naming the estimate and the most this machine takes,
    before the model or the data is read (not even the store is made); with the players' figures each match is
    simulated twice, so half as many fit."""
    import re

    from cricket_attn.commands import before_eval

    monkeypatch.setattr(before_eval, "load_with_data", lambda *a, **k: pytest.fail("the model was read"))
    out, most = tmp_path / "before", {}
    for players in ("--players", "--no-players"):
        argv = ["--model", "model.ckpt", "--sims", "1000000000000", "--out", str(out), players]
        assert main([*argv, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]) == 2
        err = capsys.readouterr().err.strip()
        assert re.fullmatch(
            r"cricket-attn-before-eval: --sims 1,000,000,000,000: would need about [\d,.]+ TiB of memory, more than "
            r"the [\d.]+ GiB free here; at most [\d,]+ on this machine now",
            err,
        )
        most[players] = int(err.rsplit("at most ", 1)[1].split()[0].replace(",", ""))
    assert 1_000 < most["--players"] < 1_000_000_000
    assert most["--no-players"] / most["--players"] == pytest.approx(2, rel=0.05)
    assert not out.exists() and not (tmp_path / "mlflow.db").exists()
