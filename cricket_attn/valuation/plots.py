"""Pictures of players' value: the leaders of a group with their intervals, and one player's card (his value
by season, batting and bowling)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.metrics import save_figure
from cricket_attn.valuation.players import ROLES

TITLES = {"runs_above_expected": "runs above expected", "runs_saved": "runs saved"}


def plot_leaders(table: pd.DataFrame, path: str | Path, top: int = 15, title: str = "") -> Path:
    """The `top` ranked batters and bowlers of `table` (one group of `player_values`) by their headline
    value, with its 95% interval, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ROLES), figsize=(13, 0.32 * top + 1.6))
    for ax, role in zip(np.atleast_1d(axes), ROLES):
        value = role.valued[0]
        leaders = table[(table["role"] == role.name) & table["rank"].notna()].nsmallest(top, "rank").iloc[::-1]
        y = np.arange(len(leaders))
        low, high = leaders[f"{value}_low"].to_numpy(), leaders[f"{value}_high"].to_numpy()
        mid = leaders[value].to_numpy()
        xerr = np.clip([mid - low, high - mid], 0, None)  # a one-match player's interval is the point itself
        ax.errorbar(mid, y, xerr=xerr, fmt="o", color="tab:blue", ecolor="tab:gray", capsize=2)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(y, [f"{p} ({int(b)} balls)" for p, b in zip(leaders["player"], leaders["balls"])], fontsize=8)
        ax.set_xlabel(f"{TITLES[value]} (runs), 95% interval by match")
        ax.set_title(f"{role.name}: top {len(leaders)}")
    fig.suptitle(title)
    return save_figure(fig, path)


def plot_card(table: pd.DataFrame, player: str | list[str], path: str | Path) -> Path:
    """One player's card (`player`: his `player_id`, a name only he is written under, or the list of his
    keys): his batting runs above expected and bowling runs saved in each season of `table` (`player_values`
    by season), with their intervals and balls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [player] if isinstance(player, str) else list(player)
    mine = table[table["player"].isin(names) | table["player_id"].isin(names)]
    fig, axes = plt.subplots(1, len(ROLES), figsize=(11, 3.8))
    for ax, role in zip(np.atleast_1d(axes), ROLES):
        value = role.valued[0]
        rows = (
            mine[mine["role"] == role.name]
            .groupby("season", observed=True)
            .agg(v=(value, "sum"), low=(f"{value}_low", "sum"), high=(f"{value}_high", "sum"), balls=("balls", "sum"))
        )  # a season of several competitions: its sums (the intervals summed: wider than they need be)
        if len(rows):
            x = rows.index.to_numpy()
            ax.bar(x, rows["v"], color=np.where(rows["v"] >= 0, "tab:green", "tab:red"), alpha=0.7)
            yerr = np.clip([rows["v"] - rows["low"], rows["high"] - rows["v"]], 0, None)
            ax.errorbar(x, rows["v"], yerr=yerr, fmt="none", ecolor="black", capsize=3)
            ax.set_xticks(x, [f"{s}\n{int(b)} balls" for s, b in zip(x, rows["balls"])], fontsize=8)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(f"{role.name}: {TITLES[value]} (runs)")
    name = mine["player"].iloc[-1] if len(mine) else names[0]
    fig.suptitle(f"{name}: value by season, 95% intervals by match")
    return save_figure(fig, path)
