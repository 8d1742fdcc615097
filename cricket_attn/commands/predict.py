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

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from cricket_attn.cli import check_out_path, check_probabilities, run_command, write_table
from cricket_attn.commands._scoring import CommandSummary, scoring_parser
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import Ingested, PhaseRules
from cricket_attn.data.features import innings_balls
from cricket_attn.data.sequences import UNK
from cricket_attn.inference.reading import left_out, nothing_found, read_matches, unknown_to, with_earlier
from cricket_attn.inference.recent import since_training, with_offsets
from cricket_attn.inference.serving import TrainedModel, load_trained
from cricket_attn.laws import OUTCOME_RUNS, crease_after, innings_over
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


def next_ball_rows(tables: Ingested, phases: PhaseRules) -> pd.DataFrame:
    """One delivery row (outcome unknown) for the next ball of each unfinished innings: the last
    innings of a match with no result yet, with balls and wickets left and no target reached."""
    d, m = tables.deliveries, tables.matches
    if d.empty:
        return d.iloc[:0]
    decided = m.set_index("match_id")[["winner", "result"]].notna().any(axis=1)
    last = d.groupby("match_id", observed=True, sort=False).tail(1)
    last = last[~last["match_id"].map(decided).fillna(False).astype(bool) & ~last["is_super_over"].astype(bool)]
    if last.empty:
        return d.iloc[:0]
    runs = d.groupby(["match_id", "innings"], observed=True)["runs_total"].sum()
    wickets = d.groupby(["match_id", "innings"], observed=True)["wicket_count"].sum()
    key = pd.MultiIndex.from_frame(last[["match_id", "innings"]])
    scored, fallen = runs.reindex(key).to_numpy(), wickets.reindex(key).to_numpy()
    legal_after = last["legal_ball_index"].to_numpy() + last["is_legal"].to_numpy(dtype=int)
    target = last["target_runs"].astype("Float64").fillna(np.inf).to_numpy(dtype=float)
    open_ = ~innings_over(scored, fallen, legal_after, innings_balls(last), target)
    striker, non_striker, new_over = (a[open_] for a in crease_after(last, incoming=UNK))
    last = last[open_]

    nxt = last.copy()
    nxt["delivery_index"] = last["delivery_index"] + 1
    nxt["legal_ball_index"] = legal_after[open_]
    nxt["over"] = np.where(new_over, last["over"] + 1, last["over"])
    nxt["ball_in_over"] = np.where(new_over, 1, last["ball_in_over"] + last["is_legal"].astype(int))
    nxt["batter"], nxt["non_striker"] = striker, non_striker
    nxt["bowler"] = np.where(new_over, UNK, last["bowler"].astype(str))
    for col in ("extras_type", "wicket_kind", "player_out"):
        nxt[col] = None
    # The players' registry ids, as the match's own balls give them (the model knows players by id).
    named = (
        pd.concat(
            d[["match_id", role, f"{role}_id"]].set_axis(["match_id", "name", "id"], axis=1).astype(object)
            for role in ("batter", "non_striker", "bowler")
        )
        .dropna()
        .drop_duplicates(["match_id", "name"])
    )
    ids = named.set_index(["match_id", "name"])["id"]
    for role in ("batter", "non_striker", "bowler"):
        at = pd.MultiIndex.from_arrays([nxt["match_id"].astype(object), nxt[role].astype(object)])
        nxt[f"{role}_id"] = ids.reindex(at).to_numpy()
    for col in (
        "runs_batter",
        "runs_extras",
        "runs_total",
        "runs_wides",
        "runs_noballs",
        "runs_byes",
        "runs_legbyes",
        "runs_penalty",
        "wicket_count",
    ):
        nxt[col] = 0
    nxt["is_legal"], nxt["is_wicket"], nxt["runs_non_boundary"] = True, False, False
    nxt["outcome"] = None
    nxt["phase"] = phases.assign(
        nxt["match_type"],
        nxt["balls_per_over"],
        nxt["over"].to_numpy(),
        nxt["legal_ball_index"].to_numpy(),
        np.zeros(len(nxt), dtype=bool),
        nxt["powerplays"] if "powerplays" in nxt else None,
    )
    return nxt


def with_next_balls(tables: Ingested, phases: PhaseRules) -> pd.DataFrame:
    """The deliveries table with each unfinished innings' next ball appended after its last delivery."""
    d = tables.deliveries
    nxt = next_ball_rows(tables, phases)
    if nxt.empty:
        return d.reset_index(drop=True)
    order = np.r_[np.arange(len(d)), [d.index.get_loc(i) + 0.5 for i in nxt.index]]
    both = pd.concat([d.astype({c: object for c in ("batter", "bowler", "non_striker")}), nxt], ignore_index=True)
    both = both.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)
    for col in ("outcome", "phase"):
        both[col] = pd.Categorical(both[col].astype(object), categories=d[col].cat.categories)
    for col in ("batter", "bowler", "non_striker"):
        both[col] = both[col].astype("category")
    return both


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
