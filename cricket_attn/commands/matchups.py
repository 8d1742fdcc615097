"""`cricket-attn-matchups`: a batter against bowlers, or a bowler against batters, by phase, at a venue, as of a
date: the model's per-ball view beside the pair's raw record (cricket_attn.inference.matchups).

    cricket-attn-matchups --model <checkpoint> --batter "V Kohli" --bowlers "JJ Bumrah" "Rashid Khan" \\
        --venue "Wankhede Stadium, Mumbai" --city Mumbai --date 2025-04-07 --out kohli.csv --plot kohli.png
    cricket-attn-matchups --model <checkpoint> --evaluate --test 2025 --choose-on 2024   # issue 55's floor
"""

from __future__ import annotations

import argparse
import time
from datetime import date
from pathlib import Path

import pandas as pd

from cricket_attn import tracking
from cricket_attn.cli import add_tracking, check_out_path, run_command, write_table
from cricket_attn.data.deliveries import PHASES
from cricket_attn.inference.matchups import FIGURES, evaluate_pairs, matchup_table, plot_table
from cricket_attn.inference.serving import load_with_data
from cricket_attn.metrics import markdown_table, match_bootstrap
from cricket_attn.settings import count


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cricket-attn-matchups", description=__doc__.split("\n")[0])
    p.error = lambda message: p.exit(2, f"{p.prog}: {message}\n")
    p.add_argument("--model", required=True, help="MLflow model URI or checkpoint")
    who = p.add_argument_group("a matchup table: a batter and bowlers, or a bowler and batters")
    who.add_argument("--batter", help="the batter, as the match files name him")
    who.add_argument("--bowlers", nargs="+", help="with --batter: the bowlers he faces")
    who.add_argument("--bowler", help="the bowler")
    who.add_argument("--batters", nargs="+", help="with --bowler: the batters he bowls to")
    who.add_argument("--venue", help="the ground, as the data names it")
    who.add_argument("--city")
    who.add_argument("--date", type=date.fromisoformat, help="as of this day, YYYY-MM-DD (default: today)")
    who.add_argument("--competition", default="Indian Premier League", help="whose situations (default: %(default)s)")
    who.add_argument("--phases", nargs="+", choices=PHASES, help="default: every phase")
    who.add_argument("--situations", type=count(1), default=100, help="situations per phase (default %(default)s)")
    who.add_argument("--out", type=Path, help="the table, Parquet or CSV by its suffix")
    who.add_argument("--plot", type=Path, help="the table as a picture (PNG)")
    ev = p.add_argument_group("issue 55's floor: the model against the pairs' raw records")
    ev.add_argument("--evaluate", action="store_true", help="score the test seasons' deliveries of pairs that had met")
    ev.add_argument("--test", type=int, nargs="+", default=[2025], help="the seasons scored (default 2025)")
    ev.add_argument("--choose-on", type=int, default=2024, help="the season the baseline's shrinkage is chosen on")
    add_tracking(ev)
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="*", help="Cricsheet data (default: the --data config's sources)")
    p.add_argument("--seed", type=count(0), default=0)
    args = p.parse_args(argv)
    if not args.evaluate and not ((args.batter and args.bowlers) or (args.bowler and args.batters)):
        p.error("give --batter with --bowlers, or --bowler with --batters, or --evaluate")
    if not args.evaluate and not args.venue:
        p.error("--venue: the ground of the matchup (the model reads its record)")
    return args


def view(args: argparse.Namespace, trained, d: pd.DataFrame) -> str:
    batters, bowlers = ([args.batter], args.bowlers) if args.batter else (args.batters, [args.bowler])
    when = args.date or date.today()
    table = matchup_table(
        trained, d, batters, bowlers, when, args.venue, args.city, args.competition, args.phases, args.situations,
        args.seed,
    )  # fmt: skip
    if args.out:
        write_table(table, args.out)
    rows = "bowler" if args.batter else "batter"
    if args.plot:
        who = args.batter or args.bowler
        plot_table(table, args.plot, rows, f"{who} at {args.venue}, as of {when} (* the model outside the record)")
    shown = table[["batter", "bowler", "phase", "situations", *(f"model_{f}" for f in FIGURES), "raw_deliveries",
                   *(f"raw_{f}" for f in FIGURES), "disagree"]]  # fmt: skip
    return markdown_table(shown, 3) + "".join(f"\nwritten: {p}" for p in (args.out, args.plot) if p)


def evaluate(args: argparse.Namespace, trained, d: pd.DataFrame) -> str:
    test = d[d["season"].isin(args.test)]
    if test.empty:
        raise ValueError(f"--test {args.test}: no deliveries of these seasons in the data")
    scored = trained.score(test)
    choose = d[(d["season"] == args.choose_on) & ~d["is_super_over"].astype(bool)]  # as scored: regular innings
    balls, strength = evaluate_pairs(d, scored, choose)
    pair = balls["batter"].astype(str) + " v " + balls["bowler"].astype(str)
    diff = match_bootstrap((balls["pair_log_loss"] - balls["model_log_loss"]).to_numpy(), pair)
    per_pair = balls.groupby(pair)[["model_log_loss", "pair_log_loss"]].mean()
    report = (
        f"Matchups ({trained.source}): {len(balls):,} deliveries of {', '.join(map(str, args.test))} by "
        f"{len(per_pair):,} pairs that had met before (of {len(scored):,}); the pairs' record shrunk by "
        f"{strength:g} deliveries towards the mean of the batter's and the bowler's (chosen on {args.choose_on}).\n\n"
        f"log loss: model {balls['model_log_loss'].mean():.4f}, pair record {balls['pair_log_loss'].mean():.4f}; "
        f"pair record minus model, paired by pair: {diff['diff']:+.4f} "
        f"[{diff['ci_low']:+.4f}, {diff['ci_high']:+.4f}]; "
        f"pairs where the model is ahead: {(per_pair['model_log_loss'] < per_pair['pair_log_loss']).mean():.1%}"
    )
    metrics = {"model_log_loss": balls["model_log_loss"].mean(), "pair_log_loss": balls["pair_log_loss"].mean()}
    metrics |= {"diff": diff["diff"], "diff_ci_low": diff["ci_low"], "diff_ci_high": diff["ci_high"]}
    run_id = tracking.log_report_run(
        args.tracking_uri,
        args.experiment,
        tracking.run_name("matchups", f"test={args.test}"),
        {"model_family": "matchups", "model": trained.source},
        report,
        {f"matchups/{k}": v for k, v in metrics.items()},
        {"test": ",".join(map(str, args.test)), "choose_on": args.choose_on, "strength": strength},
    )
    if args.out:
        write_table(balls, args.out)
    return f"{report}\nMLflow run {run_id}" + (f"\nwritten: {args.out}" if args.out else "")


def run(args: argparse.Namespace) -> str:
    start = time.perf_counter()
    if args.out:
        check_out_path(args.out)
    if args.evaluate:
        tracking.check_tracking_uri(args.tracking_uri)
    trained, _, tables = load_with_data(args.model, args.tracking_uri, args.data, args.sources)
    d = tables.deliveries
    out = evaluate(args, trained, d) if args.evaluate else view(args, trained, d)
    return f"{out}\n({time.perf_counter() - start:.0f} s)"


def main(argv: list[str] | None = None) -> int:
    return run_command("cricket-attn-matchups", run, parse_args(argv), also=(tracking.TrackingError,))


if __name__ == "__main__":
    raise SystemExit(main())
