"""A trained model's outcome distribution for every delivery of a deliveries table.

One function, used by the training report, `cricket-attn-evaluate`, `cricket-attn-predict` and the
MLflow pyfunc model, so they all give the same numbers for the same ball.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cricket_attn import progress
from cricket_attn.data.batches import BallSequences, BucketBatchSampler
from cricket_attn.data.features import innings_extent
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.laws import OUTCOME_RUNS
from cricket_attn.metrics import PROB_COLUMNS
from cricket_attn.model import CricketTransformer, Ensemble, ModelConfig

# What a scored frame carries about each delivery, before the probabilities.
DELIVERY_COLUMNS = (
    "match_id",
    "season",
    "innings",
    "delivery_index",
    "over",
    "ball_in_over",
    "phase",
    "batter",
    "bowler",
    "outcome",
)


@torch.no_grad()
def sequence_probabilities(
    model: CricketTransformer | Ensemble, sequences: BallSequences, batch_size: int = 256, desc: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, probabilities): the table row of every real position and its predicted distribution;
    with `desc`, a bar over the batches on a terminal."""
    model.eval()
    device = next(model.parameters()).device
    rows, probs = [], []
    batches = BucketBatchSampler(sequences.lengths, batch_size, shuffle=False)
    for idx in progress.track(batches, desc, total=len(batches), unit="batch") if desc else batches:
        batch = {k: v.to(device) for k, v in sequences.collate(idx).items()}
        p = model(batch).float().softmax(-1)
        real = batch["mask"]
        rows.append(batch["row"][real].cpu().numpy())
        probs.append(p[real].cpu().numpy().astype(np.float64))
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(PROB_COLUMNS)))
    return np.concatenate(rows), np.concatenate(probs)


def score_deliveries(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    batch_size: int = 256,
    desc: str | None = None,
) -> pd.DataFrame:
    """One row per delivery of every regular innings (super overs are not modelled), in table order,
    with `PROB_COLUMNS` (each row sums to 1) and `expected_runs`."""
    d = deliveries.reset_index(drop=True)
    rows, probs = sequence_probabilities(model, encoder.encode(d), batch_size, desc)
    order = np.argsort(rows, kind="stable")
    rows, probs = rows[order], probs[order]
    probs /= probs.sum(axis=1, keepdims=True)  # float64 renormalisation: rows sum to 1 within 1e-12
    cols = [c for c in DELIVERY_COLUMNS if c in d.columns]
    out = d.loc[rows, cols].reset_index(drop=True)
    for j, name in enumerate(PROB_COLUMNS):
        out[name] = probs[:, j]
    out["expected_runs"] = probs @ OUTCOME_RUNS
    return out


def model_config(model: CricketTransformer | Ensemble) -> ModelConfig:
    """The settings of a model, or of an ensemble's first member (its members are alike)."""
    return (model.members[0] if isinstance(model, Ensemble) else model).cfg


# The positions a model's tables hold, each as its setting and what it counts (`innings_extent`'s columns).
REACH = (
    ("max_len", "deliveries", "deliveries"),
    ("max_balls", "legal_balls", "legal balls"),
    ("max_overs", "overs", "overs"),
    ("max_ball_in_over", "balls_in_over", "balls in an over"),
)


def model_reach(cfg: ModelConfig, deliveries: pd.DataFrame, scheduled: bool = False) -> dict:
    """Per match the model cannot take, the first position it cannot embed, as a sentence. With
    `scheduled`, an innings is also measured by the legal balls and overs it may last."""
    extent = innings_extent(deliveries)
    if scheduled:
        bpo = deliveries.groupby(["match_id", "innings"], observed=True, sort=False)["balls_per_over"].max()
        extent["legal_balls"] = extent[["legal_balls", "scheduled_balls"]].max(axis=1)
        extent["overs"] = np.maximum(extent["overs"], np.ceil(extent["scheduled_balls"] / bpo.reindex(extent.index)))
    found = {}
    for setting, column, what in REACH:
        beyond = extent[extent[column] > getattr(cfg, setting)]
        for (match_id, innings), n in beyond[column].items():
            found.setdefault(
                match_id,
                f"innings {innings} reaches {int(n)} {what}, more than the model's "
                f"tables hold (model.{setting}={getattr(cfg, setting)}; it was trained on T20 innings)",
            )
    return found
