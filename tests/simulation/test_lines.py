"""Each player's line from simulated innings (cricket_attn/simulation/lines.py): on a real innings replayed
ball by ball the lines are its scorecard; from simulations, every run off the bat and every legal ball is some
listed player's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cricket_attn.laws import bowler_wickets
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.lines import BYTES_A_DRAW, LINE_COLUMNS, draw_table, innings_draws, last_state, summarise
from cricket_attn.simulation.match import MatchContext, line_rows, project_match
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import replay


def scorecard(inn: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The innings' batting and bowling card from its deliveries, by pandas alone: a four or six is a boundary
    (four runs all run are not a four), and a batter retired hurt or retired not out is not out."""
    boundary = ~inn["runs_non_boundary"].astype(bool)
    d = inn.assign(
        faced=inn["runs_wides"] == 0,
        four=(inn["runs_batter"] == 4) & boundary,
        six=(inn["runs_batter"] == 6) & boundary,
        conceded=inn["runs_batter"] + inn["runs_wides"] + inn["runs_noballs"],
        credited=bowler_wickets(inn),
    )
    batting = d.groupby("batter", observed=True).agg(
        runs=("runs_batter", "sum"), balls=("faced", "sum"), fours=("four", "sum"), sixes=("six", "sum")
    )
    out = set()
    for players, kinds in zip(d["player_out"].astype(object).fillna(""), d["wicket_kind"].astype(object).fillna("")):
        for player, kind in zip(str(players).split(";"), str(kinds).split(";")):
            if player and kind not in ("retired hurt", "retired not out"):
                out.add(player)
    batting["out"] = [name in out for name in batting.index.astype(str)]
    bowling = d.groupby("bowler", observed=True).agg(
        bowled_balls=("is_legal", "sum"), conceded=("conceded", "sum"), wickets=("credited", "sum")
    )
    return batting, bowling


def test_a_replayed_innings_gives_its_scorecard(fixture_simulator, fixture_tables, deliveries):
    """Every regular innings of the fixture matches, replayed into a one-simulation state: each batter's
    runs, balls, fours, sixes and dismissal, and each bowler's balls, runs and wickets, are the card's (among
    them D Padikkal's four all run in 1304066, Harbhajan Singh retired hurt in 729309, KH Pandya in 1082628)."""
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    for _, inn in regular.groupby(["match_id", "innings"], sort=False, observed=True):
        inn = inn.reset_index(drop=True)
        setup = InningsSetup.from_table(inn, fixture_tables.matches)
        target = float(inn["target_runs"].astype("Float64").fillna(0).iloc[0])
        state = replay(fixture_simulator.start(setup, 1, target), inn)
        batters, bowlers = innings_draws(state)
        batting, bowling = scorecard(inn)
        where = inn["match_id"].iloc[0], inn["innings"].iloc[0]
        for name, card in batting.iterrows():
            for figure in ("runs", "balls", "fours", "sixes", "out"):
                assert batters[figure][str(name)].iloc[0] == card[figure], (where, name, figure)
        for name, card in bowling.iterrows():
            for figure in ("bowled_balls", "conceded", "wickets"):
                assert bowlers[figure][str(name)].iloc[0] == card[figure], (where, name, figure)
        # Who came to the crease: not the next in the order when a wicket ended the innings; where it stopped
        # short of its end by the Laws (rain), the state cannot know and has him in.
        came = set(inn["batter"].astype(str)) | set(inn["non_striker"].astype(str))
        bats = set(batters["bats"].columns[batters["bats"].iloc[0].to_numpy()])
        extra = bats - came
        assert came <= bats, where
        assert not extra or (len(extra) == 1 and not bool(state.finished()[0])), (where, extra)


