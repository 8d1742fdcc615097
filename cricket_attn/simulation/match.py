"""Projections for real matches: from chosen points of each innings, simulate to the end of the match.

A point of an innings is the state before one of its deliveries (by default the first ball of every over),
or after its last delivery for an innings still in progress. From a point of the first innings the rest of
it is simulated, then the chase of each simulated total + 1; from a point of the chase, the rest of the
chase. A tie counts half a win for the chasing side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import opening_powerplay
from cricket_attn.laws import MAX_WICKETS, innings_over
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.lines import (
    FIGURES,
    LINE_COLUMNS,
    QUANTILE_LEVELS,
    Side,
    innings_draws,
    nothing,
    over_players,
    repeated,
    side_draws,
    summarise,
)
from cricket_attn.simulation.rollout import InningsEnd, Simulator, roll_in_chunks
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup, registry_ids, squads
from cricket_attn.simulation.state import InningsState, replay

# One row per point simulated. projected_total_se: the mean's Monte Carlo standard error. From a point of the
# first innings, chase_projected_total*: the chase's total after it (simulated from each simulated first innings;
# empty from the chase's points, whose projected_total is the chase's). order_weight: the chance of this order of
# the innings: 1, but before the toss of a match not yet begun (`project_before`) each side's chance to bat
# first, 1/2 (`before.side_chances` gives each side's chance to win over both).
PROJECTION_COLUMNS = (
    "match_id", "innings", "batting_team", "bowling_team", "delivery_index", "over", "ball", "runs", "wickets",
    "legal_balls", "target", "projected_total", "projected_total_q10", "projected_total_q50", "projected_total_q90",
    "projected_total_se", "chase_projected_total", "chase_projected_total_q10", "chase_projected_total_q50",
    "chase_projected_total_q90", "win_probability", "win_probability_se", "sims", "order_weight",
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
        raise StateError(
            f"match {match_id}: innings {number}: {field}: "
            f"{'a chase without a target' if number == 2 else 'a first innings with a target'}"
        )
    legal = int(innings["is_legal"].sum())
    if legal > setup.balls + setup.balls_per_over:
        raise StateError(
            f"match {match_id}: innings {number}: is_legal: {legal} legal balls in an innings of {setup.balls}"
        )


def over_starts(innings: pd.DataFrame) -> list[int]:
    """The index of each over's first delivery."""
    over = innings["over"].to_numpy()
    return [0, *np.flatnonzero(over[1:] != over[:-1]) + 1] if len(over) else []


def innings_points(
    sim: Simulator, setup: InningsSetup, innings: pd.DataFrame, indexes: list[int], target: float | None
) -> list[Point]:
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


def chase_setup(
    first: InningsSetup,
    chase: pd.DataFrame,
    matches: pd.DataFrame | None,
    match_id,
    batting_team: str,
    bowling_team: str,
    balls: int,
) -> InningsSetup:
    """The second innings' setup: from its deliveries if it has begun, else from the listed sides."""
    if len(chase):
        return InningsSetup.from_table(chase, matches)
    batting, bowling = squads(matches, match_id, batting_team, bowling_team)
    return InningsSetup(
        batting,
        bowling,
        first.venue,
        first.season,
        first.match_type,
        first.balls_per_over,
        balls,
        chase=True,
        date=first.date,
        competition=first.competition,
        team_type=first.team_type,
        city=first.city,
        ids={**first.ids, **registry_ids(chase, matches, match_id)},
        # The first innings' opening powerplay (the same rules; not its Power Surge, the batting side's call);
        # a shortened chase's is its own, unknown here: the format's.
        powerplays=opening_powerplay(first.powerplays) if balls == first.balls else "",
    )


def chase_outcome(end: InningsEnd, target: torch.Tensor) -> torch.Tensor:
    """1 for a chase that reached its target, 0.5 for a tie (one run short), 0 otherwise."""
    runs = end.runs.double()
    return torch.where(runs >= target, 1.0, torch.where(runs == target - 1, 0.5, 0.0))


