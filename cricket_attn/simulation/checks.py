"""Before any win probability: do simulated innings look like the real ones?

Per-ball errors compound over 120 balls and the scoring level drifts season by season, so each real
innings is simulated from its first ball (the chase with its real target) and the simulated innings are
compared with the real ones, season by season: mean and spread of the total, wickets, fours and sixes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cricket_attn import progress
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.state import InningsSetup

MEASURES = ("runs", "wickets", "fours", "sixes")


def simulate_from_the_start(sim: Simulator, deliveries: pd.DataFrame, matches: pd.DataFrame | None, n: int,
                            seed: int = 0) -> pd.DataFrame:
    """One row per regular innings of `deliveries`: its real MEASURES and the mean and standard deviation of
    n simulations of it from ball 0 (same batting order, bowlers by the rule, the chase's real target)."""
    generator = torch.Generator().manual_seed(seed)
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    groups = list(d.groupby(["match_id", "innings"], sort=False, observed=True))
    rows = []
    for (match_id, innings), inn in progress.track(groups, "simulating innings", unit="innings"):
        setup = InningsSetup.from_table(inn, matches)
        first = inn.iloc[0]
        target = float(first["target_runs"]) if pd.notna(first["target_runs"]) else None
        state = sim.start(setup, n, target)
        bowlers = BowlerChoice.for_innings(state, sim.usage, str(first["bowling_team"]), first["date"])
        end = sim.roll(state, sim.new_caches(), bowlers, generator)
        real = {"runs": inn["runs_total"].sum(), "wickets": inn["wicket_count"].sum(),
                "fours": (inn["outcome"] == "4").sum(), "sixes": (inn["outcome"] == "6").sum()}
        row = {"match_id": str(match_id), "innings": int(innings), "season": int(first["season"]),
               "chase": setup.chase, "cut_short": end.cut_short}
        for m in MEASURES:
            values = getattr(end, m).double()
            row[f"real_{m}"] = float(real[m])
            row[f"sim_{m}"] = float(values.mean())
            row[f"sim_{m}_sd"] = float(values.std())
        rows.append(row)
    return pd.DataFrame(rows)


def season_table(per_innings: pd.DataFrame) -> pd.DataFrame:
    """Per season and innings (first, chase): real and simulated means of each measure, and the spread of
    the real values against the spread of the simulations (the root mean simulated variance)."""
    out = []
    for (season, chase), part in per_innings.groupby(["season", "chase"]):
        row = {"season": season, "innings": "chase" if chase else "first", "n": len(part)}
        for m in MEASURES:
            row[f"real_{m}"] = part[f"real_{m}"].mean()
            row[f"sim_{m}"] = part[f"sim_{m}"].mean()
            row[f"real_{m}_sd"] = part[f"real_{m}"].std()
            # The spread a simulated innings has around the real innings' mean: within-innings variance
            # plus the variance of the simulated means across innings.
            row[f"sim_{m}_sd"] = float(np.sqrt((part[f"sim_{m}_sd"] ** 2).mean() + part[f"sim_{m}"].var()))
        out.append(row)
    return pd.DataFrame(out)
