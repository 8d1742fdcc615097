"""Who bowls: the quota, never two overs in a row, the documented choice."""

from __future__ import annotations

import pytest
import torch

from cricket_attn.simulation.rules import BowlerChoice, BowlingUsage, quota_overs
from cricket_attn.simulation.setup import InningsSetup


@pytest.mark.parametrize(
    "match_type, balls, per_over, quota",
    [("T20", 120, 6, 4), ("IT20", 120, 6, 4), ("T20", 36, 6, 2), ("ODI", 300, 6, 10), ("T20", 100, 5, 4)],
)
def test_a_bowler_may_bowl_a_fifth_of_the_innings(match_type, balls, per_over, quota):
    assert quota_overs(match_type, balls, per_over) == quota


def test_a_format_without_a_known_quota_is_named():
    with pytest.raises(ValueError, match="match_type 'Test': no bowling quota"):
        quota_overs("Test", 540, 6)


def test_the_choice_follows_each_players_earlier_overs(fixture_simulator, fixture_tables, deliveries):
    """In 1527675 (2026) the bowling side's players have few earlier fixture matches, but whoever bowled the
    first over in his before is likelier to bowl it again than a player who never bowled."""
    inn = deliveries[(deliveries["match_id"] == "1527675") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    state = fixture_simulator.start(setup, 1)
    choice = BowlerChoice.for_innings(state, fixture_simulator.usage, inn["date"].iloc[0])
    p = choice.probabilities(state)[0]
    assert torch.isclose(p.sum(), torch.tensor(1.0, dtype=torch.float64))
    earlier = deliveries[(deliveries["date"] < inn["date"].iloc[0]) & ~deliveries["is_super_over"].astype(bool)]
    openers = set(earlier.loc[earlier["over"] == 0, "bowler"]) & set(setup.bowling)
    never = set(setup.bowling) - set(earlier["bowler"])
    assert openers and never
    slot = {name: i for i, name in enumerate(setup.bowling)}
    assert min(p[slot[b]] for b in openers) > 10 * max(p[slot[b]] for b in never)


def test_a_player_who_changed_sides_brings_his_overs_with_him(ipl_tables):
    """KH Pandya bowled for Lucknow in 2024 and for Bengaluru from 2025: before Bengaluru's first match of
    2025 his usage counts his own last ten matches' overs (counted here from the deliveries), though his new
    side's last matches hold none of his."""
    d, m = ipl_tables.deliveries, ipl_tables.matches
    first = m[(m["season"] == 2025) & m[["team1", "team2"]].eq("Royal Challengers Bengaluru").any(axis=1)]
    date = first["date"].min()
    his = d[(d[["batter", "non_striker", "bowler"]] == "KH Pandya").any(axis=1) & (d["date"] < date)]
    last = his.drop_duplicates("match_id").nlargest(10, "date")["match_id"]
    bowled = d[(d["bowler"] == "KH Pandya") & d["match_id"].isin(last) & ~d["is_super_over"].astype(bool)]
    overs = bowled.drop_duplicates(["match_id", "innings", "over"])["over"].value_counts().sort_index()
    assert overs.sum() >= 20  # he bowled most of his quota in those matches
    players = ["V Kohli", "KH Pandya"]
    by_player = BowlingUsage.build(d).counts(date, players, 24)
    assert by_player[overs.index, 1].tolist() == overs.tolist() and by_player[:, 1].sum() == overs.sum()
    assert by_player[:, 0].sum() == 0  # Kohli: no overs


def test_simulated_innings_keep_the_laws(fixture_simulator, fixture_tables, deliveries):
    """500 simulated innings from ball 0: no bowler over his quota or bowling two overs running, every
    innings ended all out, out of balls or with the target passed."""
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    target = 160.0  # within reach of an untrained model scoring at the training seasons' rates
    state = fixture_simulator.start(setup, 500, target)
    choice = BowlerChoice.for_innings(state, fixture_simulator.usage, inn["date"].iloc[0])
    ends, final = fixture_simulator.roll(
        state, fixture_simulator.new_caches(), choice, torch.Generator().manual_seed(0), keep_states=True
    )
    assert (final.bowler_overs <= choice.quota).all()
    bowled = final.over_bowler
    assert ((bowled[:, 1:] != bowled[:, :-1]) | (bowled[:, 1:] < 0)).all()
    over = (ends.wickets == 10) | (ends.legal == setup.balls) | (ends.runs >= target)
    assert over.all() and ends.cut_short == 0
    assert (ends.wickets <= 10).all() and (ends.legal <= setup.balls).all()
    assert (ends.wickets == 10).any() and (ends.runs >= target).any()


def test_a_forced_over_goes_to_the_chosen_bowler(fixture_simulator, fixture_tables, deliveries):
    from cricket_attn.simulation.what_if import ForcedOver

    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    state = fixture_simulator.start(setup, 200)
    rule = BowlerChoice.for_innings(state, fixture_simulator.usage, inn["date"].iloc[0])
    forced = ForcedOver(rule.weights, rule.quota, over=3, bowler=7)
    _, final = fixture_simulator.roll(
        state, fixture_simulator.new_caches(), forced, torch.Generator().manual_seed(0), keep_states=True
    )
    reached = final.over > 3
    assert reached.sum() > 150 and (final.over_bowler[reached, 3] == 7).all()
    assert ((final.over_bowler[:, 1:] != final.over_bowler[:, :-1]) | (final.over_bowler[:, 1:] < 0)).all()
