"""Before the first ball: the simulator's win probability and each player's line for every test match with a
result, scored against two match-level yardsticks and two players' baselines (`cricket-attn-before-eval`,
cricket_attn.commands.before_eval, runs it).

Each match is simulated from the state before its first ball (its info alone: the XIs, the venue, the date,
the toss; `before.project_before`), and its chasing side's chance to win is scored against what came of it (a
tie is half a win). The XIs are those known at the toss (`before.at_the_toss`): a file lists its sides after
the match, in the order they batted and with whoever came in during it (the impact player used); here each
side is its XI named at the toss, in the order of each player's usual place in his last ten matches. The
yardsticks (`before_baselines`: a logistic regression on the two XIs' records as of the day, and an Elo rating
of the teams) are fitted on the matches through the baselines' last season, their XIs the same way.

Each player's runs and wickets in the match are scored from the same simulations by the pinball loss of their
10/50/90% quantiles and the 10-90% coverage (of the randomised PIT, `pit_coverage`: 0.8 for a forecast that is
right), against his own last ten matches in an XI (an empirical distribution) and the simulator with both XIs
unknown to the model.
"""

from __future__ import annotations

import warnings
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn import progress
from cricket_attn.atomic import atomic_path
from cricket_attn.data.features import entity_key
from cricket_attn.laws import bowler_wickets
from cricket_attn.metrics import (
    binary_brier,
    binary_log_loss,
    match_bootstrap,
    match_bootstrap_sums,
    pinball,
    pit_coverage,
)
from cricket_attn.simulation.before import (
    at_the_toss,
    batting_orders,
    check_before,
    earlier,
    listed_players,
    project_before,
)
from cricket_attn.simulation.lines import Side, summarise
from cricket_attn.simulation.match import StateError
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.rules import not_simulated

MODELS = ("simulator", "logistic", "elo")


