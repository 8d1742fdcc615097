"""The checks of simulated against real innings, and of each cause on its own, on the fixture matches."""

from __future__ import annotations

import numpy as np

from cricket_attn.data.deliveries import class_frequencies
from cricket_attn.simulation.checks import (bowler_rule_fit, class_values, per_ball_levels, season_table,
                                            simulate_from_the_start)
from cricket_attn.simulation.match import over_starts


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
        assert np.isclose(row["real_runs"], real["runs_total"].mean()) and row["innings"] == real.groupby(
            ["match_id", "innings"], observed=True).ngroups
    values = class_values(train)
    shares = class_frequencies(train).to_numpy()
    assert np.allclose(levels["model_runs"], shares @ values["runs"].to_numpy(), atol=0.05)
    assert np.allclose(levels["model_wickets"], shares @ values["wickets"].to_numpy(), atol=0.01)


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
