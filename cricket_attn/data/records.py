"""Records as of the day: what each player, venue and competition had done in matches before a date.

A ball of 2010 and a ball of 2025 read a player's record by one rule: the sums over his balls of matches
on earlier dates (never his own match, never a later one), so nothing about him is fitted on the future
of the ball and a training ball needs no out-of-fold trick. Each ball counts what happened (its outcome,
one-hot) and what its competition's mix expected there (the competition's outcome mix in the ball's phase
as of its date, shrunk towards the pool of every competition): a player's observed against expected is a
multiplier on the mix of the leagues he played in, so runs made in a weaker league do not flatter him.
Beside the career sums, the same sums with each ball weighted by 2^(-age / half-life): his recent form.

Built once from every known match (`known`, as the histories are); keys are `entity_key`'s (registry ids,
venue keys, competitions as written). Super overs are left out, as they are of the sequences.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from cricket_attn.data.deliveries import PHASES
from cricket_attn.data.features import RATE_COLUMNS, entity_key, match_state
from cricket_attn.data.histories import days
from cricket_attn.laws import N_OUTCOMES, outcome_codes

ROLES = ("batter", "bowler", "venue", "competition")  # whose records the book keeps
# What a ball reads of each (`RecordBook.block`): a player his career and recent observed-over-expected by
# class, his balls in each and how long since he last played; a venue its career effect and balls; a
# competition its mix against the pool's, its recent drift from its own mix, and its balls.
BLOCK_WIDTHS = {"batter": 2 * N_OUTCOMES + 3, "bowler": 2 * N_OUTCOMES + 3, "venue": N_OUTCOMES + 1,
                "competition": 2 * N_OUTCOMES + 1}  # fmt: skip
LONG_AGO = 3650  # days: "since he last played" for a player who never has, and the most it reads
DAY_BITS = 20  # a table key is code << DAY_BITS | day (days since 1970: below 2^20 until the year 4840)


@dataclass(frozen=True)
class RecordSettings:
    """How records are read: the shrinkages, in balls, and the recent window's half-life, in days."""

    competition_strength: float = 2000.0  # a competition's mix is shrunk towards the pool's by this many balls
    rate_strength: float = 200.0  # a player's or venue's observed/expected is shrunk towards 1 by this many
    half_life_days: float = 365.0  # the recent record weighs a ball of this age half
    # A competition's recent record (its drift from its own mix: a league whose scoring moved this season)
    # with a half-life of its own; None: half_life_days, as a player's.
    competition_half_life_days: float | None = None

    def __post_init__(self):
        for name, value in asdict(self).items():
            if value is not None and not value > 0:
                raise ValueError(f"records.{name}={value}: must be positive")

    def half_life(self, role: str) -> float:
        """The recent record's half-life, in days, for a key of `role`."""
        if role == "competition" and self.competition_half_life_days is not None:
            return self.competition_half_life_days
        return self.half_life_days

    def to_dict(self) -> dict:
        """The settings as plain types; an optional one left unset is left out (as settings saved before it)."""
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass
class CumulativeTable:
    """Running sums of per-ball values by key and date: `sums[i]` is the sum of the values of key
    `keys[i] >> DAY_BITS` over its balls up to and including day `keys[i] & mask`, one row per (key, day)
    it played; a key's code is its place in `index`."""

    index: pd.Index  # the keys, as strings
    keys: np.ndarray  # (R,) int64, ascending
    sums: np.ndarray  # (R, F) float64

    @classmethod
    def build(cls, keys: np.ndarray, day: np.ndarray, values: np.ndarray) -> CumulativeTable:
        code, uniques = pd.factorize(pd.Series(keys, dtype=object), sort=False)
        packed = code.astype(np.int64) << DAY_BITS | day.astype(np.int64)
        order = np.argsort(packed, kind="stable")
        packed = packed[order]
        columns = np.asfortranarray(np.asarray(values, dtype=np.float64)[order])  # each column contiguous
        starts = np.flatnonzero(np.r_[True, packed[1:] != packed[:-1]]) if len(packed) else []
        # One row per (key, day), each a sum over that day's balls alone, then running sums within a key:
        # a row depends on the key's own balls only, so a later match never moves an earlier row's bits.
        by_day = np.add.reduceat(columns, starts, axis=0) if len(starts) else columns
        packed = packed[starts]
        sums = pd.DataFrame(by_day).groupby(packed >> DAY_BITS, sort=False).cumsum().to_numpy(dtype=np.float64)
        return cls(pd.Index(uniques.astype(str)), packed, sums)

    def before(self, keys: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sums, last_day) for each query (key, day): the sums over the key's balls of days before `day`,
        (Q, F), and the last such day, (Q,); zeros and -1 for a key with none (unknown, or a debut)."""
        code = self.index.get_indexer(pd.Index(keys, dtype=object).astype(str)).astype(np.int64)
        known = code >= 0
        if not len(self.keys):
            return np.zeros((len(code), self.sums.shape[1])), np.full(len(code), -1)
        row = np.searchsorted(self.keys, np.where(known, code, 0) << DAY_BITS | day.astype(np.int64), side="left") - 1
        found = known & (row >= 0) & (self.keys[np.maximum(row, 0)] >> DAY_BITS == code)
        sums = np.where(found[:, None], self.sums[np.maximum(row, 0)], 0.0)
        last = np.where(found, self.keys[np.maximum(row, 0)] & ((1 << DAY_BITS) - 1), -1)
        return sums, last


@dataclass
class Record:
    """What a key had done before a date, per query: observed and expected outcome counts (Q, C), balls
    (Q,), the same weighted by recency, and the last day it played (-1: never)."""

    observed: np.ndarray
    expected: np.ndarray
    balls: np.ndarray
    recent_observed: np.ndarray
    recent_expected: np.ndarray
    recent_balls: np.ndarray
    last_day: np.ndarray

    def effect(self, strength: float, recent: bool = False) -> np.ndarray:
        """(Q, C) log of observed over expected, each shrunk by `strength` balls of the key's own expected
        mix: 0 without evidence, and a key's multiplier on the mix of where he played as evidence grows."""
        o, e, n = (
            (self.recent_observed, self.recent_expected, self.recent_balls)
            if recent
            else (self.observed, self.expected, self.balls)
        )
        mix = e / np.maximum(n, 1e-12)[:, None]  # the expected mix per ball of his record
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(o + strength * mix) - np.log(e + strength * mix)
        return np.where(n[:, None] > 0, out, 0.0)


