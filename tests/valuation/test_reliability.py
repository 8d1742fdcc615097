"""Does a value hold (cricket_attn/valuation/reliability.py): per-player rates, season-to-season and split-half
correlations, on the real balls of the fixture matches valued against the fixtures' average ball."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.valuation.expected import what_happened
from cricket_attn.valuation.players import ROLES
from cricket_attn.valuation.reliability import per_player, season_to_season, split_half

BATTING, BOWLING = ROLES
PAIRS = [(2023, 2024), (2024, 2025), (2025, 2026)]  # the fixtures' consecutive seasons, three matches or two each
MIN_BALLS = 10


def fixture_balls(deliveries: pd.DataFrame) -> pd.DataFrame:
    """The fixtures' regular deliveries as `ball_values` rows, in date order, valued without a model: a
    batter's runs above the fixtures' mean per ball faced (none on a wide), a bowler's runs saved against
    their mean conceded per delivery."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    happened = what_happened(d)
    faced = happened["faced"].to_numpy()
    balls = d[["match_id", "season", "date", "batting_team", "bowling_team"]].assign(
        batter=d["batter"].astype(str),
        bowler=d["bowler"].astype(str),
        batter_key=d["batter_id"].astype(str),
        bowler_key=d["bowler_id"].astype(str),
        faced=faced,
        legal=d["is_legal"].to_numpy(dtype=bool),
        runs=happened["runs"].where(faced),
        conceded=happened["conceded"],
    )
    balls["runs_above_expected"] = balls["runs"] - balls["runs"].mean()
    balls["runs_saved"] = balls["conceded"].mean() - balls["conceded"]
    return balls


@pytest.fixture(scope="module")
def balls(deliveries):
    return fixture_balls(deliveries)


def counted(deliveries: pd.DataFrame, season: int) -> dict[str, pd.Series]:
    """Per player of `season`, as a scorer counts: the balls a batter faced (a wide is not one), the legal
    balls a bowler bowled."""
    d = deliveries[(deliveries["season"] == season) & ~deliveries["is_super_over"].astype(bool)]
    return {
        "batting": d[d["runs_wides"] == 0].groupby(d["batter_id"].astype(str)).size(),
        "bowling": d[d["is_legal"].astype(bool)].groupby(d["bowler_id"].astype(str)).size(),
    }


def test_strike_rate_and_economy_are_the_scorers(balls, deliveries):
    """2023's busiest batter and the bowler with the most byes and leg-byes off him: strike rate, runs off the
    bat per 100 balls faced; economy, runs per over charged to the bowler (off the bat, wides, no-balls)."""
    d = deliveries[(deliveries["season"] == 2023) & ~deliveries["is_super_over"].astype(bool)]
    batter = d.loc[d["runs_wides"] == 0, "batter_id"].astype(str).value_counts().index[0]
    bowler = (d["runs_byes"] + d["runs_legbyes"]).groupby(d["bowler_id"].astype(str)).sum().idxmax()
    his = d[d["batter_id"].astype(str) == batter]
    faced = int((his["runs_wides"] == 0).sum())
    bowled = d[d["bowler_id"].astype(str) == bowler]
    legal = int(bowled["is_legal"].sum())
    charged = int((bowled["runs_batter"] + bowled["runs_wides"] + bowled["runs_noballs"]).sum())
    assert charged < bowled["runs_total"].sum()  # byes and leg-byes off him: not his to answer for
    bat = per_player(balls, BATTING, ["season"], "runs_above_expected").loc[(2023, batter)]
    bowl = per_player(balls, BOWLING, ["season"], "runs_saved").loc[(2023, bowler)]
    assert bat["balls"] == faced and bat["raw"] == pytest.approx(100 * his["runs_batter"].sum() / faced)
    assert bowl["balls"] == legal and bowl["raw"] == pytest.approx(6 * charged / legal)
    mine = balls[(balls["season"] == 2023) & (balls["batter_key"] == batter) & balls["faced"]]
    assert bat["value"] == pytest.approx(100 * mine["runs_above_expected"].sum() / faced)


