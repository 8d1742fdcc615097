"""What a wicket costs (cricket_attn/valuation/wickets.py): the runs to come in the Duckworth-Lewis form, fitted on
the first innings of the fixtures' training seasons, and the cost of a wicket off each real ball."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cricket_attn.valuation.wickets import WicketCost


@pytest.fixture(scope="module")
def regular(deliveries):
    """The fixtures' regular innings, in play order."""
    return deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)


@pytest.fixture(scope="module")
def cost(regular):
    return WicketCost.fit(regular[regular["season"] <= 2023])


def by_hand(cost: WicketCost, innings: pd.DataFrame, balls: int, target: float | None) -> np.ndarray:
    """The cost of a wicket off each ball of one innings, its state counted ball by ball: the legal balls
    left after the ball (a wide or a no-ball uses none), the wickets down before it and, in a chase, the runs
    still needed after it, which no loss of runs to come can exceed."""
    out, legal, down, runs = [], 0, 0, 0
    for row in innings.itertuples():
        legal += bool(row.is_legal)
        runs += row.runs_total
        after = max(balls - legal, 0)
        cap = np.inf if target is None else max(target - runs, 0)
        held = [min(cost.runs_to_come(np.array([after]), np.array([w]))[0], cap) for w in (down, down + 1)]
        out.append(max(held[0] - held[1], 0.0))
        down += row.wicket_count
    return np.array(out)


@pytest.mark.parametrize(
    "match_id, innings, balls, target",
    [
        ("1082591", 1, 120, None),  # a first innings with wides, no-balls and leg-byes
        ("1136566", 2, 36, 71),  # the DLS chase: 71 to win in six overs, not 20
    ],
)
def test_a_wickets_cost_is_the_runs_to_come_lost_counted_ball_by_ball(cost, regular, match_id, innings, balls, target):
    mine = (regular["match_id"] == match_id) & (regular["innings"] == innings)
    # The whole table at once: each innings' state is its own, whatever innings stand beside it.
    priced = cost.cost(regular)[mine.to_numpy()]
    np.testing.assert_allclose(priced, by_hand(cost, regular[mine], balls, target), rtol=1e-6, atol=1e-9)
    assert priced.max() > 0


def test_no_wicket_costs_negative_runs_or_more_than_were_still_to_come(cost, regular):
    """On every real ball, seasons after the fit's too: a price in runs between nothing and all the runs
    the innings could still expect with the wickets it had."""
    priced = cost.cost(regular)
    assert np.isfinite(priced).all() and (priced >= 0).all()
    by = regular.groupby(["match_id", "innings"], sort=False)
    legal_after = by["is_legal"].cumsum().to_numpy()
    down = (by["wicket_count"].cumsum() - regular["wicket_count"]).to_numpy()
    most = cost.runs_to_come(np.full(len(regular), 120) - legal_after, down)
    assert (priced <= most + 1e-9).all()


def test_runs_to_come_grow_with_the_balls_left_and_none_come_without_one(cost):
    balls = np.arange(121)
    for down in range(11):
        runs = cost.runs_to_come(balls, np.full(len(balls), down))
        assert runs[0] == 0 and (np.diff(runs) >= 0).all()
        # Never faster than k * z a ball, the rate with few balls left and every wicket in hand.
        assert (runs[1:] / balls[1:] <= cost.k * cost.z + 1e-9).all()
    all_out = cost.runs_to_come(balls, np.full(len(balls), 10))
    assert (all_out == 0).all()


def test_the_fit_reads_only_the_regular_first_innings(deliveries):
    """The chases and the super over (1216493's) add nothing: the same eleven numbers without them."""
    train = deliveries[deliveries["season"] <= 2023]
    first = train[(train["innings"] == 1) & ~train["is_super_over"].astype(bool)]
    assert len(first) < len(train)
    assert WicketCost.fit(train) == WicketCost.fit(first)


def test_a_fitted_cost_is_eleven_wicket_factors_from_one_to_none_and_survives_json(cost):
    plain = json.loads(json.dumps(cost.to_dict()))
    assert len(plain["f"]) == 11 and plain["f"][0] == 1.0 and plain["f"][-1] == 0.0
    assert (np.diff(plain["f"]) <= 0).all() and plain["z"] > 0 and plain["k"] > 0
    assert WicketCost(plain["z"], plain["k"], tuple(plain["f"])) == cost
