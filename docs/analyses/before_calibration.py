"""A calibration of the simulator's win probability before the first ball, chosen on a validation season and
scored on the test seasons: one number b added to the log-odds of the chasing side's chance (the simulator's
chases run pessimistic), fitted by log loss on the validation season's matches, then applied to the test's.

Each input is the `before.csv` of a `cricket-attn-before-eval` run: the validation season's with a model fitted
before it (the protocol a season back), the test seasons' with the model under study:

    cricket-attn-before-eval --model <the recipe a season back: fit to 2022, choose on 2023, refit through 2023> \
        --test 2024 --train-until 2023 --no-players --out outputs/before-2024
    cricket-attn-before-eval --model <the make main model> --out outputs/before
    python docs/analyses/before_calibration.py --validation outputs/before-2024 --test outputs/before

Prints b, the validation season's scores before and after it, and the test's: Brier and log loss of the
simulator as it is, calibrated, and the yardsticks, each yardstick minus the calibrated simulator paired by match
(95% bootstrap intervals).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from cricket_attn.metrics import binary_brier, binary_log_loss, markdown_table, match_bootstrap_sums

FLOOR = 0.5 / 200  # the log loss's floor on a chance: half a simulation of 200, as before-eval scores them


def shifted(p: np.ndarray, b: float) -> np.ndarray:
    """The chances with `b` added to their log-odds."""
    p = np.clip(p, FLOOR, 1 - FLOOR)
    return 1 / (1 + np.exp(-(np.log(p / (1 - p)) + b)))


def fit_shift(p: np.ndarray, won: np.ndarray) -> float:
    """The b that minimises the mean log loss of `shifted(p, b)` on `won` (1, 0, or 0.5 for a tie)."""
    return minimize_scalar(lambda b: binary_log_loss(shifted(p, b), won, FLOOR).mean(), bounds=(-3, 3)).x


def scores(games: pd.DataFrame, models: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    won = games["won"].to_numpy()
    losses = {
        (m, metric): f(games[m].to_numpy(), won)
        for m in models
        for metric, f in (("brier", binary_brier), ("log_loss", lambda p, y: binary_log_loss(p, y, FLOOR)))
    }
    table = pd.DataFrame([{"model": m, **{k: v.mean() for (mm, k), v in losses.items() if mm == m}} for m in models])
    paired = []
    for m in models:
        if m.startswith("simulator"):
            continue
        for metric in ("brier", "log_loss"):
            diff = losses[(m, metric)] - losses[("simulator_calibrated", metric)]
            paired.append({"against": m, "metric": metric, **match_bootstrap_sums(diff, np.ones(len(diff)))})
    return table, pd.DataFrame(paired)[["against", "metric", "diff", "ci_low", "ci_high"]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--validation", type=Path, required=True, help="the validation season's before-eval folder")
    p.add_argument("--test", type=Path, required=True, help="the test seasons' before-eval folder")
    args = p.parse_args()
    validation, test = (pd.read_csv(folder / "before.csv") for folder in (args.validation, args.test))
    b = fit_shift(validation["simulator"].to_numpy(), validation["won"].to_numpy())
    models = ["simulator", "simulator_calibrated", "logistic", "elo"]
    for name, games in (("validation", validation), ("test", test)):
        games = games.assign(simulator_calibrated=shifted(games["simulator"].to_numpy(), b))
        table, paired = scores(games, models)
        print(
            f"\n{name}: {len(games)} matches, the chasing side won {games['won'].mean():.3f}; the simulator's mean "
            f"chance {games['simulator'].mean():.3f}, calibrated {games['simulator_calibrated'].mean():.3f} "
            f"(b = {b:+.3f} on the log-odds, fitted on the validation season)\n"
        )
        print(markdown_table(table, 4))
        print("\nyardstick minus the calibrated simulator, paired by match (above 0: the simulator ahead):\n")
        print(markdown_table(paired, 4))


if __name__ == "__main__":
    main()
