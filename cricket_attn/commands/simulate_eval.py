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
from cricket_attn.metrics import markdown_table, save_figure
from cricket_attn.settings import count
from cricket_attn.simulation import realism
from cricket_attn.simulation.against_baselines import evaluate
from cricket_attn.simulation.match import BYTES_A_SIMULATION, most_states, project_match
from cricket_attn.simulation.plots import plot_match
from cricket_attn.simulation.rollout import MAX_SPREAD, SPREAD, Simulator
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


def plot_reliability(table, path: Path, n: int) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    ax.plot(table["forecast"], table["observed"], marker="o")
    ax.set(
        xlabel="simulated win probability of the chasing side",
        ylabel="how often it won",
        xlim=(0, 1),
        ylim=(0, 1),
        title=f"Chases, every over start ({n} simulations each)",
    )
    return save_figure(fig, path)


def causes(sim: Simulator, d, matches, args: argparse.Namespace, levels=None) -> dict[str, tuple[str, object]]:
    """Where the simulator can go wrong, each measured on its own (`cricket_attn.simulation.realism`), on the
    last training season and the test seasons: name -> (title, table)."""
    train = d[d["season"].between(sim.encoder.first_season, args.train_until)]
    shown = d[d["season"].isin([args.train_until, *args.test])]
    if args.matches:  # a quick look: only the chosen test matches
        shown = shown[shown["season"].isin(args.test)]
    why = {
        "levels": (
            "Per delivery, real against the model (each ball predicted from the real balls before it, valued "
            "by the training seasons' class values; gap per innings: model minus real, times an innings' "
            "deliveries):",
            realism.per_ball_levels(sim, shown, train, levels),
        ),
        "extras": (
            "Run value of each outcome class, training seasons (the scorebook) against the test seasons:",
            realism.extras_values(train, d[d["season"].isin(args.test)]),
        ),
        "bowlers": (
            "The bowler rule against the real bowler of each over after the first (log-likelihood per over; "
            "even: drawing evenly among those who may bowl it):",
            realism.bowler_rule_fit(sim, shown, matches),
        ),
    }
    if args.check_sims:
        per_innings = realism.simulate_from_the_start(sim, shown, matches, args.check_sims, args.seed, levels)
        why["from_the_start"] = (
            f"Simulated against real innings from ball 0 ({args.check_sims} simulations of "
            "each, the chase with its real target):",
            realism.season_table(per_innings),
        )
    if args.who_sims:
        per_point = realism.who_plays(sim, shown, matches, n=args.who_sims, seed=args.seed, levels=levels)
        why["who_plays"] = (
            f"Who plays: the first-innings projection (bias: projected minus real; MAE) with the rules "
            f"for the next bowler and batter, the real bowler of every over the real innings reached, the "
            f"real batting order, and both ({args.who_sims} simulations from each state, the same draws "
            "for each):",
            realism.who_plays_table(per_point),
        )
    return why


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
    why = causes(sim, d, tables.matches, args, levels)
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
    pictures = [plot_reliability(result["reliability"], out / "reliability.png", args.sims)]
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
        win, totals = result["win"].set_index("states"), result["totals"].set_index("after_overs")
        metrics = {
            "sim/brier": win.loc["all over starts", "simulator_brier"],
            "sim/log_loss": win.loc["all over starts", "simulator_log_loss"],
            "sim/ece": win.loc["all over starts", "simulator_ece"],
            "sim/bias": win.loc["all over starts", "simulator_bias"],
            "baseline/brier": win.loc["all over starts", "logistic_brier"],
            "paired/brier_diff": win.loc["all over starts", "brier_diff"],
        }
        for label, key in (
            ("chase start", "start"),
            ("after 6 overs", "6"),
            ("after 10 overs", "10"),
            ("after 15 overs", "15"),
        ):
            metrics[f"sim/brier_{key}"] = win.loc[label, "simulator_brier"]
        for _, row in why["levels"][1].iterrows():
            key = f"{row['season']}_{row['innings_kind']}"
            metrics[f"why/runs_gap_per_innings_{key}"] = row["runs_gap_per_innings"]
            metrics[f"why/wickets_gap_per_innings_{key}"] = row["wickets_gap_per_innings"]
        for k, row in totals.iterrows():
            metrics[f"sim/total_mae_{k}"] = row["simulator_mae"]
            metrics[f"sim/total_coverage_{k}"] = row["simulator_coverage"]
            metrics[f"baseline/total_mae_{k}"] = row["gbm_mae"]
        client = tracking.MlflowClient(uri)
        for name, value in metrics.items():
            client.log_metric(run_id, name, float(value))
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
