"""Players' earlier matches: for a ball, its batter's last K balls faced and its bowler's last K balls
bowled in matches played before this match's date.

The same rule everywhere (training, evaluation, prediction): a history holds only balls of matches on
an earlier date, so no later match can change an earlier ball's inputs, and a match never sees itself.
Players are keyed by their Cricsheet registry id where the file gives one (two players can share a
name), else by name. Super overs are left out, as they are of the sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from cricket_attn.data.deliveries import PHASES
from cricket_attn.data.features import entity_key
from cricket_attn.laws import outcome_codes

ROLES = ("batter", "bowler")
# Each history ball carries (`HistoryStore.tokens`): its outcome class, who was at the other end of it
# (the bowler for a batter's ball, the batter for a bowler's), its phase and season, its date (days
# since 1970) and its competition (for the reader's report, cricket_attn.commands.attention).
NO_BALL = -1  # an empty history slot (a player with fewer than K earlier balls)


def days(dates: pd.Series) -> np.ndarray:
    return dates.to_numpy().astype("datetime64[D]").astype(np.int64)


@dataclass
class HistoryStore:
    """Every player's balls in one role, grouped by player and oldest first within a player:
    `tokens[c][i]` is column c of the i-th ball; `keys` are sorted (player code, day) pairs for the
    search, `players` maps a player key to its code, and `names` a name to the key of the player of
    that name who played last (for a side listed by name only, as a simulated match's is)."""

    role: str
    players: dict[str, int]
    keys: np.ndarray  # (N,) int64: code * 2^20 + day, ascending
    tokens: dict[str, np.ndarray]
    names: dict[str, str]

    @classmethod
    def build(cls, deliveries: pd.DataFrame, role: str) -> HistoryStore:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        d = deliveries[~deliveries["is_super_over"].astype(bool)]
        codes, uniques = pd.factorize(pd.Series(entity_key(d, role)), sort=False)
        day = days(d["date"])
        # Chronological within a player: by day, then by the table's own order (innings, delivery).
        order = np.lexsort((np.arange(len(d)), day, codes))
        opponent = ROLES[1 - ROLES.index(role)]
        tokens = {
            "outcome": outcome_codes(d)[order].astype(np.int64),
            "opponent": entity_key(d, opponent)[order],
            "phase": pd.Categorical(d["phase"].astype(object), PHASES).codes[order].astype(np.int64),
            "season": d["season"].to_numpy(dtype=np.int64)[order],
            "day": day[order],
            "competition": d["competition"].astype(str).to_numpy(dtype=object)[order],
        }
        keys = codes[order].astype(np.int64) * (1 << 20) + day[order]
        latest = (
            pd.DataFrame({"name": d[role].astype(str).to_numpy(dtype=object), "key": entity_key(d, role), "day": day})
            .sort_values("day", kind="stable")
            .drop_duplicates("name", keep="last")
        )
        return cls(
            role,
            {str(p): i for i, p in enumerate(uniques)},
            keys,
            tokens,
            dict(zip(latest["name"], latest["key"].astype(str))),
        )

    def __len__(self) -> int:
        return len(self.keys)

    def before(self, players: np.ndarray, day: np.ndarray, k: int) -> np.ndarray:
        """(Q, k) indexes into the tokens: for each query (player key, day), that player's last k balls
        on earlier days, oldest first, right-aligned; NO_BALL where he has fewer (or is unknown)."""
        code = np.array([self.players.get(str(p), -1) for p in players], dtype=np.int64)
        known = code >= 0
        end = np.searchsorted(self.keys, np.where(known, code, 0) * (1 << 20) + day, side="left")
        start = np.searchsorted(self.keys, np.where(known, code, 0) * (1 << 20), side="left")
        index = end[:, None] - k + np.arange(k)[None, :]  # (Q, k): the k slots before `end`
        valid = known[:, None] & (index >= start[:, None])
        return np.where(valid, index, NO_BALL)


def sequence_histories(
    d: pd.DataFrame, store: HistoryStore, k: int, keys: tuple[str, ...] = ("match_id", "innings")
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """For the deliveries `d` of regular innings, grouped into sequences by `keys`: (slot, index, listed).
    `listed` has each sequence's distinct players in the store's role, in order of appearance (columns
    `sequence`, `player`, `slot`, `day`: the match's date); `slot` (N,) is each ball's player's place in
    its sequence's list; `index` (len(listed), k) their histories as of the match's date
    (`HistoryStore.before`). Histories are per sequence and player: they do not change within a match."""
    sequence = d.groupby(list(keys), sort=False, observed=True).ngroup().to_numpy()
    pairs = pd.DataFrame({"sequence": sequence, "player": entity_key(d, store.role), "day": days(d["date"])})
    listed = pairs.drop_duplicates(["sequence", "player"]).reset_index(drop=True)
    listed["slot"] = listed.groupby("sequence").cumcount()
    slot = pairs.merge(listed[["sequence", "player", "slot"]], on=["sequence", "player"], how="left")["slot"]
    index = store.before(listed["player"].to_numpy(), listed["day"].to_numpy(), k)
    return slot.to_numpy(dtype=np.int64), index, listed


def known_deliveries(*tables: pd.DataFrame) -> pd.DataFrame:
    """Several deliveries tables as one, each match once (the first table's copy wins): what players'
    histories are built from when scoring matches beside an archive of earlier ones."""
    parts, seen = [], set()
    for d in [t for t in tables if len(t)] or tables[:1]:  # an empty table (matches not yet begun) adds nothing
        ids = d["match_id"].astype(str)
        parts.append(d[~ids.isin(seen)].astype({c: object for c in ("outcome", "phase", "batter", "bowler")}))
        seen |= set(ids)
    return pd.concat(parts, ignore_index=True)
