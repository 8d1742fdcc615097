"""Soft training targets from gradient-boosted trees (knowledge distillation).

The tabular baseline (LightGBM's trees on the handcrafted features, cricket_attn.data.trees) ranks the rare
outcomes (wickets, wides, twos, byes) differently from the transformer, and a mean of the two beats both.
Rather than ship two models, the transformer learns from the teacher: its training target for ball t is
(1 - weight) * the outcome of ball t + weight * the teacher's probabilities for ball t. Only the
transformer is used to predict.

The teacher's probabilities for a ball come from trees fitted on the other folds' matches of the same
fitting seasons (folds by match), so no target contains its own outcome, and nothing outside the fitting
seasons is used: the selection's teacher never sees the validation season, and no teacher the test's. The
refit's teacher, fitted through the validation season, is also the trees baseline of
cricket-attn-baselines: its folds' mean predicts the test seasons, which none of them has seen (a teacher
of the earlier seasons alone for the refit, one set of folds for both stages, cost the IPL test 0.0009 a
ball: docs/log/2026-11-27.md). Fitting the folds takes minutes, so the teacher is cached under data/cache,
keyed by the deliveries and settings.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.atomic import atomic_path
from cricket_attn.data.features import RATE_STRENGTH, TabularFeatures, match_folds
from cricket_attn.data.records import RecordBook, tabular_features
from cricket_attn.data.splits import season_range
from cricket_attn.data.trees import Trees, fit_trees, settings_key
from cricket_attn.laws import N_OUTCOMES
from cricket_attn.metrics import labels_of
from cricket_attn.progress import Stopwatch

log = logging.getLogger(__name__)


@dataclass
class Teacher:
    """Trees fitted in folds by match on a table of training balls: each ball's probabilities from the folds
    without its match (`oof`), and the folds' trees, whose mean predicts balls none of them was fitted on.
    `last_season` caps the season its features read (`tabular_features`), as for the balls it was fitted on."""

    oof: np.ndarray  # (balls, N_OUTCOMES)
    folds: list[Trees]
    last_season: int
    reads_records: bool = True  # False: rates fitted on each fold's other folds, which only `oof` kept

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(len(X), N_OUTCOMES): the folds' mean for balls none of them was fitted on (features `X` made as its
        own were: `tabular_features` with `last_season`)."""
        if not self.reads_records:
            raise ValueError("a teacher on fitted rates predicts only the balls it was fitted on")
        return np.mean([trees.predict_proba(X) for trees in self.folds], axis=0)


def fit_teacher(
    d: pd.DataFrame,
    settings: Mapping,
    folds: int,
    seed: int = 0,
    rate_strength: float = RATE_STRENGTH,
    book: RecordBook | None = None,
) -> Teacher:
    """The folds' trees and each delivery's probabilities from the folds without its match. With a record
    book the trees read records as of each ball's date (`tabular_features`), the same whichever fold a ball
    falls in, instead of rates fitted on the other folds."""
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
    last = int(d["season"].max())
    as_of = None if book is None else tabular_features(d, book, last)
    y = labels_of(d)
    fitted = []
    for k in range(folds):
        clock = Stopwatch()
        fit, held = d[fold != k], d[fold == k]
        if as_of is None:
            features, X = TabularFeatures.fit_transform(fit, rate_strength)
            X_held = features.transform(held)
        else:
            X, X_held = as_of[fold != k], as_of[fold == k]
        trees = fit_trees(X, y[fold != k], settings, seed)
        probs[fold == k] = trees.predict_proba(X_held)
        fitted.append(trees)
        log.info("teacher fold %d/%d: %s", k + 1, folds, clock)
    return Teacher(probs, fitted, last, reads_records=book is not None)


def cached_teacher(
    d: pd.DataFrame,
    settings: Mapping,
    folds: int,
    seed: int,
    rate_strength: float,
    cache_dir: str | Path,
    book: RecordBook | None = None,
) -> Teacher:
    """`fit_teacher`, cached: the same deliveries (all their columns) with the same settings are fitted once
    (the refit stage, its ensemble members and a fine-tune on one league share the selection's). A record
    book's settings are part of the key; its records of a ball hold only earlier matches, which `d` decides
    for the matches it spans."""
    import hashlib

    key = hashlib.sha256(pd.util.hash_pandas_object(d, index=False).to_numpy().tobytes())  # every column
    name = settings_key(
        key,
        settings=dict(settings),
        folds=folds,
        seed=seed,
        rate_strength=rate_strength,
        **({} if book is None else {"records": book.settings.to_dict()}),
    )
    path = Path(cache_dir) / f"teacher-{name}.npz"
    if path.exists():
        log.info("teacher: read from the cache, %s", path)
        with np.load(path) as stored:
            texts = [stored[f"fold{k}"].tobytes().decode() for k in range(int(stored["folds"]))]
            last, records = int(stored["last_season"]), bool(stored["records"])
            return Teacher(stored["oof"], [Trees(t) for t in texts], last, records)
    teacher = fit_teacher(d, settings, folds, seed, rate_strength, book)
    texts = {f"fold{k}": np.frombuffer(t.model.encode(), dtype=np.uint8) for k, t in enumerate(teacher.folds)}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(
                f,
                oof=teacher.oof,
                folds=len(teacher.folds),
                last_season=teacher.last_season,
                records=teacher.reads_records,
                **texts,
            )
    return teacher
