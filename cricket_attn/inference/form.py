"""Players' form since the model's training seasons, learnt from the matches played since.

The model knows a player by his embedding and his career rates, both frozen at the end of its training
seasons; players change after it. The balls a player has faced or bowled since then, each predicted by the
model, say how far off it is for him: each ball's residuals, runs (its class's runs less the expected runs)
and wicket (1 if a wicket, less its probability), summed over his earlier matches less the league's mean
over the same balls (the league's drift is not his: `cricket_attn.inference.recent` takes that), and shrunk
by `balls`, are his form in runs and in wickets as a batter and as a bowler. A ball's distribution is
tilted by its batter's and its bowler's forms with four weights:

    log p'_c = log p_c + (w_batter_runs f_batter_runs + w_bowler_runs f_bowler_runs) u_c
               + (w_batter_wicket f_batter_wicket + w_bowler_wicket f_bowler_wicket) [c = wicket] + const,

u the classes' standardised runs. A player's form before a match uses his matches dated strictly before it.
`balls` and the weights were fitted on 2024 with the model fitted through 2023 (docs/log/2026-11-23.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import logsumexp

from cricket_attn.laws import OUTCOME_INDEX, OUTCOME_RUNS
from cricket_attn.metrics import PROB_COLUMNS, labels_of

WICKET = OUTCOME_INDEX["wicket"]
RUN_DIRECTION = (OUTCOME_RUNS - OUTCOME_RUNS.mean()) / OUTCOME_RUNS.std()
ROLES = ("batter", "bowler")

# Chosen on 2024 with the model fitted through 2023 (docs/log/2026-11-23.md, "players' form").
FORM_BALLS = 50.0
FORM_WEIGHTS = (0.529, 8.087, 0.183, 0.225)  # batter runs, batter wicket, bowler runs, bowler wicket


def residuals(scored: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each scored ball's residuals: runs (its class's runs less the expected) and wicket."""
    probs = scored[list(PROB_COLUMNS)].to_numpy(np.float64)
    labels = labels_of(scored)
    return OUTCOME_RUNS[labels] - probs @ OUTCOME_RUNS, (labels == WICKET) - probs[:, WICKET]


