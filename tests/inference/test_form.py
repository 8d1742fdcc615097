"""Players' form since the training seasons: from earlier matches only, less the league's level, and the
tilt it gives to scored balls and to the simulator's."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from cricket_attn.inference.form import RUN_DIRECTION, WICKET, PlayerForm, ball_losses, fit_weights, residuals
from cricket_attn.inference.recent import balls_since
from cricket_attn.laws import OUTCOMES
from cricket_attn.metrics import PROB_COLUMNS
from cricket_attn.simulation.match import innings_points, simulate_points
from cricket_attn.simulation.setup import InningsSetup


def test_a_players_form_is_his_earlier_matches_less_the_league(fixture_simulator, deliveries):
    sim = fixture_simulator
    balls, dates = balls_since(sim.model, sim.encoder, deliveries)
    assert len(balls) and set(balls["match_id"]) == set(dates.index)
    form = PlayerForm.from_scored(balls, dates, balls=50.0)
    # The league's mean is taken out match by match: each match's excess residuals sum to zero per role.
    per_match = form.table.groupby(["role", "match_id"])[["runs", "wicket"]].sum()
    assert np.allclose(per_match.to_numpy(), 0.0, atol=1e-9)
    # A batter of the first two dates: nothing before the first; before the second, his first match's
    # excess runs and wickets over his balls there, shrunk by 50 balls.
    days = sorted(dates.unique())
    runs, wicket = residuals(balls)
    league = (
        pd.DataFrame({"match_id": balls["match_id"], "runs": runs, "wicket": wicket})
        .groupby("match_id")
        .transform("mean")
    )
    first_day = balls["match_id"].map(dates) == days[0]
    batter = balls.loc[first_day, "batter"].iloc[0]
    mine = (first_day & (balls["batter"] == batter)).to_numpy()
    expected = np.array([(runs[mine] - league["runs"][mine]).sum(), (wicket[mine] - league["wicket"][mine]).sum()]) / (
        mine.sum() + 50
    )
    assert np.allclose(form.forms("batter", [batter, "nobody"], days[0]), 0.0)
    assert np.allclose(form.forms("batter", [batter, "nobody"], days[1]), [expected, [0.0, 0.0]])
    # The offsets: his runs form along the classes' runs, his wicket form on the wicket class alone.
    tilted = replace(form, weights=(2.0, 3.0, 0.0, 0.0))
    expected_offsets = 2.0 * expected[0] * RUN_DIRECTION
    expected_offsets[WICKET] += 3.0 * expected[1]
    assert np.allclose(tilted.offsets("batter", [batter], days[1])[0], expected_offsets)
    assert np.allclose(tilted.offsets("bowler", [batter], days[1]), 0.0)  # the bowler's weights are zero


def test_the_tilt_keeps_distributions_and_its_weights_fit_a_known_form(fixture_simulator, deliveries):
    sim = fixture_simulator
    balls, dates = balls_since(sim.model, sim.encoder, deliveries)
    scored = balls
    form = PlayerForm.from_scored(balls, dates, weights=(0.5, 1.0, -0.5, 2.0))
    moved = form.tilt(scored, dates)
    assert np.allclose(moved[list(PROB_COLUMNS)].sum(axis=1), 1.0)
    f = form.ball_forms(scored, dates)
    assert (f[(scored["match_id"].map(dates) == dates.min()).to_numpy()] == 0).all() and (f != 0).any()
    # Zero weights: the model as it is.
    assert np.allclose(
        replace(form, weights=(0.0,) * 4).tilt(scored, dates)[list(PROB_COLUMNS)], scored[list(PROB_COLUMNS)]
    )
    # Outcomes drawn from a known tilt of the model's own distributions: the fit finds its weights.
    rng = np.random.default_rng(0)
    many = np.repeat(np.arange(len(scored)), 40)
    log_p = np.log(scored[list(PROB_COLUMNS)].to_numpy(np.float64))[many]
    known = np.array([1.5, 4.0, -1.0, 3.0])
    f_many = f[many] * 5  # forms of a few balls' worth are small: widen them so the fit has something to see
    z = log_p + (f_many[:, [0]] * known[0] + f_many[:, [2]] * known[2]) * RUN_DIRECTION
    z[:, WICKET] += f_many[:, 1] * known[1] + f_many[:, 3] * known[3]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    labels = (p.cumsum(1) > rng.random((len(p), 1))).argmax(1)
    w = fit_weights(log_p, labels, f_many)
    assert ball_losses(w, log_p, labels, f_many).mean() < ball_losses(np.zeros(4), log_p, labels, f_many).mean()
    assert np.sign(w).tolist() == np.sign(known).tolist() and np.allclose(w[[0, 2]], known[[0, 2]], atol=1.0)


def test_the_simulator_takes_each_slots_form(fixture_simulator, fixture_tables, deliveries):
    sim = fixture_simulator
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)].reset_index(drop=True)
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    # Every batter of the side in great form with the runs (a made-up table, one earlier match each).
    day = pd.Timestamp(inn["date"].iloc[0]) - pd.Timedelta(days=1)
    table = pd.DataFrame(
        {
            "role": "batter",
            "player": setup.batting,
            "match_id": "earlier",
            "date": day,
            "n": 20,
            "runs": 40.0,
            "wicket": -2.0,
        }
    )
    hot = PlayerForm(table, balls=20.0, weights=(1.0, 10.0, 0.0, 0.0))
    points = innings_points(sim, setup, inn, [0], None)
    here = replace(sim, form=hot)
    bat, bowl = here.form_offsets(points[0].state)
    assert torch.allclose(
        bat[: len(setup.batting)],
        torch.as_tensor(hot.offsets("batter", setup.batting, day + pd.Timedelta(days=1)), dtype=torch.float32),
    )
    assert (bat[len(setup.batting) :] == 0).all() and (bowl == 0).all()
    ends = {}
    for name, s in (("model", sim), ("in form", here)):
        ends[name] = simulate_points(s, points, inn, inn["date"].iloc[0], 64, torch.Generator().manual_seed(0))
    assert ends["in form"].runs.float().mean() > ends["model"].runs.float().mean() + 10
    assert ends["in form"].wickets.float().mean() < ends["model"].wickets.float().mean()
    assert bat.shape == (len(points[0].state.batter_ids), len(OUTCOMES))
