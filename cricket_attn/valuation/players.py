"""Per player and role, per season and competition (or any grouping): the balls' values (`ball_values`)
summed, with 95% intervals that resample the player's matches, and a rank among those with enough balls.

The interval is a Poisson bootstrap over matches: each draw weighs every match by a Poisson(1) count, the
same draw for every player, and a player's total in a draw is his weighted mean per match times the matches
he played: the interval of resampling his own matches, as many as he played (balls of one match are not
independent: a long innings is one event, not forty).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from cricket_attn.cli import named_list
from cricket_attn.inference.serving import TrainedModel
from cricket_attn.valuation.expected import ClassValues, ball_values
from cricket_attn.valuation.win import WinModel

MIN_BALLS = 100  # balls (faced, or legal balls bowled) below which a player is listed but not ranked
N_BOOT = 1000


@dataclass(frozen=True)
class Role:
    """How one role is valued: whose it is, which balls count as his and how they are counted, what is
    summed (output name: the `ball_values` column), the values given with an interval, the first the one he
    is ranked by, and those in runs per ball (checked against the raw rate for reliability)."""

    name: str
    player: str  # the ball_values column naming him
    team: str
    balls: str  # the boolean column: a ball he faced, or a legal ball he bowled
    counted: str | None  # the boolean column of the rows that are his (None: all)
    sums: tuple[tuple[str, str], ...]
    valued: tuple[str, ...]
    in_runs: tuple[str, ...]


ROLES = (
    Role(
        "batting", "batter", "batting_team", "faced", "faced",
        (("runs", "runs"), ("expected_runs", "expected_runs"), ("runs_above_expected", "runs_above_expected"),
         ("outs", "out"), ("expected_outs", "expected_out"), ("dismissals_avoided", "dismissals_avoided"),
         ("runs_value", "batting_value"), ("win_probability_added", "batting_wpa")),
        ("runs_above_expected", "dismissals_avoided", "runs_value", "win_probability_added"),
        ("runs_above_expected", "runs_value"),
    ),
    Role(
        "bowling", "bowler", "bowling_team", "legal", None,
        (("conceded", "conceded"), ("expected_conceded", "expected_conceded"), ("runs_saved", "runs_saved"),
         ("wickets", "bowler_wicket"), ("expected_wickets", "expected_wickets"),
         ("wickets_above_expected", "wickets_above_expected"), ("runs_value", "bowling_value"),
         ("win_probability_added", "bowling_wpa")),
        ("runs_saved", "wickets_above_expected", "runs_value", "win_probability_added"),
        ("runs_saved", "runs_value"),
    ),
)  # fmt: skip


def player_values(
    balls: pd.DataFrame,
    by: Sequence[str] = ("season", "competition"),
    min_balls: int = MIN_BALLS,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per player, role and group of `by` (columns of `balls`, the rows of `ball_values`): his
    matches and balls, the sums of each role's values, each valued column per 100 balls, 95% intervals
    (`_low`, `_high`) of the valued totals and of the first one's rate, and `rank` among the players of his
    group and role with at least `min_balls` balls (NaN below: listed, not ranked)."""
    rng = np.random.default_rng(seed)
    matches = pd.Index(pd.unique(balls["match_id"].astype(str)))
    weights = rng.poisson(1.0, size=(n_boot, len(matches))).astype(np.float64)
    return pd.concat(
        [_role_values(balls, role, list(by), min_balls, matches, weights) for role in ROLES], ignore_index=True
    )


