"""Each player's line from simulated matches: what every batter and bowler of both sides did in each
simulation (the state's per-slot figures at each innings' end: the real balls so far and the simulated rest),
summed up per player over the simulations.

The simulations are joint draws of the whole match, so one simulation's lines belong together (a batter's
fifty and his partner's duck come from the same draw, and so does the bowling that conceded them):
`innings_draws` and `side_draws` keep them as draws, `summarise` reduces them to each player's mean,
quantiles and chances.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from cricket_attn.data.sequences import UNK
from cricket_attn.simulation.state import InningsState

QUANTILE_LEVELS = (0.1, 0.5, 0.9)
# A batter's figures in a simulation, from the state's slots: runs, balls faced, fours, sixes (boundaries, off a
# no-ball too, as scorecards count them: four runs all run are not a four), out (retired hurt or not out is
# not), came to the crease.
BATTING = {
    "runs": "batter_runs",
    "balls": "batter_faced",
    "fours": "batter_fours",
    "sixes": "batter_sixes",
    "out": "out",
    "bats": "batted",
}
# A bowler's: legal balls bowled, runs conceded (wides and no-balls included, byes not), wickets; "bowls",
# whether he bowled at all, follows from his balls.
BOWLING = {"bowled_balls": "bowler_balls", "conceded": "bowler_runs", "wickets": "bowler_wickets"}
FIGURES = (*BATTING, *BOWLING, "bowls")  # a player's figures in one simulation, as `side_draws` holds them
FLAGS = ("out", "bats", "bowls")  # figures that are yes or no: their mean is a chance
COUNTS = tuple(f for f in FIGURES if f not in FLAGS)  # figures that count: a mean and 10/50/90% quantiles each
# The chances a line gives beside, each a threshold on one figure: P(figure >= threshold).
CHANCES = {"p_30": ("runs", 30), "p_50": ("runs", 50), "p_2_wickets": ("wickets", 2), "p_3_wickets": ("wickets", 3)}
# What a player has done in the real balls before the state (0 before the first ball), beside what is to come.
SO_FAR = ("runs", "balls", "fours", "sixes", "out", "wickets", "bowled_balls", "conceded", "fantasy")
LINE_COLUMNS = (
    "team", "player",
    *(f"{figure}_{stat}" for figure in (*COUNTS, "fantasy") for stat in ("mean", "q10", "q50", "q90")),
    "p_30", "p_50", "p_out", "p_bats", "p_2_wickets", "p_3_wickets", "p_bowls",
    *(f"{figure}_so_far" for figure in SO_FAR),
)  # fmt: skip

Draws = dict[str, pd.DataFrame]  # figure -> one row per simulation, one column per player


class Side(NamedTuple):
    """One side's players in the simulations from one state of a match: the state (`point`, as
    match.PLAYER_COLUMNS name it), the side, their figures draw by draw (`side_draws`) and their figures in the
    real balls before the state (one draw; None before the first ball: nothing yet)."""

    point: dict
    team: str
    draws: Draws
    so_far: Draws | None = None


def innings_draws(state: InningsState) -> tuple[Draws, Draws]:
    """The batting side's BATTING figures and the bowling side's BOWLING figures (and "bowls") at the end of
    every simulation of `state`, an innings' state at its end (as `Simulator.roll(keep_states=True)` gives
    it). The sides' filling slots (the unknown player, where a side lists fewer than eleven) are left out."""
    setup = state.setup
    sides = []
    for figures, players in ((BATTING, setup.batting), (BOWLING, setup.bowling)):
        keep = [i for i, name in enumerate(players) if name != UNK]
        names = [players[i] for i in keep]
        sides.append(
            {figure: pd.DataFrame(getattr(state, a)[:, keep].numpy(), columns=names) for figure, a in figures.items()}
        )
    batting, bowling = sides
    bowling["bowls"] = bowling["bowled_balls"] > 0
    return batting, bowling


def repeated(draws: Draws, n: int) -> Draws:
    """Draws of one simulation (a real innings, over) as n identical ones, to join n simulations of the other."""
    return {k: pd.DataFrame(np.repeat(v.to_numpy(), n, axis=0), columns=v.columns) for k, v in draws.items()}


def side_draws(batting: Draws, bowling: Draws) -> Draws:
    """One side's figures in a match, draw by draw: its batters' from the innings it batted, its bowlers'
    from the innings it bowled (the same number of draws, the same simulations in the same order), over all
    its players; a player listed in one of the two only has nothing (0, no) in the other."""
    players = list(dict.fromkeys([*batting["runs"].columns, *bowling["wickets"].columns]))
    return {k: _over(players, k, v) for k, v in {**batting, **bowling}.items()}


