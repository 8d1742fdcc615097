"""Which competition a match belongs to (cricket_attn/data/competitions.py): one league under its several
names, internationals by the ICC membership of both sides, club matches with no event kept apart. The real
files of other competitions: tests/data/test_leagues.py."""

from __future__ import annotations

from cricket_attn.data.competitions import (
    ASSOCIATE_T20IS,
    FULL_MEMBER_T20IS,
    OTHER_CLUB,
    competition_of,
)


def test_a_league_under_another_years_name_is_one_competition():
    names = ["NatWest T20 Blast", "Vitality Blast", "Vitality Blast Men"]
    assert {competition_of(n, "club", ["Surrey", "Kent"]) for n in names} == {"T20 Blast"}
    assert competition_of("Indian Premier League", "club", ["Mumbai Indians", "Chennai Super Kings"]) == (
        "Indian Premier League"
    )
    assert competition_of(None, "club", ["Surrey", "Kent"]) == OTHER_CLUB
    assert competition_of("", "club", ["Surrey", "Kent"]) == OTHER_CLUB


def test_internationals_are_two_levels_whatever_the_event():
    assert competition_of("ICC Men's T20 World Cup", "international", ["India", "Ireland"]) == FULL_MEMBER_T20IS
    assert competition_of("ICC Men's T20 World Cup", "international", ["India", "Netherlands"]) == ASSOCIATE_T20IS
    assert competition_of(None, "international", ["Nepal", "Oman"]) == ASSOCIATE_T20IS
    # the same event name for a club side is that club competition, not an international
    assert competition_of("ICC Men's T20 World Cup", "club", ["India", "Ireland"]) == "ICC Men's T20 World Cup"