def test_simulated_lines_add_up_to_the_innings(fixture_simulator, fixture_tables, deliveries):
    inn = deliveries[(deliveries["match_id"] == "1473439") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    state = fixture_simulator.start(setup, 300)
    team = str(inn["bowling_team"].iloc[0])
    rule = BowlerChoice.for_innings(state, fixture_simulator.usage, inn["date"].iloc[0])
    _, final = fixture_simulator.roll(
        state, fixture_simulator.new_caches(), rule, torch.Generator().manual_seed(0), keep_states=True
    )
    batters, bowlers = innings_draws(final)
    # Every run off the bat is a listed batter's, every legal ball a listed bowler's, in every simulation.
    assert (batters["runs"].sum(axis=1).to_numpy() == final.batter_runs.sum(1).numpy()).all()
    assert (bowlers["bowled_balls"].sum(axis=1).to_numpy() == final.legal.numpy()).all()
    assert (bowlers["wickets"].sum(axis=1).to_numpy() <= final.wickets.numpy()).all()
    assert list(batters["runs"].columns) == setup.batting and list(bowlers["wickets"].columns) == setup.bowling
    batting = summarise(batters, str(inn["batting_team"].iloc[0]))
    assert list(batting.columns) == list(LINE_COLUMNS) and batting["wickets_mean"].isna().all()  # no bowling here
    assert np.isclose(batting["runs_mean"].sum(), final.batter_runs.sum(1).double().mean().item())
    assert (batting["p_bats"].iloc[:2] == 1).all()  # the openers
    assert (batting["runs_q10"] <= batting["runs_q50"]).all() and (batting["runs_q50"] <= batting["runs_q90"]).all()
    assert (batting["p_50"] <= batting["p_30"]).all() and (batting["p_out"] <= batting["p_bats"]).all()
    bowling = summarise(bowlers, team)
    assert np.isclose(bowling["bowled_balls_mean"].sum(), final.legal.double().mean().item())
    assert (bowling["p_3_wickets"] <= bowling["p_2_wickets"]).all() and bowling["runs_mean"].isna().all()


def test_a_matchs_lines_from_every_point_join_both_innings(fixture_simulator, fixture_tables, deliveries):
    """Each player's line in the match from every over start: his side's batting and bowling over the same
    simulations; from the chase, the first innings is the real one, exactly; the projections unchanged."""
    match = deliveries[deliveries["match_id"] == "1473439"]
    projections, lines = project_match(fixture_simulator, match, fixture_tables.matches, n=16, seed=1, players=True)
    pd.testing.assert_frame_equal(
        projections, project_match(fixture_simulator, match, fixture_tables.matches, n=16, seed=1)
    )
    ctx = MatchContext.of(match, fixture_tables.matches)
    points = projections[["innings", "delivery_index"]].drop_duplicates()
    assert len(lines[["innings", "delivery_index"]].drop_duplicates()) == len(points)
    for team, number in ((ctx.teams[1], 1), (ctx.teams[2], 2)):
        side = set(ctx.setups[number].batting)  # the XI as listed (and anyone else who batted)
        per_point = lines[lines["team"] == team].groupby(["innings", "delivery_index"])["player"].apply(set)
        assert all(players == side | set(ctx.setups[3 - number].bowling) for players in per_point)
    first = match[match["innings"] == 1]
    card = first.groupby("batter", observed=True)["runs_batter"].sum()
    in_chase = lines[(lines["innings"] == 2) & (lines["team"] == ctx.teams[1])].set_index(["delivery_index", "player"])
    for (_, player), row in in_chase.iterrows():  # the first innings is over: its runs are known to the run
        assert row["runs_q10"] == row["runs_q90"] == card.get(player, 0), player
    start = lines[(lines["innings"] == 1) & (lines["delivery_index"] == 0)]
    assert start["p_bats"].between(0, 1).all() and (start["p_bowls"] <= 1).all()
    assert (start.groupby("team")["p_bats"].apply(lambda p: (p == 1).sum()) >= 2).all()  # both sides' openers


def test_a_players_figures_so_far_are_the_real_balls_before_the_state(fixture_simulator, fixture_tables, deliveries):
    """From every over start of a match, each player's `*_so_far` are his figures in the real balls before
    that state (the whole first innings from the chase's states), and what the simulations give him from
    there never falls below them: his mean and every quantile of each figure are at least his figures so far."""
    match = deliveries[deliveries["match_id"] == "1473439"]
    fantasy = FantasyTable.load()
    _, lines = project_match(
        fixture_simulator, match, fixture_tables.matches, n=16, seed=1, players=True, fantasy=fantasy
    )
    innings = {k: match[match["innings"] == k].reset_index(drop=True) for k in (1, 2)}
    for (number, index), at in lines.groupby(["innings", "delivery_index"]):
        before = [innings[1].iloc[: index if number == 1 else len(innings[1])]]
        before += [innings[2].iloc[:index]] if number == 2 else []
        played = pd.concat(before, ignore_index=True)
        runs = played.groupby("batter", observed=True)["runs_batter"].sum()
        conceded = (played["runs_batter"] + played["runs_wides"] + played["runs_noballs"]).groupby(
            played["bowler"].astype(str)
        )
        mine = at.set_index("player")
        np.testing.assert_array_equal(mine["runs_so_far"], runs.reindex(mine.index, fill_value=0), str(index))
        np.testing.assert_array_equal(
            mine["conceded_so_far"], conceded.sum().reindex(mine.index, fill_value=0), str(index)
        )
        assert mine["balls_so_far"].sum() == (played["runs_wides"] == 0).sum()
        for figure in ("runs", "balls", "fours", "sixes", "wickets", "bowled_balls", "conceded"):
            assert (mine[f"{figure}_q10"] >= mine[f"{figure}_so_far"]).all(), (figure, index)
            assert (mine[f"{figure}_q10"] <= mine[f"{figure}_q50"]).all() and (
                mine[f"{figure}_q50"] <= mine[f"{figure}_q90"]
            ).all()
            assert (mine[f"{figure}_mean"] >= mine[f"{figure}_so_far"] - 1e-9).all()
    start = lines[(lines["innings"] == 1) & (lines["delivery_index"] == 0)]
    assert (start["fantasy_so_far"] == fantasy.playing).all()  # nothing bowled: a place in the XI alone
    assert (start[[c for c in LINE_COLUMNS if c.endswith("_so_far") and c != "fantasy_so_far"]] == 0).all().all()


def test_every_player_has_his_points_for_playing_so_far_whatever_the_lists_say(
    fixture_simulator, fixture_tables, deliveries
):
    """A match whose file lists no XIs (its sides known from the balls alone, the chase's batters only in the
    chase): before the first ball every player of both sides has done nothing yet, fantasy's points for playing
    alone; and the draws file of that state is within the memory it is checked against, a row at a time."""
    match = deliveries[deliveries["match_id"] == "1473439"]
    unlisted = fixture_tables.matches.assign(team1_players=None, team2_players=None)
    fantasy = FantasyTable.load()
    _, sides = project_match(fixture_simulator, match, unlisted, n=4, seed=0, players=True, draws=True)
    lines = pd.DataFrame(line_rows(sides, fantasy))
    start = lines[(lines["innings"] == 1) & (lines["delivery_index"] == 0)]
    assert len(start) >= 22 and (start["fantasy_so_far"] == fantasy.playing).all()
    table = draw_table(last_state(sides), fantasy)
    assert len(table) == 4 * sum(len(side.draws["runs"].columns) for side in last_state(sides))
    assert table.memory_usage(deep=True).sum() / len(table) <= BYTES_A_DRAW
