"""Players' earlier matches: for a ball, its batter's last K balls faced and its bowler's last K balls
bowled in matches played before this match's date.

The same rule everywhere (training, evaluation, prediction): a history holds only balls of matches on
an earlier date, so no later match can change an earlier ball's inputs, and a match never sees itself.
Players are keyed by their Cricsheet registry id where the file gives one (two players can share a
name), else by name. Super overs are left out, as they are of the sequences.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
# A history ball as the model reads it: outcome class (-1: an empty slot), the opponent's id in the other
# role's vocabulary, phase, and how long before the match it was, as floor(log2(days)) up to 15.
HISTORY_FIELDS = ("outcome", "opponent", "phase", "age")
HISTORY_AGE_BUCKETS = 16


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


@dataclass
class PlayerHistories:
    """Every player's last `k` balls of earlier matches in each role as the model reads them, built from the
    known deliveries (`build`): for the balls of a table (`tensors`), or for a side listed by name (`of`)."""

    stores: dict[str, HistoryStore]
    opponents: dict[str, np.ndarray]  # each stored ball's opponent as the model's vocabulary of his role codes him
    k: int

    @classmethod
    def build(cls, known: pd.DataFrame, k: int, encode: Mapping[str, Callable[[pd.Series], np.ndarray]]):
        """`encode[role]`: codes a player of `role` as the model's vocabulary does (a batter's opponents are
        bowlers: `encode["bowler"]` codes them)."""
        stores = {role: HistoryStore.build(known, role) for role in ROLES}
        opponents = {
            role: encode[ROLES[1 - ROLES.index(role)]](pd.Series(store.tokens["opponent"], dtype=object))
            for role, store in stores.items()
        }
        return cls(stores, opponents, k)

    def tensors(self, d: pd.DataFrame, seq_id: np.ndarray) -> tuple[dict, dict]:
        """(per ball, per sequence): each ball's `batter_slot` and `bowler_slot`, and each sequence's
        `batter_history` and `bowler_history`, (n_seq, players, k, len(HISTORY_FIELDS)) integers."""
        per_ball, per_sequence = {}, {}
        n_seq = int(seq_id.max()) + 1 if len(seq_id) else 0
        for role in ROLES:
            slot, index, listed = sequence_histories(d, self.stores[role], self.k)
            players = int(listed["slot"].max()) + 1 if len(listed) else 1
            table = np.zeros((n_seq, players, self.k, len(HISTORY_FIELDS)), dtype=np.int64)
            table[..., 0] = -1
            table[listed["sequence"].to_numpy(), listed["slot"].to_numpy()] = self.tokens(
                role, index, listed["day"].to_numpy()
            )
            per_ball[f"{role}_slot"] = slot
            per_sequence[f"{role}_history"] = table
        return per_ball, per_sequence

    def tokens(self, role: str, index: np.ndarray, day: np.ndarray) -> np.ndarray:
        """(players, k, fields): the history balls `index` (`HistoryStore.before`) of players whose match is
        on `day` (players,), as the model reads them."""
        store = self.stores[role]
        empty = index == NO_BALL
        at = np.where(empty, 0, index)

        def take(values: np.ndarray, fill: int) -> np.ndarray:
            return np.where(empty, fill, values[at]) if len(store) else np.full(at.shape, fill)

        gap = np.maximum(day[:, None] - take(store.tokens["day"], 0), 1)  # days before
        return np.stack(
            [
                take(store.tokens["outcome"], -1),
                take(self.opponents[role], 0),
                take(store.tokens["phase"], 0),
                np.where(empty, 0, np.minimum(np.log2(gap).astype(np.int64), HISTORY_AGE_BUCKETS - 1)),
            ],
            axis=-1,
        )

    def of(self, role: str, names: list[str], date, ids: Mapping[str, str] | None = None) -> np.ndarray:
        """(len(names), k, fields): the histories of players listed by name (a side as a simulated match lists
        it) as of a match on `date`, by the same rule as `tensors`; a name no history holds (or the unknown
        player, an empty name) has none. A player is his registry id in `ids` (the match's), else the player
        of that name who played last."""
        store, ids = self.stores[role], ids or {}
        keys = np.array([ids.get(name) or store.names.get(name, name) for name in names], dtype=object)
        day = np.full(len(names), days(pd.Series([pd.Timestamp(date)]))[0])
        return self.tokens(role, store.before(keys, day, self.k), day)
