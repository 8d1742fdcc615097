"""The distillation teacher on real matches: out of fold, cached, its folds' mean, and mixed into the targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cricket_attn.data.records import RecordBook, tabular_features
from cricket_attn.data.teacher import cached_teacher, fit_teacher
from tests.data.test_datamodule import make

SMALL = dict(
    learning_rate=0.1, num_iterations=5, min_data_in_leaf=20, num_leaves=7, early_stopping_round=5,
    stopping_fraction=0.1,
)  # fmt: skip


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


def test_each_stage_fits_its_own_balls_teacher_whose_folds_mean_predicts_unseen_balls(data_config, tmp_path):
    """The selection's teacher is fitted on 2008-2023 and the refit's on 2008-2024 (each cached once), so a
    2024 ball's target in the refit is out of fold like every other's; the refit's folds' mean predicts a ball
    none of them has seen (a 2025 ball: the trees baseline), each row a distribution."""
    teacher = {"weight": 0.5, "folds": 3}
    make(data_config, tmp_path, teacher=teacher, trees=SMALL, records={})
    refit = make(data_config, tmp_path, teacher=teacher, trees=SMALL, records={}, refit=True)
    make(data_config, tmp_path, teacher=teacher, trees=SMALL, records={}, refit=True)  # read, not fitted again
    assert len(list((tmp_path / "cache").glob("teacher-*.npz"))) == 2
    d = refit.tables.deliveries
    fit_on = d[d["season"] <= 2024].reset_index(drop=True)  # the rows the refit's sequences point into
    regular = fit_on[~fit_on["is_super_over"]]
    book = refit.encoder.record_book
    fitted = cached_teacher(regular, SMALL, 3, 0, 200.0, tmp_path / "cache", book)
    assert len(list((tmp_path / "cache").glob("teacher-*.npz"))) == 2 and fitted.last_season == 2024
    by_row = torch.zeros(len(fit_on), 10)
    by_row[torch.as_tensor(regular.index.to_numpy())] = torch.as_tensor(fitted.oof)
    t = refit.datasets["train"].tensors
    outcome = torch.nn.functional.one_hot(t["outcome"][t["mask"]], 10)
    expected = 0.5 * outcome + 0.5 * by_row[t["row"][t["mask"]]]
    assert torch.allclose(t["soft_target"][t["mask"]], expected, atol=1e-6)
    d = d[~d["is_super_over"]]
    later = d[d["season"] == 2025]
    probs = fitted.predict_proba(tabular_features(later, book, 2024))
    each = [trees.predict_proba(tabular_features(later, book, 2024)) for trees in fitted.folds]
    assert np.allclose(probs, np.mean(each, axis=0)) and np.allclose(probs.sum(axis=1), 1, atol=1e-6)
    assert not np.allclose(each[0], each[1])  # three fits on other matches each


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
