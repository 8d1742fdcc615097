"""`cricket-attn-simulate-eval`: how good the simulator's match-level answers are, logged to MLflow.

    cricket-attn-simulate-eval --model outputs/<date>/<time>/checkpoints/refit/calibrated.ckpt --sims 100

On the test seasons (by default 2025-2026, the model fitted through 2024): the chase's win probability
from every over start and the first-innings total after 6, 10 and 15 overs, against match-level baselines
fitted on the same seasons (`cricket_attn.simulation.against_baselines`). Writes the tables, the reliability
diagram and a few matches' pictures to --out, and logs one run (tag model_family=simulator) beside the
ball-level runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from cricket_attn import tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.cli import add_tracking, check_memory, run_command
from cricket_attn.inference.recent import BY_MODEL, level_by_default, since_training, strength
from cricket_attn.inference.serving import load_with_data
from cricket_attn.metrics import markdown_table
from cricket_attn.settings import count
from cricket_attn.simulation import realism
from cricket_attn.simulation.against_baselines import evaluate, summary_metrics
from cricket_attn.simulation.match import most_states, project_match
from cricket_attn.simulation.plots import plot_chase_reliability, plot_match
from cricket_attn.simulation.rollout import BYTES_A_SIMULATION, MAX_SPREAD, SPREAD, Simulator
from cricket_attn.simulation.rules import not_simulated

SKIP = "0 (skip the check) or more"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cricket-attn-simulate-eval", description=__doc__.split("\n")[0])
    p.error = lambda message: p.exit(2, f"{p.prog}: {message}\n")  # one line, as every refusal here (-h: usage)
    p.add_argument("--model", required=True, help="MLflow model URI or checkpoint")
    p.add_argument("--sims", type=count(1), default=100, help="simulations per state (default 100)")
    p.add_argument("--train-until", type=int, default=2024, help="the baselines' last training season")
    p.add_argument("--test", type=int, nargs="+", default=[2025, 2026], help="the seasons evaluated")
    p.add_argument("--sources", nargs="*", help="Cricsheet data (default: the --data config's sources)")
    p.add_argument("--matches", type=count(1), help="only the first N test matches (a quick look)")
    p.add_argument("--plots", type=count(0), default=3, help="matches drawn and logged (default 3)")
    p.add_argument(
        "--check-sims",
        type=count(0, SKIP),
        default=40,
        help="simulations of each innings of the last training "
        "season and the test seasons from ball 0, against the real innings (default 40; 0: skip)",
    )
    p.add_argument(
        "--who-sims",
        type=count(0, SKIP),
        default=0,
        help="simulations from each first innings of the last "
        "training season and the test seasons after 6, 10 and 15 overs, with the rules for who bowls and "
        "who comes in against the real bowlers and batting order (default 0: skip)",
    )
    p.add_argument("--out", type=Path, default=Path("outputs/simulation"), help="folder for the tables and pictures")
    p.add_argument("--seed", type=count(0), default=0)
    p.add_argument(
        "--spread",
        type=strength(MAX_SPREAD),
        default=SPREAD,
        help="innings-level spread of the simulations "
        "(cricket_attn.simulation.rollout; default %(default)g, chosen on 2024); 0: none",
    )
    p.add_argument(
        "--recent-level",
        type=strength(),
        default=None,
        metavar="STRENGTH",
        help="learn the league's level from the matches since the model's training seasons played before "
        f"each match (cricket_attn.inference.recent), pulled to zero with this strength (default: {BY_MODEL}; "
        "chosen on 2024); 0: off",
    )
    p.add_argument(
        "--form",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="tilt each simulated ball by its batter's and bowler's form in the matches since the model's "
        "training seasons played before its match (cricket_attn.inference.form; default: %(default)s)",
    )
    p.add_argument("--data", default="ipl")
    p.add_argument(
        "--competition",
        action="append",
        help="only these competitions' matches (test, baselines, scorebook), as the files name them; a model "
        "that reads earlier matches still reads every competition's (default: every competition of --data)",
    )
    add_tracking(p)
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> str:
    start = time.perf_counter()
    tracking.check_tracking_uri(args.tracking_uri)
    trained, phases, tables = load_with_data(args.model, args.tracking_uri, args.data, args.sources)
    d = tables.deliveries
    if args.competition:
        d = d[d["competition"].astype(str).isin(args.competition)]
        if d.empty:
            raise ValueError(f"--competition {', '.join(args.competition)}: no match of it in the data")
    d = d[~d["match_id"].astype(str).isin(not_simulated(d))]  # The Hundred's sets of five are not played
    test_ids = list(d.loc[d["season"].isin(args.test), "match_id"].astype(str).unique())
    if not test_ids:
        raise ValueError(f"--test {args.test}: no matches of these seasons in the data")
    if args.matches:
        test_ids = test_ids[: args.matches]
        d = d[(d["season"] <= args.train_until) | d["match_id"].astype(str).isin(test_ids)]
    # One match's states are simulated together, each of its simulations kept to its end: refused before the
    # model runs where the most simulations asked of one state would not fit.
    most = most_states(d[d["match_id"].astype(str).isin(test_ids)])
    for flag, sims in (("--sims", args.sims), ("--check-sims", args.check_sims), ("--who-sims", args.who_sims)):
        check_memory(flag, sims, per_unit=2 * most * BYTES_A_SIMULATION)
    torch.set_grad_enabled(False)
    if args.recent_level is None:
        args.recent_level = level_by_default(trained.encoder)
    levels, form = since_training(trained.model, trained.encoder, d, args.recent_level, args.form)
    # The scorebook takes the model's training seasons; the bowler rule, for each match, the matches before it.
    sim = Simulator.build(trained.model, trained.encoder, phases, d, args.spread, form)
    result = evaluate(sim, d, tables.matches, args.train_until, args.test, args.sims, args.seed, levels)
    why = realism.causes(
        sim, d, tables.matches, args.train_until, args.test, args.seed, args.check_sims, args.who_sims,
        test_only=bool(args.matches), levels=levels,
    )  # fmt: skip
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    report = "\n\n".join(
        [
            f"Simulator ({trained.source}), {args.sims} simulations per state, baselines fitted through "
            f"{args.train_until}, test seasons {', '.join(map(str, args.test))} ({len(test_ids)} matches"
            + (f" of {', '.join(args.competition)}" if args.competition else "")
            + "; "
            f"{result['no_result_matches']} without a result left out)"
            + (f"; the league's recent level learnt with strength {args.recent_level:g}" if levels else "")
            + f"; innings-level spread {args.spread:g}"
            + ("; players' form" if sim.form else "")
            + ".",
            "Chase win probability:\n\n" + markdown_table(result["win"], 4),
            "First-innings total:\n\n" + markdown_table(result["totals"], 3),
            "Reliability (chases, every over start):\n\n" + markdown_table(result["reliability"], 3),
            *(f"{title}\n\n{markdown_table(table, 3)}" for title, table in why.values()),
        ]
    )
    with atomic_path(out / "simulation.md") as tmp:
        tmp.write_text(report + "\n")
    for name in ("chases", "first"):
        with atomic_path(out / f"{name}.parquet") as tmp:
            result[name].to_parquet(tmp, index=False)
    pictures = [plot_chase_reliability(result["reliability"], out / "reliability.png", args.sims)]
    for match_id in test_ids[: args.plots]:
        match = d[d["match_id"].astype(str) == match_id]
        pictures += plot_match(
            project_match(sim.for_match(levels, match_id), match, tables.matches, args.sims, args.seed),
            match,
            out / "matches",
        )

    uri = args.tracking_uri
    run_id = tracking.start_run(
        uri,
        args.experiment,
        tracking.run_name("simulator", f"sims={args.sims}"),
        {"model_family": "simulator", "model": trained.source},
        description=report,
    )
    with tracking.ending(uri, run_id):
        metrics = summary_metrics(result, why["levels"][1])
        client = tracking.MlflowClient(uri)
        for name, value in metrics.items():
            client.log_metric(run_id, name, value)
        tracking.log_params(
            uri,
            run_id,
            {
                "sims": str(args.sims),
                "train_until": str(args.train_until),
                "test": ",".join(map(str, args.test)),
                "seed": str(args.seed),
                "recent_level": str(args.recent_level),
                "spread": str(args.spread),
                "form": str(args.form),
                "competitions": ",".join(args.competition or []) or "all",
            },
        )
        client.log_artifact(run_id, str(out / "simulation.md"))
        for picture in pictures:
            client.log_artifact(run_id, str(picture), "pictures")
    return f"{report}\n\nwritten: {out} ({time.perf_counter() - start:.0f} s); MLflow run {run_id}"


def main(argv: list[str] | None = None) -> int:
    return run_command("cricket-attn-simulate-eval", run, parse_args(argv), also=(tracking.TrackingError,))


if __name__ == "__main__":
    sys.exit(main())
