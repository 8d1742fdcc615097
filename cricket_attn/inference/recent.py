"""The league's level since the model's training seasons, learnt from the matches played since.

Scoring drifts from season to season, and a model trained through one season meets the next one's level
(on 2025-2026 the default expects 0.4 to 0.7 wickets an innings too many and 3 to 4 runs too few). For a
match on date t, `offsets` are one number per outcome class, added to the model's log-probabilities: the
ones that best explain the outcomes of every ball the model was not trained on and that was bowled in a
match dated before t, pulled towards zero by an L2 penalty (`strength`, in balls' worth of evidence).
A match with no such earlier match keeps the model's own probabilities. The rule is strict: a match never
sees itself, a later match or a match of its own date. Chosen and measured in docs/log/2026-11-23.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import restore_types
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.form import PlayerForm
from cricket_attn.inference.probabilities import model_config, model_reach, score_deliveries
from cricket_attn.metrics import PROB_COLUMNS, labels_of
from cricket_attn.model import CricketTransformer, Ensemble

STRENGTH = 200.0


# The most a strength may be: a pull of a million balls (the IPL has played about 300,000) leaves nothing
# to learn, and larger values only lose the arithmetic (infinity makes every probability NaN).
MAX_STRENGTH = 1e6


def strength(upper: float = MAX_STRENGTH) -> Callable[[str], float]:
    """An argparse type: 0 (off) or a positive number up to `upper` (`--recent-level`, `--spread`);
    infinity, NaN and larger values are refused before any work."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text}: must be a number") from None
        if not 0 <= value <= upper:  # also NaN
            raise argparse.ArgumentTypeError(f"{text}: must be 0 (off) or a positive number up to {upper:g}")
        return value

    return parse


