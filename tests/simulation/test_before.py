"""A match before its first ball, from its file's info alone (the XIs, the venue, the date, the toss): the win
probability and the projected totals for each side that may bat first, every player's line, and a file that
cannot be simulated refused by its match and field."""

from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pytest
import torch

from cricket_attn.data.deliveries import build_tables
from cricket_attn.data.sources import MatchFile
from cricket_attn.simulation.before import (
    at_the_toss,
    batting_orders,
    context_before,
    project_before,
    side_by_side,
    side_chances,
)
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.match import PLAYER_COLUMNS, PROJECTION_COLUMNS, StateError, project_context
from tests.conftest import match_file

MATCH = "1473439"


def before(phases, edit=None):
    """The fixture match's file with its innings taken away (and `edit` applied to the rest): its matches table."""
    doc = json.loads(match_file(MATCH).raw)
    doc.pop("innings"), doc["info"].pop("outcome")  # as written before the match
    if edit:
        edit(doc)
    tables = build_tables([MatchFile(f"{MATCH}.json", MATCH, json.dumps(doc).encode())], phases)
    assert tables.deliveries.empty and len(tables.matches) == 1
    return tables.matches, doc


def test_with_the_toss_the_side_that_chose_bats_first(fixture_simulator, phases):
    matches, doc = before(phases)
    toss = doc["info"]["toss"]
    teams = doc["info"]["teams"]
    first = toss["winner"] if toss["decision"] == "bat" else next(t for t in teams if t != toss["winner"])
    projections, lines = project_before(
        fixture_simulator, matches, MATCH, n=64, seed=0, players=True, fantasy=FantasyTable.load()
    )
    assert list(projections.columns) == list(PROJECTION_COLUMNS) and len(projections) == 1
    row = projections.iloc[0]
    assert row["batting_team"] == first and row["order_weight"] == 1 and row["innings"] == 1
    assert (row["runs"], row["wickets"], row["legal_balls"], row["over"], row["ball"]) == (0, 0, 0, 0, 1)
    assert 0 < row["win_probability"] < 1 and row["win_probability_se"] > 0 and row["projected_total"] > 60
    assert row["bowling_team"] != first and 0 < row["projected_total_se"] < row["projected_total"] / 10
    # The chase after each simulated first innings ends at most a six past its target (first innings + 1).
    assert row["chase_projected_total_q10"] <= row["chase_projected_total"] <= row["projected_total"] + 6
    assert list(lines.columns) == list(PLAYER_COLUMNS)
    for team in teams:
        side = lines[lines["team"] == team]
        assert len(side) == len(doc["info"]["players"][team]) and set(side["player"]) == set(
            doc["info"]["players"][team]
        )
    batting_first = lines[lines["team"] == first]
    assert (batting_first["p_bats"] == 1).sum() >= 2 and lines["fantasy_mean"].notna().all()
    assert (lines["batting_first"] == first).all()
    again = project_before(fixture_simulator, matches, MATCH, n=64, seed=0)
    assert again["win_probability"].tolist() == projections["win_probability"].tolist()  # same seed, same numbers


def test_without_the_toss_either_side_bats_first_half_the_time(fixture_simulator, phases):
    matches, doc = before(phases, lambda doc: doc["info"].pop("toss"))
    projections = project_before(fixture_simulator, matches, MATCH, n=32, seed=0)
    assert sorted(projections["batting_team"]) == sorted(doc["info"]["teams"])
    assert projections["order_weight"].tolist() == [0.5, 0.5]
    assert projections["sims"].tolist() == [16, 16]  # the match's 32 simulations, half with each side batting first
    assert project_before(fixture_simulator, matches, MATCH, n=5, seed=0)["sims"].tolist() == [3, 2]  # 5 in all
    too_few = f"match {MATCH}: 1 simulation\\(s\\): before the toss at least 2, one an order"
    with pytest.raises(StateError, match=too_few):
        project_before(fixture_simulator, matches, MATCH, n=1)
    chances = side_chances(projections)
    assert sorted(chances["team"]) == sorted(doc["info"]["teams"])
    assert chances["win_probability"].sum() == pytest.approx(1)
    a, b = (projections.set_index("batting_team").loc[t] for t in doc["info"]["teams"])  # a bats first in one
    first_team = chances.set_index("team").loc[doc["info"]["teams"][0]]
    expected = 0.5 * (1 - a["win_probability"]) + 0.5 * b["win_probability"]
    assert first_team["win_probability"] == pytest.approx(expected)
    error = 0.5 * np.hypot(a["win_probability_se"], b["win_probability_se"])
    assert first_team["win_probability_se"] == pytest.approx(error)


