"""Each ball's worth to its batter and to its bowler: what it gave against what an average player in his
place was expected to give, by the ball model.

The model reads every ball of an innings twice more: once with every batter replaced by an average batter,
once with every bowler by an average bowler, the rest as it was: the match state, the venue, the
competition, the other player, the balls before. The average player has had the same balls in the match
(being set is the situation) but not the player's figures in it: his score, or his spell's runs and
wickets, are the average player's rate per ball times those balls (`IN_MATCH`). The average batter of a
competition's season is what the model reads of the batter on its typical ball (`average_blocks`): the
mean, over every ball faced in that competition and season, of the batter's inputs (his record as of the
day, or his rates), with no embedding of his own and no history. Not the unknown player: in a model of
records as of the day he is a debutant, whom the model rightly expects to do worse; and not a record of
exactly the competition's mix, because the balls are faced mostly by the better batters (the weaker ones
bat less), so that record is below the typical ball's batter. So a season's batters, all together, make
about what their average would have: the sum is reported, not forced. An average batter's expected runs
off a ball are its class probabilities times each class's mean runs to the batter in the model's training
seasons; likewise the runs an average bowler concedes, his wickets, and the batter's chance of being out.

A wide is not a ball faced (nor a stumping off one, 58 of the IPL's 14,631 wicket balls): a batter is
valued on the other deliveries, against what an average batter was expected to make of a delivery that
was not a wide (the model's distribution without the wide class). A bowler is valued on every delivery:
wides and no-balls are his. Byes and leg-byes are nobody's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.batches import BallSequences
from cricket_attn.data.features import STATE_COLUMNS, ball_counts
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.probabilities import sequence_probabilities
from cricket_attn.inference.serving import TrainedModel
from cricket_attn.laws import N_OUTCOMES, OUTCOME_INDEX, OUTCOMES, bowler_wickets, dismissed, outcome_codes
from cricket_attn.valuation.wickets import WicketCost
from cricket_attn.valuation.win import WinModel, win_added

# What a ball gives that a player is valued on: runs to the batter, runs the bowler concedes (the bat's,
# wides and no-balls), a wicket credited to the bowler, the striker out (a retirement is not out).
QUANTITIES = ("runs", "conceded", "bowler_wicket", "out")
WIDE = OUTCOME_INDEX["wide"]
# Who the ball is, beside its values.
BALL_COLUMNS = (
    "match_id", "date", "season", "competition", "innings", "delivery_index", "batting_team", "bowling_team",
    "batter", "bowler",
)  # fmt: skip


def counted(d: pd.DataFrame) -> dict:
    """What each delivery of `d` adds to the running counts (`ball_counts`, the match state's rule): among
    them `faced` (not a wide, even when a wicket fell off it), `conceded` and the bowler's wicket."""
    code = outcome_codes(d)
    return ball_counts(
        code, d["runs_total"].to_numpy(), d["runs_batter"].to_numpy(), d["runs_wides"].to_numpy(),
        d["runs_noballs"].to_numpy(), bowler_wickets(d),
    )  # fmt: skip


def what_happened(d: pd.DataFrame) -> pd.DataFrame:
    """QUANTITIES for each delivery of `d`, as floats, and `faced` (`counted`)."""
    counts = counted(d)
    striker_out, _ = dismissed(d)
    code = outcome_codes(d)
    return pd.DataFrame(
        {
            "runs": d["runs_batter"].to_numpy(dtype=np.float64),
            "conceded": np.asarray(counts["conceded"], dtype=np.float64),
            "bowler_wicket": np.asarray(counts["bowler_wickets"], dtype=np.float64),
            "out": (striker_out & (code == OUTCOME_INDEX["wicket"])).astype(np.float64),
            "faced": np.asarray(counts["faced"], dtype=bool),
        },
        index=d.index,
    )


@dataclass
class ClassValues:
    """Each outcome class's mean of every one of QUANTITIES over the deliveries it is fitted on (the model's
    training seasons): what a class is worth, as the simulator's scorebook has it, in expectation; and what
    a wicket costs in runs by when it falls (`WicketCost`), to price dismissals and wickets in runs."""

    means: np.ndarray  # (len(QUANTITIES), N_OUTCOMES)
    wickets: WicketCost

    @classmethod
    def fit(cls, deliveries: pd.DataFrame) -> ClassValues:
        d = deliveries[~deliveries["is_super_over"].astype(bool)]
        code = outcome_codes(d)
        happened = what_happened(d)
        counts = np.bincount(code, minlength=N_OUTCOMES)
        if (counts == 0).any():
            missing = [OUTCOMES[c] for c in np.flatnonzero(counts == 0)]
            raise ValueError(f"no delivery of class {missing} to learn what it is worth from: too few deliveries")
        sums = np.stack([np.bincount(code, weights=happened[q], minlength=N_OUTCOMES) for q in QUANTITIES])
        return cls(sums / counts, WicketCost.fit(d))

    def expected(self, probs: np.ndarray, quantity: str) -> np.ndarray:
        """(N,) the expectation of `quantity` under each row's class distribution (N, N_OUTCOMES)."""
        return probs @ self.means[QUANTITIES.index(quantity)]

    def to_dict(self) -> dict:
        means = {q: dict(zip(OUTCOMES, self.means[i].tolist())) for i, q in enumerate(QUANTITIES)}
        return {**means, "wicket_cost": self.wickets.to_dict()}


GROUP = ("competition", "season")  # whose average player a ball is measured against
# A player's own figures in the match so far (his score, his spell), which the average player in his place
# does not have: each is read as the average player's rate per ball (runs to the batter per ball faced, or
# `counted`'s conceded and bowler's wickets per legal ball) times the balls he has had (the column after the
# arrow), which stay: being set is the situation, how he got there is the player.
IN_MATCH = {
    "batter": {"batter_runs_before": ("runs", "batter_balls_before")},
    "bowler": {
        "bowler_runs_before": ("conceded", "bowler_balls_before"),
        "bowler_wickets_before": ("bowler_wickets", "bowler_balls_before"),
    },
}


def average_blocks(encoder: SequenceEncoder, known: pd.DataFrame, role: str, groups: pd.DataFrame) -> pd.DataFrame:
    """Per competition and season of `groups` (rows of GROUP), what the model reads, scaled, of the `role`
    ("batter" or "bowler") on the typical ball of that competition's season in `known`: the mean over its
    balls (for a batter, those he faced) of the role's block of the numeric features."""
    k = known[~known["is_super_over"].astype(bool)]
    k = k.merge(groups.drop_duplicates(), on=list(GROUP))
    if role == "batter":
        k = k[np.asarray(counted(k)["faced"], dtype=bool)]
    missing = groups.drop_duplicates().merge(k[list(GROUP)].drop_duplicates(), how="left", indicator=True)
    missing = missing[missing["_merge"] == "left_only"]
    if len(missing):
        named = ", ".join(f"{c} {s}" for c, s in zip(missing["competition"], missing["season"]))
        raise ValueError(f"no ball of {named} among the known matches: the average {role} is not known")
    at = encoder.block_slice(role)
    scaled = (encoder.key_features(role, k) - encoder.mean[at]) / encoder.std[at]
    scaled = np.where(np.isfinite(encoder.std[at]), scaled, 0.0)  # a constant feature is read as 0
    return pd.DataFrame(scaled, index=pd.MultiIndex.from_frame(k[list(GROUP)])).groupby(level=list(GROUP)).mean()


def in_match_rates(known: pd.DataFrame, role: str, groups: pd.DataFrame) -> pd.DataFrame:
    """Per competition and season of `groups`, the average `role`'s rate per ball of each of his in-match
    figures (IN_MATCH): runs per ball faced, or runs conceded and wickets per legal ball bowled."""
    k = known[~known["is_super_over"].astype(bool)].merge(groups.drop_duplicates(), on=list(GROUP))
    counts = counted(k)
    per_ball = {"runs": k["runs_batter"], "conceded": counts["conceded"], "bowler_wickets": counts["bowler_wickets"]}
    balls = np.asarray(counts["faced"] if role == "batter" else k["is_legal"], dtype=np.float64)
    sums = (
        pd.DataFrame(
            {column: np.asarray(per_ball[what], dtype=np.float64) for column, (what, _) in IN_MATCH[role].items()}
            | {"_balls": balls},
            index=pd.MultiIndex.from_frame(k[list(GROUP)]),
        )
        .groupby(level=list(GROUP))
        .sum()
    )
    return sums.drop(columns="_balls").div(sums["_balls"], axis=0)


def with_average(
    sequences: BallSequences, encoder: SequenceEncoder, role: str, blocks: np.ndarray, rates: np.ndarray
) -> BallSequences:
    """The same sequences with every `role` ("batter" or "bowler") an average player: his block of the
    numeric features `blocks` (one row per delivery of the table encoded, by its `row`), no embedding of his
    own (the unknown's), no history, and his figures in the match so far `rates` (per delivery, one column
    per IN_MATCH figure of the role) times the balls he has had."""
    tensors = dict(sequences.tensors)
    numeric, real = tensors["numeric"].clone(), tensors["mask"]
    at = encoder.block_slice(role)
    rows = tensors["row"][real].numpy()
    numeric[..., at][real] = torch.from_numpy(blocks[rows].astype(np.float32))
    for j, (column, (_, balls_column)) in enumerate(IN_MATCH[role].items()):
        i, b = STATE_COLUMNS.index(column), STATE_COLUMNS.index(balls_column)
        scale = float(encoder.std[b]) if np.isfinite(encoder.std[b]) else 0.0  # constant in training: its value
        balls = numeric[..., b][real].double() * scale + float(encoder.mean[b])
        figure = balls.numpy() * rates[rows, j]
        numeric[..., i][real] = torch.from_numpy(((figure - encoder.mean[i]) / encoder.std[i]).astype(np.float32))
    tensors["numeric"] = numeric
    tensors[role] = torch.zeros_like(tensors[role])
    if f"{role}_history" in tensors:
        history = tensors[f"{role}_history"].clone()
        history[..., 0] = -1  # every slot empty
        tensors[f"{role}_history"] = history
    return BallSequences(tensors, sequences.lengths, sequences.per_sequence)


def average_probabilities(
    trained: TrainedModel,
    d: pd.DataFrame,
    sequences: BallSequences,
    role: str,
    known: pd.DataFrame,
    batch_size: int = 256,
) -> np.ndarray:
    """(len(d), N_OUTCOMES) each delivery's class distribution with its `role` the average player of its
    competition's season in `known` (`average_blocks`); `d` has regular innings only, indexed 0..n-1, and
    `sequences` are its innings as the encoder made them (once, for both roles)."""
    blocks = average_blocks(trained.encoder, known, role, d[list(GROUP)])
    where = pd.MultiIndex.from_frame(d[list(GROUP)])
    per_ball = blocks.reindex(where).to_numpy()
    rates = in_match_rates(known, role, d[list(GROUP)]).reindex(where).to_numpy()
    rows, probs = sequence_probabilities(
        trained.model, with_average(sequences, trained.encoder, role, per_ball, rates), batch_size
    )
    out = np.full((len(d), N_OUTCOMES), np.nan)
    out[rows] = probs
    return out / out.sum(axis=1, keepdims=True)


def ball_values(
    trained: TrainedModel,
    deliveries: pd.DataFrame,
    values: ClassValues,
    known: pd.DataFrame | None = None,
    win: WinModel | None = None,
    matches: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per delivery of the regular innings of `deliveries` (BALL_COLUMNS, the players' keys as the
    model knows them), with what it gave and what an average player in each role was expected to give:

    - batting (`faced`: not a wide, `ball_counts`' rule): `runs`, `expected_runs`, `runs_above_expected`; `out`,
      `expected_out`, `dismissals_avoided` (expected minus actual), NaN on a wide;
    - bowling: `conceded`, `expected_conceded`, `runs_saved` (expected minus conceded); `bowler_wicket`,
      `expected_wickets`, `wickets_above_expected`;
    - `wicket_cost` (what a wicket off the ball cost its side in runs, `WicketCost`), and the two in one:
      `batting_value`, runs above expected plus the dismissals avoided priced at it, and `bowling_value`,
      runs saved plus the wickets above expected priced at it;
    - with a win-probability model and the `matches` table (their results): `win_before`, `win_added` (to
      the batting side's chance, `win_added`), `batting_wpa` (on the balls faced) and `bowling_wpa` (its
      opposite, on every delivery); NaN for a match without a result.

    The average players are those of `known` (default: `deliveries`; give every match of the seasons valued).
    A model that reads earlier matches (records, histories) reads them from `known` when it is given, else
    from what is attached, else from `deliveries`."""
    if trained.encoder.reads_known and (known is not None or not trained.encoder.known_attached):
        trained.encoder.attach_known(deliveries if known is None else known)  # `known` given: always its records
    known = deliveries if known is None else known
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    out = d[[c for c in BALL_COLUMNS if c in d.columns]].copy()
    for role in ("batter", "bowler"):
        out[role] = d[role].astype(str)
        out[f"{role}_key"] = trained.encoder.key(d, role).to_numpy()
    happened = what_happened(d)
    faced = happened["faced"].to_numpy()
    sequences = trained.encoder.encode(d)
    out["faced"] = faced
    batting = average_probabilities(trained, d, sequences, "batter", known)
    not_wide = batting.copy()
    not_wide[:, WIDE] = 0.0
    not_wide /= not_wide.sum(axis=1, keepdims=True)
    out["runs"] = happened["runs"].where(faced)
    out["expected_runs"] = np.where(faced, values.expected(not_wide, "runs"), np.nan)
    out["runs_above_expected"] = out["runs"] - out["expected_runs"]
    out["out"] = happened["out"].where(faced)
    out["expected_out"] = np.where(faced, values.expected(not_wide, "out"), np.nan)
    out["dismissals_avoided"] = out["expected_out"] - out["out"]
    bowling = average_probabilities(trained, d, sequences, "bowler", known)
    out["legal"] = d["is_legal"].to_numpy(dtype=bool)
    out["conceded"] = happened["conceded"]
    out["expected_conceded"] = values.expected(bowling, "conceded")
    out["runs_saved"] = out["expected_conceded"] - out["conceded"]
    out["bowler_wicket"] = happened["bowler_wicket"]
    out["expected_wickets"] = values.expected(bowling, "bowler_wicket")
    out["wickets_above_expected"] = out["bowler_wicket"] - out["expected_wickets"]
    out["wicket_cost"] = values.wickets.cost(d)
    out["batting_value"] = out["runs_above_expected"] + out["wicket_cost"] * out["dismissals_avoided"]
    out["bowling_value"] = out["runs_saved"] + out["wicket_cost"] * out["wickets_above_expected"]
    if win is not None:
        added = win_added(win, d, matches)
        out["win_before"], out["win_added"] = added["win_before"], added["win_added"]
        out["batting_wpa"] = out["win_added"].where(faced)
        out["bowling_wpa"] = -out["win_added"]
    return out