def pooled_draws(parts: list[Draws]) -> Draws:
    """One side's draws (`side_draws`) of several sets of simulations as one (before the toss, each batting
    order's): each figure's rows one after the other, over every player any set lists."""
    players = list(dict.fromkeys(name for part in parts for name in part["runs"].columns))
    return {k: pd.concat([_over(players, k, part[k]) for part in parts], ignore_index=True) for k in parts[0]}


def over_players(draws: Draws, players: list[str]) -> Draws:
    """`draws` over `players`: one they do not list has nothing in them (0, or no)."""
    return {figure: _over(players, figure, values) for figure, values in draws.items()}


def _over(players: list[str], figure: str, draws: pd.DataFrame) -> pd.DataFrame:
    """A figure's draws over `players`: one a set does not list has nothing in it (0, or no)."""
    return draws.reindex(columns=players, fill_value=False if figure in FLAGS else 0)


def nothing(figures) -> Draws:
    """One draw of `figures` with no player in it: a side's figures where it has not batted (or bowled) yet."""
    return {figure: pd.DataFrame(index=range(1)) for figure in figures}


def summarise(
    draws: Draws,
    team: str,
    points: pd.DataFrame | None = None,
    so_far: Draws | None = None,
    points_so_far: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per player of a side (`side_draws`, or one innings' side): LINE_COLUMNS, each counted figure's
    (and, given each draw's fantasy `points`, the points') mean and 10/50/90% quantiles, and the chances
    (P(out), P(bats), P(bowls), CHANCES); the `*_so_far` columns from `so_far` (one draw: the real balls before
    the state, and its `points_so_far`), 0 without it; what the draws do not hold (a side's bowling, given its
    batting alone) is left empty."""
    players = list(next(iter(draws.values())).columns)
    table = {"team": team, "player": players}
    figures = {**draws, **({"fantasy": points} if points is not None else {})}
    for figure, values in figures.items():  # every player at once: a column each
        x = values.to_numpy(np.float64)
        table[f"p_{figure}" if figure in FLAGS else f"{figure}_mean"] = x.mean(axis=0)
        if figure not in FLAGS:
            for level, q in zip(QUANTILE_LEVELS, np.quantile(x, QUANTILE_LEVELS, axis=0)):
                table[f"{figure}_q{round(level * 100)}"] = q
    for chance, (figure, threshold) in CHANCES.items():
        if figure in draws:
            table[chance] = (draws[figure].to_numpy() >= threshold).mean(axis=0)
    before = {**(so_far or {}), **({"fantasy": points_so_far} if points_so_far is not None else {})}
    for figure in SO_FAR:
        if figure in figures:
            now = before.get(figure)
            table[f"{figure}_so_far"] = 0.0 if now is None else _over(players, figure, now).iloc[0].to_numpy(float)
    return pd.DataFrame(table).reindex(columns=list(LINE_COLUMNS))


# One row per player and simulation of a state (`draw_table`): the state, the side and the player, which
# simulation (numbered through the state's: before the toss, both orders' in turn), and his figures in it.
# A row's bytes in memory (DRAW_COLUMNS, each row's strings its own: about 200 measured with real names by
# tests/simulation/test_lines.py), with a margin: for the refusal of a --draws-out that would not fit.
BYTES_A_DRAW = 256
DRAW_COLUMNS = ("match_id", "innings", "delivery_index", "batting_first", "team", "player", "sim", *FIGURES, "fantasy")


def last_state(sides: list[Side]) -> list[Side]:
    """The sides of the latest state `sides` hold (the greatest innings, then delivery): a match's state now."""
    last = max((side.point["innings"], side.point["delivery_index"]) for side in sides)
    return [side for side in sides if (side.point["innings"], side.point["delivery_index"]) == last]


def draw_table(sides: list[Side], fantasy=None) -> pd.DataFrame:
    """DRAW_COLUMNS of `sides`: every player's figures (and, given a `FantasyTable`, his points) in each
    simulation, so that what two players do in one simulated match can be read together (their correlation)."""
    frames, numbered = [], {}
    for side in sides:
        players, n = list(side.draws["runs"].columns), len(side.draws["runs"])
        state = (side.point["match_id"], side.point["innings"], side.point["delivery_index"], side.team)
        first = numbered.get(state, 0)
        numbered[state] = first + n
        figures = {f: side.draws[f].to_numpy().reshape(-1) for f in FIGURES}  # simulation by simulation
        if fantasy is not None:
            figures["fantasy"] = fantasy.points(side.draws).to_numpy().reshape(-1)
        frame = pd.DataFrame(
            {
                **{k: side.point[k] for k in DRAW_COLUMNS[:4]},
                "team": side.team,
                "player": np.tile(players, n),
                "sim": np.repeat(np.arange(first, first + n), len(players)),
                **figures,
            }
        )
        frames.append(frame)
    return (
        pd.concat(frames, ignore_index=True).reindex(columns=list(DRAW_COLUMNS))
        if frames
        else pd.DataFrame(columns=list(DRAW_COLUMNS))
    )
