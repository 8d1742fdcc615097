"""Deliveries to ball sequences: the encoder fitted on training seasons (the tensors are `batches.py`'s).

A sequence is one innings (a super over is left out: its own tiny game).
Position t carries what is known before ball t: the previous ball's outcome, batter, bowler, venue,
the match state and the positional parts; its label is ball t's outcome.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cricket_attn.data.batches import BallSequences
from cricket_attn.data.features import RATE_COLUMNS, RATE_STRENGTH, STATE_COLUMNS, OutcomeRates, entity_key, match_state
from cricket_attn.data.histories import HISTORY_AGE_BUCKETS, HISTORY_FIELDS, PlayerHistories, days
from cricket_attn.data.records import BLOCK_WIDTHS, RecordBook, RecordSettings
from cricket_attn.laws import N_OUTCOMES, START_OF_INNINGS

# The unknown player (or venue): no name at all. Any text, "<unk>" too, can be a player's name in a match
# file, and a player so named would share the unknown's embedding; a player with an empty name is unknown.
UNK = ""
QUANTILE_STEPS = 32  # the scaled features' training quantiles kept, at levels 0, 1/32, ..., 1


@dataclass
class Vocab:
    """Names to indices; index 0 is the unknown, for anything not seen often enough in training, whatever
    name it was saved under (checkpoints before the empty name have `<unk>`: a name like any other now)."""

    tokens: list[str]

    def __post_init__(self):
        self.index = {t: i for i, t in enumerate(self.tokens) if i}

    @classmethod
    def fit(cls, values: pd.Series, min_count: int | None) -> Vocab:
        """The names seen at least `min_count` times; None: none (everything is the unknown)."""
        if min_count is None:
            return cls([UNK])
        counts = Counter(values.astype(object).fillna(UNK).astype(str))
        return cls([UNK] + sorted(k for k, n in counts.items() if n >= min_count and k != UNK))

    def encode(self, values: pd.Series) -> np.ndarray:
        codes = values.astype(object).fillna(UNK).astype(str).map(self.index).fillna(0)
        return codes.to_numpy(dtype=np.int64, copy=True)  # writable: tensors are made from it

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class SequenceEncoder:
    """Everything fitted on the training split that turns deliveries into model inputs.

    Stored in checkpoints as plain Python (`to_dict`), so prediction rebuilds it without the data.
    Players are known by registry id and venues by `venue_key` (`entity_key`), the same in every league;
    `names` gives each role's names to their keys, for a side listed by name (the one who played last);
    `competitions` and `team_types` name what the model embeds of the match.
    """

    batters: Vocab
    bowlers: Vocab
    venues: Vocab
    rates: dict[str, OutcomeRates]
    mean: np.ndarray
    std: np.ndarray
    first_season: int
    last_season: int
    competitions: Vocab
    team_types: Vocab
    quantiles: np.ndarray | None = None  # (F, QUANTILE_STEPS + 1) of the scaled features, for binned embeddings
    history_balls: int = 0  # K: each ball also gets its batter's and bowler's last K balls of earlier matches
    first_innings: bool = False  # each chase sequence also gets every ball of its match's first innings
    # Where those come from: every player's balls in each role, built from the known deliveries, not saved
    # with the encoder (`attach_known`).
    histories: PlayerHistories | None = field(default=None, repr=False, compare=False)
    names: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    # With `records` (RecordSettings as a dict), each ball reads its batter's, bowler's, venue's and
    # competition's records as of its match's date (`RecordBook.block`) in place of rates fitted on the
    # training seasons; the book is built from every known match, not saved with the encoder (`attach_known`).
    records: dict | None = None
    record_book: RecordBook | None = field(default=None, repr=False, compare=False)
    # The competitions whose matches the training records were built from: a record book is built from
    # those alone (`attach_known`), so that a model reads records as it was trained to (an IPL model given
    # every league would read players' balls, evidence and league mixes it never saw). None: any.
    record_competitions: list[str] | None = None
    # The data the model was trained on, as its config named it (`embedded`, `cricsheet:t20s_male`, a path):
    # where scoring reads the earlier matches its records and histories come from, unless told otherwise.
    # None: the embedded IPL archive (an encoder fitted outside a training run).
    sources: list[str] | None = None
    # The last season the model was trained on, set by the training run: `last_season` (what the features
    # were fitted to) unless a refit continued a model through a later season on this same encoder. The
    # seasons the scorebook, the valuation and `balls_since` take as the model's own.
    trained_until: int | None = None

    def __post_init__(self):
        if self.trained_until is None:  # an encoder built by hand: its model trained on what it was fitted to
            self.trained_until = self.last_season

    @classmethod
    def fit(cls, train: pd.DataFrame, min_count: int | None, rate_strength: float = RATE_STRENGTH) -> SequenceEncoder:
        return cls.fit_encode(train, min_count, rate_strength)[0]

    def key(self, d: pd.DataFrame, column: str) -> pd.Series:
        """Each delivery's `column` as this encoder's vocabularies and rates know it (`entity_key`)."""
        return pd.Series(entity_key(d, column), index=d.index, dtype=object)

    def player_keys(self, role: str, names: list[str]) -> list[str]:
        """Players named by name only (a side as a simulated match lists it) as keys: the key of the player
        of that name who played last in the training seasons; a name never seen stays itself (unknown)."""
        known = self.names.get(role, {})
        return [known.get(name, name) for name in names]

    @classmethod
    def fit_encode(
        cls,
        train: pd.DataFrame,
        min_count: int | None,
        rate_strength: float = RATE_STRENGTH,
        history_balls: int = 0,
        known: pd.DataFrame | None = None,
        first_innings: bool = False,
        competition_min_count: int = 5000,
        records: dict | None = None,
    ) -> tuple[SequenceEncoder, BallSequences]:
        """Fit on the training deliveries and encode them (out of fold), computing their features once.
        A competition with fewer than `competition_min_count` training deliveries shares the unknown's.
        With `history_balls` or `records`, players' histories and records come from `known` (every delivery
        there is: both only ever hold matches before the ball's, so later seasons never reach earlier balls)."""
        if history_balls < 0:
            raise ValueError(f"data.history_balls must be 0 (none) or more, got {history_balls}")
        train = train[~train["is_super_over"].astype(bool)]
        known = train if known is None else known
        enc = cls(
            batters=Vocab.fit(pd.Series(entity_key(train, "batter")), min_count),
            bowlers=Vocab.fit(pd.Series(entity_key(train, "bowler")), min_count),
            venues=Vocab.fit(pd.Series(entity_key(train, "venue")), min_count),
            competitions=Vocab.fit(train["competition"], competition_min_count),
            team_types=Vocab.fit(train["team_type"], 1),
            names={role: latest_keys(train, role) for role in ("batter", "bowler")},
            rates={} if records is not None else {c: OutcomeRates(c, rate_strength).fit(train) for c in RATE_COLUMNS},
            mean=np.zeros(0),
            std=np.ones(0),
            first_season=int(train["season"].min()),
            last_season=int(train["season"].max()),
            trained_until=int(train["season"].max()),
            history_balls=history_balls,
            first_innings=first_innings,
            records=None if records is None else RecordSettings(**records).to_dict(),
            record_competitions=None if records is None else sorted(set(known["competition"].astype(str))),
        )
        if enc.reads_known:
            enc.attach_known(known)
        state = match_state(train, enc.last_season)
        numeric = enc.numeric(train, state, out_of_fold=True)
        wide = numeric.astype(np.float64)  # float32 sums would give a constant column a spread of rounding
        enc.mean = wide.mean(axis=0).astype(np.float32)
        # A feature of one value in training (a one-league model's competition rates) taught the model
        # nothing: it is read as 0 whatever its value (an infinite scale), so another league's value, never
        # seen, cannot throw the model off.
        constant = np.ptp(numeric, axis=0) == 0
        enc.std = np.where(constant, np.inf, wide.std(axis=0) + 1e-6).astype(np.float32)
        levels = np.linspace(0, 1, QUANTILE_STEPS + 1)
        enc.quantiles = np.quantile((numeric - enc.mean) / enc.std, levels, axis=0).T.astype(np.float32)
        return enc, enc._sequences(train, state, numeric)

    def numeric(self, d: pd.DataFrame, state: pd.DataFrame, out_of_fold: bool = False) -> np.ndarray:
        """Match state and what each ball reads of its batter, bowler, venue and competition, unscaled,
        (N, F). `out_of_fold` for the training rows rates were fitted on, so that no row's features contain
        its own outcome (records need none: they hold earlier matches only)."""
        keyed = [self.key_features(column, d, out_of_fold) for column in self.key_columns]
        return np.hstack([state.to_numpy(), *keyed]).astype(np.float32)

    @property
    def key_columns(self) -> list[str]:
        """Whose features follow the match state, in order: those with rates, or every one of RATE_COLUMNS."""
        return list(self.rates) if self.records is None else list(RATE_COLUMNS)

    def key_features(self, column: str, d: pd.DataFrame, out_of_fold: bool = False) -> np.ndarray:
        """(N, k) what each row of `d` reads of its `column` ("batter", "bowler", "venue", "competition"):
        its rates fitted on the training seasons, or with `records` its record as of the row's `date`."""
        if self.records is None:
            rates = self.rates[column]
            return rates.out_of_fold(d) if out_of_fold else rates.transform(d)
        if self.record_book is None:
            raise ValueError("the encoder reads records but no record book is attached: call attach_known")
        return self.record_book.block(column, self.key(d, column).to_numpy(), days(d["date"]))

    def block_start(self, column: str) -> int:
        """Where `column`'s features begin among the numeric features: after the match state, in the order
        of `key_columns`."""
        widths = [self.block_width(c) for c in self.key_columns]
        return len(STATE_COLUMNS) + sum(widths[: self.key_columns.index(column)])

    def block_width(self, column: str) -> int:
        """How many numeric features `column` brings: its record's block, or its rates and their count."""
        return BLOCK_WIDTHS[column] if self.records is not None else N_OUTCOMES + 1

    def block_slice(self, column: str) -> slice:
        """Where `column`'s features lie among the numeric features (`key_features`, after the match state)."""
        return slice(self.block_start(column), self.block_start(column) + self.block_width(column))

    @property
    def reads_known(self) -> bool:
        """Whether the encoder reads earlier matches (players' histories, records): `attach_known` first."""
        return bool(self.history_balls) or self.records is not None

    @property
    def known_attached(self) -> bool:
        return (not self.history_balls or self.histories is not None) and (
            self.records is None or self.record_book is not None
        )

    def attach_known(self, known: pd.DataFrame) -> None:
        """Build what the encoder reads of earlier matches from the deliveries `known`: the players'
        histories (with `history_balls`) and the record book (with `records`; from the matches of
        `record_competitions` alone)."""
        if self.records is not None:
            kept = (
                known
                if self.record_competitions is None
                else known[known["competition"].astype(str).isin(self.record_competitions)]
            )
            if kept.empty:
                named = ", ".join(self.record_competitions)
                raise ValueError(f"no known match of the competitions the model's records were built from ({named})")
            self.record_book = RecordBook(kept, RecordSettings(**self.records))
        if not self.history_balls:
            return
        encode = {"batter": self.batters.encode, "bowler": self.bowlers.encode}
        self.histories = PlayerHistories.build(known, self.history_balls, encode)

    def attached_histories(self) -> PlayerHistories:
        """The players' histories (`history_balls`), refused in one line where none were attached."""
        if self.histories is None:
            raise ValueError(
                f"the encoder reads players' histories (history_balls={self.history_balls}) but none are "
                "attached: call attach_known(deliveries)"
            )
        return self.histories

    def encode(self, d: pd.DataFrame, out_of_fold: bool = False) -> BallSequences:
        """Regular innings of `d` as sequences. Super overs are left out (their own tiny game)."""
        d = d[~d["is_super_over"].astype(bool)]
        state = match_state(d, self.last_season)
        return self._sequences(d, state, self.numeric(d, state, out_of_fold))

    def _sequences(self, d: pd.DataFrame, state: pd.DataFrame, numeric: np.ndarray) -> BallSequences:
        numeric = (numeric - self.mean) / self.std
        inn_start = d["delivery_index"].to_numpy() == 0
        prev = np.r_[START_OF_INNINGS, d["outcome"].cat.codes.to_numpy()[:-1]].astype(np.int64)
        prev[inn_start] = START_OF_INNINGS
        chase = d["target_runs"].notna().to_numpy()
        # A batch holds these as (B, T) integers, plus `numeric` (B, T, F) and `mask` (B, T).
        per_ball = {
            "outcome": d["outcome"].cat.codes.to_numpy().astype(np.int64),
            "prev_outcome": prev,
            "innings_marker": chase.astype(np.int64),
            "batter": self.batters.encode(self.key(d, "batter")),
            "bowler": self.bowlers.encode(self.key(d, "bowler")),
            "venue": self.venues.encode(self.key(d, "venue")),
            "legal_ball_index": d["legal_ball_index"].to_numpy(dtype=np.int64),
            "ball_in_over": d["ball_in_over"].to_numpy(dtype=np.int64),
            "over": d["over"].to_numpy(dtype=np.int64),
            "phase": d["phase"].cat.codes.to_numpy().astype(np.int64),
            "batter_balls": state["batter_balls_before"].to_numpy().astype(np.int64),
            "bowler_balls": state["bowler_balls_before"].to_numpy().astype(np.int64),
            "row": d.index.to_numpy(dtype=np.int64),
        }
        per_ball["competition"] = self.competitions.encode(d["competition"])
        per_ball["team_type"] = self.team_types.encode(d["team_type"])
        seq_id = d.groupby(["match_id", "innings"], sort=False, observed=True).ngroup().to_numpy()
        per_sequence = {}
        if self.history_balls:
            slots, per_sequence = self.attached_histories().tensors(d, seq_id)
            per_ball.update(slots)
        if self.first_innings:
            per_sequence["first_innings"] = self.first_innings_tensor(d, seq_id, per_ball)
            per_ball["first_innings_slot"] = np.zeros(len(d), dtype=np.int64)
        return BallSequences.from_flat(per_ball, numeric.astype(np.float32), seq_id, per_sequence)

    def first_innings_tensor(self, d: pd.DataFrame, seq_id: np.ndarray, per_ball: dict) -> np.ndarray:
        """(n_seq, 1, longest first innings, 4): for each chase sequence, every ball of its match's first
        innings in order (outcome, batter id, phase, over); an empty set (outcome -1) for the others. The
        first innings is over before the chase starts, so every chase ball may read all of it."""
        n_seq = int(seq_id.max()) + 1 if len(seq_id) else 0
        first = (d["innings"].to_numpy() == 1) & (per_ball["innings_marker"] == 0)
        match = d["match_id"].astype(str).to_numpy()
        order = np.flatnonzero(first)
        place = pd.Series(order).groupby(match[order], sort=False).cumcount().to_numpy()
        longest = int(place.max()) + 1 if len(place) else 1
        table = np.zeros((n_seq, 1, longest, len(HISTORY_FIELDS)), dtype=np.int64)
        table[..., 0] = -1
        chase = (d["innings"].to_numpy() == 2) & (per_ball["innings_marker"] == 1)
        chase_of = pd.Series(seq_id[chase], index=match[chase])
        chase_of = chase_of[~chase_of.index.duplicated()]
        has_chase = np.isin(match[order], chase_of.index)
        rows, at = order[has_chase], place[has_chase]
        seq = chase_of.reindex(match[rows]).to_numpy()
        table[seq, 0, at] = np.stack(
            [per_ball["outcome"][rows], per_ball["batter"][rows], per_ball["phase"][rows], per_ball["over"][rows]],
            axis=-1,
        )
        return table

    def to_dict(self) -> dict:
        return {
            "batters": self.batters.tokens,
            "bowlers": self.bowlers.tokens,
            "venues": self.venues.tokens,
            "rates": {
                c: {
                    "strength": float(r.strength),
                    "prior": r.prior.tolist(),
                    "keys": r.counts.index.tolist(),
                    "counts": r.counts.to_numpy().tolist(),
                }
                for c, r in self.rates.items()
            },
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
            "first_season": int(self.first_season),
            "last_season": int(self.last_season),
            "quantiles": None if self.quantiles is None else self.quantiles.tolist(),
            "history_balls": self.history_balls,
            "first_innings": self.first_innings,
            "competitions": self.competitions.tokens,
            "team_types": self.team_types.tokens,
            "names": self.names,
            "records": self.records,
            "record_competitions": self.record_competitions,
            "sources": self.sources,
            "trained_until": int(self.trained_until),
        }

    @classmethod
    def from_dict(cls, d: dict) -> SequenceEncoder:
        """The encoder `to_dict` wrote (a checkpoint of this layout's version has every key)."""
        missing = [k for k in ENCODER_KEYS if k not in d]
        if missing:
            raise ValueError(f"the stored data encoder lacks {missing}")
        rates = {}
        for c, r in d["rates"].items():
            rates[c] = OutcomeRates(
                c,
                r["strength"],
                np.asarray(r["prior"]),
                pd.DataFrame(r["counts"], index=r["keys"], columns=range(len(r["prior"]))),
            )
        return cls(
            Vocab(d["batters"]),
            Vocab(d["bowlers"]),
            Vocab(d["venues"]),
            rates,
            np.asarray(d["mean"], dtype=np.float32),
            np.asarray(d["std"], dtype=np.float32),
            d["first_season"],
            d["last_season"],
            Vocab(d["competitions"]),
            Vocab(d["team_types"]),
            None if d["quantiles"] is None else np.asarray(d["quantiles"], dtype=np.float32),
            d["history_balls"],
            d["first_innings"],
            names=d["names"],
            records=d["records"],
            record_competitions=d["record_competitions"],
            sources=d["sources"],
            trained_until=d["trained_until"],
        )

    def model_dims(self) -> dict:
        """The data-dependent model settings."""
        return {
            "n_numeric": len(self.mean),
            "n_batters": len(self.batters),
            "n_bowlers": len(self.bowlers),
            "n_venues": len(self.venues),
            "n_competitions": len(self.competitions),
            "n_team_types": len(self.team_types),
            "numeric_quantiles": None if self.quantiles is None else self.quantiles.tolist(),
            "history_balls": self.history_balls,
            "history_age_buckets": HISTORY_AGE_BUCKETS,
            "first_innings": self.first_innings,
        }


# What `SequenceEncoder.to_dict` writes, every key of it read back by `from_dict`.
ENCODER_KEYS = (
    "batters", "bowlers", "venues", "rates", "mean", "std", "first_season", "last_season", "quantiles",
    "history_balls", "first_innings", "competitions", "team_types", "names", "records", "record_competitions",
    "sources", "trained_until",
)  # fmt: skip


def latest_keys(d: pd.DataFrame, role: str) -> dict[str, str]:
    """Each name of `role` in `d` to the key of the player of that name who played last."""
    named = pd.DataFrame({"name": d[role].astype(str).to_numpy(dtype=object), "key": entity_key(d, role)})
    named = named.drop_duplicates("name", keep="last")  # the table is in date order
    return dict(zip(named["name"], named["key"].astype(str)))