class RecordBook:
    """Every key's record as of any date (`before`), and each competition's outcome mix by phase as of
    any date (`mix`), from the matches in `known`."""

    def __init__(self, known: pd.DataFrame, settings: RecordSettings | None = None):
        self.settings = settings or RecordSettings()
        d = known[~known["is_super_over"].astype(bool)]
        day = days(d["date"])
        if not len(d):
            raise ValueError("a record book needs at least one delivery")
        self.first_day = int(day.min())
        # The outcome as its class code, whether the table holds it as a category or (joined with an
        # archive, `known_deliveries`) as text.
        observed = np.eye(N_OUTCOMES)[outcome_codes(d)]
        phase = pd.Categorical(d["phase"].astype(object), PHASES).codes.astype(np.int64)
        competition = entity_key(d, "competition")
        # The competition's mix by phase and the pool's by phase, as running sums of outcome counts.
        self._mix = CumulativeTable.build(_cell(competition, phase), day, observed)
        self._pool = CumulativeTable.build(phase.astype(str).astype(object), day, observed)
        # Each ball expects its competition's mix in its phase as of its day: one lookup per such cell.
        cells = pd.DataFrame({"competition": competition, "phase": phase, "day": day})
        cell = cells.groupby(list(cells.columns), sort=False).ngroup().to_numpy()
        cells = cells.drop_duplicates()  # in order of first appearance, as the group numbers
        expected = self.mix(cells["competition"].to_numpy(), cells["phase"].to_numpy(), cells["day"].to_numpy())[cell]
        self._tables = {}
        for role in ROLES:
            weight = self._weight(day, role)[:, None]
            values = np.hstack([observed, expected, np.ones((len(d), 1)), weight * observed, weight * expected, weight])
            self._tables[role] = CumulativeTable.build(entity_key(d, role), day, values)

    def _weight(self, day: np.ndarray, role: str) -> np.ndarray:
        """A ball's weight in `role`'s recent sums, relative to the first day: scaled back at lookup."""
        exponent = (day - self.first_day) / self.settings.half_life(role)
        if len(exponent) and np.max(exponent) > 1000:  # 2^1000: near the largest float
            raise ValueError(
                f"records: a half-life of {self.settings.half_life(role)} days is too short for matches "
                f"{int(np.max(day - self.first_day))} days apart (at least {np.max(day - self.first_day) / 1000:.0f})"
            )
        return np.exp2(exponent)

    def mix(self, competition: np.ndarray, phase: np.ndarray, day: np.ndarray) -> np.ndarray:
        """(Q, C) each query's competition outcome mix in the phase from the balls of earlier days,
        (counts + S * pool) / (n + S), the pool itself Laplace-smoothed (S: competition_strength)."""
        pooled, _ = self._pool.before(phase.astype(str).astype(object), day)
        pool = (pooled + 1) / (pooled.sum(axis=1, keepdims=True) + N_OUTCOMES)
        counts, _ = self._mix.before(_cell(competition, phase), day)
        strength = self.settings.competition_strength
        return (counts + strength * pool) / (counts.sum(axis=1, keepdims=True) + strength)

    def career_mix(self, competition: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(competition's, pool's) outcome mixes over every phase from the balls of earlier days, (Q, C)
        each: the competition's shrunk towards the pool's as `mix` does."""
        counts = sum(self._mix.before(_cell(competition, np.full(len(day), p)), day)[0] for p in range(len(PHASES)))
        pooled = sum(self._pool.before(np.full(len(day), str(p), dtype=object), day)[0] for p in range(len(PHASES)))
        pool = (pooled + 1) / (pooled.sum(axis=1, keepdims=True) + N_OUTCOMES)
        strength = self.settings.competition_strength
        return (counts + strength * pool) / (counts.sum(axis=1, keepdims=True) + strength), pool

    def block(self, role: str, keys: np.ndarray, day: np.ndarray) -> np.ndarray:
        """(N, BLOCK_WIDTHS[role]) float32: what a ball reads of its `role`'s record as of its date, for each
        (key, day) given; worked out once per distinct pair."""
        pairs = pd.DataFrame({"key": pd.Series(keys, dtype=object).astype(str), "day": np.asarray(day, np.int64)})
        row = pairs.groupby(["key", "day"], sort=False).ngroup().to_numpy()
        pairs = pairs.drop_duplicates()  # in order of first appearance, as the group numbers
        keys, day = pairs["key"].to_numpy(dtype=object), pairs["day"].to_numpy()
        record, strength = self.before(role, keys, day), self.settings.rate_strength
        balls = [np.log1p(record.balls)[:, None]]
        if role == "competition":
            mix, pool = self.career_mix(keys, day)
            parts = [np.log(mix / pool), record.effect(strength, recent=True), *balls]
        elif role == "venue":
            parts = [record.effect(strength), *balls]
        else:
            since = np.where(record.last_day >= 0, np.minimum(day - record.last_day, LONG_AGO), LONG_AGO)
            parts = [
                record.effect(strength),
                record.effect(strength, recent=True),
                *balls,
                np.log1p(record.recent_balls)[:, None],
                np.log1p(since)[:, None],
            ]
        return np.hstack(parts).astype(np.float32)[row]

    def before(self, role: str, keys: np.ndarray, day: np.ndarray) -> Record:
        """The records of `keys` in `role` (one of ROLES) from their balls of days before `day`."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        sums, last = self._tables[role].before(keys, day)
        c = N_OUTCOMES
        scale = 1 / self._weight(np.asarray(day, dtype=np.float64), role)[:, None]  # weights relative to `day`
        recent = sums[:, 2 * c + 1 :] * scale
        return Record(
            observed=sums[:, :c],
            expected=sums[:, c : 2 * c],
            balls=sums[:, 2 * c],
            recent_observed=recent[:, :c],
            recent_expected=recent[:, c : 2 * c],
            recent_balls=recent[:, 2 * c],
            last_day=last,
        )


def _cell(competition: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """One key per (competition, phase)."""
    return (pd.Series(competition, dtype=object).astype(str) + "|" + pd.Series(phase).astype(str)).to_numpy(
        dtype=object
    )


def tabular_features(d: pd.DataFrame, book: RecordBook, last_season: int) -> np.ndarray:
    """The trees' features with records in place of rates: the match state, the over, and the batter's,
    bowler's, venue's and competition's blocks as of each ball's date (as the encoder reads them)."""
    blocks = [book.block(column, entity_key(d, column), days(d["date"])) for column in RATE_COLUMNS]
    state = match_state(d, last_season).to_numpy()
    return np.hstack([state, d[["over"]].to_numpy(dtype=np.float32), *blocks]).astype(np.float32)
