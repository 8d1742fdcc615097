"""Gradient-boosted trees on the teacher's features: scikit-learn's HistGradientBoosting against LightGBM and
XGBoost, the same rows, the same settings where they have a twin, time, memory and log loss.

Usage: python benchmarks/boosters.py [--data ipl|t20] [--threads 2] [--booster 'NAME [KEY=VALUE ...]' ...]

NAME is sklearn, lightgbm, xgboost (one tree a class a round) or xgboost_multi (one tree of ten outputs a
round, `multi_strategy="multi_output_tree"`); KEY=VALUE pairs change the library's own parameters from the
teacher's twins below (e.g. `--booster 'lightgbm max_bin=63 bagging_fraction=0.5 bagging_freq=1'`).

The rows are those the teacher is fitted on for the selection stage (the training seasons, super overs
left out), their features the trees' (`records.tabular_features`: the match state, the over, the records
as of the day); each booster stops on the same random 10% of them (20 rounds without a gain, as the
teacher does) and is scored on the validation season (2024), never fitted on it. Each fit runs in its
own process, so its peak memory is its own (the features, about 0.4 GB on every league, are part of it).
Prints a table last.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu

BOOSTERS = ("sklearn", "lightgbm", "xgboost", "xgboost_multi")
# The trees' settings of 2026-11-26 (scikit-learn's, the teacher's and the baseline's then) and their nearest
# twin in each library.
LEARNING_RATE, LEAVES, MIN_LEAF, L2, ROUNDS, PATIENCE = 0.05, 31, 200, 1.0, 600, 20


def features(data: str, folder: Path) -> None:
    """The fitting and validation seasons' features and labels, written as .npy files into `folder`."""
    from cricket_attn.config import load_data_config, project_path
    from cricket_attn.data.deliveries import PhaseRules, load_tables
    from cricket_attn.data.records import RecordBook, RecordSettings, tabular_features
    from cricket_attn.data.sources import configured_sources
    from cricket_attn.data.splits import SeasonSplit
    from cricket_attn.metrics import labels_of

    cfg = load_data_config(data)
    tables = load_tables(
        configured_sources(cfg.sources), PhaseRules.from_config(cfg.phases), project_path(cfg.data_dir)
    )
    d = tables.deliveries[~tables.deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    split = SeasonSplit.from_config(cfg.split)
    labels = split.label(d["season"])
    book = RecordBook(tables.deliveries, RecordSettings(**cfg.records))
    fit, val = (d[labels == s].reset_index(drop=True) for s in ("train", "validation"))
    last = int(fit["season"].max())
    for name, part in (("fit", fit), ("val", val)):
        np.save(folder / f"X_{name}.npy", tabular_features(part, book, last))
        np.save(folder / f"y_{name}.npy", labels_of(part))


def peak_rss_gb() -> float:
    """This process's peak resident memory since it started (VmHWM: unlike ru_maxrss, not the parent's
    peak carried over the exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def parsed(value: str):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def fit_one(spec: str, folder: Path, threads: int) -> dict:
    """One booster fitted on the fitting rows, stopping on a random tenth of them; its 2024 log loss."""
    from sklearn.metrics import log_loss

    booster, *changes = spec.split()
    extra = {k: parsed(v) for k, v in (c.split("=", 1) for c in changes)}

    X, y = np.load(folder / "X_fit.npy"), np.load(folder / "y_fit.npy")
    X_val, y_val = np.load(folder / "X_val.npy"), np.load(folder / "y_val.npy")
    rng = np.random.default_rng(0)
    held = rng.random(len(y)) < 0.1
    X_fit, y_fit, X_stop, y_stop = X[~held], y[~held], X[held], y[held]
    n_classes = int(max(y.max(), y_val.max())) + 1
    start = time.perf_counter()
    if booster == "sklearn":
        from sklearn.ensemble import HistGradientBoostingClassifier

        model = HistGradientBoostingClassifier(
            learning_rate=LEARNING_RATE,
            max_iter=ROUNDS,
            max_leaf_nodes=LEAVES,
            min_samples_leaf=MIN_LEAF,
            l2_regularization=L2,
            early_stopping=True,
            n_iter_no_change=PATIENCE,
            random_state=0,
            **extra,
        )
        model.fit(X_fit, y_fit, X_val=X_stop, y_val=y_stop)
        rounds = int(model.n_iter_)
        probs = np.zeros((len(y_val), n_classes))
        probs[:, model.classes_] = model.predict_proba(X_val)
    elif booster == "lightgbm":
        import lightgbm as lgb

        params = {
            "objective": "multiclass",
            "num_class": n_classes,
            "learning_rate": LEARNING_RATE,
            "num_leaves": LEAVES,
            "min_data_in_leaf": MIN_LEAF,
            "lambda_l2": L2,
            "max_bin": 255,
            "num_threads": threads,
            "seed": 0,
            "deterministic": True,
            "force_row_wise": True,
            "verbosity": -1,
            **extra,
        }
        train = lgb.Dataset(X_fit, y_fit, free_raw_data=True)
        stop = lgb.Dataset(X_stop, y_stop, reference=train)
        model = lgb.train(
            params, train, ROUNDS, valid_sets=[stop], callbacks=[lgb.early_stopping(PATIENCE, verbose=False)]
        )
        rounds = int(model.best_iteration)
        probs = model.predict(X_val, num_iteration=rounds)
    else:
        import xgboost as xgb

        params = {
            "objective": "multi:softprob",
            "num_class": n_classes,
            "eta": LEARNING_RATE,
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_leaves": LEAVES,
            "max_depth": 0,
            # A leaf's hessian sum, not its rows: about 200 balls at a softmax's typical p(1 - p).
            "min_child_weight": 20.0,
            "lambda": L2,
            "max_bin": 256,
            "nthread": threads,
            "seed": 0,
            "eval_metric": "mlogloss",
        }
        if booster == "xgboost_multi":
            params["multi_strategy"] = "multi_output_tree"
        params.update(extra)
        train = xgb.QuantileDMatrix(X_fit, y_fit, max_bin=params["max_bin"])
        stop = xgb.QuantileDMatrix(X_stop, y_stop, ref=train)
        model = xgb.train(
            params, train, ROUNDS, evals=[(stop, "stop")], early_stopping_rounds=PATIENCE, verbose_eval=False
        )
        rounds = int(model.best_iteration) + 1
        probs = model.predict(xgb.DMatrix(X_val), iteration_range=(0, rounds))
    seconds = time.perf_counter() - start
    return {
        "booster": spec,
        "seconds": seconds,
        "rounds": rounds,
        "log_loss": float(log_loss(y_val, probs, labels=list(range(n_classes)))),
        "peak_rss_gb": peak_rss_gb(),
        "rows": int(len(y_fit)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="ipl", help="data config in conf/data/ (default ipl)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--booster", action="append", help="'NAME [KEY=VALUE ...]' (repeatable; default: the four)")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # BOOSTER FOLDER: one fit, as JSON
    args = p.parse_args()
    for spec in args.booster or []:
        if spec.split()[0] not in BOOSTERS:
            p.error(f"--booster {spec!r}: the name must be one of {', '.join(BOOSTERS)}")
    if args.child:
        print(json.dumps(fit_one(args.child[0], Path(args.child[1]), args.threads)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        features(args.data, Path(tmp))
        print(f"features: {time.perf_counter() - start:.0f} s", flush=True)
        for booster in args.booster or BOOSTERS:
            env = {"OMP_NUM_THREADS": str(args.threads)}
            cmd = [sys.executable, __file__, "--child", booster, tmp, "--threads", str(args.threads)]
            done = subprocess.run(cmd, capture_output=True, text=True, env={**__import__("os").environ, **env})
            if done.returncode:
                print(f"{booster}: failed: {done.stderr.strip()[-400:]}", flush=True)
                continue
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    print(f"device: {cpu()}; data={args.data}; threads {args.threads}")
    width = max([len(r["booster"]) for r in rows] + [7])
    print(f"{'booster':<{width}} {'rows':>10} {'rounds':>7} {'seconds':>8} {'peak RSS GB':>12} {'2024 log loss':>14}")
    for r in rows:
        print(
            f"{r['booster']:<{width}} {r['rows']:>10,} {r['rounds']:>7} {r['seconds']:>8.1f} {r['peak_rss_gb']:>12.2f} "
            f"{r['log_loss']:>14.5f}"
        )


if __name__ == "__main__":
    main()
