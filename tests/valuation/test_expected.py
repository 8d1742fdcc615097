"""Each ball against an average player in the same place: what a class is worth, who the average player
is, and that nothing of the valued player reaches his expectation."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from cricket_attn.data.features import STATE_COLUMNS, match_state
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.probabilities import sequence_probabilities
from cricket_attn.inference.serving import TrainedModel
from cricket_attn.laws import OUTCOMES
from cricket_attn.valuation.expected import (
    IN_MATCH,
    QUANTITIES,
    ClassValues,
    average_blocks,
    ball_values,
    in_match_rates,
    what_happened,
    with_average,
)
from cricket_attn.valuation.wickets import WicketCost
from tests.conftest import untrained_model

# How a model may know a player: his record as of the day (the default), an embedding and career rates
# fitted on the training seasons, or those with his last balls of earlier matches.
KINDS = {
    "records": {"min_count": None, "records": {}},
    "rates": {"min_count": 5},
    "histories": {"min_count": 5, "history_balls": 16},
}


def tiny_model(deliveries: pd.DataFrame, kind: str) -> TrainedModel:
    """An untrained tiny model on an encoder fitted to 2023 (what a ball reads does not depend on how good
    the model is), its outcomes at the training seasons' rates."""
    train = deliveries[deliveries["season"] <= 2023]
    encoder = SequenceEncoder.fit_encode(train, competition_min_count=500, known=deliveries, **KINDS[kind])[0]
    model = untrained_model(encoder, train)
    return TrainedModel(model, encoder, kind)


def test_a_class_is_worth_its_balls_mean_in_the_training_seasons(deliveries):
    train = deliveries[deliveries["season"] <= 2023]
    values = ClassValues.fit(train).to_dict()
    assert values["runs"]["4"] == 4 and values["runs"]["6"] == 6 and values["runs"]["dot"] == 0
    assert values["runs"]["wide"] == 0 and values["conceded"]["wide"] >= 1  # a wide's runs are the bowler's
    assert values["conceded"]["bye"] == 0  # byes and leg-byes are nobody's
    regular = train[~train["is_super_over"]]
    wickets = regular[regular["outcome"] == "wicket"]
    not_his = wickets["wicket_kind"].astype(str).isin(["run out", "retired out"])  # the fixtures' kinds
    assert values["bowler_wicket"]["wicket"] == pytest.approx(1 - not_his.mean())
    striker_out = [b in str(o) for b, o in zip(wickets["batter"].astype(str), wickets["player_out"])]
    assert values["out"]["wicket"] == pytest.approx(np.mean(striker_out))
    happened = what_happened(regular)
    for quantity in QUANTITIES:
        by_class = happened[quantity].groupby(regular["outcome"].astype(str)).mean()
        for c in OUTCOMES:
            assert values[quantity][c] == pytest.approx(by_class[c])


def test_too_few_deliveries_to_value_a_class_is_refused(deliveries):
    first = deliveries[deliveries["match_id"] == deliveries["match_id"].iloc[0]]
    first = first[first["outcome"] != "noball"]
    with pytest.raises(ValueError, match=r"no delivery of class \['noball'"):
        ClassValues.fit(first)


