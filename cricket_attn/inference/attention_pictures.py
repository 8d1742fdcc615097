"""The attention drawn: each head over an innings and from one ball, a match's pictures for the command, and
a training run's attention report logged to MLflow with its pictures (the statistics are `attention.py`'s)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.attention import (
    CATEGORIES,
    InningsAttention,
    head_report,
    history_report,
    history_table,
    innings_attention,
    one_model,
    report_table,
)
from cricket_attn.metrics import save_figure
from cricket_attn.model import CricketTransformer, Ensemble


def plot_ball(inn: InningsAttention, t: int, path: str | Path) -> Path:
    """Every layer's and head's attention from ball t over the balls up to it, one row per head,
    each ball labelled with over.ball, its outcome, batter and bowler; over ends marked. (Position s
    holds what was known before ball s: attending to it reads ball s - 1's outcome and ball s's players.)"""
    plt, PowerNorm = _pyplot()
    L, H = inn.weights.shape[:2]
    w = inn.weights[:, :, t, : t + 1].reshape(L * H, t + 1)
    labels = inn.labels()[: t + 1]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.17 * (t + 1) + 2.5), 0.45 * L * H + 3.4))
    image = ax.imshow(w, aspect="auto", cmap="viridis", norm=PowerNorm(0.5, vmin=0, vmax=max(float(w.max()), 1e-6)))
    ax.set_yticks(range(L * H), [f"layer {i // H} head {i % H}" for i in range(L * H)], fontsize=8)
    ax.set_xticks(range(t + 1), labels, rotation=90, fontsize=6)
    ax.get_xticklabels()[-1].set_fontweight("bold")
    overs = inn.balls["over"].to_numpy()[: t + 1]
    for x in np.flatnonzero(np.diff(overs)) + 0.5:
        ax.axvline(x, color="white", lw=0.6, alpha=0.7)
    ball = inn.balls.iloc[t]
    ax.set_title(
        f"{inn.title}: where each head looks before ball {ball['over']}.{ball['ball_in_over']} "
        f"({ball['batter']} facing {ball['bowler']}; it went {ball['outcome']})",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, fraction=0.02, pad=0.01, label=f"attention weight (an even spread: {1 / (t + 1):.3f})")
    return save_figure(fig, path, tight_layout=False)


def plot_innings(inn: InningsAttention, path: str | Path) -> Path:
    """Each head's attention over the innings (row: the ball attending, column: the ball attended to)
    as a multiple of uniform causal attention, on a log scale: red where a head looks more than an even
    spread over the balls so far would, blue where less. Ticks at the start of every other over."""
    plt, _ = _pyplot()
    from matplotlib.colors import LogNorm

    L, H, T = inn.weights.shape[:3]
    fig, axes = plt.subplots(L, H, figsize=(3.3 * H + 0.8, 3.3 * L + 0.6), squeeze=False)
    overs = inn.balls["over"].to_numpy()
    ticks = np.r_[0, np.flatnonzero(np.diff(overs)) + 1][::2]
    ratio = inn.weights * np.arange(1, T + 1)[:, None]  # uniform causal attention gives row t 1 / (t + 1)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="0.85")
    for layer in range(L):
        for head in range(H):
            ax = axes[layer, head]
            shown = np.ma.masked_where(future, np.clip(ratio[layer, head], 0.1, 10))
            image = ax.imshow(shown, cmap=cmap, norm=LogNorm(vmin=0.1, vmax=10), interpolation="nearest")
            ax.set_title(f"layer {layer} head {head}", fontsize=9)
            ax.set_xticks(ticks, overs[ticks], fontsize=6)
            ax.set_yticks(ticks, overs[ticks], fontsize=6)
            if layer == L - 1:
                ax.set_xlabel("over of the ball attended to", fontsize=7)
            if head == 0:
                ax.set_ylabel("over of the ball attending", fontsize=7)
    fig.suptitle(f"{inn.title}: every head's attention over {T} deliveries, against an even spread", fontsize=10)
    fig.colorbar(image, ax=axes, fraction=0.02, pad=0.02, label="attention / uniform causal attention")
    return save_figure(fig, path, tight_layout=False)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import PowerNorm

    return plt, PowerNorm


def draw_match(
    model: CricketTransformer,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    out: Path,
    innings: int | None = None,
    ball: tuple[int, int] | None = None,
) -> list[Path]:
    """The pictures of one match's innings (or of innings `innings`), and of ball `(over, ball)` in it. A
    ball not bowled in an innings drawn is refused before any picture is written."""
    chosen = [
        inn
        for inn in innings_attention(model, encoder, deliveries)
        if innings is None or int(inn.balls["innings"].iloc[0]) == innings
    ]
    at = [None if ball is None else inn.position(*ball) for inn in chosen]
    drawn = []
    for inn, position in zip(chosen, at):
        stem = out / f"{inn.balls['match_id'].iloc[0]}_innings{int(inn.balls['innings'].iloc[0])}"
        drawn.append(plot_innings(inn, f"{stem}.png"))
        if position is not None:
            drawn.append(plot_ball(inn, position, f"{stem}_ball{ball[0]}.{ball[1]}.png"))
    return drawn


def log_attention(
    uri: str, run_id: str, model: CricketTransformer | Ensemble, encoder: SequenceEncoder, test: pd.DataFrame
) -> pd.DataFrame:
    """For a training run: the head report over the test balls (metrics `heads/<layer>.<head>/<kind>`
    as the ratio to uniform, and `attention/heads.md`), the history readers' report for a model that
    reads players' histories (`attention/histories.md`, `history_report`), and the pictures of the
    first test match (both innings, and one ball two overs from the end of the chase) under
    `attention/`."""
    import tempfile

    import mlflow

    report = head_report(model, encoder, test)
    client = mlflow.MlflowClient(uri)
    now = mlflow.utils.time.get_current_time_millis()
    metrics = [
        mlflow.entities.Metric(f"heads/{r['layer']}.{r['head']}/{name}", float(r[f"{name}_ratio"]), now, 0)
        for r in report.to_dict("records")
        for name in CATEGORIES
    ]
    client.log_batch(run_id, metrics=metrics)
    first = test[test["match_id"] == test["match_id"].iloc[0]]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "heads.md").write_text(report_table(report))
        if one_model(model).cfg.history_balls:
            (Path(tmp) / "histories.md").write_text(history_table(history_report(model, encoder, test)))
        for inn in innings_attention(one_model(model), encoder, first):
            stem = Path(tmp) / f"{inn.balls['match_id'].iloc[0]}_innings{inn.balls['innings'].iloc[0]}"
            plot_innings(inn, f"{stem}.png")
            if inn.balls["innings"].iloc[0] == 2:  # the chase, two overs from its end
                t = max(len(inn.balls) - 13, 0)
                plot_ball(inn, t, f"{stem}_ball{inn.balls['over'].iloc[t]}.{inn.balls['ball_in_over'].iloc[t]}.png")
        client.log_artifacts(run_id, tmp, artifact_path="attention")
    return report
