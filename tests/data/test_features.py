"""What is known before each ball (cricket_attn/data/features.py): the match state against a scorer's hand count
of two real innings, the innings' extents, match folds and players' shrunk outcome rates, on the fixture matches."""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np
import pandas as pd
import pytest

from cricket_attn.data.features import (
    RATE_COLUMNS,
    STATE_COLUMNS,
    OutcomeRates,
    entity_key,
    innings_extent,
    match_folds,
    match_state,
)
from cricket_attn.laws import OUTCOMES

# The Laws' dismissals credited to the bowler (not a run out, a retirement, obstructing the field...).
BOWLERS = {"bowled", "caught", "caught and bowled", "lbw", "stumped", "hit wicket"}


def hand_count(innings: pd.DataFrame, balls: int, target: int | None) -> pd.DataFrame:
    """The state before each delivery of one innings, as a scorer keeps it ball by ball: a wide is no ball
    faced and no legal ball; byes and leg-byes are not the bowler's; a partnership runs from one wicket to the
    next; the last six deliveries' runs, dots, fours and sixes, wickets and wides or no-balls."""
    rows, runs, wickets, legal, stand_runs, stand_balls, after_noball = [], 0, 0, 0, 0, 0, False
    batter_runs, batter_balls = defaultdict(int), defaultdict(int)
    bowler_balls, bowler_runs, bowler_wickets = defaultdict(int), defaultdict(int), defaultdict(int)
    recent = deque(maxlen=6)
    for b in innings.itertuples():
        batter, bowler = str(b.batter), str(b.bowler)
        left = max(balls - legal, 0)
        needed = target - runs if target else 0
        rows.append({
            "runs_before": runs, "wickets_before": wickets, "legal_balls_before": legal, "balls_left": left,
            "run_rate": runs / max(legal, 1) * 6, "is_chase": bool(target), "runs_needed": needed,
            "required_rate": min(max(needed / max(left, 1) * 6, -6), 36) if target else 0, "target": target or 0,
            "batter_runs_before": batter_runs[batter], "batter_balls_before": batter_balls[batter],
            "bowler_balls_before": bowler_balls[bowler], "bowler_runs_before": bowler_runs[bowler],
            "bowler_wickets_before": bowler_wickets[bowler], "partnership_runs": stand_runs,
            "partnership_balls": stand_balls, "after_noball": after_noball,
            **{f"last6_{k}": sum(r[k] for r in recent) for k in ("runs", "dots", "boundaries", "wickets", "extras")},
            "ball_in_over": b.ball_in_over, "season_index": b.season - 2008,
        })  # fmt: skip
        wide = b.runs_wides > 0
        credited = b.outcome == "wicket" and bool(BOWLERS & set(str(b.wicket_kind).split(";")))
        runs += b.runs_total
        legal += bool(b.is_legal)
        batter_runs[batter] += b.runs_batter
        batter_balls[batter] += not wide
        bowler_balls[bowler] += bool(b.is_legal)
        bowler_runs[bowler] += b.runs_batter + b.runs_wides + b.runs_noballs
        bowler_wickets[bowler] += credited
        stand_runs, stand_balls = stand_runs + b.runs_total, stand_balls + bool(b.is_legal)
        if b.wicket_count:
            wickets += b.wicket_count
            stand_runs, stand_balls = 0, 0
        after_noball = b.outcome == "noball"
        recent.append({"runs": b.runs_total, "dots": b.outcome == "dot", "boundaries": b.outcome in ("4", "6"),
                       "wickets": b.wicket_count, "extras": b.outcome in ("wide", "noball")})  # fmt: skip
    return pd.DataFrame(rows, index=innings.index)


