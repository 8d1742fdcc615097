"""Projections for real matches: the real balls so far encoded once, the simulations rolled from there."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
import torch

from cricket_attn.simulation.match import (
    PROJECTION_COLUMNS,
    MatchContext,
    StateError,
    chase_setup,
    innings_points,
    over_starts,
    project_match,
)
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState
from cricket_attn.simulation.what_if import next_batter_choices, with_next_batter
from tests.conftest import untrained_model


def test_points_with_their_cached_prefix_predict_as_a_full_pass(fixture_simulator, fixture_tables, deliveries):
    """Several points of a real chase in one batch, each reading the real balls before it from one shared
    cache: the next ball's distribution from each point's state equals the full pass over the real innings
    at that ball."""
    sim = fixture_simulator
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)].reset_index(drop=True)
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    at = [0, 7, 40, len(inn) - 1]
    points = innings_points(sim, setup, inn, at, float(inn["target_runs"].iloc[0]))
    caches = [c.share_rows(torch.tensor(at)) for c in sim.encode_innings(inn)]
    state = InningsState.stack([p.state for p in points])
    with torch.no_grad():
        got = sim.log_probs(state.inputs(), caches).exp()
        full = sim.model(sim.encoder.encode(inn).collate([0])).softmax(-1)[0, at]
    assert (got - full).abs().max().item() < 1e-5


def test_a_match_is_projected_from_every_over_start(fixture_simulator, fixture_tables, deliveries):
    match = deliveries[deliveries["match_id"] == "1473439"]
    out = project_match(fixture_simulator, match, fixture_tables.matches, n=16, seed=1)
    assert list(out.columns) == list(PROJECTION_COLUMNS)
    starts = [len(over_starts(match[match["innings"] == i])) for i in (1, 2)]
    assert (out["innings"] == 1).sum() == starts[0] and (out["innings"] == 2).sum() == starts[1]
    assert out["win_probability"].between(0, 1).all() and (out["sims"] == 16).all()
    assert (out["projected_total_q10"] <= out["projected_total_q50"]).all()
    assert (out["projected_total_q50"] <= out["projected_total_q90"]).all()
    assert (out["projected_total"] >= out["runs"]).all()
    chase = out[out["innings"] == 2]
    assert (chase["target"] == match["target_runs"].dropna().iloc[0]).all() and out.loc[
        out["innings"] == 1, "target"
    ].isna().all()
    again = project_match(fixture_simulator, match, fixture_tables.matches, n=16, seed=1)
    pd.testing.assert_frame_equal(out, again)  # same seed, same numbers


def test_a_match_in_progress_gets_its_current_state(fixture_simulator, fixture_tables, deliveries):
    match = deliveries[deliveries["match_id"] == "1473439"]
    live = match.iloc[:-25]  # the chase with 25 deliveries to come
    out = project_match(fixture_simulator, live, fixture_tables.matches, n=8)
    last = out.iloc[-1]
    chase = live[live["innings"] == 2]
    assert last["innings"] == 2 and last["delivery_index"] == len(chase)
    assert last["runs"] == chase["runs_total"].sum() and last["wickets"] == chase["wicket_count"].sum()
    assert last["projected_total"] >= last["runs"]


def test_between_innings_the_chase_starts_from_the_real_target(fixture_simulator, fixture_tables, deliveries):
    """The first innings over, the chase not begun: one chase row, at its start, chasing the real total + 1."""
    match = deliveries[deliveries["match_id"] == "1473439"]
    first = match[match["innings"] == 1]
    out = project_match(fixture_simulator, first, fixture_tables.matches, n=8)
    chase = out[out["innings"] == 2]
    assert len(chase) == 1 and chase["delivery_index"].iloc[0] == 0
    assert (chase["over"].iloc[0], chase["ball"].iloc[0]) == (0, 1)
    assert chase["target"].iloc[0] == first["runs_total"].sum() + 1


def test_the_chosen_batter_comes_in_after_a_wicket(fixture_simulator, fixture_tables, deliveries):
    """A chase cut just after a wicket: each player yet to bat is tried as the one who comes in now, and he is
    at the crease in that state; the one the order sends in gives the numbers of the unchanged match."""
    sim = fixture_simulator
    match = deliveries[deliveries["match_id"] == "1473439"].reset_index(drop=True)
    chase = match[match["innings"] == 2]
    fell = chase.index[chase["wicket_count"] > 0]
    live = match.iloc[: fell[1] + 1]  # the chase's second wicket has just fallen
    ctx = MatchContext.of(live, fixture_tables.matches)
    setup, inn = ctx.setups[2], ctx.innings[2]
    batted = set(inn["batter"].astype(str)) | set(inn["non_striker"].astype(str))
    waiting = [p for p in setup.batting if p not in batted]
    table = next_batter_choices(sim, live, fixture_tables.matches, n=8, seed=3)
    assert sorted(table["batter"]) == sorted(waiting) and sorted(table["position"]) == list(range(1, len(waiting) + 1))
    for player in (waiting[0], waiting[-1]):
        what_if = with_next_batter(setup, inn, player)
        (point,) = innings_points(sim, what_if, inn, [len(inn)], ctx.target())
        at_crease = {what_if.batting[int(point.state.striker[0])], what_if.batting[int(point.state.non_striker[0])]}
        assert player in at_crease
    (point,) = ctx.points(sim, 2, [len(inn)])
    _, wins = ctx.simulate(sim, 2, [point], 8, torch.Generator().manual_seed(3))
    as_listed = table[table["position"] == 1].iloc[0]
    assert as_listed["batter"] == waiting[0] and as_listed["win_probability"] == float(wins.mean())
    assert table["win_probability"].is_monotonic_decreasing  # best first for the chasing side, which bats


def test_a_batter_who_has_batted_cannot_come_in_again(fixture_tables, deliveries):
    match = deliveries[deliveries["match_id"] == "1473439"]
    ctx = MatchContext.of(match.iloc[:150], fixture_tables.matches)
    inn = ctx.innings[2]
    with pytest.raises(StateError, match="has batted already"):
        with_next_batter(ctx.setups[2], inn, str(inn["batter"].iloc[-1]))
    with pytest.raises(StateError, match="is not listed"):
        with_next_batter(ctx.setups[2], inn, "Nobody Atall")


def test_a_model_that_reads_the_first_innings_is_refused_by_name(fixture_simulator):
    """The state gives no first innings yet: such a model is refused, not fed short."""
    sim = fixture_simulator
    with pytest.raises(ValueError, match="reads the first innings"):
        Simulator(sim.model, replace(sim.encoder, first_innings=True), sim.phases, sim.scorebook, sim.usage)
    with pytest.raises(ValueError, match="attach them"):
        Simulator(sim.model, replace(sim.encoder, history_balls=8), sim.phases, sim.scorebook, sim.usage)


def test_a_model_reading_histories_simulates_from_the_inputs_training_gives_it(
    fixture_simulator, fixture_tables, deliveries
):
    """A model reading its players' histories: from the cached real balls at several points of a real chase,
    and from the innings' start with nothing cached, the next ball's distribution equals the full pass over
    the real innings (whose histories the encoder lists by order of appearance, the simulator by the sides'
    slots, every simulation of the innings sharing one copy)."""
    sim = fixture_simulator
    encoder = replace(sim.encoder, history_balls=8)
    encoder.attach_known(deliveries)
    model = untrained_model(encoder, seed=2, d_model=16, n_layers=2)
    sim = replace(sim, model=model, encoder=encoder)
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)].reset_index(drop=True)
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    full_batch = encoder.encode(inn).collate([0])
    assert (full_batch["batter_history"][..., 0] >= 0).any() and (full_batch["bowler_history"][..., 0] >= 0).any()
    at = [0, 7, 40, len(inn) - 1]
    points = innings_points(sim, setup, inn, at, float(inn["target_runs"].iloc[0]))
    state = InningsState.stack([p.state for p in points])
    with torch.no_grad():
        full = model(full_batch).softmax(-1)[0, at]
        cached = [c.share_rows(torch.tensor(at)) for c in sim.encode_innings(inn, setup)]
        got = sim.log_probs(state.inputs(), cached).exp()
        fresh = sim.log_probs(points[0].state.inputs(), sim.new_caches()).exp()
    assert (got - full).abs().max().item() < 1e-5
    assert (fresh[0] - full[0]).abs().max().item() < 1e-5
    assert cached[0].contexts["batter_history"][0].size(0) == 1  # one copy for every simulation
    with pytest.raises(ValueError, match="needs the innings' setup"):
        sim.encode_innings(inn)


def test_rates_by_player_slot_predict_as_the_full_numeric_input(fixture_simulator, fixture_tables, deliveries):
    """The simulator gives the model its players' and venue's rates once per innings, by slot, instead of at
    every ball: a piecewise-linear model's next-ball distribution is the same either way, at every point of a
    real chase, from the cached prefix."""
    from cricket_attn.data.features import STATE_COLUMNS
    from cricket_attn.model import CricketTransformer, ModelConfig

    sim = fixture_simulator
    torch.manual_seed(1)
    model = CricketTransformer(
        ModelConfig(**sim.encoder.model_dims(), numeric_embedding="bins", d_model=16, n_heads=2, n_layers=2)
    ).eval()
    assert model.cfg.numeric_quantiles is not None
    sim = replace(sim, model=model)
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 2)].reset_index(drop=True)
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    at = [0, 9, 50, len(inn) - 1]
    state = InningsState.stack(
        [p.state for p in innings_points(sim, setup, inn, at, float(inn["target_runs"].iloc[0]))]
    )
    got = {}
    with torch.no_grad():
        for by_slot in (False, True):
            caches = [c.share_rows(torch.tensor(at)) for c in sim.encode_innings(inn)]
            if by_slot:
                assert caches[0].keep_rates(model, state.rates())
            batch = state.inputs(by_slot)
            assert batch["numeric"].size(-1) == (len(STATE_COLUMNS) if by_slot else model.cfg.n_numeric)
            got[by_slot] = sim.log_probs(batch, caches).exp()
    assert (got[True] - got[False]).abs().max().item() < 1e-5


def test_a_chase_not_yet_begun_gets_the_opening_powerplay_but_not_the_first_sides_surge(phases):
    """1386137 (Big Bash): the first innings took its Power Surge in overs 17-18. A chase simulated before
    it starts gets the four-over powerplay the rules give both sides, not the other side's surge overs; a
    shortened chase, whose powerplay is its own, the format's."""
    from cricket_attn.data.deliveries import build_tables
    from cricket_attn.data.sources import iter_match_files
    from tests.conftest import FIXTURES

    d = build_tables(iter_match_files([FIXTURES.parent / "cricsheet_t20" / "1386137.json"]), phases).deliveries
    first = InningsSetup.from_table(d[d["innings"] == 1])
    assert first.powerplays == "0-23;96-107"
    empty, sides = d.iloc[:0], (str(d["bowling_team"].iloc[0]), str(d["batting_team"].iloc[0]))
    chase = chase_setup(first, empty, None, "1386137", *sides, first.balls)
    assert chase.chase and chase.powerplays == "0-23"
    assert chase_setup(first, empty, None, "1386137", *sides, 90).powerplays == ""
