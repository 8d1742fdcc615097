"""Pictures of players' value (cricket_attn/valuation/plots.py): the leaders with their intervals and one
player's card, drawn from the fixtures' real balls (valued against their average ball) and read back."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from cricket_attn.valuation import plots
from cricket_attn.valuation.players import player_values
from tests.simulation.test_plots import assert_png, keeping_figures
from tests.valuation.test_reliability import fixture_balls

MIN_BALLS = 30  # a season's card
LEADERS_MIN_BALLS = 72  # over all the fixtures
ALL_ROUNDER = "KH Pandya"  # batted and bowled in five of the fixtures' seasons


@pytest.fixture(scope="module")
def balls(deliveries):
    return fixture_balls(deliveries)


@pytest.fixture(scope="module")
def by_season(balls):
    return player_values(balls, by=["season"], min_balls=MIN_BALLS, n_boot=50)


@pytest.fixture
def drawn(monkeypatch):
    return keeping_figures(monkeypatch, plots)


@pytest.fixture(scope="module")
def leaders(balls, tmp_path_factory):
    """Over all the fixtures, the thirteen best of those with 72 balls or more: fourteen batters have as many,
    twelve bowlers."""
    table = player_values(balls, by=[], min_balls=LEADERS_MIN_BALLS, n_boot=50)
    with pytest.MonkeyPatch.context() as mp:
        figures = keeping_figures(mp, plots)
        path = plots.plot_leaders(table, tmp_path_factory.mktemp("leaders") / "leaders.png", top=13, title="IPL")
    return {"table": table, "path": path, "figure": figures[0]}


def ranked(table: pd.DataFrame, role: str, value: str) -> pd.DataFrame:
    """The players of `role` with enough balls, best first."""
    mine = table[table["role"] == role]
    return mine[mine["balls"] >= LEADERS_MIN_BALLS].sort_values(value, ascending=False)


def test_the_leaders_are_drawn_best_at_the_top_with_the_balls_a_scorer_counts(leaders, deliveries):
    """Each labelled with his balls (faced; legal balls bowled), at his value, the best at the top."""
    assert_png(leaders["path"])
    figure, table = leaders["figure"], leaders["table"]
    assert figure.get_suptitle() == "IPL"
    regular = deliveries[~deliveries["is_super_over"]]
    counted = {
        "batting": regular[regular["runs_wides"] == 0].groupby(regular["batter_id"].astype(str)).size(),
        "bowling": regular[regular["is_legal"]].groupby(regular["bowler_id"].astype(str)).size(),
    }
    for ax, role, value in zip(figure.axes, ("batting", "bowling"), ("runs_above_expected", "runs_saved")):
        best = ranked(table, role, value).head(13)
        labels = [f"{p} ({counted[role][key]} balls)" for p, key in zip(best["player"], best["player_id"])]
        assert [t.get_text() for t in ax.get_yticklabels()] == labels[::-1]  # from the bottom up
        points = ax.get_lines()[0]
        np.testing.assert_allclose(points.get_xdata(), best[value].to_numpy()[::-1])


def test_the_list_stops_at_the_top_asked_for_or_at_the_last_ranked_player(leaders):
    """Thirteen of the fourteen batters with 72 balls, the fourteenth left out; all twelve bowlers; never a
    player with fewer balls."""
    for ax, role, value, shown in zip(
        leaders["figure"].axes, ("batting", "bowling"), ("runs_above_expected", "runs_saved"), (13, 12)
    ):
        players = ranked(leaders["table"], role, value)
        assert len(players) == {"batting": 14, "bowling": 12}[role]
        assert ax.get_title() == f"{role}: top {shown}"
        names = {t.get_text().rsplit(" (", 1)[0] for t in ax.get_yticklabels()}
        assert names == set(players["player"].head(shown))


def test_a_card_has_a_bar_for_each_season_he_batted_and_bowled(by_season, deliveries, drawn, tmp_path):
    """Named as he is written: a bar a season in each role, his value that season, green above the average."""
    plots.plot_card(by_season, ALL_ROUNDER, tmp_path / "card.png")
    assert_png(tmp_path / "card.png")
    regular = deliveries[~deliveries["is_super_over"]]
    seasons = {
        "batting": sorted(
            regular.loc[(regular["batter"] == ALL_ROUNDER) & (regular["runs_wides"] == 0), "season"].unique()
        ),
        "bowling": sorted(regular.loc[regular["bowler"] == ALL_ROUNDER, "season"].unique()),
    }
    figure = drawn[0]
    assert figure.get_suptitle().startswith(f"{ALL_ROUNDER}: value by season")
    for ax, role, value in zip(figure.axes, ("batting", "bowling"), ("runs_above_expected", "runs_saved")):
        bars = ax.patches
        assert [round(b.get_x() + b.get_width() / 2) for b in bars] == seasons[role]
        mine = by_season[(by_season["player"] == ALL_ROUNDER) & (by_season["role"] == role)].set_index("season")[value]
        heights = np.array([b.get_height() for b in bars])
        np.testing.assert_allclose(heights, mine.loc[seasons[role]].to_numpy())
        good = [mcolors.same_color(b.get_facecolor()[:3], mcolors.to_rgb("tab:green")) for b in bars]
        assert good == list(heights >= 0)


def test_a_batter_who_never_bowled_named_by_his_id_has_an_empty_bowling_side(by_season, deliveries, drawn, tmp_path):
    regular = deliveries[~deliveries["is_super_over"]]
    never = set(regular["batter_id"].astype(str)) - set(regular["bowler_id"].astype(str))
    busiest = regular[regular["batter_id"].astype(str).isin(never)]["batter_id"].astype(str).value_counts().index[0]
    plots.plot_card(by_season, busiest, tmp_path / "batter.png")
    batting, bowling = drawn[0].axes
    his = regular[regular["batter_id"].astype(str) == busiest]
    assert len(batting.patches) == his["season"].nunique() and len(bowling.patches) == 0
    assert drawn[0].get_suptitle().startswith(f"{his['batter'].astype(str).iloc[-1]}: ")
