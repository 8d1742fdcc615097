"""How much a player's form is left for his history to tell: a record's analysis (issue 17).

The default model knows each player through his shrunk career rates and his embedding, both frozen at the
end of its training seasons. What players' histories could add beyond that is how a player has done since:
his form. This measures how much of it is left in the model's errors, with the model's own predictions on
seasons it never saw:

- each ball's residuals, runs (the class's runs minus the expected runs) and wicket (1 if a wicket minus its
  probability), given to its batter and to its bowler;
- a player's form before a match: the sum of his residuals in the evaluated seasons' earlier matches, less
  the league's mean over the same balls (the level's drift is not his), shrunk by n0 balls; the "oracle" form
  is the same from every other match of his in those seasons, later ones included (a ceiling: no history
  can know the future);
- each ball's distribution tilted by the four forms (batter's and bowler's, runs and wickets), with four
  weights fitted by maximum likelihood: p'_c ~ p_c exp(a f_runs u_c + b f_wicket [c = wicket]), u the classes'
  standardised runs. The gain in nats per ball is how much such form is worth.

    python docs/analyses/form.py --model outputs/<make main run>/checkpoints/refit/calibrated.ckpt \
        --season-back-model outputs/ablations/attention/season_back/default/seed0/checkpoints/refit/calibrated.ckpt

The weights and n0 are fitted on 2024 (with the model fitted through 2023) and applied to 2025-2026 (the
model fitted through 2024); the fit on each season itself is reported too.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch
from scipy.optimize import minimize
from scipy.special import logsumexp

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.cricsheet import OUTCOME_INDEX
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.histories import ROLES, player_key
from cricket_attn.metrics import OUTCOME_RUNS, match_bootstrap
from cricket_attn.scoring.predict import PROB_COLUMNS
from cricket_attn.scoring.serving import load_trained

WICKET = OUTCOME_INDEX["wicket"]
U = (OUTCOME_RUNS - OUTCOME_RUNS.mean()) / OUTCOME_RUNS.std()


def scored(model: str, d: pd.DataFrame) -> pd.DataFrame:
    out = load_trained(model).score(d)
    assert len(out) == len(d) and (out["match_id"].to_numpy() == d["match_id"].to_numpy()).all()
    for c in ("date", "batter_id", "bowler_id"):
        out[c] = d[c].to_numpy()
    out["y"] = pd.Categorical(out["outcome"].astype(object), list(OUTCOME_INDEX)).codes
    probs = out[list(PROB_COLUMNS)].to_numpy()
    out["r_runs"] = OUTCOME_RUNS[out["y"]] - probs @ OUTCOME_RUNS
    out["r_wicket"] = (out["y"] == WICKET) - probs[:, WICKET]
    return out


def forms(s: pd.DataFrame, role: str, n0: float, oracle: bool) -> np.ndarray:
    """(balls, 2): each ball's player's form in runs and wickets, before its match (or from his other
    matches, `oracle`), less the league's mean over the same balls, shrunk by n0 balls."""
    key = pd.Series(player_key(s, role), index=s.index)
    per = s.assign(player=key).groupby(["player", "match_id"], sort=False).agg(
        date=("date", "first"), n=("y", "size"), runs=("r_runs", "sum"), wicket=("r_wicket", "sum")).reset_index()
    league = s.groupby("match_id").agg(date=("date", "first"), runs=("r_runs", "mean"), wicket=("r_wicket", "mean"))
    per = per.merge(league[["runs", "wicket"]].add_suffix("_league"), left_on="match_id", right_index=True, how="left")
    for c in ("runs", "wicket"):  # the league's mean residual, over this player's balls' matches
        per[f"{c}_excess"] = per[c] - per["n"] * per[f"{c}_league"]
    per = per.sort_values(["player", "date"], kind="stable")
    cols = ["n", "runs_excess", "wicket_excess"]
    if oracle:
        total = per.groupby("player")[cols].transform("sum")
        other = total - per[cols]
    else:  # matches on earlier dates only
        earlier = per.groupby("player")[cols].cumsum() - per[cols]
        same_day = per.groupby(["player", "date"])[cols].cumsum() - per[cols]  # another match the same day
        other = earlier - same_day
    per["f_runs"] = other["runs_excess"] / (other["n"] + n0)
    per["f_wicket"] = other["wicket_excess"] / (other["n"] + n0)
    merged = s[["match_id"]].assign(player=key).merge(per[["player", "match_id", "f_runs", "f_wicket"]],
                                                       on=["player", "match_id"], how="left")
    return merged[["f_runs", "f_wicket"]].to_numpy()


