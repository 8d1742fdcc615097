"""The next ball of an unfinished innings (`data.next_ball`): its players known as the model knows them, its
phase by the innings' own powerplays."""

from __future__ import annotations

import json

from cricket_attn.data.deliveries import build_tables
from cricket_attn.data.next_ball import next_ball_rows
from cricket_attn.data.sources import MatchFile, iter_match_files
from tests.commands.test_predict import LIVE_MATCH, live_copy
from tests.conftest import FIXTURES


def test_next_ball_players_keep_their_registry_ids(tmp_path, phases):
    """The model knows players by registry id: the next ball's striker, non-striker and (mid-over) bowler
    carry the ids the match's own balls give them, so a known player is not read as a stranger."""
    tables = build_tables(iter_match_files([live_copy(tmp_path)]), phases)
    (nxt,) = next_ball_rows(tables, phases).itertuples(index=False)
    registry = json.loads((FIXTURES / f"{LIVE_MATCH}.json").read_text())["info"]["registry"]["people"]
    assert (nxt.batter_id, nxt.non_striker_id, nxt.bowler_id) == tuple(
        registry[name] for name in (nxt.batter, nxt.non_striker, nxt.bowler)
    )


def test_the_next_ball_reads_its_innings_own_powerplay(tmp_path, phases):
    """The Big Bash's first innings of 1386137, live after five overs (its four-over powerplay recorded): the
    next ball, the sixth over's first, is in the middle overs as the table's balls of the fifth are, not in
    the format's six-over powerplay."""
    doc = json.loads((FIXTURES.parent / "cricsheet_t20" / "1386137.json").read_text())
    doc["info"]["outcome"] = {}
    doc["innings"] = doc["innings"][:1]
    doc["innings"][0]["overs"] = doc["innings"][0]["overs"][:5]
    doc["innings"][0]["powerplays"] = doc["innings"][0]["powerplays"][:1]  # the surge is not called yet
    tables = build_tables([MatchFile("live.json", "live", json.dumps(doc).encode())], phases)
    assert tables.deliveries.groupby("over")["phase"].first().astype(str).tolist() == ["powerplay"] * 4 + ["middle"]
    (nxt,) = next_ball_rows(tables, phases).itertuples(index=False)
    assert (nxt.over, nxt.legal_ball_index, nxt.phase) == (5, 30, "middle")
