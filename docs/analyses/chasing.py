"""How often the side batting second won, by season and over spans of seasons, counted over the games
`cricket-attn-before-eval` scores (`before_eval.games_at_the_toss`: the XIs known at the toss, a result and a toss,
a tie half a win): the base rate every forecast before the first ball meets, from the data alone (no model).

    python docs/analyses/chasing.py --spans 2008-2024 2023-2024 2025-2026
    python docs/analyses/chasing.py --data t20 --competition "Indian Premier League"

Prints a row per season and per span: the matches and the chasing side's share, with Wilson's 95% interval.
"""

from __future__ import annotations

import argparse

import pandas as pd

from cricket_attn.data.deliveries import config_tables
from cricket_attn.metrics import markdown_table, wilson_interval
from cricket_attn.simulation.before_eval import games_at_the_toss


def span(text: str) -> tuple[int, int]:
    """`2008-2024` as (2008, 2024); one season as itself twice."""
    first, _, last = text.partition("-")
    try:
        seasons = int(first), int(last or first)
    except ValueError:
        seasons = (1, 0)
    if seasons[0] > seasons[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: give a season or FIRST-LAST, as 2008-2024")
    return seasons


def share(won: pd.Series) -> dict:
    """The chasing side's share of `won` with Wilson's 95% interval."""
    p, n = float(won.mean()), len(won)
    low, high = wilson_interval(p, n)
    return {"matches": n, "chasers_won": p, "ci_low": low, "ci_high": high}


def chasing_shares(games: pd.DataFrame, spans: list[tuple[int, int]]) -> pd.DataFrame:
    """One row per season of `games` (`games_at_the_toss`'), then one per span."""
    rows = [{"seasons": str(s), **share(g["won"])} for s, g in games.groupby("season")]
    for first, last in spans:
        won = games.loc[games["season"].between(first, last), "won"]
        if len(won):
            rows.append({"seasons": f"{first}-{last}", **share(won)})
    return pd.DataFrame(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--competition", action="append", help="only this competition's matches (again for more)")
    p.add_argument("--spans", type=span, nargs="*", default=[], help="spans of seasons, as 2008-2024")
    args = p.parse_args()
    tables = config_tables(args.data, args.sources)
    _, games, left = games_at_the_toss(tables.deliveries, tables.matches, args.competition)
    print(f"{len(games)} matches scored; left out: {', '.join(f'{n} {why}' for why, n in left.items())}\n")
    print(markdown_table(chasing_shares(games, args.spans), digits=3))


if __name__ == "__main__":
    main()