@pytest.mark.parametrize(
    "match_id, number, balls, target",
    [
        ("1082591", 1, 120, None),  # 207/4: wides, no-balls, leg-byes
        ("1082591", 2, 120, 208),  # the chase, all out for 172
        ("1136566", 2, 36, 71),  # the DLS chase: 71 in six overs
    ],
)
def test_the_match_state_is_a_scorers_hand_count_of_a_real_innings(deliveries, match_id, number, balls, target):
    match = deliveries[deliveries["match_id"] == match_id]
    state = match_state(match)  # both innings at once: each keeps its own counts
    innings = match[match["innings"] == number]
    by_hand = hand_count(innings, balls, target)
    assert list(state.columns) == list(STATE_COLUMNS)
    for column in STATE_COLUMNS:
        np.testing.assert_allclose(
            state.loc[innings.index, column].to_numpy(np.float64), by_hand[column].to_numpy(np.float64),
            rtol=1e-6, atol=1e-5, err_msg=column,
        )  # fmt: skip
    assert by_hand["bowler_wickets_before"].max() > 0 and by_hand["partnership_runs"].max() > 0


def test_the_season_counts_from_2008_and_stops_at_the_last_one_trained_on(deliveries):
    first, last = deliveries["season"] == 2008, deliveries["season"] == 2026
    state = match_state(deliveries)
    capped = match_state(deliveries, last_season=2023)
    assert (state.loc[first, "season_index"] == 0).all() and (state.loc[last, "season_index"] == 18).all()
    assert (capped.loc[last, "season_index"] == 15).all() and (capped.loc[first, "season_index"] == 0).all()
    other = [c for c in STATE_COLUMNS if c != "season_index"]
    pd.testing.assert_frame_equal(state[other], capped[other])


def test_each_regular_innings_reaches_as_far_as_it_was_played(deliveries):
    """Forty regular innings (1216493's super overs left out); the over of five legal balls (335987), the over
    of seven (1136564), the DLS chase's six overs (1136566), each as the file has it."""
    extent = innings_extent(deliveries)
    regular = deliveries[~deliveries["is_super_over"]]
    by = regular.groupby(["match_id", "innings"])
    assert len(extent) == 40 and (extent.index.get_level_values("innings") <= 2).all()
    assert (extent["deliveries"] == by.size().reindex(extent.index)).all()
    assert (extent["legal_balls"] == by["is_legal"].sum().reindex(extent.index)).all()
    assert (extent["overs"] == by["over"].nunique().reindex(extent.index)).all()
    assert extent.loc[("335987", 1), "legal_balls"] == 119 and extent.loc[("335987", 1), "overs"] == 20
    legal_in_over = regular[regular["is_legal"]].groupby(["match_id", "innings", "over"]).size()
    assert legal_in_over.loc[("1136564", 2)].max() == 7 and extent.loc[("1136564", 2), "balls_in_over"] >= 7
    assert extent.loc[("1136566", 2), "scheduled_balls"] == 36 and extent.loc[("1136566", 1), "scheduled_balls"] == 120


@pytest.mark.parametrize("n_folds", [3, 5])
def test_a_match_is_held_out_whole_and_the_folds_share_the_matches(deliveries, n_folds):
    fold = pd.Series(match_folds(deliveries, n_folds), index=deliveries.index)
    per_match = fold.groupby(deliveries["match_id"]).nunique()
    assert (per_match == 1).all()
    sizes = fold.groupby(deliveries["match_id"]).first().value_counts()
    assert sorted(sizes.index) == list(range(n_folds)) and sizes.max() - sizes.min() <= 1  # 20 matches
    assert np.array_equal(fold, match_folds(deliveries, n_folds))
    assert not np.array_equal(fold, match_folds(deliveries, n_folds, seed=1))


def test_a_players_rates_are_his_outcomes_shrunk_towards_everyones(deliveries):
    """The fixtures' busiest batter: his counts of each outcome, by hand, pulled towards the overall rates by
    200 balls' worth; a name never seen gets the overall rates (log-ratios 0) and no balls."""
    strength = 200.0
    rates = OutcomeRates("batter", strength).fit(deliveries)
    overall = deliveries["outcome"].astype(str).value_counts().reindex(OUTCOMES, fill_value=0).to_numpy()
    prior = (overall + 1) / (overall.sum() + len(OUTCOMES))
    busiest = deliveries["batter_id"].astype(str).value_counts().index[0]
    his = deliveries[deliveries["batter_id"].astype(str) == busiest]
    counts = his["outcome"].astype(str).value_counts().reindex(OUTCOMES, fill_value=0).to_numpy()
    got = rates.transform(his.iloc[:1])[0]
    expected = np.log((counts + strength * prior) / (len(his) + strength) / prior)
    np.testing.assert_allclose(got[:-1], expected, rtol=1e-5, atol=1e-6)
    assert got[-1] == pytest.approx(np.log1p(len(his)))
    stranger = his.iloc[:1].assign(batter="Nobody", batter_id=None)  # a file without a registry
    assert (rates.transform(stranger) == 0).all()


