"""The league's recent level: class offsets learnt from earlier matches only, that find a known shift, and
move the simulator's balls the way they say."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from cricket_attn.commands import predict, simulate, simulate_eval
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.recent import (
    STRENGTH,
    fit_offsets,
    level_by_default,
    match_offsets,
    recent_offsets,
    with_offsets,
)
from cricket_attn.laws import OUTCOMES
from cricket_attn.metrics import PROB_COLUMNS
from cricket_attn.simulation.match import innings_points, simulate_points
from cricket_attn.simulation.setup import InningsSetup


def scored_by_marginal(deliveries: pd.DataFrame, shift: np.ndarray) -> pd.DataFrame:
    """The fixture balls 'predicted' by their own class mix, moved by `shift` in log-probability."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    mix = d["outcome"].value_counts(normalize=True).reindex(OUTCOMES).to_numpy()
    assert not np.isnan(mix).any()  # every class happens in the fixture matches
    p = np.exp(np.log(mix) + shift)
    p = p / p.sum()
    return d[["match_id", "innings", "delivery_index", "outcome"]].assign(
        **{c: p[i] for i, c in enumerate(PROB_COLUMNS)}
    )


def test_offsets_find_a_known_shift_in_real_outcomes(deliveries):
    # Probabilities that underrate sixes and overrate wickets by a known amount: with little pull to zero,
    # the offsets put them back (up to a constant, which the softmax ignores).
    shift = np.zeros(len(OUTCOMES))
    shift[OUTCOMES.index("6")], shift[OUTCOMES.index("wicket")] = -0.5, 0.4
    scored = scored_by_marginal(deliveries, shift)
    b = fit_offsets(scored[list(PROB_COLUMNS)].to_numpy(), scored["outcome"].map(OUTCOMES.index).to_numpy(), 1e-3)
    assert np.allclose(b - b.mean(), -(shift - shift.mean()), atol=1e-3)
    # A strong pull keeps them near zero.
    strong = fit_offsets(scored[list(PROB_COLUMNS)].to_numpy(), scored["outcome"].map(OUTCOMES.index).to_numpy(), 1e7)
    assert np.abs(strong).max() < 1e-2


def test_a_match_sees_only_earlier_matches(deliveries):
    scored = scored_by_marginal(deliveries, np.zeros(len(OUTCOMES)))
    dates = deliveries.groupby("match_id")["date"].first()
    offsets = match_offsets(scored, dates)
    order = dates.loc[scored["match_id"].unique()].sort_values()
    first, last = order.index[0], order.index[-1]
    assert np.array_equal(offsets[first], np.zeros(len(OUTCOMES)))  # nothing before it: the model as it is
    # Rewriting the last match's outcomes changes no earlier match's offsets, nor any match of its own date.
    changed = scored.copy()
    changed.loc[changed["match_id"] == last, "outcome"] = "6"
    again = match_offsets(changed, dates)
    for match in order.index:
        if order[match] < order[last] or match == last:
            assert np.array_equal(offsets[match], again[match]), match
    # Moving a match by its offsets keeps each ball a distribution.
    moved = with_offsets(scored, offsets)
    assert np.allclose(moved[list(PROB_COLUMNS)].sum(axis=1), 1.0)
    assert not np.allclose(moved[list(PROB_COLUMNS)].to_numpy(), scored[list(PROB_COLUMNS)].to_numpy())


def test_the_simulator_takes_the_offsets(fixture_simulator, fixture_tables, deliveries):
    sim = fixture_simulator
    # The model's own predictions for the matches after its training seasons give offsets for each of them.
    levels = recent_offsets(sim.model, sim.encoder, deliveries, strength=50.0)
    later = deliveries.loc[deliveries["season"] > sim.encoder.trained_until, "match_id"].astype(str).unique()
    assert set(levels) == set(later) and any(np.abs(b).max() > 0 for b in levels.values())
    # Offsets that favour wickets end simulated innings sooner, on the same draws.
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)].reset_index(drop=True)
    points = innings_points(sim, InningsSetup.from_table(inn, fixture_tables.matches), inn, [0], None)
    wicket = torch.zeros(len(OUTCOMES))
    wicket[OUTCOMES.index("wicket")] = 2.0
    ends = {}
    for name, here in (("model", sim), ("more wickets", replace(sim, offsets=wicket))):
        ends[name] = simulate_points(
            here,
            points,
            inn,
            inn["date"].iloc[0],
            64,
            torch.Generator().manual_seed(0),
        )
    assert ends["more wickets"].wickets.float().mean() > ends["model"].wickets.float().mean() + 1
    assert ends["more wickets"].legal.float().mean() < ends["model"].legal.float().mean()


