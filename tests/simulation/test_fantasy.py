"""Fantasy points from simulated lines (cricket_attn/simulation/fantasy.py, conf/fantasy/t20.yaml): each rule
of the table on lines worked out by hand, a table that cannot be applied refused by file and key, and the
points of a whole simulated match."""

from __future__ import annotations

import pandas as pd
import pytest

from cricket_attn.config import CONF_DIR
from cricket_attn.simulation.fantasy import FantasyError, FantasyTable
from cricket_attn.simulation.lines import LINE_COLUMNS
from cricket_attn.simulation.match import project_match

T20 = FantasyTable.load("t20")


def lines(**players) -> dict[str, pd.DataFrame]:
    """Draws of one simulation: each player's figures (runs, balls, fours, sixes, out, bats, bowled_balls,
    conceded, wickets), 0 where not given."""
    figures = ("runs", "balls", "fours", "sixes", "out", "bats", "bowled_balls", "conceded", "wickets")
    return {
        f: pd.DataFrame(
            [[p.get(f, False if f in ("out", "bats") else 0) for p in players.values()]], columns=list(players)
        )
        for f in figures
    }


def test_each_rule_of_the_default_table():
    draws = lines(
        fifty=dict(runs=55, balls=30, fours=5, sixes=2, bats=True),  # strike rate 183
        century=dict(runs=101, balls=70, fours=10, sixes=3, bats=True, out=True),  # 144
        duck=dict(runs=0, balls=3, bats=True, out=True),  # too few balls for a strike rate
        slow=dict(runs=20, balls=45, bats=True, out=True),  # 44
        haul=dict(bowled_balls=24, conceded=24, wickets=3),  # 6.0 an over
        tight=dict(bowled_balls=24, conceded=18, wickets=1),  # 4.5
        one_over=dict(bowled_balls=6, conceded=20),  # too few balls for an economy
        expensive=dict(bowled_balls=18, conceded=40, wickets=5),  # 13.3
        benched=dict(),
    )
    points = T20.points(draws).iloc[0].to_dict()
    assert points == {
        "fifty": 4 + 55 + 5 * 4 + 2 * 6 + 8 + 6,  # the 50 milestone, a strike rate over 170
        "century": 4 + 101 + 10 * 4 + 3 * 6 + 16 + 2,  # the century alone, 130-150
        "duck": 4 - 2,
        "slow": 4 + 20 - 6,
        "haul": 4 + 3 * 30 + 4 + 2,  # three wickets' haul, 6-7 an over
        "tight": 4 + 30 + 6,
        "one_over": 4,
        "expensive": 4 + 5 * 30 + 12 - 6,
        "benched": 4,
    }


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t["batting"].pop("four"), "batting.four: missing"),
        (lambda t: t["bowling"].update(wicket="lots"), "bowling.wicket: 'lots' is not a number"),
        (lambda t: t["economy"].update(min_balls=1.5), "economy.min_balls: 1.5 is not a whole number"),
        (lambda t: t["economy"]["bands"].append([4, 5.5, 1]), "economy.bands: the bands overlap"),
        (lambda t: t["strike_rate"]["bands"].append([80, 70, 1]), "strike_rate.bands: each row's from must be below"),
        (lambda t: t["batting"].update(milestones=[]), "batting.milestones: expected a map"),
        (lambda t: t.update(playing=float("inf")), "playing: inf is not finite"),
        (lambda t: t["economy"]["bands"].append([4, "five", 1]), "economy.bands: expected rows of three numbers"),
    ],
)
def test_a_table_that_cannot_be_applied_is_refused_by_its_key(edit, message):
    import yaml

    table = yaml.safe_load((CONF_DIR / "fantasy" / "t20.yaml").read_text())
    edit(table)
    with pytest.raises(FantasyError, match=f"mine.yaml: {message}"):
        FantasyTable.from_mapping(table, "mine.yaml")


def test_an_unknown_table_names_those_there_are():
    with pytest.raises(FantasyError, match=r"--fantasy dream: no .*dream.yaml \(have: t20\)"):
        FantasyTable.load("dream")


def test_a_simulated_matchs_points(fixture_simulator, fixture_tables, deliveries):
    match = deliveries[deliveries["match_id"] == "1473439"]
    _, lines = project_match(fixture_simulator, match, fixture_tables.matches, n=32, seed=2, players=True, fantasy=T20)
    assert list(lines.columns[4:-2]) == list(LINE_COLUMNS)
    assert (lines["fantasy_mean"] >= 4 - 2 - 6 - 6).all() and (lines["fantasy_q10"] <= lines["fantasy_q90"]).all()
    # each player's expected points are his expected line's, where the rules are linear: runs, boundaries, wickets
    linear = 4 + lines["runs_mean"] + 4 * lines["fours_mean"] + 6 * lines["sixes_mean"] + 30 * lines["wickets_mean"]
    assert (lines["fantasy_mean"] - linear).abs().max() < 40  # the bonuses and bands, bounded
    start = lines[(lines["innings"] == 1) & (lines["delivery_index"] == 0)]
    assert start.groupby("team")["fantasy_mean"].sum().between(200, 1500).all()
