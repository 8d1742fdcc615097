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

A model of every league: `--data t20 --competition "Indian Premier League"` (the records read from every
league's matches, the form and the scores from that competition's balls).

The forms so far are `cricket_attn.inference.form`'s (the simulator's option); the oracle is this script's.
The weights and n0 are fitted on 2024 (with the model fitted through 2023) and applied to 2025-2026 (the
model fitted through 2024); the fit on each season itself is reported too.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import config_tables
from cricket_attn.inference.form import ROLES, PlayerForm, ball_losses, fit_weights
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import PROB_COLUMNS, labels_of, match_bootstrap


def scored(model: str, d: pd.DataFrame, known: pd.DataFrame) -> pd.DataFrame:
    """`d` scored by `model`; a model that reads histories or records reads them from every match `known`."""
    trained = load_trained(model)
    if trained.encoder.reads_known:
        trained.encoder.attach_known(known)
    out = trained.score(d)
    assert len(out) == len(d) and (out["match_id"].to_numpy() == d["match_id"].to_numpy()).all()
    for c in ("date", *ROLES):
        out[c] = d[c].to_numpy()
    return out


def oracle_forms(form: PlayerForm, s: pd.DataFrame) -> np.ndarray:
    """(balls, 4) as `PlayerForm.ball_forms`, but from every other match of the player in these seasons,
    later ones included: a ceiling no history reaches."""
    cols = []
    t = form.table
    for role in ROLES:
        mine = t[t["role"] == role]
        total = mine.groupby("player")[["n", "runs", "wicket"]].sum()
        per = mine.set_index(["player", "match_id"])[["n", "runs", "wicket"]]
        other = total.reindex(per.index.get_level_values("player")).to_numpy() - per  # all but this match
        f = other[["runs", "wicket"]].to_numpy() / (other[["n"]].to_numpy() + form.balls)
        lookup = pd.DataFrame(f, index=per.index, columns=["runs", "wicket"])
        keys = pd.MultiIndex.from_arrays([s[role].astype(str), s["match_id"].astype(str)])
        cols.append(lookup.reindex(keys).to_numpy())
    return np.concatenate(cols, axis=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="the default fitted through 2024")
    p.add_argument("--season-back-model", required=True, help="the default fitted through 2023")
    p.add_argument("--data", default="ipl", help="the data config the models were trained on (default ipl)")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--competition", help="score and measure this competition's balls only")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    d = config_tables(args.data, args.sources).deliveries
    d = d[~d["is_super_over"].astype(bool)]
    known = d
    if args.competition:
        d = d[d["competition"] == args.competition]
    dates = d.groupby(d["match_id"].astype(str))["date"].first()
    seasons = {"2024": (args.season_back_model, [2024]), "2025-2026": (args.model, [2025, 2026])}
    data = {}
    for name, (model, years) in seasons.items():
        s = scored(model, d[d["season"].isin(years)].reset_index(drop=True), known)
        data[name] = (s, np.log(s[list(PROB_COLUMNS)].to_numpy(np.float64)), labels_of(s))

    def design(name: str, balls: float, oracle: bool) -> np.ndarray:
        s = data[name][0]
        form = PlayerForm.from_scored(s, dates, balls)
        return oracle_forms(form, s) if oracle else form.ball_forms(s, dates)

    s, log_p, y = data["2024"]
    candidates = [25, 50, 100, 200, 400]

    def fitted_loss(balls: float) -> float:
        f = design("2024", balls, False)
        return float(ball_losses(fit_weights(log_p, y, f), log_p, y, f).mean())

    chosen = min(candidates, key=fitted_loss)
    print(f"balls chosen on 2024: {chosen} (of {candidates})")
    print(
        f"{'seasons':<10} {'form':<8} {'balls':>7} {'model':>8} {'fitted there':>13} "
        f"{'weights from 2024 [95% CI by match]':>36}  weights (batter runs, wicket, bowler runs, wicket)"
    )
    w2024 = {}
    for name in seasons:
        s, log_p, y = data[name]
        base = ball_losses(np.zeros(4), log_p, y, np.zeros((len(y), 4)))
        for oracle in (False, True):
            f = design(name, chosen, oracle)
            w = fit_weights(log_p, y, f)
            if name == "2024":
                w2024[oracle] = w
            there = ball_losses(w, log_p, y, f).mean() - base.mean()
            diff = ball_losses(w2024[oracle], log_p, y, f) - base
            ci = match_bootstrap(diff, s["match_id"])
            print(
                f"{name:<10} {'oracle' if oracle else 'so far':<8} {len(y):>7,} {base.mean():>8.4f} {there:>+13.5f} "
                f"{diff.mean():>+9.5f} [{ci['ci_low']:+.4f}, {ci['ci_high']:+.4f}]  {np.round(w, 3).tolist()}"
            )


if __name__ == "__main__":
    main()
