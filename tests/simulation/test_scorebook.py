"""The scorebook turns outcome classes into deliveries as the training seasons recorded them."""

from __future__ import annotations

import torch

from cricket_attn.laws import OUTCOME_INDEX, OUTCOMES
from cricket_attn.simulation.scorebook import ENTRY_FIELDS, Scorebook


def test_entries_are_real_deliveries_of_their_class_in_their_proportions(deliveries):
    book = Scorebook.fit(deliveries)
    assert torch.allclose(book.probability.sum(1), torch.ones(len(OUTCOMES), dtype=torch.float64))
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    wides = regular[regular["outcome"] == "wide"]
    five = (wides["runs_wides"] == 5).mean()  # a wide that ran to the boundary
    col = {f: i for i, f in enumerate(ENTRY_FIELDS)}
    entry = book.entries
    share = book.probability[OUTCOME_INDEX["wide"]]
    assert abs(share[entry[:, col["runs_wides"]] == 5].sum().item() - five) < 1e-12
    # Each class's entries say what the class means.
    of = lambda name: entry[book.probability[OUTCOME_INDEX[name]] > 0]
    assert (of("wide")[:, col["legal"]] == 0).all() and (of("wide")[:, col["runs_wides"]] >= 1).all()
    assert (of("noball")[:, col["legal"]] == 0).all() and (of("noball")[:, col["runs_noballs"]] >= 1).all()
    assert (of("4")[:, col["runs_batter"]] == 4).all() and (of("6")[:, col["runs_batter"]] == 6).all()
    assert (of("wicket")[:, col["wickets"]] >= 1).all()
    assert (of("bye")[:, col["runs_other"]] >= 1).all() and (of("bye")[:, col["runs_batter"]] == 0).all()
    assert set(of("3")[:, col["runs_batter"]].tolist()) <= {3, 5, 7}


def test_sampling_keeps_the_class_and_follows_the_shares(deliveries):
    book = Scorebook.fit(deliveries)
    g = torch.Generator().manual_seed(0)
    outcome = torch.full((40_000,), OUTCOME_INDEX["bye"])
    ball = book.sample(outcome, g)
    assert torch.equal(ball.outcome, outcome)
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    byes = regular[regular["outcome"] == "bye"]
    real_four = ((byes["runs_byes"] + byes["runs_legbyes"]) == 4).mean()
    assert abs((ball.runs_other == 4).double().mean().item() - real_four) < 0.01


def test_each_class_is_worth_its_mean_runs_in_the_training_seasons(deliveries):
    book = Scorebook.fit(deliveries)
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    real = regular.groupby("outcome", observed=True)["runs_total"].mean()
    assert torch.allclose(book.runs, torch.tensor([real[c] for c in OUTCOMES], dtype=torch.float64))
    assert book.runs[OUTCOME_INDEX["6"]] == 6 and book.runs[OUTCOME_INDEX["dot"]] == 0
    # What it samples is worth that too: each class's entries, weighted by their shares.
    col = [ENTRY_FIELDS.index(f) for f in ("runs_batter", "runs_wides", "runs_noballs", "runs_other")]
    sampled = book.probability @ book.entries[:, col].sum(1).to(torch.float64)
    assert torch.allclose(sampled, book.runs)