@pytest.mark.parametrize("kind", ["records", "rates"])
def test_the_average_player_is_what_the_model_reads_of_the_player_on_a_typical_ball(deliveries, kind):
    """The mean, over the balls of the competition's season (for a batter, those he faced), of the scaled
    features of his block: worked out here from the encoder's own inputs."""
    trained = tiny_model(deliveries, kind)
    encoder = trained.encoder
    groups = pd.DataFrame({"competition": ["Indian Premier League"] * 2, "season": [2024, 2025]})
    for role in ("batter", "bowler"):
        blocks = average_blocks(encoder, deliveries, role, groups)
        at = encoder.block_slice(role)
        assert list(blocks.index) == [("Indian Premier League", 2024), ("Indian Premier League", 2025)]
        for season in (2024, 2025):
            d = deliveries[(deliveries["season"] == season) & ~deliveries["is_super_over"]]
            if role == "batter":
                d = d[d["outcome"] != "wide"]
            sequences = encoder.encode(d)
            inputs = sequences.tensors["numeric"][sequences.tensors["mask"]][:, at].numpy()
            np.testing.assert_allclose(blocks.loc[("Indian Premier League", season)], inputs.mean(axis=0), atol=1e-5)
    with pytest.raises(ValueError, match="^no ball of Indian Premier League 1999 among the known matches"):
        average_blocks(encoder, deliveries, "batter", pd.concat([groups, groups.assign(season=1999)]))


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_of_the_valued_player_reaches_his_expectation(deliveries, kind):
    """A batter renamed to a stranger (no record, no embedding, no history) in one match: with the same
    average batter, every batting expectation of the match stays to the bit, though the model's own
    distribution for his balls moves; the bowlers' expectations read the real batter, so they move with him."""
    trained = tiny_model(deliveries, kind)
    match = deliveries.loc[deliveries["season"] == 2025, "match_id"].iloc[0]
    mine = deliveries[deliveries["match_id"] == match]
    batter = mine.loc[mine["innings"] == 1, "batter"].iloc[0]
    renamed = mine.copy()
    for column in ("batter", "batter_id"):
        renamed[column] = renamed[column].astype(object)
    renamed.loc[renamed["batter"] == batter, ["batter", "batter_id"]] = ["A Stranger", "0000beef"]
    rng = np.random.default_rng(0)
    at = {role: trained.encoder.block_slice(role) for role in ("batter", "bowler")}
    average = {role: rng.normal(size=(len(mine), s.stop - s.start)) for role, s in at.items()}
    rates = {role: rng.uniform(0, 2, size=(len(mine), len(IN_MATCH[role]))) for role in at}
    probabilities = {}
    for name, d in (("real", mine), ("renamed", renamed)):
        known = pd.concat([deliveries[deliveries["match_id"] != match], d])
        trained.encoder.attach_known(known)  # what the model reads of earlier matches, the stranger's none
        sequences = trained.encoder.encode(d.reset_index(drop=True))
        probabilities[name] = {
            role: sequence_probabilities(
                trained.model, with_average(sequences, trained.encoder, role, average[role], rates[role])
            )[1]
            for role in at
        }
        probabilities[name]["own"] = trained.score(d)[["p_4", "p_6", "p_dot"]].to_numpy()
    real, renamed = probabilities["real"], probabilities["renamed"]
    np.testing.assert_array_equal(real["batter"], renamed["batter"])
    assert np.abs(real["own"] - renamed["own"]).max() > 1e-4
    assert np.abs(real["bowler"] - renamed["bowler"]).max() > 1e-4


def test_the_average_player_has_his_balls_in_the_match_but_not_his_figures(deliveries):
    """A batter on 40 off 20 is replaced by an average batter on 20 times the average runs a ball; a bowler's
    spell likewise: the balls stay, the runs and wickets are the rate's."""
    trained = tiny_model(deliveries, "records")
    d = deliveries[deliveries["season"] == 2025].reset_index(drop=True)
    sequences = trained.encoder.encode(d)
    enc, real = trained.encoder, sequences.tensors["mask"]
    state = match_state(d)
    for role, columns in IN_MATCH.items():
        at = enc.block_slice(role)
        rates = np.tile(np.arange(1, len(columns) + 1) * 0.7, (len(d), 1))
        numeric = with_average(sequences, enc, role, np.zeros((len(d), at.stop - at.start)), rates).tensors["numeric"]
        rows = sequences.tensors["row"][real].numpy()
        for j, (column, (_, balls)) in enumerate(columns.items()):
            i = STATE_COLUMNS.index(column)
            read = numeric[..., i][real].double().numpy() * enc.std[i] + enc.mean[i]
            np.testing.assert_allclose(read, state[balls].to_numpy()[rows] * 0.7 * (j + 1), atol=1e-3)
            assert np.abs(state[column].to_numpy()[rows] - read).max() > 1  # not his own figures
        untouched = [STATE_COLUMNS.index(c) for c in STATE_COLUMNS if c not in columns]
        np.testing.assert_array_equal(numeric[..., untouched], sequences.tensors["numeric"][..., untouched])


