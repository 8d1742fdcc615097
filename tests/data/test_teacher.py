"""The distillation teacher on real matches: out of fold, cached, and mixed into the training targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cricket_attn.data.teacher import out_of_fold_probabilities, teacher_probabilities
from tests.data.test_datamodule import make

SMALL = dict(learning_rate=0.1, max_iter=5, min_samples_leaf=20, early_stopping=False)


def test_a_matchs_targets_never_see_its_own_outcomes(deliveries):
    d = deliveries[deliveries["season"] <= 2023].reset_index(drop=True)
    before = out_of_fold_probabilities(d, SMALL, folds=3)
    assert np.allclose(before.sum(axis=1), 1, atol=1e-5)
    # Change the last ball of each innings of one match: no feature of that match's own balls uses it
    # (features are pre-ball), so only the teachers fitted on that match can notice.
    match = d["match_id"].iloc[0]
    last = d[d["match_id"] == match].groupby("innings", observed=True).tail(1).index
    changed = d.copy()
    changed.loc[last, "outcome"] = np.where(changed.loc[last, "outcome"] == "wicket", "6", "wicket")
    after = out_of_fold_probabilities(changed, SMALL, folds=3)
    own = (d["match_id"] == match).to_numpy()
    assert np.array_equal(before[own], after[own])  # its own targets: untouched
    assert not np.allclose(before[~own], after[~own])  # the other folds' teachers learned from it


def test_teacher_is_cached_by_deliveries_and_settings(deliveries, tmp_path):
    d = deliveries[deliveries["season"] <= 2023].reset_index(drop=True)
    first = teacher_probabilities(d, SMALL, 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npy"))) == 1 and not list(tmp_path.glob(".*.tmp"))
    assert np.array_equal(teacher_probabilities(d, SMALL, 3, 0, 200.0, tmp_path), first)
    teacher_probabilities(d, dict(SMALL, max_iter=3), 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npy"))) == 2  # other settings: another teacher
    other_venue = d.assign(venue=d["venue"].astype(str).where(d.index > 0, "Somewhere Else"))
    teacher_probabilities(other_venue, SMALL, 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npy"))) == 3  # any column the features read changes the key


def test_training_targets_mix_outcomes_and_teacher(data_config, tmp_path):
    dm = make(data_config, tmp_path, teacher={"weight": 0.4, "folds": 3, "model": SMALL})
    t = dm.datasets["train"].tensors
    soft, mask = t["soft_target"], t["mask"]
    assert (soft[~mask] == 0).all()
    assert torch.allclose(soft[mask].sum(-1), torch.ones(int(mask.sum())), atol=1e-5)
    # The outcome keeps 0.6 plus the teacher's share of it; every other class has only the teacher's.
    onehot = torch.nn.functional.one_hot(t["outcome"][mask], 10).bool()
    assert (soft[mask][onehot] >= 0.6 - 1e-6).all() and (soft[mask][~onehot] <= 0.4 + 1e-6).all()
    assert (soft[mask][~onehot] > 0).any()
    assert "soft_target" not in dm.datasets["validation"].tensors and "soft_target" not in dm.datasets["test"].tensors
    with pytest.raises(ValueError, match="data.teacher.weight=1.5"):
        make(data_config, tmp_path, teacher={"weight": 1.5, "folds": 3, "model": SMALL})


def test_a_teacher_reading_records_reads_no_balls_of_a_matchs_own_or_later(deliveries):
    """With a record book the trees' features of a ball are its players', venue's and competition's records
    over earlier matches: changing a match's outcomes leaves its own balls' and earlier matches' features
    exactly as they were, and the teacher still gives a distribution per ball. (Later matches' records do
    read it, as they would in any later season: the teachers fitted on them see it only through those.)"""
    from cricket_attn.data.features import STATE_COLUMNS
    from cricket_attn.data.records import RecordBook, tabular_features

    d = deliveries[(deliveries["season"] <= 2023) & ~deliveries["is_super_over"]].reset_index(drop=True)
    match = d["match_id"].iloc[len(d) // 2]
    own = (d["match_id"] == match).to_numpy()
    changed = d.copy()
    changed.loc[own, "outcome"] = "wicket"
    records = slice(len(STATE_COLUMNS) + 1, None)  # after the match state (which reads its own innings) and the over
    before = tabular_features(d, RecordBook(d), 2023)[:, records]
    after = tabular_features(changed, RecordBook(changed), 2023)[:, records]
    not_later = (d["date"] <= d.loc[own, "date"].iloc[0]).to_numpy()
    assert np.array_equal(before[not_later], after[not_later])
    assert not np.array_equal(before[~not_later], after[~not_later])
    probs = out_of_fold_probabilities(d, SMALL, folds=3, book=RecordBook(d))
    assert probs.shape == (len(d), 10) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert not np.allclose(probs, out_of_fold_probabilities(d, SMALL, folds=3))  # rates: another teacher