def games_at_the_toss(
    deliveries: pd.DataFrame, listed: pd.DataFrame, competitions: list[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """The matches with their XIs as known at the toss (`before.at_the_toss`: a file lists its sides after the
    match), and of those the simulator can play, of `competitions` if given, the games scored before their first
    ball with what was left out (`before_matches`): what the pre-match evaluation counts."""
    matches = at_the_toss(listed, deliveries)
    kept = matches[~matches["match_id"].astype(str).isin(not_simulated(deliveries))]
    if competitions:
        kept = kept[kept["competition"].astype(str).isin(competitions)]
    games, left = before_matches(kept)
    return matches, games, left


def before_matches(matches: pd.DataFrame, seasons: list[int] | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """The matches that can be scored before their first ball, one row each: `match_id`, `date`, `season`,
    `competition`, `first` (the side the toss sent in), `chasing`, `chasing_won_toss` and `won` (the chasing
    side's result: 1, 0, or 0.5 for a tie); with what was left out and why (no result, no toss, no XI known at the
    toss: `before.at_the_toss`, an XI the simulator cannot take)."""
    m = matches if seasons is None else matches[matches["season"].isin(seasons)]
    left = {"no result": 0, "no toss": 0, "no XI known at the toss": 0, "not simulated before the first ball": 0}
    rows = []
    for _, row in m.iterrows():
        if row.get("result") != "tie" and not isinstance(row.get("winner"), str):
            left["no result"] += 1
            continue
        orders = batting_orders(row)
        if len(orders) != 1:
            left["no toss"] += 1
            continue
        if not all(isinstance(row.get(f"{side}_players"), str) for side in ("team1", "team2")):
            left["no XI known at the toss"] += 1
            continue
        try:
            check_before(row)
        except StateError:
            left["not simulated before the first ball"] += 1
            continue
        first = orders[0][0]
        chasing = str(row["team2"]) if first == str(row["team1"]) else str(row["team1"])
        won = 0.5 if row.get("result") == "tie" else float(row["winner"] == chasing)
        rows.append(
            {
                "match_id": str(row["match_id"]),
                "date": row["date"],
                "season": int(row["season"]),
                "competition": str(row["competition"]),
                "first": first,
                "chasing": chasing,
                "chasing_won_toss": float(row["toss_winner"] == chasing),
                "won": won,
            }
        )
    out = pd.DataFrame(rows, columns=["match_id", "date", "season", "competition", "first", "chasing",
                                      "chasing_won_toss", "won"])  # fmt: skip
    return out.sort_values(["date", "match_id"], kind="stable").reset_index(drop=True), left


def simulate_before(
    sim: Simulator,
    matches: pd.DataFrame,
    games: pd.DataFrame,
    n: int,
    seed: int,
    players: bool = False,
    done: Path | None = None,
) -> tuple[np.ndarray, pd.DataFrame | None]:
    """The simulator's chance for each game's chasing side from before its first ball (its info alone); with
    `players`, each player's line of the XIs in `matches` (`listed_players`' columns: his `place` in his side's
    XI; LINE_FIGURES, and DRAWS: his runs and wickets in each simulation) from the same simulations, and from
    simulations with every player of both XIs unknown to the model (`unknown_players`) as `unknown_` columns.
    With `done`, a folder: each match's result is kept there as it is finished and read from there instead of
    simulated again (a stopped evaluation continues)."""
    chances, lines = np.empty(len(games)), []
    for i, match_id in enumerate(
        progress.track(list(games["match_id"]), "simulating before the first ball", unit="match")
    ):
        kept = done / f"{match_id}.parquet" if done is not None else None
        if kept is not None and kept.exists():
            found = pd.read_parquet(kept)
        else:
            found = simulate_one(sim, matches, match_id, n, seed, players)
            if kept is not None:
                with atomic_path(kept) as tmp:
                    found.to_parquet(tmp, index=False)
        chances[i] = found["chance"].iloc[0]
        if players:
            lines.append(found.drop(columns="chance"))
    return chances, (pd.concat(lines, ignore_index=True) if players else None)


def simulate_one(
    sim: Simulator, matches: pd.DataFrame, match_id: str, n: int, seed: int, players: bool
) -> pd.DataFrame:
    """One match of `simulate_before`: its lines (one row per player) with the chasing side's `chance`, or that
    chance alone."""
    out = project_before(sim, matches, match_id, n=n, seed=seed, players=players, draws=True)
    chance = (out[0] if players else out)["win_probability"].iloc[0]
    if not players:
        return pd.DataFrame({"chance": [chance]})
    figures = [*LINE_FIGURES, *DRAWS]
    listed = listed_players(matches[matches["match_id"].astype(str) == match_id])
    known = listed.merge(draw_lines(out[1])[["team", "player", *figures]], on=["team", "player"], how="left")
    _, unknown = project_before(
        sim, unknown_players(matches, match_id), match_id, n=n, seed=seed, players=True, draws=True
    )
    unknown = draw_lines(unknown)
    unknown = unknown.assign(place=unknown["player"].str.rsplit("#", n=1).str[1].astype(int))
    both = known.merge(
        unknown[["team", "place", *figures]].add_prefix("unknown_"),
        left_on=["team", "place"],
        right_on=["unknown_team", "unknown_place"],
        how="left",
    )
    return both.drop(columns=["unknown_team", "unknown_place"]).assign(chance=chance)


# What a player's line is scored on: his runs off the bat and his wickets (credited to the bowler) in the match,
# by the 10/50/90% quantiles of the forecast.
PLAYER_FIGURES = ("runs", "wickets")
LINE_FIGURES = tuple(f"{f}_q{q}" for f in PLAYER_FIGURES for q in (10, 50, 90))
DRAWS = tuple(f"{f}_draws" for f in PLAYER_FIGURES)  # a forecast's values, one per simulation or earlier match
LAST = 10  # the empirical baseline: a player's figures in his last this many matches in an XI
# What one simulation of a match keeps to the report: each listed player's runs and wickets (8 bytes each), of
# at most 24 players (12 a side), with their XIs known and unknown.
KEPT_BYTES_A_SIMULATION = 24 * len(PLAYER_FIGURES) * 2 * 8


def draw_lines(sides: list[Side]) -> pd.DataFrame:
    """One row per player of `project_before(..., draws=True)`'s sides (one order: the toss known): `team`,
    `player`, his LINE_FIGURES and DRAWS (his runs and wickets in each simulation, an array)."""
    if len({side.point["batting_first"] for side in sides}) != 1:
        raise ValueError("the lines of one batting order are asked for (the toss known)")
    tables = []
    for side in sides:
        table = summarise(side.draws, side.team)[["team", "player", *LINE_FIGURES]]
        draws = {f"{f}_draws": list(side.draws[f].to_numpy(float).T) for f in PLAYER_FIGURES}
        tables.append(table.assign(**draws))
    return pd.concat(tables, ignore_index=True)


def unknown_players(matches: pd.DataFrame, match_id: str) -> pd.DataFrame:
    """One match's line of the matches table with its XIs renamed "<team> #<place>", without ids: players the
    model has never seen (no record, no embedding of their own: each reads as his competition's mix)."""
    out = matches[matches["match_id"].astype(str) == str(match_id)].copy()
    for side in ("team1", "team2"):
        team, names = out[side].iloc[0], str(out[f"{side}_players"].iloc[0]).split(";")
        out[f"{side}_players"] = ";".join(f"{team} #{i}" for i in range(len(names)))
        if f"{side}_player_ids" in out:
            out[f"{side}_player_ids"] = None
    return out


def real_figures(d: pd.DataFrame, matches: pd.DataFrame) -> pd.DataFrame:
    """`listed_players` of every match with a ball bowled, with his `runs` off the bat and `wickets` in its
    regular innings (0 for a player who did not bat or bowl; an abandoned match is no appearance)."""
    d = d[~d["is_super_over"].astype(bool)]
    match_id = d["match_id"].astype(str).to_numpy()
    runs = pd.Series(d["runs_batter"].to_numpy(float)).groupby([match_id, entity_key(d, "batter")]).sum()
    wickets = pd.Series(bowler_wickets(d).astype(float)).groupby([match_id, entity_key(d, "bowler")]).sum()
    out = listed_players(matches[matches["match_id"].astype(str).isin(set(match_id))])  # a ball was bowled
    at = pd.MultiIndex.from_arrays([out["match_id"], out["key"]])
    return out.assign(runs=runs.reindex(at).fillna(0).to_numpy(), wickets=wickets.reindex(at).fillna(0).to_numpy())


def recent_quantiles(figures: pd.DataFrame, last: int = LAST) -> pd.DataFrame:
    """For each row of `real_figures`, the 10/50/90% quantiles of the player's figures in his `last` matches
    before that day (`recent_` LINE_FIGURES; NaN for a player with none) and how many there were."""
    f = figures.sort_values(["key", "date"], kind="stable")
    out = pd.DataFrame(index=f.index)
    for figure in PLAYER_FIGURES:
        values = earlier(f, figure, last)
        with warnings.catch_warnings():  # a player without an earlier match: NaN, as meant
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(values, [0.1, 0.5, 0.9], axis=1)
        for level, quantile in zip((10, 50, 90), q):
            out[f"recent_{figure}_q{level}"] = quantile
        out[f"recent_{figure}_draws"] = [row[np.isfinite(row)] for row in values]
        out["recent_matches"] = np.isfinite(values).sum(axis=1)
    return out.reindex(figures.index)


PLAYER_MODELS = {"simulator": "", "recent": "recent_", "unknown": "unknown_"}


def score_players(lines: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each model's pinball loss and 10-90% coverage of each figure (the players every model has a line for),
    and each baseline's pinball loss minus the simulator's, paired by match with a 95% bootstrap interval."""
    table, paired = [], []
    for figure in PLAYER_FIGURES:
        y = lines[figure].to_numpy(float)
        cols = {m: [f"{p}{figure}_q{q}" for q in (10, 50, 90)] for m, p in PLAYER_MODELS.items()}
        kept = np.logical_and.reduce([lines[c].notna().to_numpy() for c_ in cols.values() for c in c_])
        loss, cover = {}, {}
        for m, (q10, q50, q90) in cols.items():
            qs = [lines[c].to_numpy(float)[kept] for c in (q10, q50, q90)]
            loss[m] = pinball(y[kept], *qs)
            cover[m] = pit_coverage(lines[f"{PLAYER_MODELS[m]}{figure}_draws"][kept].tolist(), y[kept]).mean()
        table.append(
            {
                "figure": figure,
                "players": int(kept.sum()),
                **{f"{m}_pinball": v.mean() for m, v in loss.items()},
                **{f"{m}_coverage": v for m, v in cover.items()},
            }  # fmt: skip
        )
        for m in ("recent", "unknown"):
            ci = match_bootstrap(loss[m] - loss["simulator"], lines.loc[kept, "match_id"])
            paired.append(
                {"figure": figure, "against": m, "diff": ci["diff"], "ci_low": ci["ci_low"], "ci_high": ci["ci_high"]}
            )
    return pd.DataFrame(table), pd.DataFrame(paired)


def score(games: pd.DataFrame, floor: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each model's Brier score and log loss by group (every game, each season, each competition), and each
    baseline's difference from the simulator paired by match (baseline minus simulator: above 0, the
    simulator ahead), with a 95% bootstrap interval."""
    y = games["won"].to_numpy()
    per = {}
    for m in MODELS:
        per[f"{m}_brier"] = binary_brier(games[m].to_numpy(), y)
        per[f"{m}_log_loss"] = binary_log_loss(games[m].to_numpy(), y, floor)
    losses = pd.DataFrame(per)
    groups = [("every match", np.ones(len(games), bool))]
    groups += [(f"season {s}", (games["season"] == s).to_numpy()) for s in sorted(games["season"].unique())]
    if games["competition"].nunique() > 1:
        top = games["competition"].value_counts().index[:8]
        groups += [(c, (games["competition"] == c).to_numpy()) for c in top]
    table, paired = [], []
    for name, mask in groups:
        table.append({"matches": name, "n": int(mask.sum()), **losses[mask].mean().to_dict()})
        for baseline, metric in product(MODELS[1:], ("brier", "log_loss")):
            diff = (losses[f"{baseline}_{metric}"] - losses[f"simulator_{metric}"]).to_numpy()[mask]
            ci = match_bootstrap_sums(diff, np.ones(len(diff)))
            paired.append(
                {
                    "matches": name,
                    "against": baseline,
                    "metric": metric,
                    "diff": ci["diff"],
                    "ci_low": ci["ci_low"],
                    "ci_high": ci["ci_high"],
                }  # fmt: skip
            )
    return pd.DataFrame(table), pd.DataFrame(paired)
