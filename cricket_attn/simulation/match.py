"""Projections for real matches: from chosen points of each innings, simulate to the end of the match.

A point of an innings is the state before one of its deliveries (by default the first ball of every over),
or after its last delivery for an innings still in progress. From a point of the first innings the rest of
it is simulated, then the chase of each simulated total + 1; from a point of the chase, the rest of the
chase. A tie counts half a win for the chasing side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from cricket_attn.simulation.rollout import InningsEnd, Simulator
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.state import MAX_WICKETS, InningsSetup, InningsState, replay, squads

QUANTILE_LEVELS = (0.1, 0.5, 0.9)
PROJECTION_COLUMNS = (
    "match_id", "innings", "batting_team", "delivery_index", "over", "ball", "runs", "wickets", "legal_balls",
    "target", "projected_total", "projected_total_q10", "projected_total_q50", "projected_total_q90",
    "win_probability", "win_probability_se", "sims",
)  # fmt: skip


@dataclass
class Point:
    """The state before delivery `index` of an innings (index = its length: after the last ball)."""

    index: int
    state: InningsState


class StateError(ValueError):
    """A match state the rules forbid; the message names the match and the field."""


def check_innings(innings: pd.DataFrame, setup: InningsSetup, match_id: str, number: int) -> None:
    """Refuse a real innings no simulation can continue: more than 10 wickets, a chase without a target,
    more legal balls than the innings has (an over miscounted by the umpire is allowed)."""
    if innings.empty:
        return
    wickets = int(innings["wicket_count"].sum())
    if wickets > MAX_WICKETS:
        raise StateError(f"match {match_id}: innings {number}: wicket_count adds up to {wickets} wickets (at most 10)")
    if setup.chase != (number == 2):
        field = "target_runs" if number == 2 else "target_runs (set on the first innings)"
        raise StateError(f"match {match_id}: innings {number}: {field}: "
                         f"{'a chase without a target' if number == 2 else 'a first innings with a target'}")
    legal = int(innings["is_legal"].sum())
    if legal > setup.balls + setup.balls_per_over:
        raise StateError(f"match {match_id}: innings {number}: is_legal: {legal} legal balls in an innings of "
                         f"{setup.balls}")


def over_starts(innings: pd.DataFrame) -> list[int]:
    """The index of each over's first delivery."""
    over = innings["over"].to_numpy()
    return [0, *np.flatnonzero(over[1:] != over[:-1]) + 1] if len(over) else []


def innings_points(sim: Simulator, setup: InningsSetup, innings: pd.DataFrame, indexes: list[int],
                   target: float | None) -> list[Point]:
    """One-simulation states of a real innings before each delivery in `indexes` (len(innings): after all)."""
    wanted = set(indexes)
    points = []

    def keep(i, state, by_laws):
        if i in wanted:
            points.append(Point(i, state.clone()))

    state = replay(sim.start(setup, 1, target), innings, keep)
    if len(innings) in wanted:
        points.append(Point(len(innings), state))
    return points


def chase_setup(first: InningsSetup, chase: pd.DataFrame, matches: pd.DataFrame | None, match_id,
                batting_team: str, bowling_team: str, balls: int) -> InningsSetup:
    """The second innings' setup: from its deliveries if it has begun, else from the listed sides."""
    if len(chase):
        return InningsSetup.from_table(chase, matches)
    batting, bowling = squads(matches, match_id, batting_team, bowling_team)
    return InningsSetup(batting, bowling, first.venue, first.season, first.match_type, first.balls_per_over,
                        balls, chase=True)


def chase_outcome(end: InningsEnd, target: torch.Tensor) -> torch.Tensor:
    """1 for a chase that reached its target, 0.5 for a tie (one run short), 0 otherwise."""
    runs = end.runs.double()
    return torch.where(runs >= target, 1.0, torch.where(runs == target - 1, 0.5, 0.0))


def simulate_points(sim: Simulator, points: list[Point], innings: pd.DataFrame, team: str, date, n: int,
                    generator: torch.Generator) -> InningsEnd:
    """Each point's n simulations to the end of its innings, point after point ((len(points) * n,) tensors)."""
    caches = sim.encode_innings(innings)
    lengths = torch.tensor([p.index for p in points])
    rows = torch.arange(len(points)).repeat_interleave(n)
    caches = [c.prefixes(lengths).rows(rows) if c.length else c for c in caches]
    state = InningsState.stack([p.state for p in points]).take(rows)
    bowlers = BowlerChoice.for_innings(state, sim.usage, team, date)
    return sim.roll(state, caches, bowlers, generator)


