"""The win-probability model behind `cricket-attn-players`' win probability added, checked against the
simulator on the same states: every over start of the test seasons' chases with a result, as
`cricket-attn-simulate-eval` scores them (its `chases.parquet`: `sim_win`, the logistic baseline's
`baseline_win`, and `won`).

    python docs/analyses/win_model.py --chases outputs/simulation/chases.parquet --train-until 2024

Printed (markdown): Brier score of each against what happened, and the paired differences with 95%
intervals by match (other minus the win-probability model: above zero, the win-probability model is better).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from cricket_attn.data.deliveries import config_tables
from cricket_attn.metrics import binary_brier, markdown_table, match_bootstrap
from cricket_attn.valuation.win import WinModel


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chases", required=True, help="cricket-attn-simulate-eval's chases.parquet")
    p.add_argument("--train-until", type=int, default=2024)
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    args = p.parse_args()
    tables = config_tables(args.data, args.sources)
    d = tables.deliveries[~tables.deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    win = WinModel.fit(d[d["season"] <= args.train_until], tables.matches)
    keys = ["match_id", "innings", "delivery_index"]
    states = d[keys].assign(match_id=d["match_id"].astype(str), win_model=win.batting_side(d))
    chases = pd.read_parquet(args.chases).assign(match_id=lambda c: c["match_id"].astype(str))
    both = chases.merge(states, on=keys, how="inner")
    assert len(both) == len(chases), "every state of the simulator's must be a ball of the data"
    won = both["won"].to_numpy()
    rows = []
    for name, column in (
        ("win-probability model", "win_model"),
        ("simulator", "sim_win"),
        ("logistic", "baseline_win"),
    ):
        brier = binary_brier(both[column].to_numpy(), won)
        row = {"model": name, "brier": float(brier.mean()), "bias": float((both[column] - won).mean())}
        if column != "win_model":
            paired = match_bootstrap(brier - binary_brier(both["win_model"].to_numpy(), won), both["match_id"])
            row["other - win model [95% CI]"] = (
                f"{paired['diff']:+.4f} [{paired['ci_low']:+.4f}, {paired['ci_high']:+.4f}]"
            )
        rows.append(row)
    gap = np.abs(both["win_model"] - both["sim_win"])
    print(f"{len(both):,} chase over starts of {both['match_id'].nunique()} matches\n")
    print(markdown_table(pd.DataFrame(rows).fillna(""), 4))
    print(f"\n|win model - simulator|: mean {gap.mean():.3f}, 90th percentile {gap.quantile(0.9):.3f}")


if __name__ == "__main__":
    main()
