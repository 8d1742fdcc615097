"""The checks of simulated against real innings, and of each cause on its own, on the fixture matches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import class_frequencies
from cricket_attn.inference.form import PlayerForm
from cricket_attn.laws import OUTCOMES
from cricket_attn.simulation.match import innings_points, over_starts, simulate_points
from cricket_attn.simulation.realism import (
    WAYS,
    bowler_rule_fit,
    class_values,
    per_ball_levels,
    real_bowlers,
    real_order,
    season_table,
    simulate_from_the_start,
    who_plays,
    who_plays_table,
)
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState


def regular(deliveries):
    return deliveries[~deliveries["is_super_over"].astype(bool)]


def test_per_ball_levels_compare_real_balls_with_the_models_expectation(fixture_simulator, deliveries):
    """Real means are the table's; the fixture model predicts the training seasons' class shares (its head's
    bias), so its expected runs and wickets per ball are the training seasons' own, not the test seasons'."""
    d = regular(deliveries)
    train, test = d[d["season"] <= 2023], d[d["season"] >= 2024]
    levels = per_ball_levels(fixture_simulator, test, train)
    assert levels["deliveries"].sum() == len(test)
    chase = test["target_runs"].notna()
    for (season, kind), row in levels.set_index(["season", "innings_kind"]).iterrows():
        real = test[(test["season"] == season) & (chase == (kind == "chase"))]
        assert (
            np.isclose(row["real_runs"], real["runs_total"].mean())
            and row["innings"] == real.groupby(["match_id", "innings"], observed=True).ngroups
        )
    values = class_values(train)
    shares = class_frequencies(train).to_numpy()
    assert np.allclose(levels["model_runs"], shares @ values["runs"].to_numpy(), atol=0.05)
    assert np.allclose(levels["model_wickets"], shares @ values["wickets"].to_numpy(), atol=0.01)
    # With the simulator's players' form (every batter of a later match out of form for wickets), as simulated.
    later = test[test["season"] > fixture_simulator.encoder.trained_until]
    table = pd.DataFrame(
        {
            "role": "batter",
            "player": later["batter"].astype(str).unique(),
            "match_id": "earlier",
            "date": pd.Timestamp(later["date"].min()) - pd.Timedelta(days=1),
            "n": 30,
            "runs": 0.0,
            "wicket": 3.0,
        }
    )
    cold = per_ball_levels(
        replace(fixture_simulator, form=PlayerForm(table, balls=30.0, weights=(0.0, 10.0, 0.0, 0.0))), later, train
    )
    plain = per_ball_levels(fixture_simulator, later, train)
    assert (cold["model_wickets"] > plain["model_wickets"] + 0.01).all() and np.allclose(
        cold["real_runs"], plain["real_runs"]
    )


def test_the_bowler_rule_is_scored_on_every_over_after_the_first(fixture_simulator, fixture_tables, deliveries):
    d = regular(deliveries)
    fit = bowler_rule_fit(fixture_simulator, d, fixture_tables.matches)
    overs = sum(len(over_starts(inn)) - 1 for _, inn in d.groupby(["match_id", "innings"], observed=True))
    assert fit["overs"].sum() == overs and (fit["ruled_out"] == 0).all()  # the record keeps the laws
    assert (fit["rule_log_lik"] < 0).all() and fit["even_log_lik"].between(-np.log(11), -np.log(2)).all()
    assert fit["likeliest_bowled"].between(0, 1).all()


def test_innings_simulated_from_ball_0_are_set_beside_the_real_ones(fixture_simulator, fixture_tables, deliveries):
    match = regular(deliveries[deliveries["match_id"] == "1473439"])
    per_innings = simulate_from_the_start(fixture_simulator, match, fixture_tables.matches, n=8)
    assert list(per_innings["innings"]) == [1, 2]
    totals = match.groupby("innings", observed=True)["runs_total"].sum().to_numpy()
    assert (per_innings["real_runs"].to_numpy() == totals).all() and (per_innings["sim_runs"] > 0).all()
    table = season_table(per_innings)
    assert list(table["innings"]) == ["first", "chase"] and (table["n"] == 1).all()
    # With the match's class offsets (the recent level), as the evaluation simulates it: sixes made likelier.
    offsets = np.zeros(len(OUTCOMES), dtype=np.float32)
    offsets[OUTCOMES.index("6")] = 2.0
    hot = simulate_from_the_start(fixture_simulator, match, fixture_tables.matches, n=8, levels={"1473439": offsets})
    assert (hot["sim_sixes"] > per_innings["sim_sixes"] + 3).all()


def test_innings_from_ball_0_are_rolled_a_chunk_at_a_time(fixture_simulator, fixture_tables, deliveries, monkeypatch):
    """Many simulations of an innings are rolled MAX_ROWS at a time (the KV cache is a chunk's, not all of
    theirs), the chunks' ends joined; up to MAX_ROWS it is one roll, draw for draw."""
    from cricket_attn.simulation import rollout

    match = regular(deliveries[deliveries["match_id"] == "1473439"])
    whole = simulate_from_the_start(fixture_simulator, match, fixture_tables.matches, n=8)
    rows, roll = [], type(fixture_simulator).roll
    monkeypatch.setattr(
        type(fixture_simulator), "roll", lambda self, state, *a, **k: rows.append(state.n) or roll(self, state, *a, **k)
    )
    monkeypatch.setattr(rollout, "MAX_ROWS", 8)
    again = simulate_from_the_start(fixture_simulator, match, fixture_tables.matches, n=8)
    assert rows == [8, 8] and again.equals(whole)  # one roll an innings, as before
    rows.clear()
    monkeypatch.setattr(rollout, "MAX_ROWS", 3)
    chunked = simulate_from_the_start(fixture_simulator, match, fixture_tables.matches, n=8)
    assert rows == [3, 3, 2] * 2 and (chunked["sim_runs"] > 0).all() and (chunked["sim_runs_sd"] > 0).all()


