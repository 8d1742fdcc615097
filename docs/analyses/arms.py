"""Two or more settings ("arms"), each trained at several seeds, paired by match on one split: the record's
way of choosing a setting on the validation season (docs/log/README.md).

Each arm is a list of checkpoints (a run's `checkpoints/calibrated.ckpt` with refit=false: the selection
stage's model with its calibration). Every checkpoint scores the split's balls; an arm's log loss on a ball is
the mean of its seeds' (each seed's model alone, not their ensemble). The first arm is the reference: every
other is paired with it on the same balls, by match, with a 95% interval from resampling whole matches
(difference = arm - reference: below zero, the arm is better).

    python docs/analyses/arms.py --split validation \
        --arm today=outputs/a0/checkpoints/calibrated.ckpt,outputs/a1/...,outputs/a2/... \
        --arm no_attention_dropout=outputs/b0/...,...
    python docs/analyses/arms.py --season 2024 --arm ...   # a season back's test: refits through 2023

Prints each arm's seeds' log losses, their mean and sd, and the paired table (markdown).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from cricket_attn.config import load_data_config
from cricket_attn.data.deliveries import config_tables
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import KEY_COLUMNS, match_bootstrap, per_ball_log_loss, score


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arm", action="append", required=True, help="NAME=CHECKPOINT,CHECKPOINT,... (first: reference)")
    p.add_argument("--split", default="validation", choices=["validation", "test"])
    p.add_argument("--season", type=int, action="append", help="these seasons' balls instead of a split's")
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--competition", help="only this competition's balls")
    p.add_argument("--n-boot", type=int, default=2000)
    args = p.parse_args()
    cfg = load_data_config(args.data)
    d = config_tables(args.data, args.sources).deliveries
    part = d[d["season"].isin(args.season)] if args.season else SeasonSplit.from_config(cfg.split).split(d)[args.split]
    if args.competition:
        part = part[part["competition"].astype(str) == args.competition]
    arms: dict[str, list[pd.DataFrame]] = {}
    for spec in args.arm:
        name, _, paths = spec.partition("=")
        arms[name] = []
        for path in paths.split(","):
            trained = load_trained(path)
            if trained.encoder.reads_known:
                trained.encoder.attach_known(d)
            arms[name].append(trained.score(part))
    seasons = ", ".join(sorted(map(str, part["season"].unique())))
    print(f"{args.split if not args.season else 'seasons'} ({seasons}), {part['match_id'].nunique()} matches")
    print("| arm | seeds' log loss | mean (sd) |\n|---|---|---:|")
    for name, scored in arms.items():
        losses = [score(s)["log_loss"] for s in scored]
        sd = np.std(losses, ddof=1) if len(losses) > 1 else 0.0
        print(f"| {name} | {' / '.join(f'{x:.5f}' for x in losses)} | {np.mean(losses):.5f} ({sd:.5f}) |")
    reference_name, *others = arms
    reference = mean_loss(arms[reference_name])
    print(f"\n| arm - {reference_name} | by match [95% CI] |\n|---|---|")
    for name in others:
        both = reference.merge(mean_loss(arms[name]), on=list(KEY_COLUMNS), suffixes=("_ref", ""))
        diff = match_bootstrap((both["loss"] - both["loss_ref"]).to_numpy(), both["match_id"], args.n_boot, 0)
        print(f"| {name} | {diff['diff']:+.5f} [{diff['ci_low']:+.5f}, {diff['ci_high']:+.5f}] |")


def mean_loss(scored: list[pd.DataFrame]) -> pd.DataFrame:
    """Each ball's log loss, the mean over the seeds' models (on the balls every one scored), keyed."""
    keys = list(KEY_COLUMNS)
    losses = pd.concat([s[keys].assign(loss=per_ball_log_loss(s)) for s in scored])
    by_ball = losses.groupby(keys, observed=True, sort=False)["loss"].agg(["mean", "size"])
    return by_ball[by_ball["size"] == len(scored)]["mean"].rename("loss").reset_index()


if __name__ == "__main__":
    main()
