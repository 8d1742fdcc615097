"""How good the simulator's match-level answers are, against match-level baselines fitted on the same seasons.

Chase win probability from the start of every over of every chase (matches without a result left out and
counted; a tie is half a win), against a logistic regression on runs needed, balls left and wickets left
(with log and ratio transforms) fitted on the training seasons' chases. First-innings totals after 6, 10 and
15 overs, against the run-rate projection and gradient boosting on the match state (its quantile version for
the 10-90% interval). Differences are paired on the same states, with 95% intervals resampling matches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cricket_attn import progress
from cricket_attn.data.features import match_state
from cricket_attn.laws import batting_side_won
from cricket_attn.metrics import binary_brier, binary_ece, binary_log_loss, binary_reliability, match_bootstrap
from cricket_attn.simulation.match import MatchContext
from cricket_attn.simulation.rollout import Simulator

CHASE_CHECKPOINTS = (0, 6, 10, 15)  # the chase's start, and after 6, 10 and 15 overs
TOTAL_CHECKPOINTS = (6, 10, 15)  # first-innings totals after this many overs
QUANTILES = (0.1, 0.9)
WIN_BINS = 10


def over_start_states(deliveries: pd.DataFrame, matches: pd.DataFrame) -> pd.DataFrame:
    """The state before the first ball of every over of every regular innings, with what came of it: the
    innings' total and, for a chase, `won` (1, 0, or 0.5 for a tie; NaN for no result)."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    state = match_state(d)
    first = ~d.duplicated(["match_id", "innings", "over"])
    out = d.loc[first, ["match_id", "season", "innings", "over", "delivery_index", "batting_team"]].copy()
    out["match_id"] = out["match_id"].astype(str)
    for c in (
        "runs_before",
        "wickets_before",
        "legal_balls_before",
        "balls_left",
        "run_rate",
        "runs_needed",
        "target",
        "last6_runs",
        "last6_wickets",
        "season_index",
    ):
        out[c] = state.loc[first, c].to_numpy()
    out["chase"] = d.loc[first, "target_runs"].notna().to_numpy()
    totals = d.groupby(["match_id", "innings"], observed=True)["runs_total"].sum()
    out["total"] = totals.reindex(pd.MultiIndex.from_frame(d.loc[first, ["match_id", "innings"]])).to_numpy()
    out["won"] = np.where(out["chase"], batting_side_won(out, matches), np.nan)
    return out.reset_index(drop=True)


def chase_features(s: pd.DataFrame) -> np.ndarray:
    needed = s["runs_needed"].to_numpy(dtype=float)
    balls = s["balls_left"].to_numpy(dtype=float)
    wickets = 10 - s["wickets_before"].to_numpy(dtype=float)
    return np.column_stack(
        [
            needed,
            balls,
            wickets,
            np.log1p(np.maximum(needed, 0)),
            np.log1p(balls),
            np.log1p(wickets),
            needed / np.maximum(balls, 1) * 6,
            needed / (wickets + 1),
        ]
    )


TOTAL_FEATURES = (
    "runs_before",
    "wickets_before",
    "legal_balls_before",
    "balls_left",
    "run_rate",
    "last6_runs",
    "last6_wickets",
    "season_index",
)


class Baselines:
    """The match-level baselines, fitted on the training seasons' over starts: what the simulator must beat.
    Its win probability is a logistic regression on the chase's state at each over start, the yardstick the
    simulator's chase Brier has been reported against since the first evaluation; the other win-probability
    model of the package, `valuation.win.WinModel`, has another job (a chance before every ball of a season,
    for win probability added) and is trees on the state before each ball."""

    def __init__(self, train: pd.DataFrame, seed: int = 0):
        chases = train[train["chase"] & train["won"].isin([0.0, 1.0])]
        self.win = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        self.win.fit(chase_features(chases), chases["won"].to_numpy())
        first = train[~train["chase"]]
        X, y = first[list(TOTAL_FEATURES)].to_numpy(dtype=float), first["total"].to_numpy(dtype=float)
        self.total = HistGradientBoostingRegressor(random_state=seed).fit(X, y)
        self.bounds = [
            HistGradientBoostingRegressor(loss="quantile", quantile=q, random_state=seed).fit(X, y) for q in QUANTILES
        ]

    def win_probability(self, s: pd.DataFrame) -> np.ndarray:
        return self.win.predict_proba(chase_features(s))[:, 1]

    def totals(self, s: pd.DataFrame) -> dict[str, np.ndarray]:
        X = s[list(TOTAL_FEATURES)].to_numpy(dtype=float)
        rate = s["runs_before"] / s["legal_balls_before"].clip(lower=1)
        return {
            "gbm": self.total.predict(X),
            "gbm_q10": self.bounds[0].predict(X),
            "gbm_q90": self.bounds[1].predict(X),
            "run_rate": (s["runs_before"] + rate * s["balls_left"]).to_numpy(),
        }


