"""Checks the deliveries table against the official results recorded in each match file.

For every decided match that was not decided by DLS or a super over: whether the innings totals and wickets
from the table give the recorded margin, and whether every non-DLS chase's target is the first-innings total
plus one (`python -m cricket_attn.commands.official_results [SOURCE ...]` reports it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from cricket_attn.laws import MAX_WICKETS


@dataclass
class ResultCheck:
    checked: int = 0
    agree: int = 0
    chases_checked: int = 0
    targets_agree: int = 0
    problems: list[str] = field(default_factory=list)


def innings_totals(deliveries: pd.DataFrame) -> pd.DataFrame:
    """Runs, team wickets and batting team of each regular (not super-over) innings."""
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    return regular.groupby(["match_id", "innings"], observed=True, sort=False).agg(
        runs=("runs_total", "sum"),
        wickets=("wicket_count", "sum"),
        batting_team=("batting_team", "first"),
        target_runs=("target_runs", "first"),
    )


def check_results(deliveries: pd.DataFrame, matches: pd.DataFrame) -> ResultCheck:
    totals = innings_totals(deliveries)
    check = ResultCheck()
    for m in matches.itertuples(index=False):
        try:
            first, second = totals.loc[(m.match_id, 1)], totals.loc[(m.match_id, 2)]
        except KeyError:
            continue
        if pd.isna(m.method):
            check.chases_checked += 1
            if second.target_runs == first.runs + 1:
                check.targets_agree += 1
            else:
                check.problems.append(f"{m.match_id}: target {second.target_runs} but first innings made {first.runs}")
        decided = isinstance(m.winner, str) and pd.isna(m.method) and pd.isna(m.eliminator)
        if not decided:
            continue
        check.checked += 1
        if pd.notna(m.win_by_runs):
            ok = m.winner == first.batting_team and first.runs - second.runs == m.win_by_runs
            got = f"{first.batting_team} {first.runs} v {second.runs}"
        else:
            ok = (
                m.winner == second.batting_team
                and second.runs > first.runs
                and MAX_WICKETS - second.wickets == m.win_by_wickets
            )  # won "by 10 - w wickets"
            got = f"{second.batting_team} {second.runs}/{second.wickets} chasing {first.runs}"
        if ok:
            check.agree += 1
        else:
            margin = f"{m.win_by_runs:.0f} runs" if pd.notna(m.win_by_runs) else f"{m.win_by_wickets:.0f} wickets"
            check.problems.append(f"{m.match_id}: recorded {m.winner} by {margin}; table says {got}")
    return check
