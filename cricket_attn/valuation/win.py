"""Win probability before every ball, and what each ball added to it.

A win-probability model of the match state alone (`WinModel`: gradient-boosted trees on the score, the
wickets, the balls left and, in a chase, the runs needed; fitted on every ball of the model's training seasons
against what came of the match), fast enough to read every ball of a season; checked against the simulator on
the same states (README). It is not the simulator's baseline (`simulation.against_baselines`, a logistic
regression at over starts, kept as the yardstick the simulator is reported against): this one must read every
ball of a season in seconds and be as good as a state-only model can. Each ball adds to the batting side's
chance the difference between the chance before the next ball (the chasing side's, turned round, after the
first innings' last ball) and the chance before it; after the match's last ball the chance is the result (1,
0, or 0.5 for a tie). So over a match the balls, counted for the side batting first (a chase's with their sign
turned), add up to the result minus the chance before the first ball.
The batter is credited with what a ball added, the bowler with its opposite: on every delivery the
bowler, on the balls he faced the batter (a wide is not his, as for runs); byes, leg-byes and run-outs move
the chance too and go to the bowler and the batter on strike like any ball.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

from cricket_attn.data.features import match_state
from cricket_attn.laws import batting_side_won

# The match state alone: no season (a result is the same for every ball of a match, and trees given the
# season and the target learn the matches by heart: 2024's chases at Brier 0.24 against 0.12 without it).
WIN_FEATURES = (
    "is_chase", "runs_before", "wickets_before", "legal_balls_before", "balls_left", "run_rate", "runs_needed",
    "required_rate", "target", "last6_runs", "last6_wickets",
)  # fmt: skip
# Each leaf holds some forty matches' balls, so no leaf is one match's result (chosen on IPL 2024, fitted to 2023).
MIN_LEAF = 10_000


def leaf_size(rows: int) -> int:
    """MIN_LEAF balls a leaf, or a twentieth of the rows where they are fewer than twenty leaves' worth (a few
    fixture matches still make a model)."""
    return min(MIN_LEAF, max(rows // 20, 20))


def win_features(d: pd.DataFrame) -> np.ndarray:
    """(N, len(WIN_FEATURES)) the state before each delivery of `d` (regular innings)."""
    return match_state(d)[list(WIN_FEATURES)].to_numpy(dtype=np.float64)


@dataclass
class WinModel:
    """The batting side's chance of winning from the state before a ball."""

    trees: HistGradientBoostingClassifier

    @classmethod
    def fit(cls, deliveries: pd.DataFrame, matches: pd.DataFrame, seed: int = 0) -> WinModel:
        """On every ball of the regular innings of `deliveries` with a result (a tie: half a win and half a
        loss)."""
        d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
        won = batting_side_won(d, matches)
        keep = ~np.isnan(won)
        X, won = win_features(d)[keep], won[keep]
        if not len(won) or len(np.unique(np.round(won))) < 2:
            raise ValueError("no matches won and lost among the known matches of the training seasons")
        tie = won == 0.5  # twice, once won and once lost, each weighing half
        X = np.vstack([X, X[tie]])
        y = np.r_[np.where(tie, 1, won), np.zeros(tie.sum())].astype(int)
        weight = np.r_[np.where(tie, 0.5, 1.0), np.full(tie.sum(), 0.5)]
        trees = HistGradientBoostingClassifier(max_iter=200, min_samples_leaf=leaf_size(len(y)), random_state=seed)
        return cls(trees.fit(X, y, sample_weight=weight))

    def batting_side(self, d: pd.DataFrame) -> np.ndarray:
        """(N,) the batting side's chance of winning before each delivery of `d` (regular innings)."""
        return self.trees.predict_proba(win_features(d))[:, 1]


def win_added(win: WinModel, d: pd.DataFrame, matches: pd.DataFrame) -> pd.DataFrame:
    """For each delivery of `d` (regular innings, in table order, indexed 0..n-1): `win_before` (the batting
    side's chance before it), `win_after` and `win_added` (after minus before); NaN for a match without a
    result."""
    match = d["match_id"].astype(str).to_numpy()
    in_order = d.groupby(["match_id", "innings"], sort=False, observed=True)["delivery_index"].diff().dropna() > 0
    if (match[1:] != match[:-1]).sum() != len(pd.unique(match)) - 1 or not in_order.all():
        raise ValueError("the deliveries must be in play order: each match's balls together, innings by innings")
    before = win.batting_side(d)
    first_innings = d["innings"].to_numpy() == 1
    # Everything as the chance of the side batting first, so that a match is one series from start to result.
    first_side = np.where(first_innings, before, 1 - before)
    result = batting_side_won(d, matches)
    result_first = np.where(first_innings, result, 1 - result)  # the side batting first's result
    last = np.r_[match[1:] != match[:-1], True]
    after_first = np.where(last, result_first, np.r_[first_side[1:], np.nan])
    after = np.where(first_innings, after_first, 1 - after_first)
    out = pd.DataFrame({"win_before": before, "win_after": after}, index=d.index)
    out.loc[np.isnan(result), ["win_before", "win_after"]] = np.nan
    out["win_added"] = out["win_after"] - out["win_before"]
    return out