def _role_values(
    balls: pd.DataFrame, role: Role, by: list[str], min_balls: int, matches: pd.Index, weights: np.ndarray
) -> pd.DataFrame:
    b = balls[balls[role.counted].astype(bool)] if role.counted else balls
    sums = tuple((name, column) for name, column in role.sums if column in balls)  # no win model: no WPA
    valued = tuple(name for name in role.valued if name in dict(sums))
    key = f"{role.player}_key"
    group = [*by, key]
    b = b.assign(**{"_balls": b[role.balls].astype(np.float64)})
    grouped = b.groupby(group, sort=False, observed=True)
    table = grouped.agg(
        player=(role.player, "last"),  # in date order: his name as last written
        team=(role.team, "last"),
        matches=("match_id", "nunique"),
        balls=("_balls", "sum"),
        **{name: (column, "sum") for name, column in sums},
    ).reset_index()
    for name, column in sums:  # a sum over no value (a match without a result's win probability) is none
        table.loc[grouped[column].count().to_numpy() == 0, name] = np.nan
    table = table.rename(columns={key: "player_id"})
    table.insert(0, "role", role.name)
    table["balls"] = table["balls"].astype(np.int64)
    row = grouped.ngroup().to_numpy()  # the table's row of each ball, in the groups' order
    match = matches.get_indexer(b["match_id"].astype(str))
    totals = {name: _bootstrap(row, match, b[column].fillna(0).to_numpy(np.float64), len(table), weights)
              for name, column in sums if name in valued}  # fmt: skip
    counted = _bootstrap(row, match, b["_balls"].to_numpy(np.float64), len(table), weights)
    played = pd.DataFrame({"row": row, "match": match}).drop_duplicates()
    played = _bootstrap(played["row"].to_numpy(), played["match"].to_numpy(), np.ones(len(played)), len(table), weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        # A total over his matches as they were: the draw's mean per match he played, times his matches (a
        # draw's count of matches is not his to answer for). A draw without any of his matches says nothing.
        per_match = table["matches"].to_numpy()[:, None] / np.where(played > 0, played, np.nan)
        for name in valued:
            drawn = totals[name] * per_match
            table[f"{name}_low"], table[f"{name}_high"] = np.nanpercentile(drawn, [2.5, 97.5], axis=1)
            table[f"{name}_per_100"] = 100 * table[name] / table["balls"].where(table["balls"] > 0)
            table.loc[table[name].isna(), [f"{name}_low", f"{name}_high"]] = np.nan
        headline = role.valued[0]
        rate = 100 * totals[headline] / np.where(counted > 0, counted, np.nan)
    table[f"{headline}_per_100_low"], table[f"{headline}_per_100_high"] = np.nanpercentile(rate, [2.5, 97.5], axis=1)
    ranked = table["balls"] >= min_balls
    groups = [table[c] for c in by] if by else np.zeros(len(table))
    table["rank"] = table[headline].where(ranked).groupby(groups, observed=True).rank(ascending=False, method="min")
    return table


def _bootstrap(row: np.ndarray, match: np.ndarray, values: np.ndarray, n_rows: int, weights: np.ndarray) -> np.ndarray:
    """(n_rows, n_boot): each row's total of `values` under each draw of match weights."""
    per_match = sparse.csr_matrix((values, (row, match)), shape=(n_rows, weights.shape[1]))  # sums duplicates
    return np.asarray(per_match @ weights.T)


def value_matches(
    trained: TrainedModel,
    deliveries: pd.DataFrame,
    known: pd.DataFrame | None = None,
    matches: pd.DataFrame | None = None,
    by: Sequence[str] = ("season", "competition"),
    min_balls: int = MIN_BALLS,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the balls' values, the players' values) of `deliveries` (a season, a competition, a match) by the
    model `trained`: what a class is worth from the deliveries of its training seasons in `known`, and the
    records and histories it reads from `known` (default: `deliveries`; give every earlier match there is).
    With `matches` (the matches table of `known`: their results), also the win probability added, by a
    `WinModel` fitted on the known matches of the training seasons."""
    known = deliveries if known is None else known
    fitted = known[known["season"].between(trained.encoder.first_season, trained.encoder.trained_until)]
    if fitted.empty:
        raise ValueError(
            f"no deliveries of the model's training seasons ({trained.encoder.first_season}-"
            f"{trained.encoder.trained_until}) to learn what each outcome is worth from: give them as known matches"
        )
    win = None if matches is None else WinModel.fit(fitted, matches, seed)
    balls = ball_values(trained, deliveries, ClassValues.fit(fitted), known, win, matches)
    return balls, player_values(balls, by, min_balls, n_boot, seed)


def summary(
    balls: pd.DataFrame, table: pd.DataFrame, by: list[str], min_balls: int, asked: list[str] | None = None
) -> str:
    """What was valued (`value_matches`' balls and table), the sums that should be near zero for an average
    player's expectation, and the leaders of the largest group (ranked with `min_balls`); `asked`: the
    players a table was cut to."""
    faced = balls[balls["faced"]]
    lines = [
        f"matches valued:     {balls['match_id'].nunique():,} ({len(balls):,} deliveries)",
        f"players:            {table['player_id'].nunique():,}; ranked with {min_balls}+ balls: "
        f"{int(table['rank'].notna().sum()):,} player-roles",
        "an average player's expectation, summed over every ball (near zero if the model is calibrated):",
        f"  runs above expected {faced['runs_above_expected'].sum():+.1f} of {faced['runs'].sum():,.0f} runs "
        f"({faced['runs_above_expected'].mean():+.4f} a ball); runs saved {balls['runs_saved'].sum():+.1f} of "
        f"{balls['conceded'].sum():,.0f} conceded; wickets above expected "
        f"{balls['wickets_above_expected'].sum():+.1f} of {balls['bowler_wicket'].sum():,.0f}",
        f"  with wickets priced in runs (runs value): batting {faced['batting_value'].sum():+.1f}, bowling "
        f"{balls['bowling_value'].sum():+.1f}",
    ]
    if by:
        largest = table.groupby(by, observed=True).size().idxmax()
        largest = largest if isinstance(largest, tuple) else (largest,)
        group = table[(table[by] == pd.Series(largest, index=by)).all(axis=1)]
        lines.append(f"leaders of {' '.join(map(str, largest))}:")
    else:
        group = table
        lines.append("leaders:")
    for role in ROLES:
        value = role.valued[0]
        top = group[(group["role"] == role.name) & group["rank"].notna()].nsmallest(5, "rank")
        shown = [f"{p} {v:+.1f} [{lo:+.1f}, {hi:+.1f}]" for p, v, lo, hi in
                 zip(top["player"], top[value], top[f"{value}_low"], top[f"{value}_high"])]  # fmt: skip
        lines.append(f"  {role.name} ({value.replace('_', ' ')}): " + ("; ".join(shown) or "none ranked"))
    if asked:
        lines.append(named_list("players asked for", asked))
    return "\n".join(lines)
