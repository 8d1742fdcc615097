"""What a wicket costs the batting side in runs, by when it falls: the runs its innings can still expect
with one wicket more down, against as many as there were, from the same ball on.

The runs still to come from a state (legal balls left `b`, wickets down `w`) take the Duckworth-Lewis form,
Z * F(w) * (1 - exp(-k b / F(w))): with few balls left a side scores at the same rate whatever its wickets
(k Z runs a ball), with many it is held back by the wickets it has left (F(0) = 1, falling with each
wicket down, F(10) = 0: all out). Fitted by least squares (scipy) on every ball of the first innings of the
training seasons against the runs its innings still made (not an innings stopped short of its overs with
wickets in hand: rain or a reduced match, whose balls left are not what its batters had); eleven numbers, so
no state is too rare to have a price (a table of means has five 30-balls-left, six-down innings in a
season). The cost of a wicket is never below zero: more wickets down never leave more runs to come. In a
chase the runs to come are worth no more than the runs still needed: a wicket with six to get costs at most
six.

IPL 2008-2023 (1,002 first innings played out, 124,163 balls): the first wicket of an innings costs 10.9
runs, the fourth after ten overs 9.7, the sixth with five overs left 5.8, any wicket off the last ball
nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from cricket_attn.data.features import match_state
from cricket_attn.laws import MAX_WICKETS, innings_over


@dataclass(frozen=True)
class WicketCost:
    """Runs still to come Z * F(w) * (1 - exp(-k b / F(w))) and what a wicket costs by the state it falls in."""

    z: float  # runs to come with every ball and wicket left, in the limit of many balls
    k: float  # runs a ball with few balls left, over z
    f: tuple[float, ...]  # F(0..10): 1, falling, 0

    @classmethod
    def fit(cls, deliveries: pd.DataFrame) -> WicketCost:
        """On every ball of the regular first innings of `deliveries` (the training seasons')."""
        d = deliveries[(deliveries["innings"] == 1) & ~deliveries["is_super_over"].astype(bool)]
        if d.empty:
            raise ValueError("no first innings among the deliveries to learn what a wicket costs from")
        d = d.reset_index(drop=True)
        state = match_state(d)
        innings = d.groupby(["match_id", "innings"], sort=False, observed=True)
        total = innings["runs_total"].transform("sum")
        # An innings that ended with balls and wickets to spare (not over by the Laws after its last ball, a first
        # innings chasing nothing) was stopped, not played out.
        last = innings.cumcount(ascending=False).eq(0).to_numpy()
        legal_after = state["legal_balls_before"] + d["is_legal"].astype(np.int64)
        wickets_after = state["wickets_before"] + d["wicket_count"]
        balls = state["legal_balls_before"] + state["balls_left"]
        spare = ~innings_over(0, wickets_after, legal_after, balls, math.inf)
        stopped = (
            pd.Series(last & spare.to_numpy(), index=d.index)
            .groupby([d["match_id"], d["innings"]], sort=False, observed=True)
            .transform("any")
            .to_numpy()
        )
        to_come = (total - state["runs_before"]).to_numpy(np.float64)[~stopped]
        balls = state["balls_left"].to_numpy(np.float64)[~stopped]
        down = state["wickets_before"].to_numpy(np.int64).clip(0, MAX_WICKETS)[~stopped]
        if not len(to_come):
            raise ValueError("no first innings played out among the deliveries to learn what a wicket costs from")
        start = np.r_[to_come.mean() * 1.5, 1.0 / balls.max(initial=1.0), np.full(MAX_WICKETS - 1, 0.8)]
        # F(w) as the product of the first w ratios, each in [0, 1]: never rising with a wicket down.
        fitted = least_squares(
            lambda p: cls._from(p).runs_to_come(balls, down) - to_come,
            start,
            bounds=(np.zeros(len(start)), np.r_[np.inf, np.inf, np.ones(MAX_WICKETS - 1)]),
        )
        return cls._from(fitted.x)

    @classmethod
    def _from(cls, p: np.ndarray) -> WicketCost:
        return cls(float(p[0]), float(p[1]), tuple(np.r_[1.0, np.cumprod(p[2:]), 0.0].tolist()))

    def runs_to_come(self, balls_left: np.ndarray, wickets_down: np.ndarray) -> np.ndarray:
        """The runs an innings can still expect with `balls_left` legal balls and `wickets_down` wickets down."""
        f = np.asarray(self.f)[np.clip(wickets_down, 0, MAX_WICKETS)]
        safe = np.where(f > 0, f, 1.0)
        return np.where(f > 0, self.z * f * -np.expm1(-self.k * np.asarray(balls_left, np.float64) / safe), 0.0)

    def cost(self, d: pd.DataFrame) -> np.ndarray:
        """(N,) what a wicket off each delivery of `d` (regular innings, in play order) costs its side: the
        runs to come after the ball with as many wickets down as before it, minus with one more; in a chase
        each held to the runs still needed after the ball."""
        state = match_state(d)
        after = (state["balls_left"] - d["is_legal"].astype(np.int64).to_numpy()).clip(lower=0).to_numpy()
        down = state["wickets_before"].to_numpy(np.int64)
        needed = (state["runs_needed"] - d["runs_total"].to_numpy()).clip(lower=0).to_numpy(np.float64)
        cap = np.where(state["is_chase"].to_numpy() > 0, needed, np.inf)
        held = [np.minimum(self.runs_to_come(after, w), cap) for w in (down, down + 1)]
        return np.maximum(held[0] - held[1], 0.0)  # (equal F's differ in their last bits)

    def to_dict(self) -> dict:
        return {"z": self.z, "k": self.k, "f": list(self.f)}
