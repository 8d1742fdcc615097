"""Pictures of a simulated match: the worm against the projected total's band, and the win probability."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.metrics import save_figure
from cricket_attn.simulation.before import side_chances

COLOURS = {1: "tab:blue", 2: "tab:orange"}


def _overs(legal_balls, balls_per_over: int = 6) -> np.ndarray:
    return np.asarray(legal_balls, dtype=float) / balls_per_over


def plot_worm(projections: pd.DataFrame, deliveries: pd.DataFrame, path: str | Path) -> Path:
    """Each innings' runs ball by ball (the worm), and at every simulated state the projected total: its mean
    and the 10-90% band; the chase's target as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    bpo = int(d["balls_per_over"].iloc[0])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for number, inn in d.groupby("innings", observed=True):
        colour, team = COLOURS.get(number, "grey"), str(inn["batting_team"].iloc[0])
        legal = inn["legal_ball_index"].to_numpy() + inn["is_legal"].to_numpy(dtype=int)
        ax.plot(
            np.r_[0, _overs(legal, bpo)],
            np.r_[0, inn["runs_total"].cumsum()],
            color=colour,
            linewidth=2,
            label=f"{team}: {int(inn['runs_total'].sum())}/{int(inn['wicket_count'].sum())}",
        )
        out = inn["wicket_count"].to_numpy() > 0
        ax.scatter(
            _overs(legal[out], bpo), inn["runs_total"].cumsum().to_numpy()[out], color=colour, marker="x", zorder=3
        )
        p = projections[projections["innings"] == number]
        x = _overs(p["legal_balls"], bpo)
        ax.fill_between(
            x,
            p["projected_total_q10"],
            p["projected_total_q90"],
            color=colour,
            alpha=0.15,
            step="post",
            label=f"projected total, 10-90% ({team})",
        )
        ax.step(x, p["projected_total"], where="post", color=colour, linestyle="--", linewidth=1)
        if number == 2 and len(p) and pd.notna(p["target"].iloc[0]):
            ax.axhline(p["target"].iloc[0], color="grey", linewidth=0.8, linestyle=":", label="target")
    ax.set(
        xlabel="overs",
        ylabel="runs",
        title=f"Match {projections['match_id'].iloc[0]}: the worm and the projected totals (x: wickets)",
    )
    ax.legend(fontsize=8, loc="upper left")
    return save_figure(fig, path)


