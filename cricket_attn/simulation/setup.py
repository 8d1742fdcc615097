"""The innings to simulate: who can bat (in batting order) and bowl, where, when, in which competition and
for how long, as a real match's files give it (its players, their registry ids, the impact player moved
to the end of the order)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cricket_attn.data.features import innings_balls
from cricket_attn.data.sequences import SequenceEncoder


@dataclass
class InningsSetup:
    """What one innings' simulations share: who can bat (in batting order) and bowl, where, and its length."""

    batting: list[str]  # the batting side's players, in batting order
    bowling: list[str]  # the bowling side's players
    venue: str
    season: int
    match_type: str
    balls_per_over: int
    balls: int  # legal balls the innings may last (a reduced chase: its target overs)
    chase: bool  # the second innings, chasing a target
    date: pd.Timestamp | None = None  # the match's: players' histories are as of it (for a model reading them)
    competition: str = ""  # the match's competition and team type ("": unknown to any model)
    team_type: str = ""
    city: str | None = None  # the ground's city, where the file gives it (some ground names are shared)
    ids: dict[str, str] = field(default_factory=dict)  # this match's players' registry ids, by name
    powerplays: str = ""  # the innings' own powerplays as the deliveries table records them ("": the format's)

    def player_keys(self, encoder: SequenceEncoder, role: str, names: list[str]) -> list[str]:
        """Players listed by name as the encoder knows them: by this match's registry ids (two players can
        share a name), else as the encoder's player of that name who played last."""
        return [self.ids.get(name) or key for name, key in zip(names, encoder.player_keys(role, names))]

    @classmethod
    def from_table(cls, d: pd.DataFrame, matches: pd.DataFrame | None = None) -> InningsSetup:
        """One regular innings of a deliveries table. The sides are the players the matches table lists
        for them (see `squads`), then anyone else who batted or bowled in `d`, in order of appearance."""
        first = d.iloc[0]
        batting, bowling = squads(matches, first["match_id"], str(first["batting_team"]), str(first["bowling_team"]))
        seen_batters = pd.unique(np.column_stack([d["batter"].astype(str), d["non_striker"].astype(str)]).ravel())
        return cls(
            batting=[*batting, *(p for p in seen_batters if p not in batting)],
            bowling=[*bowling, *(p for p in pd.unique(d["bowler"].astype(str)) if p not in bowling)],
            venue=str(first["venue"]),
            season=int(first["season"]),
            match_type=str(first["match_type"]),
            balls_per_over=int(first["balls_per_over"]),
            balls=int(innings_balls(d.iloc[:1])[0]),
            chase=bool(pd.notna(first["target_runs"])),
            date=pd.Timestamp(first["date"]),
            competition=str(first["competition"]) if "competition" in d and pd.notna(first["competition"]) else "",
            team_type=str(first["team_type"]) if "team_type" in d and pd.notna(first["team_type"]) else "",
            city=str(first["city"]) if "city" in d and pd.notna(first["city"]) else None,
            ids=registry_ids(d, matches, first["match_id"]),
            powerplays=str(first["powerplays"]) if "powerplays" in d and pd.notna(first["powerplays"]) else "",
        )

    @classmethod
    def before_match(cls, matches: pd.DataFrame, match_id, batting_team: str, bowling_team: str) -> InningsSetup:
        """The first innings of a match not yet begun (its file's info alone: the sides, the venue, the date):
        the sides as listed (`squads`), the scheduled overs (20 where the file gives none), the format's
        powerplays."""
        row = matches.loc[matches["match_id"].astype(str) == str(match_id)].iloc[0]
        batting, bowling = squads(matches, match_id, batting_team, bowling_team)
        overs = int(row["scheduled_overs"]) if pd.notna(row.get("scheduled_overs")) else 20
        text = lambda key: str(row[key]) if key in row and pd.notna(row[key]) else ""
        return cls(
            batting=batting,
            bowling=bowling,
            venue=text("venue"),
            season=int(row["season"]),
            match_type=str(row["match_type"]),
            balls_per_over=int(row["balls_per_over"]),
            balls=overs * int(row["balls_per_over"]),
            chase=False,
            date=pd.Timestamp(row["date"]),
            competition=text("competition"),
            team_type=text("team_type"),
            city=text("city") or None,
            ids=registry_ids(pd.DataFrame(), matches, match_id),
        )


def registry_ids(d: pd.DataFrame, matches: pd.DataFrame | None, match_id) -> dict[str, str]:
    """Name -> registry id of a match's players: both sides as the matches table lists them, and whoever
    batted or bowled in `d` (the match's deliveries, which carry their ids)."""
    ids = {}
    if matches is not None and "team1_player_ids" in matches:
        row = matches.loc[matches["match_id"].astype(str) == str(match_id)]
        for side in ("team1", "team2") if len(row) else ():
            names, keys = row.iloc[0][f"{side}_players"], row.iloc[0][f"{side}_player_ids"]
            if isinstance(names, str) and isinstance(keys, str):
                ids.update((n, k) for n, k in zip(names.split(";"), keys.split(";")) if k)
    for role in ("batter", "non_striker", "bowler"):
        if f"{role}_id" in d:
            pairs = d[[role, f"{role}_id"]].dropna().astype(str).drop_duplicates()
            ids.update(zip(pairs[role], pairs[f"{role}_id"]))
    return ids


def squads(matches: pd.DataFrame | None, match_id, batting_team: str, bowling_team: str) -> tuple[list[str], list[str]]:
    """(batting order, bowling side) from the players the match file lists, or [] where it lists none.

    The batting order is the listed order, except that a list of 12 (the impact-player rule, IPL 2023 on)
    names first, most often, a bowler who is swapped out and never bats: he goes to the end. On the IPL
    archive this makes the next batter in the order the one who came in for 99.7% of incoming batters
    (98.8% since 2023, against 26.9% with the list as it is), and the first two the openers in 95% of innings.
    That is the order of a list written after the match; a file of a match not begun (no delivery: written
    once the sides are named) is taken as written, in batting order, a twelfth name last.
    """
    if matches is None or "team1_players" not in matches:
        return [], []
    row = matches.loc[matches["match_id"].astype(str) == str(match_id)]
    if row.empty:
        return [], []
    row = row.iloc[0]
    listed = {row["team1"]: row["team1_players"], row["team2"]: row["team2_players"]}
    batting, bowling = (str(listed.get(t)).split(";") if listed.get(t) else [] for t in (batting_team, bowling_team))
    written_before = row.get("n_deliveries") == 0
    return (batting if written_before else batting_order(batting)), bowling


def batting_order(listed: list) -> list:
    """A side's batting order from its list (`squads`): a list of 12 has its first, the impact player swapped
    out, at the end."""
    return listed[1:] + listed[:1] if len(listed) == 12 else listed