def test_a_ball_count_constant_in_training_gives_the_average_player_its_one_value(deliveries):
    """A count that never varied in the training balls (its std infinite, so encoded as 0) is read back as
    its one value, not NaN: the average batter has that many balls times his rate."""
    trained = tiny_model(deliveries, "records")
    d = deliveries[deliveries["season"] == 2025].reset_index(drop=True)
    sequences = trained.encoder.encode(d)
    enc = copy.copy(trained.encoder)
    i, b = STATE_COLUMNS.index("batter_runs_before"), STATE_COLUMNS.index("batter_balls_before")
    enc.mean, enc.std = enc.mean.copy(), enc.std.copy()
    enc.mean[b], enc.std[b] = 3.0, np.inf
    at = enc.block_slice("batter")
    numeric = with_average(sequences, enc, "batter", np.zeros((len(d), at.stop - at.start)), np.full((len(d), 1), 0.5))
    real = sequences.tensors["mask"]
    read = numeric.tensors["numeric"][..., i][real].double().numpy() * enc.std[i] + enc.mean[i]
    np.testing.assert_allclose(read, 1.5, atol=1e-3)  # 3 balls at 0.5 a ball


def test_the_average_players_rates_are_per_ball_faced_and_per_legal_ball(deliveries):
    season = deliveries[(deliveries["season"] == 2025) & ~deliveries["is_super_over"]]
    groups = season[["competition", "season"]].drop_duplicates()
    batter = in_match_rates(deliveries, "batter", groups).iloc[0]
    bowler = in_match_rates(deliveries, "bowler", groups).iloc[0]
    not_wide = season[season["runs_wides"] == 0]
    assert batter["batter_runs_before"] == pytest.approx(not_wide["runs_batter"].sum() / len(not_wide))
    legal = season["is_legal"].sum()
    conceded = season["runs_batter"].sum() + season["runs_wides"].sum() + season["runs_noballs"].sum()
    assert bowler["bowler_runs_before"] == pytest.approx(conceded / legal)
    assert 0.02 < bowler["bowler_wickets_before"] < 0.08  # a wicket every 12-50 legal balls


def test_a_batter_is_valued_on_the_balls_he_faced_a_bowler_on_every_delivery(deliveries):
    trained = tiny_model(deliveries, "records")
    balls = ball_values(trained, deliveries, ClassValues.fit(deliveries[deliveries["season"] <= 2023]))
    regular = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    assert len(balls) == len(regular)
    wide = regular["outcome"].eq("wide").to_numpy()
    assert balls.loc[wide, ["runs", "expected_runs", "runs_above_expected"]].isna().all().all()
    assert balls.loc[~wide, "expected_runs"].notna().all() and balls["expected_conceded"].notna().all()
    np.testing.assert_allclose(balls["runs_above_expected"], balls["runs"] - balls["expected_runs"])
    np.testing.assert_allclose(balls["runs_saved"], balls["expected_conceded"] - balls["conceded"])
    np.testing.assert_array_equal(balls["runs"].fillna(0), regular["runs_batter"].where(~wide, 0))
    conceded = regular["runs_batter"] + regular["runs_wides"] + regular["runs_noballs"]
    np.testing.assert_array_equal(balls["conceded"], conceded)
    # An expectation of an average player off a ball that is not a wide: at most six runs, a chance of out.
    faced = balls[~wide]
    assert faced["expected_runs"].between(0, 6).all() and faced["expected_out"].between(0, 1).all()
    # Wickets priced in runs: a dismissal costs what the innings could still expect with one wicket more.
    cost = balls["wicket_cost"].to_numpy()
    assert cost.max() > 5
    np.testing.assert_allclose(
        balls["batting_value"], balls["runs_above_expected"] + cost * balls["dismissals_avoided"]
    )
    np.testing.assert_allclose(balls["bowling_value"], balls["runs_saved"] + cost * balls["wickets_above_expected"])


