"""The distillation teacher on real matches: out of fold, cached, shared by the refit, and mixed into the targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cricket_attn.data.records import RecordBook, tabular_features
from cricket_attn.data.teacher import cached_teacher, fit_teacher
from cricket_attn.metrics import labels_of
from tests.data.test_datamodule import make

SMALL = dict(learning_rate=0.1, num_iterations=5, min_data_in_leaf=20, num_leaves=7, early_stopping_round=5)


def test_a_matchs_targets_never_see_its_own_outcomes(deliveries):
    d = deliveries[deliveries["season"] <= 2023].reset_index(drop=True)
    before = fit_teacher(d, SMALL, folds=3).oof
    assert np.allclose(before.sum(axis=1), 1, atol=1e-5)
    # Change the last ball of each innings of one match: no feature of that match's own balls uses it
    # (features are pre-ball), so only the teachers fitted on that match can notice.
    match = d["match_id"].iloc[0]
    last = d[d["match_id"] == match].groupby("innings", observed=True).tail(1).index
    changed = d.copy()
    changed.loc[last, "outcome"] = np.where(changed.loc[last, "outcome"] == "wicket", "6", "wicket")
    after = fit_teacher(changed, SMALL, folds=3).oof
    own = (d["match_id"] == match).to_numpy()
    assert np.array_equal(before[own], after[own])  # its own targets: untouched
    assert not np.allclose(before[~own], after[~own])  # the other folds' teachers learned from it


def test_teacher_is_cached_by_deliveries_and_settings(deliveries, tmp_path):
    d = deliveries[deliveries["season"] <= 2023].reset_index(drop=True)
    first = cached_teacher(d, SMALL, 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npz"))) == 1 and not list(tmp_path.glob(".*.tmp"))
    again = cached_teacher(d, SMALL, 3, 0, 200.0, tmp_path)
    assert np.array_equal(again.oof, first.oof) and [t.model for t in again.folds] == [t.model for t in first.folds]
    cached_teacher(d, dict(SMALL, num_iterations=3), 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npz"))) == 2  # other settings: another teacher
    other_venue = d.assign(venue=d["venue"].astype(str).where(d.index > 0, "Somewhere Else"))
    cached_teacher(other_venue, SMALL, 3, 0, 200.0, tmp_path)
    assert len(list(tmp_path.glob("teacher-*.npz"))) == 3  # any column the features read changes the key


def test_training_targets_mix_outcomes_and_teacher(data_config, tmp_path):
    dm = make(data_config, tmp_path, teacher={"weight": 0.4, "folds": 3}, trees=SMALL)
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
        make(data_config, tmp_path, teacher={"weight": 1.5, "folds": 3}, trees=SMALL)


def soft_by_row(dm) -> dict[int, torch.Tensor]:
    """Each training ball's soft target, by its row in the table the DataModule was fitted on."""
    t = dm.datasets["train"].tensors
    return dict(zip(t["row"][t["mask"]].tolist(), t["soft_target"][t["mask"]]))


def test_the_refit_keeps_the_selections_teacher_and_gives_the_new_season_its_folds_mean(data_config, tmp_path):
    """One set of folds serves both stages: the refit reads the selection's teacher from the cache (no new fit),
    its training-season balls keep their targets, and each validation-season (2024) ball gets the mean of the
    folds' trees, fitted on 2008-2023 alone, so none has seen a 2024 ball."""
    teacher = {"weight": 0.5, "folds": 3}
    selection = make(data_config, tmp_path, teacher=teacher, trees=SMALL, records={})
    cache = sorted((tmp_path / "cache").glob("teacher-*.npz"))
    refit = make(data_config, tmp_path, teacher=teacher, trees=SMALL, records={}, refit=True)
    assert sorted((tmp_path / "cache").glob("teacher-*.npz")) == cache and len(cache) == 1
    before, after = soft_by_row(selection), soft_by_row(refit)
    # The refit's table is the selection's rows (the training seasons) followed by 2024's: the same row numbers.
    assert all(torch.equal(before[row], after[row]) for row in before)
    d = refit.tables.deliveries
    fit_on = d[d["season"] <= 2024].reset_index(drop=True)
    new = fit_on[(fit_on["season"] == 2024) & ~fit_on["is_super_over"]]
    folds = fit_teacher(
        selection.tables.deliveries.query("season <= 2023 and not is_super_over").reset_index(drop=True),
        SMALL,
        folds=3,
        book=selection.encoder.record_book,
    ).folds
    X = tabular_features(new, RecordBook(d[~d["is_super_over"]]), 2023)
    mean = np.mean([trees.predict_proba(X) for trees in folds], axis=0)
    outcome = torch.nn.functional.one_hot(torch.as_tensor(labels_of(new)), 10)
    expected = 0.5 * outcome + 0.5 * torch.as_tensor(mean, dtype=torch.float32)
    got = torch.stack([after[row] for row in new.index])
    assert len(new) > 500 and torch.allclose(got, expected, atol=1e-5)


def test_a_teacher_reading_records_reads_no_balls_of_a_matchs_own_or_later(deliveries):
    """With a record book the trees' features of a ball are its players', venue's and competition's records
    over earlier matches: changing a match's outcomes leaves its own balls' and earlier matches' features
    exactly as they were, and the teacher still gives a distribution per ball. (Later matches' records do
    read it, as they would in any later season: the teachers fitted on them see it only through those.)"""
    from cricket_attn.data.features import STATE_COLUMNS

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
    probs = fit_teacher(d, SMALL, folds=3, book=RecordBook(d)).oof
    assert probs.shape == (len(d), 10) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert not np.allclose(probs, fit_teacher(d, SMALL, folds=3).oof)  # rates: another teacher
