"""Rolling innings forward: the innings-level spread widens the simulated totals and changes nothing when off."""

from __future__ import annotations

from dataclasses import replace

import torch

from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup


def totals(sim, deliveries, matches, n=400, seed=0):
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, matches)
    state = sim.start(setup, n)
    choice = BowlerChoice.for_innings(state, sim.usage, inn["date"].iloc[0])
    return sim.roll(state, sim.new_caches(), choice, torch.Generator().manual_seed(seed)).runs.double()


def test_the_innings_spread_widens_the_totals_around_the_same_level(fixture_simulator, fixture_tables, deliveries):
    plain = totals(fixture_simulator, deliveries, fixture_tables.matches)
    assert torch.equal(plain, totals(replace(fixture_simulator, spread=0.0), deliveries, fixture_tables.matches))
    wide = totals(replace(fixture_simulator, spread=0.3), deliveries, fixture_tables.matches)
    assert wide.std() > 1.3 * plain.std()
    assert abs(wide.mean() - plain.mean()) < 0.25 * plain.std()
    # The tilt: a hot innings (z > 0) has more sixes and fewer dots, a cold one the reverse; the same
    # distribution on average over z.
    sim = replace(fixture_simulator, spread=0.3)
    p = torch.tensor([[0.35, 0.35, 0.06, 0.003, 0.11, 0.05, 0.05, 0.015, 0.002, 0.01]], dtype=torch.float64)
    u = sim.run_direction()
    hot, cold = sim.tilt(p, torch.tensor([0.3]), u), sim.tilt(p, torch.tensor([-0.3]), u)
    assert hot[0, 5] > p[0, 5] > cold[0, 5] and hot[0, 0] < p[0, 0] < cold[0, 0]
    assert torch.allclose((hot + cold) / 2, p) and torch.allclose(hot.sum(), torch.tensor(1.0, dtype=torch.float64))
    z = sim.innings_draws(20000, torch.Generator().manual_seed(1))
    assert (
        abs(z.std() - 0.3) < 0.01
        and sim.innings_draws(5, None) is not None
        and fixture_simulator.innings_draws(5, None) is None
    )


def test_what_a_simulation_keeps_fits_the_memory_check(fixture_simulator, fixture_tables, deliveries):
    """`rollout.BYTES_A_SIMULATION`, what `cricket-attn-simulate --sims` is refused by, holds what each simulation
    keeps beside the rollout: its state's per-simulation tensors (a chase's state is made for each simulated
    first innings) and its end, measured on real tensors of a real innings (XIs of 12 give the widest state)."""
    from cricket_attn.simulation.rollout import BYTES_A_SIMULATION
    from cricket_attn.simulation.state import _PER_SIMULATION

    n = 64
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    state = fixture_simulator.start(setup, n)
    choice = BowlerChoice.for_innings(state, fixture_simulator.usage, inn["date"].iloc[0])
    end = fixture_simulator.roll(state, fixture_simulator.new_caches(), choice, torch.Generator().manual_seed(0))
    kept = [getattr(state, name) for name in _PER_SIMULATION] + [v for v in vars(end).values() if torch.is_tensor(v)]
    assert all(t.shape[0] == n for t in kept)
    per_simulation = sum(t.element_size() * t.numel() for t in kept) / n
    assert 500 < per_simulation <= BYTES_A_SIMULATION, f"{per_simulation:.0f} bytes a simulation"


def test_an_ensemble_rolls_each_member_with_its_own_cache(fixture_simulator, fixture_tables, deliveries):
    """An ensemble's members each keep their own KV cache through the rollout and the next ball is drawn from
    their mean: two copies of one model roll the same innings as the model alone, and a second, different member
    moves the totals."""
    from cricket_attn.model import CricketTransformer, Ensemble

    model = fixture_simulator.model
    alone = totals(fixture_simulator, deliveries, fixture_tables.matches, n=64)
    twins = replace(fixture_simulator, model=Ensemble([model, model]).eval())
    assert torch.allclose(totals(twins, deliveries, fixture_tables.matches, n=64), alone)
    torch.manual_seed(1)
    other = CricketTransformer(model.cfg).eval()
    other.load_state_dict({**model.state_dict(), "head.bias": model.head.bias.detach() + torch.randn(10) * 0.5})
    pair = replace(fixture_simulator, model=Ensemble([model, other]).eval())
    assert not torch.equal(totals(pair, deliveries, fixture_tables.matches, n=64), alone)
