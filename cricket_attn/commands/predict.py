"""`cricket-attn-predict`: score matches ball by ball with a trained model.

    cricket-attn-predict --model runs:/<run_id>/model --out scores.parquet matches.zip live_match.json

One row per delivery of every regular innings, with the outcome distribution the model gave it
before it was bowled; plus, for an innings still in progress, one row for the next ball (no outcome).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace

import pandas as pd
from omegaconf import OmegaConf

from cricket_attn.cli import check_out_path, check_probabilities, run_command, write_table
from cricket_attn.commands._scoring import CommandSummary, scoring_parser
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import Ingested, PhaseRules
from cricket_attn.data.next_ball import with_next_balls
from cricket_attn.inference.reading import left_out, nothing_found, read_matches, unknown_to, with_earlier
from cricket_attn.inference.recent import since_training, with_offsets
from cricket_attn.inference.serving import TrainedModel, load_trained
from cricket_attn.laws import OUTCOME_RUNS
from cricket_attn.metrics import PROB_COLUMNS

OUTPUT_COLUMNS = (
    "match_id",
    "innings",
    "delivery_index",
    "over",
    "ball_in_over",
    "batter",
    "bowler",
    "outcome",
    *PROB_COLUMNS,
    "expected_runs",
)


def predict_tables(
    trained: TrainedModel, tables: Ingested, phases: PhaseRules, strict: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """The output table (every delivery and every next ball, scored), and the matches left out because
    an innings reaches a position the model cannot embed (with `strict`, such a match is an error)."""
    frame = with_next_balls(tables, phases)
    refused = trained.cannot_take(frame)
    left_out = [f"{reason}; not scored" for reason in refused.values()]
    if strict and left_out:
        raise ValueError(f"--strict: {left_out[0]}")
    frame = frame[~frame["match_id"].astype(str).isin(refused)]
    if frame.empty:
        raise ValueError(f"nothing to score: the model takes none of the matches ({left_out[0]})")
    scored = trained.score(frame, desc="scoring")
    out = scored[list(OUTPUT_COLUMNS)].copy()
    out["outcome"] = out["outcome"].astype(object).where(out["outcome"].notna(), None)
    for col in ("batter", "bowler"):
        out[col] = out[col].astype(str)
    return out, left_out


@dataclass
class ScoringSummary(CommandSummary):
    deliveries: int = 0
    next_balls: int = 0

    def counts(self) -> list[str]:
        return [
            f"matches scored:     {self.matches:,}",
            f"deliveries scored:  {self.deliveries:,} (+ {self.next_balls} next-ball rows for innings in progress)",
        ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    # The model's own probabilities by default: the MLflow model and the evaluation give the same numbers.
    p = scoring_parser(
        "cricket-attn-predict",
        __doc__.split("\n")[0],
        "Cricsheet data whose earlier matches give players' records and histories (a model that reads them) "
        "and the league's recent level (--recent-level), beside the matches scored (repeatable; default: "
        "the data the model was trained on, as its checkpoint names it)",
        recent_level=0.0,
    )
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> ScoringSummary:
    start = time.perf_counter()
    check_out_path(args.out)
    trained = load_trained(args.model, args.tracking_uri)  # a bad model fails before any data is read
    phases = PhaseRules.from_config(OmegaConf.to_container(load_data_config(args.data).phases, resolve=True))
    tables = read_matches(args.sources, project_path(load_data_config(args.data).data_dir), phases)
    summary = ScoringSummary(skipped=left_out(tables), out=str(args.out), model=trained.source)
    if args.strict and tables.skipped:
        raise ValueError(f"--strict: {len(tables.skipped)} file(s) skipped, first: {tables.skipped[0].reason}")
    if tables.deliveries.empty:
        raise ValueError(f"nothing to score in {', '.join(args.sources)}: {nothing_found(args.sources, tables)}")
    tables, refused = trained.playable(tables)  # before any tensor is built
    summary.skipped += [f"{reason}; not scored" for reason in refused]
    if args.strict and refused:
        raise ValueError(f"--strict: {refused[0]}")
    data_dir = project_path(load_data_config(args.data).data_dir)
    needed = trained.encoder.reads_known or bool(args.recent_level) or args.form  # earlier matches: the archive too
    data = with_earlier(tables, trained.encoder, args.history, phases, data_dir, args.sources, needed)
    tables, known = replace(tables, deliveries=data.deliveries), data.known
    summary.known_from, summary.notes = data.known_from, data.notes
    if trained.encoder.reads_known:  # players' histories and records, as in training
        trained.encoder.attach_known(known)
    out, not_scored = predict_tables(trained, tables, phases, strict=args.strict)
    if args.recent_level or args.form:
        levels, form = since_training(trained.model, trained.encoder, known, args.recent_level, args.form, scored=out)
        if levels is not None:
            out = with_offsets(out, levels)
        if form is not None:
            dates = known.groupby(known["match_id"].astype(str))["date"].first()
            out = form.tilt(out, dates)
        out["expected_runs"] = out[list(PROB_COLUMNS)].to_numpy() @ OUTCOME_RUNS
    summary.skipped += not_scored
    check_probabilities(out, PROB_COLUMNS, whole=True)
    write_table(out, args.out)
    summary.unknown = unknown_to(trained.encoder, tables.deliveries)
    summary.matches = int(out["match_id"].nunique())
    summary.next_balls = int(out["outcome"].isna().sum())
    summary.deliveries = len(out) - summary.next_balls
    summary.seconds = time.perf_counter() - start
    return summary


def main(argv: list[str] | None = None) -> int:
    return run_command("cricket-attn-predict", run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
