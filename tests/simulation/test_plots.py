"""Pictures of a simulated match (cricket_attn/simulation/plots.py): the worm against the projected totals and
the win probability, drawn for real matches, read back from the figure and from the PNG written."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.colors as mcolors
import matplotlib.image as mimage
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from cricket_attn.metrics import save_figure
from cricket_attn.simulation import plots

DLS = "1136566"  # 153/5 in 107 balls, then 71 to win in six overs: 60/4
TIE = "1216493"  # 157/8 each, then a super over each


def keeping_figures(monkeypatch, module) -> list:
    """The figures `module` saves, kept to be read after the real `save_figure` has written and closed them."""
    figures = []

    def keep(fig, path, *args, **kwargs):
        figures.append(fig)
        return save_figure(fig, path, *args, **kwargs)

    monkeypatch.setattr(module, "save_figure", keep)
    return figures


def assert_png(path: Path) -> None:
    """A picture that opens as a PNG and is not blank."""
    image = mimage.imread(path)  # refuses what is not a PNG
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.ndim == 3 and min(image.shape[:2]) > 100 and image.std() > 0


def scoreboard_projections(match: pd.DataFrame) -> pd.DataFrame:
    """Projections, as `project_match` gives them, at the first ball of every over of a real match's regular
    innings, made by the scoreboard's arithmetic instead of a simulator: the runs so far plus the run rate so
    far over the balls left, a band of 10% either side; the chase's win probability the projection's share
    of the target (the first innings: even); one state of one simulation (no standard error)."""
    rows = []
    for number, inn in match[~match["is_super_over"].astype(bool)].groupby("innings"):
        overs = inn["target_overs"].astype("Float64").fillna(inn["scheduled_overs"].astype("Float64")).iloc[0]
        balls = int(6 * float(overs))
        target = inn["target_runs"].astype("Float64").iloc[0]
        runs_before = (inn["runs_total"].cumsum() - inn["runs_total"]).to_numpy()
        for i in np.flatnonzero(~inn["over"].duplicated().to_numpy()):
            runs, legal = int(runs_before[i]), int(inn["legal_ball_index"].iloc[i])
            projected = runs + (runs / legal if legal else 1.3) * (balls - legal)
            chance = 0.5 if pd.isna(target) else min(projected / float(target), 1.0)
            rows.append({"match_id": str(inn["match_id"].iloc[0]), "innings": number, "legal_balls": legal,
                         "runs": runs, "target": target, "projected_total": projected,
                         "projected_total_q10": 0.9 * projected, "projected_total_q90": 1.1 * projected,
                         "win_probability": chance, "win_probability_se": 0.05 if rows else np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def match_of(deliveries: pd.DataFrame, match_id: str) -> pd.DataFrame:
    return deliveries[deliveries["match_id"] == match_id]


@pytest.fixture(scope="module")
def dls(deliveries, tmp_path_factory):
    """The DLS match's two pictures, as `plot_match` writes them into a folder not made yet, and their figures."""
    match = match_of(deliveries, DLS)
    projections = scoreboard_projections(match)
    folder = tmp_path_factory.mktemp("plots") / "matches"
    with pytest.MonkeyPatch.context() as mp:
        figures = keeping_figures(mp, plots)
        written = plots.plot_match(projections, match, folder)
    return {"match": match, "projections": projections, "folder": folder, "written": written, "figures": figures}


def test_a_match_gets_a_worm_and_a_win_picture_that_open(dls):
    assert dls["written"] == [dls["folder"] / f"{DLS}-worm.png", dls["folder"] / f"{DLS}-win.png"]
    for path in dls["written"]:
        assert_png(path)


