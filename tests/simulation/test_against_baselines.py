"""The simulator's match-level evaluation: labels, baselines and reports on the fixture matches."""

from __future__ import annotations

import pandas as pd
import pytest

from cricket_attn.simulation.against_baselines import Baselines, evaluate, over_start_states, summary_metrics


@pytest.fixture(scope="module")
def states(fixture_tables):
    return over_start_states(fixture_tables.deliveries, fixture_tables.matches)


def test_over_start_states_carry_the_result(states, deliveries):
    one = states[(states["match_id"] == "1473439") & (states["innings"] == 2)]
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)]
    assert len(one) == inn["over"].nunique() and (one["total"] == inn["runs_total"].sum()).all()
    assert one["runs_before"].iloc[0] == 0 and one["runs_needed"].iloc[0] == inn["target_runs"].iloc[0]
    chase = states[states["chase"]]
    assert (chase.loc[chase["match_id"] == "1216493", "won"] == 0.5).all()  # a tie is half a win
    assert chase.loc[chase["match_id"] == "1178424", "won"].isna().all()  # no result
    assert states.loc[~states["chase"], "won"].isna().all()


def test_the_logistic_baseline_reads_the_chase_the_right_way(states):
    base = Baselines(states[states["season"] <= 2024])
    easy = states[states["chase"]].iloc[:1].copy()
    hard = easy.copy()
    easy["runs_needed"], hard["runs_needed"] = 20, 200
    assert base.win_probability(easy)[0] > base.win_probability(hard)[0]


def test_evaluation_reports_every_checkpoint(fixture_simulator, fixture_tables):
    r = evaluate(fixture_simulator, fixture_tables.deliveries, fixture_tables.matches, 2024, [2025, 2026], n=4)
    win, totals = r["win"], r["totals"]
    assert list(win["states"]) == [
        "all over starts",
        "chase start",
        "after 6 overs",
        "after 10 overs",
        "after 15 overs",
    ]
    assert win["matches"].iloc[0] == 5 and r["no_result_matches"] == 0
    assert ((win["simulator_brier"] >= 0) & (win["simulator_brier"] <= 1)).all()
    assert list(totals["after_overs"]) == [6, 10, 15] and (totals["simulator_mae"] >= 0).all()
    assert r["chases"]["sim_win"].between(0, 1).all()
    levels = pd.DataFrame({"season": [2025], "innings_kind": ["first"], "runs_gap_per_innings": [1.5],
                           "wickets_gap_per_innings": [-0.25]})  # fmt: skip
    logged = summary_metrics(r, levels)
    assert logged["sim/brier"] == win["simulator_brier"].iloc[0]
    assert logged["sim/brier_10"] == win.set_index("states").loc["after 10 overs", "simulator_brier"]
    assert logged["sim/total_mae_15"] == totals.set_index("after_overs").loc[15, "simulator_mae"]
    assert logged["why/runs_gap_per_innings_2025_first"] == 1.5
    assert all(isinstance(v, float) for v in logged.values())