def design(s: pd.DataFrame, n0: float, oracle: bool) -> np.ndarray:
    return np.concatenate([forms(s, role, n0, oracle) for role in ROLES], axis=1)  # (balls, 4)


def losses(w: np.ndarray, logp: np.ndarray, y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Each ball's log loss with its distribution tilted by the forms f (balls, 4) with weights w."""
    shift = (f[:, [0]] * w[0] + f[:, [2]] * w[2]) * U[None, :]
    shift[:, WICKET] += f[:, 1] * w[1] + f[:, 3] * w[3]
    z = logp + shift
    return -(z[np.arange(len(y)), y] - logsumexp(z, axis=1))


def nll(w: np.ndarray, logp: np.ndarray, y: np.ndarray, f: np.ndarray) -> float:
    return float(losses(w, logp, y, f).mean())


def fit(logp, y, f) -> np.ndarray:
    return minimize(nll, np.zeros(4), args=(logp, y, f), method="L-BFGS-B").x


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="the default fitted through 2024")
    p.add_argument("--season-back-model", required=True, help="the default fitted through 2023")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    cfg = load_data_config("ipl")
    d = load_tables(None, PhaseRules.from_config(cfg.phases), project_path(cfg.data_dir)).deliveries
    d = d[~d["is_super_over"].astype(bool)]
    seasons = {"2024": (args.season_back_model, [2024]), "2025-2026": (args.model, [2025, 2026])}
    data = {}
    for name, (model, years) in seasons.items():
        s = scored(model, d[d["season"].isin(years)].reset_index(drop=True))
        logp = np.log(s[list(PROB_COLUMNS)].to_numpy())
        data[name] = (s, logp, s["y"].to_numpy())
    s, logp, y = data["2024"]
    base = nll(np.zeros(4), logp, y, np.zeros((len(y), 4)))
    n0s = [25, 50, 100, 200, 400]
    chosen = min(n0s, key=lambda n0: nll(fit(logp, y, f := design(s, n0, False)), logp, y, f))
    print(f"n0 chosen on 2024: {chosen} balls (of {n0s})")
    print(f"{'seasons':<10} {'form':<8} {'balls':>7} {'model':>8} {'fitted there':>13} {'weights from 2024 [95% CI by match]':>36}  weights (batter runs, wicket, bowler runs, wicket)")
    w2024 = {}
    for name in seasons:
        s, logp, y = data[name]
        base = nll(np.zeros(4), logp, y, np.zeros((len(y), 4)))
        for oracle in (False, True):
            f = design(s, chosen, oracle)
            w = fit(logp, y, f)
            if name == "2024":
                w2024[oracle] = w
            there = nll(w, logp, y, f) - base
            diff = losses(w2024[oracle], logp, y, f) - losses(np.zeros(4), logp, y, f)
            ci = match_bootstrap(diff, s["match_id"])
            print(f"{name:<10} {'oracle' if oracle else 'so far':<8} {len(y):>7,} {base:>8.4f} {there:>+13.5f} "
                  f"{diff.mean():>+9.5f} [{ci['ci_low']:+.4f}, {ci['ci_high']:+.4f}]  {np.round(w, 2).tolist()}")


if __name__ == "__main__":
    main()
