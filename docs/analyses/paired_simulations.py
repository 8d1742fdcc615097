"""Two `cricket-attn-simulate-eval` runs on the same states, paired (a record's analysis, issue 15).

    python docs/analyses/paired_simulations.py outputs/simulation_a outputs/simulation_b

The chase win probability's Brier score and log loss (probabilities clipped at 1e-3) of every over start
of the chases with a result, the second run's against the first's and against the logistic baseline; the
first-innings projection's absolute error after 6, 10 and 15 overs; the 10-90% band's coverage and the
mean pinball loss of its two quantiles. Differences are second minus first, with 95% intervals by match.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.metrics import match_bootstrap

KEYS = ["match_id", "innings", "delivery_index"]


def interval(diff: pd.Series, matches: pd.Series, digits: int) -> str:
    ci = match_bootstrap(diff.to_numpy(), matches)
    return f"{diff.mean():+.{digits}f} [{ci['ci_low']:+.{digits}f}, {ci['ci_high']:+.{digits}f}]"


def pinball(part: pd.DataFrame, run: str) -> pd.Series:
    total = part["total"]
    loss = 0.0
    for q, column in ((0.1, f"sim_q10_{run}"), (0.9, f"sim_q90_{run}")):
        error = total - part[column]
        loss = loss + np.maximum(q * error, (q - 1) * error)
    return loss / 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("first", type=Path)
    p.add_argument("second", type=Path)
    args = p.parse_args()
    a, b = (pd.read_parquet(folder / "chases.parquet").dropna(subset=["won"]) for folder in (args.first, args.second))
    chases = a.merge(b[KEYS + ["sim_win"]], on=KEYS, suffixes=("_a", "_b"))
    if not len(chases) == len(a) == len(b):
        raise SystemExit("the two runs did not evaluate the same chase states")
    won = chases["won"]
    scores = {
        "Brier": lambda q: (q - won) ** 2,
        "log loss": lambda q: (
            -(won * np.log(q.clip(1e-3, 1 - 1e-3)) + (1 - won) * np.log((1 - q).clip(1e-3, 1 - 1e-3)))
        ),
    }
    for name, score in scores.items():
        first, second = score(chases["sim_win_a"]), score(chases["sim_win_b"])
        print(
            f"chases, {name}: {first.mean():.4f} -> {second.mean():.4f}, "
            f"{interval(second - first, chases['match_id'], 4)}; "
            f"second - logistic {interval(second - score(chases['baseline_win']), chases['match_id'], 4)}"
        )
    a, b = (pd.read_parquet(folder / "first.parquet") for folder in (args.first, args.second))
    first = a.merge(b[KEYS + ["sim_total", "sim_q10", "sim_q90"]], on=KEYS, suffixes=("_a", "_b"))
    for over, part in first.groupby("over"):
        errors = {run: (part[f"sim_total_{run}"] - part["total"]).abs() for run in "ab"}
        cover = {run: part["total"].between(part[f"sim_q10_{run}"], part[f"sim_q90_{run}"]).mean() for run in "ab"}
        print(
            f"first innings after {over} overs: MAE {errors['a'].mean():.2f} -> {errors['b'].mean():.2f}, "
            f"{interval(errors['b'] - errors['a'], part['match_id'], 2)}; "
            f"coverage {cover['a']:.3f} -> {cover['b']:.3f}; "
            f"pinball {pinball(part, 'a').mean():.2f} -> {pinball(part, 'b').mean():.2f}"
        )


if __name__ == "__main__":
    main()