def project_match(sim: Simulator, deliveries: pd.DataFrame, matches: pd.DataFrame | None = None, n: int = 100,
                  seed: int = 0, every_ball: bool = False) -> pd.DataFrame:
    """PROJECTION_COLUMNS for one match's regular innings (a deliveries table of one match), one row per point."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    if d.empty:
        return pd.DataFrame(columns=list(PROJECTION_COLUMNS))
    generator = torch.Generator().manual_seed(seed)
    first_row = d.iloc[0]
    match_id, date = str(first_row["match_id"]), first_row["date"]
    first, chase = d[d["innings"] == 1], d[d["innings"] == 2]
    setup1 = InningsSetup.from_table(first, matches)
    team1, team2 = str(first_row["batting_team"]), str(first_row["bowling_team"])
    setup2 = chase_setup(setup1, chase, matches, match_id, team2, team1, setup1.balls)
    check_innings(first, setup1, match_id, 1)
    check_innings(chase, setup2, match_id, 2)
    rows = []

    def indexes(inn: pd.DataFrame, open_: bool) -> list[int]:
        chosen = list(range(len(inn))) if every_ball else over_starts(inn)
        return chosen + [len(inn)] if open_ and len(inn) not in chosen else chosen

    # The first innings: its rest, then the chase of each simulated total.
    first_open = chase.empty and not _finished(first, setup1, None)
    points = innings_points(sim, setup1, first, indexes(first, first_open), None)
    if points:
        end1 = simulate_points(sim, points, first, team2, date, n, generator)
        target = end1.runs.double() + 1
        chasing = sim.start(setup2, len(target), target)
        end2 = sim.roll(chasing, sim.new_caches(), BowlerChoice.for_innings(chasing, sim.usage, team1, date), generator)
        wins = chase_outcome(end2, target)
        rows += _rows(points, first, match_id, 1, team1, end1, wins, n, None)
    # The chase.
    if len(chase) or (not first_open and len(first)):
        target = float(chase["target_runs"].iloc[0]) if len(chase) else float(first["runs_total"].sum() + 1)
        chase_open = not _finished(chase, setup2, target)
        points = innings_points(sim, setup2, chase, indexes(chase, chase_open), target)
        if points:
            end2 = simulate_points(sim, points, chase, team1, date, n, generator)
            wins = chase_outcome(end2, torch.tensor(target, dtype=torch.float64))
            rows += _rows(points, chase, match_id, 2, team2, end2, wins, n, target)
    return pd.DataFrame(rows, columns=list(PROJECTION_COLUMNS))


def _finished(innings: pd.DataFrame, setup: InningsSetup, target: float | None) -> bool:
    """The real innings is over: all out, out of balls or the target reached (or it has not begun)."""
    if innings.empty:
        return False
    runs, wickets = innings["runs_total"].sum(), innings["wicket_count"].sum()
    return bool(wickets >= 10 or innings["is_legal"].sum() >= setup.balls or (target is not None and runs >= target))


def _rows(points: list[Point], innings: pd.DataFrame, match_id: str, number: int, team: str, end: InningsEnd,
          wins: torch.Tensor, n: int, target: float | None) -> list[dict]:
    totals = end.runs.double().view(len(points), n)
    wins = wins.view(len(points), n)
    out = []
    for p, total, win in zip(points, totals, wins):
        s = p.state
        row = innings.iloc[p.index] if p.index < len(innings) else None
        q = np.quantile(total.numpy(), QUANTILE_LEVELS)
        out.append({
            "match_id": match_id, "innings": number, "batting_team": team,
            "delivery_index": p.index, "over": int(s.over[0]) if row is None else int(row["over"]),
            "ball": int(s.legal_in_over[0]) + 1 if row is None else int(row["ball_in_over"]),
            "runs": int(s.runs[0]), "wickets": int(s.wickets[0]), "legal_balls": int(s.legal[0]), "target": target,
            "projected_total": float(total.mean()), "projected_total_q10": q[0], "projected_total_q50": q[1],
            "projected_total_q90": q[2], "win_probability": float(win.mean()),
            "win_probability_se": float(win.std() / np.sqrt(n)) if n > 1 else float("nan"), "sims": n,
        })  # fmt: skip
    return out
