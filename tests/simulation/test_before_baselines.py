"""The yardsticks of the win probability before the first ball (`cricket_attn.simulation.before_baselines`): an
Elo rating by hand, the sides' records read as of the day, the fit on the training seasons alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.data.records import RecordBook
from cricket_attn.simulation.before_baselines import FEATURES, BeforeBaselines, elo_gaps, record_features
from cricket_attn.simulation.before_eval import before_matches


@pytest.fixture(scope="module")
def ipl_games(ipl_tables):
    games, left = before_matches(ipl_tables.matches)
    return games, left


def test_elo_by_hand():
    games = pd.DataFrame(
        {"first": ["B", "A", "A"], "chasing": ["A", "B", "B"], "season": [2020, 2020, 2021], "won": [1.0, 0.0, 1.0]}
    )
    gaps = elo_gaps(games, k=16, carry=0.5)
    # A chases and wins from level: A 1508, B 1492. B chases and loses: expected 1/(1+10^(16/400)) for B.
    loss = 16 * (1 / (1 + 10 ** (16 / 400)))
    a, b = 1508 + loss, 1492 - loss
    # A new season: each keeps half its distance from 1500.
    assert gaps == pytest.approx([0.0, -16.0, (1500 + (b - 1500) / 2) - (1500 + (a - 1500) / 2)])


def test_the_sides_records_are_read_as_of_the_day(ipl_tables, ipl_games):
    """A book of every match and a book of the matches before the day give the same features: nothing of the
    day or after it is read."""
    games, _ = ipl_games
    d = ipl_tables.deliveries
    d = d[d["season"] >= 2023]  # two seasons of records before the day are enough to tell the books apart
    some = games[games["season"] == 2025].head(3)
    before = d[d["date"] < some["date"].min()]
    full = record_features(RecordBook(d), ipl_tables.matches, some)
    assert np.allclose(full, record_features(RecordBook(before), ipl_tables.matches, some))
    assert full.shape == (3, len(FEATURES) + 1) and np.isfinite(full).all()
    assert (full[:, :-1] != 0).all()  # sides of established players have records
    assert (full[:, -1] == some["chasing_won_toss"]).all()


def test_the_baselines_fit_the_training_seasons_and_read_only_earlier_games(ipl_tables, ipl_games):
    games, _ = ipl_games
    book = RecordBook(ipl_tables.deliveries)
    baselines = BeforeBaselines(book, ipl_tables.matches, games, train_until=2022)
    scored = (games["season"] == 2023).to_numpy()
    p = baselines.probabilities(games, scored)
    assert {k: len(v) for k, v in p.items()} == {"logistic": scored.sum(), "elo": scored.sum()}
    assert all(((v > 0.2) & (v < 0.8)).all() for v in p.values())  # two T20 sides: no walkover
    upto = games[games["season"] <= 2023]  # the games after 2023 change nothing of 2023's chances
    again = baselines.probabilities(upto, scored[: len(upto)])
    assert np.allclose(again["elo"], p["elo"]) and np.allclose(again["logistic"], p["logistic"])