def test_the_orders_simulated_side_by_side_are_each_as_simulated_alone(fixture_simulator, phases, monkeypatch):
    """Before the toss the two orders run side by side, on a thread of torch's each (`side_by_side`): each has
    its own draws (seed + k), so each order's projection and its players' draws are that order simulated alone,
    and torch's threads are as they were after."""
    matches, doc = before(phases, lambda doc: doc["info"].pop("toss"))
    row = matches.iloc[0]
    threads, set_threads, calls = torch.get_num_threads(), torch.set_num_threads, []
    monkeypatch.setattr(torch, "set_num_threads", lambda k: (calls.append(k), set_threads(k)))
    set_threads(2)
    try:
        projections, sides = project_before(fixture_simulator, matches, MATCH, n=24, seed=3, players=True, draws=True)
        assert calls == [1, 2] and torch.get_num_threads() == 2  # shared out, then restored
    finally:
        set_threads(threads)
    for k, (first, _) in enumerate(batting_orders(row)):
        ctx = context_before(matches, row, first)
        alone, drawn = project_context(fixture_simulator, ctx, 12, 3 + k, False, True, None, True)
        mine = projections[projections["batting_team"] == first].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine.drop(columns="order_weight"), alone.drop(columns="order_weight"))
        for side, alone_side in zip([s for s in sides if s.point["batting_first"] == first], drawn, strict=True):
            assert side.team == alone_side.team
            for figure, values in alone_side.draws.items():
                pd.testing.assert_frame_equal(side.draws[figure], values)


