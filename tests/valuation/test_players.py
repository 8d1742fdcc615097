"""Per player and role: sums of his balls, intervals that resample his matches, a rank among those with
enough balls; and whether a measure holds from one season to the next."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.valuation.expected import ClassValues, ball_values
from cricket_attn.valuation.players import player_values, value_matches
from cricket_attn.valuation.reliability import season_to_season, split_half
from tests.valuation.test_expected import tiny_model


@pytest.fixture(scope="module")
def balls(deliveries):
    trained = tiny_model(deliveries, "records")
    return ball_values(trained, deliveries, ClassValues.fit(deliveries[deliveries["season"] <= 2023]))


def test_a_players_row_sums_his_balls_in_his_role(balls):
    table = player_values(balls, by=["season"], min_balls=30, n_boot=200)
    batting = table[table["role"] == "batting"].set_index(["season", "player_id"])
    faced = balls[balls["faced"]]
    sums = faced.groupby(["season", "batter_key"]).agg(
        balls=("faced", "size"),
        runs=("runs", "sum"),
        rae=("runs_above_expected", "sum"),
        matches=("match_id", "nunique"),
    )
    sums.index.names = ["season", "player_id"]
    assert len(batting) == len(sums)
    np.testing.assert_array_equal(batting.loc[sums.index, "balls"], sums["balls"])
    np.testing.assert_array_equal(batting.loc[sums.index, "matches"], sums["matches"])
    np.testing.assert_allclose(batting.loc[sums.index, "runs_above_expected"], sums["rae"])
    np.testing.assert_allclose(batting.loc[sums.index, "runs"], sums["runs"])
    bowling = table[table["role"] == "bowling"].set_index(["season", "player_id"])
    legal = balls.groupby(["season", "bowler_key"])["legal"].sum()
    np.testing.assert_array_equal(bowling.loc[legal.index.rename(["season", "player_id"]), "balls"], legal)
    saved = balls.groupby(["season", "bowler_key"])["runs_saved"].sum()
    np.testing.assert_allclose(bowling.loc[saved.index.rename(["season", "player_id"]), "runs_saved"], saved)
    np.testing.assert_allclose(table["runs_saved_per_100"].dropna(), 100 * table["runs_saved"].dropna() /
                               table.loc[table["runs_saved"].notna(), "balls"])  # fmt: skip


def test_only_players_with_enough_balls_are_ranked_best_first(balls):
    table = player_values(balls, by=["season"], min_balls=30, n_boot=200)
    for (_, role), group in table.groupby(["season", "role"]):
        value = "runs_above_expected" if role == "batting" else "runs_saved"
        ranked = group[group["rank"].notna()].sort_values("rank")
        assert (ranked["balls"] >= 30).all() and group.loc[group["rank"].isna(), "balls"].lt(30).all()
        assert ranked[value].is_monotonic_decreasing and list(ranked["rank"]) == list(range(1, len(ranked) + 1))


def test_an_interval_resamples_the_players_matches(balls):
    """The interval of a batter's total: in each draw (a Poisson(1) weight for every match, the same for
    every player), his weighted mean per match times the matches he played; brute force against the
    sparse products."""
    n_boot = 300
    table = player_values(balls, by=[], min_balls=1, n_boot=n_boot, seed=4)
    matches = pd.Index(pd.unique(balls["match_id"].astype(str)))
    weights = np.random.default_rng(4).poisson(1.0, size=(n_boot, len(matches)))
    faced = balls[balls["faced"]]
    busiest = faced["batter_key"].value_counts().index[0]
    per_match = (
        faced[faced["batter_key"] == busiest].groupby(faced["match_id"].astype(str))["runs_above_expected"].sum()
    )
    mine = weights[:, matches.get_indexer(per_match.index)]
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (mine @ per_match.to_numpy()) / mine.sum(axis=1) * len(per_match)  # his mean per match, times his
    row = table[(table["role"] == "batting") & (table["player_id"] == busiest)].iloc[0]
    assert row["matches"] == len(per_match) > 1
    assert row["runs_above_expected_low"] == pytest.approx(np.nanpercentile(boot, 2.5))
    assert row["runs_above_expected_high"] == pytest.approx(np.nanpercentile(boot, 97.5))


def test_value_matches_needs_the_models_training_seasons(deliveries):
    trained = tiny_model(deliveries, "records")
    later = deliveries[deliveries["season"] >= 2025]
    with pytest.raises(ValueError, match=r"no deliveries of the model's training seasons \(2008-2023\)"):
        value_matches(trained, later)
    balls, table = value_matches(trained, later, known=deliveries, n_boot=100)
    assert set(balls["season"]) == set(later["season"]) and set(table["role"]) == {"batting", "bowling"}


def synthetic(players: int = 40, seasons=(2023, 2024), matches: int = 12, seed: int = 0) -> pd.DataFrame:
    """Balls of batters whose runs above expected per ball is a fixed talent plus noise, and whose runs
    (the raw strike rate) are pure noise: the value holds from season to season, the raw rate does not."""
    rng = np.random.default_rng(seed)
    talent = rng.normal(0, 0.3, players)
    rows = []
    for season in seasons:
        for p in range(players):
            for m in range(matches):
                n = 25
                rows.append(pd.DataFrame({
                    "match_id": f"{season}-{p}-{m}", "season": season, "batter_key": f"p{p}", "batter": f"P {p}",
                    "faced": True, "runs": rng.poisson(1.3, n).astype(float),
                    "runs_above_expected": talent[p] + rng.normal(0, 0.5, n),
                    "bowler_key": "b", "legal": False, "conceded": 0.0, "runs_saved": 0.0,
                }))  # fmt: skip
    return pd.concat(rows, ignore_index=True)


def test_a_stable_value_holds_from_season_to_season_and_noise_does_not():
    table = season_to_season(synthetic(), [(2023, 2024)], min_balls=200, n_boot=300)
    batting = table[table["role"] == "batting"].iloc[0]
    assert batting["players"] == 40
    assert batting["value_r"] > 0.8 and abs(batting["raw_r"]) < 0.4 and batting["difference_low"] > 0
    assert batting["value_r_low"] < batting["value_r"] < batting["value_r_high"]
    d = synthetic()
    per = d.groupby(["season", "batter_key"])["runs_above_expected"].mean().unstack("season")
    assert batting["value_r"] == pytest.approx(np.corrcoef(per[2023], per[2024])[0, 1])


def test_next_seasons_value_is_predicted_by_the_value_where_the_raw_rate_carries_only_context():
    """Batters whose strike rate is a lasting context (a phase, a league: the same each season) plus noise,
    and whose runs above expected is a talent plus noise, the talent uncorrelated with the context: the raw
    rate predicts next season's raw rate well and next season's value not at all; the value predicts the
    value. The same draws give the intervals."""
    rng = np.random.default_rng(1)
    d = synthetic()
    context = dict(zip([f"p{p}" for p in range(40)], rng.normal(0, 0.6, 40), strict=True))
    d["runs"] = (1.3 + d["batter_key"].map(context) + rng.normal(0, 0.5, len(d))).clip(lower=0)
    batting = season_to_season(d, [(2023, 2024)], min_balls=200, n_boot=300).query("role == 'batting'").iloc[0]
    assert batting["raw_r"] > 0.8 and batting["value_r"] > 0.8  # each predicts itself
    assert abs(batting["raw_next_value_r"]) < 0.4 and batting["next_difference_low"] > 0
    per = d.groupby(["season", "batter_key"]).agg(runs=("runs", "mean"), value=("runs_above_expected", "mean"))
    first, second = per.xs(2023), per.xs(2024)
    assert batting["raw_next_value_r"] == pytest.approx(np.corrcoef(first["runs"], second["value"])[0, 1])
    assert batting["next_difference"] == pytest.approx(batting["value_r"] - batting["raw_next_value_r"])


def test_split_half_puts_each_players_matches_alternately_into_two_halves():
    d = synthetic(seasons=(2024,))
    table = split_half(d, [2024], min_balls=200, n_boot=200)
    batting = table[table["role"] == "batting"].iloc[0]
    order = d.drop_duplicates(["match_id", "batter_key"])
    half = order.groupby("batter_key").cumcount() % 2
    halves = d.merge(order.assign(half=half)[["match_id", "half"]], on="match_id")
    per = halves.groupby(["half", "batter_key"])["runs_above_expected"].mean().unstack("half")
    assert batting["value_r"] == pytest.approx(np.corrcoef(per[0], per[1])[0, 1])
    assert batting["value_full"] == pytest.approx(2 * batting["value_r"] / (1 + batting["value_r"]))
