"""Scores of predicted outcome distributions, shared by training, evaluation, baselines and prediction.

Everything works on a *scored frame*: one row per delivery with `match_id`, `innings`,
`delivery_index`, `phase`, `outcome` and the probability columns `PROB_COLUMNS`. Metrics come from
scikit-learn and torchmetrics (imported where used), so there is one definition of each, used everywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from cricket_attn.atomic import atomic_path
from cricket_attn.laws import OUTCOME_INDEX, OUTCOMES

PROB_COLUMNS = tuple(f"p_{name}" for name in OUTCOMES)  # p_dot, p_1, ..., p_bye, in class order
KEY_COLUMNS = ("match_id", "innings", "delivery_index")
ECE_BINS = 15


def labels_of(frame: pd.DataFrame) -> np.ndarray:
    return pd.Categorical(frame["outcome"], categories=OUTCOMES).codes.astype(np.int64)


def probabilities(frame: pd.DataFrame) -> np.ndarray:
    return frame[list(PROB_COLUMNS)].to_numpy(dtype=np.float64)


def per_ball_log_loss(frame: pd.DataFrame) -> np.ndarray:
    """-log p(actual outcome) for each delivery, in nats."""
    p = probabilities(frame)
    return -np.log(np.clip(p[np.arange(len(p)), labels_of(frame)], 1e-15, 1.0))


def score(frame: pd.DataFrame) -> dict[str, float]:
    """Log loss (nats), Brier score, accuracy, top-label ECE, and log loss per match phase."""
    # Imported here, not with the module: the scoring commands import this module for its columns and
    # start a second sooner without scikit-learn and torchmetrics.
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss
    from torchmetrics.functional.classification import multiclass_calibration_error

    y, p = labels_of(frame), probabilities(frame)
    if (y < 0).any():
        raise ValueError("every scored delivery needs a known outcome")
    labels = list(range(len(OUTCOMES)))
    out = {
        "log_loss": float(log_loss(y, p, labels=labels)),
        "brier": float(brier_score_loss(y, p, labels=labels)),
        "accuracy": float(accuracy_score(y, p.argmax(axis=1))),
        "ece": float(
            multiclass_calibration_error(torch.tensor(p), torch.tensor(y), len(OUTCOMES), n_bins=ECE_BINS, norm="l1")
        ),
        "deliveries": float(len(frame)),
    }
    for phase, part in frame.groupby("phase", observed=True, sort=True):
        out[f"log_loss_{phase}"] = float(log_loss(labels_of(part), probabilities(part), labels=labels))
    return out


def _calibrated_log(log_p: np.ndarray, temperature: float, wicket_offset: float) -> np.ndarray:
    """log softmax(log p / T + the wicket offset on the wicket class)."""
    z = log_p / temperature
    z[:, OUTCOME_INDEX["wicket"]] += wicket_offset
    z -= z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def calibrated(p: np.ndarray, temperature: float, wicket_offset: float = 0.0) -> np.ndarray:
    """softmax(log p / T + the wicket offset on the wicket class): the same classes' order, sharper (T < 1)
    or flatter (T > 1), and wickets likelier (offset > 0) or less likely (the model's own calibration,
    `CricketTransformer.forward`, on probabilities)."""
    return np.exp(_calibrated_log(np.log(np.clip(p, 1e-15, 1.0)), temperature, wicket_offset))


def fit_calibration(
    frame: pd.DataFrame, wickets: bool = True, bounds: tuple[float, float] = (0.5, 2.0)
) -> tuple[float, float]:
    """The temperature T and (with `wickets`; else 0) the wicket offset that minimise the log loss of
    `calibrated` on these deliveries: T fixes over- or under-confidence without reordering classes, the
    offset this model's share of wickets (given to a refit it was not fitted to, it was level and noisy: conf's
    `calibrate_wickets`)."""
    from scipy.optimize import minimize

    y, log_p = labels_of(frame), np.log(np.clip(probabilities(frame), 1e-15, 1.0))
    rows = np.arange(len(y))

    def loss(x: np.ndarray) -> float:
        return float(-np.mean(_calibrated_log(log_p, x[0], x[1])[rows, y]))

    fitted = minimize(
        loss, np.array([1.0, 0.0]), method="L-BFGS-B", bounds=[bounds, (-2.0, 2.0) if wickets else (0.0, 0.0)]
    )
    return float(fitted.x[0]), float(fitted.x[1])


def paired_losses(model: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """The deliveries both frames scored: their keys, outcome and per-ball log-loss difference
    `diff` (model - reference)."""
    keys = list(KEY_COLUMNS)
    both = model[keys + ["outcome"] + list(PROB_COLUMNS)].merge(
        reference[keys + list(PROB_COLUMNS)], on=keys, suffixes=("", "_ref"), validate="one_to_one"
    )
    if len(both) == 0:
        raise ValueError("the two scored frames share no deliveries")
    ref = both[keys + ["outcome"]].assign(**{c: both[f"{c}_ref"] for c in PROB_COLUMNS})
    return both[keys + ["outcome"]].assign(diff=per_ball_log_loss(both) - per_ball_log_loss(ref))


def match_bootstrap(diff: np.ndarray, match_id: pd.Series, n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """Mean of per-ball `diff`, with a 95% bootstrap interval that resamples whole matches (balls of
    one match are not independent)."""
    match_codes, _ = pd.factorize(match_id)
    n_matches = match_codes.max() + 1
    sums = np.bincount(match_codes, weights=diff, minlength=n_matches)
    counts = np.bincount(match_codes, minlength=n_matches)
    return {**match_bootstrap_sums(sums, counts, n_boot, seed), "diff": float(diff.mean())}


def match_bootstrap_sums(sums: np.ndarray, counts: np.ndarray, n_boot: int = 2000, seed: int = 0) -> dict[str, float]:
    """`match_bootstrap` from each match's sum of the per-ball difference and its number of balls, in the
    order the matches first appear (the same draws then give the same interval)."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(sums), size=(n_boot, len(sums)))
    boot = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return {
        "diff": float(sums.sum() / counts.sum()),
        "ci_low": float(low),
        "ci_high": float(high),
        "deliveries": float(counts.sum()),
        "matches": float(len(sums)),
    }


