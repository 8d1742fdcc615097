"""The yardsticks of the win probability before the first ball (`before_eval`), fitted on the matches through a
season and read as of each match's day:

- `logistic`: a logistic regression on the two sides' records as of the day: the batting strength of each
  XI's first seven in its batting order (runs and dismissals a ball above what their competitions' mix
  expected, shrunk by 200 balls), the bowling strength of its six most used bowlers (runs conceded and wickets
  a ball the same way, weighted by their balls), and whether the chasing side won the toss.
- `elo`: an Elo rating of the teams from every earlier match's result (the chasing side's edge and the scale
  fitted by a logistic regression on the rating gap; the K factor and how much of a rating a side carries
  into a new season chosen on the training matches' log loss).
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cricket_attn.data.histories import days
from cricket_attn.data.records import RecordBook
from cricket_attn.laws import OUTCOME_INDEX, OUTCOME_RUNS
from cricket_attn.metrics import binary_log_loss
from cricket_attn.simulation.before import listed_players
from cricket_attn.simulation.setup import batting_order

FEATURES = ("bat_runs", "bat_outs", "bowl_runs", "bowl_wickets")  # each the chasing side's minus the other's
TOP_BATTERS, TOP_BOWLERS = 7, 6
SHRINK_BALLS = 200.0  # a player's runs or wickets above expected a ball, shrunk towards 0 by this many balls
ELO_K = (2.0, 4.0, 8.0, 16.0, 32.0)
ELO_CARRY = (0.5, 0.75, 1.0)  # the share of a side's distance from 1500 it keeps into a new season
MIN_TRAIN = 10  # matches won or lost (by both sides) for the baselines' fit: a guard, far from enough to be good


def _players(matches: pd.DataFrame, games: pd.DataFrame, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each game's `side` XI in its batting order (`setup.batting_order`): the players' keys (a registry id, else
    the name, as `entity_key`), each one's game (row of `games`) and place in the order."""
    listed = listed_players(matches[matches["match_id"].astype(str).isin(set(games["match_id"]))])
    xis = listed.groupby(["match_id", "team"], sort=False)["key"].agg(list)
    keys, game, place = [], [], []
    for i, (match_id, team) in enumerate(zip(games["match_id"], games[side])):
        xi = batting_order(xis[(match_id, team)])
        keys += xi
        game += [i] * len(xi)
        place += list(range(len(xi)))
    return np.array(keys, dtype=object), np.array(game), np.array(place)


def side_strengths(book: RecordBook, matches: pd.DataFrame, games: pd.DataFrame, side: str) -> pd.DataFrame:
    """For each game, `side`'s batting and bowling strength from its XI's records before the day (FEATURES
    without the difference)."""
    keys, game, place = _players(matches, games, side)
    day = days(games["date"])[game]
    wicket = OUTCOME_INDEX["wicket"]

    def above(role: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r = book.before(role, keys, day)
        shrink = r.balls + SHRINK_BALLS
        runs = (r.observed @ OUTCOME_RUNS - r.expected @ OUTCOME_RUNS) / shrink
        return runs, (r.observed[:, wicket] - r.expected[:, wicket]) / shrink, r.balls

    bat_runs, bat_outs, _ = above("batter")
    bowl_runs, bowl_wickets, bowl_balls = above("bowler")
    players = pd.DataFrame(
        {
            "game": game,
            "place": place,
            "bat_runs": bat_runs,
            "bat_outs": bat_outs,
            "bowl_runs": bowl_runs,
            "bowl_wickets": bowl_wickets,
            "bowl_balls": bowl_balls,
        }  # fmt: skip
    )
    batting = players[players["place"] < TOP_BATTERS].groupby("game")[["bat_runs", "bat_outs"]].mean()
    bowlers = players.sort_values(["game", "bowl_balls"], ascending=[True, False]).groupby("game").head(TOP_BOWLERS)
    weight = bowlers["bowl_balls"] + 1.0  # a side of newcomers: an even mean of zeros
    bowling = (
        bowlers[["bowl_runs", "bowl_wickets"]]
        .mul(weight, axis=0)
        .groupby(bowlers["game"])
        .sum()
        .div(weight.groupby(bowlers["game"]).sum(), axis=0)
    )
    return batting.join(bowling).reindex(range(len(games)))


def record_features(book: RecordBook, matches: pd.DataFrame, games: pd.DataFrame) -> np.ndarray:
    """(games, 5): FEATURES, the chasing side's minus the side batting first's, and whether the chasing side won
    the toss."""
    diff = side_strengths(book, matches, games, "chasing") - side_strengths(book, matches, games, "first")
    return np.column_stack([diff[list(FEATURES)].to_numpy(dtype=float), games["chasing_won_toss"].to_numpy()])


def elo_gaps(games: pd.DataFrame, k: float, carry: float) -> np.ndarray:
    """The chasing side's rating minus the side batting first's before each game (games in date order; each
    side starts at 1500 and keeps `carry` of its distance from 1500 into a new season)."""
    rating: dict[str, float] = {}
    season_of: dict[str, int] = {}
    gaps = np.empty(len(games))
    for i, (first, chasing, season, won) in enumerate(
        zip(games["first"], games["chasing"], games["season"], games["won"])
    ):
        for team in (first, chasing):
            if season_of.get(team, season) != season:
                rating[team] = 1500.0 + carry * (rating[team] - 1500.0)
            season_of[team] = season
        a, b = rating.get(chasing, 1500.0), rating.get(first, 1500.0)
        gaps[i] = a - b
        expected = 1 / (1 + 10 ** (-(a - b) / 400))
        rating[chasing], rating[first] = a + k * (won - expected), b - k * (won - expected)
    return gaps


class BeforeBaselines:
    """The logistic model on records and the Elo rating, fitted on the games of seasons up to `train_until`
    (`games`: every game of `before_matches`, in date order, earlier games feeding the ratings)."""

    def __init__(self, book: RecordBook, matches: pd.DataFrame, games: pd.DataFrame, train_until: int):
        self.book, self.matches = book, matches
        train = (games["season"] <= train_until).to_numpy() & (games["won"] != 0.5).to_numpy()
        y = games["won"].to_numpy()[train]
        if train.sum() < MIN_TRAIN or len(set(y)) < 2:
            raise ValueError(
                f"--train-until {train_until}: {train.sum()} matches won or lost to fit the baselines on "
                f"(at least {MIN_TRAIN}, some won by each side)"
            )
        self.logistic = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        self.logistic.fit(record_features(book, matches, games[train]), y)
        best = None
        for k, carry in product(ELO_K, ELO_CARRY):
            gaps = elo_gaps(games, k, carry)[:, None]
            fit = LogisticRegression().fit(gaps[train], y)
            loss = binary_log_loss(fit.predict_proba(gaps[train])[:, 1], y, 1e-6).mean()
            if best is None or loss < best[0]:
                best = (loss, k, carry, fit)
        _, self.k, self.carry, self.elo = best

    def probabilities(self, games: pd.DataFrame, scored: np.ndarray) -> dict[str, np.ndarray]:
        """The chasing side's chance in the `scored` games (a mask over `games`, which hold every earlier game
        for the ratings)."""
        gaps = elo_gaps(games, self.k, self.carry)[scored, None]
        features = record_features(self.book, self.matches, games[scored])
        return {"logistic": self.logistic.predict_proba(features)[:, 1], "elo": self.elo.predict_proba(gaps)[:, 1]}