def simulate_points(
    sim: Simulator,
    points: list[Point],
    innings: pd.DataFrame,
    date,
    n: int,
    generator: torch.Generator,
    bowlers: BowlerChoice | None = None,
    keep_states: bool = False,
) -> InningsEnd:
    """Each point's n simulations to the end of its innings, point after point ((len(points) * n,) tensors);
    `bowlers` replaces the bowler rule (a "what if"); `keep_states` keeps each simulation's final state."""
    caches = sim.encode_innings(innings, points[0].state.setup)
    rows = torch.arange(len(points)).repeat_interleave(n)
    seen = torch.tensor([p.index for p in points])[rows]  # each simulation reads its point's real balls, held once
    states = InningsState.stack([p.state for p in points])
    bowlers = bowlers or BowlerChoice.for_innings(states, sim.usage, date)
    return roll_in_chunks(
        sim,
        states,
        rows,
        lambda chunk: [c.share_rows(seen[chunk]) if c.length else c for c in caches],
        bowlers,
        generator,
        keep_states,
    )


def most_states(deliveries: pd.DataFrame, every_ball: bool = False) -> int:
    """The most states one match of `deliveries` is simulated from: each over start (`every_ball`: each ball)
    of each innings and its end; a match before its first ball, one for each side batting first."""
    per_innings = deliveries.groupby(["match_id", "innings"], observed=True)["is_legal"]
    states = (per_innings.size() if every_ball else per_innings.sum() // 6) + 2
    return max(int(states.groupby(level="match_id", observed=True).sum().max()) if len(states) else 0, 2)


@dataclass
class MatchContext:
    """One match as far as it has gone: its innings' deliveries, their setups, the sides and the date."""

    match_id: str
    date: object
    innings: dict[int, pd.DataFrame]  # 1 and 2, either possibly empty
    setups: dict[int, InningsSetup]
    teams: dict[int, str]  # the side batting in each innings

    @classmethod
    def of(cls, deliveries: pd.DataFrame, matches: pd.DataFrame | None) -> MatchContext:
        d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
        if d.empty:
            raise StateError(f"match {deliveries['match_id'].iloc[0] if len(deliveries) else '?'}: no regular innings")
        row = d.iloc[0]
        match_id = str(row["match_id"])
        first, chase = d[d["innings"] == 1].reset_index(drop=True), d[d["innings"] == 2].reset_index(drop=True)
        if first.empty:
            raise StateError(f"match {match_id}: innings: the first innings has no deliveries")
        team1, team2 = str(row["batting_team"]), str(row["bowling_team"])
        setup1 = InningsSetup.from_table(first, matches)
        setup2 = chase_setup(setup1, chase, matches, match_id, team2, team1, setup1.balls)
        check_innings(first, setup1, match_id, 1)
        check_innings(chase, setup2, match_id, 2)
        return cls(match_id, row["date"], {1: first, 2: chase}, {1: setup1, 2: setup2}, {1: team1, 2: team2})

    def target(self) -> float:
        chase = self.innings[2]
        return float(chase["target_runs"].iloc[0]) if len(chase) else float(self.innings[1]["runs_total"].sum() + 1)

    def is_open(self, number: int) -> bool:
        """Innings `number` can go on: not finished, and (the first) no chase begun."""
        if number == 1 and len(self.innings[2]):
            return False
        inn, setup = self.innings[number], self.setups[number]
        if number == 2 and self.is_open(1):
            return False
        return not _finished(inn, setup, self.target() if number == 2 else None)

    def live(self) -> int | None:
        """The innings in progress (or about to begin), None once the match is over."""
        return next((k for k in (1, 2) if self.is_open(k)), None)

    def points(self, sim: Simulator, number: int, indexes: list[int]) -> list[Point]:
        return innings_points(
            sim, self.setups[number], self.innings[number], indexes, self.target() if number == 2 else None
        )

    def simulate(
        self,
        sim: Simulator,
        number: int,
        points: list[Point],
        n: int,
        generator: torch.Generator,
        bowlers: BowlerChoice | None = None,
        then_chase: bool = True,
        keep_states: bool = False,
    ) -> tuple[InningsEnd, torch.Tensor | None]:
        """From points of innings `number`: how each simulated innings ended, and each simulation's result
        for the chasing side (1 won, 0.5 tied, 0 lost); from the first innings the chase is simulated too
        (None without `then_chase`), its ends as the end's `then`. `keep_states`: the ends hold every
        simulation's final state (each player's figures)."""
        end = simulate_points(sim, points, self.innings[number], self.date, n, generator, bowlers, keep_states)
        if number == 2:
            return end, chase_outcome(end, torch.tensor(self.target(), dtype=torch.float64))
        if not then_chase:
            return end, None
        target = end.runs.double() + 1
        chasing = sim.start(self.setups[2], len(target), target)
        rule = BowlerChoice.for_innings(chasing, sim.usage, self.date)
        rows = torch.arange(chasing.n)
        chased = roll_in_chunks(sim, chasing, rows, lambda chunk: sim.new_caches(), rule, generator, keep_states)
        return replace(end, then=chased), chase_outcome(chased, target)


def project_match(
    sim: Simulator,
    deliveries: pd.DataFrame,
    matches: pd.DataFrame | None = None,
    n: int = 100,
    seed: int = 0,
    every_ball: bool = False,
    players: bool = False,
    fantasy: FantasyTable | None = None,
    draws: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame | list[Side]]:
    """PROJECTION_COLUMNS for one match's regular innings (a deliveries table of one match), one row per point.
    With `players`, also each player's line in the match from each point (PLAYER_COLUMNS, a row per player
    and point: his figures so far and in the simulated rest, over the same simulations; his `fantasy`
    points by that table, if given); with `draws` too, the sides' figures draw by draw instead (`lines.Side`)."""
    if deliveries[~deliveries["is_super_over"].astype(bool)].empty:
        empty = pd.DataFrame(columns=list(PROJECTION_COLUMNS))
        return (empty, [] if draws else pd.DataFrame(columns=list(PLAYER_COLUMNS))) if players else empty
    context = MatchContext.of(deliveries, matches)
    return project_context(sim, context, n, seed, every_ball, players, fantasy, draws)


def project_context(
    sim: Simulator,
    ctx: MatchContext,
    n: int,
    seed: int,
    every_ball: bool,
    players: bool,
    fantasy: FantasyTable | None,
    draws: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame | list]:
    """`project_match` of a match as far as it has gone (`MatchContext`). With `draws` (and `players`), the
    players' figures draw by draw in place of their lines: a list of `lines.Side`, two a state (`fantasy` is
    not applied: `FantasyTable.points` takes the draws; `line_rows` makes the lines of them)."""
    generator = torch.Generator().manual_seed(seed)
    rows, lines = [], []
    for number in (1, 2):
        inn = ctx.innings[number]
        if number == 2 and not len(inn) and ctx.live() != 2:
            continue  # the first innings still going (or the match over before the chase)
        chosen = list(range(len(inn))) if every_ball else over_starts(inn)
        if ctx.is_open(number) and len(inn) not in chosen:
            chosen.append(len(inn))  # the state now
        points = ctx.points(sim, number, chosen)
        if points:
            end, wins = ctx.simulate(sim, number, points, n, generator, keep_states=players)
            if players:
                sides = _side_draws(sim, ctx, number, points, end, n)
                lines += sides if draws else line_rows(sides, fantasy)
            rows += _projection_rows(
                points,
                inn,
                ctx.match_id,
                number,
                (ctx.teams[number], ctx.teams[3 - number]),
                end,
                wins,
                n,
                ctx.target() if number == 2 else None,
            )
    projections = pd.DataFrame(rows, columns=list(PROJECTION_COLUMNS))
    if not players:
        return projections
    return projections, lines if draws else pd.DataFrame(lines, columns=list(PLAYER_COLUMNS))


# A player's line from a point of a match: the point (as PROJECTION_COLUMNS name it), then lines.LINE_COLUMNS.
PLAYER_COLUMNS = ("match_id", "innings", "delivery_index", "batting_first", *LINE_COLUMNS, "sims", "order_weight")


def _side_draws(
    sim: Simulator, ctx: MatchContext, number: int, points: list[Point], end: InningsEnd, n: int
) -> list[Side]:
    """Both sides' `Side` from each point's n simulations (`end` with its final states: from the first innings,
    the chase's after it in `end.then`; from the chase, the real first innings before), with what each side's
    players had done in the real balls before the point."""

    def take(draws, k: int):  # point k's simulations
        return {name: v.iloc[k * n : (k + 1) * n].reset_index(drop=True) for name, v in draws.items()}

    chase = innings_draws(end.then.final if number == 1 else end.final)
    if number == 2:
        (over,) = ctx.points(sim, 1, [len(ctx.innings[1])])  # the first innings as it was, ball by ball
        first = innings_draws(over.state)  # one draw
        real = tuple(repeated(d, n) for d in first)
    else:
        simulated = innings_draws(end.final)
    out = []
    for k, p in enumerate(points):
        bat1, bowl1 = real if number == 2 else (take(simulated[0], k), take(simulated[1], k))
        now = innings_draws(p.state)  # the point's innings before it: one draw
        # Each side's figures so far: in the first innings its batting or its bowling alone (`line_rows` gives
        # every player nothing in what he has not done); from the chase, the first innings with the chase so far.
        so_far = (now[0], now[1]) if number == 1 else (side_draws(first[0], now[1]), side_draws(now[0], first[1]))
        point = dict(match_id=ctx.match_id, innings=number, delivery_index=p.index, batting_first=ctx.teams[1])
        # The side batting first bats in the first innings and bowls in the chase; the other the other way.
        out.append(Side(point, ctx.teams[1], side_draws(bat1, take(chase[1], k)), so_far[0]))
        out.append(Side(point, ctx.teams[2], side_draws(take(chase[0], k), bowl1), so_far[1]))
    return out


def line_rows(sides: list[Side], fantasy: FantasyTable | None) -> list[dict]:
    """PLAYER_COLUMNS rows of `sides` as `_side_draws` gives them: each player's line over the draws, `sims`
    their number."""
    out = []
    for side in sides:
        # Every player the draws hold has figures so far, nothing (0, no) where he has done nothing yet: a
        # player of the chase alone, or anyone before the first ball, has his points for playing.
        so_far = over_players({**nothing(FIGURES), **(side.so_far or {})}, list(side.draws["runs"].columns))
        points = fantasy.points(side.draws) if fantasy else None
        table = summarise(side.draws, side.team, points, so_far, fantasy.points(so_far) if fantasy else None)
        out += table.assign(**side.point, sims=len(side.draws["runs"]), order_weight=1.0).to_dict("records")
    return out


def line_table(sides: list[Side], fantasy: FantasyTable | None) -> pd.DataFrame:
    """`line_rows` as a table, PLAYER_COLUMNS."""
    return pd.DataFrame(line_rows(sides, fantasy), columns=list(PLAYER_COLUMNS))


def _finished(innings: pd.DataFrame, setup: InningsSetup, target: float | None) -> bool:
    """The real innings is over: all out, out of balls or the target reached (or it has not begun)."""
    if innings.empty:
        return False
    runs, wickets, legal = innings["runs_total"].sum(), innings["wicket_count"].sum(), innings["is_legal"].sum()
    return bool(innings_over(runs, wickets, legal, setup.balls, math.inf if target is None else target))


def _projection_rows(
    points: list[Point],
    innings: pd.DataFrame,
    match_id: str,
    number: int,
    teams: tuple[str, str],
    end: InningsEnd,
    wins: torch.Tensor,
    n: int,
    target: float | None,
) -> list[dict]:
    """PROJECTION_COLUMNS rows of each point's n simulations (`teams`: batting, bowling)."""
    totals = end.runs.double().view(len(points), n).numpy()
    chases = end.then.runs.double().view(len(points), n).numpy() if end.then is not None else None
    wins = wins.view(len(points), n)
    out = []
    for k, (p, total, win) in enumerate(zip(points, totals, wins)):
        s = p.state
        row = innings.iloc[p.index] if p.index < len(innings) else None
        # The state now: the next ball's over and number (a finished over's next ball opens the next over).
        next_over, next_ball = (
            (int(s.over[0]) + 1, 1) if bool(s.over_complete()[0]) else (int(s.over[0]), int(s.legal_in_over[0]) + 1)
        )
        out.append(
            {
                "match_id": match_id,
                "innings": number,
                "batting_team": teams[0],
                "bowling_team": teams[1],
                "delivery_index": p.index,
                "over": int(row["over"]) if row is not None else next_over,
                "ball": int(row["ball_in_over"]) if row is not None else next_ball,
                "runs": int(s.runs[0]),
                "wickets": int(s.wickets[0]),
                "legal_balls": int(s.legal[0]),
                "target": target,
                **_spread("projected_total", total),
                "projected_total_se": _standard_error(total),
                **(_spread("chase_projected_total", chases[k]) if chases is not None else {}),
                "win_probability": float(win.mean()),
                "win_probability_se": _standard_error(win.numpy()),
                "sims": n,
                "order_weight": 1.0,
            }
        )
    return out


def _spread(name: str, x: np.ndarray) -> dict[str, float]:
    """`name`: the mean of x over simulations, and its 10/50/90% quantiles."""
    quantiles = np.quantile(x, QUANTILE_LEVELS)
    return {name: float(x.mean())} | {f"{name}_q{round(q * 100)}": float(v) for q, v in zip(QUANTILE_LEVELS, quantiles)}


def _standard_error(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
