"""`cricket-attn-evaluate`: score a trained model on a split and report (and log) the test metrics.

    cricket-attn-evaluate --model runs:/<run_id>/model --split test
    cricket-attn-evaluate --model outputs/.../checkpoints/refit/calibrated.ckpt --split validation --no-log

The metrics are the training report's (cricket_attn.metrics); the probabilities are the ones
`cricket-attn-predict` writes for the same balls (cricket_attn.inference.probabilities).
"""

from __future__ import annotations

import argparse
import sys

from omegaconf import OmegaConf

from cricket_attn import tracking
from cricket_attn.cli import add_tracking
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.inference.checkpoints import CheckpointError
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import score


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cricket-attn-evaluate", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="MLflow model URI (runs:/..., models:/...) or a checkpoint path")
    p.add_argument("--split", default="test", choices=["train", "validation", "test"])
    p.add_argument("--data", default="ipl", help="data config in conf/data/ (phases, split, sources)")
    p.add_argument("--sources", nargs="*", help="Cricsheet zips, folders or files (default: the data config's)")
    add_tracking(p)
    p.add_argument("--no-log", action="store_true", help="print the metrics only; no MLflow run")
    return p.parse_args(argv)


def evaluate(args: argparse.Namespace) -> dict[str, float]:
    if not args.no_log:
        tracking.check_tracking_uri(args.tracking_uri)
    trained = load_trained(args.model, args.tracking_uri)  # fails before any data is read
    data = load_data_config(args.data)
    phases = PhaseRules.from_config(OmegaConf.to_container(data.phases, resolve=True))
    split = SeasonSplit.from_config(OmegaConf.to_container(data.split, resolve=True))
    sources = args.sources or (list(data.sources) if data.sources else None)
    tables = load_tables(sources, phases, project_path(data.data_dir))
    part = split.split(tables.deliveries)[args.split]
    if part.empty:
        raise SystemExit(
            f"cricket-attn-evaluate: the {args.split} split has no deliveries in {sources or 'the IPL archive'}"
        )
    if trained.encoder.reads_known:  # players' histories and records from every match there is, as in training
        trained.encoder.attach_known(tables.deliveries)
    scored = trained.score(part, desc=f"scoring the {args.split} split")
    if args.no_log:
        metrics = score(scored)
    else:
        run_id = tracking.start_run(
            args.tracking_uri,
            args.experiment,
            f"evaluate {args.split}",
            {"model_family": "evaluation", "model": args.model, "split": args.split},
        )
        with tracking.ending(args.tracking_uri, run_id):
            params = {"model": args.model, "split": args.split, "data": args.data}
            tracking.log_params(args.tracking_uri, run_id, params)
            metrics = tracking.log_scored(args.tracking_uri, run_id, scored, args.split)
        print(f"MLflow run: {run_id}")
    for key, value in metrics.items():
        print(f"{args.split}/{key}: {value:.6g}")
    return metrics


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        evaluate(args)
    except (CheckpointError, tracking.TrackingError) as err:
        print(f"cricket-attn-evaluate: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
