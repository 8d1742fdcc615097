"""Win probability before every ball, and what each ball added: over a match, the result minus the chance
before the first ball."""

from __future__ import annotations

import numpy as np
import pytest

from cricket_attn.valuation.expected import ClassValues, ball_values
from cricket_attn.valuation.win import MIN_LEAF, WinModel, leaf_size, win_added
from tests.valuation.test_expected import tiny_model


@pytest.fixture(scope="module")
def valued(fixture_tables):
    d, matches = fixture_tables.deliveries, fixture_tables.matches
    win = WinModel.fit(d[d["season"] <= 2023], matches)
    trained = tiny_model(d, "records")
    balls = ball_values(trained, d, ClassValues.fit(d[d["season"] <= 2023]), win=win, matches=matches)
    return balls, matches


def test_a_matchs_balls_add_up_to_its_result_minus_the_chance_before_the_first(valued):
    balls, matches = valued
    results = matches.set_index(matches["match_id"].astype(str))
    checked = 0
    for match_id, match in balls.groupby(balls["match_id"].astype(str), sort=False):
        first_side = match["batting_team"].iloc[0]
        as_first = np.where(match["batting_team"] == first_side, match["win_added"], -match["win_added"])
        result = results.loc[match_id]
        if result["result"] == "no result" or (result["winner"] is None and result["result"] != "tie"):
            assert match["win_added"].isna().all()
            continue
        final = 0.5 if result["result"] == "tie" else float(result["winner"] == first_side)
        assert as_first.sum() == pytest.approx(final - match["win_before"].iloc[0], abs=1e-6)
        checked += 1
    assert checked == balls["match_id"].nunique() - int(balls["win_added"].isna().any())


def test_each_balls_chance_follows_on_from_the_last_and_the_bowler_gets_the_opposite(valued):
    balls, _ = valued
    same_innings = (balls["match_id"] == balls["match_id"].shift(-1)) & (balls["innings"] == balls["innings"].shift(-1))
    after, next_before = balls["win_before"] + balls["win_added"], balls["win_before"].shift(-1)
    np.testing.assert_allclose(after[same_innings], next_before[same_innings], atol=1e-12)
    turn = (balls["match_id"] == balls["match_id"].shift(-1)) & (balls["innings"] != balls["innings"].shift(-1))
    np.testing.assert_allclose(after[turn], 1 - next_before[turn], atol=1e-12)  # the other side's chance
    np.testing.assert_allclose(balls["bowling_wpa"], -balls["win_added"])
    assert balls.loc[~balls["faced"], "batting_wpa"].isna().all()
    assert balls["win_before"].dropna().between(0, 1).all()


def test_the_chase_is_likelier_won_with_fewer_runs_needed(fixture_tables):
    d, matches = fixture_tables.deliveries, fixture_tables.matches
    win = WinModel.fit(d, matches)
    chase = d[d["target_runs"].notna() & (d["over"] == 10)].head(1)
    easier, harder = chase.copy(), chase.copy()
    easier["target_runs"], harder["target_runs"] = 100.0, 260.0
    added = [win_added(win, x.reset_index(drop=True), matches)["win_before"].iloc[0] for x in (easier, harder)]
    assert added[0] > added[1] + 0.3


def test_deliveries_out_of_play_order_are_refused(fixture_tables):
    d, matches = fixture_tables.deliveries, fixture_tables.matches
    win = WinModel.fit(d, matches)
    regular = d[~d["is_super_over"]]
    two = regular[regular["match_id"].isin(regular["match_id"].unique()[:2])]
    interleaved = two.iloc[np.r_[0:10, len(two) - 10 : len(two), 10 : len(two) - 10]].reset_index(drop=True)
    with pytest.raises(ValueError, match="must be in play order"):
        win_added(win, interleaved, matches)
    backwards = two.iloc[::-1].reset_index(drop=True)
    with pytest.raises(ValueError, match="must be in play order"):
        win_added(win, backwards, matches)


def test_a_leaf_holds_the_chosen_balls_on_a_league_and_fewer_on_a_few_matches(fixture_tables):
    # the IPL to 2023 is 246,639 rows: its leaves are the 10,000 balls chosen on 2024, not a fortieth of them
    assert leaf_size(246_639) == MIN_LEAF == 10_000 and leaf_size(2_000_000) == MIN_LEAF
    d = fixture_tables.deliveries
    win = WinModel.fit(d[d["season"] <= 2023], fixture_tables.matches)
    assert 20 <= win.trees.min_samples_leaf < 1_000  # the fixture matches still split