def test_side_by_side_runs_in_order_with_one_thread_and_restores_the_threads_after_an_error():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # fewer of torch's threads than runs: one after the other, in this thread
        assert side_by_side(lambda k: (k, threading.current_thread() is threading.main_thread()), 2) == [
            (0, True),
            (1, True),
        ]
        torch.set_num_threads(2)
        with torch.no_grad():  # the caller's grad mode in each thread (torch keeps it per thread)
            assert side_by_side(lambda k: (k, torch.is_grad_enabled(), torch.get_num_threads()), 2) == [
                (0, False, 1),
                (1, False, 1),
            ]

        def fails(k):
            if k == 1:
                raise StateError("match 1: order 1")
            return k

        with pytest.raises(StateError, match="order 1"):
            side_by_side(fails, 2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_before_the_toss_a_players_line_is_over_every_simulation_of_the_match(fixture_simulator, phases):
    """One line per listed player over the match's n simulations, whichever side batted first in them: its
    mean and quantiles those of his figures over both orders' draws together (the mixture's own quantiles)."""
    matches, doc = before(phases, lambda doc: doc["info"].pop("toss"))
    fantasy = FantasyTable.load()
    _, lines = project_before(fixture_simulator, matches, MATCH, n=16, seed=0, players=True, fantasy=fantasy)
    _, sides = project_before(fixture_simulator, matches, MATCH, n=16, seed=0, players=True, draws=True)
    assert len(lines) == sum(len(xi) for xi in doc["info"]["players"].values()) and lines["batting_first"].isna().all()
    assert (lines["sims"] == 16).all() and (lines["order_weight"] == 1).all()
    assert (lines["runs_so_far"] == 0).all() and (lines["fantasy_so_far"] == fantasy.playing).all()  # nothing yet
    for team in doc["info"]["teams"]:
        runs = pd.concat([s.draws["runs"] for s in sides if s.team == team], ignore_index=True).fillna(0)
        assert len(runs) == 16 and len({s.point["batting_first"] for s in sides if s.team == team}) == 2
        mine = lines[lines["team"] == team].set_index("player")
        np.testing.assert_allclose(mine.loc[runs.columns, "runs_mean"], runs.mean(), rtol=1e-9)
        np.testing.assert_allclose(mine.loc[runs.columns, "runs_q90"], runs.quantile(0.9), rtol=1e-9)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda info, a, b: info["players"].update({a: info["players"][a][:10]}), "info.players.{a}: 10 players"),
        (lambda info, a, b: info["players"][a].extend(["X"] * (13 - len(info["players"][a]))), "info.players.{a}: 13"),
        (
            lambda info, a, b: info["players"][b].__setitem__(0, info["players"][a][0]),
            "info.players: {p} listed for both",
        ),
        (lambda info, a, b: info.pop("venue"), "info.venue: no venue"),
        (lambda info, a, b: info.pop("players"), "info.players.{a}: no players listed"),
        (lambda info, a, b: info.update(match_type="ODI", overs=50), "info.match_type: ODI of 6-ball overs"),
    ],
)
def test_a_match_that_cannot_be_simulated_is_refused_by_its_field(fixture_simulator, phases, edit, field):
    doc = json.loads(match_file(MATCH).raw)
    a, b = doc["info"]["teams"]
    p = doc["info"]["players"][a][0]
    matches, _ = before(phases, lambda doc: edit(doc["info"], a, b))
    with pytest.raises(StateError, match=f"match {MATCH}: " + field.format(a=a, p=p)):
        project_before(fixture_simulator, matches, MATCH, n=4)


def test_at_the_toss_each_xi_is_its_named_eleven_in_the_order_of_their_usual_places(ipl_tables):
    """1473438 (IPL 2025): the files list each side after the match, in the order it batted and with the impact
    player who came in; at the toss each side is the eleven it named, ordered by where each one usually bats
    (the median of his places in his last ten matches before the day, as their balls give them), the newcomers
    last."""
    d, m = ipl_tables.deliveries, ipl_tables.matches
    toss = at_the_toss(m, d)
    row = toss[toss["match_id"].astype(str) == "1473438"].iloc[0]
    listed = m[m["match_id"].astype(str) == "1473438"].iloc[0]
    regular = d[~d["is_super_over"].astype(bool) & (d["date"] < listed["date"])]
    innings = {key: balls for key, balls in regular.groupby(["match_id", "batting_team"], observed=True)}
    earlier = m[m["date"] < listed["date"]].sort_values("date", kind="stable")
    for side in ("team1", "team2"):
        xi, was = row[f"{side}_players"].split(";"), listed[f"{side}_players"].split(";")
        assert len(xi) == 11 and set(xi) == set(was) - {listed[f"{side}_came_in"]}
        ids = dict(zip(was, listed[f"{side}_player_ids"].split(";")))
        assert row[f"{side}_player_ids"].split(";") == [ids[p] for p in xi]
        usual = []
        for player in xi:  # by hand: his places in the batting orders of his last ten earlier matches
            places = []
            named = earlier["team1_players"].str.contains(player, regex=False) | earlier["team2_players"].str.contains(
                player, regex=False
            )  # a quick sieve; the exact test of his name is below
            for _, e in earlier[named].iterrows():
                for s in ("team1", "team2"):
                    names = str(e[f"{s}_players"]).split(";")
                    if player not in names:
                        continue
                    balls = innings.get((e["match_id"], e[s]), regular.iloc[:0])  # a side that never batted: none
                    crease = list(dict.fromkeys(np.column_stack([balls["batter"], balls["non_striker"]]).ravel()))
                    order = crease + [p for p in names if p not in crease]
                    places.append(order.index(player))
            usual.append(np.median(places[-10:]) if places else np.inf)
        assert usual == sorted(usual) and usual[0] < 2  # an opener first
    assert row["team2_players"].split(";") != listed["team2_players"].split(";")[:11]


