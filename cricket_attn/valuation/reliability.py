"""Does a player's value hold from one season to the next, and within a season? Each of a role's values in
runs (`Role.in_runs`: runs above expected or saved, and the same with wickets priced in) against the raw
rate an analyst would otherwise read: strike rate for batters (runs per 100 balls faced), economy for
bowlers (runs conceded per over).

- Season to season: players with at least `min_balls` in both of two consecutive seasons; the correlation
  of each measure per ball in season N with the same measure in season N+1 (Pearson), with 95% intervals
  resampling the players, and the difference of the two correlations on the same draws. And which of the
  two in season N better predicts the value in season N+1 (what a player adds beyond his context): the
  value's own correlation against the raw rate's with next season's value (`next_difference`; economy
  counts with its sign turned, a low economy being the good one). A raw rate also carries what persists
  of a player's context (his leagues, his phase of the innings), so it predicts next season's raw rate
  best; the two questions are asked separately.
- Split half: within a season, each player's matches alternately into two halves (odd and even, in date
  order); the correlation of the two halves' measures over players with at least `min_balls` in the
  season, and the Spearman-Brown estimate for the whole season, 2r / (1 + r).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cricket_attn.metrics import markdown_table
from cricket_attn.valuation.players import ROLES, Role

MIN_BALLS = 200
N_BOOT = 2000


def raw_rate(role: Role, sums: pd.DataFrame) -> pd.Series:
    """The raw rate for `role` from its per-player sums: strike rate, or economy (runs per six legal balls)."""
    if role.name == "batting":
        return 100 * sums["runs"] / sums["balls"]
    return 6 * sums["conceded"] / sums["balls"]


def per_player(balls: pd.DataFrame, role: Role, by: list[str], measure: str) -> pd.DataFrame:
    """Per player and group of `by`: balls, the value `measure` (one of `role.in_runs`) per 100 balls and
    the raw rate."""
    b = balls[balls[role.counted].astype(bool)] if role.counted else balls
    raw = "runs" if role.name == "batting" else "conceded"
    columns = {name: column for name, column in role.sums if name in (measure, raw)}
    sums = (
        b.assign(_balls=b[role.balls].astype(np.float64))
        .groupby([*by, f"{role.player}_key"], observed=True, sort=False)
        .agg(balls=("_balls", "sum"), **{n: (c, "sum") for n, c in columns.items()})
    )
    return pd.DataFrame(
        {"balls": sums["balls"], "value": 100 * sums[measure] / sums["balls"], "raw": raw_rate(role, sums)}
    )


def _correlations(x: pd.DataFrame, y: pd.DataFrame, n_boot: int, seed: int, good_raw: int | None = None) -> dict:
    """Pearson correlations of `value` and of `raw` between the rows of x and y (the same players, in
    order), with 95% intervals resampling the players, and of their difference. With `good_raw` (+1 where a
    high raw rate is good, -1 where a low one is), also x's raw rate (so signed) against y's value
    (`raw_next_value_r`) and the value's own correlation minus it (`next_difference`), on the same draws."""
    rng = np.random.default_rng(seed)
    n = len(x)
    out = {"players": n}
    if n < 3:  # no correlation to speak of
        names = ("value_r", "raw_r", "difference", *(("raw_next_value_r", "next_difference") if good_raw else ()))
        keys = [f"{k}{end}" for k in names for end in ("", "_low", "_high")]
        return {**out, **dict.fromkeys(keys, np.nan)}
    draws = rng.integers(0, n, size=(n_boot, n))

    def r(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # row-wise over the draws
        a, b = a - a.mean(axis=-1, keepdims=True), b - b.mean(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))

    boots = {}
    for what in ("value", "raw"):
        a, b = x[what].to_numpy(), y[what].to_numpy()
        out[f"{what}_r"] = float(r(a, b))
        boots[what] = r(a[draws], b[draws])
    boots["difference"] = boots["value"] - boots["raw"]
    out["difference"] = out["value_r"] - out["raw_r"]
    if good_raw:
        a, b = good_raw * x["raw"].to_numpy(), y["value"].to_numpy()
        out["raw_next_value_r"] = float(r(a, b))
        boots["raw_next_value"] = r(a[draws], b[draws])
        boots["next_difference"] = boots["value"] - boots["raw_next_value"]
        out["next_difference"] = out["value_r"] - out["raw_next_value_r"]
    for what, boot in boots.items():
        key = what if "difference" in what else f"{what}_r"
        out[f"{key}_low"], out[f"{key}_high"] = np.nanpercentile(boot, [2.5, 97.5])
    return out


