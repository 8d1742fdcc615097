"""Before the first ball: a match whose file holds its info alone (the XIs, the venue, the date and perhaps the
toss), checked, then simulated from the state before its first ball for each side that may bat first
(`project_before`, through `match.project_context` as a match begun is)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import COLUMNS as DELIVERY_COLUMNS
from cricket_attn.data.features import entity_key
from cricket_attn.laws import T20_MATCH_TYPES
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.lines import Side, pooled_draws
from cricket_attn.simulation.match import (
    MatchContext,
    StateError,
    chase_setup,
    line_table,
    project_context,
)
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.setup import InningsSetup

T = TypeVar("T")


def context_before(matches: pd.DataFrame, row: pd.Series, batting_first: str) -> MatchContext:
    """A match not yet begun, `row` its line of the matches table (its file's info alone, checked by
    `check_before`), with `batting_first` batting first."""
    match_id = str(row["match_id"])
    teams = [str(row["team1"]), str(row["team2"])]
    second = teams[1] if batting_first == teams[0] else teams[0]
    setup1 = InningsSetup.before_match(matches, match_id, batting_first, second)
    empty = pd.DataFrame(columns=list(DELIVERY_COLUMNS))
    setup2 = chase_setup(setup1, empty, matches, match_id, second, batting_first, setup1.balls)
    innings, setups = {1: empty, 2: empty}, {1: setup1, 2: setup2}
    return MatchContext(match_id, row["date"], innings, setups, {1: batting_first, 2: second})


def check_before(row: pd.Series) -> None:
    """Refuse, naming the match and the field, a match before its first ball that cannot be simulated: a T20 of
    six-ball overs (at most 20: `cricsheet` reads a T20's larger figure as 20), each side's XI listed (11 players,
    or 12 where an impact player is named), no player listed for both sides, a venue."""
    match_id = row["match_id"]
    if row.get("match_type") not in T20_MATCH_TYPES or int(row["balls_per_over"]) != 6:
        raise StateError(
            f"match {match_id}: info.match_type: {row.get('match_type')} of {row['balls_per_over']}-ball overs; "
            "only T20 matches of six-ball overs are simulated before their first ball"
        )
    sides = {}
    for side in ("team1", "team2"):
        listed = row.get(f"{side}_players")
        if not isinstance(listed, str) or not listed:
            raise StateError(f"match {match_id}: info.players.{row[side]}: no players listed (the XI is needed)")
        names = listed.split(";")
        if len(names) not in (11, 12):
            raise StateError(
                f"match {match_id}: info.players.{row[side]}: {len(names)} players (11, or 12 with an impact player)"
            )
        sides[row[side]] = names
    (a, names_a), (b, names_b) = sides.items()
    both = sorted(set(names_a) & set(names_b))
    if both:
        raise StateError(f"match {match_id}: info.players: {', '.join(both)} listed for both {a} and {b}")
    if not isinstance(row.get("venue"), str) or not row["venue"]:
        raise StateError(f"match {match_id}: info.venue: no venue (the ground's record is one of the model's inputs)")


def listed_players(matches: pd.DataFrame) -> pd.DataFrame:
    """One row per listed player of each match: `match_id`, `date`, `team`, `place` (in the list), `player` (the
    name) and `key` (the registry id, else the name, as `entity_key`)."""
    rows = []
    for row in matches.itertuples(index=False):
        for side in ("team1", "team2"):
            names = getattr(row, f"{side}_players")
            if not isinstance(names, str) or not names:
                continue
            names = names.split(";")
            ids = getattr(row, f"{side}_player_ids", None)
            ids = ids.split(";") if isinstance(ids, str) else [""] * len(names)
            team = getattr(row, side)
            rows += [(str(row.match_id), row.date, team, i, n, k or n) for i, (n, k) in enumerate(zip(names, ids))]
    return pd.DataFrame(rows, columns=["match_id", "date", "team", "place", "player", "key"])


def earlier(frame: pd.DataFrame, column: str, last: int) -> np.ndarray:
    """(rows, last): each row's `column` in the `last` rows of its `key` before it on an earlier day (NaN where
    there are fewer; a row of the same day is not "before"), `frame` sorted by key and date."""
    lags = range(1, last + 1)
    values = np.column_stack([frame.groupby("key")[column].shift(lag).to_numpy(float) for lag in lags])
    dates = np.column_stack([frame.groupby("key")["date"].shift(lag).to_numpy() for lag in lags])
    values[~(dates < frame["date"].to_numpy()[:, None])] = np.nan
    return values


USUAL_PLACE_MATCHES = 10  # a player's usual place in the order: the median of his places in this many matches


def batting_places(matches: pd.DataFrame, deliveries: pd.DataFrame) -> pd.DataFrame:
    """`listed_players` with each one's `order`: his place in his side's batting order as the match's balls give
    it (by when he first came to the crease, its regular innings), those who did not bat after them in the order
    of the list (a match without balls: the list's order)."""
    listed = listed_players(matches)
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    crease = pd.DataFrame(
        {
            "match_id": np.repeat(d["match_id"].astype(str).to_numpy(), 2),
            "team": np.repeat(d["batting_team"].astype(str).to_numpy(), 2),
            "key": np.column_stack([entity_key(d, "batter"), entity_key(d, "non_striker")]).ravel(),
        }  # each ball's striker, then its non-striker, in the order they were bowled
    ).drop_duplicates()
    crease["order"] = crease.groupby(["match_id", "team"]).cumcount()
    listed = listed.merge(crease, on=["match_id", "team", "key"], how="left")
    rest = listed["order"].isna()
    batted = listed.groupby(["match_id", "team"])["order"].transform("count")
    listed.loc[rest, "order"] = batted[rest] + listed[rest].groupby(["match_id", "team"]).cumcount()
    return listed


def at_the_toss(matches: pd.DataFrame, deliveries: pd.DataFrame, last: int = USUAL_PLACE_MATCHES) -> pd.DataFrame:
    """`matches` with each side's XI as known at the toss, not as the file lists it after the match: without
    whoever came in during the match (`teamN_came_in`: an impact player, a concussion substitute), and in the
    order of each player's usual place in his sides' batting orders (`batting_places`: the median over his
    last `last` listed matches before the day; players with none after those with one, by name), not the order
    they batted in. A side listing more than 11 without saying who came in has no XI (None)."""
    listed = batting_places(matches, deliveries).sort_values(["key", "date", "match_id"], kind="stable")
    with np.errstate(all="ignore"), warnings.catch_warnings():  # a player with no earlier match: NaN, as meant
        warnings.simplefilter("ignore", RuntimeWarning)
        listed["usual"] = np.nanmedian(earlier(listed, "order", last), axis=1)
    came_in = {
        (str(row["match_id"]), row[side]): set(str(row[f"{side}_came_in"]).split(";"))
        for _, row in matches.iterrows()
        for side in ("team1", "team2")
        if isinstance(row.get(f"{side}_came_in"), str)
    }
    rows = zip(listed["match_id"], listed["team"], listed["player"])
    listed = listed[[p not in came_in.get((m, t), ()) for m, t, p in rows]]
    # A list of 12 that does not say who came in: which 11 were named at the toss is not known (no XI).
    listed = listed[listed.groupby(["match_id", "team"])["place"].transform("size") <= 11]
    listed = listed.assign(unknown=listed["usual"].isna()).sort_values(["unknown", "usual", "player"], kind="stable")
    xis = listed.groupby(["match_id", "team"], sort=False).agg(players=("player", ";".join), keys=("key", list))
    out = matches.copy()
    for side in ("team1", "team2"):
        at = pd.MultiIndex.from_arrays([out["match_id"].astype(str), out[side]])
        found = xis.reindex(at)
        out[f"{side}_players"] = found["players"].to_numpy()
        if f"{side}_player_ids" in out:
            names = found["players"].str.split(";")
            out[f"{side}_player_ids"] = [
                ";".join(k if k != n else "" for n, k in zip(ns, ks)) if isinstance(ks, list) else None
                for ns, ks in zip(names, found["keys"])
            ]
    return out


def listed_as_deliveries(matches: pd.DataFrame, match_ids: list[str]) -> pd.DataFrame:
    """Matches not yet begun as rows of a deliveries table, one per listed player as both batter and bowler at
    the match's ground, on its day, in its competition: what a check of who the model knows reads
    (`reading.unknown_to`), the XIs in place of balls."""
    chosen = matches[matches["match_id"].astype(str).isin(match_ids)].assign(
        match_id=lambda m: m["match_id"].astype(str)
    )
    listed = listed_players(chosen)
    where = chosen[["match_id", "venue", "city", "competition"]]
    out = listed.merge(where, on="match_id", how="left").assign(is_super_over=False)
    ids = out["key"].where(out["key"] != out["player"])  # a name without an id: none
    return out.assign(batter=out["player"], batter_id=ids, bowler=out["player"], bowler_id=ids)


def side_by_side(run: Callable[[int], T], count: int) -> list[T]:
    """[run(0), ..., run(count - 1)] side by side in `count` Python threads, torch's threads shared out between
    them for the while and restored after, each in the caller's grad mode (torch keeps it per thread); one after
    the other where there is one run, or fewer of torch's threads than runs. Each run must draw from its own
    generator and write nothing the others read. An error in one is raised once all have ended (so does a Ctrl-C
    wait for them). Before the toss the two batting orders run so: a step's operations are too small to keep two
    threads busy (on 2 cores 8.8-9.0 s against 10.9-12.3 one after the other; `benchmarks/simulate_speed.py
    --before-only`, the record of 2026-11-29's thirty-third session)."""
    threads, grad = torch.get_num_threads(), torch.is_grad_enabled()
    if count == 1 or threads < count:
        return [run(k) for k in range(count)]

    def in_thread(k: int) -> T:
        with torch.set_grad_enabled(grad):
            return run(k)

    torch.set_num_threads(threads // count)
    try:
        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(in_thread, range(count)))
    finally:
        torch.set_num_threads(threads)


def batting_orders(row: pd.Series) -> list[tuple[str, float]]:
    """Who bats first, with its chance: the toss winner's choice where the file gives the toss, else either
    side with 1/2 (whoever wins the toss, the same habit at the venue gives each side the same chance to bat
    first: the toss is a coin)."""
    teams = [str(row["team1"]), str(row["team2"])]
    winner, decision = row.get("toss_winner"), row.get("toss_decision")
    if isinstance(winner, str) and decision in ("bat", "field"):
        other = teams[1] if winner == teams[0] else teams[0]
        return [(winner if decision == "bat" else other, 1.0)]
    return [(teams[0], 0.5), (teams[1], 0.5)]


def project_before(
    sim: Simulator,
    matches: pd.DataFrame,
    match_id,
    n: int = 100,
    seed: int = 0,
    players: bool = False,
    fantasy: FantasyTable | None = None,
    draws: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame | list]:
    """`project_match` for a match not yet begun (its file's info alone): the state before the first ball,
    for each side that may bat first (`batting_orders`: one where the toss is known, else two, each with
    its chance as its `order_weight`; `side_chances` gives each side's chance to win over both). The `n`
    simulations of the match are shared out between the orders by their chance (before the toss, n/2 with each
    side batting first: the toss drawn as a coin, stratified), so n is the match's simulations in all, as from
    any other state; the two orders run side by side (`side_by_side`: torch's threads shared out between them
    for the while). With `players` (and `fantasy`), one line per player over all n simulations, whichever
    side batted first in them (`batting_first` empty before the toss): a mixture's own quantiles, not the
    orders' averaged. With `draws`, the players' figures draw by draw in place of their lines
    (`match.project_context`): a list of `lines.Side`, two per order, the point with its `order_weight`
    (`lines_before` makes the lines of them)."""
    row = matches.loc[matches["match_id"].astype(str) == str(match_id)]
    if row.empty:
        raise StateError(f"match {match_id}: not in the matches read")
    row = row.iloc[0]
    check_before(row)
    frames, sides = [], []
    orders = batting_orders(row)
    if n < len(orders):
        raise StateError(f"match {match_id}: {n} simulation(s): before the toss at least {len(orders)}, one an order")
    shares = [int(n * weight) for _, weight in orders]
    shares[0] += n - sum(shares)  # n in all (an odd n: the first side listed one more)

    def simulate(k: int) -> tuple:  # each order its own draws (seed + k)
        ctx = context_before(matches, row, orders[k][0])
        return project_context(sim, ctx, shares[k], seed + k, False, players, None, players)

    for (_first, weight), out in zip(orders, side_by_side(simulate, len(orders))):
        projected, drawn = out if players else (out, [])
        frames.append(projected.assign(order_weight=weight))
        sides += [side._replace(point=side.point | {"order_weight": weight}) for side in drawn]
    projections = pd.concat(frames, ignore_index=True)
    if not players:
        return projections
    return projections, sides if draws else lines_before(sides, fantasy)


def lines_before(sides: list[Side], fantasy: FantasyTable | None) -> pd.DataFrame:
    """PLAYER_COLUMNS of a match before its first ball from `project_before(..., draws=True)`'s sides: one
    line per player over all its simulations, both orders' draws pooled (`batting_first` empty where there
    are two), nothing so far."""
    first = sides[0].point
    orders = list(dict.fromkeys(side.point["batting_first"] for side in sides))
    point = {k: first[k] for k in ("match_id", "innings", "delivery_index")}
    point["batting_first"] = orders[0] if len(orders) == 1 else None
    teams = list(dict.fromkeys(side.team for side in sides))
    pooled = [Side(point, team, pooled_draws([s.draws for s in sides if s.team == team])) for team in teams]
    return line_table(pooled, fantasy)


def side_chances(projections: pd.DataFrame) -> pd.DataFrame:
    """Each side's chance to win a match before its first ball, over the orders of the innings
    (`project_before`'s rows at the first innings' start): the weighted mean by `order_weight` of its chance in
    each (1 - win_probability where it bats first, win_probability where it chases), with its Monte Carlo
    standard error. One row per match and side: match_id, team, win_probability, win_probability_se."""
    start = projections[(projections["innings"] == 1) & (projections["delivery_index"] == 0)]
    rows = []
    for match_id, orders in start.groupby("match_id", sort=False):
        w, p, se = (orders[c].to_numpy(np.float64) for c in ("order_weight", "win_probability", "win_probability_se"))
        error = float(np.sqrt(((w * se) ** 2).sum()) / w.sum())
        for team in dict.fromkeys([*orders["batting_team"], *orders["bowling_team"]]):
            chance = np.where(orders["batting_team"].to_numpy() == team, 1 - p, p)
            rows.append([match_id, team, float((w * chance).sum() / w.sum()), error])
    return pd.DataFrame(rows, columns=["match_id", "team", "win_probability", "win_probability_se"])