def test_a_side_of_twelve_that_does_not_say_who_came_in_has_no_xi_at_the_toss(ipl_tables):
    m = ipl_tables.matches
    m = m.assign(team2_came_in=m["team2_came_in"].where(m["match_id"].astype(str) != "1473438"))
    row = at_the_toss(m, ipl_tables.deliveries).set_index(m["match_id"].astype(str)).loc["1473438"]
    assert pd.isna(row["team2_players"]) and len(row["team1_players"].split(";")) == 11


def test_a_list_written_before_the_match_is_its_batting_order_as_written(phases):
    """1473439 lists Sunrisers' 12 after the match with the impact player swapped out (A Zampa) first, and
    the order read from its deliveries puts him last; the same list in a file of the info alone (written once
    the sides are named) is an analyst's batting order, taken as written."""
    from cricket_attn.simulation.setup import InningsSetup

    doc = json.loads(match_file("1473439").raw)
    team = "Sunrisers Hyderabad"
    listed = doc["info"]["players"][team]
    doc.pop("innings"), doc["info"].pop("outcome")
    tables = build_tables([MatchFile("1473439.json", "1473439", json.dumps(doc).encode())], phases)
    other = next(t for t in doc["info"]["teams"] if t != team)
    setup = InningsSetup.before_match(tables.matches, "1473439", team, other)
    assert len(listed) == 12 and listed[0] == "A Zampa" and setup.batting == listed


def test_each_sides_chance_adds_the_orders_by_their_weight():
    """By hand: A bats first in one order (B chasing wins 40%), B in the other (A chasing wins 70%): A's chance
    0.5 * 0.6 + 0.5 * 0.7, B's the rest, the error the orders' errors added as independent; with the toss known
    (one order) the batting side's chance is 1 minus the chaser's, with the chaser's error."""
    two = pd.DataFrame(
        {"match_id": "m", "innings": 1, "delivery_index": 0, "batting_team": ["A", "B"], "bowling_team": ["B", "A"],
         "win_probability": [0.4, 0.7], "win_probability_se": [0.03, 0.04], "order_weight": [0.5, 0.5]}
    )  # fmt: skip
    chances = side_chances(two).set_index("team")
    assert chances["win_probability"].to_dict() == pytest.approx({"A": 0.65, "B": 0.35})
    assert chances["win_probability_se"].tolist() == pytest.approx([0.025, 0.025])  # 0.5 * hypot(0.03, 0.04)
    one = side_chances(two.iloc[[0]].assign(order_weight=1.0)).set_index("team")
    assert one["win_probability"].to_dict() == pytest.approx({"A": 0.6, "B": 0.4})
    assert one["win_probability_se"].tolist() == pytest.approx([0.03, 0.03])
    later = two.assign(delivery_index=6)  # a state after the first ball is not before the match
    assert side_chances(later).empty


def test_sets_of_draws_listing_different_players_pool_over_all_of_them():
    """A side's draws of two orders whose lists differ (a twelfth player in one): the pooled figure is each
    set's rows in turn, a player a set does not list with nothing there (0 runs, not out, did not bat)."""
    from cricket_attn.simulation.lines import pooled_draws

    first = {"runs": pd.DataFrame({"x": [10, 20]}), "bats": pd.DataFrame({"x": [True, True]})}
    second = {"runs": pd.DataFrame({"y": [5], "x": [0]}), "bats": pd.DataFrame({"y": [True], "x": [False]})}
    pooled = pooled_draws([first, second])
    assert pooled["runs"].to_dict("list") == {"x": [10, 20, 0], "y": [0, 0, 5]}
    assert pooled["bats"].to_dict("list") == {"x": [True, True, False], "y": [False, False, True]}