def season_to_season(
    balls: pd.DataFrame,
    pairs: Sequence[tuple[int, int]],
    min_balls: int = MIN_BALLS,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per role, value in runs and pair of seasons (N, N+1): `_correlations` of season N's measures
    with N+1's, and of season N's raw rate with N+1's value."""
    rows = []
    for role, measure in _measures(balls):
        table = per_player(balls, role, ["season"], measure)
        for first, second in pairs:
            x, y = (table.xs(s, level="season") if s in table.index.get_level_values("season") else table.iloc[:0]
                    for s in (first, second))  # fmt: skip
            both = x.index[x["balls"] >= min_balls].intersection(y.index[y["balls"] >= min_balls])
            good = 1 if role.name == "batting" else -1  # a high strike rate, a low economy
            rows.append({"role": role.name, "value": measure, "seasons": f"{first}-{second}",
                         **_correlations(x.loc[both], y.loc[both], n_boot, seed, good)})  # fmt: skip
    return pd.DataFrame(rows)


def _measures(balls: pd.DataFrame) -> list[tuple[Role, str]]:
    """Each role with each of its values in runs that `balls` holds."""
    return [(role, m) for role in ROLES for m in role.in_runs if dict(role.sums)[m] in balls]


def split_half(
    balls: pd.DataFrame, seasons: Sequence[int], min_balls: int = MIN_BALLS, n_boot: int = N_BOOT, seed: int = 0
) -> pd.DataFrame:
    """One row per role, value in runs and season: `_correlations` of the odd matches' measures with the even
    ones' (each player's matches in date order), over players with `min_balls` in the season, and
    Spearman-Brown's whole-season estimates (`value_full`, `raw_full`)."""
    rows = []
    for role, measure in _measures(balls):
        for season in seasons:
            b = balls[balls["season"] == season]
            if role.counted:
                b = b[b[role.counted].astype(bool)]
            player = f"{role.player}_key"
            order = b.drop_duplicates(["match_id", player])[["match_id", player]]
            order = order.assign(half=order.groupby(player, sort=False).cumcount() % 2)
            b = b.merge(order, on=["match_id", player], how="left")
            table = per_player(b, role, ["half"], measure)
            season_balls = table.groupby(level=player)["balls"].sum()
            players = season_balls.index[season_balls >= min_balls]
            half = table.index.get_level_values("half")
            halves = [table[half == h].droplevel("half").reindex(players) for h in (0, 1)]
            both = halves[0].index[halves[0]["balls"].notna() & halves[1]["balls"].notna()]
            out = _correlations(halves[0].loc[both], halves[1].loc[both], n_boot, seed)
            for what in ("value", "raw"):
                r = out[f"{what}_r"]
                out[f"{what}_full"] = 2 * r / (1 + r) if np.isfinite(r) and r > -1 else np.nan
            rows.append({"role": role.name, "value": measure, "season": season, **out})
    return pd.DataFrame(rows)


def consecutive_seasons(d: pd.DataFrame) -> list[tuple[int, int]]:
    """The pairs of consecutive seasons among those of `d`."""
    seasons = sorted(d["season"].unique().tolist())
    return [(a, b) for a, b in zip(seasons, seasons[1:]) if b == a + 1]


NEXT = ["raw_next_value_r", "raw_next_value_r_low", "raw_next_value_r_high", "next_difference", "next_difference_low",
        "next_difference_high"]  # fmt: skip


def report(balls: pd.DataFrame, min_balls: int, boot: int, seed: int = 0) -> str:
    """Season to season (each pair of consecutive seasons of `balls`, `value_matches`' balls) and split half
    (each season), players with `min_balls` balls, `boot` draws of the intervals: as markdown."""
    seasons = sorted(balls["season"].unique().tolist())
    columns = ["players", "value_r", "value_r_low", "value_r_high", "raw_r", "raw_r_low", "raw_r_high",
               "difference", "difference_low", "difference_high"]  # fmt: skip
    across = season_to_season(balls, consecutive_seasons(balls), min_balls, boot, seed)
    within = split_half(balls, seasons, min_balls, boot, seed)
    return "\n\n".join(
        [
            f"Season to season (players with {min_balls}+ balls in both; value: the measure, per "
            "100 balls (runs_value: with wickets priced in runs); raw: strike rate or economy; r: Pearson, 95% "
            "intervals resampling players):",
            markdown_table(across[["role", "value", "seasons", *columns]], 3),
            "Which predicts next season's value better, the value or the raw rate of season N (the value's own "
            "r, above, against the raw rate's with next season's value; economy with its sign turned):",
            markdown_table(across[["role", "value", "seasons", "players", "value_r", *NEXT]], 3),
            "Split half (odd against even matches of a season; full: Spearman-Brown for the whole season):",
            markdown_table(within[["role", "value", "season", *columns, "value_full", "raw_full"]], 3),
        ]
    )