def test_the_worm_climbs_to_each_innings_total_with_its_wickets_marked(dls):
    match, ax = dls["match"], dls["figures"][0].axes[0]
    worms = [line for line in ax.get_lines() if line.get_linewidth() == 2]
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(worms) == len(marks) == 2
    for (_, inn), worm, mark in zip(match.groupby("innings"), worms, marks):
        x, y = worm.get_data()
        legal = int(inn["is_legal"].sum())
        assert (x[0], y[0]) == (0, 0) and x[-1] == pytest.approx(legal / 6) and y[-1] == inn["runs_total"].sum()
        assert (np.diff(x) >= 0).all() and (np.diff(y) >= 0).all()  # runs never come off the score
        fell = inn["wicket_count"].to_numpy() > 0
        score = inn["runs_total"].cumsum().to_numpy()
        assert mark.get_offsets()[:, 1].tolist() == score[fell].tolist()
    target = [line for line in ax.get_lines() if line.get_label() == "target"]
    assert len(target) == 1 and target[0].get_ydata()[0] == 71  # the DLS target, not the first innings' 153 + 1
    assert DLS in ax.get_title()


def test_the_chase_follows_the_first_innings_on_the_win_probability_axis(dls):
    """The first innings lasted 107 balls (17.5 overs): the chase starts at its 18th over's end, each state
    and each wicket placed by its legal balls."""
    match, projections, ax = dls["match"], dls["projections"], dls["figures"][1].axes[0]
    start = math.ceil(match.loc[match["innings"] == 1, "is_legal"].sum() / 6)
    assert start == 18
    vertical = [line for line in ax.get_lines() if list(line.get_ydata()) == [0, 1]]
    black = [line.get_xdata()[0] for line in vertical if mcolors.same_color(line.get_color(), "black")]
    assert black == [start]
    curves = [line for line in ax.get_lines() if line.get_marker() == "o"]
    chase = projections[projections["innings"] == 2]
    np.testing.assert_allclose(curves[1].get_xdata(), start + chase["legal_balls"] / 6)
    np.testing.assert_allclose(curves[1].get_ydata(), chase["win_probability"])
    wickets = sorted(line.get_xdata()[0] for line in vertical if not mcolors.same_color(line.get_color(), "black"))
    legal_after = match.groupby("innings")["is_legal"].cumsum()
    fell = match[match["wicket_count"] > 0]
    by_hand = sorted(legal_after[fell.index] / 6 + np.where(fell["innings"] == 2, start, 0))
    np.testing.assert_allclose(wickets, by_hand)
    assert ax.get_ylim() == (0, 1) and ax.get_ylabel() == "P(Delhi Daredevils wins)"
    for band in (c for c in ax.collections if not isinstance(c, PathCollection)):
        y = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
        assert (y >= 0).all() and (y <= 1).all()


def test_a_tied_match_draws_its_two_innings_not_the_super_overs(deliveries, monkeypatch, tmp_path):
    match = match_of(deliveries, TIE)
    drawn = keeping_figures(monkeypatch, plots)
    plots.plot_worm(scoreboard_projections(match), match, tmp_path / "worm.png")
    regular = match[~match["is_super_over"]]
    scores = [
        f"{inn['batting_team'].iloc[0]}: {inn['runs_total'].sum()}/{inn['wicket_count'].sum()}"
        for _, inn in regular.groupby("innings")
    ]
    assert scores == ["Delhi Capitals: 157/8", "Kings XI Punjab: 157/8"]
    assert [line.get_label() for line in drawn[0].axes[0].get_lines() if line.get_linewidth() == 2] == scores


def test_the_chance_before_the_first_ball_adds_each_order_by_its_weight(monkeypatch, tmp_path):
    figures = keeping_figures(monkeypatch, plots)
    projections = pd.DataFrame(
        {
            "match_id": "m",
            "innings": 1,
            "delivery_index": 0,
            "batting_team": ["A", "B"],
            "bowling_team": ["B", "A"],
            "projected_total": [180.0, 170.0],
            "projected_total_q10": [140.0, 130.0],
            "projected_total_q90": [220.0, 210.0],
            "win_probability": [0.4, 0.3],  # of the chasing side: B chasing A, A chasing B
            "win_probability_se": [0.05, 0.05],
            "sims": [50, 50],
            "order_weight": [0.5, 0.5],
        }
    )
    (path,) = plots.plot_before(projections, None, tmp_path)
    assert_png(path)
    bars = {round(p.get_width(), 6) for p in figures[0].axes[0].patches}
    assert bars == {round(0.5 * 0.6 + 0.5 * 0.3, 6), round(0.5 * 0.4 + 0.5 * 0.7, 6)}  # A 45%, B 55%
