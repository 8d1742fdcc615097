"""Matchups: the model's view of a batter facing a bowler in real situations, the pair's raw record as of the day,
and the pair baseline of issue 55's floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.commands.matchups import main
from cricket_attn.inference.matchups import (
    MatchupError,
    check_setting,
    matchup_innings,
    matchup_table,
    pair_baseline,
    player_key,
    raw_record,
    situations,
)
from cricket_attn.inference.serving import load_trained
from cricket_attn.laws import OUTCOME_RUNS, outcome_codes
from cricket_attn.metrics import PROB_COLUMNS
from tests.conftest import FIXTURES

IPL = "Indian Premier League"


def test_the_raw_record_counts_the_pairs_deliveries_before_the_day(deliveries):
    d = deliveries
    rahane, boult = player_key(d, "batter", "AM Rahane"), player_key(d, "bowler", "TA Boult")
    met = d[(d["batter"] == "AM Rahane") & (d["bowler"] == "TA Boult")]
    days = sorted(met["date"].unique())
    assert len(days) == 2
    whole = raw_record(d, rahane, boult, days[1] + pd.Timedelta(days=1))
    first = raw_record(d, rahane, boult, days[1])  # the second day's deliveries are not before it
    assert whole["raw_deliveries"] == len(met) and first["raw_deliveries"] == (met["date"] == days[0]).sum()
    assert whole["raw_runs"] == pytest.approx(OUTCOME_RUNS[outcome_codes(met)].mean())
    for figure in ("runs", "wicket", "boundary"):
        assert 0 <= whole[f"raw_{figure}_low"] <= whole[f"raw_{figure}"] <= whole[f"raw_{figure}_high"]
    assert raw_record(d, rahane, boult, days[0])["raw_deliveries"] == 0
    with pytest.raises(MatchupError, match="batter 'Nobody': not in the data"):
        player_key(d, "batter", "Nobody")


def test_a_situation_is_played_by_the_batter_and_bowler_asked_throughout(deliveries):
    d = deliveries
    points = situations(d, IPL, "death", "2026-01-01", 6, seed=0)
    assert len(points) == 6 and set(d.loc[d["delivery_index"].isin(points["delivery_index"]), "season"]) >= {2025}
    bat, bowl = ("MS Dhoni", "id-dhoni"), ("JJ Bumrah", "id-bumrah")
    out = matchup_innings(d, points, bat, bowl, "Eden Gardens", "Kolkata", "2026-01-01", "m")
    for i, (match_id, number, index) in enumerate(points.itertuples(index=False)):
        mine = out[out["match_id"] == f"m-{i}"]
        if mine.empty:
            continue  # one of them on the field in that innings already
        real = d[(d["match_id"] == match_id) & (d["innings"] == number) & (d["delivery_index"] <= index)]
        assert len(mine) == len(real) and (mine["venue"] == "Eden Gardens").all()
        assert mine.iloc[-1]["batter"] == "MS Dhoni" and mine.iloc[-1]["bowler"] == "JJ Bumrah"
        striker, bowler = real.iloc[-1]["batter"], real.iloc[-1]["bowler"]
        assert (mine["batter"].eq("MS Dhoni").to_numpy() == real["batter"].eq(striker).to_numpy()).all()
        assert (mine["bowler"].eq("JJ Bumrah").to_numpy() == real["bowler"].eq(bowler).to_numpy()).all()
        assert (mine.loc[mine["batter"] == "MS Dhoni", "batter_id"] == "id-dhoni").all()


def test_the_pair_baseline_reads_the_pairs_earlier_days_only(deliveries):
    d = deliveries
    met = d[(d["batter"] == "AM Rahane") & (d["bowler"] == "TA Boult")].sort_values(["date", "delivery_index"])
    second_day = met[met["date"] == met["date"].max()]
    out = pair_baseline(d, second_day[["match_id", "innings", "delivery_index"]], strength=0.0)
    earlier = met[met["date"] < met["date"].max()]
    assert (out["pair_deliveries"] == len(earlier)).all()
    counts = np.bincount(outcome_codes(earlier), minlength=len(PROB_COLUMNS))
    assert out[[f"pair_{c}" for c in PROB_COLUMNS]].iloc[0].to_numpy() == pytest.approx(counts / counts.sum())
    shrunk = pair_baseline(d, second_day[["match_id", "innings", "delivery_index"]], strength=1e9)
    row = shrunk[[f"pair_{c}" for c in PROB_COLUMNS]].to_numpy()
    assert np.allclose(row.sum(axis=1), 1) and (row > 0).all()  # the players' own records: nothing impossible


def test_the_table_and_its_picture(tracked_run, deliveries, tmp_path, capsys):
    trained = load_trained(tracked_run["results"]["checkpoint"])
    table = matchup_table(
        trained, deliveries, ["AM Rahane"], ["TA Boult", "Yash Dayal"], "2026-06-01", "Eden Gardens", "Kolkata", IPL,
        ["powerplay", "death"], n=8,
    )  # fmt: skip
    assert len(table) == 4 and (table["situations"] > 0).all()
    assert table[["model_runs", "model_wicket", "model_boundary"]].apply(lambda x: x.between(0, 6).all()).all()
    met = (deliveries["batter"] == "AM Rahane") & (deliveries["bowler"] == "TA Boult")
    in_phases = deliveries["phase"].astype(str).isin(["powerplay", "death"])
    assert table.loc[table["bowler"] == "TA Boult", "raw_deliveries"].sum() == (met & in_phases).sum() > 0
    model = tracked_run["results"]["checkpoint"]
    common = ["--model", model, "--sources", str(FIXTURES), "--venue", "Eden Gardens"]
    out = tmp_path / "t.csv"
    args = [*common, "--batter", "AM Rahane", "--bowlers", "TA Boult", "--date", "2026-06-01", "--situations", "4"]
    assert main([*args, "--out", str(out), "--plot", str(tmp_path / "t.png")]) == 0
    assert len(pd.read_csv(out)) == 3 and (tmp_path / "t.png").stat().st_size > 10_000
    capsys.readouterr()
    assert main([*common, "--batter", "Nobody", "--bowlers", "TA Boult"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "cricket-attn-matchups: batter 'Nobody': not in the data (names as the match files write them)"
    ]
    tables = tmp_path / "bowler.csv"  # the other way round: a bowler against batters
    args = [*common, "--bowler", "TA Boult", "--batters", "AM Rahane", "V Kohli", "--date", "2026-06-01"]
    assert main([*args, "--situations", "2", "--phases", "death", "--out", str(tables)]) == 0
    assert sorted(pd.read_csv(tables)["batter"]) == ["AM Rahane", "V Kohli"]
    capsys.readouterr()
    for wrong, message in (
        (["--venue", "Eden Gardns", "--date", "2026-06-01"], "venue 'Eden Gardns': no ball of it in the data before "
         "2026-06-01; closest: 'Eden Gardens, Kolkata'"),
        (["--venue", "Eden Gardens", "--competition", "Big Bash", "--date", "2026-06-01"], "competition 'Big Bash'"),
        (["--venue", "Eden Gardens", "--date", "2001-01-01"], "date 2001-01-01: before the data's first match (2008-"),
    ):  # fmt: skip
        assert main([*common[:4], *wrong, "--batter", "AM Rahane", "--bowlers", "TA Boult"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"cricket-attn-matchups: {message}"), err


def test_a_ground_is_known_however_it_is_written(deliveries):
    """Eden Gardens with its city or without, Wankhede with a comma: one ground; a slip is refused by its field."""
    for venue, city in (("Eden Gardens", "Kolkata"), ("Eden Gardens, Kolkata", None), ("Wankhede Stadium", None)):
        check_setting(deliveries, "2026-06-01", venue, city, IPL)
    with pytest.raises(MatchupError, match="venue 'Eden Garden': no ball of it in the data before 2026-06-01"):
        check_setting(deliveries, "2026-06-01", "Eden Garden", "Kolkata", IPL)


def test_the_evaluation_scores_the_pairs_that_had_met_and_logs_a_run(tracked_run, deliveries, tmp_path, capsys):
    """`--evaluate` on the fixtures: 2025's deliveries of pairs that had met before the day, the model against
    the pairs' shrunk records (the shrinkage chosen on 2024), paired by pair, the balls written and a run logged."""
    from mlflow.tracking import MlflowClient

    from tests.conftest import empty_store

    uri, out = empty_store(tmp_path), tmp_path / "balls.csv"
    model = tracked_run["results"]["checkpoint"]
    args = ["--model", model, "--sources", str(FIXTURES), "--evaluate", "--test", "2025", "--choose-on", "2024"]
    assert main([*args, "--tracking-uri", uri, "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    balls = pd.read_csv(out, dtype={"match_id": str})
    assert set(balls["match_id"]) <= set(deliveries.loc[deliveries["season"] == 2025, "match_id"].astype(str))
    assert len(balls) > 0 and {"model_log_loss", "pair_log_loss", "pair_deliveries"} <= set(balls.columns)
    assert (balls["pair_deliveries"] > 0).all() and balls["match_id"].nunique() > 1
    assert f"{balls['model_log_loss'].mean():.4f}" in printed and "pair record minus model" in printed
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("cricket_attn").experiment_id])
    assert run.data.tags["model_family"] == "matchups" and "matchups/diff" in run.data.metrics
