"""Soft training targets from a gradient-boosted teacher (knowledge distillation).

The tabular baseline (HistGradientBoosting on the handcrafted features of cricket_attn.training.baselines)
ranks the rare outcomes (wickets, wides, twos, byes) differently from the transformer, and a mean of
the two beats both. Rather than ship two models, the transformer learns from the teacher: its
training target for ball t is (1 - weight) * the outcome of ball t + weight * the teacher's
probabilities for ball t. Only the transformer is used to predict.

The teacher's probabilities for a ball come from a model fitted on the other folds' matches of the
same fitting seasons (folds by match), so no target contains its own outcome, and nothing outside
the fitting seasons is used: the validation and test seasons are never seen. The teacher's iteration
count is chosen by its own early stopping on a random share of its fitting rows. Fitting the folds
takes minutes, so the probabilities are cached under data/cache, keyed by the deliveries and settings.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.atomic import atomic_path
from cricket_attn.data.features import TabularFeatures, match_folds
from cricket_attn.data.records import RecordBook, tabular_features
from cricket_attn.data.splits import season_range
from cricket_attn.laws import N_OUTCOMES
from cricket_attn.metrics import labels_of
from cricket_attn.progress import Stopwatch

log = logging.getLogger(__name__)

# Part of the cache key: raise it when the baselines' features change, so no stale teacher is read.
TEACHER_FEATURES_VERSION = 2  # 2: a bowler's wickets by the Laws (laws.bowler_wickets)


def out_of_fold_probabilities(
    d: pd.DataFrame,
    settings: Mapping,
    folds: int = 5,
    seed: int = 0,
    rate_strength: float = 200.0,
    book: RecordBook | None = None,
) -> np.ndarray:
    """(len(d), N_OUTCOMES): for each delivery, the teacher's probabilities from the folds without its match.
    With a record book the trees read records as of each ball's date (`tabular_features`), the same
    whichever fold a ball falls in, instead of rates fitted on the other folds."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    if folds < 2:
        raise ValueError(f"data.teacher.folds={folds}: out-of-fold targets need at least 2 folds")
    n_matches = d["match_id"].nunique()
    if n_matches < folds:
        raise ValueError(f"data.teacher.folds={folds}: only {n_matches} matches to fold")
    fold = match_folds(d, folds, seed)
    probs = np.zeros((len(d), N_OUTCOMES), dtype=np.float32)
    log.info(
        "teacher: %d folds of gradient-boosted trees on %s deliveries of seasons %s (cached after)",
        folds,
        f"{len(d):,}",
        season_range(d),
    )
    as_of = None if book is None else tabular_features(d, book, int(d["season"].max()))
    for k in range(folds):
        clock = Stopwatch()
        fit, held = d[fold != k], d[fold == k]
        if as_of is None:
            features, X = TabularFeatures.fit_transform(fit, rate_strength)
            X_held = features.transform(held)
        else:
            X, X_held = as_of[fold != k], as_of[fold == k]
        model = HistGradientBoostingClassifier(**{"random_state": seed, **settings}).fit(X, labels_of(fit))
        p = np.zeros((len(held), N_OUTCOMES))
        p[:, model.classes_] = model.predict_proba(X_held)  # a class absent from a fold gets 0
        probs[fold == k] = p
        log.info("teacher fold %d/%d: %d iterations, %s", k + 1, folds, model.n_iter_, clock)
    return probs


def teacher_probabilities(
    d: pd.DataFrame,
    settings: Mapping,
    folds: int,
    seed: int,
    rate_strength: float,
    cache_dir: str | Path,
    book: RecordBook | None = None,
) -> np.ndarray:
    """`out_of_fold_probabilities`, cached: the same deliveries (all their columns) with the same
    settings are fitted once (the refit stage's ensemble members share theirs). A record book's
    settings are part of the key; its records of a ball hold only earlier matches, which `d` decides
    for the matches it spans."""
    key = hashlib.sha256(pd.util.hash_pandas_object(d, index=False).to_numpy().tobytes())  # every column
    key.update(
        json.dumps(
            {
                "settings": dict(settings),
                "folds": folds,
                "seed": seed,
                "rate_strength": rate_strength,
                "features": TEACHER_FEATURES_VERSION,
                **({} if book is None else {"records": book.settings.to_dict()}),
            },
            sort_keys=True,
        ).encode()
    )
    path = Path(cache_dir) / f"teacher-{key.hexdigest()[:16]}.npy"
    if path.exists():
        log.info("teacher: read from the cache, %s", path)
        return np.load(path)
    probs = out_of_fold_probabilities(d, settings, folds, seed, rate_strength, book)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, probs)
    return probs