def test_a_wicket_costs_what_the_innings_could_still_make(deliveries):
    train = deliveries[(deliveries["season"] <= 2023) & ~deliveries["is_super_over"]]
    cost = WicketCost.fit(train)
    first = train[train["innings"] == 1]
    totals = first.groupby("match_id")["runs_total"].sum()
    # From the first ball, with every wicket left: about what the fixtures' first innings made.
    start = cost.runs_to_come(np.array([120]), np.array([0]))[0]
    assert abs(start - totals.mean()) < 0.1 * totals.mean()
    # Fewer runs to come with wickets down, none all out. (Never more with one more down, by the model's form;
    # strictly fewer every three: on 20 matches the fit may find two neighbours alike, as it does on some CPUs.)
    by_wicket = cost.runs_to_come(np.full(11, 60), np.arange(11))
    assert (np.diff(by_wicket) <= 0).all() and (np.diff(by_wicket[::3]) < 0).all() and by_wicket[-1] == 0
    regular = train.reset_index(drop=True)
    per_ball = cost.cost(regular)
    # A wicket off a first innings' last legal ball costs nothing; early in one it costs several runs.
    ball = regular["legal_ball_index"]
    is_first, legal = regular["innings"].eq(1).to_numpy(), regular["is_legal"].astype(bool).to_numpy()
    last = (is_first & legal & ball.eq(119).to_numpy()) & regular["outcome"].ne("wide").to_numpy()
    assert last.any() and np.abs(per_ball[last]).max() < 1e-9
    assert np.median(per_ball[is_first & (ball < 12).to_numpy()]) > 5
    # In a chase a wicket costs no more than the runs still needed after the ball.
    state = match_state(regular.assign(outcome=pd.Categorical(regular["outcome"].astype(object), OUTCOMES)))
    needed = (state["runs_needed"] - regular["runs_total"]).clip(lower=0).to_numpy()
    chase = state["is_chase"].to_numpy() > 0
    assert chase.any() and (per_ball[chase] <= needed[chase] + 1e-9).all()
    close = chase & (needed <= 6) & (state["balls_left"].to_numpy() > 24)
    assert close.any() and per_ball[close].max() <= 6


def test_an_innings_stopped_short_does_not_price_a_wicket(deliveries):
    """A first innings that ended with balls and wickets in hand (a match cut by rain) is left out of the fit."""
    train = deliveries[(deliveries["season"] <= 2023) & ~deliveries["is_super_over"]]
    first = train[train["innings"] == 1]
    by_innings = first.groupby("match_id").agg(balls=("is_legal", "sum"), wickets=("wicket_count", "sum"))
    stopped = by_innings.index[(by_innings["balls"] < 120) & (by_innings["wickets"] < 10)]
    assert len(stopped) >= 1  # the fixtures' no-result match
    assert WicketCost.fit(train) == WicketCost.fit(train[~train["match_id"].isin(stopped)])
    played_out = by_innings.index.difference(stopped)
    assert WicketCost.fit(train) != WicketCost.fit(train[train["match_id"] != played_out[0]])


def test_no_first_innings_no_price_of_a_wicket(deliveries):
    with pytest.raises(ValueError, match="no first innings"):
        WicketCost.fit(deliveries[deliveries["innings"] == 2])


def test_the_known_matches_given_are_the_ones_read(deliveries):
    """A notebook valuing the same season twice with different known matches gets each call's records,
    not the first call's left attached."""
    trained = tiny_model(deliveries, "records")
    values = ClassValues.fit(deliveries[deliveries["season"] <= 2023])
    season = deliveries[deliveries["season"] == 2025]
    without = deliveries[deliveries["season"] != 2024]  # the players' 2024 matches forgotten
    first = ball_values(trained, season, values, known=deliveries)
    second = ball_values(trained, season, values, known=without)
    fresh = ball_values(tiny_model(deliveries, "records"), season, values, known=without)
    assert np.abs(first["expected_runs"] - second["expected_runs"]).max() > 1e-4
    np.testing.assert_array_equal(second["expected_runs"], fresh["expected_runs"])
