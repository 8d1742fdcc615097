"""The next ball of each unfinished innings, as a delivery row whose outcome is not known yet: what a model is
asked to predict for a match in progress (`cricket-attn-predict`'s last row of such an innings)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cricket_attn.data.deliveries import Ingested, PhaseRules
from cricket_attn.data.features import innings_balls
from cricket_attn.data.sequences import UNK
from cricket_attn.laws import crease_after, innings_over


def next_ball_rows(tables: Ingested, phases: PhaseRules) -> pd.DataFrame:
    """One delivery row (outcome unknown) for the next ball of each unfinished innings: the last
    innings of a match with no result yet, with balls and wickets left and no target reached."""
    d, m = tables.deliveries, tables.matches
    if d.empty:
        return d.iloc[:0]
    decided = m.set_index("match_id")[["winner", "result"]].notna().any(axis=1)
    last = d.groupby("match_id", observed=True, sort=False).tail(1)
    last = last[~last["match_id"].map(decided).fillna(False).astype(bool) & ~last["is_super_over"].astype(bool)]
    if last.empty:
        return d.iloc[:0]
    runs = d.groupby(["match_id", "innings"], observed=True)["runs_total"].sum()
    wickets = d.groupby(["match_id", "innings"], observed=True)["wicket_count"].sum()
    key = pd.MultiIndex.from_frame(last[["match_id", "innings"]])
    scored, fallen = runs.reindex(key).to_numpy(), wickets.reindex(key).to_numpy()
    legal_after = last["legal_ball_index"].to_numpy() + last["is_legal"].to_numpy(dtype=int)
    target = last["target_runs"].astype("Float64").fillna(np.inf).to_numpy(dtype=float)
    open_ = ~innings_over(scored, fallen, legal_after, innings_balls(last), target)
    striker, non_striker, new_over = (a[open_] for a in crease_after(last, incoming=UNK))
    last = last[open_]

    nxt = last.copy()
    nxt["delivery_index"] = last["delivery_index"] + 1
    nxt["legal_ball_index"] = legal_after[open_]
    nxt["over"] = np.where(new_over, last["over"] + 1, last["over"])
    nxt["ball_in_over"] = np.where(new_over, 1, last["ball_in_over"] + last["is_legal"].astype(int))
    nxt["batter"], nxt["non_striker"] = striker, non_striker
    nxt["bowler"] = np.where(new_over, UNK, last["bowler"].astype(str))
    for col in ("extras_type", "wicket_kind", "player_out"):
        nxt[col] = None
    # The players' registry ids, as the match's own balls give them (the model knows players by id).
    named = (
        pd.concat(
            d[["match_id", role, f"{role}_id"]].set_axis(["match_id", "name", "id"], axis=1).astype(object)
            for role in ("batter", "non_striker", "bowler")
        )
        .dropna()
        .drop_duplicates(["match_id", "name"])
    )
    ids = named.set_index(["match_id", "name"])["id"]
    for role in ("batter", "non_striker", "bowler"):
        at = pd.MultiIndex.from_arrays([nxt["match_id"].astype(object), nxt[role].astype(object)])
        nxt[f"{role}_id"] = ids.reindex(at).to_numpy()
    for col in (
        "runs_batter",
        "runs_extras",
        "runs_total",
        "runs_wides",
        "runs_noballs",
        "runs_byes",
        "runs_legbyes",
        "runs_penalty",
        "wicket_count",
    ):
        nxt[col] = 0
    nxt["is_legal"], nxt["is_wicket"], nxt["runs_non_boundary"] = True, False, False
    nxt["outcome"] = None
    nxt["phase"] = phases.assign(
        nxt["match_type"],
        nxt["balls_per_over"],
        nxt["over"].to_numpy(),
        nxt["legal_ball_index"].to_numpy(),
        np.zeros(len(nxt), dtype=bool),
        nxt["powerplays"] if "powerplays" in nxt else None,
    )
    return nxt


def with_next_balls(tables: Ingested, phases: PhaseRules) -> pd.DataFrame:
    """The deliveries table with each unfinished innings' next ball appended after its last delivery."""
    d = tables.deliveries
    nxt = next_ball_rows(tables, phases)
    if nxt.empty:
        return d.reset_index(drop=True)
    order = np.r_[np.arange(len(d)), [d.index.get_loc(i) + 0.5 for i in nxt.index]]
    both = pd.concat([d.astype({c: object for c in ("batter", "bowler", "non_striker")}), nxt], ignore_index=True)
    both = both.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)
    for col in ("outcome", "phase"):
        both[col] = pd.Categorical(both[col].astype(object), categories=d[col].cat.categories)
    for col in ("batter", "bowler", "non_striker"):
        both[col] = both[col].astype("category")
    return both