def test_out_of_fold_a_one_match_batter_gets_nothing_of_himself(deliveries):
    """A batter seen in one fixture match only: out of fold, his rates come from the other folds' matches, in
    which he never batted, so they are everyone's. A competition's are its fitted ones."""
    rates = OutcomeRates("batter").fit(deliveries)
    played = deliveries.groupby(deliveries["batter_id"].astype(str))["match_id"].nunique()
    once = deliveries["batter_id"].astype(str).isin(played.index[played == 1]).to_numpy()
    oof = rates.out_of_fold(deliveries)
    assert once.sum() > 100
    np.testing.assert_allclose(oof[once], 0, atol=1e-6)  # the other folds' prior: log-ratio 0, log(1 + 0) balls
    assert (rates.transform(deliveries)[once, -1] > 0).all()  # in sample, his own balls count
    competition = OutcomeRates(RATE_COLUMNS[-1]).fit(deliveries)
    assert np.array_equal(competition.out_of_fold(deliveries), competition.transform(deliveries))


@pytest.mark.parametrize("gap", [None, np.nan, pd.NA], ids=["None", "nan", "NA"])
def test_a_player_without_an_id_is_known_by_name_whatever_marks_the_gap(deliveries, gap):
    """A file without `info.registry` leaves the ids empty; a user's table may mark the gap with None, NaN or
    pandas' NA (its "string" dtype): a player of such a row is known by his name, the others by their id."""
    d = deliveries.head(6)[["batter", "batter_id"]].reset_index(drop=True)
    ids = [gap if i in (1, 4) else str(v) for i, v in enumerate(d["batter_id"])]
    column = pd.array(ids, dtype="string") if gap is pd.NA else pd.Series(ids, dtype=object)
    keys = entity_key(d.assign(batter_id=column), "batter")
    assert list(keys[[1, 4]]) == list(d["batter"].astype(str)[[1, 4]])
    assert list(keys[[0, 2, 3, 5]]) == list(d["batter_id"].astype(str)[[0, 2, 3, 5]])


def test_listed_players_without_an_id_get_the_one_their_name_has():
    """A side listed without a registry id for some players: each gets the one id his name has on the balls
    given; a name with two ids stays by name; an id the file gave is kept; a side listed with no ids at all, or a
    matches table without the ids' column, is filled the same way; the count says how many were given one."""
    from cricket_attn.data.features import squads_with_registry_ids

    balls = pd.DataFrame(
        {"batter": ["A", "B", "B", "C"], "batter_id": ["a1", "b1", "b2", "c1"], "bowler": ["D", "D", "D", "D"],
         "bowler_id": ["d1", "d1", "d1", "d1"], "non_striker": ["A", "A", "A", "A"], "non_striker_id": ["a1"] * 4}
    )  # fmt: skip
    matches = pd.DataFrame(
        {"match_id": ["m", "n"], "team1_players": ["A;B;C", "A;D"], "team1_player_ids": [";;c9", None],
         "team2_players": ["D;E", None], "team2_player_ids": [None, None]}
    )  # fmt: skip
    out, taken = squads_with_registry_ids(matches, balls)
    assert out["team1_player_ids"].tolist() == ["a1;;c9", "a1;d1"]  # B has two ids: by name; C's own id kept
    assert out.loc[0, "team2_player_ids"] == "d1;" and pd.isna(out.loc[1, "team2_player_ids"]) and taken == 4
    bare, taken = squads_with_registry_ids(matches.drop(columns=["team1_player_ids", "team2_player_ids"]), balls)
    assert bare["team1_player_ids"].tolist() == ["a1;;c1", "a1;d1"] and taken == 5
