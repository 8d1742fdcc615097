"""What the matches since a model's training seasons add per ball: the league's recent level, players'
form and both, paired against the model on the same balls (a record's analysis, issue 15).

    python docs/analyses/since_training.py --model <checkpoint> --seasons 2025 2026

Each ball of the chosen seasons (all after the model's training seasons) is scored by the model from the
real balls before it; the recent level (strength 200) and the form (`cricket_attn.inference.form`'s n0 and
weights) learn from the matches dated before each match, as the commands do.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from cricket_attn.data.deliveries import config_tables
from cricket_attn.inference.form import PlayerForm
from cricket_attn.inference.recent import STRENGTH, balls_since, match_offsets, with_offsets
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import PROB_COLUMNS, labels_of, match_bootstrap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--seasons", type=int, nargs="+", required=True, help="seasons after the model's training seasons")
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    trained = load_trained(args.model)
    d = config_tables(args.data, args.sources).deliveries
    d = d[d["season"] <= max(args.seasons)]  # later matches teach nothing about these
    balls, dates = balls_since(trained.model, trained.encoder, d)
    levels = match_offsets(balls, dates, STRENGTH)
    form = PlayerForm.from_scored(balls, dates)
    keep = balls["match_id"].map(dates).dt.year.isin(args.seasons).to_numpy()
    labels = labels_of(balls)

    def log_loss(frame) -> np.ndarray:
        probs = frame[list(PROB_COLUMNS)].to_numpy()
        return -np.log(probs[np.arange(len(labels)), labels])[keep]

    model = log_loss(balls)
    print(f"{keep.sum():,} balls of {args.seasons}; the model {model.mean():.4f} nats per ball")
    for name, frame in (
        ("recent level", with_offsets(balls, levels)),
        ("players' form", form.tilt(balls, dates)),
        ("both", form.tilt(with_offsets(balls, levels), dates)),
    ):
        diff = log_loss(frame) - model
        ci = match_bootstrap(diff, balls["match_id"][keep])
        print(
            f"{name:<14} {log_loss(frame).mean():.4f}  {diff.mean():+.5f} [{ci['ci_low']:+.4f}, {ci['ci_high']:+.4f}]"
        )


if __name__ == "__main__":
    main()