def test_who_plays_sets_the_real_bowlers_and_batting_order_beside_the_rules(
    fixture_simulator, fixture_tables, deliveries
):
    match = regular(deliveries[deliveries["match_id"] == "1473439"])
    first = match[match["innings"] == 1].reset_index(drop=True)
    setup = InningsSetup.from_table(first, fixture_tables.matches)
    # The real order: who came to the crease, openers first, then those who did not bat.
    order = real_order(setup, first).batting
    came = list(dict.fromkeys(x for pair in zip(first["batter"], first["non_striker"]) for x in pair))
    assert order[: len(came)] == came and sorted(order) == sorted(setup.batting)
    # The real bowlers: at each over's start (his over not yet counted), the real bowler is all but certain.
    starts = over_starts(first)[1:]
    state = InningsState.stack([p.state for p in innings_points(fixture_simulator, setup, first, starts, None)])
    real = state.bowler.clone()
    state.bowler_overs[torch.arange(state.n), real] -= 1
    rule = BowlerChoice.for_innings(state, fixture_simulator.usage, first["date"].iloc[0])
    took = real_bowlers(rule, setup, first).probabilities(state)[torch.arange(state.n), real]
    assert (took > 0.999).all() and (rule.probabilities(state)[torch.arange(state.n), real] < 0.999).any()
    # From the points after 6 and 10 overs: each way's mean projection; `rules` is the evaluation's own.
    per = who_plays(fixture_simulator, match, fixture_tables.matches, overs=(6, 10), n=6, seed=3)
    assert list(per["after_overs"]) == [6, 10] and (per["total"] == first["runs_total"].sum()).all()
    points = innings_points(fixture_simulator, setup, first, [over_starts(first)[6], over_starts(first)[10]], None)
    plain = simulate_points(
        fixture_simulator,
        points,
        first,
        first["date"].iloc[0],
        6,
        torch.Generator().manual_seed(3),
    )
    assert np.allclose(per["rules"], plain.runs.double().view(2, 6).mean(1).numpy())
    scored = [first["runs_total"].iloc[: over_starts(first)[k]].sum() for k in (6, 10)]
    assert (per[list(WAYS)].to_numpy() >= np.array(scored)[:, None]).all()  # no way unscores the real runs
    table = who_plays_table(per)
    assert list(table["innings"]) == [1, 1] and np.allclose(table["rules_bias"], per["rules"] - per["total"])