@dataclass
class PlayerForm:
    """Each player's residuals since the training seasons, match by match (`table`: role, player, date, n,
    runs, wicket, the last two less the league's mean over the same balls), and the tilt they give."""

    table: pd.DataFrame
    balls: float = FORM_BALLS
    weights: tuple[float, float, float, float] = FORM_WEIGHTS

    @classmethod
    def from_scored(
        cls,
        scored: pd.DataFrame,
        dates: pd.Series,
        balls: float = FORM_BALLS,
        weights: tuple[float, float, float, float] = FORM_WEIGHTS,
    ) -> PlayerForm:
        """From the model's scored balls of matches it was not trained on (`batter`, `bowler`, `match_id`, the
        class probabilities and the outcome); `dates`: match_id -> date."""
        runs, wicket = residuals(scored)
        match = scored["match_id"].astype(str).to_numpy()
        balls_frame = pd.DataFrame({"match_id": match, "runs": runs, "wicket": wicket})
        league = balls_frame.groupby("match_id")[["runs", "wicket"]].transform("mean")
        excess = balls_frame.assign(runs=runs - league["runs"].to_numpy(), wicket=wicket - league["wicket"].to_numpy())
        parts = []
        for role in ROLES:
            per = (
                excess.assign(player=scored[role].astype(str).to_numpy())
                .groupby(["player", "match_id"])
                .agg(n=("runs", "size"), runs=("runs", "sum"), wicket=("wicket", "sum"))
                .reset_index()
            )
            parts.append(per.assign(role=role))
        table = pd.concat(parts, ignore_index=True)
        table["date"] = table["match_id"].map(_by_text(dates))
        if table["date"].isna().any():
            raise ValueError(
                f"no date for match(es) {sorted(table.loc[table['date'].isna(), 'match_id'].unique())[:5]}"
            )
        return cls(table[["role", "player", "match_id", "date", "n", "runs", "wicket"]], balls, tuple(weights))

    def forms(self, role: str, players, date) -> np.ndarray:
        """(players, 2) each player's form in runs and wickets as `role` before `date`: his matches dated
        strictly before it, shrunk by `balls` (zeros for a player without any)."""
        t = self.table
        before = t[(t["role"] == role) & (t["date"] < pd.Timestamp(date))]
        sums = before.groupby("player")[["n", "runs", "wicket"]].sum()
        sums = sums.reindex([str(p) for p in players], fill_value=0.0)
        return sums[["runs", "wicket"]].to_numpy(np.float64) / (sums[["n"]].to_numpy(np.float64) + self.balls)

    def offsets(self, role: str, players, date) -> np.ndarray:
        """(players, classes) the class offsets each player's form as `role` adds to a ball's log-probabilities."""
        w_runs, w_wicket = self.weights[:2] if role == "batter" else self.weights[2:]
        f = self.forms(role, players, date)
        out = w_runs * f[:, [0]] * RUN_DIRECTION[None, :]
        out[:, WICKET] += w_wicket * f[:, 1]
        return out

    def ball_forms(self, balls: pd.DataFrame, dates: pd.Series) -> np.ndarray:
        """(balls, 4) each ball's batter's and bowler's forms (runs, wicket) before its match's date (`dates`:
        match_id -> date)."""
        day = balls["match_id"].astype(str).map(_by_text(dates))
        if day.isna().any():
            raise ValueError(
                f"no date for match(es) {sorted(balls.loc[day.isna(), 'match_id'].astype(str).unique())[:5]}"
            )
        cols = []
        for role in ROLES:
            f = np.zeros((len(balls), 2))
            for date, rows in day.groupby(day.to_numpy(), sort=False).indices.items():
                f[rows] = self.forms(role, balls[role].iloc[rows].astype(str), date)
            cols.append(f)
        return np.concatenate(cols, axis=1)

    def tilt(self, scored: pd.DataFrame, dates: pd.Series) -> pd.DataFrame:
        """`scored` (balls with match_id, batter, bowler and the class probabilities) with each ball tilted by
        its players' forms before its match's date (`dates`: match_id -> date), renormalised."""
        log_p = np.log(np.clip(scored[list(PROB_COLUMNS)].to_numpy(np.float64), 1e-12, 1.0))
        moved = log_p + shift(self.ball_forms(scored, dates), np.asarray(self.weights))
        moved = np.exp(moved - logsumexp(moved, axis=1, keepdims=True))
        return scored.assign(**{c: moved[:, i] for i, c in enumerate(PROB_COLUMNS)})


def _by_text(dates: pd.Series) -> pd.Series:
    out = dates.copy()
    out.index = out.index.astype(str)
    return out


def shift(f: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(balls, classes) the log-probability shift of forms f (balls, 4) with weights w (4,)."""
    out = (f[:, [0]] * w[0] + f[:, [2]] * w[2]) * RUN_DIRECTION[None, :]
    out[:, WICKET] += f[:, 1] * w[1] + f[:, 3] * w[3]
    return out


def ball_losses(w: np.ndarray, log_p: np.ndarray, labels: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Each ball's log loss with its distribution tilted by the forms f with weights w."""
    z = log_p + shift(f, w)
    return -(z[np.arange(len(labels)), labels] - logsumexp(z, axis=1))


def fit_weights(log_p: np.ndarray, labels: np.ndarray, f: np.ndarray) -> np.ndarray:
    """The four weights that minimise the mean log loss of the tilted distributions."""
    return minimize(lambda w: float(ball_losses(w, log_p, labels, f).mean()), np.zeros(4), method="L-BFGS-B").x
