"""Pictures of a simulated match: the worm against the projected total's band, and the win probability."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.metrics import save_figure

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
