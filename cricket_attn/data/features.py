"""What is known before each ball is bowled: the match state, and players' shrunk outcome rates.

Every feature of delivery t uses only deliveries before t in its innings (or, for a chase, the
target set by the first innings), plus who bats and bowls ball t. Rates are fitted on training
deliveries only. Shared by the transformer's sequences and the tabular baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cricket_attn.data.cricsheet import OUTCOMES

N_CLASSES = len(OUTCOMES)
RATE_COLUMNS = ("batter", "bowler", "venue")  # whose outcome rates the models get
_OUT = {name: i for i, name in enumerate(OUTCOMES)}

# Numeric match-state columns made by `match_state`, in order.
STATE_COLUMNS = (
    "runs_before", "wickets_before", "legal_balls_before", "balls_left", "run_rate",
    "is_chase", "runs_needed", "required_rate", "target",
    "batter_runs_before", "batter_balls_before",
    "bowler_balls_before", "bowler_runs_before", "bowler_wickets_before",
    "partnership_runs", "partnership_balls", "after_noball",
    "last6_runs", "last6_dots", "last6_boundaries", "last6_wickets", "last6_extras",
    "ball_in_over", "season_index",
)  # fmt: skip


def innings_key(d: pd.DataFrame) -> np.ndarray:
    """An integer per (match, innings), in table order."""
    return d.groupby(["match_id", "innings"], sort=False, observed=True).ngroup().to_numpy()


def innings_balls(d: pd.DataFrame) -> np.ndarray:
    """Legal balls each delivery's innings may last: a chase has its (possibly DLS-reduced) target
    overs, else the scheduled overs (20 when the file gives neither). Overs like 12.3 are 12 overs
    and 3 balls."""
    overs = d["target_overs"].astype("Float64").fillna(d["scheduled_overs"].astype("Float64")).fillna(20.0)
    overs = overs.to_numpy(dtype=float)
    return np.floor(overs) * d["balls_per_over"].to_numpy() + np.round((overs - np.floor(overs)) * 10)


def _before(values: pd.Series, groups: Sequence) -> pd.Series:
    """Sum of `values` over earlier rows of the same group (exclusive cumulative sum)."""
    return values.groupby(groups, sort=False, observed=True).cumsum() - values


def bowler_wickets(d: pd.DataFrame) -> np.ndarray:
    """Whether each delivery's wicket is the bowler's: a wicket, unless it is a run out."""
    return (d["outcome"].eq("wicket") & ~d["wicket_kind"].astype(str).str.contains("run out")).to_numpy()


def match_state(d: pd.DataFrame, last_season: int | None = None) -> pd.DataFrame:
    """Pre-ball match state of every delivery (columns STATE_COLUMNS).

    `last_season` caps `season_index`: seasons after the last training season look like it,
    so the models never extrapolate a trend they have not seen.
    """
    inn = innings_key(d)
    is_wide = d["runs_wides"].gt(0) | d["outcome"].eq("wide")
    legal = d["is_legal"].astype(np.int64)
    runs = d["runs_total"].astype(np.int64)
    wickets = d["wicket_count"].astype(np.int64)
    out = pd.DataFrame(index=d.index)
    out["runs_before"] = _before(runs, inn)
    out["wickets_before"] = _before(wickets, inn)
    out["legal_balls_before"] = d["legal_ball_index"]

    bpo = d["balls_per_over"].to_numpy()
    out["balls_left"] = np.maximum(innings_balls(d) - d["legal_ball_index"].to_numpy(), 0)
    out["run_rate"] = out["runs_before"] / np.maximum(out["legal_balls_before"], 1) * bpo

    target = d["target_runs"].astype("Float64").fillna(0).to_numpy(dtype=float)
    chase = target > 0
    out["is_chase"] = chase.astype(float)
    out["runs_needed"] = np.where(chase, target - out["runs_before"], 0.0)
    out["required_rate"] = np.where(chase, np.clip(out["runs_needed"] / np.maximum(out["balls_left"], 1) * bpo, -6, 36), 0.0)
    out["target"] = target

    batter_key = [inn, d["batter"].astype(str).to_numpy()]
    out["batter_runs_before"] = _before(d["runs_batter"].astype(np.int64), batter_key)
    out["batter_balls_before"] = _before((~is_wide).astype(np.int64), batter_key)  # a wide is not faced
    bowler_key = [inn, d["bowler"].astype(str).to_numpy()]
    out["bowler_balls_before"] = _before(legal, bowler_key)
    # Byes and leg-byes are not charged to the bowler.
    conceded = d["runs_batter"] + d["runs_wides"] + d["runs_noballs"]
    out["bowler_runs_before"] = _before(conceded.astype(np.int64), bowler_key)
    out["bowler_wickets_before"] = _before(pd.Series(bowler_wickets(d).astype(np.int64), index=d.index), bowler_key)

    stand = [inn, out["wickets_before"].to_numpy()]
    out["partnership_runs"] = _before(runs, stand)
    out["partnership_balls"] = _before(legal, stand)

    # A no-ball is followed by a free hit: the batter cannot be out bowled or caught.
    prev_noball = d["outcome"].eq("noball").groupby(inn, sort=False).shift(1, fill_value=False)
    out["after_noball"] = prev_noball.astype(float)

    code = d["outcome"].cat.codes.to_numpy()
    recent = {
        "last6_runs": runs,
        "last6_dots": pd.Series(code == _OUT["dot"], index=d.index).astype(np.int64),
        "last6_boundaries": pd.Series((code == _OUT["4"]) | (code == _OUT["6"]), index=d.index).astype(np.int64),
        "last6_wickets": wickets,
        "last6_extras": pd.Series((code == _OUT["wide"]) | (code == _OUT["noball"]), index=d.index).astype(np.int64),
    }
    for name, values in recent.items():
        so_far = _before(values, inn)
        six_ago = so_far.groupby(inn, sort=False).shift(6, fill_value=0)
        out[name] = (so_far - six_ago).to_numpy()

    out["ball_in_over"] = d["ball_in_over"]
    season = d["season"].to_numpy()
    if last_season is not None:
        season = np.minimum(season, last_season)
    out["season_index"] = season - 2008
    return out[list(STATE_COLUMNS)].astype(np.float32)


def match_folds(d: pd.DataFrame, n_folds: int, seed: int = 0) -> np.ndarray:
    """A fold number in 0..n_folds-1 per row, the same for every ball of a match: held-out folds are
    whole matches, so no row is fitted on balls of its own match."""
    matches = d["match_id"].astype(str).unique()
    fold_of = dict(zip(matches, np.random.default_rng(seed).permutation(len(matches)) % n_folds))
    return d["match_id"].astype(str).map(fold_of).to_numpy()


@dataclass
class OutcomeRates:
    """Each player's (or venue's) outcome distribution, shrunk towards the overall one.

    rate = (counts + strength * prior) / (n + strength); given as log(rate / prior), plus
    log(1 + n) so a model can tell a known player from a newcomer. Keys never seen get the prior.
    """

    column: str
    strength: float = 200.0
    prior: np.ndarray = field(default=None, repr=False)
    counts: pd.DataFrame = field(default=None, repr=False)

    def fit(self, d: pd.DataFrame) -> OutcomeRates:
        codes = d["outcome"].cat.codes.to_numpy()
        keys = d[self.column].astype(str).to_numpy()
        table = pd.crosstab(keys, codes).reindex(columns=range(N_CLASSES), fill_value=0)
        self.counts = table.astype(np.float64)
        total = table.to_numpy().sum(axis=0)
        self.prior = (total + 1) / (total.sum() + N_CLASSES)
        return self

    def transform(self, d: pd.DataFrame) -> np.ndarray:
        keys = d[self.column].astype(str).to_numpy()
        counts = self.counts.reindex(keys).fillna(0).to_numpy()
        n = counts.sum(axis=1, keepdims=True)
        rate = (counts + self.strength * self.prior) / (n + self.strength)
        return np.hstack([np.log(rate / self.prior), np.log1p(n)]).astype(np.float32)

    def out_of_fold(self, d: pd.DataFrame, n_folds: int = 5, seed: int = 0) -> np.ndarray:
        """Rates for the rows of `d` from the other folds' matches of `d`, so no row sees its own outcome."""
        fold = match_folds(d, n_folds, seed)
        out = np.zeros((len(d), N_CLASSES + 1), dtype=np.float32)
        for k in range(n_folds):
            held = fold == k
            part = OutcomeRates(self.column, self.strength).fit(d[~held])
            out[held] = part.transform(d[held])
        return out