def paired_difference(
    model: pd.DataFrame, reference: pd.DataFrame, n_boot: int = 2000, seed: int = 0
) -> dict[str, float]:
    """Mean log-loss difference (model - reference) on the deliveries both scored, with a 95%
    bootstrap interval by match."""
    paired = paired_losses(model, reference)
    return match_bootstrap(paired["diff"].to_numpy(), paired["match_id"], n_boot, seed)


# How `paired_by_state` cuts the balls: a title, the column of the match state, and (for numbers)
# the bin edges, right-inclusive, with their labels.
STATE_CUTS = (
    ("phase", "phase", None, None),
    ("innings", "innings_kind", None, None),
    ("wickets down", "wickets_before", [-1, 1, 3, 5, 7, 10], ["0-1", "2-3", "4-5", "6-7", "8+"]),
    ("legal balls left", "balls_left", [-1, 12, 30, 60, 90, np.inf], ["12 or fewer", "13-30", "31-60", "61-90", "91+"]),
    ("balls the batter has faced", "batter_balls_before", [-1, 0, 5, 15, 30, np.inf],
     ["0", "1-5", "6-15", "16-30", "31+"]),
    ("actual outcome", "outcome", None, None),
)  # fmt: skip


def paired_by_state(
    model: pd.DataFrame, reference: pd.DataFrame, state: pd.DataFrame, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Where model and reference part company: the paired log-loss difference (model - reference) with
    its bootstrap interval by match, within each bin of the match state (`STATE_CUTS`). `state` has the
    key columns, `phase`, `innings_kind` and the match-state columns the cuts use."""
    paired = paired_losses(model, reference).merge(state, on=list(KEY_COLUMNS), validate="one_to_one")
    rows = []
    for title, column, edges, names in STATE_CUTS:
        values = paired[column]
        groups = pd.cut(values, edges, labels=names) if edges is not None else values
        for name, part in paired.groupby(groups, observed=True, sort=True):  # categories in their order
            rows.append(
                {
                    "state": title,
                    "bin": str(name),
                    **match_bootstrap(part["diff"].to_numpy(), part["match_id"], n_boot, seed),
                }
            )
    return pd.DataFrame(rows)


def binary_brier(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each forecast's squared error: a probability p of an event (a chase won) that happened (y = 1) or not."""
    return (p - y) ** 2


def binary_log_loss(p: np.ndarray, y: np.ndarray, floor: float) -> np.ndarray:
    """Each forecast's log loss, with p clipped to [floor, 1 - floor]."""
    p = np.clip(p, floor, 1 - floor)  # a Monte Carlo 0 or 1: the simulator passes half a simulation
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def wilson_interval(p: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's interval (95% by default) for a share `p` of `n` trials: within 0-1 however few; nan for none."""
    if not n:
        return np.nan, np.nan
    scale = 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / scale, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / scale
    return centre - half, centre + half


def pinball(y: np.ndarray, q10: np.ndarray, q50: np.ndarray, q90: np.ndarray) -> np.ndarray:
    """The pinball loss of each forecast's 10/50/90% quantiles, averaged over the three."""
    total = 0
    for level, q in ((0.1, q10), (0.5, q50), (0.9, q90)):
        gap = y - q
        total = total + np.maximum(level * gap, (level - 1) * gap)
    return total / 3


def pit_coverage(draws: list[np.ndarray], y: np.ndarray, low: float = 0.1, high: float = 0.9) -> np.ndarray:
    """The chance that each figure's randomised PIT lies within [low, high]: a count's forecast puts mass on
    whole numbers, so where it is F(y-1) < u <= F(y) the PIT is drawn uniformly across that step (the share of
    the step within [low, high], not a draw), which makes it uniform for a forecast that is right; its
    coverage is then high - low, where counting a quantile that equals y as covered (a q10 of 0 covers every
    duck) overstates it."""
    out = np.empty(len(y))
    for i, (x, v) in enumerate(zip(draws, y)):
        below, upto = np.mean(x < v), np.mean(x <= v)
        if upto > below:
            out[i] = max(0.0, min(upto, high) - max(below, low)) / (upto - below)
        else:
            out[i] = float(low <= below <= high)
    return out


def binary_ece(p: np.ndarray, y: np.ndarray, bins: int) -> float:
    """Expected calibration error of the probability of an event: the share-weighted gap between the mean forecast
    and the observed win rate in equal-width bins."""
    b = np.clip((p * bins).astype(int), 0, bins - 1)
    gap = sum(abs(p[b == k].mean() - y[b == k].mean()) * (b == k).sum() for k in range(bins) if (b == k).any())
    return float(gap / len(p))


def binary_reliability(p: np.ndarray, y: np.ndarray, bins: int) -> pd.DataFrame:
    """Per equal-width bin of forecasts: the mean forecast, the observed rate and the number of states."""
    b = np.clip((p * bins).astype(int), 0, bins - 1)
    return (
        pd.DataFrame({"bin": b, "forecast": p, "observed": y})
        .groupby("bin")
        .agg(forecast=("forecast", "mean"), observed=("observed", "mean"), states=("observed", "size"))
        .reset_index()
    )


def reliability_table(frame: pd.DataFrame, n_bins: int = ECE_BINS) -> pd.DataFrame:
    """Top-label confidence against accuracy, in equal-width confidence bins (as the ECE uses)."""
    p = probabilities(frame)
    conf, correct = p.max(axis=1), (p.argmax(axis=1) == labels_of(frame))
    bins = np.clip((conf * n_bins).astype(int), 0, n_bins - 1)
    table = pd.DataFrame({"bin": bins, "confidence": conf, "accuracy": correct.astype(float)})
    return (
        table.groupby("bin")
        .agg(confidence=("confidence", "mean"), accuracy=("accuracy", "mean"), deliveries=("accuracy", "size"))
        .reset_index()
    )


def plot_reliability(frame: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = reliability_table(frame)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect calibration")
    ax.plot(table["confidence"], table["accuracy"], marker="o", label="model")
    ax.set(
        xlabel="predicted probability of the top outcome",
        ylabel="how often it happened",
        xlim=(0, 1),
        ylim=(0, 1),
        title=title or "Reliability (top label)",
    )
    ax.legend(loc="upper left")
    return save_figure(fig, path)


def plot_phases(frame: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Log loss by match phase, with the class-mix (marginal) loss of the same balls for scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import log_loss

    labels = list(range(len(OUTCOMES)))
    phases, model, marginal = [], [], []
    for phase, part in frame.groupby("phase", observed=True, sort=True):
        y = labels_of(part)
        mix = np.bincount(y, minlength=len(OUTCOMES)) / len(y)
        phases.append(str(phase))
        model.append(log_loss(y, probabilities(part), labels=labels))
        marginal.append(log_loss(y, np.tile(mix, (len(y), 1)), labels=labels))
    x = np.arange(len(phases))
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.bar(x - 0.2, model, width=0.4, label="model")
    ax.bar(x + 0.2, marginal, width=0.4, label="phase class mix (in-sample)")
    ax.set_xticks(x, phases)
    ax.set(
        ylabel="log loss (nats)",
        ylim=(min(model + marginal) - 0.1, max(model + marginal) + 0.05),
        title=title or "Log loss by phase",
    )
    ax.legend(loc="lower right", fontsize=8)
    return save_figure(fig, path)


def plot_comparison(paired: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Each baseline's paired log-loss difference from the transformer (`diff`, `ci_low`, `ci_high`,
    one row per baseline, indexed by name) with its 95% interval by match: right of zero, the
    transformer is better."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = np.arange(len(paired))[::-1]
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(paired) + 1.4))
    ax.errorbar(
        paired["diff"],
        y,
        xerr=[paired["diff"] - paired["ci_low"], paired["ci_high"] - paired["diff"]],
        fmt="o",
        capsize=4,
    )
    ax.axvline(0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(y, paired.index)
    ax.set(
        xlabel="baseline log loss - transformer's, nats per ball (95% CI by match)",
        title=title or "Paired against the transformer on the same balls",
    )
    return save_figure(fig, path)


def markdown_table(frame: pd.DataFrame, digits: int = 4) -> str:
    """A frame as a markdown table, floats to `digits` decimals."""
    cell = lambda v: f"{v:.{digits}f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def save_figure(fig, path: str | Path, tight_layout: bool = True) -> Path:
    """A matplotlib figure as a PNG, written atomically, then closed. Without `tight_layout` (figures
    with a colour bar beside a grid of axes) the saved image is cropped to what is drawn instead."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight_layout:
        fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches=None if tight_layout else "tight")
    plt.close(fig)
    return path