def simulate_snapshots(
    sim: Simulator,
    deliveries: pd.DataFrame,
    matches: pd.DataFrame,
    states: pd.DataFrame,
    n: int,
    seed: int = 0,
    levels: dict[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """`states` (rows of `over_start_states`) with the simulator's `sim_win` (chases) or `sim_total`,
    `sim_q10`, `sim_q90` (first innings: the rest of the innings only), from n simulations of each. With
    `levels` (cricket_attn.inference.recent), each match's simulations take its class offsets."""
    generator = torch.Generator().manual_seed(seed)
    by_match = dict(iter(deliveries.groupby(deliveries["match_id"].astype(str), sort=False, observed=True)))
    out = []
    for (match_id, number), wanted in progress.track(
        list(states.groupby(["match_id", "innings"], sort=False)), "simulating states", unit="innings"
    ):
        ctx = MatchContext.of(by_match[match_id], matches)
        here = sim.for_match(levels, match_id)
        points = ctx.points(here, number, wanted["delivery_index"].tolist())
        end, wins = ctx.simulate(here, number, points, n, generator, then_chase=False)
        part = wanted.copy()
        if number == 2:
            part["sim_win"] = wins.view(len(points), n).mean(1).numpy()
        else:
            runs = end.runs.double().view(len(points), n)
            part["sim_total"] = runs.mean(1).numpy()
            q = torch.quantile(runs, torch.tensor(QUANTILES, dtype=torch.float64), dim=1)
            part["sim_q10"], part["sim_q90"] = q[0].numpy(), q[1].numpy()
        out.append(part)
    return pd.concat(out, ignore_index=True)


def win_report(chases: pd.DataFrame, n: int) -> pd.DataFrame:
    """Brier, log loss, ECE and bias of the simulator and the logistic baseline, over all over starts and at
    each checkpoint, with the paired Brier difference (simulator - baseline) and its interval by match."""
    rows = []
    for label, part in [
        ("all over starts", chases),
        *((f"after {k} overs" if k else "chase start", chases[chases["over"] == k]) for k in CHASE_CHECKPOINTS),
    ]:
        y = part["won"].to_numpy()
        row = {"states": label, "n": len(part), "matches": part["match_id"].nunique()}
        for name, col in (("simulator", "sim_win"), ("logistic", "baseline_win")):
            p = part[col].to_numpy()
            row[f"{name}_brier"] = binary_brier(p, y).mean()
            row[f"{name}_log_loss"] = binary_log_loss(p, y, 0.5 / n).mean()
            row[f"{name}_ece"] = binary_ece(p, y, WIN_BINS)
            row[f"{name}_bias"] = p.mean() - y.mean()
        diff = binary_brier(part["sim_win"].to_numpy(), y) - binary_brier(part["baseline_win"].to_numpy(), y)
        boot = match_bootstrap(diff, part["match_id"])
        row.update(brier_diff=boot["diff"], brier_diff_low=boot["ci_low"], brier_diff_high=boot["ci_high"])
        rows.append(row)
    return pd.DataFrame(rows)


def total_report(first: pd.DataFrame) -> pd.DataFrame:
    """MAE of the projected first-innings total after 6, 10 and 15 overs (simulator, gradient boosting, run
    rate), the 10-90% interval's coverage, and the paired MAE difference (simulator - boosting) by match."""
    rows = []
    for k in TOTAL_CHECKPOINTS:
        part = first[first["over"] == k]
        y = part["total"].to_numpy()
        err = {
            name: np.abs(part[col].to_numpy() - y)
            for name, col in (("simulator", "sim_total"), ("gbm", "gbm"), ("run_rate", "run_rate"))
        }
        boot = match_bootstrap(err["simulator"] - err["gbm"], part["match_id"])
        rows.append(
            {
                "after_overs": k,
                "innings": len(part),
                **{f"{name}_mae": e.mean() for name, e in err.items()},
                "simulator_coverage": ((part["sim_q10"] <= y) & (y <= part["sim_q90"])).mean(),
                "gbm_coverage": ((part["gbm_q10"] <= y) & (y <= part["gbm_q90"])).mean(),
                "mae_diff": boot["diff"],
                "mae_diff_low": boot["ci_low"],
                "mae_diff_high": boot["ci_high"],
            }
        )
    return pd.DataFrame(rows)


def evaluate(
    sim: Simulator,
    deliveries: pd.DataFrame,
    matches: pd.DataFrame,
    train_until: int,
    test_seasons: list[int],
    n: int,
    seed: int = 0,
    levels: dict[str, np.ndarray] | None = None,
) -> dict[str, pd.DataFrame | int]:
    """The simulator and the baselines on the test seasons' chases (every over start) and first innings
    (after 6, 10 and 15 overs); the baselines fitted on the seasons up to `train_until`; `levels` as for
    `simulate_snapshots`."""
    states = over_start_states(deliveries, matches)
    baselines = Baselines(states[states["season"] <= train_until], seed)
    test = states[states["season"].isin(test_seasons)]
    no_result = test[test["chase"] & test["won"].isna()]["match_id"].nunique()
    chases = test[test["chase"] & test["won"].notna()]
    first = test[~test["chase"] & test["over"].isin(TOTAL_CHECKPOINTS)]
    picked = pd.concat([chases, first]).sort_values(["match_id", "innings", "delivery_index"])
    simulated = simulate_snapshots(sim, deliveries, matches, picked, n, seed, levels)
    chases = simulated[simulated["chase"]].copy()
    chases["baseline_win"] = baselines.win_probability(chases)
    first = simulated[~simulated["chase"]].copy()
    for name, values in baselines.totals(first).items():
        first[name] = values
    return {
        "win": win_report(chases, n),
        "totals": total_report(first),
        "chases": chases,
        "first": first,
        "reliability": binary_reliability(chases["sim_win"].to_numpy(), chases["won"].to_numpy(), WIN_BINS),
        "no_result_matches": int(no_result),
    }


def summary_metrics(result: dict, levels: pd.DataFrame) -> dict[str, float]:
    """The figures of an evaluation (`evaluate`) and of the per-delivery levels (`realism.per_ball_levels`)
    that an MLflow run of the simulator logs, by name."""
    win, totals = result["win"].set_index("states"), result["totals"].set_index("after_overs")
    metrics = {
        "sim/brier": win.loc["all over starts", "simulator_brier"],
        "sim/log_loss": win.loc["all over starts", "simulator_log_loss"],
        "sim/ece": win.loc["all over starts", "simulator_ece"],
        "sim/bias": win.loc["all over starts", "simulator_bias"],
        "baseline/brier": win.loc["all over starts", "logistic_brier"],
        "paired/brier_diff": win.loc["all over starts", "brier_diff"],
    }
    for label, key in (
        ("chase start", "start"),
        ("after 6 overs", "6"),
        ("after 10 overs", "10"),
        ("after 15 overs", "15"),
    ):
        metrics[f"sim/brier_{key}"] = win.loc[label, "simulator_brier"]
    for _, row in levels.iterrows():
        key = f"{row['season']}_{row['innings_kind']}"
        metrics[f"why/runs_gap_per_innings_{key}"] = row["runs_gap_per_innings"]
        metrics[f"why/wickets_gap_per_innings_{key}"] = row["wickets_gap_per_innings"]
    for k, row in totals.iterrows():
        metrics[f"sim/total_mae_{k}"] = row["simulator_mae"]
        metrics[f"sim/total_coverage_{k}"] = row["simulator_coverage"]
        metrics[f"baseline/total_mae_{k}"] = row["gbm_mae"]
    return {name: float(value) for name, value in metrics.items()}