def plot_win_probability(projections: pd.DataFrame, deliveries: pd.DataFrame, path: str | Path) -> Path:
    """The chasing side's win probability at every simulated state across both innings (the chase after
    the first innings' overs), with a band of two Monte Carlo standard errors and the wickets marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    bpo = int(d["balls_per_over"].iloc[0])
    first_overs = _overs(d.loc[d["innings"] == 1, "is_legal"].sum(), bpo) if (d["innings"] == 1).any() else 20.0
    shift = {1: 0.0, 2: float(np.ceil(first_overs))}
    fig, ax = plt.subplots(figsize=(8, 3.8))
    chasing = str(d.loc[d["innings"] == 1, "bowling_team"].iloc[0]) if len(d) else "the chasing side"
    for number, p in projections.groupby("innings"):
        x = _overs(p["legal_balls"], bpo) + shift[number]
        w, se = p["win_probability"].to_numpy(), p["win_probability_se"].fillna(0).to_numpy()
        ax.fill_between(x, np.clip(w - 2 * se, 0, 1), np.clip(w + 2 * se, 0, 1), color="tab:green", alpha=0.2)
        ax.plot(x, w, color="tab:green", marker="o", markersize=3)
        inn = d[d["innings"] == number]
        legal = inn["legal_ball_index"].to_numpy() + inn["is_legal"].to_numpy(dtype=int)
        for at in _overs(legal[inn["wicket_count"].to_numpy() > 0], bpo) + shift[number]:
            ax.axvline(at, color=COLOURS[number], linewidth=0.8, alpha=0.6)
    ax.axvline(shift[2], color="black", linewidth=1)
    ax.axhline(0.5, color="grey", linewidth=0.6, linestyle=":")
    ax.set(
        xlabel="overs (first innings, then the chase); lines: wickets",
        ylabel=f"P({chasing} wins)",
        ylim=(0, 1),
        title=f"Match {projections['match_id'].iloc[0]}: win probability of {chasing} (band: 2 s.e.)",
    )
    return save_figure(fig, path)


def plot_match(projections: pd.DataFrame, deliveries: pd.DataFrame, folder: str | Path) -> list[Path]:
    """Both pictures of one match into `folder`: <match>-worm.png and <match>-win.png."""
    folder, match = Path(folder), str(projections["match_id"].iloc[0])
    return [
        plot_worm(projections, deliveries, folder / f"{match}-worm.png"),
        plot_win_probability(projections, deliveries, folder / f"{match}-win.png"),
    ]


def plot_before(projections: pd.DataFrame, lines: pd.DataFrame | None, folder: str | Path) -> list[Path]:
    """Pictures of a match before its first ball (`project_before`'s rows and lines) into `folder`:
    <match>-before.png, each side's chance to win (over the batting orders, by their chance) with each
    order's beside it and the first innings' projected total; with `lines`, <match>-players.png, each
    player's runs (10-90% and the median) and his expected wickets and fantasy points, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder, match = Path(folder), str(projections["match_id"].iloc[0])
    first = projections[(projections["innings"] == 1) & (projections["delivery_index"] == 0)]
    sides = side_chances(first)
    teams = sides["team"].tolist()
    chance = dict(zip(teams, sides["win_probability"]))
    notes = {}
    for team in teams:
        parts = [
            (1 - r.win_probability, r.order_weight, "bats first", r)
            for r in first.itertuples()
            if r.batting_team == team
        ]
        parts += [
            (r.win_probability, r.order_weight, "chases", None) for r in first.itertuples() if r.batting_team != team
        ]
        notes[team] = "; ".join(
            f"{how} ({w:.0%}): {p:.0%}"
            + (f", {r.projected_total:.0f} [{r.projected_total_q10:.0f}-{r.projected_total_q90:.0f}]" if r else "")
            for p, w, how, r in parts
        )
    fig, ax = plt.subplots(figsize=(8, 2.6))
    ax.barh(range(len(teams)), [chance[t] for t in teams], color=["tab:blue", "tab:orange"][: len(teams)])
    for i, team in enumerate(teams):
        ax.text(0.01, i, f"{team}: {chance[team]:.1%}   ({notes[team]})", va="center", fontsize=8)
    ax.axvline(0.5, color="grey", linewidth=0.8, linestyle="--")
    se = float(sides["win_probability_se"].iloc[0])
    ax.set(xlim=(0, 1), yticks=[], xlabel=f"chance to win (Monte Carlo s.e. {se:.3f})")
    sims = int(first["sims"].sum())
    ax.set_title(f"Match {match} before the first ball: {sims} simulations", fontsize=9)
    out = [save_figure(fig, folder / f"{match}-before.png")]
    if lines is None:
        return out
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.5), sharex=True)
    for ax, team in zip(axes, teams):
        side = lines[lines["team"] == team].iloc[::-1]
        y = np.arange(len(side))
        ax.hlines(y, side["runs_q10"], side["runs_q90"], color="tab:blue", linewidth=4, alpha=0.35)
        ax.plot(side["runs_q50"], y, "|", color="tab:blue", markersize=12)
        ax.plot(side["runs_mean"], y, "o", color="tab:blue", markersize=4)
        for yi, row in zip(y, side.itertuples()):
            points = f"  F {row.fantasy_mean:.0f}" if pd.notna(getattr(row, "fantasy_mean", np.nan)) else ""
            ax.text(101, yi, f"W {row.wickets_mean:.1f}{points}", va="center", fontsize=7)
        ax.set(yticks=y, yticklabels=side["player"], xlim=(0, 100), title=team, xlabel="runs: 10-90%, median |, mean o")
        ax.tick_params(axis="y", labelsize=8)
    fig.suptitle(f"Match {match} before the first ball: each player's line (W: wickets, F: fantasy points)", fontsize=9)
    return out + [save_figure(fig, folder / f"{match}-players.png")]


def plot_chase_reliability(table: pd.DataFrame, path: str | Path, n: int) -> Path:
    """The chases' reliability diagram (`against_baselines.evaluate`'s table): forecast against how often it won."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    ax.plot(table["forecast"], table["observed"], marker="o")
    ax.set(
        xlabel="simulated win probability of the chasing side",
        ylabel="how often it won",
        xlim=(0, 1),
        ylim=(0, 1),
        title=f"Chases, every over start ({n} simulations each)",
    )
    return save_figure(fig, path)