def test_the_players_compared_are_those_with_enough_balls_in_both_seasons(balls, deliveries):
    table = season_to_season(balls, PAIRS, min_balls=MIN_BALLS, n_boot=100)
    for first, second in PAIRS:
        a, b = counted(deliveries, first), counted(deliveries, second)
        for role in ("batting", "bowling"):
            both = set(a[role].index[a[role] >= MIN_BALLS]) & set(b[role].index[b[role] >= MIN_BALLS])
            rows = table[(table["role"] == role) & (table["seasons"] == f"{first}-{second}")]
            assert len(rows) == 1 and rows["players"].iloc[0] == len(both), (role, first)


def test_a_value_that_is_the_raw_rate_itself_correlates_exactly_as_the_raw_rate(balls):
    """Runs as the batter's value (per 100 balls: his strike rate) and runs conceded turned negative as the
    bowler's (his economy, scaled and signed so that a low one is good): each value's correlations are its raw
    rate's, and their differences nothing in every draw, next season's included (economy's sign turned)."""
    same = balls.assign(runs_above_expected=balls["runs"], runs_saved=-balls["conceded"])
    table = season_to_season(same, PAIRS, min_balls=MIN_BALLS, n_boot=200)
    compared = table[table["players"] >= 3]
    assert set(compared["role"]) == {"batting", "bowling"}
    np.testing.assert_allclose(compared["value_r"], compared["raw_r"], atol=1e-9)
    np.testing.assert_allclose(compared["raw_next_value_r"], compared["value_r"], atol=1e-9)
    for difference in ("difference", "next_difference"):
        for end in ("", "_low", "_high"):
            np.testing.assert_allclose(compared[difference + end], 0.0, atol=1e-9)


def test_too_few_players_or_a_season_not_played_give_no_correlation(balls):
    table = season_to_season(balls, [(2023, 2024), (2009, 2010)], min_balls=10_000, n_boot=100)
    assert (table["players"] == 0).all()
    assert table[["value_r", "raw_r", "difference_low", "raw_next_value_r"]].isna().all().all()
    missing = season_to_season(balls, [(2009, 2010)], min_balls=1, n_boot=100)
    assert (missing["players"] == 0).all() and missing["value_r"].isna().all()


def test_the_seed_moves_the_intervals_never_the_correlations(balls):
    tables = [season_to_season(balls, PAIRS, min_balls=MIN_BALLS, n_boot=100, seed=s) for s in (0, 0, 1)]
    pd.testing.assert_frame_equal(tables[0], tables[1])
    compared = tables[0]["players"] >= 3
    for column in ("value_r", "raw_r", "next_difference"):
        np.testing.assert_array_equal(tables[0].loc[compared, column], tables[2].loc[compared, column])
    assert (tables[0].loc[compared, "value_r_low"] != tables[2].loc[compared, "value_r_low"]).any()


def test_split_half_compares_the_players_of_a_season_who_played_in_both_halves(balls, deliveries):
    """With each player's matches alternately in two halves, a player with enough balls in the season who
    played one match of it has no second half: only those with two matches or more are compared (2017 and
    2018 have two fixture matches with a side in both, 2023's three matches six different sides)."""
    seasons = [2017, 2018, 2023]
    table = split_half(balls, seasons, min_balls=MIN_BALLS, n_boot=100)
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    for season in seasons:
        enough = counted(deliveries, season)
        of_season = d[d["season"] == season]
        matches = {
            "batting": of_season[of_season["runs_wides"] == 0].groupby(of_season["batter_id"].astype(str))["match_id"],
            "bowling": of_season.groupby(of_season["bowler_id"].astype(str))["match_id"],
        }
        for role in ("batting", "bowling"):
            played = matches[role].nunique()
            expected = [p for p in enough[role].index[enough[role] >= MIN_BALLS] if played[p] >= 2]
            row = table[(table["role"] == role) & (table["season"] == season)].iloc[0]
            assert row["players"] == len(expected), (role, season)
            assert (len(expected) >= 3) == np.isfinite(row["value_r"]), (role, season)
    assert table.loc[table["season"] == 2018, "players"].min() >= 3
    assert (table.loc[table["season"] == 2023, "players"] == 0).all()
