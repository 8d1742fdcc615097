"""Gradient-boosted trees on the tabular features: the distillation teacher's learner and the trees baseline's.

LightGBM's multiclass boosting (`data.trees` in conf/data/ipl.yaml, LightGBM's own parameter names). A fit
stops on a random share of its own rows (`stopping_fraction`), after `early_stopping_round` rounds without a
gain, so it needs no season of its own to choose its size. Fits take minutes on every league, so each is
cached under data/cache, keyed by its rows and settings: the teacher's folds serve every stage of a run and
every run on the same seasons, the baseline's fit every later `cricket-attn-baselines` on the same data.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cricket_attn.atomic import atomic_path
from cricket_attn.laws import N_OUTCOMES

log = logging.getLogger(__name__)

# Part of every cache key: raise it when what a fit is made of changes (the library, the features), so no
# stale fit is read.
TREES_VERSION = 3  # 3: LightGBM (2: scikit-learn's HistGradientBoosting, a bowler's wickets by the Laws)
OURS = ("stopping_fraction",)  # settings of ours, not LightGBM's


@dataclass
class Trees:
    """A fitted booster: LightGBM's model as text (plain types, so it caches as a file), ten classes."""

    model: str

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(len(X), N_OUTCOMES) float64, each row summing to 1."""
        import lightgbm

        booster = lightgbm.Booster(model_str=self.model)
        return booster.predict(np.asarray(X, dtype=np.float32)).reshape(len(X), N_OUTCOMES)


def fit_trees(X: np.ndarray, y: np.ndarray, settings: Mapping, seed: int = 0) -> Trees:
    """Multiclass trees on features `X` and outcome classes `y`, stopping on a random `stopping_fraction` of
    the rows (drawn from `seed`)."""
    import lightgbm

    missing = [k for k in ("num_iterations", "early_stopping_round", "stopping_fraction") if k not in settings]
    if missing:  # conf/data/*.yaml's `trees` sets every one: no second default here
        raise ValueError(f"data.trees: {', '.join(missing)} not set")
    params = {k: v for k, v in settings.items() if k not in OURS}
    rounds, patience = params.pop("num_iterations"), params.pop("early_stopping_round")
    held = np.random.default_rng(seed).random(len(y)) < float(settings["stopping_fraction"])
    params = {
        "objective": "multiclass",
        "num_class": N_OUTCOMES,
        "seed": seed,
        "deterministic": True,  # the same fit from the same rows on the same machine, run after run
        "force_row_wise": True,
        "verbosity": -1,
        **params,
    }
    fit = lightgbm.Dataset(X[~held], y[~held], free_raw_data=True)
    stop = lightgbm.Dataset(X[held], y[held], reference=fit)
    stopping = [lightgbm.early_stopping(patience, verbose=False)]
    booster = lightgbm.train(params, fit, num_boost_round=rounds, valid_sets=[stop], callbacks=stopping)
    return Trees(booster.model_to_string(num_iteration=booster.best_iteration))


def rows_key(*arrays: np.ndarray) -> hashlib._Hash:
    """A digest of arrays' bytes and shapes: the rows a fit is made from."""
    key = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        key.update(f"{a.dtype}{a.shape}".encode())
        key.update(memoryview(a).cast("B"))
    return key


def settings_key(key: hashlib._Hash, **settings) -> str:
    key.update(json.dumps({**settings, "version": TREES_VERSION}, sort_keys=True, default=str).encode())
    return key.hexdigest()[:16]


def cached_trees(X: np.ndarray, y: np.ndarray, settings: Mapping, seed: int, cache_dir: str | Path) -> Trees:
    """`fit_trees`, read from `cache_dir` when the same rows were fitted with the same settings before."""
    path = Path(cache_dir) / f"trees-{settings_key(rows_key(X, y), settings=dict(settings), seed=seed)}.txt"
    if path.exists():
        log.info("trees: read from the cache, %s", path)
        return Trees(path.read_text())
    trees = fit_trees(X, y, settings, seed)
    with atomic_path(path) as tmp:
        tmp.write_text(trees.model)
    return trees