@pytest.mark.parametrize("parse_args", [predict.parse_args, simulate.parse_args, simulate_eval.parse_args])
def test_every_command_refuses_a_strength_that_is_negative_not_a_number_or_absurd(parse_args, capsys):
    """Infinity and 1e308 made every probability NaN (written, exit 0) or a traceback after minutes: refused
    by name before any work, as a negative strength is; the spread likewise."""
    required = ["--model", "m.ckpt"] + (
        ["--out", "o.parquet", "match.json"] if parse_args is not simulate_eval.parse_args else []
    )
    assert parse_args([*required, "--recent-level", "0"]).recent_level == 0.0
    assert parse_args([*required, "--recent-level", "1e6"]).recent_level == 1e6
    for bad in ("-1", "nan", "inf", "1e308", "x"):
        with pytest.raises(SystemExit):
            parse_args([*required, "--recent-level", bad])
        err = capsys.readouterr().err
        assert f"--recent-level: {bad}: must be " in err.strip().splitlines()[-1]  # argparse's usage, then why
    if parse_args is predict.parse_args:
        return
    assert parse_args([*required, "--spread", "1"]).spread == 1.0
    for bad in ("-0.1", "inf", "1.5"):
        with pytest.raises(SystemExit):
            parse_args([*required, "--spread", bad])
        assert f"--spread: {bad}: must be 0 (off) or a positive number up to 1" in capsys.readouterr().err


def test_the_simulators_learn_the_recent_level_unless_the_model_reads_records(deliveries):
    """simulate and simulate-eval: by default a model of training-season rates is moved by the league's
    recent level and a model reading records as of the day (whose inputs hold that level) is not."""
    assert simulate.parse_args(["--model", "m.ckpt", "--out", "o.parquet", "x.json"]).recent_level is None
    assert simulate_eval.parse_args(["--model", "m.ckpt"]).recent_level is None
    assert predict.parse_args(["--model", "m.ckpt", "--out", "o.parquet", "x.json"]).recent_level == 0.0
    assert level_by_default(SequenceEncoder.fit(deliveries, min_count=5)) == STRENGTH == 200
    assert level_by_default(SequenceEncoder.fit_encode(deliveries, min_count=None, records={})[0]) == 0.0


def test_each_competition_learns_its_level_from_its_own_matches(deliveries):
    """Two competitions' matches since training: rewriting one's outcomes moves none of the other's offsets,
    and within one competition the offsets are those it would get alone."""
    scored = scored_by_marginal(deliveries, np.zeros(len(OUTCOMES)))
    dates = deliveries.groupby("match_id")["date"].first()
    matches = list(dates.sort_values().index)
    other = set(matches[1::2])  # every other match, by date, is of a second competition
    scored["competition"] = np.where(scored["match_id"].isin(other), "Big Bash League", "Indian Premier League")
    offsets = match_offsets(scored, dates)
    ipl = scored[scored["competition"] == "Indian Premier League"]
    alone = match_offsets(ipl.drop(columns="competition"), dates)
    assert all(np.array_equal(offsets[m], alone[m]) for m in alone)
    changed = scored.copy()
    changed.loc[changed["competition"] == "Big Bash League", "outcome"] = "6"
    again = match_offsets(changed, dates)
    assert all(np.array_equal(offsets[m], again[m]) for m in alone)
    assert any(not np.array_equal(offsets[m], again[m]) for m in other)
