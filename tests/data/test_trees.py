"""The gradient-boosted trees (cricket_attn/data/trees.py): ten classes' probabilities, the same fit from the
same rows, and a cache keyed by the rows and the settings, so no stale fit is ever read."""

from __future__ import annotations

import numpy as np
import pytest

from cricket_attn.data import trees as trees_module
from cricket_attn.data.trees import cached_trees, fit_trees, rows_key, settings_key
from cricket_attn.laws import N_OUTCOMES

SETTINGS = dict(
    learning_rate=0.2, num_iterations=40, num_leaves=7, min_data_in_leaf=20, early_stopping_round=5,
    stopping_fraction=0.2,
)  # fmt: skip


@pytest.fixture(scope="module")
def rows(deliveries):
    """The fixture matches' balls: the over, the wickets down and the runs so far, and their outcomes."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    innings = d.groupby(["match_id", "innings"], observed=True)
    runs = innings["runs_total"].cumsum() - d["runs_total"]
    down = innings["is_wicket"].cumsum() - d["is_wicket"]
    X = np.c_[d["over"], down, runs].astype(np.float32)
    return X, d["outcome"].cat.codes.to_numpy()


def test_the_fit_gives_ten_probabilities_a_ball_and_the_same_fit_again(rows):
    X, y = rows
    a = fit_trees(X, y, SETTINGS, seed=0)
    p = a.predict_proba(X[:50])
    assert p.shape == (50, N_OUTCOMES) and np.allclose(p.sum(1), 1)
    assert fit_trees(X, y, SETTINGS, seed=0).model == a.model  # deterministic on one machine
    with pytest.raises(ValueError, match="data.trees: stopping_fraction not set"):  # conf's, no second default
        fit_trees(X, y, {k: v for k, v in SETTINGS.items() if k != "stopping_fraction"})
    # better than the classes' frequencies on the rows it saw (it learnt something)
    freq = np.bincount(y, minlength=N_OUTCOMES) / len(y)
    fitted = -np.log(a.predict_proba(X)[np.arange(len(y)), y]).mean()
    assert fitted < -np.log(freq[y]).mean()


def test_the_cache_is_read_for_the_same_rows_and_settings_and_missed_otherwise(rows, tmp_path, monkeypatch):
    X, y = rows
    first = cached_trees(X, y, SETTINGS, 0, tmp_path)
    assert len(list(tmp_path.glob("trees-*.txt"))) == 1

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted again where the cache holds the fit")

    monkeypatch.setattr(trees_module, "fit_trees", no_fit)
    assert cached_trees(X, y, SETTINGS, 0, tmp_path).model == first.model
    for other in ((X, y, {**SETTINGS, "num_leaves": 8}, 0), (X, y, SETTINGS, 1), (X[1:], y[1:], SETTINGS, 0)):
        with pytest.raises(AssertionError, match="fitted again"):
            cached_trees(*other, tmp_path)


def test_the_key_sees_every_value_the_dtype_and_the_shape():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    base = rows_key(a).hexdigest()
    b = a.copy()
    b[3, 2] += 1
    assert rows_key(b).hexdigest() != base
    assert rows_key(a.astype(np.float64)).hexdigest() != base
    assert rows_key(a.reshape(3, 4)).hexdigest() != base
    assert rows_key(np.asfortranarray(a)).hexdigest() == base  # the same values, laid out otherwise
    assert settings_key(rows_key(a), s=1) != settings_key(rows_key(a), s=2)
