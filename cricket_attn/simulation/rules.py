"""Who bowls each over of a simulated innings: the quota, no bowler twice in a row, and a documented choice.

The rule: each over goes to one of the bowling side's players who did not bowl the over before and has overs
left in his quota, drawn in proportion to how often he bowled this over (counting the overs either side at
half weight) in his own last `matches` matches before this one (for whichever side: a player who moved
brings his role with him), plus a small `floor` that keeps every eligible player possible (a part-timer, a
debutant). Counting each player's own matches named the real bowler of an IPL over after the first with a
mean log-likelihood of -1.527 in 2024 against -1.702 counting the side's last matches (-1.568 / -1.747 in
2023; docs/analyses/bowler_rule.py, docs/log/2026-11-27.md). Who comes in after a wicket is the state's rule:
the next player in the order the match file lists the side (`InningsState.next_batter`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from cricket_attn.simulation.state import InningsState

# Formats whose bowlers may bowl at most a fifth of the innings' overs (rounded up): 4 of 20 in a T20,
# 10 of 50 in a one-day match, 20 of The Hundred's 100 balls (4 sets of five), 2 of a chase cut to 6 overs.
FIFTH_OF_THE_INNINGS = ("T20", "IT20", "ODI", "ODM")


def quota_overs(match_type: str, balls: int, balls_per_over: int) -> int:
    """The most overs one bowler may bowl in an innings of `balls` legal balls."""
    if match_type not in FIFTH_OF_THE_INNINGS:
        raise ValueError(
            f"match_type {match_type!r}: no bowling quota is known for this format "
            f"(known: {', '.join(FIFTH_OF_THE_INNINGS)})"
        )
    return math.ceil(math.ceil(balls / balls_per_over) / 5)


# Sets of five balls (The Hundred) follow other laws than overs: a bowler may bowl two sets in a row and
# the ends change every ten balls. The simulator plays overs only; predict scores these matches' balls.
SETS_OF_FIVE = 5


def not_simulated(deliveries: pd.DataFrame) -> dict[str, str]:
    """The matches the simulator does not play, each with the reason, naming the match."""
    sets = deliveries.loc[deliveries["balls_per_over"] == SETS_OF_FIVE, "match_id"].astype(str).unique()
    return {
        m: f"match {m}: sets of five balls (The Hundred: a bowler may bowl ten in a row, the ends change every "
        "ten balls) are not simulated; cricket-attn-predict scores its balls"
        for m in sets
    }


@dataclass
class BowlingUsage:
    """Every over of the known matches (its match, over number and bowler) and every player's matches (whoever
    batted or bowled in them): a player's usage is counted from his own last matches, for whichever side."""

    overs: pd.DataFrame
    played: pd.DataFrame  # player, match_id, date: one row per match a player batted or bowled in

    @classmethod
    def build(cls, deliveries: pd.DataFrame) -> BowlingUsage:
        d = deliveries[~deliveries["is_super_over"].astype(bool)]
        first = d.drop_duplicates(["match_id", "innings", "over"])
        overs = pd.DataFrame(
            {
                "match_id": first["match_id"].astype(str).to_numpy(),
                "over": first["over"].to_numpy(),
                "bowler": first["bowler"].astype(str).to_numpy(),
            }
        )
        played = pd.concat(
            [
                d[[role, "match_id", "date"]].set_axis(["player", "match_id", "date"], axis=1)
                for role in ("batter", "non_striker", "bowler")
            ]  # fmt: skip
        ).astype({"player": str, "match_id": str})
        return cls(overs, played.drop_duplicates(["player", "match_id"]).reset_index(drop=True))

    def counts(self, before, players: list[str], n_overs: int, matches: int = 10) -> np.ndarray:
        """(n_overs, players): how many times each player bowled each over number in his own last `matches`
        matches strictly before the date `before`."""
        before = np.datetime64(before)
        earlier = self.played[self.played["player"].isin(set(players)) & (self.played["date"] < before)]
        recent = earlier.sort_values("date", kind="stable").groupby("player").tail(matches)
        mine = self.overs.merge(recent[["player", "match_id"]], left_on=["bowler", "match_id"],
                                right_on=["player", "match_id"])  # fmt: skip
        slot = {p: i for i, p in enumerate(players)}
        table = np.zeros((n_overs, len(players)))
        known = mine["bowler"].isin(slot) & (mine["over"] < n_overs)
        np.add.at(
            table,
            (mine["over"][known].to_numpy(dtype=np.int64), mine["bowler"][known].map(slot).to_numpy(dtype=np.int64)),
            1.0,
        )
        return table


@dataclass
class BowlerChoice:
    """The rule above for one innings: `weights` (overs, bowling slots) and each bowler's quota in overs."""

    weights: torch.Tensor
    quota: int

    @classmethod
    def for_innings(
        cls, state: InningsState, usage: BowlingUsage | None, date, matches: int = 10, floor: float = 0.05
    ) -> BowlerChoice:
        setup = state.setup
        quota = quota_overs(setup.match_type, setup.balls, setup.balls_per_over)
        n_overs = math.ceil(setup.balls / setup.balls_per_over) + 4
        slots = state.bowler_overs.size(1)
        counts = np.zeros((n_overs, slots))
        if usage is not None:
            counts[:, : len(setup.bowling)] = usage.counts(date, setup.bowling, n_overs, matches)
        smoothed = counts.copy()
        smoothed[1:] += 0.5 * counts[:-1]
        smoothed[:-1] += 0.5 * counts[1:]
        return cls(torch.as_tensor(smoothed + floor), quota)

    def probabilities(self, state: InningsState) -> torch.Tensor:
        """(N, bowling slots): the chance each player bowls the next over of each simulation."""
        w = self.weights[state.over.clamp(max=self.weights.size(0) - 1)]  # (N, slots)
        rows = torch.arange(state.n)
        eligible = state.bowler_overs < self.quota
        eligible[rows[state.last_bowler >= 0], state.last_bowler[state.last_bowler >= 0]] = False
        w = w * eligible
        if not bool((w.sum(1) > 0).all()):
            raise ValueError("no bowler is left who may bowl the next over (every player's quota is used)")
        return w / w.sum(1, keepdim=True)

    def choose(self, state: InningsState, generator: torch.Generator | None = None) -> torch.Tensor:
        """(N,) the bowler slot of each simulation's next over."""
        return torch.multinomial(self.probabilities(state), 1, generator=generator)[:, 0]
