"""The distillation teacher's trees under other settings: how good each teacher is before any transformer learns
from it, for a few seconds a fit instead of a training run.

The teacher as a training run fits it (`cricket_attn.data.teacher.fit_teacher`): the seasons to `--fit-until` in
`--folds` folds by match, the trees reading records as of each ball's day. Each setting prints the folds'
out-of-fold log loss on the balls they were fitted on (what the transformer's targets are made of) and their
mean's log loss on the `--season` balls after them (a validation season), and the seconds the folds took.

    python docs/analyses/teacher_trees.py --set today= --set small=num_leaves=15,feature_fraction=0.7
    python docs/analyses/teacher_trees.py --data t20 --set today= --set slow=learning_rate=0.05

Each `--set NAME=KEY=VALUE,...` is the data config's `trees` with those LightGBM settings changed or added
(`NAME=` alone: as configured).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from cricket_attn.config import load_data_config
from cricket_attn.data.deliveries import config_tables
from cricket_attn.data.records import RecordBook, RecordSettings, tabular_features
from cricket_attn.data.teacher import fit_teacher
from cricket_attn.metrics import labels_of, markdown_table


def setting(text: str) -> tuple[str, dict]:
    """`small=num_leaves=15,feature_fraction=0.7` -> ("small", {"num_leaves": 15, "feature_fraction": 0.7})."""
    name, _, rest = text.partition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"{text}: give NAME=KEY=VALUE,... (NAME= alone: the config's trees)")
    changes = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if not value:
            raise argparse.ArgumentTypeError(f"{item}: give KEY=VALUE")
        changes[key] = int(value) if value.lstrip("-").isdigit() else float(value)
    return name, changes


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None)).mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=setting, action="append", required=True, help="NAME=KEY=VALUE,... (repeatable)")
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--fit-until", type=int, default=2023, help="the teacher's last season (default %(default)s)")
    p.add_argument("--season", type=int, default=2024, help="the season scored after it (default %(default)s)")
    p.add_argument("--folds", type=int, help="default: the data config's teacher.folds")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    cfg = load_data_config(args.data)
    d = config_tables(args.data, args.sources).deliveries
    d = d[~d["is_super_over"].astype(bool)]  # as the sequences and the teacher leave them out
    fit = d[d["season"] <= args.fit_until].reset_index(drop=True)
    later = d[d["season"] == args.season].reset_index(drop=True)
    if fit.empty or later.empty:
        raise SystemExit(f"no balls to fit (to {args.fit_until}) or to score ({args.season}) in --data {args.data}")
    book = RecordBook(d, RecordSettings(**cfg.records))
    X_later, y_fit, y_later = tabular_features(later, book, args.fit_until), labels_of(fit), labels_of(later)
    folds = args.folds or int(cfg.teacher.folds)
    rows = []
    for name, changes in args.set:
        start = time.perf_counter()
        teacher = fit_teacher(fit, {**cfg.trees, **changes}, folds, args.seed, float(cfg.rate_strength), book)
        rows.append(
            {
                "setting": name,
                "changes": ", ".join(f"{k}={v}" for k, v in changes.items()) or "(as configured)",
                "out_of_fold": log_loss(teacher.oof, y_fit),
                str(args.season): log_loss(teacher.predict_proba(X_later), y_later),
                "seconds": int(round(time.perf_counter() - start)),
            }
        )
    print(
        f"The teacher fitted to {args.fit_until} in {folds} folds ({len(fit):,} balls); "
        f"{args.season}: {len(later):,} balls"
    )
    print(markdown_table(pd.DataFrame(rows), 5))


if __name__ == "__main__":
    main()
