"""Which competition a match belongs to, and what kind of teams play it.

Cricsheet names a match's event as its organisers did that year, so one league has several names over
time (the T20 Blast was the NatWest T20 Blast, then the Vitality Blast). A competition is the event
under one name; every international match is one of two: between full members of the ICC, or with an
associate nation (a far weaker level of cricket). A club match with no event is "other club cricket".
"""

from __future__ import annotations

# Event names that are another year's name of the same competition.
ALIASES = {
    "NatWest T20 Blast": "T20 Blast",
    "Vitality Blast": "T20 Blast",
    "Vitality Blast Men": "T20 Blast",
    "Ram Slam T20 Challenge": "CSA T20 Challenge",
    "MiWAY T20 Challenge": "CSA T20 Challenge",
    "HRV Twenty20": "Super Smash",
    "HRV Cup": "Super Smash",
    "The Hundred Men's Competition": "The Hundred",
}

# The ICC's full members (with the World XI, picked from them), whose matches with one another are the
# top level of international T20 cricket.
FULL_MEMBERS = frozenset(
    {
        "Afghanistan", "Australia", "Bangladesh", "England", "India", "Ireland", "New Zealand", "Pakistan",
        "South Africa", "Sri Lanka", "West Indies", "Zimbabwe", "ICC World XI",
    }
)  # fmt: skip

FULL_MEMBER_T20IS = "T20I between full members"
ASSOCIATE_T20IS = "T20I with an associate"
OTHER_CLUB = "other club cricket"
TEAM_TYPES = ("club", "international")


def competition_of(event: str | None, team_type: str | None, teams: list[str]) -> str:
    """The competition of a match with this event name, team type and teams."""
    if team_type == "international":
        return FULL_MEMBER_T20IS if set(teams) <= FULL_MEMBERS else ASSOCIATE_T20IS
    if not event:
        return OTHER_CLUB
    return ALIASES.get(event, event)