def fit_offsets(
    probs: np.ndarray | torch.Tensor,
    labels: np.ndarray | torch.Tensor,
    strength: float = STRENGTH,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Class offsets b (C,) minimising the summed log loss of softmax(log(probs) + b) on `labels` (probs:
    (N, C), positive) plus `strength` * |b|^2, by Newton's method from `start` (zeros by default), halving
    a step that does not lower the loss. The problem is convex with C unknowns, so a start near the answer
    (the offsets of the day before) ends in a step or two."""
    p = torch.as_tensor(probs, dtype=torch.float64)
    counts = torch.bincount(torch.as_tensor(labels, dtype=torch.long), minlength=p.size(1)).to(torch.float64)
    b = torch.zeros(p.size(1), dtype=torch.float64) if start is None else torch.as_tensor(start, dtype=torch.float64)
    ridge = 2 * strength * torch.eye(p.size(1), dtype=torch.float64)

    def loss(b: torch.Tensor) -> torch.Tensor:  # the log loss less the part b does not change
        return torch.log(p @ torch.exp(b)).sum() - counts @ b + strength * (b**2).sum()

    value = loss(b)
    for _ in range(50):
        w = torch.exp(b)
        q = p * (w / (p @ w)[:, None])  # softmax(log p + b), (N, C)
        gradient = q.sum(0) - counts + 2 * strength * b
        step = torch.linalg.solve(torch.diag(q.sum(0)) - q.T @ q + ridge, gradient)
        for _ in range(30):
            trial = loss(b - step)
            if trial <= value:
                break
            step = step / 2
        b, value = b - step, trial
        if step.abs().max() < 1e-10:
            break
    return b.numpy()


def log_probabilities(scored: pd.DataFrame) -> np.ndarray:
    return np.log(np.clip(scored[list(PROB_COLUMNS)].to_numpy(np.float64), 1e-12, 1.0))


def match_offsets(scored: pd.DataFrame, dates: pd.Series, strength: float = STRENGTH) -> dict[object, np.ndarray]:
    """For every match of `scored` (the model's scored balls of matches it was not trained on; `dates`:
    match_id -> date), the offsets fitted on the balls of the matches dated strictly before it (zeros
    where there are none). Where `scored` has a `competition` column, each competition's level comes from
    its own matches alone: a pooled model's IPL match learns nothing from the Big Bash's scoring."""
    if "competition" in scored and scored["competition"].nunique(dropna=False) > 1:
        out = {}
        for _, part in scored.groupby("competition", sort=False, observed=True, dropna=False):
            out |= match_offsets(part.drop(columns="competition"), dates, strength)
        return out
    day = scored["match_id"].map(dates)
    if day.isna().any():
        raise ValueError(f"no date for match(es) {sorted(scored.loc[day.isna(), 'match_id'].unique())[:5]}")
    order = np.argsort(day.to_numpy(), kind="stable")  # by date: the balls before a day are a prefix
    probs = torch.as_tensor(np.clip(scored[list(PROB_COLUMNS)].to_numpy(np.float64)[order], 1e-12, 1.0))
    labels, day = torch.as_tensor(labels_of(scored)[order]), day.iloc[order].reset_index(drop=True)
    zeros = np.zeros(len(PROB_COLUMNS))
    when = scored.groupby("match_id", sort=False)["match_id"].first().map(dates)
    by_day, last = {}, None
    for today in sorted(when.unique()):  # each day's fit starts from the day before's
        n = int(day.searchsorted(today, side="left"))
        by_day[today] = last = fit_offsets(probs[:n], labels[:n], strength, last) if n else zeros
    return {match: by_day[today] for match, today in when.items()}


def with_offsets(scored: pd.DataFrame, offsets: dict[str, np.ndarray]) -> pd.DataFrame:
    """`scored` with each match's probabilities moved by its offsets (by match_id as text; a match without
    any keeps its own) and renormalised."""
    zeros = np.zeros(len(PROB_COLUMNS))
    shift = np.stack([offsets.get(str(m), zeros) for m in scored["match_id"]]) if len(scored) else zeros[None, :0]
    moved = log_probabilities(scored) + shift
    moved = np.exp(moved - np.logaddexp.reduce(moved, axis=1, keepdims=True))
    return scored.assign(**{c: moved[:, i] for i, c in enumerate(PROB_COLUMNS)})


def balls_since(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    scored: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.Series]:
    """The model's scored balls of every match in `deliveries` played after its training seasons (match_id as
    text, batter, bowler, outcome, the class probabilities and, where the table has it, the competition),
    and those matches' dates by match_id; the matches of `scored` (balls the model has scored already) are
    not scored again. An encoder that reads earlier matches (records, histories) and has none attached reads
    them from `deliveries`."""
    if not encoder.known_attached:
        encoder.attach_known(deliveries)
    since = deliveries[(deliveries["season"] > encoder.trained_until) & ~deliveries["is_super_over"].astype(bool)]
    columns = ["match_id", "batter", "bowler", "outcome", *PROB_COLUMNS]
    if since.empty:
        return pd.DataFrame(columns=columns), pd.Series(dtype="datetime64[ns]")
    since = restore_types(since.reset_index(drop=True))  # a table joined from several (known_deliveries)
    since["match_id"] = since["match_id"].astype(str)
    since = since[~since["match_id"].isin(model_reach(model_config(model), since))]  # a match it cannot embed
    dates = since.groupby("match_id")["date"].first()
    league = since.groupby("match_id")["competition"].first().astype(str) if "competition" in since else None
    parts = []
    if scored is not None:
        done = scored.assign(match_id=scored["match_id"].astype(str))
        parts.append(done[done["match_id"].isin(dates.index) & done["outcome"].notna()])
        since = since[~since["match_id"].isin(set(done["match_id"]))]
    if not since.empty:
        parts.append(score_deliveries(model, encoder, since.reset_index(drop=True)))
    balls = pd.concat([p[columns].astype({"match_id": str}) for p in parts], ignore_index=True)
    if league is not None:
        balls["competition"] = balls["match_id"].map(league)
    return balls, dates


def recent_offsets(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    strength: float = STRENGTH,
    scored: pd.DataFrame | None = None,
) -> dict[str, np.ndarray]:
    """By match_id (as text), the offsets of every match in `deliveries` played after the model's
    training seasons, from the model's own predictions for the balls of those matches (`balls_since`)."""
    balls, dates = balls_since(model, encoder, deliveries, scored)
    return match_offsets(balls, dates, strength) if len(balls) else {}


# `--recent-level`'s default where the model decides it (`level_by_default`), as the commands' help says it.
BY_MODEL = f"{STRENGTH:g} for a model of training-season rates, 0 for one reading records as of the day"


def level_by_default(encoder: SequenceEncoder) -> float:
    """The strength of the league's recent level a command uses unless told: none for a model that reads
    each ball's records as of its day (the league's level as of the day is one of its inputs), STRENGTH
    for a model of rates fitted on its training seasons."""
    return 0.0 if encoder.records is not None else STRENGTH


def since_training(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    strength: float,
    form: bool,
    scored: pd.DataFrame | None = None,
) -> tuple[dict[str, np.ndarray] | None, PlayerForm | None]:
    """What the matches of `deliveries` since the model's training seasons teach, from one scoring of their
    balls: each match's class offsets (the league's recent level; None when `strength` is 0) and the
    players' form (`cricket_attn.inference.form`; None unless `form`)."""
    if not strength and not form:
        return None, None
    balls, dates = balls_since(model, encoder, deliveries, scored)
    levels = (match_offsets(balls, dates, strength) if len(balls) else {}) if strength else None
    return levels, PlayerForm.from_scored(balls, dates) if form else None
