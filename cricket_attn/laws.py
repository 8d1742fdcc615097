"""The laws of the game every stage stands on: a delivery's outcome classes, what counts as a wicket,
how the batters change ends. Plain numpy and pandas; nothing here knows of models or files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# The ten outcome classes of a delivery, in model order.
OUTCOMES = ("dot", "1", "2", "3", "4", "6", "wicket", "wide", "noball", "bye")
OUTCOME_INDEX = {name: i for i, name in enumerate(OUTCOMES)}
N_OUTCOMES = len(OUTCOMES)
# The "previous outcome" of an innings' first ball: a class of its own after the ten.
START_OF_INNINGS = N_OUTCOMES
# Runs each outcome is worth to the batting side, nominally, for the expected runs of a ball. Wides and
# no-balls count their one-run penalty; byes count one (the commonest). The simulator values each class as
# the seasons it knows recorded it (`simulation.scorebook.class_values`: a wide that went for five, four leg-byes).
OUTCOME_RUNS = np.array([0, 1, 2, 3, 4, 6, 0, 1, 1, 1], dtype=np.float64)

MAX_WICKETS = 10  # all out


def innings_over(runs, wickets, legal_balls, balls, target):
    """Whether an innings is over, by the Laws: all out, its legal balls bowled, or its target reached
    (`target` infinite for an innings that chases nothing). Over numbers, NumPy arrays and tensors alike: the
    one rule behind predict's next ball, the simulator's real innings and every simulated one."""
    return (wickets >= MAX_WICKETS) | (legal_balls >= balls) | (runs >= target)


# Legal balls an over may have: six by the Laws; four, five (The Hundred's sets) and eight have been
# played too. Anything else in a match file is corrupt, not cricket.
BALLS_PER_OVER = range(4, 9)
# The most overs an innings of a T20 has (The Hundred's 100 balls are twenty sets of five; a shortened match has
# fewer). A larger figure in a T20's file is the file's mistake: Cricsheet's men's T20 zip has nine 20-over
# matches that say 50 (1473145 among them).
T20_OVERS = 20
# Cricsheet's match types of a T20; conf/data/ipl.yaml's phases (formats.t20) name the same two (a test holds
# them equal).
T20_MATCH_TYPES = frozenset({"T20", "IT20"})
# Dismissals recorded on a delivery that are not team wickets: the batter may come back.
NOT_TEAM_WICKETS = frozenset({"retired hurt", "retired not out"})
# Dismissals the Laws credit to the bowler (Law 38 and on): a run out, a retirement, obstructing the field,
# handling the ball or hitting it twice are the batting side's loss but not the bowler's wicket.
BOWLERS_DISMISSALS = frozenset({"bowled", "caught", "caught and bowled", "lbw", "stumped", "hit wicket"})


def outcome_codes(d: pd.DataFrame) -> np.ndarray:
    """Each delivery's outcome class (its index in OUTCOMES), whether the table holds the outcome as a
    category or (joined with an archive) as text."""
    outcome = d["outcome"]
    if isinstance(outcome.dtype, pd.CategoricalDtype) and tuple(outcome.cat.categories) == OUTCOMES:
        return outcome.cat.codes.to_numpy()  # the table's own codes: no pass over millions of strings
    return pd.Categorical(outcome.astype(object), OUTCOMES).codes


def runs_ran(d: pd.DataFrame) -> np.ndarray:
    """Runs the batters physically ran on each delivery: boundaries and the one-run penalty of a wide or
    no-ball are not run; byes, leg-byes and runs off wides and no-balls are."""
    non_boundary = d["runs_non_boundary"].to_numpy(dtype=bool)
    bat = d["runs_batter"].to_numpy()
    bat = np.where(np.isin(bat, (4, 6)) & ~non_boundary, 0, bat)
    byes = (d["runs_byes"] + d["runs_legbyes"]).to_numpy()
    byes = np.where((byes == 4) & ~non_boundary, 0, byes)
    wides = np.maximum(d["runs_wides"].to_numpy() - 1, 0)
    wides = np.where((wides == 4) & ~non_boundary, 0, wides)
    return bat + byes + wides


def over_complete(legal_in_over, balls_per_over):
    """The over has had its legal balls (six by the Laws; five in The Hundred's sets), so the batters change
    ends before the next ball: over numbers, NumPy arrays and tensors alike (the record's replay and the
    simulator's rollouts read this one rule)."""
    return legal_in_over >= balls_per_over


def swaps_ends(ran):
    """An odd number of runs run puts each batter at the other end (numpy arrays or torch tensors)."""
    return ran % 2 == 1


def dismissed(d: pd.DataFrame, retirements: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(striker out, non-striker out) on each delivery, from `player_out`: whoever left the crease, or without
    `retirements` only those out (a batter retired hurt or retired not out is not out: no duck, no dismissal
    in his line; retired out is out)."""
    striker, other = np.zeros(len(d), dtype=bool), np.zeros(len(d), dtype=bool)
    some = d["player_out"].notna().to_numpy()  # a few balls in a hundred: only they are read one by one
    balls = d[some]
    out = balls["player_out"].astype(str).str.split(";")
    if not retirements:
        kinds = balls["wicket_kind"].astype(object).fillna("").astype(str).str.split(";")
        out = [[p for p, k in zip(o, ks, strict=True) if k not in NOT_TEAM_WICKETS] for o, ks in zip(out, kinds)]
    striker[some] = [b in o for b, o in zip(balls["batter"].astype(str), out)]
    other[some] = [b in o for b, o in zip(balls["non_striker"].astype(str), out)]
    return striker, other


def bowler_wickets(d: pd.DataFrame) -> np.ndarray:
    """Whether each delivery's wicket is the bowler's: one of the Laws' bowler's dismissals (a delivery with two,
    "bowled;retired hurt", counts if either is)."""
    kinds = d["wicket_kind"].astype(object).fillna("").astype(str)
    credited = {k: not BOWLERS_DISMISSALS.isdisjoint(k.split(";")) for k in kinds.unique()}  # a few kinds
    return d["outcome"].eq("wicket").to_numpy() & kinds.map(credited).to_numpy(dtype=bool)


def crease_after(d: pd.DataFrame, incoming: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(striker, non-striker, new over?) for the ball after each delivery: an odd number of runs run
    swaps the batters, and so does the end of an over. A dismissed (or retired) batter's place goes to
    the incoming batter, who is not known yet: `incoming` stands for him."""
    striker_out, other_out = dismissed(d)
    striker = np.where(striker_out, incoming, d["batter"].astype(str).to_numpy(dtype=object))
    other = np.where(other_out, incoming, d["non_striker"].astype(str).to_numpy(dtype=object))
    legal_in_over = d["ball_in_over"].to_numpy() - 1 + d["is_legal"].to_numpy(dtype=int)
    end_of_over = over_complete(legal_in_over, d["balls_per_over"].to_numpy())
    swap = swaps_ends(runs_ran(d)) ^ end_of_over
    return np.where(swap, other, striker), np.where(swap, striker, other), end_of_over


def batting_side_won(d: pd.DataFrame, matches: pd.DataFrame) -> np.ndarray:
    """For each row of `d` (match_id, batting_team), what came of the match for the side batting, from the
    matches table's result: 1 won, 0 lost, 0.5 a tie (whatever a super over then decided), NaN no result."""
    result = matches.assign(match_id=matches["match_id"].astype(str)).set_index("match_id")
    match_id = d["match_id"].astype(str)
    winner, outcome = match_id.map(result["winner"]), match_id.map(result["result"])
    return np.where(
        outcome.eq("tie"), 0.5, np.where(winner.isna(), np.nan, (winner == d["batting_team"]).astype(float))
    )
