"""The calibration's parts, judged where they act: the temperature and the wicket offset are fitted on the
validation season to the selected model's predictions and given to the refit, which is then tested on a later
season. For each run (a training run's folder, one seed each: its selected model `checkpoints/best-*.ckpt` and its
first refit member `checkpoints/refit/refit-*.ckpt`), the refit's test balls are scored three ways: with the
temperature and the wicket offset (`calibrate_wickets=true`), the temperature alone (false), and neither. Each
way's log loss on a ball is the mean over the runs; the ways are paired with the first by match, with a 95%
interval from resampling whole matches (difference below zero: better than the temperature and offset).

    python docs/analyses/calibration.py --validation 2023 --test 2024 \
        --run outputs/sb_ctl_s0 --run outputs/sb_ctl_s1 --run outputs/sb_ctl_s2      # make main a season back
    python docs/analyses/calibration.py --data t20 --competition "Indian Premier League" --validation 2023 \
        --test 2024 --run outputs/sb/ipl --run ...                                     # the leagues' fine-tune

Prints, per run and way, the temperature, the offset, the log loss and the wicket's mean probability against the
share of balls that were wickets, then the paired table (markdown).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from cricket_attn.config import load_data_config
from cricket_attn.data.deliveries import config_tables
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import (
    KEY_COLUMNS,
    PROB_COLUMNS,
    calibrated,
    fit_calibration,
    match_bootstrap,
    per_ball_log_loss,
    probabilities,
)

WAYS = ("temperature and wicket offset", "temperature alone", "neither")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, action="append", required=True, help="a run's folder (one per seed)")
    p.add_argument(
        "--validation", type=int, nargs="+", help="the seasons the calibration is fitted on (default: conf's)"
    )
    p.add_argument("--test", type=int, nargs="+", help="the seasons the refit is scored on (default: conf's)")
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--competition", help="only this competition's balls")
    p.add_argument("--n-boot", type=int, default=2000)
    args = p.parse_args()
    split = load_data_config(args.data).split
    validation, test = args.validation or list(split.validation), args.test or list(split.test)
    table = config_tables(args.data, args.sources).deliveries  # every competition's: the records read them all
    d = table[~table["is_super_over"].astype(bool)]
    if args.competition:
        d = d[d["competition"].astype(str) == args.competition]
    losses: dict[str, list[pd.DataFrame]] = {way: [] for way in WAYS}
    print("| run | way | temperature | offset | log loss | wicket a ball (real) |\n|---|---|---:|---:|---:|---:|")
    for run in args.run:
        selected = scorer(next((run / "checkpoints").glob("best-*.ckpt")), table)
        on_validation = selected.score(d[d["season"].isin(validation)])
        both, alone = fit_calibration(on_validation, wickets=True), fit_calibration(on_validation, wickets=False)
        refit = scorer(next((run / "checkpoints" / "refit").glob("refit-*.ckpt")), table)
        scored = refit.score(d[d["season"].isin(test)])
        raw, real = probabilities(scored), (scored["outcome"].astype(str) == "wicket").mean()
        for way, (temperature, offset) in zip(WAYS, (both, alone, (1.0, 0.0)), strict=True):
            way_scored = scored.assign(**dict(zip(PROB_COLUMNS, calibrated(raw, temperature, offset).T, strict=True)))
            losses[way].append(way_scored[list(KEY_COLUMNS)].assign(loss=per_ball_log_loss(way_scored)))
            print(f"| {run} | {way} | {temperature:.3f} | {offset:+.3f} | {losses[way][-1]['loss'].mean():.5f} "
                  f"| {way_scored['p_wicket'].mean():.4f} ({real:.4f}) |")  # fmt: skip
    means = {
        way: pd.concat(runs).groupby(list(KEY_COLUMNS), observed=True)["loss"].mean() for way, runs in losses.items()
    }
    reference = means[WAYS[0]]
    keys = reference.index.get_level_values("match_id").astype(str)
    print(f"\n{len(args.run)} run(s), seasons {test}: the mean of the runs' log losses")
    print(f"| way | log loss | - {WAYS[0]} [95% CI] |\n|---|---:|---|")
    for way in WAYS:
        diff = match_bootstrap((means[way] - reference).to_numpy(), pd.Series(keys), args.n_boot, 0)
        print(
            f"| {way} | {means[way].mean():.5f} | {diff['diff']:+.5f} [{diff['ci_low']:+.5f}, {diff['ci_high']:+.5f}] |"
        )


def scorer(checkpoint: Path, deliveries: pd.DataFrame):
    """The model of a checkpoint as saved (no calibration), reading records of the whole table as of each day."""
    trained = load_trained(str(checkpoint))
    if trained.encoder.reads_known:
        trained.encoder.attach_known(deliveries)
    return trained


if __name__ == "__main__":
    main()
