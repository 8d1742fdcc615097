"""The pooled model against the IPL-only model and the pooled trees, by competition: issue 32's tables.

Each input is a scored table (`cricket-attn-predict` output, or a run's `evaluation/scored_test.parquet`):
one row per delivery with `match_id`, `innings`, `delivery_index`, `outcome` and the `p_*` columns. The
first is the model under study; every other is paired with it on the balls both scored, by match, with a
95% interval from resampling whole matches (difference = other - pooled: above zero, the pooled model is
better).

    python docs/analyses/leagues.py --pooled pooled.parquet --against ipl_only=ipl.parquet \
        --against pooled_trees=trees.parquet --data t20

Tables printed (markdown): the IPL 2025-2026 balls; then each competition with at least `--min-matches`
matches among the scored balls (the rest together as "other competitions"): log loss and ECE of each model,
the paired differences, and the pooled model's predicted against observed wickets, fours and sixes
(relative error: predicted / observed - 1, with a 95% interval from resampling whole matches: the
observed rate of a few dozen matches moves by chance too).
"""

from __future__ import annotations

import argparse

import pandas as pd

from cricket_attn.data.deliveries import config_tables
from cricket_attn.metrics import (
    KEY_COLUMNS,
    markdown_table,
    match_bootstrap,
    match_bootstrap_sums,
    paired_losses,
    score,
)

IPL = "Indian Premier League"
RATES = {"wickets": "wicket", "fours": "4", "sixes": "6"}


def matches_of(data: str, sources: list[str] | None = None) -> pd.DataFrame:
    """Each match's competition and season by match_id, from the data config's tables (its parquet cache)."""
    tables = config_tables(data, sources)
    return tables.matches.set_index(tables.matches["match_id"].astype(str))[["competition", "season"]]


def group_rows(group: str, pooled: pd.DataFrame, others: dict[str, pd.DataFrame], name: str = "pooled") -> dict:
    """One row of the tables: the model under study (`name`) on a group's balls, each other paired with it."""
    row = {"competition": group, "matches": pooled["match_id"].nunique(), "balls": len(pooled)}
    scored = score(pooled)
    row[f"{name} log loss"], row[f"{name} ECE"] = scored["log_loss"], scored["ece"]
    for label, other in others.items():
        keys = list(KEY_COLUMNS)  # the balls both scored, with the pooled table's phase (predict has none)
        mine = other.drop(columns=["phase"], errors="ignore").merge(pooled[[*keys, "phase"]], on=keys)
        if mine.empty:
            continue
        theirs = score(mine)
        row[f"{label} log loss"], row[f"{label} ECE"] = theirs["log_loss"], theirs["ece"]
        paired = paired_losses(mine, pooled)  # other - pooled, per ball
        boot = match_bootstrap(paired["diff"].to_numpy(), paired["match_id"])
        row[f"{label} - {name} [95% CI]"] = f"{boot['diff']:+.4f} [{boot['ci_low']:+.4f}, {boot['ci_high']:+.4f}]"
    for what, outcome in RATES.items():
        hit = (pooled["outcome"].astype(str) == outcome).astype(float)
        observed = hit.groupby(pooled["match_id"], sort=False).sum()
        predicted = pooled.groupby("match_id", sort=False)[f"p_{outcome}"].sum()
        if not observed.sum():
            row[f"{name} {what} pred/obs - 1"] = "n/a"
            continue
        # predicted / observed over the group, the interval resampling whole matches: how far off the
        # prediction is, given how much the observed rate of so few matches moves by chance
        ratio = match_bootstrap_sums(predicted.to_numpy(), observed.to_numpy())
        row[f"{name} {what} pred/obs - 1"] = (
            f"{ratio['diff'] - 1:+.1%} [{ratio['ci_low'] - 1:+.1%}, {ratio['ci_high'] - 1:+.1%}]"
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pooled", required=True, help="the pooled model's scored table")
    parser.add_argument("--name", default="pooled", help="what the tables call the model under study")
    parser.add_argument("--against", action="append", default=[], metavar="LABEL=FILE", help="a model to pair")
    parser.add_argument("--data", default="t20", help="the data config whose tables name the competitions")
    parser.add_argument("--min-matches", type=int, default=20)
    parser.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or files (default: the data config's)")
    parser.add_argument("--season", type=int, action="append", help="only these seasons (default: all scored)")
    args = parser.parse_args()

    matches = matches_of(args.data, args.sources)
    read = lambda path: pd.read_parquet(path).astype({"match_id": str})
    pooled = read(args.pooled)
    for column in ("competition", "season"):  # predict's output has neither
        pooled[column] = pooled["match_id"].map(matches[column])
    if args.season:
        pooled = pooled[pooled["season"].isin(args.season)]
    others = dict(spec.split("=", 1) for spec in args.against)
    others = {label: read(path) for label, path in others.items()}
    if args.name in others:
        parser.error(f"--against {args.name}=...: the model under study is called {args.name} (--name)")

    ipl = pooled[pooled["competition"] == IPL]
    first, last = ipl["season"].min(), ipl["season"].max()
    seasons = f"{first}-{last}" if first != last else f"{first}"
    print(f"#### IPL ({seasons}): {ipl['match_id'].nunique()} matches, {len(ipl):,} balls\n")
    ipl_row = pd.Series(group_rows(IPL, ipl, others, args.name)).drop(["competition", "matches", "balls"])
    print(blank(ipl_row.rename("IPL").rename_axis("").reset_index()), "\n")

    counts = pooled.groupby("competition")["match_id"].nunique()
    big = counts[counts >= args.min_matches].sort_values(ascending=False).index
    rows = [group_rows(group, pooled[pooled["competition"] == group], others, args.name) for group in big]
    rest = pooled[~pooled["competition"].isin(big)]
    if len(rest):
        rows.append(group_rows(f"other competitions ({rest['competition'].nunique()})", rest, others, args.name))
    rows.append(group_rows("all", pooled, others, args.name))
    print(f"#### By competition ({args.min_matches}+ matches)\n")
    print(blank(pd.DataFrame(rows)))


def blank(table: pd.DataFrame) -> str:
    """The table in markdown, a model that scored none of a group's balls blank."""
    return markdown_table(table.astype(object).where(table.notna(), ""))


if __name__ == "__main__":
    main()
