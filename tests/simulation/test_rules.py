"""Who bowls: the quota, never two overs in a row, the documented choice."""

from __future__ import annotations

import pytest
import torch

from cricket_attn.simulation.rules import BowlerChoice, quota_overs
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


def test_the_choice_follows_the_sides_earlier_overs(fixture_simulator, fixture_tables, deliveries):
    """In 1527675 (2026) the bowling side's earlier fixture matches are few, but whoever bowled the first
    over for it before is likelier to bowl it again than a player who never bowled."""
    inn = deliveries[(deliveries["match_id"] == "1527675") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    state = fixture_simulator.start(setup, 1)
    team = str(inn["bowling_team"].iloc[0])
    choice = BowlerChoice.for_innings(state, fixture_simulator.usage, team, inn["date"].iloc[0])
    p = choice.probabilities(state)[0]
    assert torch.isclose(p.sum(), torch.tensor(1.0, dtype=torch.float64))
    usage = fixture_simulator.usage.overs
    earlier = usage[(usage["team"] == team) & (usage["date"] < inn["date"].iloc[0])]
    openers = set(earlier.loc[earlier["over"] == 0, "bowler"]) & set(setup.bowling)
    never = set(setup.bowling) - set(earlier["bowler"])
    assert openers and never
    slot = {name: i for i, name in enumerate(setup.bowling)}
    assert min(p[slot[b]] for b in openers) > 10 * max(p[slot[b]] for b in never)


def test_simulated_innings_keep_the_laws(fixture_simulator, fixture_tables, deliveries):
    """500 simulated innings from ball 0: no bowler over his quota or bowling two overs running, every
    innings ended all out, out of balls or with the target passed."""
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    target = 160.0  # within reach of an untrained model scoring at the training seasons' rates
    state = fixture_simulator.start(setup, 500, target)
    choice = BowlerChoice.for_innings(
        state, fixture_simulator.usage, str(inn["bowling_team"].iloc[0]), inn["date"].iloc[0]
    )
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
    rule = BowlerChoice.for_innings(
        state, fixture_simulator.usage, str(inn["bowling_team"].iloc[0]), inn["date"].iloc[0]
    )
    forced = ForcedOver(rule.weights, rule.quota, over=3, bowler=7)
    _, final = fixture_simulator.roll(
        state, fixture_simulator.new_caches(), forced, torch.Generator().manual_seed(0), keep_states=True
    )
    reached = final.over > 3
    assert reached.sum() > 150 and (final.over_bowler[reached, 3] == 7).all()
    assert ((final.over_bowler[:, 1:] != final.over_bowler[:, :-1]) | (final.over_bowler[:, 1:] < 0)).all()
